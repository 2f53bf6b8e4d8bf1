/* scope.c: NCCL contexts (scopes) per thread, COMM records, device-memory sampling around them, and attribution for NCCL's own threads. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "gmt.h"
#include "nccl_abi.h"

/* stack.c is another part's; a build without it still links and captures nothing. */
extern uint32_t gmt_stack_capture(const void *frame) __attribute__((weak));

/* The open scopes a thread tracks (deeper ones are recorded, not tracked), and the devices
 * a scope tracks: one bit each in a frame's masks. */
#define FRAMES ((int)GMT_COUNTOF(gmt_ts.scope.frames))
#define MAX_DEV ((int)(8 * sizeof gmt_ts.scope.frames[0].devmask))

/* Scope ids: each thread takes a block of ID_BLOCK from this counter and hands them out
 * one by one, so the common call makes no locked operation. Ids stay unique and nonzero,
 * and increase along each thread; across threads they have gaps (at most ID_BLOCK - 1 per
 * thread), which the CLI's id index takes (tools/trace.c). */
#define ID_BLOCK 256
static _Atomic uint32_t next_scope_id;
/* this thread's block: ids gmt_ts.scope.id_next+1 .. gmt_ts.scope.id_end */

static __attribute__((hot)) uint32_t new_scope_id(void)
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
static _Atomic uint64_t scopes_too_deep; /* scopes past FRAMES: recorded, not tracked */

/* ---- small lock-free tables: open addressing on 64-bit keys, never deleted ---- */
#define PROBES 16

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x ? x : 1; /* 0 marks an empty slot */
}

/* Index of `key`'s slot in a table of `n` (power of two) keys, claiming one if absent;
 * -1 when the probe window is full (callers then fall back to the safe behaviour). */
static long slot_of(_Atomic uint64_t *keys, uint32_t n, uint64_t key)
{
    for (uint32_t p = 0, i = (uint32_t)key & (n - 1); p < PROBES; p++, i = (i + 1) & (n - 1)) {
        uint64_t k = atomic_load_explicit(&keys[i], memory_order_acquire);
        if (k == key)
            return i;
        if (k == 0) {
            if (atomic_compare_exchange_strong_explicit(&keys[i], &k, key, memory_order_acq_rel,
                                                        memory_order_acquire))
                return i;
            if (k == key)
                return i;
        }
    }
    return -1;
}

/* Calls seen per (comm, op): a stack is captured only for the first of each. */
#define SEEN_SLOTS 1024
static _Atomic uint64_t seen_keys[SEEN_SLOTS];

/* Calls seen per (comm, op, bytes), for the sampling policy. */
#define COUNT_SLOTS 4096
static _Atomic uint64_t count_keys[COUNT_SLOTS];
static _Atomic uint32_t count_vals[COUNT_SLOTS];

/* Device of each communicator: value device+1, 0 while unknown. */
#define COMM_SLOTS 1024
static _Atomic uint64_t comm_keys[COMM_SLOTS];
static _Atomic int32_t comm_devs[COMM_SLOTS];

/* ---- real functions, resolved on demand; NULL results are retried next time ---- */
typedef int CUresult;
typedef int CUdevice;
typedef struct CUctx_st *CUcontext;

static void *resolve_cached(_Atomic(void *) *cache, enum gmt_lib lib, const char *name)
{
    void *p = atomic_load_explicit(cache, memory_order_acquire);
    if (!p) {
        p = gmt_resolve(lib, name);
        if (p)
            atomic_store_explicit(cache, p, memory_order_release);
    }
    return p;
}
#define REAL(lib, type, name)                                                  \
    ({                                                                         \
        static _Atomic(void *) cache_##name;                                   \
        (type)resolve_cached(&cache_##name, lib, #name);                       \
    })

typedef int (*nccl_query_fn)(void *comm, int *out);
enum query { Q_RANK, Q_COUNT, Q_DEVICE };

/* Asks the real NCCL about a communicator; -1 when it can't say. */
static int nccl_query(enum query q, uint64_t comm)
{
    nccl_query_fn fn;
    if (q == Q_RANK)
        fn = REAL(GMT_LIB_NCCL, nccl_query_fn, ncclCommUserRank);
    else if (q == Q_COUNT)
        fn = REAL(GMT_LIB_NCCL, nccl_query_fn, ncclCommCount);
    else
        fn = REAL(GMT_LIB_NCCL, nccl_query_fn, ncclCommCuDevice);
    int out = -1;
    if (!fn || fn((void *)(uintptr_t)comm, &out) != 0)
        return -1;
    return out;
}

/*
 * Each thread remembers the last 8 communicators it called on (one process driving
 * several GPUs alternates between one per device): each one's device as the COMM cache
 * had it, which ops on it had their first call (stack captured) already, and the last 4
 * (op, bytes) found past their sampling quota (a loop's calls on one communicator come
 * in a few sizes: buckets, two ops). A loop of calls then skips every hash lookup. An entry holds while the generation is unchanged: any change to the cache (a
 * communicator made, an address reused) and a fork bump it.
 */
#define MEMOS 8 /* one process driving 8 GPUs: one communicator per device */
#define DONE 4
struct comm_memo {
    uint64_t comm;
    unsigned long gen;          /* 0: being rewritten (a signal handler finds it invalid) */
    int device;                 /* from the COMM cache; -1 not known there */
    uint8_t done_next;          /* the entry of done[] the next one takes */
    uint64_t ops_seen;          /* bit op: first_of(comm, op) was asked already */
    uint64_t done[DONE];        /* done_key(op, bytes) past their first N calls (first:N);
                                 * 0 none */
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct comm_memo) == 64, "one cache line");

/* (op, bytes) as one word, never 0 (ops start at 1); 0 when bytes don't fit beside op. */
static inline uint64_t done_key(unsigned op, uint64_t bytes)
{
    return bytes >> 55 ? 0 : bytes << 8 | (op & 0xff);
}

static inline bool memo_done(const struct comm_memo *m, uint64_t key)
{
    for (int i = 0; i < DONE; i++)
        if (m->done[i] == key)
            return key != 0;
    return false;
}
static GMT_TLS struct comm_memo t_memo[MEMOS];
_Static_assert(256 % MEMOS == 0, "memo_next wraps onto entry 0");

static void comm_cache_put(uint64_t comm, int device)
{
    long i = slot_of(comm_keys, COMM_SLOTS, mix(comm));
    if (i >= 0)
        atomic_store_explicit(&comm_devs[i], device + 1, memory_order_release);
    /* after the store: a thread that sees the new generation then reads the new device */
    atomic_fetch_add_explicit(&gmt_hot.scope.comm_gen, 1, memory_order_acq_rel);
}

static int current_device(void);

/* A communicator's device: what its COMM record cached, else the thread's current device
 * (NCCL drives a communicator on the device current at its init; calls on it are made
 * there too). NCCL itself is not asked here: a non-blocking communicator still
 * initializing answers with an error and a WARN in the program's log (hooks_nccl.c writes
 * its COMM record once it is ready). The key is mix(comm), so two communicators could
 * share an entry only by a 64-bit collision. */
static int comm_device_lookup(uint64_t comm)
{
    long i = slot_of(comm_keys, COMM_SLOTS, mix(comm));
    if (i >= 0) {
        int d = atomic_load_explicit(&comm_devs[i], memory_order_acquire);
        if (d > 0)
            return d - 1;
    }
    return -1;
}

static int comm_device(uint64_t comm, const struct comm_memo *m)
{
    if (!comm)
        return -1;
    if (m && m->device >= 0)
        return m->device;
    int dev = comm_device_lookup(comm);
    if (dev >= 0)
        return dev;
    int saved_errno = errno;
    gmt_ts.guard.in_lib++;
    dev = current_device();
    gmt_ts.guard.in_lib--;
    errno = saved_errno;
    return dev;
}

/* This thread's memo of `comm`, made afresh (from the COMM cache) when it has none that
 * is current. */
static struct comm_memo *memo_of(uint64_t comm)
{
    unsigned long gen = atomic_load_explicit(&gmt_hot.scope.comm_gen, memory_order_acquire);
    for (int i = 0; i < MEMOS; i++)
        if (t_memo[i].comm == comm && t_memo[i].gen == gen)
            return &t_memo[i];
    struct comm_memo *m = &t_memo[gmt_ts.scope.memo_next++ % MEMOS];
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
    return m;
}

/* ---- device-memory sampling policy (GPUMEMTRACE_MEMINFO) ---- */
enum { POLICY_UNPARSED, POLICY_NEVER, POLICY_ALWAYS, POLICY_FIRST };
/* In gmt.h's hot line; gmt_hot.meminfo.first and gmt_hot.meminfo.every are written before gmt_hot.meminfo.kind is
 * published (init.c starts them at 0: POLICY_UNPARSED, and parse_policy sets both). */

static int parse_uint(const char **s, uint32_t *out)
{
    const char *p = *s;
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (uint64_t)(*p++ - '0');
        if (v > 1000000000u)
            return -1;
    }
    *s = p;
    *out = (uint32_t)v;
    return 0;
}

/* "never" | "always" | "first:N[,every:K]"; anything else is warned about once and the
 * default (first:2, never afterwards) is used. */
static int parse_policy(const char *s, uint32_t *first, uint32_t *every)
{
    *first = 2;
    *every = 0;
    if (!s || !*s)
        return POLICY_FIRST;
    if (strcmp(s, "never") == 0)
        return POLICY_NEVER;
    if (strcmp(s, "always") == 0)
        return POLICY_ALWAYS;
    const char *p = s;
    uint32_t n, k = 0;
    if (strncmp(p, "first:", 6) != 0)
        goto bad;
    p += 6;
    if (parse_uint(&p, &n))
        goto bad;
    if (*p == ',') {
        p++;
        if (strncmp(p, "every:", 6) != 0)
            goto bad;
        p += 6;
        if (parse_uint(&p, &k))
            goto bad;
    }
    if (*p)
        goto bad;
    *first = n;
    *every = k;
    return POLICY_FIRST;
bad:
    gmt_warn("GPUMEMTRACE_MEMINFO=%s not understood (never | always | first:N[,every:K]); "
             "using first:2", s);
    return POLICY_FIRST;
}

static _Atomic int parsing; /* 1 while a thread parses the policy (cleared in a fork child) */

static int policy(void)
{
    int k = atomic_load_explicit(&gmt_hot.meminfo.kind, memory_order_acquire);
    if (GMT_LIKELY(k != POLICY_UNPARSED))
        return k;
    /* The first caller parses (so a bad value is warned about once); a racing one waits
     * the few instructions that takes. */
    int zero = 0;
    if (atomic_compare_exchange_strong(&parsing, &zero, 1)) {
        k = parse_policy(gmt_opt.meminfo, &gmt_hot.meminfo.first, &gmt_hot.meminfo.every);
        atomic_store_explicit(&gmt_hot.meminfo.kind, k, memory_order_release);
        return k;
    }
    while ((k = atomic_load_explicit(&gmt_hot.meminfo.kind, memory_order_acquire)) == POLICY_UNPARSED)
        ;
    return k;
}

/* Whether the call numbered by its key's counter gets sampled. Keys the table can't hold
 * are not sampled: sampling is a cost, never a correctness matter. */
static uint64_t meminfo_key(uint64_t comm, unsigned op, uint64_t bytes);

/* The key (three mixes) is made only when the policy counts calls, and not for the
 * (op, bytes) the thread's memo of comm found done lately. */
static bool want_sample(uint64_t comm, unsigned op, uint64_t bytes, struct comm_memo *m)
{
    int k = policy();
    if (k == POLICY_NEVER)
        return false;
    if (k == POLICY_ALWAYS)
        return true;
    uint64_t dk = done_key(op, bytes);
    if (!gmt_hot.meminfo.every && m && memo_done(m, dk))
        return false;
    uint64_t key = mix(meminfo_key(comm, op, bytes));
    long i = slot_of(count_keys, COUNT_SLOTS, key);
    if (i < 0)
        return false;
    /* Past the first N with no every:K the answer is no for good: a plain load, no
     * locked increment (the count stays at N, where every later call finds it). */
    if (!gmt_hot.meminfo.every && atomic_load_explicit(&count_vals[i], memory_order_relaxed) >= gmt_hot.meminfo.first) {
        if (m) {
            m->done[m->done_next++ % DONE] = dk;
        }
        return false;
    }
    uint32_t n = atomic_fetch_add_explicit(&count_vals[i], 1, memory_order_relaxed);
    if (n < gmt_hot.meminfo.first)
        return true;
    return gmt_hot.meminfo.every && (n - gmt_hot.meminfo.first + 1) % gmt_hot.meminfo.every == 0;
}

static uint64_t meminfo_key(uint64_t comm, unsigned op, uint64_t bytes)
{
    return mix(mix(comm) ^ ((uint64_t)op << 56) ^ mix(bytes + 0x9e3779b97f4a7c15ull));
}

/* ---- cuMemGetInfo on a given device, leaving the caller's context as it was ---- */
typedef CUresult (*ctx_get_fn)(CUcontext *);
typedef CUresult (*ctx_dev_fn)(CUdevice *);
typedef CUresult (*meminfo_fn)(size_t *, size_t *);
typedef CUresult (*dev_get_fn)(CUdevice *, int);
typedef CUresult (*pctx_state_fn)(CUdevice, unsigned *, int *);
typedef CUresult (*pctx_retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*pctx_release_fn)(CUdevice);
typedef CUresult (*ctx_push_fn)(CUcontext);
typedef CUresult (*ctx_pop_fn)(CUcontext *);

static int current_device(void)
{
    ctx_get_fn get = REAL(GMT_LIB_DRIVER, ctx_get_fn, cuCtxGetCurrent);
    ctx_dev_fn dev = REAL(GMT_LIB_DRIVER, ctx_dev_fn, cuCtxGetDevice);
    CUcontext cur = NULL;
    CUdevice d = -1;
    if (!get || !dev || get(&cur) != 0 || !cur || dev(&d) != 0)
        return -1;
    return d;
}

/* 0 and the sample, or -1: nothing was sampled (no driver, no context on that device).
 * Never creates a context: another device's primary context is used only if active. */
static int query_meminfo(int device, uint64_t *free_b, uint64_t *total_b)
{
    meminfo_fn info = REAL(GMT_LIB_DRIVER, meminfo_fn, cuMemGetInfo_v2);
    if (!info)
        return -1;
    size_t f = 0, t = 0;
    if (current_device() == device) {
        if (info(&f, &t) != 0)
            return -1;
        *free_b = f;
        *total_b = t;
        return 0;
    }
    dev_get_fn dget = REAL(GMT_LIB_DRIVER, dev_get_fn, cuDeviceGet);
    pctx_state_fn state = REAL(GMT_LIB_DRIVER, pctx_state_fn, cuDevicePrimaryCtxGetState);
    pctx_retain_fn retain = REAL(GMT_LIB_DRIVER, pctx_retain_fn, cuDevicePrimaryCtxRetain);
    pctx_release_fn release = REAL(GMT_LIB_DRIVER, pctx_release_fn, cuDevicePrimaryCtxRelease_v2);
    ctx_push_fn push = REAL(GMT_LIB_DRIVER, ctx_push_fn, cuCtxPushCurrent_v2);
    ctx_pop_fn pop = REAL(GMT_LIB_DRIVER, ctx_pop_fn, cuCtxPopCurrent_v2);
    if (!dget || !state || !retain || !release || !push || !pop)
        return -1;
    CUdevice dev;
    unsigned flags = 0;
    int active = 0;
    if (dget(&dev, device) != 0 || state(dev, &flags, &active) != 0 || !active)
        return -1;
    CUcontext ctx = NULL, popped = NULL;
    if (retain(&ctx, dev) != 0)
        return -1;
    int rc = -1;
    if (push(ctx) == 0) {
        if (info(&f, &t) == 0)
            rc = 0;
        pop(&popped);
    }
    release(dev);
    *free_b = f;
    *total_b = t;
    return rc;
}

static void sample(uint32_t scope_id, int device, enum gmt_meminfo_phase phase)
{
    uint64_t f, t;
    int saved_errno = errno; /* the driver's calls may set it */
    gmt_ts.guard.in_lib++;
    int rc = query_meminfo(device, &f, &t);
    gmt_ts.guard.in_lib--;
    errno = saved_errno;
    if (rc)
        return;
    struct gmt_rec_meminfo r = {
        .h = {.type = GMT_REC_MEMINFO, .aux = (uint16_t)phase,
              .size = gmt_rec_padded(sizeof r)},
        .scope_id = scope_id,
        .device = device,
        .free_bytes = f,
        .total_bytes = t,
    };
    gmt_emit(&r, offsetof(struct gmt_rec_meminfo, dt));
}

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
#define OPEN_SLOTS 4096
static _Atomic uint64_t open_slots[OPEN_SLOTS];
static _Atomic uint32_t open_hw; /* slots [0, open_hw) may be in use */
static _Atomic uint32_t next_token;

#define CLAIMS ((int)GMT_COUNTOF(gmt_ts.claims.c))
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
        if (!gmt_ts.claims.c[c].open)
            atomic_store_explicit(&open_slots[gmt_ts.claims.c[c].slot], 0, memory_order_release);
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
static inline int claim_of(int device)
{
    int c = gmt_ts.claims.hint[device & (HINTS - 1)];
    if (GMT_LIKELY(c < gmt_ts.claims.n && gmt_ts.claims.c[c].device == device))
        return c;
    for (c = 0; c < gmt_ts.claims.n; c++)
        if (gmt_ts.claims.c[c].device == device) {
            gmt_ts.claims.hint[device & (HINTS - 1)] = (uint8_t)c;
            return c;
        }
    return -1;
}

static void publish_new(int device, uint32_t scope_id);

/* The common case inline-sized: the thread has its slot for the device already. */
static __attribute__((hot)) void publish(int device, uint32_t scope_id)
{
    int known = claim_of(device);
    if (GMT_LIKELY(known >= 0)) {
        atomic_store_explicit(&open_slots[gmt_ts.claims.c[known].slot], slot_word(device, scope_id),
                              memory_order_release);
        gmt_ts.claims.c[known].open = 1;
        return;
    }
    publish_new(device, scope_id);
}

/* A device the thread has no slot for yet: an idle one re-labelled, or a new claim. */
static __attribute__((cold, noinline)) void publish_new(int device, uint32_t scope_id)
{
    int idle = -1;
    for (int c = 0; c < gmt_ts.claims.n; c++) {
        if (gmt_ts.claims.c[c].device == device) {
            atomic_store_explicit(&open_slots[gmt_ts.claims.c[c].slot], slot_word(device, scope_id),
                                  memory_order_release);
            gmt_ts.claims.c[c].open = 1;
            return;
        }
        if (!gmt_ts.claims.c[c].open && idle < 0)
            idle = c;
    }
    uint64_t w = slot_word(device, scope_id);
    if (idle >= 0) { /* our own idle slot, re-labelled with this device */
        gmt_ts.claims.c[idle].device = (int16_t)device;
        gmt_ts.claims.c[idle].open = 1;
        atomic_store_explicit(&open_slots[gmt_ts.claims.c[idle].slot], w, memory_order_release);
        return;
    }
    if (gmt_ts.claims.n == CLAIMS)
        return;
    int i = claim_slot(w);
    if (i < 0)
        return;
    gmt_ts.claims.c[gmt_ts.claims.n].device = (int16_t)device;
    gmt_ts.claims.c[gmt_ts.claims.n].slot = (int16_t)i;
    gmt_ts.claims.c[gmt_ts.claims.n].open = 1;
    gmt_ts.claims.n++;
}

static __attribute__((hot)) void unpublish(int device)
{
    int c = claim_of(device);
    if (c < 0)
        return;
    /* still ours, naming no scope */
    atomic_store_explicit(&open_slots[gmt_ts.claims.c[c].slot], slot_word(device, 0),
                          memory_order_release);
    gmt_ts.claims.c[c].open = 0;
}

static void frame_register(int depth, int device)
{
    if (device < 0 || device >= MAX_DEV || depth < 0 || depth >= FRAMES)
        return;
    struct gmt_frame *f = &gmt_ts.scope.frames[depth];
    uint64_t bit = 1ull << device;
    if (f->devmask & bit)
        return;
    f->devmask |= bit;
    /* An outer frame registered later must not hide an inner one already published. */
    for (int k = depth + 1; k < gmt_ts.scope.depth && k < FRAMES; k++)
        if (gmt_ts.scope.frames[k].devmask & bit)
            return;
    publish(device, f->id);
}

/* After frame `depth` closes: each device it was published on falls back to the nearest
 * enclosing frame registered there, or is released. */
static void frame_unregister(int depth)
{
    uint64_t mask = gmt_ts.scope.frames[depth].devmask;
    while (mask) {
        int d = __builtin_ctzll(mask);
        mask &= mask - 1;
        int k = depth - 1;
        while (k >= 0 && !(gmt_ts.scope.frames[k].devmask & (1ull << d)))
            k--;
        if (k >= 0)
            publish(d, gmt_ts.scope.frames[k].id);
        else
            unpublish(d);
    }
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

/* ---- scopes ---- */

/* Registers scope `depth` on `device` and samples memory at begin when the policy wants
 * this key. Inside a group the members only enqueue: the work and the allocations (of
 * inits in the group too) happen in ncclGroupEnd, when the members have returned. So a
 * member registers its group on the device instead of itself (a foreign thread's
 * allocation during ncclGroupEnd then finds the group), and the sample is taken once per
 * device for the group and closed when the group ends. With nested groups, all of that
 * is the outermost group's: NCCL does the work at the outermost ncclGroupEnd. */
static void concern_device(int depth, int device, uint64_t comm, unsigned op, uint64_t bytes,
                           struct comm_memo *m)
{
    if (device < 0 || device >= MAX_DEV || depth >= FRAMES)
        return;
    int g = gmt_ts.scope.frames[depth].group;
    int target = g >= 0 ? g : depth;
    frame_register(target, device);
    if (!want_sample(comm, op, bytes, m))
        return;
    uint64_t bit = 1ull << device;
    if (gmt_ts.scope.frames[target].memmask & bit)
        return;
    gmt_ts.scope.frames[target].memmask |= bit;
    sample(gmt_ts.scope.frames[target].id, device, GMT_MEMINFO_BEGIN);
}

static _Atomic uint8_t captured[SEEN_SLOTS];

static bool first_of_lookup(uint64_t comm, unsigned op)
{
    long i = slot_of(seen_keys, SEEN_SLOTS, mix(mix(comm) ^ op));
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
static bool first_of_nocomm(unsigned op)
{
    /* in the line of the repeated groups' state, which a group reads anyway */
    uint32_t gen = (uint32_t)atomic_load_explicit(&gmt_hot.scope.comm_gen, memory_order_acquire);
    if (gmt_ts.rep.nocomm_gen != gen) {
        gmt_ts.rep.nocomm_ops = 0;
        gmt_ts.rep.nocomm_gen = gen;
    }
    uint64_t bit = op < 64 ? 1ull << op : 0;
    if (gmt_ts.rep.nocomm_ops & bit)
        return false;
    gmt_ts.rep.nocomm_ops |= bit;
    return first_of_lookup(0, op);
}

/* True for the one call (process-wide) that captures the stack of (comm, op). */
static bool first_of(struct comm_memo *m, uint64_t comm, unsigned op)
{
    uint64_t bit = op < 64 ? 1ull << op : 0;
    if (m->ops_seen & bit)
        return false; /* asked before: the answer is only ever true once */
    m->ops_seen |= bit;
    return first_of_lookup(comm, op);
}

/* A fork child writes a file of its own, and has one thread: the scopes the parent's
 * threads had open (published for foreign-thread attribution, or on the forking thread's
 * own stack) are not in that file, and must not be named by the child's records. Stacks
 * start over there too (stack.c), so each (comm, op) gets its stack captured again. A
 * policy parse that another thread had under way is started again. */
static void fork_child(void)
{
    for (int i = 0; i < OPEN_SLOTS; i++)
        atomic_store_explicit(&open_slots[i], 0, memory_order_relaxed);
    atomic_store_explicit(&open_hw, 0, memory_order_relaxed);
    gmt_ts.claims.n = 0;
    gmt_ts.scope.depth = 0;
    gmt_scope_repeat_forget(); /* the parent's groups are not in the child's file */
    atomic_fetch_add_explicit(&gmt_hot.scope.comm_gen, 1, memory_order_relaxed);
    for (int i = 0; i < SEEN_SLOTS; i++) {
        atomic_store_explicit(&seen_keys[i], 0, memory_order_relaxed);
        atomic_store_explicit(&captured[i], 0, memory_order_relaxed);
    }
    if (atomic_load_explicit(&gmt_hot.meminfo.kind, memory_order_relaxed) == POLICY_UNPARSED)
        atomic_store_explicit(&parsing, 0, memory_order_relaxed);
}

__attribute__((constructor)) static void register_fork_child(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}

/* Repeated groups' state (the section "repeated groups" below). */

static uint8_t rep_swap(uint8_t to)
{
    return __atomic_exchange_n(&gmt_ts.writer.deferred, to, __ATOMIC_RELAXED);
}

static void rep_stop(void);
static void rep_open(uint32_t id);
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
    if (GMT_LIKELY(gmt_emit_group_repeat(&r))) {
        gmt_ts.rep.like = scope_id; /* the latest group with these members */
        return;
    }
    gmt_ts.scope.id_next = scope_id; /* member_records takes them again, in order */
    write_members(count);
    gmt_ts.rep.like = scope_id;
}

/* The two records of a scope, as gmt_scope_begin/_end and the short way write them. */
static inline struct gmt_rec_scope_begin begin_rec(enum gmt_op op, uint32_t id, uint32_t stack_id,
                                                   uint64_t comm, uint64_t count, int datatype,
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
static inline struct gmt_rec_scope_end end_rec(enum gmt_op op, uint32_t id, int result)
{
    return (struct gmt_rec_scope_end){
        .h = {.type = GMT_REC_SCOPE_END, .aux = (uint16_t)op,
              .size = gmt_rec_padded(sizeof(struct gmt_rec_scope_end))},
        .scope_id = id,
        .result = result,
    };
}

/* errno: the common path below makes no call that can set it (gmt_emit, the memo, the
 * tables); what can (a stack capture, a sample, asking the driver for the current
 * device, noting a version) saves and restores it where it is called. */
uint32_t gmt_scope_begin(enum gmt_op op, uint64_t comm, uint64_t count, int datatype, int peer,
                         uint64_t stream)
{
    if (!gmt_writer_ready())
        return 0;
    if (GMT_UNLIKELY(gmt_ts.writer.deferred != GMT_REP_OFF))
        rep_stop(); /* a scope inside a group: not a plain member */
    uint32_t id = new_scope_id();
    struct comm_memo *m = comm ? memo_of(comm) : NULL;
    uint32_t stack_id = 0;
    /* the weak symbol's address last: it costs a GOT line, first_of is true once */
    if (GMT_UNLIKELY(m ? first_of(m, comm, op) : first_of_nocomm(op)) && gmt_stack_capture) {
        int saved_errno = errno;
        stack_id = gmt_stack_capture(NULL);
        errno = saved_errno;
    }

    struct gmt_rec_scope_begin r = begin_rec(op, id, stack_id, comm, count, datatype, peer, stream);
    if (GMT_UNLIKELY(!gmt_emit_scope_begin(&r)))
        gmt_emit(&r, offsetof(struct gmt_rec_scope_begin, dt));
    gmt_version_note(GMT_COMP_NCCL);

    int depth = gmt_ts.scope.depth++;
    if (depth < FRAMES) {
        /* the outermost open group: NCCL does the work of nested groups at the
         * outermost ncclGroupEnd */
        int g = -1;
        if (depth > 0) {
            g = gmt_ts.scope.frames[depth - 1].group;
            if (g < 0 && gmt_ts.scope.frames[depth - 1].op == GMT_OP_Group)
                g = depth - 1;
        }
        gmt_ts.scope.frames[depth] = (struct gmt_frame){.id = id, .op = (uint8_t)op, .group = (int8_t)g};
        if (op == GMT_OP_Group && depth == 0 && !gmt_hot.options.no_repeat)
            rep_open(id);
        if (comm) {
            /* A signal handler's NCCL call during gmt_emit may have given m's entry to
             * another communicator. */
            if (GMT_UNLIKELY(m->comm != comm ||
                             m->gen != atomic_load_explicit(&gmt_hot.scope.comm_gen, memory_order_acquire)))
                m = memo_of(comm);
            size_t esz = gmt_nccl_type_size(datatype);
            concern_device(depth, comm_device(comm, m), comm, op, count * esz, m);
        }
    } else {
        atomic_fetch_add_explicit(&scopes_too_deep, 1, memory_order_relaxed);
    }
    return id;
}

void gmt_scope_add_device(uint32_t scope_id, int device, uint64_t key)
{
    if (!scope_id)
        return;
    int depth = gmt_ts.scope.depth - 1;
    if (depth < 0 || depth >= FRAMES || gmt_ts.scope.frames[depth].id != scope_id)
        return;
    if (device < 0) {
        int saved_errno = errno;
        gmt_ts.guard.in_lib++;
        device = current_device();
        gmt_ts.guard.in_lib--;
        errno = saved_errno;
    }
    concern_device(depth, device, key, gmt_ts.scope.frames[depth].op, 0, NULL);
}

void gmt_scope_end(uint32_t scope_id, enum gmt_op op, int result)
{
    if (!scope_id)
        return;
    if (gmt_ts.writer.deferred != GMT_REP_OFF && scope_id == gmt_ts.rep.group) {
        /* a group that ends without gmt_scope_group_members_done (its start failed, say) */
        unsigned k = rep_close();
        if (k)
            repeat_write(scope_id, k);
    }
    if (scope_id == gmt_ts.rep.repeated)
        gmt_ts.rep.repeated = 0;
    int depth = gmt_ts.scope.depth;
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
                sample(scope_id, d, GMT_MEMINFO_END);
            }
            for (int j = depth - 1; j >= k; j--)
                frame_unregister(j);
            gmt_ts.scope.depth = k;
        }
    }
    struct gmt_rec_scope_end r = end_rec(op, scope_id, result);
    if (GMT_UNLIKELY(!gmt_emit_scope_end(&r)))
        gmt_emit(&r, offsetof(struct gmt_rec_scope_end, dt));
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
                     gmt_ts.scope.depth != 0 || gmt_ts.writer.deferred != GMT_REP_OFF || gmt_hot.options.no_repeat ||
                     gmt_ts.rep.nocomm_gen != gen || !(gmt_ts.rep.nocomm_ops & (1ull << GMT_OP_Group)) ||
                     gmt_ts.scope.id_next == gmt_ts.scope.id_end || gmt_ts.scope.id_next == UINT32_MAX))
        return gmt_scope_begin(GMT_OP_Group, 0, 0, -1, -1, 0);
    uint32_t id = ++gmt_ts.scope.id_next;
    struct gmt_rec_scope_begin r = begin_rec(GMT_OP_Group, id, 0, 0, 0, -1, -1, 0);
    if (GMT_UNLIKELY(!gmt_emit_scope_begin(&r)))
        gmt_emit(&r, offsetof(struct gmt_rec_scope_begin, dt));
    gmt_version_note(GMT_COMP_NCCL);
    gmt_ts.scope.frames[0] = (struct gmt_frame){.id = id, .op = GMT_OP_Group, .group = -1};
    gmt_ts.scope.depth = 1;
    rep_open(id);
    return id;
}

__attribute__((hot)) void gmt_scope_group_members_done(uint32_t scope_id)
{
    if (GMT_LIKELY(gmt_ts.writer.deferred == GMT_REP_MATCH && scope_id == gmt_ts.rep.group &&
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
        /* frame 0: no frame around it to fall back to (frame_unregister's case) */
        for (uint64_t mask = gmt_ts.scope.frames[0].devmask; mask; mask &= mask - 1)
            unpublish(__builtin_ctzll(mask));
        gmt_ts.scope.depth = 0;
        struct gmt_rec_scope_end r = end_rec(GMT_OP_Group, scope_id, result);
        if (GMT_UNLIKELY(!gmt_emit_scope_end(&r)))
            gmt_emit(&r, offsetof(struct gmt_rec_scope_end, dt));
        return;
    }
    gmt_scope_end(scope_id, GMT_OP_Group, result);
}

/* ---- group members, the short way ----
 *
 * Inside a user group a member call only enqueues: NCCL does its work, and allocates for
 * it, in ncclGroupEnd (FACTS.md). Once a member's (comm, op) had its first call (its stack
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
    unsigned long gen = atomic_load_explicit(&gmt_hot.scope.comm_gen, memory_order_acquire);
    struct comm_memo *m = NULL;
    for (int i = 0; i < MEMOS; i++)
        if (t_memo[i].comm == comm && t_memo[i].gen == gen) {
            m = &t_memo[i];
            break;
        }
    if (!m || m->device < 0 || m->device >= MAX_DEV || !(m->ops_seen & (1ull << op)))
        return -1;
    int k = atomic_load_explicit(&gmt_hot.meminfo.kind, memory_order_acquire);
    if (k != POLICY_NEVER &&
        (k != POLICY_FIRST || gmt_hot.meminfo.every || !memo_done(m, done_key(op, bytes))))
        return -1;
    int g = gmt_ts.scope.frames[depth - 1].group >= 0 ? gmt_ts.scope.frames[depth - 1].group : depth - 1;
    if (!(gmt_ts.scope.frames[g].devmask & (1ull << m->device)))
        frame_register(g, m->device);
    return m->device;
}

/* A member's two records, the short way's: at the thread's previous time. */
static void member_records(enum gmt_op op, uint64_t comm, uint64_t count, int datatype, int peer,
                           uint64_t stream, int result)
{
    uint32_t id = new_scope_id();
    struct {
        struct gmt_rec_scope_begin b;
        struct gmt_rec_scope_end e;
    } r = {begin_rec(op, id, 0, comm, count, datatype, peer, stream), end_rec(op, id, result)};
    _Static_assert(sizeof r.b % GMT_ALIGN == 0 && sizeof r.e % GMT_ALIGN == 0 &&
                       sizeof r == sizeof r.b + sizeof r.e,
                   "the two records back to back, each padded");
    if (GMT_LIKELY(gmt_emit_untimed(&r, sizeof r)))
        return;
    gmt_emit(&r.b, offsetof(struct gmt_rec_scope_begin, dt));
    gmt_emit(&r.e, offsetof(struct gmt_rec_scope_end, dt));
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
/* MATCH -> RECORD: the members matched that returned are written now. */
__attribute__((cold)) void gmt_scope_repeat_spill(void)
{
    /* MATCH -> RECORD only (one instruction: a signal handler's spill can't come between);
     * any other state stays as it is (OFF must not become RECORD again) */
    uint8_t match = GMT_REP_MATCH;
    if (!__atomic_compare_exchange_n(&gmt_ts.writer.deferred, &match, GMT_REP_RECORD, false, __ATOMIC_RELAXED,
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
            unpublish(d);
        }
    }
}

/* Whatever the state, no template from this group: a scope begun inside it. */
static __attribute__((cold)) void rep_stop(void)
{
    gmt_scope_repeat_spill();
    rep_swap(GMT_REP_OFF);
    /* not a template, and an older one could fall out of the readers' window of the
     * thread's last groups (docs/trace-format.md) */
    gmt_ts.rep.n = 0;
}

unsigned gmt_scope_repeat_forget(void)
{
    uint8_t st = rep_swap(GMT_REP_OFF);
    gmt_ts.rep.n = 0;
    return st == GMT_REP_MATCH ? gmt_ts.rep.done : 0;
}

/* A member's fields into the template being recorded, at `index`. */
static void rep_record(unsigned index, enum gmt_op op, uint64_t comm, uint64_t count,
                       int datatype, int peer, uint64_t stream, int result, int device)
{
    if (gmt_ts.writer.deferred != GMT_REP_RECORD)
        return;
    /* index != cur: another member was recorded in between (a signal handler's): the
     * template would not be the group's children as written */
    if (index != gmt_ts.rep.cur || index >= GMT_REP_MAX || device < 0 || device >= MAX_DEV || (unsigned)op > 255 ||
        datatype != (int16_t)datatype || result != (int8_t)result) {
        rep_swap(GMT_REP_OFF);
        gmt_ts.rep.n = 0; /* as rep_stop */
        return;
    }
    gmt_ts.rep.m[index] = (struct gmt_rep_member){comm, count, stream, peer, (int16_t)datatype,
                                             (int8_t)result, (uint8_t)op};
    gmt_ts.rep.dev[index] = (int8_t)device;
    gmt_ts.rep.cur = (uint8_t)(index + 1);
}

/* At a group's begin, after its frame 0 is pushed: match the template, or record one. */
static __attribute__((hot)) void rep_open(uint32_t id)
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
            publish(__builtin_ctzll(mask), id);
    }
    atomic_signal_fence(memory_order_seq_cst);
    gmt_ts.writer.deferred = match ? GMT_REP_MATCH : GMT_REP_RECORD;
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
    gmt_ts.writer.deferred = GMT_REP_OFF;
    atomic_signal_fence(memory_order_seq_cst);
    uint32_t g = gmt_ts.rep.group;
    gmt_ts.rep.group = 0;
    unsigned k = gmt_ts.rep.done;
    if (GMT_LIKELY(st == GMT_REP_MATCH && !gmt_ts.rep.spilled && k == gmt_ts.rep.n && k == gmt_ts.rep.cur &&
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
    if (st == GMT_REP_MATCH && gmt_ts.rep.spilled)
        st = GMT_REP_RECORD; /* spilled by a handler: what follows is as after a spill */
    uint32_t gen = (uint32_t)atomic_load_explicit(&gmt_hot.scope.comm_gen, memory_order_acquire);
    if (st == GMT_REP_MATCH) {
        unsigned k = gmt_ts.rep.done;
        gmt_ts.rep.spilled = (uint8_t)k;
        atomic_signal_fence(memory_order_seq_cst);
        write_members(k);
        gmt_ts.rep.n = k == gmt_ts.rep.cur ? (uint8_t)k : 0;
    } else if (st == GMT_REP_RECORD) {
        gmt_ts.rep.n = gmt_ts.rep.gen == gen ? gmt_ts.rep.cur : 0;
    } else {
        gmt_ts.rep.n = 0; /* as rep_stop */
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
        if (gmt_ts.writer.deferred == GMT_REP_MATCH || gmt_ts.rep.spilled > i)
            return; /* waits for the group's end, or a spill wrote it */
    }
    int saved_errno = errno; /* the wrapper does not save it for a repeated member */
    if (result != x->result)
        gmt_scope_repeat_spill(); /* those before it; this one with its own result */
    int device = gmt_ts.rep.dev[i];
    member_records(op, comm, count, datatype, peer, stream, result);
    rep_record(i, op, comm, count, datatype, peer, stream, result, device);
    errno = saved_errno;
}

void gmt_scope_member_post(enum gmt_op op, uint64_t comm, uint64_t count, int datatype,
                           int peer, uint64_t stream, int result, int device)
{
    member_records(op, comm, count, datatype, peer, stream, result);
    if (gmt_ts.writer.deferred == GMT_REP_RECORD && gmt_ts.scope.depth == 1)
        rep_record(gmt_ts.rep.cur, op, comm, count, datatype, peer, stream, result, device);
}

/* Called only once the communicator is ready (hooks_nccl.c defers non-blocking ones). */
void gmt_scope_comm(uint64_t comm, uint64_t parent, uint64_t unique_id_hash)
{
    if (!comm || !gmt_writer_ready())
        return;
    int saved_errno = errno;
    gmt_ts.guard.in_lib++;
    int rank = nccl_query(Q_RANK, comm);
    int nranks = nccl_query(Q_COUNT, comm);
    int device = nccl_query(Q_DEVICE, comm);
    gmt_ts.guard.in_lib--;
    /* A new communicator may reuse a destroyed one's address: overwrite what was cached. */
    if (device >= 0)
        comm_cache_put(comm, device);
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
    errno = saved_errno;
}
