/* nccl_print.h: what of NCCL a run had, to compare runs by (baselines, diff, merge). */
#ifndef GMT_NCCL_PRINT_H
#define GMT_NCCL_PRINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/* What of NCCL a run had, to compare runs by: its version and NCCL_* variables, as
 * "NAME=value" lines sorted by name. Kept in baselines (baseline.c). */
#define GMT_NCCL_PRINT_MAX 2048
struct gmt_nccl_print {
    bool known;                /* false: nothing recorded (a baseline from before) */
    int32_t version;           /* 0 unknown */
    char env[GMT_NCCL_PRINT_MAX];
};
void gmt_nccl_print_of(const struct gmt_trace *t, struct gmt_nccl_print *p);
/* The first trace of paths[0..n) that loads: 0, or -1 when none does. */
int gmt_nccl_print_of_paths(char *const *paths, size_t n, struct gmt_nccl_print *p);
/* "NCCL_BUFFSIZE 4194304 -> 8388608, NCCL 2.28.9 -> 2.29.1" into buf: what differs
 * from a to b ("" when nothing, or when either is unknown). */
const char *gmt_nccl_print_diff(const struct gmt_nccl_print *a, const struct gmt_nccl_print *b,
                                char *buf, size_t len);

/* The NCCL version and settings that differ between two traces, as
 * "NCCL_BUFFSIZE 4194304 -> 8388608, NCCL 2.28.9 -> 2.29.1" into buf ("" when none). */
const char *gmt_nccl_settings_diff(const struct gmt_trace *a, const struct gmt_trace *b, char *buf,
                                   size_t len);

#endif
