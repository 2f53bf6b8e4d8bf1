/* trace_loader.h: the loader's state as trace_load.c keeps it while it reads a trace, shared with its record handlers (trace_load_records.c). */
#ifndef GMT_TRACE_LOADER_H
#define GMT_TRACE_LOADER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader.h"
#include "trace.h"
#include "trace_finish.h"
#include "trace_repeat.h"
#include "u64map.h"

/* on_record's answer to a record that stands for others: SCOPE_END's call form or
 * SCOPE_OPEN (the records are loaded again, expanded: trace_expand.c), or GROUP_REPEAT
 * met while the repeats are not followed (loaded again, following them) */
#define LOAD_EXPAND 1
#define LOAD_REPEATS 2

struct loader {
    struct gmt_trace *t;
    struct gmt_reader *r;
    size_t cap_env, cap_mod, cap_thr, cap_comm, cap_scope, cap_streams, cap_runs;
    struct gmt_u64map tid_device;   /* tid -> device of its current CUDA context + 1 */
    struct gmt_u64map stream_of;    /* tid -> index in t->streams */
    size_t cur;                     /* stream of the latest CHUNK */
    int cur_device;                 /* thread_device() of its thread: a map lookup per
                                     * CHUNK and CUCTX, not per scope */
    struct gmt_meminfo_note *mi; size_t n_mi, cap_mi;
    size_t cap_proc, cap_graph, cap_choice, cap_limits;
    size_t cap_nvtx;
    size_t cap_blocks;
    bool samples_unsorted, choices_unsorted;
    /* Repeated groups, followed only in a trace that has them (a second pass): each
     * thread's latest groups, the records of the repeats that could not stand */
    bool repeats;
    struct gmt_repeats reps;
    uint32_t rep_tid;               /* the thread of rep_th, the latest asked for */
    size_t rep_th;                  /* its index in reps.th + 1; 0 none */
    uint64_t rep_lost;
    size_t cap_reps;
    uint32_t max_id;                /* the highest scope id met */
    size_t cap_by_id;
};

/* trace_load_records.c: each fills its table of the trace from one record; 0, -ENOMEM
 * or -EINVAL with err (a figure no valid trace can hold). */
int gmt_load_comm(struct loader *L, const struct gmt_event *e);
int gmt_load_graphmem(struct loader *L, const struct gmt_event *e, char *err, size_t errlen);
int gmt_load_nccl_coll_info(struct loader *L, const struct gmt_event *e);
int gmt_load_nvtx(struct loader *L, const struct gmt_event *e);
int gmt_load_block(struct loader *L, const struct gmt_event *e, char *err, size_t errlen);
int gmt_load_devlimits(struct loader *L, const struct gmt_event *e);

#endif
