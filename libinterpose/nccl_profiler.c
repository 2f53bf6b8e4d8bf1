/* nccl_profiler.c: the library as NCCL's profiler plugin: one NCCL_COLL_INFO record per collective and send/receive NCCL launches (algorithm, protocol, channels). */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include "clock.h"
#include "gmt.h"
#include "nccl_profiler_abi.h"
#include "writer_api.h"

/*
 * NCCL (2.27 and later) dlopens the library named by NCCL_PROFILER_PLUGIN and looks up
 * ncclProfiler_v5 (2.28 on) or ncclProfiler_v4 (2.27); `gpumemtrace run` names the
 * preloaded library, and a dlopen of an object already loaded returns that same object,
 * so these functions record into the process's one trace. nccl_profiler_abi.h has the
 * layouts and what NCCL does with them.
 *
 * Which thread: NCCL starts the collective and send/receive events when it launches a
 * plan (hostStreamPlanTask, NCCL 2.28.9 src/enqueue.cc): for a blocking communicator
 * that is the thread that called the collective, inside its ncclGroupEnd (a bare call's
 * internal group, or the user's), so the call's scope is in flight there and the record
 * carries its id; for a graph-captured plan (and under CUDA_LAUNCH_BLOCKING, or while
 * the host stream is busy with captured work) it is CUDA's host-callback thread, at each
 * launch of the graph, and for a nonblocking communicator NCCL's group job thread: no
 * scope there (scope_id 0), and the CLI ties the record to its communicator by `context`.
 *
 * Cost: the library asks for collective and send/receive events only, records at the
 * event's start, and only launches whose shape its communicator did not just have
 * (repeats, below); every handle it gives back is NULL, so NCCL calls no stopEvent for them
 * and none of the other events' (groups, API events) either. Each event is one record
 * through the writer's fast path for records without dt: no lock, no allocation, and
 * each of NCCL's names is decoded once (memo, below).
 */

#define ACTIVATION (GMT_NCCL_PROF_COLL | GMT_NCCL_PROF_P2P)

/* One per communicator initialised with the plugin: what its events' records carry.
 * Claimed at init, freed at finalize; a communicator past the table's end shares
 * `overflow`, whose records carry no hash. */
#define SHAPES 4
struct prof_comm {
    _Atomic int used;
    uint64_t hash;      /* NCCL's commHash */
    uint64_t slot;      /* the address of NCCL's context slot, in its ncclComm */
    _Atomic uint64_t shape[SHAPES]; /* the last launches' shapes recorded (shape_of), 0 none */
    _Atomic unsigned next;          /* the shape a new one replaces */
};
static struct prof_comm comms[256];
static struct prof_comm overflow;
static struct prof_comm disabled; /* the context of a communicator that asked for nothing */

static void prof_init(void **context, uint64_t hash, int *mask)
{
    if (!gmt_opt.nccl_profiler || gmt_hot.options.off) {
        *mask = 0;          /* NCCL calls no event function at all then */
        *context = &disabled;
        return;
    }
    struct prof_comm *c = &overflow;
    for (size_t i = 0; i < GMT_COUNTOF(comms); i++) {
        int expect = 0;
        if (atomic_compare_exchange_strong_explicit(&comms[i].used, &expect, 1,
                                                    memory_order_acq_rel, memory_order_relaxed)) {
            c = &comms[i];
            c->hash = hash;
            c->slot = (uint64_t)(uintptr_t)context;
            for (int k = 0; k < SHAPES; k++)
                atomic_store_explicit(&c->shape[k], 0, memory_order_relaxed);
            break;
        }
    }
    *mask = ACTIVATION;
    *context = c;
}

/* The plugin path the library's getenv gives NCCL when the process has none. */
const char *gmt_nccl_profiler_env(void)
{
    const char *self = gmt_self_path();
    return !gmt_opt.off && gmt_opt.nccl_profiler && self[0] ? self : NULL;
}

static int prof_init_v5(void **context, uint64_t comm_id, int *mask, const char *name,
                        int nnodes, int nranks, int rank, gmt_nccl_prof_logger_t logfn)
{
    (void)name; (void)nnodes; (void)nranks; (void)rank; (void)logfn;
    int e = errno;
    prof_init(context, comm_id, mask);
    errno = e;
    return 0;
}

static int prof_init_v4(void **context, int *mask, const char *name, uint64_t comm_hash,
                        int nnodes, int nranks, int rank, gmt_nccl_prof_logger_t logfn)
{
    return prof_init_v5(context, comm_hash, mask, name, nnodes, nranks, rank, logfn);
}

static int prof_finalize(void *context)
{
    struct prof_comm *c = context;
    if (c && c != &overflow && c != &disabled)
        atomic_store_explicit(&c->used, 0, memory_order_release);
    return 0;
}

/* NCCL's names (static strings of its own) to the trace's numbers. */
static uint16_t op_of(const char *s)
{
#define GMT_X(name, id) if (strcmp(s, #name) == 0) return id;
    if (s)
        GMT_OPS(GMT_X)
#undef GMT_X
    return 0;
}
static int16_t datatype_of(const char *s)
{
    /* "ncclFloat32": the X-macro's names, compared after the common prefix */
    if (!s || strncmp(s, "nccl", 4) != 0)
        return -1;
#define GMT_X(name, val, size) if (strcmp(s + 4, &#name[4]) == 0) return val;
    GMT_NCCL_TYPES(GMT_X)
#undef GMT_X
    return -1;
}
static uint8_t algo_of(const char *s)
{
    if (!s)
        return GMT_NCCL_CHOICE_NONE;
#define GMT_X(name, val) if (strcmp(s, #name) == 0) return val;
    GMT_NCCL_ALGOS(GMT_X)
#undef GMT_X
    return GMT_NCCL_CHOICE_OTHER;
}
static uint8_t proto_of(const char *s)
{
    if (!s)
        return GMT_NCCL_CHOICE_NONE;
#define GMT_X(name, val) if (strcmp(s, #name) == 0) return val;
    GMT_NCCL_PROTOS(GMT_X)
#undef GMT_X
    return GMT_NCCL_CHOICE_OTHER;
}

/* A string NCCL hands over is its own static literal: the same pointer every time. A
 * word per field remembers the last one and its number, packed as pointer << 16 | number
 * (user-space pointers fit in 48 bits), so a training loop decodes each name once. */
static _Atomic uint64_t memo[4];
enum { MEMO_OP, MEMO_TYPE, MEMO_ALGO, MEMO_PROTO };
static inline int memo_get(int which, const char *s, int *out)
{
    uint64_t m = atomic_load_explicit(&memo[which], memory_order_relaxed);
    if (GMT_LIKELY(s && m >> 16 == (uint64_t)(uintptr_t)s)) {
        *out = (int)(int16_t)(uint16_t)m;
        return 1;
    }
    return 0;
}
static inline void memo_put(int which, const char *s, int v)
{
    if ((uint64_t)(uintptr_t)s >> 48 == 0)
        atomic_store_explicit(&memo[which], (uint64_t)(uintptr_t)s << 16 | (uint16_t)v,
                              memory_order_relaxed);
}
#define DECODE(which, fn, s)                                                                 \
    ({                                                                                       \
        int v_;                                                                              \
        if (!memo_get(which, s, &v_)) {                                                      \
            v_ = fn(s);                                                                      \
            memo_put(which, s, v_);                                                          \
        }                                                                                    \
        v_;                                                                                  \
    })

/*
 * Repeats. A training loop launches the same few collectives with the same choices
 * millions of times: a launch whose shape (function, count, datatype, root or peer,
 * rank, algorithm, protocol, channels, warps: NCCL's own pointers and numbers, so
 * nothing is decoded) equals one of the last SHAPES recorded for its communicator is not
 * written again. The trace then holds each choice where it first appears and wherever
 * it changes. Two threads racing may both write a shape: a record too many, never a
 * choice missing.
 */
/* Each field times its own odd constant, summed: a few independent multiplies, and two
 * shapes that differ collide with odds of about 2^-64. */
static inline uint64_t shape_of(uint8_t type, const struct gmt_nccl_prof_descr *d)
{
    uint64_t h = ((uint64_t)type << 32 | (uint32_t)d->rank) * 0x9e3779b97f4a7c15ull;
    if (type == GMT_NCCL_PROF_COLL) {
        const struct gmt_nccl_prof_coll *k = &d->u.coll;
        h += (uint64_t)(uintptr_t)k->func * 0xc2b2ae3d27d4eb4full +
             (uint64_t)(uintptr_t)k->datatype * 0x165667b19e3779f9ull +
             (uint64_t)(uintptr_t)k->algo * 0xd6e8feb86659fd93ull +
             (uint64_t)(uintptr_t)k->proto * 0xff51afd7ed558ccdull +
             (uint64_t)k->count * 0xc4ceb9fe1a85ec53ull +
             ((uint64_t)(uint32_t)k->root << 16 | (uint64_t)k->nchannels << 8 | k->nwarps) *
                 0x94d049bb133111ebull;
    } else {
        const struct gmt_nccl_prof_p2p *p = &d->u.p2p;
        h += (uint64_t)(uintptr_t)p->func * 0xc2b2ae3d27d4eb4full +
             (uint64_t)(uintptr_t)p->datatype * 0x165667b19e3779f9ull +
             (uint64_t)p->count * 0xc4ceb9fe1a85ec53ull +
             ((uint64_t)(uint32_t)p->peer << 8 | p->nchannels) * 0x94d049bb133111ebull;
    }
    return h | 1; /* never 0, the empty slot */
}
/* True when the shape is new to the communicator (and now remembered). The overflow
 * context is many communicators': everything is new there. */
static inline bool shape_new(struct prof_comm *c, uint64_t shape)
{
    if (GMT_UNLIKELY(c == &overflow))
        return true;
    for (int k = 0; k < SHAPES; k++)
        if (atomic_load_explicit(&c->shape[k], memory_order_relaxed) == shape)
            return false;
    unsigned at = atomic_fetch_add_explicit(&c->next, 1, memory_order_relaxed) % SHAPES;
    atomic_store_explicit(&c->shape[at], shape, memory_order_relaxed);
    return true;
}

static void record(struct prof_comm *c, uint8_t type, const struct gmt_nccl_prof_descr *d)
{
    if (type != GMT_NCCL_PROF_COLL && type != GMT_NCCL_PROF_P2P)
        return;
    if (GMT_UNLIKELY(gmt_ts.guard.in_lib) || GMT_UNLIKELY(gmt_hot.options.off) ||
        !c || c == &disabled)
        return;
    if (GMT_LIKELY(!shape_new(c, shape_of(type, d))))
        return;
    int e = errno;
    if (!gmt_writer_ready()) {
        errno = e;
        return;
    }
    struct gmt_rec_nccl_coll_info r = {
        .h = {.type = GMT_REC_NCCL_COLL_INFO, .size = sizeof r},
        .comm_hash = c->hash,
        .context = c->slot,
        .scope_id = gmt_current_scope(),
        .rank = d->rank,
    };
    if (type == GMT_NCCL_PROF_COLL) {
        const struct gmt_nccl_prof_coll *k = &d->u.coll;
        r.h.aux = (uint16_t)DECODE(MEMO_OP, op_of, k->func);
        r.kind = GMT_NCCL_INFO_COLL;
        r.seq = k->seq;
        r.count = k->count;
        r.root = k->root;
        r.datatype = (int16_t)DECODE(MEMO_TYPE, datatype_of, k->datatype);
        r.algo = (uint8_t)DECODE(MEMO_ALGO, algo_of, k->algo);
        r.proto = (uint8_t)DECODE(MEMO_PROTO, proto_of, k->proto);
        r.nchannels = k->nchannels;
        r.nwarps = k->nwarps;
    } else {
        const struct gmt_nccl_prof_p2p *p = &d->u.p2p;
        r.h.aux = (uint16_t)DECODE(MEMO_OP, op_of, p->func);
        r.kind = GMT_NCCL_INFO_P2P;
        r.count = p->count;
        r.root = p->peer;
        r.datatype = (int16_t)DECODE(MEMO_TYPE, datatype_of, p->datatype);
        r.algo = r.proto = GMT_NCCL_CHOICE_NONE;
        r.nchannels = p->nchannels;
    }
    r.time_ns = gmt_now_ns();
    /* no dt: the writer's fast path that reads no clock takes it as it is */
    gmt_emit_untimed(&r, sizeof r, 0);
    errno = e;
}
_Static_assert(sizeof(struct gmt_rec_nccl_coll_info) == 72, "NCCL_COLL_INFO is 72 bytes");

static int prof_start_v5(void *context, void **handle, struct gmt_nccl_prof_descr *d)
{
    *handle = NULL;
    /* v5's type is 64 bits wide; anything above the collective and send/receive bits is an
     * event the library never asked for */
    if (GMT_LIKELY(d->type.v5 <= GMT_NCCL_PROF_P2P))
        record(context, (uint8_t)d->type.v5, d);
    return 0;
}

static int prof_start_v4(void *context, void **handle, struct gmt_nccl_prof_descr *d)
{
    *handle = NULL;
    /* v4's type is one byte: NCCL 2.28's v4 adapter leaves the bytes after it unset */
    record(context, d->type.v4, d);
    return 0;
}

static int prof_stop(void *handle)
{
    (void)handle;
    return 0;
}

static int prof_state(void *handle, int state, void *args)
{
    (void)handle; (void)state; (void)args;
    return 0;
}

/* The symbols NCCL looks up (exports.map lets nccl* out). */
GMT_EXPORT struct gmt_nccl_profiler_v5 ncclProfiler_v5 = {
    .name = "gpumemtrace",
    .init = prof_init_v5,
    .start_event = prof_start_v5,
    .stop_event = prof_stop,
    .record_event_state = prof_state,
    .finalize = prof_finalize,
};
GMT_EXPORT struct gmt_nccl_profiler_v4 ncclProfiler_v4 = {
    .name = "gpumemtrace",
    .init = prof_init_v4,
    .start_event = prof_start_v4,
    .stop_event = prof_stop,
    .record_event_state = prof_state,
    .finalize = prof_finalize,
};
