/* timeline.h: a trace's device memory over time as `gpumemtrace report` draws it: downsampled counter tracks, each device's icicles, NCCL calls and NVTX ranges on lanes merged per time bucket. */
#ifndef GMT_TIMELINE_H
#define GMT_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracks.h"

#define GMT_FLAME_SITES 200    /* sites per device in the icicle, by bytes at its peak */
#define GMT_LANE_SPANS 4000    /* NCCL spans, and NVTX spans, per trace */

/* A counter track's points as the engine decides them (tracks.h): time (ns from the
 * trace's start), value pairs. */
struct gmt_points {
    uint64_t *tv;
    size_t n, cap;
};

/* An icicle: its sites, most bytes first, and the bytes of those past GMT_FLAME_SITES. */
struct gmt_icicle {
    struct gmt_flame_site *v;
    size_t n;
    uint64_t rest;
};

/* One item of a lane: a span, or the spans of one time bucket from the first's begin to
 * the last's end (n of them). NCCL's: its op and device, -1 when they differ; NVTX's:
 * its range's name (NULL when they differ) and depth. */
struct gmt_lane_item {
    uint64_t b0, b1, n;        /* ns on the axis */
    int op, device;
    const char *name;
    uint32_t depth;
};

struct gmt_timeline {
    uint64_t t0, span;         /* the axis: the trace's first record, its span (ns) */
    /* by device slot (the replay's index of rep.dev) */
    struct gmt_points pts[GMT_MAX_DEVS][GMT_TR_PER_DEV];
    struct gmt_icicle flame[GMT_MAX_DEVS];       /* device memory at the device's peak */
    struct gmt_icicle block_flame[GMT_MAX_DEVS]; /* PyTorch's live blocks at its allocated peak */
    /* NCCL calls, each while there are at most GMT_LANE_SPANS, else merged per bucket */
    struct gmt_lane_item *nccl; size_t n_nccl, cap_nccl;
    /* NVTX ranges of depth < 3 while there are at most GMT_LANE_SPANS, else the outermost;
     * past that merged per bucket (none when the trace has no range) */
    struct gmt_lane_item *phases; size_t n_phases, cap_phases;
};

/* The timeline of analysis a with at most max_points points per track into *out
 * (malloc'd, NULL on failure). 0, -ENOMEM, or the export walk's error. */
int gmt_timeline_build(const struct gmt_analysis *a, long max_points, struct gmt_timeline **out);
void gmt_timeline_free(struct gmt_timeline *tl);

#endif
