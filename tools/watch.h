/* watch.h: `watch`'s model: each trace followed as it grows, read only past where the last refresh stopped, and folded into live figures. */
#ifndef GMT_WATCH_H
#define GMT_WATCH_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "live_map.h"
#include "replay.h"
#include "u64map.h"

/*
 * A trace is read as the writer appends to it (docs/writer.md): one reader per file stays
 * open between refreshes and reads on from the end of the last whole record
 * (gmt_reader_follow), so each refresh costs what was appended. Nothing of the records is
 * kept, only what they add up to: the live set (bounded by what is live), each device's
 * figures, the calls open now, the latest failures, steps. Threads flush their buffers at
 * different moments, so the file's order is not time order; allocations, frees and
 * samples wait in a short queue and are applied in time order once they are `hold_ns`
 * older than the latest record read (or at once when the file stopped growing or ended),
 * as `summary` replays them. A file that shrinks, is another file at the same path
 * (inode) or whose first bytes changed is a restarted rank: read again from its start.
 */

#define GMT_WATCH_FAILS 8        /* the latest failed allocations kept per trace */
#define GMT_WATCH_OPEN_MAX 256   /* open NCCL calls kept per trace; a corrupt file may claim more */
#define GMT_WATCH_MARKS 8        /* tracked bytes every GMT_WATCH_MARK_NS of trace time */
#define GMT_WATCH_MARK_NS 10000000000ull
#define GMT_WATCH_DIGEST_BYTES 64 /* the first bytes that name a trace: header and PROCESS */

struct gmt_categories;
struct gmt_reader;
struct gmt_symbolizer;

/* What every trace of one watch shares. */
struct gmt_watch_ctx {
    struct gmt_categories *cats;
    regex_t step_re;           /* the NVTX ranges that are steps (phases.h's default) */
    bool has_step_re;
    uint64_t hold_ns;          /* how long events wait for earlier ones from other threads */
    size_t batch;              /* records read between two releases of the queue */
};

struct gmt_watch_dev {
    int device;
    uint64_t tracked, peak;    /* tracked device bytes now, at their highest */
    uint64_t by_cat[GMT_MAX_CATS], peak_by_cat[GMT_MAX_CATS];
    uint64_t allocs, device_allocs, frees, failures;
    /* the latest device sample, and the one of most use (as summary's untracked) */
    bool has_used;
    uint64_t used_last, total, tracked_at_last, graph_at_last, time_last;
    uint64_t used_max, tracked_at_used_max, graph_at_used_max;
    uint64_t cu_total;         /* the latest cuMemGetInfo total, 0 none */
    bool has_graph;
    uint64_t graph_reserved;   /* the device's graph memory pool, latest GRAPHMEM */
    bool has_first_step;
    uint64_t nccl_first_step;  /* NCCL's bytes when the first step ended */
};

struct gmt_watch_fail {
    uint64_t time, bytes, tracked;
    uint64_t dev_free, dev_total; /* when has_dev: sampled after it (dev_at_fail) or before */
    int32_t error;
    uint32_t tid;
    int16_t device;
    uint16_t api;
    uint8_t kind;
    bool has_dev, dev_at_fail;
};

/* An NCCL call (or group) that began and has not returned. */
struct gmt_watch_call {
    uint64_t comm, begin;      /* ns, the trace's clock */
    uint32_t tid, id, parent;
    uint16_t op;
    uint16_t member_op;        /* a group: its first member's op, 0 unknown */
};

struct gmt_watch_comm {
    uint64_t comm;
    int32_t rank, nranks, device;
};

struct gmt_watch_thread {
    uint32_t tid;
    int16_t device;            /* its current context's, -1 none */
    uint32_t max_ended;        /* the highest scope id that returned on it */
    uint16_t last_group_op;    /* its latest group's first member's op */
};

enum gmt_watch_ev_type { GMT_WEV_ALLOC = 1, GMT_WEV_FREE, GMT_WEV_FAIL, GMT_WEV_MEMINFO,
                        GMT_WEV_GRAPH, GMT_WEV_STEP };

/* An event waiting for its turn in time order. */
struct gmt_watch_ev {
    uint64_t time, seq;        /* seq: file order, for ties */
    uint64_t addr, bytes;      /* MEMINFO: free, total; GRAPHMEM: bytes reserved */
    uint32_t stack, tid;
    int32_t error;
    int16_t device;
    uint16_t api;              /* MEMINFO: its source */
    uint8_t type;              /* enum gmt_watch_ev_type */
    uint8_t kind;              /* MEMINFO: its phase */
};

struct gmt_watch_trace {
    char *path;
    /* the file */
    FILE *f;
    struct gmt_reader *r;
    dev_t st_dev;
    ino_t st_ino;
    uint64_t size;             /* at the latest refresh */
    uint64_t digest;           /* of its first GMT_WATCH_DIGEST_BYTES */
    bool grew, gone;
    uint64_t grew_realtime;    /* CLOCK_REALTIME ns of the latest refresh that found it grown */
    char *error;               /* why it could not be read on (one line), NULL none */
    bool error_said;
    uint64_t restarts;
    uint64_t bytes_read, records;
    /* what it says of itself */
    bool has_proc;
    uint32_t pid;
    int32_t rank, world_size;
    uint64_t realtime_ns, monotonic_ns; /* PROCESS's anchors */
    char *host, *job_id;
    char **env; size_t n_env;
    int32_t version[4];
    uint64_t hold_ns;          /* 4 x its writer's flush interval (GPUMEMTRACE_FLUSH_MS), 0 unknown */
    bool complete;
    uint64_t t_end, t_last;    /* END's time; the latest record time read */
    uint64_t t_applied;        /* the latest event applied */
    /* folded */
    struct gmt_symbolizer *sym; /* the module map, for categories */
    struct gmt_u64map stack_cat; /* stack id -> category index */
    const char *cat_names[GMT_MAX_CATS]; size_t n_cats;
    int nccl_cat;              /* index of "nccl", -1 none yet */
    struct gmt_live_map live;  /* gmt_live.scope: 1 while its stack's category is unknown */
    size_t n_pending_cat;
    struct gmt_watch_dev dev[GMT_MAX_DEVS]; size_t n_dev;
    uint64_t unmatched_frees;
    struct gmt_watch_fail fails[GMT_WATCH_FAILS]; /* a ring: the latest n_fails % ... */
    uint64_t n_fails;
    struct gmt_watch_call *open; size_t n_open, cap_open;
    struct gmt_watch_comm *comms; size_t n_comms, cap_comms;
    struct gmt_watch_thread *threads; size_t n_threads, cap_threads;
    struct gmt_u64map thread_of; /* tid -> index in threads */
    uint32_t last_tid;         /* the thread of the latest lookup, its index + 1 (0 none): */
    size_t last_thread;        /* a chunk's records are one thread's */
    uint64_t calls[GMT_OP_MAX]; /* NCCL calls that returned, by op */
    struct gmt_u64map step_names; /* NVTX_STRING ids of step names */
    struct gmt_u64map step_ranges; /* START range ids of steps still open */
    uint64_t steps, first_step_tracked, last_step_tracked;
    struct { uint64_t time, tracked; } marks[GMT_WATCH_MARKS];
    size_t n_marks;
    uint64_t next_mark, tracked_all;
    /* the queue */
    struct gmt_watch_ev *q; size_t n_q, cap_q;
    size_t q_sorted;           /* its first events, in time order */
    uint64_t seq;
};

/* What one thread that refreshes traces reuses from one trace to the next, so that a
 * first refresh of a thousand traces does not make and fault in the same memory a
 * thousand times: the window the file is read through, the array a trace's queue
 * grows in while it is read (lent to it, its events moved back to its own array after),
 * and room for the queue's sort. */
#define GMT_WATCH_WINDOW (1u << 20) /* GMT_REC_MAX: the largest record fits */
struct gmt_watch_scratch {
    uint8_t *win;              /* GMT_WATCH_WINDOW bytes, NULL: read record by record */
    struct gmt_watch_ev *q; size_t cap_q;
    const struct gmt_watch_trace *lent_to; /* the trace whose queue q is now, NULL none */
    struct gmt_watch_ev *own_q; size_t own_cap; /* that trace's own array meanwhile */
    struct gmt_watch_ev *tmp; size_t cap_tmp;
};

/* watch_follow.c: the file, its records */

/* A trace to follow at path, nothing read yet; NULL when out of memory. */
struct gmt_watch_trace *gmt_watch_trace_new(const char *path);
void gmt_watch_trace_free(struct gmt_watch_trace *w);
/* Reads what was appended since the last call, folds it, applies the queue up to what
 * is safe (all of it with `final`: no more is expected). 0, or -ENOMEM. A trace that
 * cannot be read gets w->error (and keeps what it had); one that is gone, w->gone. */
int gmt_watch_trace_refresh(const struct gmt_watch_ctx *C, struct gmt_watch_trace *w, bool final,
                            struct gmt_watch_scratch *S);
/* S's window made (NULL stays when out of memory: records are then read one by one),
 * and everything in S freed. */
void gmt_watch_scratch_init(struct gmt_watch_scratch *S);
void gmt_watch_scratch_free(struct gmt_watch_scratch *S);

/* watch_fold.c: what the records add up to */

/* One record as read, folded or queued. 0, or -ENOMEM. */
struct gmt_event;
int gmt_watch_fold(const struct gmt_watch_ctx *C, struct gmt_watch_trace *w,
                   const struct gmt_event *ev);
/* The index of category `name` in w->cat_names, added when new (0 once they are full). */
int gmt_watch_cat_index(struct gmt_watch_trace *w, const char *name);
/* The communicator `comm` as its COMM record described it (the first of those folded),
 * NULL when none is kept (or comm is 0). */
const struct gmt_watch_comm *gmt_watch_comm_of(const struct gmt_watch_trace *w, uint64_t comm);
/* Applies the queued events up to time `upto`, in time order. 0, -ENOMEM, or -EOVERFLOW
 * for sizes summary calls corrupt (beyond GMT_BYTES_MAX). S (may be NULL): room for
 * the sort. */
int gmt_watch_apply(struct gmt_watch_trace *w, uint64_t upto, struct gmt_watch_scratch *S);
/* Forgets everything folded (the file is read again from its start). */
void gmt_watch_fold_reset(struct gmt_watch_trace *w);
void gmt_watch_fold_free(struct gmt_watch_trace *w);

/* The trace's clock now: END's time once it ended, else the realtime `realtime_ns` on the
 * trace's monotonic clock (PROCESS's anchors), never before its latest record. */
uint64_t gmt_watch_now(const struct gmt_watch_trace *w, uint64_t realtime_ns);
/* The call the process has been in longest (the earliest open outermost call), NULL none. */
const struct gmt_watch_call *gmt_watch_longest_call(const struct gmt_watch_trace *w);
/* Whether a device row has anything of the device's own (as gmt_dev_shown). */
bool gmt_watch_dev_shown(const struct gmt_watch_dev *d);
/* Whether it used a GPU: a device row, a communicator or a call (a launcher has none). */
bool gmt_watch_uses_gpu(const struct gmt_watch_trace *w);
/* The process's rank: PROCESS's, else its first communicator's, -1 unknown. */
int32_t gmt_watch_rank(const struct gmt_watch_trace *w);
/* Growth of tracked bytes (all devices): per step after the first (false under 2 steps),
 * and per minute over the latest minute of trace time (false under 10 s of it). */
bool gmt_watch_step_growth(const struct gmt_watch_trace *w, int64_t *per_step);
bool gmt_watch_minute_growth(const struct gmt_watch_trace *w, int64_t *per_min);
/* The latest device sample's untracked bytes: used - tracked - graph memory then. */
bool gmt_watch_untracked(const struct gmt_watch_dev *d, int64_t *bytes);
/* The i-th latest failure (0 the latest), NULL past those kept. */
const struct gmt_watch_fail *gmt_watch_fail_at(const struct gmt_watch_trace *w, size_t i);

#endif
