/* query.c: the traced process's own figures for itself: tracked device bytes now and at their peak, per device and category, through a small exported C API. */
#include <stdatomic.h>
#include <stdint.h>

#include "gmt.h"
#include "gpumemtrace.h"
#include "writer_api.h"

/*
 * What the program may ask of the library it runs under (the Python package's
 * gpumemtrace.query(), its pytest plugin): the bytes of device memory that allocation
 * calls hold now and held at most, per device, all of it and the part NCCL took (an
 * allocation made inside an NCCL call, or on NCCL's thread for one). These are counts
 * of what the trace records, kept beside it, never read from it: the CLI's analysis
 * of the trace stays the reference.
 *
 * The cost stays off the hot path's budget: no lock, no syscall, no malloc. The live
 * allocations are a table of (key, meta) slots in reserved address space, open
 * addressing with linear probing (first_slot says where a key starts): an allocation takes the first empty or dead slot by
 * CAS, a free finds its key and marks the slot dead. A slot never goes back to empty,
 * so a lookup that meets an empty slot has seen every slot its key could be in. The
 * same key is never inserted and removed at once: the program does not free what it
 * has not been handed yet, and the library records a free before the real one. The
 * counters are atomic adds; a peak moves by CAS only while it rises.
 *
 * Charged as the CLI charges local device memory, one layer of it: cudaMalloc and
 * cuMemAlloc, pool allocations, managed memory, arrays, and cuMemCreate on a device
 * (each handle until its last reference is released). ncclMemAlloc is the cuMem calls
 * it makes, so its own record is not counted again.
 */

#define SLOT_BITS 20                    /* 1 M live allocations; 16 MiB of address space */
#define SLOTS (1u << SLOT_BITS)
#define PROBES 4096                     /* past this a table is too full to keep counting */
#define DEV_SLOTS 65                    /* devices 0..63, then "unknown" */
#define UNKNOWN_DEV 64
enum { CAT_ALL = GPUMEMTRACE_CAT_ALL, CAT_NCCL = GPUMEMTRACE_CAT_NCCL,
       CAT_OTHER = GPUMEMTRACE_CAT_OTHER, CATS };

#define EMPTY 0ull
#define DEAD (~0ull)
/* meta: bytes (48 bits) | device slot (7) | NCCL (1) | extra references (8) */
#define META_BYTES(m) ((m) & ((1ull << 48) - 1))
#define META_DEV(m) ((unsigned)((m) >> 48) & 0x7f)
#define META_NCCL(m) ((unsigned)((m) >> 55) & 1)
#define META_REF (1ull << 56)

struct slot {
    _Atomic uint64_t key;
    _Atomic uint64_t meta;
};

static struct gmt_once setup_once;
static _Atomic(struct slot *) table_p; /* set once, by setup */
/* Not exact from the first allocation the table could not hold (or a size past 48
 * bits): the figures then count less than the trace holds. */
static _Atomic int inexact;
static _Atomic int64_t cur[DEV_SLOTS][CATS];
static _Atomic int64_t peak[DEV_SLOTS][CATS];
static _Atomic uint64_t seen_devices; /* bit d: device d had tracked memory; bit 63 also unknown */

enum { NS_PTR, NS_HANDLE, NS_ARRAY, NS_NONE };

static int ns_of_kind(enum gmt_kind kind)
{
    switch (kind) {
    case GMT_KIND_DEVICE: case GMT_KIND_POOL_ALLOC: case GMT_KIND_MANAGED:
        return NS_PTR;
    case GMT_KIND_PHYSICAL: case GMT_KIND_RETAINED:
        return NS_HANDLE;
    case GMT_KIND_ARRAY: case GMT_KIND_MIPMAPPED_ARRAY:
        return NS_ARRAY;
    default:
        return NS_NONE;
    }
}

static int ns_of_free(enum gmt_api api)
{
    switch (api) {
    case GMT_API_cudaFree: case GMT_API_cudaFreeAsync: case GMT_API_cuMemFree:
    case GMT_API_cuMemFreeAsync:
        return NS_PTR;
    case GMT_API_cuMemRelease:
        return NS_HANDLE;
    case GMT_API_cudaFreeArray: case GMT_API_cudaFreeMipmappedArray:
    case GMT_API_cuArrayDestroy: case GMT_API_cuMipmappedArrayDestroy:
        return NS_ARRAY;
    default:
        return NS_NONE;
    }
}

static uint64_t key_of(int ns, uint64_t addr)
{
    return addr ^ ((uint64_t)ns << 58);
}

/* Where a key's probe starts. A line of 256 slots (one 4 KiB page of the table) stands
 * for one 2 MiB region of addresses, found by hashing the region; inside it the slots
 * follow the address in 8 KiB steps. Allocations made one after the other at nearby
 * addresses (a driver's bump allocator, a pool carving a segment) then share cache
 * lines and a page of the table, where a hash of the whole key sends each to a cache
 * miss, a TLB miss and, the first time, a page fault of its own; and the table's
 * resident size follows the regions in use, not the allocations made. */
#define LINE_BITS 8
static uint32_t first_slot(uint64_t key)
{
    uint64_t region = key >> 21;
    uint32_t line = (uint32_t)((region * 0x9e3779b97f4a7c15ull) >> (64 - (SLOT_BITS - LINE_BITS)));
    return line << LINE_BITS | (uint32_t)(key >> 13 & ((1u << LINE_BITS) - 1));
}

/* The table, mapped at the first allocation: NULL when it cannot be (no address space). */
static __attribute__((noinline)) struct slot *setup(void)
{
    int st = gmt_once_enter(&setup_once);
    if (st == GMT_ONCE_READY)
        return atomic_load_explicit(&table_p, memory_order_acquire);
    if (st != GMT_ONCE_BUSY)
        return NULL;
    void *t;
    bool ok = gmt_map_tables(&t, (size_t)SLOTS * sizeof(struct slot), NULL, 0);
    if (ok)
        atomic_store_explicit(&table_p, (struct slot *)t, memory_order_release);
    else
        atomic_store_explicit(&inexact, 1, memory_order_relaxed);
    gmt_once_leave(&setup_once, ok);
    return ok ? t : NULL;
}

static inline struct slot *table(void)
{
    struct slot *t = atomic_load_explicit(&table_p, memory_order_acquire);
    return GMT_LIKELY(t != NULL) ? t : setup();
}

static struct slot *find(struct slot *slots, uint64_t key)
{
    uint32_t i = first_slot(key);
    for (unsigned n = 0; n < PROBES; n++, i = (i + 1) & (SLOTS - 1)) {
        uint64_t k = atomic_load_explicit(&slots[i].key, memory_order_acquire);
        if (k == key)
            return &slots[i];
        if (k == EMPTY)
            return NULL;
    }
    return NULL;
}

static void raise_peak(_Atomic int64_t *p, int64_t now)
{
    int64_t was = atomic_load_explicit(p, memory_order_relaxed);
    while (now > was &&
           !atomic_compare_exchange_weak_explicit(p, &was, now, memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

static void count(unsigned dev, unsigned nccl, int64_t bytes)
{
    unsigned cat = nccl ? CAT_NCCL : CAT_OTHER;
    int64_t all = atomic_fetch_add_explicit(&cur[dev][CAT_ALL], bytes, memory_order_relaxed) + bytes;
    int64_t part = atomic_fetch_add_explicit(&cur[dev][cat], bytes, memory_order_relaxed) + bytes;
    if (bytes > 0) {
        raise_peak(&peak[dev][CAT_ALL], all);
        raise_peak(&peak[dev][cat], part);
    }
}

void gmt_query_alloc(enum gmt_kind kind, uint64_t address, uint64_t bytes, int device, bool nccl)
{
    int ns = (unsigned)kind < GMT_KIND_MAX ? ns_of_kind(kind) : NS_NONE;
    struct slot *slots;
    if (ns == NS_NONE || GMT_UNLIKELY(!(slots = table())))
        return;
    uint64_t key = key_of(ns, address);
    if (GMT_UNLIKELY(key == EMPTY || key == DEAD))
        return;
    if (kind == GMT_KIND_RETAINED) {
        struct slot *s = find(slots, key);
        if (s)
            atomic_fetch_add_explicit(&s->meta, META_REF, memory_order_relaxed);
        return;
    }
    if (GMT_UNLIKELY(bytes >> 48)) {
        atomic_store_explicit(&inexact, 1, memory_order_relaxed);
        return;
    }
    unsigned dev = device >= 0 && device < UNKNOWN_DEV ? (unsigned)device : UNKNOWN_DEV;
    uint32_t i = first_slot(key);
    for (unsigned n = 0; n < PROBES; n++, i = (i + 1) & (SLOTS - 1)) {
        uint64_t k = atomic_load_explicit(&slots[i].key, memory_order_relaxed);
        if (k != EMPTY && k != DEAD)
            continue;
        if (!atomic_compare_exchange_strong_explicit(&slots[i].key, &k, key,
                                                     memory_order_acq_rel, memory_order_relaxed))
            continue; /* another allocation took it: on to the next */
        atomic_store_explicit(&slots[i].meta, bytes | (uint64_t)dev << 48 | (uint64_t)nccl << 55,
                              memory_order_release);
        count(dev, nccl, (int64_t)bytes);
        uint64_t bit = 1ull << (dev < 63 ? dev : 63);
        if (!(atomic_load_explicit(&seen_devices, memory_order_relaxed) & bit))
            atomic_fetch_or_explicit(&seen_devices, bit, memory_order_relaxed);
        return;
    }
    atomic_store_explicit(&inexact, 1, memory_order_relaxed);
}

void gmt_query_free(enum gmt_api api, uint64_t address)
{
    int ns = (unsigned)api < GMT_API_MAX ? ns_of_free(api) : NS_NONE;
    /* a free before any allocation was counted has nothing to find */
    struct slot *t = atomic_load_explicit(&table_p, memory_order_acquire);
    if (ns == NS_NONE || !t)
        return;
    struct slot *s = find(t, key_of(ns, address));
    if (!s)
        return;
    uint64_t m = atomic_load_explicit(&s->meta, memory_order_acquire);
    if (m >= META_REF) { /* a retained reference of a handle: the memory stays */
        atomic_fetch_sub_explicit(&s->meta, META_REF, memory_order_relaxed);
        return;
    }
    atomic_store_explicit(&s->key, DEAD, memory_order_release);
    count(META_DEV(m), META_NCCL(m), -(int64_t)META_BYTES(m));
}

/* ---- the exported API (gpumemtrace.h; exports.map: gpumemtrace_*) ---- */

GMT_EXPORT int gpumemtrace_query_version(void)
{
    return GPUMEMTRACE_QUERY_VERSION;
}

static int dev_slot(int device)
{
    if (device == GPUMEMTRACE_UNKNOWN_DEVICE)
        return UNKNOWN_DEV;
    return device >= 0 && device < UNKNOWN_DEV ? device : -1;
}

GMT_EXPORT int64_t gpumemtrace_current_bytes(int device, int category)
{
    if (category < 0 || category >= CATS)
        return 0;
    if (device == GPUMEMTRACE_ALL_DEVICES) {
        int64_t sum = 0;
        for (int d = 0; d < DEV_SLOTS; d++)
            sum += atomic_load_explicit(&cur[d][category], memory_order_relaxed);
        return sum;
    }
    int d = dev_slot(device);
    return d < 0 ? 0 : atomic_load_explicit(&cur[d][category], memory_order_relaxed);
}

GMT_EXPORT int64_t gpumemtrace_peak_bytes(int device, int category)
{
    if (category < 0 || category >= CATS)
        return 0;
    if (device == GPUMEMTRACE_ALL_DEVICES) {
        int64_t most = 0;
        for (int d = 0; d < DEV_SLOTS; d++) {
            int64_t p = atomic_load_explicit(&peak[d][category], memory_order_relaxed);
            most = p > most ? p : most;
        }
        return most;
    }
    int d = dev_slot(device);
    return d < 0 ? 0 : atomic_load_explicit(&peak[d][category], memory_order_relaxed);
}

/* Each peak becomes what is held now: the peak of what follows (a test, a phase). An
 * allocation that races with the reset may leave a peak below the bytes it added;
 * the next one that raises it puts it right. */
GMT_EXPORT void gpumemtrace_reset_peak(void)
{
    for (int d = 0; d < DEV_SLOTS; d++)
        for (int c = 0; c < CATS; c++)
            atomic_store_explicit(&peak[d][c],
                                  atomic_load_explicit(&cur[d][c], memory_order_relaxed),
                                  memory_order_relaxed);
}

GMT_EXPORT uint64_t gpumemtrace_devices(void)
{
    return atomic_load_explicit(&seen_devices, memory_order_relaxed);
}

GMT_EXPORT int gpumemtrace_exact(void)
{
    /* asked without opening the trace: a process that made no event has none yet (0) */
    int st = atomic_load_explicit(&gmt_hot.writer.state, memory_order_acquire);
    return !atomic_load_explicit(&inexact, memory_order_relaxed) && !gmt_opt.off &&
           (st == GMT_WRITER_OPEN || st == 0);
}
