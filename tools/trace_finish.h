/* trace_finish.h: the loader's last steps over a trace whose records are all read (trace_finish.c). */
#ifndef GMT_TRACE_FINISH_H
#define GMT_TRACE_FINISH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/* MEMINFO samples, kept aside to give scopes their device use once all are read. */
struct gmt_meminfo_note {
    uint64_t time, off, free_bytes, total_bytes;
    uint32_t scope;
    uint32_t tid, size;        /* its thread, its record's bytes (DEVLIMITS pairing) */
    uint8_t phase;
};

/* Ties each NCCL_COLL_INFO to its communicator (sorting them first when unsorted).
 * 0 or -ENOMEM. */
int gmt_trace_tie_choices(struct gmt_trace *t, bool unsorted);
/* The device samples of several threads in time order. */
void gmt_trace_sort_samples(struct gmt_trace *t);
/* Which scope each SCOPE_* record in [from, to) means, where scope ids repeat (only
 * corrupt files). 0 or -ENOMEM. */
int gmt_trace_map_scope_records(struct gmt_trace *t, uint64_t from, uint64_t to);
/* Scope devices and their before/after device use from the samples mi[0..n_mi) (sorted
 * here). 0 or -ENOMEM. */
int gmt_trace_finish_scopes(struct gmt_trace *t, struct gmt_meminfo_note *mi, size_t n_mi);

#endif
