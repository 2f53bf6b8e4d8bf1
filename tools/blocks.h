/* blocks.h: PyTorch's caching allocator from its BLOCK records: allocated against reserved, sites and leaks by block, the step rule on allocated bytes, fragmentation at an OOM. */
#ifndef GMT_BLOCKS_H
#define GMT_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trace.h"

struct gmt_phases;
struct gmt_analysis;

/* What the trace says of PyTorch's blocks: recorded, or why not. */
#define GMT_BLOCK_MODES(X)                                                                    \
    X(NONE, "none", "no PyTorch CUDA allocator in the trace")                                 \
    X(EVENTS, "events", "the caching allocator's blocks, as it reported them")                \
    X(ASYNC, "cudaMallocAsync",                                                               \
      "PYTORCH_CUDA_ALLOC_CONF names backend:cudaMallocAsync: PyTorch reports no blocks; "    \
      "the cudaMallocAsync calls are the blocks")                                             \
    X(NO_CACHE, "no-caching",                                                                 \
      "PYTORCH_NO_CUDA_MEMORY_CACHING=1: PyTorch reports no blocks; the cudaMalloc calls "    \
      "are the blocks")                                                                       \
    X(SILENT, "no-events",                                                                    \
      "libc10_cuda is loaded but reported no block (a pluggable allocator, or the tracer's "  \
      "report hook not reached): the CUDA calls are the blocks")
enum gmt_block_mode {
#define GMT_X(name, key, what) GMT_BLOCKS_##name,
    GMT_BLOCK_MODES(GMT_X)
#undef GMT_X
};
const char *gmt_block_mode_key(enum gmt_block_mode m);
const char *gmt_block_mode_text(enum gmt_block_mode m);

/* A point of the allocated-against-reserved line of one device. */
struct gmt_block_point {
    uint64_t time;             /* ns, absolute */
    uint64_t allocated, reserved;
};
#define GMT_BLOCK_POINTS 64    /* points kept per device: the line's extremes among them */

/* A stack's live blocks at a device's allocated peak: the report's icicle of them. */
struct gmt_block_live {
    uint32_t stack;
    uint64_t bytes;
};

struct gmt_block_dev {
    int device;
    uint64_t allocs, frees, ooms;
    uint64_t allocated_peak, allocated_peak_time, reserved_at_peak;
    uint64_t reserved_peak;
    uint64_t allocated_end, reserved_end;
    uint64_t cache_end;        /* of reserved_end, free in the cache (not allocated) */
    struct gmt_block_point line[GMT_BLOCK_POINTS]; /* over the trace, in time order */
    size_t n_line;
    struct gmt_block_live *at_peak; /* live blocks at allocated_peak by stack, most first */
    size_t n_at_peak;
};

/* Blocks by the stack that allocated them. */
struct gmt_block_site {
    uint32_t stack;
    uint64_t allocs, bytes_total;
    uint64_t live_at_peak;     /* at each device's allocated peak */
    uint64_t live_at_end, count_at_end;
};

/* One segment at an OOM: a device allocation that holds PyTorch's blocks. */
struct gmt_block_segment {
    uint64_t addr, size;
    uint64_t live;             /* bytes of live blocks in it */
    uint64_t largest_free;     /* its largest free range between them */
    uint64_t free;             /* size - live */
};
#define GMT_OOM_SEGMENTS 8
#define GMT_OOM_SITES 8
struct gmt_block_oom {
    uint64_t time;
    int device;
    uint32_t stack, tid;
    uint64_t request;          /* bytes */
    uint64_t allocated, reserved; /* PyTorch's totals then */
    uint64_t cache;            /* of reserved, free in the cache (not allocated) */
    uint64_t largest_free;     /* the largest free block of any segment */
    uint64_t free_unusable;    /* free bytes in segments none of whose free ranges fit */
    uint64_t segments;         /* segments holding blocks then */
    struct gmt_block_segment seg[GMT_OOM_SEGMENTS]; /* the ones with the most free bytes */
    size_t n_seg;
    struct { uint32_t stack; uint64_t bytes, count; } site[GMT_OOM_SITES]; /* live blocks */
    size_t n_site;
};

struct gmt_blocks {
    enum gmt_block_mode mode;
    struct gmt_block_dev dev[16];
    size_t n_dev;
    struct gmt_block_site *sites; size_t n_sites; /* by live_at_peak, then live_at_end */
    struct gmt_block_oom *ooms; size_t n_ooms;
    uint64_t unmatched_frees;  /* frees of a block never seen handed out */
    /* the step rule (phases.h's steps) on PyTorch's allocated bytes */
    uint64_t steps;
    int64_t first_step_growth, later_growth, later_min;
    bool grows_every_step;
    int64_t growth_per_step;   /* with grows_every_step: later_growth per step after the first */
    uint32_t grow_stack;       /* most of what steps 2.. allocated and kept; 0 none */
    uint64_t grow_stack_bytes;
};

/* The model of t's blocks, with the steps of p (NULL: none); device -1 all. 0 or -ENOMEM. */
int gmt_blocks_compute(const struct gmt_trace *t, const struct gmt_phases *p, int device,
                       struct gmt_blocks *b);
void gmt_blocks_free(struct gmt_blocks *b);

/* t's blocks of `device` (-1 all) in time order, each handed to fn; stops at fn's first
 * nonzero return, which it returns. -ENOMEM. */
int gmt_blocks_each(const struct gmt_trace *t, int device,
                    int (*fn)(void *ctx, const struct gmt_block_note *b), void *ctx);

/* The summary's section on them, as text and as the JSON object's members (blocks_render.c). */
void gmt_blocks_text(FILE *out, const struct gmt_analysis *a);
void gmt_blocks_json(FILE *out, const struct gmt_analysis *a);

#endif
