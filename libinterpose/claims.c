/* claims.c: attribution of other threads' allocations: each thread's open scopes, published per device for NCCL's proxy threads. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "claims.h"

/* ---- foreign-thread attribution ----
 *
 * The rule: NCCL allocates the first collective's buffers (and much of init) on its own
 * threads (proxy service, async init jobs) while the calling thread waits inside the
 * NCCL call, so the allocating thread has no scope of its own. Every scope that concerns
 * a device (a collective's communicator's device, an init's device, and every device a
 * group's members concern) is published in a process-wide table while it is open: one
 * slot per (thread, device) holding that thread's innermost such scope. An allocation on
 * a thread with no scope, on device D, is stamped with that slot's scope when exactly one
 * thread has a scope open on D; with two or more it is ambiguous and stays 0, and the CLI
 * decides (it has the times and threads). Device -1 (unknown) asks across all devices:
 * exactly one thread must have scopes open. Slots: thread token (16 bits) | device+1
 * (16 bits) | scope id (32 bits); 0 is free.
 *
 * A thread keeps the slots it claimed across calls (one CAS per thread and device, the
 * first time), and publishes with plain release stores: the scope id, or 0 in the id
 * part while it has no scope open on that device (readers skip those). Readers scan the
 * slots below open_hw, the high-water mark of slots ever claimed (0 in a process that
 * never made a scope: one load). A thread that exits gives back its idle slots (pthread
 * key destructor); scopes of threads that exit inside a group stay published (counted as
 * open). A thread holds at most CLAIMS slots: an idle one is reused for another device.
 * Devices >= 64 are not tracked.
 */
#define OPEN_SLOTS GMT_CLAIM_SLOTS
_Atomic uint64_t gmt_claim_slots[OPEN_SLOTS];
#define open_slots gmt_claim_slots
static _Atomic uint32_t open_hw; /* slots [0, open_hw) may be in use */
static _Atomic uint32_t next_token;

#define CLAIMS ((int)GMT_COUNTOF(gmt_ts.claims.dev))
#define HINTS GMT_COUNTOF(gmt_ts.claims.hint)
_Static_assert((HINTS & (HINTS - 1)) == 0, "a hint per device % HINTS");
_Static_assert(CLAIMS <= 255, "a hint holds a claim's index");

static pthread_once_t claims_key_once = PTHREAD_ONCE_INIT;
static pthread_key_t claims_key;
static int claims_key_ok;

/* At thread exit: idle slots go back; open ones stay published, as the rule says. */
static void claims_release(void *unused)
{
    (void)unused;
    for (int c = 0; c < gmt_ts.claims.n; c++)
        if (!gmt_ts.claims.open[c])
            atomic_store_explicit(&open_slots[gmt_ts.claims.slot[c]], 0, memory_order_release);
    gmt_ts.claims.n = 0;
}

static void claims_key_make(void)
{
    claims_key_ok = pthread_key_create(&claims_key, claims_release) == 0;
}

static uint64_t slot_word(int device, uint32_t scope_id)
{
    if (!gmt_ts.claims.token) {
        uint32_t t;
        do
            t = atomic_fetch_add_explicit(&next_token, 1, memory_order_relaxed) & 0xffff;
        while (t == 0);
        gmt_ts.claims.token = t;
    }
    return ((uint64_t)gmt_ts.claims.token << 48) | ((uint64_t)(device + 1) << 32) | scope_id;
}

/* A free slot for this thread, holding `w` already; -1 when the table is full. */
static int claim_slot(uint64_t w)
{
    for (int i = 0; i < OPEN_SLOTS; i++) {
        uint64_t zero = 0;
        if (atomic_load_explicit(&open_slots[i], memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong_explicit(&open_slots[i], &zero, w,
                                                    memory_order_acq_rel, memory_order_relaxed)) {
            uint32_t hw = atomic_load_explicit(&open_hw, memory_order_relaxed);
            while (hw < (uint32_t)i + 1 &&
                   !atomic_compare_exchange_weak_explicit(&open_hw, &hw, (uint32_t)i + 1,
                                                          memory_order_release,
                                                          memory_order_relaxed))
                ;
            if (gmt_ts.claims.n == 0) {
                pthread_once(&claims_key_once, claims_key_make);
                if (claims_key_ok)
                    pthread_setspecific(claims_key, (void *)1);
            }
            return i;
        }
    }
    return -1;
}

/* This thread's claim on `device`, or -1. */
static int claim_of(int device)
{
    int c = gmt_claim_hinted(device);
    if (c >= 0)
        return c;
    for (c = 0; c < gmt_ts.claims.n; c++)
        if (gmt_ts.claims.dev[c] == device) {
            gmt_ts.claims.hint[device & (HINTS - 1)] = (uint8_t)c;
            return c;
        }
    return -1;
}

/* A device whose claim the hint does not name: found (the hint is set again), an idle
 * one re-labelled, or a new claim. */
void gmt_claims_publish_slow(int device, uint32_t scope_id)
{
    int known = claim_of(device);
    if (known >= 0) {
        gmt_ts.claims.open[known] = 1; /* first: a signal handler re-labels only idle ones */
        atomic_signal_fence(memory_order_seq_cst);
        atomic_store_explicit(&open_slots[gmt_ts.claims.slot[known]], slot_word(device, scope_id),
                              memory_order_release);
        return;
    }
    int idle = -1;
    for (int c = 0; c < gmt_ts.claims.n; c++)
        if (!gmt_ts.claims.open[c] && idle < 0)
            idle = c;
    uint64_t w = slot_word(device, scope_id);
    if (idle >= 0) { /* our own idle slot, re-labelled with this device */
        gmt_ts.claims.open[idle] = 1;
        atomic_signal_fence(memory_order_seq_cst);
        gmt_ts.claims.dev[idle] = (int16_t)device;
        atomic_store_explicit(&open_slots[gmt_ts.claims.slot[idle]], w, memory_order_release);
        return;
    }
    if (gmt_ts.claims.n == CLAIMS)
        return;
    int i = claim_slot(w);
    if (i < 0)
        return;
    gmt_ts.claims.dev[gmt_ts.claims.n] = (int16_t)device;
    gmt_ts.claims.slot[gmt_ts.claims.n] = (int16_t)i;
    gmt_ts.claims.open[gmt_ts.claims.n] = 1;
    gmt_ts.claims.n++;
}

void gmt_claims_unpublish_slow(int device)
{
    int c = claim_of(device);
    if (c < 0)
        return;
    /* still ours, naming no scope */
    atomic_store_explicit(&open_slots[gmt_ts.claims.slot[c]], slot_word(device, 0),
                          memory_order_release);
    gmt_ts.claims.open[c] = 0;
}

void gmt_claims_register_new(int depth, int device)
{
    struct gmt_frame *f = &gmt_ts.scope.frames[depth];
    uint64_t bit = 1ull << device;
    f->devmask |= bit;
    /* An outer frame registered later must not hide an inner one already published. */
    for (int k = depth + 1; k < gmt_ts.scope.depth && k < FRAMES; k++)
        if (gmt_ts.scope.frames[k].devmask & bit)
            return;
    gmt_claims_publish(device, f->id);
}

uint32_t gmt_scope_for_foreign_thread(int device)
{
    uint32_t n = atomic_load_explicit(&open_hw, memory_order_acquire);
    if (GMT_LIKELY(n == 0))
        return 0;
    uint64_t found = 0;
    for (uint32_t i = 0; i < n && i < OPEN_SLOTS; i++) {
        uint64_t w = atomic_load_explicit(&open_slots[i], memory_order_acquire);
        if (!(uint32_t)w)
            continue; /* free, or a thread's slot with no scope open */
        int d = (int)((w >> 32) & 0xffff) - 1;
        if (device >= 0 && d != device)
            continue;
        if (!found) {
            found = w;
            continue;
        }
        if ((found >> 48) != (w >> 48))
            return 0; /* two threads: ambiguous */
        if ((uint32_t)w > (uint32_t)found)
            found = w; /* same thread on several devices: the innermost (newest) scope */
    }
    return (uint32_t)found;
}


void gmt_claims_fork_child(void)
{
    for (int i = 0; i < OPEN_SLOTS; i++)
        atomic_store_explicit(&open_slots[i], 0, memory_order_relaxed);
    atomic_store_explicit(&open_hw, 0, memory_order_relaxed);
    gmt_ts.claims.n = 0;
}
