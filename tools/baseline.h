/* baseline.h: the baseline file: what a reviewed run measured and its limits, written and read as JSON. */
#ifndef GMT_BASELINE_H
#define GMT_BASELINE_H

#include <stdio.h>

#include "growth.h"
#include "metrics.h"
#include "nccl_print.h"

/* A baseline: what a reviewed run measured, and the limits it was written with. */
struct gmt_baseline {
    struct gmt_metrics metrics;
    struct gmt_limits limits;
    char category[GMT_CAT_NAME_MAX + 1]; /* "" none */
    struct gmt_nccl_print nccl;          /* the run's NCCL version and NCCL_* variables */
};
void gmt_baseline_free(struct gmt_baseline *b);

#define GMT_BASELINE_SCHEMA "gpumemtrace.baseline/1"

/* Writes b as the stable JSON documented in docs/ci-gate.md: keys sorted, one metric per
 * line, metrics sorted by identity. Returns 0 or -EIO. */
int gmt_baseline_write(FILE *out, const struct gmt_baseline *b);
/* Parses a baseline from text; errors are "LINE:COL: what" in err. 0 or -EINVAL/-E2BIG/-ENOMEM. */
int gmt_baseline_parse(struct gmt_baseline *b, const char *text, size_t len, char *err, size_t errlen);
/* Reads and parses a file; errors are "FILE:LINE:COL: what" or "FILE: what". */
int gmt_baseline_load(struct gmt_baseline *b, const char *path, char *err, size_t errlen);

#endif
