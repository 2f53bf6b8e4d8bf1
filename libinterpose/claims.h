/* claims.h: the thread's claims on devices (claims.c), by which another thread's allocation is attributed to the scope open there: the inline publish and register. */
#ifndef GMT_CLAIMS_H
#define GMT_CLAIMS_H

#include <stdatomic.h>
#include <stdint.h>

#include "gmt.h"

/* The open scopes a thread tracks (deeper ones are recorded, not tracked), and the devices
 * a scope tracks: one bit each in a frame's masks. */
#define FRAMES ((int)GMT_COUNTOF(gmt_ts.scope.frames))
#define MAX_DEV ((int)(8 * sizeof gmt_ts.scope.frames[0].devmask))

/* ---- claims.c: attribution of other threads' allocations ---- */
/* The process-wide table of (thread, device) slots (claims.c's rule), and the word a
 * slot holds: thread token (16 bits) | device+1 (16 bits) | scope id (32 bits). */
#define GMT_CLAIM_SLOTS 4096
GMT_HIDDEN extern _Atomic uint64_t gmt_claim_slots[GMT_CLAIM_SLOTS];
static inline uint64_t gmt_claim_word(int device, uint32_t scope_id)
{
    return (uint64_t)gmt_ts.claims.token << 48 | (uint64_t)(device + 1) << 32 | scope_id;
}
/* The thread's claim on `device` when its hint names it, else -1 (claims.c looks further).
 * A claim exists only once the thread has its token. */
static inline int gmt_claim_hinted(int device)
{
    unsigned c = gmt_ts.claims.hint[device & (GMT_COUNTOF(gmt_ts.claims.hint) - 1)];
    return c < gmt_ts.claims.n && gmt_ts.claims.dev[c] == device ? (int)c : -1;
}
/* The publishes below when the hint does not name the device's claim. */
GMT_HIDDEN void gmt_claims_publish_slow(int device, uint32_t scope_id);
GMT_HIDDEN void gmt_claims_unpublish_slow(int device);
/* The thread's slot on `device` names `scope_id` / no scope: one store for a loop's calls. */
static inline void gmt_claims_publish(int device, uint32_t scope_id)
{
    unsigned c = gmt_ts.claims.hint[device & (GMT_COUNTOF(gmt_ts.claims.hint) - 1)];
    if (GMT_UNLIKELY(c >= gmt_ts.claims.n || gmt_ts.claims.dev[c] != device)) {
        gmt_claims_publish_slow(device, scope_id);
        return;
    }
    /* Open before the store: a signal handler's publish re-labels only idle claims. One
     * that re-labelled this one between the test and here is found by the second test. */
    gmt_ts.claims.open[c] = 1;
    atomic_signal_fence(memory_order_seq_cst);
    if (GMT_UNLIKELY(gmt_ts.claims.dev[c] != device)) {
        gmt_ts.claims.open[c] = 0; /* the handler's, idle again */
        gmt_claims_publish_slow(device, scope_id);
        return;
    }
    atomic_store_explicit(&gmt_claim_slots[gmt_ts.claims.slot[c]], gmt_claim_word(device, scope_id),
                          memory_order_release);
}
static inline void gmt_claims_unpublish(int device)
{
    unsigned c = gmt_ts.claims.hint[device & (GMT_COUNTOF(gmt_ts.claims.hint) - 1)];
    if (GMT_UNLIKELY(c >= gmt_ts.claims.n || gmt_ts.claims.dev[c] != device)) {
        gmt_claims_unpublish_slow(device);
        return;
    }
    atomic_store_explicit(&gmt_claim_slots[gmt_ts.claims.slot[c]], gmt_claim_word(device, 0),
                          memory_order_release);
    gmt_ts.claims.open[c] = 0;
}
/* The open scope at `depth` concerns `device`: published there unless a deeper frame of
 * the thread is published there already (register_new looks). Inline for the innermost
 * frame, which has none deeper. */
GMT_HIDDEN void gmt_claims_register_new(int depth, int device);
static inline void gmt_claims_register(int depth, int device)
{
    if (device < 0 || device >= MAX_DEV || depth < 0 || depth >= FRAMES)
        return;
    struct gmt_frame *f = &gmt_ts.scope.frames[depth];
    uint64_t bit = 1ull << device;
    if (f->devmask & bit)
        return;
    if (GMT_UNLIKELY(depth + 1 < gmt_ts.scope.depth)) {
        gmt_claims_register_new(depth, device);
        return;
    }
    f->devmask |= bit;
    gmt_claims_publish(device, f->id);
}
/* After frame `depth` closes: each device it was published on falls back to the nearest
 * enclosing frame registered there, or is released. */
static inline __attribute__((always_inline)) void gmt_claims_unregister(int depth)
{
    uint64_t mask = gmt_ts.scope.frames[depth].devmask;
    while (mask) {
        int d = __builtin_ctzll(mask);
        mask &= mask - 1;
        int k = depth - 1;
        while (k >= 0 && !(gmt_ts.scope.frames[k].devmask & (1ull << d)))
            k--;
        if (k >= 0)
            gmt_claims_publish(d, gmt_ts.scope.frames[k].id);
        else
            gmt_claims_unpublish(d);
    }
}
/* In a fork child: the parent's threads' scopes are not in the child's file. */
GMT_HIDDEN void gmt_claims_fork_child(void);

#endif
