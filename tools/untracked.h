/* untracked.h: device memory no allocation call shows, split into named parts (context, modules loaded, local-memory reservation, printf FIFO, malloc heap, other processes) and the rest. */
#ifndef GMT_UNTRACKED_H
#define GMT_UNTRACKED_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "replay.h"
#include "trace.h"

/* The limits as the CLI reads a DEVLIMITS record: bytes each holds. */
struct gmt_limits_view {
    bool known;
    uint64_t stack;            /* bytes per thread */
    uint64_t threads;          /* resident threads the reservation is for: SMs x threads per SM */
    uint64_t reservation;      /* stack x threads, bytes */
    uint64_t fifo, heap;       /* the limits, bytes (0 when the driver did not say); neither is
                                * device memory when set (docs/untracked.md) */
};

/* The untracked memory of one device at its largest device-use sample (docs/untracked.md).
 * Each part has `has_` when the trace measured it; `unexplained` is what is left. */
struct gmt_untracked {
    bool known;                /* the device was sampled: total is meaningful */
    int64_t total;             /* gmt_dev_untracked: used - tracked - graph memory */
    struct gmt_limits_view lim; /* at the largest sample (the latest limits before it) */
    struct gmt_limits_view lim_first; /* at the first sample */
    bool has_context;
    int64_t context;           /* at the first sample: used - tracked - limits - others */
    bool has_calls;
    int64_t in_calls;          /* device jumps at NCCL calls' first calls before the largest
                                * sample, beyond tracked and the limits' growth: modules and
                                * kernels they loaded */
    uint32_t n_calls;          /* how many such calls */
    bool has_modules;          /* the trace has MODLOAD records (2.7) */
    int64_t modules;           /* device used around explicit module and library loads up to
                                * the largest sample, less those inside NCCL calls' first
                                * calls (whose jumps hold them) */
    uint32_t n_modules;        /* how many such loads */
    int64_t modules_before_first; /* of modules, those before the first sample: not the context's */
    bool has_other;
    uint64_t other;            /* other processes' memory on the device (NVML) */
    uint32_t other_count;
    uint32_t other_pid;        /* the pid of the one using the most, 0 unknown */
    int64_t unexplained;       /* total - the parts measured */
    double unexplained_pct;    /* of device used at the largest sample, percent */
    /* what if the stack limit, above the driver's default, went back to it: device used
     * would change by stack_whatif_bytes (negative): (limit - default) x resident threads,
     * exact */
    bool stack_whatif;
    int64_t stack_whatif_bytes;
};

/* The driver's default stack limit: what cudaDeviceSetLimit can take it back to. */
#define GMT_STACK_DEFAULT 1024u

/* What one NCCL call row's first call did to device used beyond tracked, named where the
 * trace's limits say. */
struct gmt_untracked_call {
    bool known;                /* a jump beyond tracked, with limits before and after it */
    int64_t jump;              /* first device delta - first tracked */
    struct gmt_limits_view before, after;
    int64_t grew;              /* the local-memory reservation's growth in the call */
    int64_t unnamed;           /* jump - grew */
};

void gmt_limits_view_of(const struct gmt_limits_sample *s, struct gmt_limits_view *v);
/* The parts of device d's untracked memory in trace t, replayed into rep, with the stack
 * limit's what-if. gmt_analyze fills gmt_analysis.untracked with them. */
void gmt_untracked_parts(const struct gmt_trace *t, const struct gmt_report *rep,
                         const struct gmt_dev_report *d, struct gmt_untracked *u);

/* What one NCCL call's first-call jump says of the limits: the stack limit before and after
 * it (samples of scope `scope` on `device`, phases BEGIN and END). False when the trace has
 * no such pair. */
/* The device used an explicit module load took (MODLOAD: used after - used before), 0 for a
 * load whose samples said nothing. */
int64_t gmt_untracked_modload_bytes(const struct gmt_modload_note *m);

bool gmt_untracked_call_limits(const struct gmt_trace *t, uint32_t scope, int device,
                               struct gmt_limits_view *before, struct gmt_limits_view *after);
/* Call row c's first-call jump beyond tracked and its limits (gmt_analysis.untracked_calls);
 * u->known false when there is no jump or no limits around it. */
void gmt_untracked_call_of(const struct gmt_trace *t, const struct gmt_coll_row *c,
                           struct gmt_untracked_call *u);
/* Whether the process ran with CUDA_MODULE_LOADING=EAGER (its last setting of it). */
bool gmt_untracked_eager(const struct gmt_trace *t);

/* ---- render_untracked.c: the parts as text ---- */
struct gmt_analysis;
/* The untracked memory of the d-th device of a's report as named lines, each with how it
 * was measured. */
void gmt_untracked_text(FILE *out, const struct gmt_analysis *a, size_t d);
/* What settings would move the untracked parts, where the trace predicts it: a stack limit
 * above the default given back, and what CUDA_MODULE_LOADING does (not predicted). */
void gmt_untracked_whatif_text(FILE *out, const struct gmt_analysis *a);
/* The same as explain's JSON key "untracked_what_if" (docs/nccl-memory.md). */
void gmt_untracked_whatif_json(FILE *out, const struct gmt_analysis *a);
/* Under the i-th NCCL calls row: what its first call's device jump beyond tracked was,
 * named. */
void gmt_untracked_call_text(FILE *out, const struct gmt_analysis *a, size_t i);

#endif
