/* scope.c: NCCL contexts (scopes) per thread and the communicators they run on (COMM records, each communicator's device). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "clock.h"
#include "nccl_abi.h"
#include "nccl_memstats.h"
#include "resolve.h"
#include "scope.h"
#include "versions.h"
#include "writer_api.h"


/* Scope ids: each thread takes a block of ID_BLOCK from this counter and hands them out
 * one by one, so the common call makes no locked operation. Ids stay unique and nonzero,
 * and increase along each thread; across threads they have gaps (at most ID_BLOCK - 1 per
 * thread), which the CLI's id index takes (tools/trace.c). */
#define ID_BLOCK 256
static _Atomic uint32_t next_scope_id;
/* this thread's block: ids gmt_ts.scope.id_next+1 .. gmt_ts.scope.id_end */

__attribute__((hot)) uint32_t gmt_scope_new_id(void)
{
    for (;;) {
        if (GMT_UNLIKELY(gmt_ts.scope.id_next == gmt_ts.scope.id_end)) {
            uint32_t base =
                atomic_fetch_add_explicit(&next_scope_id, ID_BLOCK, memory_order_relaxed);
            gmt_ts.scope.id_next = base;
            gmt_ts.scope.id_end = base + ID_BLOCK;
        }
        uint32_t id = ++gmt_ts.scope.id_next;
        if (GMT_LIKELY(id)) /* 2^32 scopes later: 0 means none */
            return id;
    }
}
/* gmt_scope_new_id's common case: the block has ids left. The id is taken in one
 * increment, as late as can be: a signal handler's scope in between takes the next. */
static inline __attribute__((always_inline)) uint32_t new_id(void)
{
    if (GMT_LIKELY(gmt_ts.scope.id_next != gmt_ts.scope.id_end)) {
        uint32_t id = ++gmt_ts.scope.id_next;
        if (GMT_LIKELY(id))
            return id;
    }
    return gmt_scope_new_id();
}
static _Atomic uint64_t scopes_too_deep; /* scopes past FRAMES: recorded, not tracked */

/* Calls seen per (comm, op): a stack is captured only for the first of each. */
#define SEEN_SLOTS 1024
static _Atomic uint64_t seen_keys[SEEN_SLOTS];


/* Device of each communicator: value device+1, 0 while unknown. */
#define COMM_SLOTS 1024
static _Atomic uint64_t comm_keys[COMM_SLOTS];
static _Atomic int32_t comm_devs[COMM_SLOTS];

typedef int (*nccl_query_fn)(void *comm, int *out);
enum query { Q_RANK, Q_COUNT, Q_DEVICE };

/* Asks the real NCCL about a communicator; -1 when it can't say. */
static int nccl_query(enum query q, uint64_t comm)
{
    nccl_query_fn fn;
    if (q == Q_RANK)
        fn = GMT_REAL(GMT_LIB_NCCL, nccl_query_fn, ncclCommUserRank);
    else if (q == Q_COUNT)
        fn = GMT_REAL(GMT_LIB_NCCL, nccl_query_fn, ncclCommCount);
    else
        fn = GMT_REAL(GMT_LIB_NCCL, nccl_query_fn, ncclCommCuDevice);
    int out = -1;
    if (!fn || fn((void *)(uintptr_t)comm, &out) != 0)
        return -1;
    return out;
}

GMT_TLS struct gmt_comm_memo gmt_scope_memo[GMT_MEMOS];

void gmt_scope_comm_cache_put(uint64_t comm, int device)
{
    uint64_t key = gmt_mix(comm);
    long i = gmt_key_slot(comm_keys, COMM_SLOTS, (uint32_t)key, key, GMT_KEY_CLAIM);
    if (i >= 0)
        atomic_store_explicit(&comm_devs[i], device + 1, memory_order_release);
    /* after the store: a thread that sees the new generation then reads the new device */
    atomic_fetch_add_explicit(&gmt_hot.scope.comm_gen, 1, memory_order_acq_rel);
}

/* A communicator's device: what its COMM record cached, else the thread's current device
 * (NCCL drives a communicator on the device current at its init; calls on it are made
 * there too). NCCL itself is not asked here: a non-blocking communicator still
 * initializing answers with an error and a WARN in the program's log (hooks_nccl.c writes
 * its COMM record once it is ready). The key is gmt_mix(comm), so two communicators could
 * share an entry only by a 64-bit collision. */
static int comm_device_lookup(uint64_t comm)
{
    uint64_t key = gmt_mix(comm);
    long i = gmt_key_slot(comm_keys, COMM_SLOTS, (uint32_t)key, key, GMT_KEY_CLAIM);
    if (i >= 0) {
        int d = atomic_load_explicit(&comm_devs[i], memory_order_acquire);
        if (d > 0)
            return d - 1;
    }
    return -1;
}

static int comm_device(uint64_t comm, const struct gmt_comm_memo *m)
{
    if (!comm)
        return -1;
    if (m && m->device >= 0)
        return m->device;
    int dev = comm_device_lookup(comm);
    if (dev >= 0)
        return dev;
    int e = gmt_lib_enter();
    dev = gmt_driver_current_device();
    gmt_lib_leave(e);
    return dev;
}

/* memo_of past the entry the thread's last call found: another current one, or one made
 * afresh (from the COMM cache). */
static __attribute__((noinline)) struct gmt_comm_memo *memo_other(uint64_t comm, unsigned long gen)
{
    for (int i = 0; i < GMT_MEMOS; i++)
        if (gmt_scope_memo[i].comm == comm && gmt_scope_memo[i].gen == gen) {
            gmt_ts.scope.memo_last = (uint8_t)i;
            return &gmt_scope_memo[i];
        }
    unsigned i = gmt_ts.scope.memo_next++ % GMT_MEMOS;
    struct gmt_comm_memo *m = &gmt_scope_memo[i];
    /* generation last, behind a signal fence: a signal handler's NCCL call in between
     * finds the entry invalid instead of half written */
    m->gen = 0;
    atomic_signal_fence(memory_order_seq_cst);
    m->comm = comm;
    m->ops_seen = 0;
    m->done_next = 0;
    memset(m->done, 0, sizeof m->done);
    m->device = comm ? comm_device_lookup(comm) : -1;
    atomic_signal_fence(memory_order_seq_cst);
    m->gen = gen;
    gmt_ts.scope.memo_last = (uint8_t)i;
    return m;
}

/* This thread's memo of `comm`, made afresh when it has none that is current. A loop's
 * calls on one communicator find it at the entry the last call found. */
static inline __attribute__((always_inline)) struct gmt_comm_memo *memo_of(uint64_t comm)
{
    unsigned long gen = atomic_load_explicit(&gmt_hot.scope.comm_gen, memory_order_acquire);
    struct gmt_comm_memo *m = &gmt_scope_memo[gmt_ts.scope.memo_last % GMT_MEMOS];
    if (GMT_LIKELY(m->comm == comm && m->gen == gen))
        return m;
    return memo_other(comm, gen);
}


/* ---- scopes ---- */

/* Registers scope `depth` on `device` and samples memory at begin when the policy wants
 * this key. Inside a group the members only enqueue: the work and the allocations (of
 * inits in the group too) happen in ncclGroupEnd, when the members have returned. So a
 * member registers its group on the device instead of itself (a foreign thread's
 * allocation during ncclGroupEnd then finds the group), and the sample is taken once per
 * device for the group and closed when the group ends. With nested groups, all of that
 * is the outermost group's: NCCL does the work at the outermost ncclGroupEnd. */
static void concern_sample(int target, int device);
static inline __attribute__((always_inline)) void
concern_device(int depth, int device, uint64_t comm, unsigned op, uint64_t bytes,
               struct gmt_comm_memo *m)
{
    if (device < 0 || device >= MAX_DEV || depth >= FRAMES)
        return;
    int g = gmt_ts.scope.frames[depth].group;
    int target = g >= 0 ? g : depth;
    gmt_claims_register(target, device);
    if (GMT_LIKELY(!gmt_sample_wanted(comm, op, bytes, m)))
        return;
    concern_sample(target, device);
}

/* concern_device's sample at begin, once per frame and device. */
static __attribute__((noinline)) void concern_sample(int target, int device)
{
    uint64_t bit = 1ull << device;
    if (gmt_ts.scope.frames[target].memmask & bit)
        return;
    gmt_ts.scope.frames[target].memmask |= bit;
    gmt_sample(gmt_ts.scope.frames[target].id, device, GMT_MEMINFO_BEGIN);
}

static _Atomic uint8_t captured[SEEN_SLOTS];

static __attribute__((noinline)) bool first_of_lookup(uint64_t comm, unsigned op)
{
    uint64_t key = gmt_mix(gmt_mix(comm) ^ op);
    long i = gmt_key_slot(seen_keys, SEEN_SLOTS, (uint32_t)key, key, GMT_KEY_CLAIM);
    if (i < 0)
        return false;
    /* The claim is the "seen" mark: the claiming call captures. A second probe finding
     * the key already there does not. */
    /* A plain load first: after the first call the locked exchange is never needed. */
    if (atomic_load_explicit(&captured[i], memory_order_relaxed))
        return false;
    return atomic_exchange_explicit(&captured[i], 1, memory_order_relaxed) == 0;
}

/* first_of's memo for calls without a communicator (groups, inits before they return):
 * kept out of the communicator memo, which a thread driving 8 GPUs fills with its 8
 * communicators. Valid while comm_gen is unchanged (a fork child's is not). */
static __attribute__((noinline)) bool first_of_nocomm(unsigned op)
{
    /* in the line of the repeated groups' state, which a group reads anyway */
    uint32_t gen = (uint32_t)atomic_load_explicit(&gmt_hot.scope.comm_gen, memory_order_acquire);
    if (gmt_ts.rep.nocomm.gen != gen) {
        gmt_ts.rep.nocomm.ops = 0;
        gmt_ts.rep.nocomm.gen = gen;
    }
    uint64_t bit = op < 64 ? 1ull << op : 0;
    if (gmt_ts.rep.nocomm.ops & bit)
        return false;
    gmt_ts.rep.nocomm.ops |= bit;
    return first_of_lookup(0, op);
}

/* True for the one call (process-wide) that captures the stack of (comm, op). */
static inline __attribute__((always_inline)) bool first_of(struct gmt_comm_memo *m, uint64_t comm,
                                                          unsigned op)
{
    uint64_t bit = op < 64 ? 1ull << op : 0;
    if (GMT_LIKELY(m->ops_seen & bit))
        return false; /* asked before: the answer is only ever true once */
    m->ops_seen |= bit;
    return first_of_lookup(comm, op);
}

/* The held call's begin written now: a spill (below; deferred.h). */
static void gmt_scope_call_spill(void);

/* A fork child writes a file of its own, and has one thread: the scopes the parent's
 * threads had open (published for foreign-thread attribution, or on the forking thread's
 * own stack) are not in that file, and must not be named by the child's records. Stacks
 * start over there too (stack.c), so each (comm, op) gets its stack captured again. */
static void fork_child(void)
{
    gmt_claims_fork_child();
    gmt_ts.scope.depth = 0;
    /* the parent's held call and groups are not in the child's file */
    gmt_deferred_lost();
    atomic_fetch_add_explicit(&gmt_hot.scope.comm_gen, 1, memory_order_relaxed);
    for (int i = 0; i < SEEN_SLOTS; i++) {
        atomic_store_explicit(&seen_keys[i], 0, memory_order_relaxed);
        atomic_store_explicit(&captured[i], 0, memory_order_relaxed);
    }
}

__attribute__((constructor)) static void register_fork_child(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}


/* Frames a signal handler may read as its enclosing ones (its parent, its group, where a
 * device it leaves falls back to) are whole or say "none yet": frame_clear empties the
 * next frame (id 0, no device) before the depth counts it, frame_put then writes it with
 * the id last. A handler before the depth counts it takes that frame itself, and is gone
 * before it is written. */
static inline __attribute__((always_inline)) void frame_clear(struct gmt_frame *f)
{
    f->id = 0;
    f->devmask = 0;
    atomic_signal_fence(memory_order_seq_cst);
}
static inline __attribute__((always_inline)) void frame_put(struct gmt_frame *f, uint32_t id,
                                                            enum gmt_op op, int group,
                                                            uint64_t devmask)
{
    f->id = 0;
    atomic_signal_fence(memory_order_seq_cst);
    f->op = (uint8_t)op;
    f->group = (int8_t)group;
    f->devmask = devmask;
    f->memmask = 0;
    atomic_signal_fence(memory_order_seq_cst);
    f->id = id;
}

/* gmt_scope_begin past its record: the frame, and what the scope concerns. */
static __attribute__((noinline)) void begin_frame(enum gmt_op op, uint64_t comm, uint64_t count,
                                                  int datatype, uint32_t id)
{
    int depth = gmt_ts.scope.depth;
    if (GMT_LIKELY(depth >= 0 && depth < FRAMES))
        frame_clear(&gmt_ts.scope.frames[depth]);
    depth = gmt_ts.scope.depth++;
    atomic_signal_fence(memory_order_seq_cst); /* as in gmt_scope_begin: the depth first */
    if (GMT_LIKELY(depth < FRAMES)) {
        /* the outermost open group: NCCL does the work of nested groups at the
         * outermost ncclGroupEnd */
        int g = -1;
        /* The enclosing frame's id is 0 while its fields are being written (frame_put):
         * a signal handler's scope that finds it so takes no group from it. */
        if (depth > 0 && gmt_ts.scope.frames[depth - 1].id) {
            g = gmt_ts.scope.frames[depth - 1].group;
            if (g < 0 && gmt_ts.scope.frames[depth - 1].op == GMT_OP_Group)
                g = depth - 1;
        }
        frame_put(&gmt_ts.scope.frames[depth], id, op, g, 0);
        if (op == GMT_OP_Group && depth == 0 && !gmt_hot.options.no_repeat)
            gmt_group_open(id);
        if (comm) {
            /* Found again: a signal handler's NCCL call during gmt_emit may have given the
             * memo's entry to another communicator. */
            struct gmt_comm_memo *m = memo_of(comm);
            size_t esz = gmt_nccl_type_size(datatype);
            concern_device(depth, comm_device(comm, m), comm, op, count * esz, m);
        }
    } else {
        atomic_fetch_add_explicit(&scopes_too_deep, 1, memory_order_relaxed);
    }
}

/* errno: the common path below makes no call that can set it (gmt_emit, the memo, the
 * tables); what can (a stack capture, a sample, asking the driver for the current
 * device, noting a version) saves and restores it where it is called. */
static __attribute__((noinline)) uint32_t begin_any(enum gmt_op op, uint64_t comm, uint64_t count,
                                                    int datatype, int peer, uint64_t stream)
{
    if (!gmt_writer_ready())
        return 0;
    uint8_t st = gmt_ts.writer.deferred;
    if (GMT_UNLIKELY(st == GMT_DEFER_CALL))
        gmt_scope_call_spill(); /* a signal handler's call inside a held one: that goes first */
    else if (GMT_UNLIKELY(st != GMT_DEFER_OFF && st != GMT_DEFER_FORM))
        gmt_group_stop(); /* a scope inside a group: not a plain member */
    uint32_t id = new_id();
    struct gmt_comm_memo *m = comm ? memo_of(comm) : NULL;
    uint32_t stack_id = 0;
    if (GMT_UNLIKELY(m ? first_of(m, comm, op) : first_of_nocomm(op))) {
        int saved_errno = errno;
        stack_id = gmt_stack_capture(NULL);
        errno = saved_errno;
    }

    struct gmt_rec_scope_begin r = gmt_scope_begin_rec(op, id, stack_id, comm, count, datatype, peer, stream);
    gmt_emit_rec(&r);
    gmt_version_note(GMT_COMP_NCCL);
    begin_frame(op, comm, count, datatype, id);
    return id;
}

/* ---- one record per call ----
 *
 * A loop's call (below) is written as one record at its return: SCOPE_END's call form
 * (format 2.5), which stands for its SCOPE_BEGIN too and leaves out the begin's fields
 * that the thread's previous call form had. Between the call and its return the begin
 * is held back (deferred state CALL, deferred.h) in the thread's slot (the writer's
 * struct gmt_writer_slot, laid out below), where:
 *   - any other record of the thread (an allocation NCCL makes in the call, a signal
 *     handler's) first writes it as a SCOPE_BEGIN of its own time (a spill), and the
 *     return then writes a plain SCOPE_END;
 *   - the flusher finds it when the call runs past a tick, and a crashing or exiting
 *     thread finds it, and writes a SCOPE_OPEN for it (writer_flush.c): a call a process hangs
 *     or dies in is in the file.
 * Signals: the state is CALL before the slot is written, so a handler's NCCL call goes
 * the slow way, and its records go first; a spill writes the slot only once it is
 * `ready`. The return takes the begin back with a load and a store, no locked
 * instruction: a spill between them shows in the spill count (as rep_close has it, group.c).
 */

/* The held call in the slot's words: word[W_ID] its scope id | op << 32 (0: none held),
 * then its begin (ns; 0: not timed), comm, count, stream, datatype | peer << 32. */
enum { W_ID, W_BEGIN, W_COMM, W_COUNT, W_STREAM, W_TYPE_PEER };
_Static_assert(W_TYPE_PEER < GMT_SLOT_WORDS, "the held call fits the slot");
/* the flusher's words of another thread's slot: the last id it wrote a SCOPE_OPEN for,
 * and an untimed call it saw held: its id, the slot's seq then, and when */
enum { N_NOTED, N_SEEN_ID, N_SEEN_SEQ, N_SEEN_NS };
_Static_assert(N_SEEN_NS < GMT_SLOT_NOTE_WORDS, "the notes fit the slot");
_Static_assert(offsetof(struct gmt_rec_scope_end, dt) == GMT_SPAN_DT &&
                   offsetof(struct gmt_rec_scope_end, duration) == GMT_SPAN_DURATION &&
                   sizeof(struct gmt_rec_scope_call) == GMT_SPAN_COPY,
               "a call form is the writer's span");

/* The held call's fields, read once the state says the slot is the call's own and before
 * the state lets go of it: a signal handler's NCCL call after that may take the slot. */
struct held_copy {
    uint64_t begin_ns, comm, count, stream, type_peer; /* datatype | peer << 32 */
    uint32_t op;
};
static inline __attribute__((always_inline)) struct held_copy held_get(const struct gmt_writer_slot *h)
{
    return (struct held_copy){
        .begin_ns = atomic_load_explicit(&h->word[W_BEGIN], memory_order_relaxed),
        .comm = atomic_load_explicit(&h->word[W_COMM], memory_order_relaxed),
        .count = atomic_load_explicit(&h->word[W_COUNT], memory_order_relaxed),
        .stream = atomic_load_explicit(&h->word[W_STREAM], memory_order_relaxed),
        .type_peer = atomic_load_explicit(&h->word[W_TYPE_PEER], memory_order_relaxed),
        .op = (uint32_t)(atomic_load_explicit(&h->word[W_ID], memory_order_relaxed) >> 32),
    };
}

/* The slot's hook (writer_api.h): a SCOPE_OPEN for another thread's held call that has none
 * yet and began at least min_age_ns before now. An untimed call (no begin) counts as
 * that old once the flusher saw it held at two ticks; its SCOPE_OPEN then says the
 * first, the earliest instant the call is known to have been in (or, unseen, now). */
static bool held_call_note_open(const uint64_t word[GMT_SLOT_WORDS], uint32_t seq, uint32_t tid,
                                _Atomic uint64_t note[GMT_SLOT_NOTE_WORDS], uint64_t now,
                                uint64_t min_age_ns)
{
    uint32_t id = (uint32_t)word[W_ID];
    if (!id || atomic_load_explicit(&note[N_NOTED], memory_order_relaxed) == id)
        return false;
    struct gmt_rec_scope_open o = {
        .h = {GMT_REC_SCOPE_OPEN, (uint16_t)(word[W_ID] >> 32), sizeof o},
        .time_ns = word[W_BEGIN],
        .tid = tid,
        .scope_id = id,
        .comm = word[W_COMM],
        .count = word[W_COUNT],
        .stream = word[W_STREAM],
        .datatype = (int32_t)(uint32_t)word[W_TYPE_PEER],
        .peer = (int32_t)(uint32_t)(word[W_TYPE_PEER] >> 32),
    };
    if (!o.time_ns) {
        bool seen = atomic_load_explicit(&note[N_SEEN_ID], memory_order_relaxed) == id &&
                    atomic_load_explicit(&note[N_SEEN_SEQ], memory_order_relaxed) == seq;
        if (seen) {
            o.time_ns = atomic_load_explicit(&note[N_SEEN_NS], memory_order_relaxed);
        } else if (min_age_ns) {
            atomic_store_explicit(&note[N_SEEN_ID], id, memory_order_relaxed);
            atomic_store_explicit(&note[N_SEEN_SEQ], seq, memory_order_relaxed);
            atomic_store_explicit(&note[N_SEEN_NS], now, memory_order_relaxed);
            return false;
        } else {
            o.time_ns = now;
        }
    } else if (min_age_ns && (now < o.time_ns || now - o.time_ns < min_age_ns)) {
        return false;
    }
    gmt_emit(&o, 0);
    atomic_store_explicit(&note[N_NOTED], id, memory_order_relaxed);
    return true;
}
GMT_SLOT_CLIENT(held_call_slot, held_call_note_open);

/* The held begin as its SCOPE_BEGIN, of its own time: written now, by the thread (a
 * spill: another record of the thread is about to be written, or the thread crashes or
 * exits), or when the call form can't be (the return's fallback). */
static void held_begin_write(const struct held_copy *c, uint32_t id)
{
    struct gmt_rec_scope_begin r = gmt_scope_begin_rec(
        (enum gmt_op)c->op, id, 0, c->comm, c->count, (int32_t)(uint32_t)c->type_peer,
        (int32_t)(uint32_t)(c->type_peer >> 32), c->stream);
    r.parent_id = 0;
    /* an untimed call's begin: now, the latest it can have been */
    if (c->begin_ns)
        gmt_emit_at(&r, offsetof(struct gmt_rec_scope_begin, dt), c->begin_ns);
    else
        gmt_emit_rec(&r);
}

__attribute__((cold)) static void gmt_scope_call_spill(void)
{
    struct gmt_writer_slot *h = gmt_writer_slot();
    if (gmt_ts.writer.deferred != GMT_DEFER_CALL || !gmt_ts.call.ready || !h)
        return; /* none held, or its slot is being written: the other record goes first */
    struct held_copy c = held_get(h);
    uint32_t id = gmt_ts.call.id;
    uint8_t call = GMT_DEFER_CALL;
    if (!__atomic_compare_exchange_n(&gmt_ts.writer.deferred, &call, GMT_DEFER_OFF, false,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return;
    gmt_ts.call.spills++;
    gmt_ts.call.ready = 0;
    atomic_signal_fence(memory_order_seq_cst);
    /* in the thread's buffer from here on: no SCOPE_OPEN needed for it */
    atomic_store_explicit(&h->word[W_ID], 0, memory_order_relaxed);
    held_begin_write(&c, id);
}

/* The held begin is lost (a record of the thread was, or a THREAD record starts it
 * afresh): its return writes a plain SCOPE_END. Nor may a call form leave out fields
 * after it (format 2.5: the reader's previous call form may not be the writer's). */
static unsigned gmt_scope_call_lost(void)
{
    gmt_ts.call.has_prev = 0;
    uint8_t call = GMT_DEFER_CALL;
    if (!__atomic_compare_exchange_n(&gmt_ts.writer.deferred, &call, GMT_DEFER_OFF, false,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return 0;
    gmt_ts.call.ready = 0;
    struct gmt_writer_slot *h = gmt_writer_slot();
    if (h)
        atomic_store_explicit(&h->word[W_ID], 0, memory_order_relaxed);
    return 1;
}

/* the writer's deferred-records client for CALL (deferred.h) */
GMT_DEFERRED_CLIENT(call_client, GMT_DEFER_CALL, gmt_scope_call_spill, gmt_scope_call_lost);

/* Holds the call's begin back in the slot (the state is CALL already). */
static inline __attribute__((always_inline)) void
held_put(struct gmt_writer_slot *h, enum gmt_op op, uint32_t id, uint64_t begin_ns, uint64_t comm,
         uint64_t count, int datatype, int peer, uint64_t stream)
{
    uint32_t seq = gmt_slot_write_begin(h);
    atomic_store_explicit(&h->word[W_BEGIN], begin_ns, memory_order_relaxed);
    atomic_store_explicit(&h->word[W_COMM], comm, memory_order_relaxed);
    atomic_store_explicit(&h->word[W_COUNT], count, memory_order_relaxed);
    atomic_store_explicit(&h->word[W_STREAM], stream, memory_order_relaxed);
    atomic_store_explicit(&h->word[W_TYPE_PEER],
                          (uint32_t)datatype | (uint64_t)(uint32_t)peer << 32, memory_order_relaxed);
    atomic_store_explicit(&h->word[W_ID], id | (uint64_t)(uint32_t)op << 32, memory_order_relaxed);
    gmt_slot_write_end(h, seq);
    gmt_ts.call.id = id;
    atomic_signal_fence(memory_order_seq_cst);
    gmt_ts.call.ready = 1;
}

/* The held call's record at its return: the call form, with the fields the thread's
 * previous one had left out; when the fast path can't take it, the begin and a plain
 * SCOPE_END instead (and the next call form has every field). */
static inline __attribute__((always_inline)) void held_end_write(const struct held_copy *c,
                                                                 enum gmt_op op,
                                                                 uint32_t scope_id, int result)
{
    /* all 64 bytes set: the writer copies them whole (past the record's end too) */
    struct gmt_rec_scope_call r = {
        .e = {.h = {.type = GMT_REC_SCOPE_END, .aux = (uint16_t)op}, .scope_id = scope_id,
              .result = result}};
    /* Each field is stored at the next place and kept there only when it differs from the
     * previous call form's: no branch per field. */
    _Static_assert(GMT_CALL_HAS_COMM == 1 && GMT_CALL_HAS_COUNT == 2 && GMT_CALL_HAS_STREAM == 4 &&
                       GMT_CALL_HAS_TYPE_PEER == 8,
                   "the bits in field order");
    unsigned n = 0, fresh = !gmt_ts.call.has_prev, d, has;
    r.field[n] = c->comm;
    d = fresh | (c->comm != gmt_ts.call.prev_comm);
    has = d;
    n += d;
    r.field[n] = c->count;
    d = fresh | (c->count != gmt_ts.call.prev_count);
    has |= d << 1;
    n += d;
    r.field[n] = c->stream;
    d = fresh | (c->stream != gmt_ts.call.prev_stream);
    has |= d << 2;
    n += d;
    r.field[n] = c->type_peer;
    d = fresh | (c->type_peer != gmt_ts.call.prev_type_peer);
    has |= d << 3;
    n += d;
    r.has = has;
    r.weight = c->begin_ns ? GMT_CALL_TIMED_EVERY : 0;
    r.e.h.size = GMT_SCOPE_CALL_MIN + 8 * n;
    if (GMT_LIKELY(gmt_emit_span(&r, r.e.h.size, c->begin_ns))) {
        gmt_ts.call.prev_comm = c->comm;
        gmt_ts.call.prev_count = c->count;
        gmt_ts.call.prev_stream = c->stream;
        gmt_ts.call.prev_type_peer = c->type_peer;
        gmt_ts.call.has_prev = 1;
        return;
    }
    held_begin_write(c, scope_id);
    struct gmt_rec_scope_end e = gmt_scope_end_rec(op, scope_id, result);
    gmt_emit_rec(&e);
}

/* A loop call's frame 0, published on its device: the depth first, behind a signal fence,
 * so that a signal handler's scope from here on takes frame 1. */
static inline __attribute__((always_inline)) uint32_t loop_frame(uint32_t id, enum gmt_op op,
                                                                 int device)
{
    frame_clear(&gmt_ts.scope.frames[0]);
    gmt_ts.scope.depth = 1;
    atomic_signal_fence(memory_order_seq_cst);
    frame_put(&gmt_ts.scope.frames[0], id, op, -1, 1ull << device);
    gmt_claims_publish(device, id);
    return id;
}

/*
 * A loop's call, decided up front: no scope open on the thread (so no group), the file
 * open and nothing held back, an id left in the block, the communicator's memo the one
 * the thread's last call found, its (comm, op) past its first call, its device known and
 * no sample wanted (the memo found its (op, bytes) past the quota, or the policy is
 * never). What begin_any would do then is one record, one frame and one publish. A
 * signal handler's NCCL call during the record may leave the thread otherwise (a scope
 * open, m's entry given to another communicator): then begin_frame decides again; one on
 * the same communicator can only have counted calls of its own.
 */
__attribute__((hot)) uint32_t gmt_scope_begin(enum gmt_op op, uint64_t comm, uint64_t count,
                                              int datatype, int peer, uint64_t stream)
{
    struct gmt_comm_memo *m = &gmt_scope_memo[gmt_ts.scope.memo_last % GMT_MEMOS];
    unsigned long gen = atomic_load_explicit(&gmt_hot.scope.comm_gen, memory_order_acquire);
    int device = m->device;
    if (GMT_UNLIKELY(!comm || m->comm != comm || m->gen != gen || gmt_ts.scope.depth != 0 ||
                     atomic_load_explicit(&gmt_hot.writer.state, memory_order_acquire) != GMT_WRITER_OPEN ||
                     gmt_ts.writer.deferred != GMT_DEFER_OFF || (unsigned)op >= 64 ||
                     !((m->ops_seen >> op) & 1) || (unsigned)device >= MAX_DEV))
        return begin_any(op, comm, count, datatype, peer, stream);
    int k = atomic_load_explicit(&gmt_hot.meminfo.kind, memory_order_acquire);
    if (GMT_UNLIKELY(k != GMT_POLICY_NEVER &&
                     (k != GMT_POLICY_FIRST || gmt_hot.meminfo.every ||
                      !gmt_memo_done(m, gmt_memo_key(op, count * gmt_nccl_type_size(datatype))))))
        return begin_any(op, comm, count, datatype, peer, stream);

    struct gmt_writer_slot *h = gmt_writer_slot();
    if (GMT_LIKELY(h && !gmt_hot.options.no_compact)) {
        /* CALL before the slot: a signal handler's records and NCCL calls from here on
         * take the slow way, which leaves the slot to us until it is ready */
        gmt_ts.writer.deferred = GMT_DEFER_CALL;
        atomic_signal_fence(memory_order_seq_cst);
        uint32_t id = new_id();
        /* one call in GMT_CALL_TIMED_EVERY has its begin's time read (the clock is a
         * fifth of the call's cost); the others' call forms say duration 0 */
        uint64_t begin_ns = 0;
        if (GMT_UNLIKELY(gmt_call_timed(&gmt_ts.call.rng)))
            begin_ns = gmt_now_ns();
        held_put(h, op, id, begin_ns, comm, count, datatype, peer, stream);
        gmt_version_note(GMT_COMP_NCCL);
        return loop_frame(id, op, device);
    }

    uint32_t id = new_id();
    struct gmt_rec_scope_begin r = gmt_scope_begin_rec(op, id, 0, comm, count, datatype, peer, stream);
    r.parent_id = 0;
    gmt_emit_rec(&r);
    gmt_version_note(GMT_COMP_NCCL);
    /* The call's words from here on are read back from the record (gmt_emit changes only
     * its dt): none of them is kept in a register across the emit. Every NCCL call of a
     * signal handler in between took an id (as the one that changes the memo or the
     * claims does). */
    id = r.scope_id;
    if (GMT_UNLIKELY(gmt_ts.scope.id_next != id || gmt_ts.scope.depth != 0)) {
        begin_frame((enum gmt_op)r.h.aux, r.comm, r.count, r.datatype, id);
        return id;
    }
    return loop_frame(id, (enum gmt_op)r.h.aux, device);
}

void gmt_scope_add_device(uint32_t scope_id, int device, uint64_t key)
{
    if (!scope_id)
        return;
    int depth = gmt_ts.scope.depth - 1;
    if (depth < 0 || depth >= FRAMES || gmt_ts.scope.frames[depth].id != scope_id)
        return;
    if (device < 0) {
        int e = gmt_lib_enter();
        device = gmt_driver_current_device();
        gmt_lib_leave(e);
    }
    concern_device(depth, device, key, gmt_ts.scope.frames[depth].op, 0, NULL);
}

/* gmt_scope_end past its common case: a scope sampled at begin, deeper than FRAMES, or
 * not the innermost one. */
static __attribute__((noinline)) void scope_end_other(uint32_t scope_id, int depth)
{
    if (depth > FRAMES) {
        gmt_ts.scope.depth--;
    } else if (depth > 0) {
        /* Normally the innermost; a scope left open by a misused API (a group never
         * ended) is closed with the one that encloses it. */
        int k = depth - 1;
        while (k >= 0 && gmt_ts.scope.frames[k].id != scope_id)
            k--;
        if (k >= 0) {
            uint64_t mem = gmt_ts.scope.frames[k].memmask;
            while (mem) {
                int d = __builtin_ctzll(mem);
                mem &= mem - 1;
                gmt_sample(scope_id, d, GMT_MEMINFO_END);
            }
            for (int j = depth - 1; j >= k; j--)
                gmt_claims_unregister(j);
            gmt_ts.scope.depth = k;
        }
    }
}

/* gmt_scope_end past its common case, all of it. */
static __attribute__((noinline)) void end_any(uint32_t scope_id, enum gmt_op op, int result)
{
    if (!scope_id)
        return;
    /* the wrapper leaves errno to us (hooks_nccl.c): what follows may call out */
    int saved_errno = errno;
    gmt_group_scope_end(scope_id);
    int depth = gmt_ts.scope.depth;
    if (depth > 0 && depth <= FRAMES && gmt_ts.scope.frames[depth - 1].id == scope_id &&
        !gmt_ts.scope.frames[depth - 1].memmask) {
        gmt_claims_unregister(depth - 1);
        gmt_ts.scope.depth = depth - 1;
    } else {
        scope_end_other(scope_id, depth);
    }
    errno = saved_errno;
    struct gmt_rec_scope_end r = gmt_scope_end_rec(op, scope_id, result);
    gmt_emit_rec(&r);
}

/* The common end: the innermost scope, at depth 1 (no frame to fall back to), not sampled
 * at begin, no group state to settle. */
__attribute__((hot)) void gmt_scope_end(uint32_t scope_id, enum gmt_op op, int result)
{
    uint8_t st = gmt_ts.writer.deferred;
    if (GMT_UNLIKELY(!scope_id || gmt_ts.scope.depth != 1 || gmt_ts.scope.frames[0].id != scope_id ||
                     gmt_ts.scope.frames[0].memmask || (st != GMT_DEFER_OFF && st != GMT_DEFER_CALL) ||
                     scope_id == gmt_ts.rep.repeated)) {
        end_any(scope_id, op, result);
        return;
    }
    for (uint64_t mask = gmt_ts.scope.frames[0].devmask; mask; mask &= mask - 1)
        gmt_claims_unpublish(__builtin_ctzll(mask));
    /* frame 0 is done with before a signal handler's scope can take it */
    atomic_signal_fence(memory_order_seq_cst);
    gmt_ts.scope.depth = 0;
    struct gmt_writer_slot *h = gmt_writer_slot();
    if (st == GMT_DEFER_CALL && GMT_LIKELY(gmt_ts.call.ready && gmt_ts.call.id == scope_id && h)) {
        /* The begin back from the slot, unless a spill wrote it: no spill can come
         * after the store of FORM, and one after the count was read changes it. (A
         * handler's whole call can run in between too, and spill nothing of ours or be
         * spilled itself: the count, unlike a flag it could clear, still says so.) The
         * fields are read first: once the state lets go, a handler's call may take the
         * slot. FORM until the call form is written: a handler's NCCL call meanwhile
         * writes whole records, no call form between this one's fields and its write. */
        struct held_copy c = held_get(h);
        uint8_t spills = gmt_ts.call.spills;
        atomic_signal_fence(memory_order_seq_cst);
        st = gmt_ts.writer.deferred;
        gmt_ts.writer.deferred = GMT_DEFER_FORM;
        atomic_signal_fence(memory_order_seq_cst);
        gmt_ts.call.ready = 0;
        if (GMT_LIKELY(st == GMT_DEFER_CALL && spills == gmt_ts.call.spills)) {
            atomic_store_explicit(&h->word[W_ID], 0, memory_order_relaxed);
            held_end_write(&c, op, scope_id, result);
            atomic_signal_fence(memory_order_seq_cst);
            gmt_ts.writer.deferred = GMT_DEFER_OFF;
            return;
        }
        gmt_ts.writer.deferred = GMT_DEFER_OFF;
    }
    /* not held (or written by a spill already): the plain SCOPE_END */
    struct gmt_rec_scope_end r = gmt_scope_end_rec(op, scope_id, result);
    gmt_emit_rec(&r);
}


void gmt_scope_comm(uint64_t comm, uint64_t parent, uint64_t unique_id_hash)
{
    if (!comm || !gmt_writer_ready())
        return;
    int e = gmt_lib_enter();
    int rank = nccl_query(Q_RANK, comm);
    int nranks = nccl_query(Q_COUNT, comm);
    int device = nccl_query(Q_DEVICE, comm);
    gmt_lib_leave(e);
    /* A new communicator may reuse a destroyed one's address: overwrite what was cached. */
    if (device >= 0)
        gmt_scope_comm_cache_put(comm, device);
    struct gmt_rec_comm r = {
        .h = {.type = GMT_REC_COMM, .size = gmt_rec_padded(sizeof r)},
        .comm = comm,
        .parent = parent,
        .unique_id_hash = unique_id_hash,
        .rank = rank,
        .nranks = nranks,
        .device = device,
    };
    gmt_emit(&r, offsetof(struct gmt_rec_comm, dt));
    /* ready now: NCCL's own count of what its init allocated, beside the trace's */
    gmt_nccl_memstats(comm, GMT_MEMSTATS_INIT, device);
}

int gmt_scope_comm_device(uint64_t comm)
{
    return comm ? comm_device_lookup(comm) : -1;
}

