/* fake_c10_cuda.c: a simulated libc10_cuda.so: a small caching allocator over the runtime's cudaMalloc that reports every block to libc10 through the PLT, as PyTorch's does. */
/*
 * Stands for PyTorch's CUDACachingAllocator (the native backend) as seen from outside:
 * - requests are rounded up to 512 bytes; up to 1 MiB they come from the small pool's
 *   2 MiB segments, below 10 MiB from the large pool's 20 MiB segments, larger ones from a
 *   segment of their own rounded up to 2 MiB; each segment is one cudaMalloc;
 * - a block is the best-fitting free block of its pool, split when what remains is worth
 *   keeping (small: 512 bytes or more; large: more than 1 MiB), else handed out whole;
 *   a freed block goes back to the cache, merged with free neighbours, and its segment
 *   stays allocated until empty_cache;
 * - when cudaMalloc fails, whole free segments are given back (cudaFree) and it is
 *   tried again; when that fails too, reportOutOfMemoryToProfiler(size, allocated,
 *   reserved, device) and NULL (PyTorch raises OutOfMemoryError there);
 * - every block handed out or freed calls c10::reportMemoryUsageToProfiler(ptr, +/-size,
 *   allocated, reserved, {CUDA, device}) with the totals after the change, on the calling
 *   thread, with the allocator's lock held, through the PLT (libc10.so defines it);
 * - PYTORCH_NO_CUDA_MEMORY_CACHING=1: every request is its own cudaMalloc and cudaFree,
 *   and nothing is reported; PYTORCH_CUDA_ALLOC_CONF with backend:cudaMallocAsync: every
 *   request is a cudaMallocAsync / cudaFreeAsync, and nothing is reported.
 * The CPU allocator's reports ({CPU, -1}) go through the same function.
 * Not simulated: streams and events (record_stream), expandable segments, per-device
 * pools (the runtime's current device is used, with one set of segments per device).
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fake_c10.h"
#include "fake_cuda.h"

#define EXPORT __attribute__((visibility("default")))
#define MIB (1024u * 1024u)
#define MAX_DEV 8

struct c10_device {
    int8_t type;
    int8_t index;
};
/* libc10.so's: imported, so called through the PLT. */
void c10_report(void *ptr, int64_t size, size_t allocated, size_t reserved,
                struct c10_device device) __asm__("_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE");
void c10_report_oom(int64_t size, size_t allocated, size_t reserved, struct c10_device device)
    __asm__("_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE");

struct block {
    uintptr_t addr;
    size_t size;
    bool used;
    bool small;                /* its pool */
    struct block *prev, *next; /* neighbours in its segment, by address */
    struct block *seg;         /* the segment's first block */
    size_t seg_size;           /* the first block's: the segment's size */
};

struct pool_dev {
    struct block **blocks;     /* every block of every segment */
    size_t n, cap;
    uint64_t allocated, reserved, n_alloc, n_free;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct pool_dev devs[MAX_DEV];
static int mode = -1;          /* 0 caching, 1 no caching, 2 cudaMallocAsync */

static void read_mode(void)
{
    if (mode >= 0)
        return;
    const char *nc = getenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
    const char *conf = getenv("PYTORCH_CUDA_ALLOC_CONF");
    mode = nc && *nc && strcmp(nc, "0") ? 1 : conf && strstr(conf, "backend:cudaMallocAsync") ? 2 : 0;
}

static int cur_dev(void)
{
    int d = 0;
    if (cudaGetDevice(&d) != cudaSuccess || d < 0 || d >= MAX_DEV)
        d = 0;
    return d;
}

/* The allocator's own functions carry PyTorch's names (c10::cuda::CUDACachingAllocator::
 * malloc, free, report): the CLI's site rules know them as the allocator's. */
static void report(int dev, void *p, int64_t size)
    __asm__("_ZN3c104cuda20CUDACachingAllocator6reportEiPvl");
static void *cache_malloc(int dev, size_t want) __asm__("_ZN3c104cuda20CUDACachingAllocator6mallocEim");
static bool cache_free(int dev, void *p) __asm__("_ZN3c104cuda20CUDACachingAllocator4freeEiPv");

static void report(int dev, void *p, int64_t size)
{
    struct pool_dev *pd = &devs[dev];
    c10_report(p, size, pd->allocated, pd->reserved, (struct c10_device){1, (int8_t)dev});
}

static struct block *new_block(struct pool_dev *pd)
{
    if (pd->n == pd->cap) {
        size_t cap = pd->cap ? pd->cap * 2 : 64;
        struct block **b = realloc(pd->blocks, cap * sizeof *b);
        if (!b)
            return NULL;
        pd->blocks = b;
        pd->cap = cap;
    }
    struct block *b = calloc(1, sizeof *b);
    if (b)
        pd->blocks[pd->n++] = b;
    return b;
}

static void drop_block(struct pool_dev *pd, struct block *b)
{
    for (size_t i = 0; i < pd->n; i++)
        if (pd->blocks[i] == b) {
            pd->blocks[i] = pd->blocks[--pd->n];
            break;
        }
    free(b);
}

static size_t round_size(size_t n)
{
    return n < 512 ? 512 : (n + 511) / 512 * 512;
}

static size_t segment_size(size_t n)
{
    if (n <= MIB)
        return 2 * MIB;
    if (n < 10 * MIB)
        return 20 * MIB;
    return (n + 2 * MIB - 1) / (2 * MIB) * (2 * MIB);
}

/* Frees every segment that is one free block. */
static void release_cached(struct pool_dev *pd)
{
    for (size_t i = 0; i < pd->n;) {
        struct block *b = pd->blocks[i];
        if (!b->used && !b->prev && !b->next) {
            cudaFree((void *)b->addr);
            pd->reserved -= b->seg_size;
            drop_block(pd, b);
            continue;
        }
        i++;
    }
}

static void *cache_malloc(int dev, size_t want)
{
    struct pool_dev *pd = &devs[dev];
    size_t size = round_size(want);
    bool small = size <= MIB;
    struct block *best = NULL;
    for (size_t i = 0; i < pd->n; i++) {
        struct block *b = pd->blocks[i];
        if (!b->used && b->small == small && b->size >= size && (!best || b->size < best->size))
            best = b;
    }
    if (!best) {
        size_t seg = segment_size(size);
        void *p = NULL;
        if (cudaMalloc(&p, seg) != cudaSuccess) {
            release_cached(pd);
            if (cudaMalloc(&p, seg) != cudaSuccess) {
                c10_report_oom((int64_t)size, pd->allocated, pd->reserved,
                               (struct c10_device){1, (int8_t)dev});
                return NULL;
            }
        }
        best = new_block(pd);
        if (!best) {
            cudaFree(p);
            return NULL;
        }
        *best = (struct block){.addr = (uintptr_t)p, .size = seg, .small = small, .seg_size = seg};
        best->seg = best;
        pd->reserved += seg;
    }
    size_t rest = best->size - size;
    if (small ? rest >= 512 : rest > MIB) {
        struct block *r = new_block(pd);
        if (r) {
            *r = (struct block){.addr = best->addr + size, .size = rest, .small = small,
                                .prev = best, .next = best->next, .seg = best->seg};
            if (best->next)
                best->next->prev = r;
            best->next = r;
            best->size = size;
        }
    }
    best->used = true;
    pd->allocated += best->size;
    pd->n_alloc++;
    report(dev, (void *)best->addr, (int64_t)best->size);
    return (void *)best->addr;
}

static void merge_into(struct pool_dev *pd, struct block *a, struct block *b)
{
    /* b follows a; both free: a takes b */
    a->size += b->size;
    a->next = b->next;
    if (b->next)
        b->next->prev = a;
    drop_block(pd, b);
}

static bool cache_free(int dev, void *p)
{
    struct pool_dev *pd = &devs[dev];
    for (size_t i = 0; i < pd->n; i++) {
        struct block *b = pd->blocks[i];
        if (b->addr != (uintptr_t)p || !b->used)
            continue;
        b->used = false;
        size_t size = b->size;
        pd->allocated -= size;
        pd->n_free++;
        if (b->next && !b->next->used)
            merge_into(pd, b, b->next);
        if (b->prev && !b->prev->used) {
            struct block *a = b->prev;
            merge_into(pd, a, b);
        }
        report(dev, p, -(int64_t)size);
        return true;
    }
    return false;
}

/* The device each allocation was made on, for the modes without a cache. */
struct direct {
    void *p;
    int dev;
    size_t size;
};
static struct direct *direct;
static size_t n_direct, cap_direct;

EXPORT void *fake_c10_cuda_malloc(size_t bytes)
{
    pthread_mutex_lock(&lock);
    read_mode();
    int dev = cur_dev();
    void *p = NULL;
    if (mode == 0) {
        p = cache_malloc(dev, bytes);
    } else {
        cudaError_t r = mode == 1 ? cudaMalloc(&p, bytes) : cudaMallocAsync(&p, bytes, 0);
        if (r == cudaSuccess && n_direct == cap_direct) {
            size_t cap = cap_direct ? cap_direct * 2 : 64;
            struct direct *d = realloc(direct, cap * sizeof *d);
            if (d) {
                direct = d;
                cap_direct = cap;
            }
        }
        if (r != cudaSuccess || n_direct == cap_direct) {
            p = NULL;
        } else {
            direct[n_direct++] = (struct direct){p, dev, bytes};
            devs[dev].allocated += bytes;
            devs[dev].reserved += bytes;
            devs[dev].n_alloc++;
        }
    }
    pthread_mutex_unlock(&lock);
    return p;
}

EXPORT void fake_c10_cuda_free(void *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&lock);
    if (mode == 0) {
        for (int d = 0; d < MAX_DEV; d++)
            if (cache_free(d, p))
                break;
    } else {
        for (size_t i = 0; i < n_direct; i++)
            if (direct[i].p == p) {
                struct pool_dev *pd = &devs[direct[i].dev];
                if (mode == 1)
                    cudaFree(p);
                else
                    cudaFreeAsync(p, 0);
                pd->allocated -= direct[i].size;
                pd->reserved -= direct[i].size;
                pd->n_free++;
                direct[i] = direct[--n_direct];
                break;
            }
    }
    pthread_mutex_unlock(&lock);
}

EXPORT void fake_c10_cuda_empty_cache(void)
{
    pthread_mutex_lock(&lock);
    if (mode == 0)
        release_cached(&devs[cur_dev()]);
    pthread_mutex_unlock(&lock);
}

static uint64_t read_stat(int which)
{
    pthread_mutex_lock(&lock);
    struct pool_dev *pd = &devs[cur_dev()];
    uint64_t v = which == 0 ? pd->allocated : which == 1 ? pd->reserved
               : which == 2 ? pd->n_alloc : pd->n_free;
    pthread_mutex_unlock(&lock);
    return v;
}

EXPORT uint64_t fake_c10_cuda_allocated(void) { return read_stat(0); }
EXPORT uint64_t fake_c10_cuda_reserved(void) { return read_stat(1); }
EXPORT uint64_t fake_c10_cuda_count_allocs(void) { return read_stat(2); }
EXPORT uint64_t fake_c10_cuda_count_frees(void) { return read_stat(3); }

static _Atomic uint64_t cpu_allocated;

EXPORT void *fake_c10_cpu_malloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p)
        c10_report(p, (int64_t)bytes, cpu_allocated += bytes, 0, (struct c10_device){0, -1});
    return p;
}

EXPORT void fake_c10_cpu_free(void *p, size_t bytes)
{
    if (!p)
        return;
    c10_report(p, -(int64_t)bytes, cpu_allocated -= bytes, 0, (struct c10_device){0, -1});
    free(p);
}
