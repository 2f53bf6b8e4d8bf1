/* group.c: user groups: the short way for their members, and repeated groups written as GROUP_REPEAT. */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "scope.h"
#include "versions.h"
#include "writer_api.h"

static uint8_t rep_swap(uint8_t to)
{
    return __atomic_exchange_n(&gmt_ts.writer.deferred, to, __ATOMIC_RELAXED);
}

static unsigned rep_close(void);

static void member_records(enum gmt_op op, uint64_t comm, uint64_t count, int datatype, int peer,
                           uint64_t stream, int result);

/* The template's first k members, written one by one (the short way's records). */
static void write_members(unsigned k)
{
    for (unsigned i = 0; i < k && i < GMT_REP_MAX; i++) {
        const struct gmt_rep_member *x = &gmt_ts.rep.m[i];
        member_records((enum gmt_op)x->op, x->comm, x->count, x->datatype, x->peer, x->stream,
                       x->result);
    }
}

/* The group `scope_id`'s `count` members are the template's: GROUP_REPEAT, whose member
 * ids rep_close took. When the fast path can't take it, the members are written one by
 * one instead, with those very ids (what the records stand for; a record lost is then
 * counted as the records it is). */
static void repeat_write(uint32_t scope_id, unsigned count)
{
    struct gmt_rec_group_repeat r = {{GMT_REC_GROUP_REPEAT, 0, sizeof r}, scope_id, count,
                                     gmt_ts.rep.like, 0};
    if (GMT_LIKELY(gmt_emit_try_group_repeat(&r))) {
        gmt_ts.rep.like = scope_id; /* the latest group with these members */
        return;
    }
    gmt_ts.scope.id_next = scope_id; /* member_records takes them again, in order */
    write_members(count);
    gmt_ts.rep.like = scope_id;
}

/* A training loop's group calls, the common case in few lines of code (between them the
 * program's and NCCL's own code evict ours from the instruction cache): the outermost
 * group, opened to match the thread's template, and ended with all its members matched
 * (GROUP_REPEAT). Everything else goes to gmt_scope_begin and gmt_scope_end, which do
 * the same and more. */
__attribute__((hot)) uint32_t gmt_scope_group_begin(void)
{
    uint32_t gen = (uint32_t)atomic_load_explicit(&gmt_hot.scope.comm_gen, memory_order_acquire);
    if (GMT_UNLIKELY(atomic_load_explicit(&gmt_hot.writer.state, memory_order_acquire) !=
                         GMT_WRITER_OPEN ||
                     gmt_ts.scope.depth != 0 || gmt_ts.writer.deferred != GMT_DEFER_OFF || gmt_hot.options.no_repeat ||
                     !gmt_scope_nocomm_seen(GMT_OP_Group, gen) ||
                     gmt_ts.scope.id_next == gmt_ts.scope.id_end || gmt_ts.scope.id_next == UINT32_MAX))
        return gmt_scope_begin(GMT_OP_Group, 0, 0, -1, -1, 0);
    uint32_t id = ++gmt_ts.scope.id_next;
    struct gmt_rec_scope_begin r = gmt_scope_begin_rec(GMT_OP_Group, id, 0, 0, 0, -1, -1, 0);
    gmt_emit_rec(&r);
    gmt_version_note(GMT_COMP_NCCL);
    gmt_ts.scope.frames[0] = (struct gmt_frame){.id = id, .op = GMT_OP_Group, .group = -1};
    gmt_ts.scope.depth = 1;
    gmt_group_open(id);
    return id;
}

__attribute__((hot)) void gmt_scope_group_members_done(uint32_t scope_id)
{
    if (GMT_LIKELY(gmt_ts.writer.deferred == GMT_DEFER_MATCH && scope_id == gmt_ts.rep.group &&
                   gmt_ts.scope.depth == 1 && gmt_ts.scope.frames[0].id == scope_id)) {
        unsigned k = rep_close();
        if (GMT_LIKELY(k)) {
            gmt_ts.rep.repeated = scope_id;
            repeat_write(scope_id, k);
        }
        /* else rep_close wrote what matched */
    }
}

__attribute__((hot)) void gmt_scope_group_end(uint32_t scope_id, int result)
{
    if (GMT_LIKELY(scope_id == gmt_ts.rep.repeated && gmt_ts.scope.depth == 1 &&
                   gmt_ts.scope.frames[0].id == scope_id && !gmt_ts.scope.frames[0].memmask)) {
        gmt_ts.rep.repeated = 0;
        /* frame 0: no frame around it to fall back to (gmt_claims_unregister's case) */
        for (uint64_t mask = gmt_ts.scope.frames[0].devmask; mask; mask &= mask - 1)
            gmt_claims_unpublish(__builtin_ctzll(mask));
        gmt_ts.scope.depth = 0;
        struct gmt_rec_scope_end r = gmt_scope_end_rec(GMT_OP_Group, scope_id, result);
        gmt_emit_rec(&r);
        return;
    }
    gmt_scope_end(scope_id, GMT_OP_Group, result);
}

/* ---- group members, the short way ----
 *
 * Inside a user group a member call only enqueues: NCCL does its work, and allocates for
 * it, in ncclGroupEnd (a bare collective runs an internal group inside its own call). Once a member's (comm, op) had its first call (its stack
 * captured), its communicator's device is known and no sample is wanted, the member needs
 * no frame of its own while it runs: it registers its (outermost) group on its device, and at its
 * return writes its SCOPE_BEGIN and SCOPE_END together, both at the thread's previous
 * time (no clock read): a scope of length 0 inside its group, which carries the time.
 * Everything else takes gmt_scope_begin/gmt_scope_end.
 */
int gmt_scope_member_pre(enum gmt_op op, uint64_t comm, uint64_t bytes)
{
    int depth = gmt_ts.scope.depth;
    if (depth <= 0 || depth > FRAMES || gmt_ts.scope.frames[depth - 1].op != GMT_OP_Group || !comm ||
        (unsigned)op >= 64 ||
        atomic_load_explicit(&gmt_hot.writer.state, memory_order_acquire) != GMT_WRITER_OPEN)
        return -1;
    struct gmt_comm_memo *m = gmt_scope_memo_find(comm);
    if (!m || m->device < 0 || m->device >= MAX_DEV || !(m->ops_seen & (1ull << op)))
        return -1;
    int k = atomic_load_explicit(&gmt_hot.meminfo.kind, memory_order_acquire);
    if (k != GMT_POLICY_NEVER &&
        (k != GMT_POLICY_FIRST || gmt_hot.meminfo.every || !gmt_memo_done(m, gmt_memo_key(op, bytes))))
        return -1;
    int g = gmt_ts.scope.frames[depth - 1].group >= 0 ? gmt_ts.scope.frames[depth - 1].group : depth - 1;
    if (!(gmt_ts.scope.frames[g].devmask & (1ull << m->device)))
        gmt_claims_register(g, m->device);
    return m->device;
}

/* A member's two records, the short way's: at the thread's previous time. */
static void member_records(enum gmt_op op, uint64_t comm, uint64_t count, int datatype, int peer,
                           uint64_t stream, int result)
{
    uint32_t id = gmt_scope_new_id();
    struct {
        struct gmt_rec_scope_begin b;
        struct gmt_rec_scope_end e;
    } r = {gmt_scope_begin_rec(op, id, 0, comm, count, datatype, peer, stream), gmt_scope_end_rec(op, id, result)};
    _Static_assert(sizeof r.b % GMT_ALIGN == 0 && sizeof r.e % GMT_ALIGN == 0 &&
                       sizeof r == sizeof r.b + sizeof r.e,
                   "the two records back to back, each padded");
    _Static_assert(offsetof(struct gmt_rec_scope_begin, dt) == offsetof(struct gmt_rec_scope_end, dt),
                   "one dt offset for both");
    gmt_emit_untimed(&r, sizeof r, offsetof(struct gmt_rec_scope_begin, dt));
}

/* ---- repeated groups ----
 *
 * A training loop makes the same user group at every step: the same members, in the same
 * order, on the same communicators and buffers' sizes. Each thread keeps the members of
 * its previous group (its template, when they all went the short way), and while the
 * members of an open group match it one by one, writes nothing for them: at the group's
 * end one GROUP_REPEAT record stands for them all (docs/trace-format.md), which the CLI
 * expands into the very records the short way writes. So those members cost a compare,
 * and their group's registration on their devices, and no scope ids, records or clock.
 *
 * Only a group with no scope around it (frame 0) and nothing but members inside it
 * qualifies; the ids its members would take (scope id + 1 ..) must be free in the
 * thread's block. Whenever the exact sequence of records the short way would write is in
 * doubt, the members matched so far are written at once (a spill) and the group goes
 * on being recorded: another record of the thread (gmt_emit's slow way spills first, so
 * records stay in order), a member that differs, a result that differs, a scope begun
 * inside the group. A lost record or a new THREAD record forgets the template.
 *
 * Signals: a handler's record spills, from inside any step below. The state byte is
 * swapped in one instruction where a decision hangs on it, `done` is stored before the
 * state is looked at again, and `spilled` says which members a spill wrote.
 */
/* MATCH -> RECORD: the members matched that returned are written now (deferred.h). */
__attribute__((cold)) void gmt_group_spill(void)
{
    /* MATCH -> RECORD only (one instruction: a signal handler's spill can't come between);
     * any other state stays as it is (OFF must not become RECORD again) */
    uint8_t match = GMT_DEFER_MATCH;
    if (!__atomic_compare_exchange_n(&gmt_ts.writer.deferred, &match, GMT_DEFER_RECORD, false, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED))
        return; /* nothing waited; a spill (or stop) in between decided already */
    unsigned k = gmt_ts.rep.done, called = gmt_ts.rep.cur; /* called > k: member k is in its call */
    gmt_ts.rep.spilled = (uint8_t)k;
    gmt_ts.rep.cur = (uint8_t)k;
    atomic_signal_fence(memory_order_seq_cst);
    write_members(k);
    /* The group was published on all of the template's devices at its start; from here on
     * it is as written one by one: on the devices of the members called so far (the later
     * ones register theirs as they come) */
    if (gmt_ts.scope.depth == 1 && gmt_ts.scope.frames[0].id == gmt_ts.rep.group) {
        uint64_t keep = 0;
        for (unsigned i = 0; i < called && i < GMT_REP_MAX; i++)
            keep |= 1ull << gmt_ts.rep.dev[i];
        for (uint64_t extra = gmt_ts.scope.frames[0].devmask & ~keep; extra; extra &= extra - 1) {
            int d = __builtin_ctzll(extra);
            gmt_ts.scope.frames[0].devmask &= ~(1ull << d);
            gmt_claims_unpublish(d);
        }
    }
}

/* Whatever the state, no template from this group: a scope begun inside it. */
__attribute__((cold)) void gmt_group_stop(void)
{
    gmt_group_spill();
    rep_swap(GMT_DEFER_OFF);
    /* not a template, and an older one could fall out of the readers' window of the
     * thread's last groups (docs/trace-format.md) */
    gmt_ts.rep.n = 0;
}

/* The members waiting are lost with the record: two records each. (After the held
 * call's hook, which leaves the byte OFF or a group's state.) */
static unsigned gmt_group_lost(void)
{
    /* only from the group's own states: FORM is scope.c's while it writes a call form */
    uint8_t match = GMT_DEFER_MATCH, record = GMT_DEFER_RECORD;
    bool was_match = __atomic_compare_exchange_n(&gmt_ts.writer.deferred, &match, GMT_DEFER_OFF,
                                                 false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    if (!was_match)
        __atomic_compare_exchange_n(&gmt_ts.writer.deferred, &record, GMT_DEFER_OFF, false,
                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    gmt_ts.rep.n = 0;
    return was_match ? 2u * gmt_ts.rep.done : 0;
}

/* the writer's deferred-records client for MATCH (deferred.h) */
GMT_DEFERRED_CLIENT(group_client, GMT_DEFER_MATCH, gmt_group_spill, gmt_group_lost);

/* A member's fields into the template being recorded, at `index`. */
static void rep_record(unsigned index, enum gmt_op op, uint64_t comm, uint64_t count,
                       int datatype, int peer, uint64_t stream, int result, int device)
{
    if (gmt_ts.writer.deferred != GMT_DEFER_RECORD)
        return;
    /* index != cur: another member was recorded in between (a signal handler's): the
     * template would not be the group's children as written */
    if (index != gmt_ts.rep.cur || index >= GMT_REP_MAX || device < 0 || device >= MAX_DEV || (unsigned)op > 255 ||
        datatype != (int16_t)datatype || result != (int8_t)result) {
        rep_swap(GMT_DEFER_OFF);
        gmt_ts.rep.n = 0; /* as gmt_group_stop */
        return;
    }
    gmt_ts.rep.m[index] = (struct gmt_rep_member){comm, count, stream, peer, (int16_t)datatype,
                                             (int8_t)result, (uint8_t)op};
    gmt_ts.rep.dev[index] = (int8_t)device;
    gmt_ts.rep.cur = (uint8_t)(index + 1);
}

/* At a group's begin, after its frame 0 is pushed: match the template, or record one. */
__attribute__((hot)) void gmt_group_open(uint32_t id)
{
    uint32_t gen = (uint32_t)atomic_load_explicit(&gmt_hot.scope.comm_gen, memory_order_acquire);
    gmt_ts.rep.group = id;
    gmt_ts.rep.cur = gmt_ts.rep.done = gmt_ts.rep.spilled = 0;
    bool match = gmt_ts.rep.n > 0 && gmt_ts.rep.gen == gen;
    gmt_ts.rep.gen = gen;
    if (match) {
        /* registered on its members' devices now: they only enqueue, the work (and a
         * foreign thread's allocations for it) is in the group's end. Frame 0: no frame
         * inside it to defer to (frame_register's case). */
        uint64_t mask = gmt_ts.rep.devmask;
        gmt_ts.scope.frames[0].devmask = mask;
        for (; mask; mask &= mask - 1)
            gmt_claims_publish(__builtin_ctzll(mask), id);
    }
    atomic_signal_fence(memory_order_seq_cst);
    gmt_ts.writer.deferred = match ? GMT_DEFER_MATCH : GMT_DEFER_RECORD;
}

/* At the group's end: the members it stands for when GROUP_REPEAT can be written (their
 * ids are taken then), else 0 (whatever matched is written, and the template is what
 * this group had). */
static void rep_close_other(uint8_t st, uint32_t g);

static __attribute__((hot)) unsigned rep_close(void)
{
    /* No locked exchange here, at every group's end: a signal handler's spill between the
     * load and the store shows in `spilled` (it wrote those members), and after the
     * store none happens. */
    gmt_ts.rep.spilled = 0;
    atomic_signal_fence(memory_order_seq_cst);
    uint8_t st = gmt_ts.writer.deferred;
    gmt_ts.writer.deferred = GMT_DEFER_OFF;
    atomic_signal_fence(memory_order_seq_cst);
    uint32_t g = gmt_ts.rep.group;
    gmt_ts.rep.group = 0;
    unsigned k = gmt_ts.rep.done;
    if (GMT_LIKELY(st == GMT_DEFER_MATCH && !gmt_ts.rep.spilled && k == gmt_ts.rep.n && k == gmt_ts.rep.cur &&
                   gmt_ts.scope.id_next == g && (uint64_t)g + k <= gmt_ts.scope.id_end)) {
        gmt_ts.scope.id_next = g + k; /* the ids the expansion gives them */
        return k;        /* (gmt_ts.rep.like moves to g once the record is written) */
    }
    rep_close_other(st, g);
    return 0;
}

/* rep_close's other cases: what matched is written, and the template is what the group
 * had, or none. */
static __attribute__((cold, noinline)) void rep_close_other(uint8_t st, uint32_t g)
{
    if (st == GMT_DEFER_MATCH && gmt_ts.rep.spilled)
        st = GMT_DEFER_RECORD; /* spilled by a handler: what follows is as after a spill */
    uint32_t gen = (uint32_t)atomic_load_explicit(&gmt_hot.scope.comm_gen, memory_order_acquire);
    if (st == GMT_DEFER_MATCH) {
        unsigned k = gmt_ts.rep.done;
        gmt_ts.rep.spilled = (uint8_t)k;
        atomic_signal_fence(memory_order_seq_cst);
        write_members(k);
        gmt_ts.rep.n = k == gmt_ts.rep.cur ? (uint8_t)k : 0;
    } else if (st == GMT_DEFER_RECORD) {
        gmt_ts.rep.n = gmt_ts.rep.gen == gen ? gmt_ts.rep.cur : 0;
    } else {
        gmt_ts.rep.n = 0; /* as gmt_group_stop */
    }
    gmt_ts.rep.like = g;
    uint64_t mask = 0;
    for (unsigned i = 0; i < gmt_ts.rep.n; i++)
        mask |= 1ull << gmt_ts.rep.dev[i];
    gmt_ts.rep.devmask = mask;
}

/* gmt_scope_repeat_post's other cases: a result other than the template's, or a spill
 * while the member ran. */
__attribute__((cold)) void gmt_scope_repeat_post_slow(int index, enum gmt_op op, uint64_t comm,
                                                     uint64_t count,
                                int datatype, int peer, uint64_t stream, int result)
{
    unsigned i = (unsigned)index;
    const struct gmt_rep_member *x = &gmt_ts.rep.m[i];
    if (result == x->result) {
        if (gmt_ts.writer.deferred == GMT_DEFER_MATCH || gmt_ts.rep.spilled > i)
            return; /* waits for the group's end, or a spill wrote it */
    }
    int saved_errno = errno; /* the wrapper does not save it for a repeated member */
    if (result != x->result)
        gmt_group_spill(); /* those before it; this one with its own result */
    int device = gmt_ts.rep.dev[i];
    member_records(op, comm, count, datatype, peer, stream, result);
    rep_record(i, op, comm, count, datatype, peer, stream, result, device);
    errno = saved_errno;
}

void gmt_scope_member_post(enum gmt_op op, uint64_t comm, uint64_t count, int datatype,
                           int peer, uint64_t stream, int result, int device)
{
    member_records(op, comm, count, datatype, peer, stream, result);
    if (gmt_ts.writer.deferred == GMT_DEFER_RECORD && gmt_ts.scope.depth == 1)
        rep_record(gmt_ts.rep.cur, op, comm, count, datatype, peer, stream, result, device);
}

/* Called only once the communicator is ready (hooks_nccl.c defers non-blocking ones). */

void gmt_group_close_late(uint32_t scope_id)
{
    unsigned k = rep_close();
    if (k)
        repeat_write(scope_id, k);
}
