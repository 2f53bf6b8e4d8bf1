/* replay.h: replays a loaded trace's live set: peaks, per-collective deltas, sites, leaks, failures. */
#ifndef GMT_REPLAY_H
#define GMT_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectives.h" /* the collective rows of the report */
#include "kind_class.h" /* the charging rules and live-set keys the replay applies */
#include "trace.h"

#define GMT_MAX_CATS 32        /* categories, index 0 is "user" by convention of the caller */
#define GMT_MAX_DEVS 16        /* devices tracked per process */


struct gmt_replay_opts {
    const uint8_t *stack_cat;  /* category index per stack id (t->n_stacks entries), or NULL */
    int device;                /* -1: all devices */
    uint64_t t_from, t_to;     /* absolute ns window for peaks/failures; 0 = open */
};

struct gmt_dev_report {
    int device;
    uint64_t peak;                     /* tracked device bytes at the peak */
    uint64_t peak_time;                /* ns */
    uint32_t peak_scope;               /* scope id in flight at the peak (innermost on any thread), 0 none */
    uint64_t peak_by_cat[GMT_MAX_CATS];
    uint64_t cat_peak[GMT_MAX_CATS];   /* each category's own highest tracked bytes (in the window) */
    uint64_t end;                      /* tracked device bytes at the end of the trace */
    uint64_t end_by_cat[GMT_MAX_CATS];
    uint64_t host_peak, host_end;      /* pinned host bytes */
    uint64_t virtual_peak;             /* reserved address space, bytes */
    /* MEMINFO samples: the largest device use seen, and the tracked bytes then */
    bool has_used;
    uint64_t used_max, used_max_time, tracked_at_used_max, total;
    uint64_t used_last, tracked_at_used_last;
    /* the device's first cuMemGetInfo sample (after its first allocation): what the context
     * held before the program's own memory, in docs/untracked.md's parts */
    bool has_first;
    uint64_t first_used, first_time, tracked_at_first;
    uint64_t allocs, frees, failures;
    uint64_t device_allocs;            /* of allocs, those of local device memory */
    /* NVML's figure for this process (MEMINFO with process_bytes), in the window */
    bool has_proc;
    uint64_t proc_max, proc_last;
    /* the device's graph memory (GRAPHMEM): what its pool holds, in the window */
    bool has_graph;
    uint64_t graph_peak, graph_end, graph_used_high;
    uint64_t graph_at_used_max;        /* graph memory held when used_max was sampled */
    uint64_t peer_peak, peer_end;      /* peers' memory mapped here (imported handles, IPC) */
};

struct gmt_site_row {
    uint32_t stack;
    uint16_t api;                      /* its first device allocation's (enum gmt_api) */
    uint8_t cat;
    bool ever_live;                    /* had device bytes live: an allocation of nonzero bytes */
    uint64_t allocs, bytes_total;
    uint64_t live_at_peak;             /* on the device(s) reported, at each device's peak */
    uint64_t live_at_end, count_at_end;
};

struct gmt_fail_row {
    uint64_t time, bytes;
    uint16_t api;
    uint8_t kind;
    int32_t error;
    int device;
    uint32_t stack, scope;             /* scope id in flight (own or attributed), 0 none */
    uint32_t tid;
    uint64_t tracked;                  /* tracked device bytes on that device then */
    uint64_t by_cat[GMT_MAX_CATS];
    /* the device's free and total memory then: sampled right after the failure on its
     * thread (dev_at_fail), else the latest sample before it */
    bool has_dev, dev_at_fail;
    uint64_t dev_free, dev_total;
};

struct gmt_report {
    struct gmt_dev_report dev[GMT_MAX_DEVS];
    size_t n_dev;
    struct gmt_coll_row *colls; size_t n_colls;
    struct gmt_site_row *sites; size_t n_sites;  /* sorted by live_at_peak, then live_at_end */
    struct gmt_fail_row *fails; size_t n_fails;
    struct gmt_open_row *open; size_t n_open; /* by the time they began */
    int64_t *scope_tracked;            /* per scope the trace stores: tracked device bytes
                                        * it added (NULL: not replayed); gmt_scope_tracked */
    struct gmt_u64map member_tracked;  /* the same of the repeated groups' members that
                                        * have any (few: none but in an odd file), by index */
    uint64_t unmatched_frees;          /* frees of addresses never seen allocated */
};

/* The tracked device bytes scope i (its index) added: 0 when none, or not replayed. Read
 * where the replay keeps them: by the scope's slot in t->scopes, or for a member of a
 * repeated group in member_tracked. */
static inline int64_t gmt_scope_tracked(const struct gmt_trace *t, const struct gmt_report *rep,
                                        size_t i)
{
    if (!rep->scope_tracked)
        return 0;
    uint32_t j;
    long k = gmt_scope_slot(t, i, &j);
    if (k >= 0)
        return rep->scope_tracked[k];
    const uint64_t *v = gmt_u64map_get(&rep->member_tracked, i);
    return v ? (int64_t)*v : 0;
}

/* Device memory no allocation call shows (context, kernels, pool reserves) at the largest
 * device-use sample: used - tracked - graph memory then. Meaningful when has_used. */
static inline int64_t gmt_dev_untracked(const struct gmt_dev_report *d)
{
    return (int64_t)d->used_max - (int64_t)d->tracked_at_used_max - (int64_t)d->graph_at_used_max;
}

/* Whether a device row has anything of the device's own to show: device memory, a
 * sample, a failure, graph or peer memory. A row of host memory only (made before any
 * context was current, device -1) is not a device's. */
static inline bool gmt_dev_shown(const struct gmt_dev_report *d)
{
    return d->device_allocs || d->has_used || d->failures || d->has_proc || d->has_graph ||
           d->peer_peak;
}

int gmt_replay(const struct gmt_trace *t, const struct gmt_replay_opts *o, struct gmt_report *rep);
void gmt_report_free(struct gmt_report *rep);

#endif
