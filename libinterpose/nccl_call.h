/* nccl_call.h: the NCCL call's hot path, inline in hooks_nccl.c's wrappers, and the scope functions behind it (scope.c, group.c). */
#ifndef GMT_NCCL_CALL_H
#define GMT_NCCL_CALL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "deferred.h"
#include "gmt.h"

/* ---- scope.c and group.c: NCCL contexts on the calling thread ---- */
GMT_HIDDEN uint32_t gmt_scope_begin(enum gmt_op op, uint64_t comm, uint64_t count,
                                   int datatype, int peer, uint64_t stream);
GMT_HIDDEN void gmt_scope_end(uint32_t scope_id, enum gmt_op op, int result);
/* A user group's begin and end: gmt_scope_begin/_end for op Group, with a short way for
 * the outermost group of a training loop (group.c, "repeated groups"). */
GMT_HIDDEN uint32_t gmt_scope_group_begin(void);
GMT_HIDDEN void gmt_scope_group_end(uint32_t scope_id, int result);
/* The outermost group's members are all in (ncclGroupEnd is about to run): when they are
 * its template's, GROUP_REPEAT is written now, before NCCL does the group's work. */
GMT_HIDDEN void gmt_scope_group_members_done(uint32_t scope_id);
/* A member of an open user group, after its (comm, op)'s first call and with no sample
 * wanted: its communicator's device (>= 0) when it can be recorded the short way, by
 * gmt_scope_member_post at its return (no frame, no clock read); -1: use
 * gmt_scope_begin/gmt_scope_end. */
GMT_HIDDEN int gmt_scope_member_pre(enum gmt_op op, uint64_t comm, uint64_t bytes);
GMT_HIDDEN void gmt_scope_member_post(enum gmt_op op, uint64_t comm, uint64_t count,
                                      int datatype, int peer, uint64_t stream, int result,
                                      int device);
/* The open scope `scope_id` also concerns `device` (-1: the thread's current one), e.g.
 * an init: register it for foreign-thread attribution, sample memory keyed by `key`. */
GMT_HIDDEN void gmt_scope_add_device(uint32_t scope_id, int device, uint64_t key);
/* Writes a COMM record (rank, nranks, device asked from the real NCCL) and caches its device.
 * Only for a communicator that is ready: NCCL warns about queries of one still initializing. */
GMT_HIDDEN void gmt_scope_comm(uint64_t comm, uint64_t parent, uint64_t unique_id_hash);
/* scope.c: the device the COMM cache knows for `comm`, -1 none. */
GMT_HIDDEN int gmt_scope_comm_device(uint64_t comm);
/* ---- group.c: repeated groups ---- */
/* A user group whose members are those of the thread's previous group again is written
 * as GROUP_REPEAT (group.c, "repeated groups"). While the members of an open group still
 * match (GMT_DEFER_MATCH), those that returned are held back: group.c is the writer's
 * deferred-records client (gmt_deferred_write writes them, gmt_deferred_lost forgets the
 * template). gmt_scope_repeat_pre: a member that matches the next one of the template:
 * its index; else -1 (the matched ones are written, the member goes the usual way).
 * gmt_scope_repeat_post at its return. */
/* MATCH -> RECORD: the members matched that returned are written now (deferred.h). */
GMT_HIDDEN void gmt_group_spill(void);
GMT_HIDDEN void gmt_scope_repeat_post_slow(int index, enum gmt_op op, uint64_t comm,
                                           uint64_t count, int datatype, int peer,
                                           uint64_t stream, int result);
static inline int gmt_scope_repeat_pre(enum gmt_op op, uint64_t comm, uint64_t count,
                                       int datatype, int peer, uint64_t stream)
{
    unsigned i = gmt_ts.rep.cur;
    if (GMT_LIKELY(i == gmt_ts.rep.done && i < gmt_ts.rep.n && gmt_ts.scope.depth == 1)) {
        const struct gmt_rep_member *x = &gmt_ts.rep.m[i];
        /* one branch: peer, datatype and op are the member's last word but its result */
        uint64_t tail, want = (uint32_t)peer | (uint64_t)(uint16_t)datatype << 32 |
                              (uint64_t)(op & 0xff) << 56;
        memcpy(&tail, &x->peer, sizeof tail);
        if (GMT_LIKELY(((x->comm ^ comm) | (x->count ^ count) | (x->stream ^ stream) |
                        ((tail ^ want) & ~(0xffull << 48))) == 0 &&
                       datatype == (int16_t)datatype)) {
            gmt_ts.rep.cur = (uint8_t)(i + 1);
            return (int)i;
        }
    }
    /* Not the next member: the matched ones are written, and recording goes on from here
     * (this member may still join the template, the short way). */
    gmt_group_spill();
    return -1;
}
static inline void gmt_scope_repeat_post(int index, enum gmt_op op, uint64_t comm,
                                         uint64_t count, int datatype, int peer,
                                         uint64_t stream, int result)
{
    if (GMT_LIKELY(result == gmt_ts.rep.m[index].result)) {
        gmt_ts.rep.done = (uint8_t)(index + 1);
        atomic_signal_fence(memory_order_seq_cst);
        if (GMT_LIKELY(gmt_ts.writer.deferred == GMT_DEFER_MATCH))
            return; /* written (as GROUP_REPEAT) at the group's end */
    }
    gmt_scope_repeat_post_slow(index, op, comm, count, datatype, peer, stream, result);
}

/* ---- scope.c and group.c: one NCCL collective or point-to-point call ----
 * gmt_call_begin before the real call and gmt_call_end after it, with the call's own
 * arguments, record it in one of three ways: a member of an open group that matches the
 * thread's previous group is compared with it and written at the group's end as part of
 * GROUP_REPEAT; another member of an open group whose (comm, op) had its first call goes
 * the short way (both records at its return, no clock read); anything else is a full
 * scope (SCOPE_BEGIN now, SCOPE_END at the return). in_group: a user group is open on the
 * thread (hooks_nccl.c knows). Always inlined: they are the calls of a training loop. */
struct gmt_call {
    uint32_t scope;  /* a full scope's id, 0 none */
    int member;      /* >= 0: the short way, on this device (gmt_scope_member_pre) */
    int repeat;      /* >= 0: this member of a repeated group (gmt_scope_repeat_pre) */
};
static inline __attribute__((always_inline)) void
gmt_call_begin(struct gmt_call *c, enum gmt_op op, uint64_t comm, uint64_t count, int datatype,
               int peer, uint64_t stream, bool in_group)
{
    c->repeat = c->member = -1;
    c->scope = 0;
    if (in_group) {
        /* a training loop's group: laid out as the straight path through the wrapper */
        if (GMT_LIKELY(gmt_ts.writer.deferred == GMT_DEFER_MATCH) &&
            GMT_LIKELY((c->repeat = gmt_scope_repeat_pre(op, comm, count, datatype, peer,
                                                         stream)) >= 0))
            return;
        c->member = gmt_scope_member_pre(op, comm, count * gmt_nccl_type_size(datatype));
    }
    if (c->member < 0)
        c->scope = gmt_scope_begin(op, comm, count, datatype, peer, stream);
}
static inline __attribute__((always_inline)) void
gmt_call_end(struct gmt_call *c, enum gmt_op op, int result, uint64_t comm, uint64_t count,
             int datatype, int peer, uint64_t stream)
{
    if (GMT_LIKELY(c->repeat >= 0))
        gmt_scope_repeat_post(c->repeat, op, comm, count, datatype, peer, stream, result);
    else if (c->member >= 0)
        gmt_scope_member_post(op, comm, count, datatype, peer, stream, result, c->member);
    else
        gmt_scope_end(c->scope, op, result);
}
/* Whether gmt_call_end leaves errno as the real call set it, so the wrapper need not save
 * it: a repeated member's end saves it itself on the one path that can change it. */
static inline bool gmt_call_end_keeps_errno(const struct gmt_call *c)
{
    return c->repeat >= 0;
}

#endif
