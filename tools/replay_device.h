/* replay_device.h: the replay's state as replay.c keeps it while it walks a trace, shared with its devices' bookkeeping (replay_device.c). */
#ifndef GMT_REPLAY_DEVICE_H
#define GMT_REPLAY_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collectives.h"
#include "live_map.h"
#include "replay.h"
#include "trace.h"
#include "u64map.h"

struct site_dev; /* a site's live bytes on one device (replay.c) */

struct state {
    const struct gmt_trace *t;
    struct gmt_colls_map *map; /* each scope's top scope (the scope its events count for)
                                * and row */
    const int32_t *top_by_dense; /* the tops by t->scope_dense value: [0] is -1, none */
    const struct gmt_replay_opts *o;
    struct gmt_report *rep;
    struct gmt_live_map live_by_key;
    uint32_t *site_by_stack;   /* per stack id below t->n_stacks: site index + 1, 0 none */
    struct gmt_u64map site_by_big_stack; /* the ids beyond (stacks never defined) */
    /* per device slot, made at the slot's first allocation: a cell per site
     * (cap_sites of them). By device, not by site: most traces use one or two devices,
     * whose cells then fit in the first-level cache. */
    struct site_dev *sdl[GMT_MAX_DEVS];
    size_t cap_sites, cap_fails;
    int last_device, last_dslot;          /* the latest dslot() answer; INT_MIN none */
    int32_t *open; size_t n_open, cap_open;  /* open scope indices */
    int16_t dev_of_slot[GMT_MAX_DEVS];
    uint64_t tracked[GMT_MAX_DEVS];
    uint64_t by_cat[GMT_MAX_DEVS][GMT_MAX_CATS];
    uint64_t host[GMT_MAX_DEVS], virt[GMT_MAX_DEVS], peer[GMT_MAX_DEVS];
    /* per device slot: the latest sample of its free and total memory, for failures */
    uint64_t sample_free[GMT_MAX_DEVS], sample_total[GMT_MAX_DEVS];
    bool sampled[GMT_MAX_DEVS];
    uint64_t cu_total[GMT_MAX_DEVS];       /* the latest cuMemGetInfo total, 0 none */
    int32_t *imported; size_t n_imported, cap_imported; /* digests of imported handles */
    uint32_t peak_epoch[GMT_MAX_DEVS];      /* how many times each device's peak rose */
    struct gmt_row_count *rc;      /* per row */
    struct gmt_row_count no_row;   /* what belongs to no row, counted and dropped */
};

/* Whether a time is inside the window the peaks and failures are taken in (--from, --to). */
static inline bool in_window(const struct state *S, uint64_t time)
{
    return time >= S->o->t_from && (!S->o->t_to || time <= S->o->t_to);
}

/* Device slot for a device ordinal; the last slot collects everything beyond. */
int gmt_replay_dslot_find(struct state *S, int device);

/* Events come in long stretches on one device: the latest answer first. */
static inline int dslot(struct state *S, int device)
{
    if (device != S->last_device) {
        S->last_dslot = gmt_replay_dslot_find(S, device);
        S->last_device = device;
    }
    return S->last_dslot;
}

/* A device-use sample (MEMINFO): the device's used memory, and the latest failure's. */
void gmt_replay_meminfo(struct state *S, const struct gmt_timed_event *e);
/* After the pass: NVML's per-process figure and the graph pool's, within the window. */
void gmt_replay_device_samples(struct state *S);

#endif
