/* explain.h: `explain`'s model: a trace's NCCL memory (gmt_analysis.nccl) and what each --what-if would make of it. */
#ifndef GMT_EXPLAIN_H
#define GMT_EXPLAIN_H

#include <stddef.h>
#include <stdint.h>

#include "nccl_model.h"
#include "report.h"

#define GMT_EXPLAIN_MAX_WHATIF 8

/* One --what-if applied to one trace: the run's own settings changed by spec, each
 * communicator's prediction under them, and the process's totals. */
struct gmt_explain_whatif {
    const char *spec;                        /* NAME=VALUE[,...] as given */
    struct gmt_nccl_settings to;
    struct gmt_nccl_prediction *per_comm;    /* one per communicator of the model */
    uint64_t dev_bytes, host_bytes;          /* over all communicators */
    int64_t dev_change;                      /* dev_bytes - the run's (negative: saves) */
    int64_t *comm_change;                    /* per communicator: its prediction's device
                                              * bytes - its own */
    const char *confidence;                  /* "exact", else the last other one found */
};

struct gmt_explain {
    const struct gmt_analysis *a;
    const struct gmt_nccl_model *m;          /* a's */
    struct gmt_explain_whatif w[GMT_EXPLAIN_MAX_WHATIF];
    int n;
};

/* The explanation of analysis a (made with its NCCL model) under specs[0..n), which
 * gmt_nccl_settings_parse accepted. 0, or -ENOMEM with nothing to free. */
int gmt_explain_fill(struct gmt_explain *x, const struct gmt_analysis *a, const char *const *specs,
                     int n);
void gmt_explain_free(struct gmt_explain *x);

/* What explain's "why that size" sums of one communicator of model m: the transport
 * buffers' alignment (their size beyond their need, times the channels, where the model's
 * sizes are the trace's), and the channel and device-communicator structures' bytes and
 * allocations. gmt_analyze fills gmt_analysis.nccl_why with them. */
struct gmt_nccl_why {
    uint64_t waste;
    uint64_t small_bytes, small_allocs;
};
void gmt_explain_why(const struct gmt_nccl_model *m, const struct gmt_nccl_comm *c,
                     struct gmt_nccl_why *w);

#endif
