/* scope.h: what the files behind nccl_call.h's scope interface share (scope.c, group.c; claims.h, sampling.h below them), grouped by the file that defines it. */
#ifndef GMT_SCOPE_H
#define GMT_SCOPE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "claims.h"
#include "driver.h"
#include "gmt.h"
#include "intern.h"
#include "nccl_call.h"
#include "sampling.h"

/* ---- scope.c ---- */

/* A loop call has its begin's time read with odds 1 in GMT_CALL_TIMED_EVERY, drawn from
 * the thread's xorshift state (at random: a loop that cycles through 8 sizes must not
 * have one size timed at every turn and the others never). */
#define GMT_CALL_TIMED_EVERY 8
static inline bool gmt_call_timed(uint32_t *state)
{
    uint32_t x = *state ? *state : 0x9e3779b9u;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    return (x & (GMT_CALL_TIMED_EVERY - 1)) == 0;
}

/*
 * Each thread remembers the last GMT_MEMOS communicators it called on (one process driving
 * several GPUs alternates between one per device): each one's device as the COMM cache
 * had it, which ops on it had their first call (stack captured) already, and the last
 * GMT_MEMO_DONE (op, bytes) found past their sampling quota (a loop's calls on one
 * communicator come in a few sizes: buckets, two ops). A loop of calls then skips every
 * hash lookup. An entry holds while gmt_hot.scope.comm_gen is unchanged: any change to
 * the cache (a communicator made, an address reused) and a fork bump it.
 */
#define GMT_MEMOS 8     /* one process driving 8 GPUs: one communicator per device */
#define GMT_MEMO_DONE 4
struct gmt_comm_memo {
    uint64_t comm;
    unsigned long gen;          /* 0: being rewritten (a signal handler finds it invalid) */
    int device;                 /* from the COMM cache; -1 not known there */
    uint8_t done_next;          /* the entry of done[] the next one takes */
    uint64_t ops_seen;          /* bit op: the first call of (comm, op) was asked already */
    uint64_t done[GMT_MEMO_DONE]; /* gmt_memo_key(op, bytes) past their first N calls
                                 * (first:N); 0 none */
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct gmt_comm_memo) == 64, "one cache line");
_Static_assert(256 % GMT_MEMOS == 0, "gmt_ts.scope.memo_next wraps onto entry 0");
GMT_HIDDEN extern GMT_TLS struct gmt_comm_memo gmt_scope_memo[GMT_MEMOS];

/* (op, bytes) as one word, never 0 (ops start at 1); 0 when bytes don't fit beside op. */
static inline uint64_t gmt_memo_key(unsigned op, uint64_t bytes)
{
    return bytes >> 55 ? 0 : bytes << 8 | (op & 0xff);
}

static inline bool gmt_memo_done(const struct gmt_comm_memo *m, uint64_t key)
{
    _Static_assert(GMT_MEMO_DONE == 4, "one compare each, no branch between them");
    return ((m->done[0] == key) | (m->done[1] == key) | (m->done[2] == key) |
            (m->done[3] == key)) & (key != 0);
}

/* This thread's current memo of `comm`, or NULL; never makes one. */
static inline struct gmt_comm_memo *gmt_scope_memo_find(uint64_t comm)
{
    unsigned long gen = atomic_load_explicit(&gmt_hot.scope.comm_gen, memory_order_acquire);
    for (int i = 0; i < GMT_MEMOS; i++)
        if (gmt_scope_memo[i].comm == comm && gmt_scope_memo[i].gen == gen)
            return &gmt_scope_memo[i];
    return NULL;
}

/* The COMM cache learns that `comm` runs on `device` (gmt_scope_comm's answer from NCCL;
 * the tests tell it directly), and every thread's memo of a communicator is out of date. */
GMT_HIDDEN void gmt_scope_comm_cache_put(uint64_t comm, int device);

/* The next scope id of the thread's block (gmt_ts.scope.id_next + 1 .. id_end), taking a
 * new block when it is used up. */
GMT_HIDDEN uint32_t gmt_scope_new_id(void);

/* Whether the first call of `op` without a communicator (a group, say) was seen by this
 * thread under generation `gen`: gmt_scope_begin captured its stack then. */
static inline bool gmt_scope_nocomm_seen(unsigned op, uint32_t gen)
{
    return gmt_ts.rep.nocomm.gen == gen && (gmt_ts.rep.nocomm.ops & (1ull << op));
}

/* The two records of a scope, as gmt_scope_begin/_end and the short way write them. */
static inline struct gmt_rec_scope_begin gmt_scope_begin_rec(enum gmt_op op, uint32_t id,
                                                             uint32_t stack_id, uint64_t comm,
                                                             uint64_t count, int datatype,
                                                             int peer, uint64_t stream)
{
    return (struct gmt_rec_scope_begin){
        .h = {.type = GMT_REC_SCOPE_BEGIN, .aux = (uint16_t)op,
              .size = gmt_rec_padded(sizeof(struct gmt_rec_scope_begin))},
        .scope_id = id,
        .parent_id = gmt_current_scope(),
        .stack_id = stack_id,
        .comm = comm,
        .count = count,
        .stream = stream,
        .datatype = datatype,
        .peer = peer,
    };
}
static inline struct gmt_rec_scope_end gmt_scope_end_rec(enum gmt_op op, uint32_t id, int result)
{
    return (struct gmt_rec_scope_end){
        .h = {.type = GMT_REC_SCOPE_END, .aux = (uint16_t)op,
              .size = gmt_rec_padded(sizeof(struct gmt_rec_scope_end))},
        .scope_id = id,
        .result = result,
    };
}

/* ---- group.c: repeated groups ---- */
/* A scope begun inside the open group: it is no plain member, so no template from it. */
GMT_HIDDEN void gmt_group_stop(void);
/* At a depth-0 group's begin, after its frame is pushed: match the template, or record one. */
GMT_HIDDEN void gmt_group_open(uint32_t id);
/* A group that ends without gmt_scope_group_members_done (its start failed, say): what
 * matched is written (as GROUP_REPEAT when it can be). */
GMT_HIDDEN void gmt_group_close_late(uint32_t scope_id);
/* At the end of scope `scope_id`, before its frame is popped. */
static inline void gmt_group_scope_end(uint32_t scope_id)
{
    if (gmt_ts.writer.deferred != GMT_DEFER_OFF && scope_id == gmt_ts.rep.group)
        gmt_group_close_late(scope_id);
    if (scope_id == gmt_ts.rep.repeated)
        gmt_ts.rep.repeated = 0;
}

/* ---- sampling.c: device memory around NCCL calls (sampling.h), by the memo ---- */
/* Whether this call of (comm, op, bytes) gets a MEMINFO sample; `m` is comm's memo or
 * NULL. Inline up to the key (three mixes), which is made only when the policy counts
 * calls, and not for the (op, bytes) the thread's memo of comm found done lately. */
static inline bool gmt_sample_wanted(uint64_t comm, unsigned op, uint64_t bytes,
                                     struct gmt_comm_memo *m)
{
    int k = atomic_load_explicit(&gmt_hot.meminfo.kind, memory_order_acquire);
    if (k == GMT_POLICY_NEVER)
        return false;
    if (k == GMT_POLICY_ALWAYS)
        return true;
    uint64_t dk = gmt_memo_key(op, bytes);
    if (!gmt_hot.meminfo.every && m && gmt_memo_done(m, dk))
        return false;
    int r = gmt_sample_count(comm, op, bytes);
    if (r < 0 && m)
        m->done[m->done_next++ % GMT_MEMO_DONE] = dk;
    return r > 0;
}

#endif
