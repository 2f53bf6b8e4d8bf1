/* fake_driver.c: simulated CUDA driver (libcuda.so.1) with devices of fixed memory, VMM, pools and cuGetProcAddress. */

/* Stands for the real libcuda.so.1 at the ABI level (CUDA 13.0, driver 580):
 * - exports the ABI names (cuMemAlloc_v2, cuMemAllocAsync_ptsz, cuGetProcAddress and
 *   cuGetProcAddress_v2, ...) and answers cuGetProcAddress by base name + version +
 *   flags, the way the runtime, NCCL and PyTorch reach the driver;
 * - simulated devices (FAKECUDA_DEVICES, default 2) of FAKECUDA_MEM_MB (default 4096)
 *   each; device memory is host memory (mmap MAP_NORESERVE), so that memcpy and NCCL's
 *   reductions work and a large allocation costs nothing until touched;
 * - memory is charged per device: cuMemAlloc* rounded up to 2 MiB, cuMemCreate in
 *   multiples of the 2 MiB granularity (other sizes are refused, as the real driver
 *   does), a full device gives CUDA_ERROR_OUT_OF_MEMORY; a context costs 300 MiB and a
 *   module load more, which no allocation call shows (as NCCL's kernels loading into
 *   the context do on a real GPU): only cuMemGetInfo reveals them; with
 *   CUDA_MODULE_LOADING=EAGER a context costs FAKECUDA_EAGER_BYTES more, every kernel of
 *   the runtime's own modules loaded at its creation instead of at a first launch, as
 *   the real driver does (LAZY, the default since CUDA 12.2, and any other value: not);
 * - of the context's charge, the local-memory reservation (stack limit x
 *   FAKECUDA_THREADS_PER_SM x FAKECUDA_SMS, FAKECUDA_CONTEXT_BYTES counting it at its
 *   default) is a part: cuCtxSetLimit of the stack moves it and its charge; a
 *   cuLaunchKernel of a kernel needing more local memory per thread than the stack limit
 *   grows the limit to that need, and the charge with it, with no allocation call, as an
 *   H200 does. The printf FIFO and the malloc heap are charged nothing when set, as on an
 *   H200: the first launch of a kernel calling printf or malloc (its image's `uses`)
 *   charges FAKECUDA_DEVRT_BYTES of device runtime, and the first calling malloc the heap
 *   at its limit then (the FIFO's size is never charged). cuCtxGetLimit and
 *   cuDeviceGetAttribute tell them;
 * - VMM handles are memfds, so a mapping shows the handle's memory at the reserved
 *   address and two mappings of one handle share data; memory is freed when its last
 *   reference is released and its last mapping is gone; mappings are inaccessible until
 *   cuMemSetAccess, as on a GPU;
 * - CUDA arrays and mipmapped arrays are charged what their descriptor asks for
 *   (element size x width x height x depth, summed over mipmap levels), rounded up to
 *   2 MiB, as the device-used delta of arrays on an H200 shows (a sparse array:
 *   nothing, its pages are never mapped here); their handles are not device addresses
 *   and they hold no data;
 * - stream-ordered pools keep freed blocks reserved (still charged) until a
 *   synchronisation trims them to the release threshold (default 0) or cuMemPoolTrimTo;
 * - stream capture and graphs with memory nodes, as the H200 showed them: an async
 *   allocation on a capturing stream (or cuGraphAddMemAllocNode) allocates nothing and
 *   returns the address the allocation will have; a launch backs the graph's allocations
 *   from the device's graph memory pool, which grows in 2 MiB steps to cover them and
 *   stays reserved (charged, in cuMemGetInfo's used) after their frees until
 *   cuDeviceGraphMemTrim; cuDeviceGetGraphMemAttribute reports used (bytes of graph
 *   allocations live), reserved and their high-water marks. Only streams made by
 *   cuStreamCreate capture; graphs hold memory nodes only (nothing else runs).
 * - a freed range can be handed out again while the cuMemFree that freed it is still
 *   running, as the real driver's can: a test can hold the next cuMemFree inside the
 *   driver, after the memory is released (fakecuda_hold_next_free), and the next
 *   allocation of that length then takes the freed address;
 * Deviations: each process has its own simulated devices (two processes on one device
 * don't see each other's usage); every call is synchronous; managed memory is charged
 * nothing (it lives on the host until touched by a kernel); multicast is unsupported
 * (tests/gpu runs the real NCCL with NVLS off too). */

#include "fake_cuda.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))
#define MIB (1ull << 20)
#define GRAN ((size_t)FAKECUDA_GRANULARITY)
#define MAX_DEVICES 16
#define CTX_STACK 16

/* Every exported driver function, for the per-function statistics. */
#define DRIVER_FNS(X)                                                                         \
    X(cuInit) X(cuDriverGetVersion) X(cuDeviceGet) X(cuDeviceGetCount) X(cuDeviceGetName)     \
    X(cuDeviceTotalMem_v2) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)           \
    X(cuDevicePrimaryCtxRelease_v2) X(cuDevicePrimaryCtxGetState)                              \
    X(cuCtxCreate_v2) X(cuCtxDestroy_v2) X(cuCtxSetCurrent) X(cuCtxGetCurrent)                \
    X(cuCtxGetDevice) X(cuCtxPushCurrent_v2) X(cuCtxPopCurrent_v2) X(cuCtxSynchronize)        \
    X(cuStreamCreate) X(cuStreamDestroy_v2) X(cuStreamSynchronize) X(cuStreamSynchronize_ptsz) \
    X(cuMemGetInfo_v2) X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemAllocPitch_v2)                 \
    X(cuMemAllocManaged) X(cuMemAllocHost_v2) X(cuMemHostAlloc) X(cuMemFreeHost)              \
    X(cuMemHostRegister_v2) X(cuMemHostUnregister) X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz) \
    X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz) X(cuMemFreeAsync)              \
    X(cuMemFreeAsync_ptsz) X(cuMemPoolCreate) X(cuMemPoolDestroy) X(cuMemPoolTrimTo)          \
    X(cuMemPoolSetAttribute) X(cuMemPoolGetAttribute) X(cuDeviceGetDefaultMemPool)            \
    X(cuMemCreate) X(cuMemRelease) X(cuMemAddressReserve) X(cuMemAddressFree) X(cuMemMap)     \
    X(cuMemUnmap) X(cuMemSetAccess) X(cuMemGetAllocationGranularity)                          \
    X(cuMemExportToShareableHandle) X(cuMemImportFromShareableHandle)                         \
    X(cuMemRetainAllocationHandle) X(cuIpcGetMemHandle) X(cuIpcOpenMemHandle_v2)              \
    X(cuIpcCloseMemHandle) X(cuGraphCreate) X(cuGraphDestroy) X(cuGraphAddMemAllocNode)       \
    X(cuGraphAddMemFreeNode) X(cuStreamBeginCapture) X(cuStreamBeginCapture_ptsz)              \
    X(cuStreamBeginCapture_v2) X(cuStreamBeginCapture_v2_ptsz) X(cuStreamBeginCaptureToGraph)  \
    X(cuStreamBeginCaptureToGraph_ptsz) X(cuStreamEndCapture) X(cuStreamEndCapture_ptsz)       \
    X(cuStreamIsCapturing) X(cuStreamIsCapturing_ptsz) X(cuStreamGetCaptureInfo_v3)            \
    X(cuStreamGetCaptureInfo_v3_ptsz) X(cuGraphInstantiate) X(cuGraphInstantiate_v2)           \
    X(cuGraphInstantiateWithFlags) X(cuGraphInstantiateWithParams)                             \
    X(cuGraphInstantiateWithParams_ptsz) X(cuGraphLaunch) X(cuGraphLaunch_ptsz)                \
    X(cuGraphExecDestroy) X(cuDeviceGraphMemTrim) X(cuDeviceGetGraphMemAttribute)              \
    X(cuDeviceSetGraphMemAttribute)                                                           \
    X(cuMulticastCreate) X(cuArrayCreate_v2) X(cuArray3DCreate_v2) X(cuMipmappedArrayCreate)   \
    X(cuArrayDestroy) X(cuMipmappedArrayDestroy) X(cuMemcpyHtoD_v2) X(cuMemcpyDtoH_v2) X(cuMemcpyDtoD_v2) X(cuMemcpy)  \
    X(cuMemsetD8_v2) X(cuModuleLoadData) X(cuModuleUnload) X(cuGetErrorString)                \
    X(cuModuleLoad) X(cuModuleLoadDataEx) X(cuModuleLoadFatBinary) X(cuLibraryLoadData)       \
    X(cuLibraryLoadFromFile) X(cuLibraryUnload) X(cuGetExportTable)                           \
    X(cuCtxGetLimit) X(cuCtxSetLimit) X(cuDeviceGetAttribute) X(cuModuleGetFunction)          \
    X(cuLaunchKernel)                                                                         \
    X(cuGetErrorName) X(cuGetProcAddress) X(cuGetProcAddress_v2)

enum fn_id {
#define X(n) FN_##n,
    DRIVER_FNS(X)
#undef X
    FN_COUNT
};
static const char *const fn_names[FN_COUNT] = {
#define X(n) #n,
    DRIVER_FNS(X)
#undef X
};
static struct {
    atomic_ulong calls;
    atomic_ullong bytes;
    atomic_int last_tid;
} fn_stats[FN_COUNT];

static void count(enum fn_id id, unsigned long long bytes)
{
    atomic_fetch_add(&fn_stats[id].calls, 1);
    atomic_fetch_add(&fn_stats[id].bytes, bytes);
    atomic_store(&fn_stats[id].last_tid, (int)gettid());
}

/* ---------------------------------------------------------------- devices, contexts */
struct CUctx_st {
    int dev;
    int primary;
    int refs;   /* primary: retain count; others: 1 while alive */
    int active; /* charged and usable */
    struct CUctx_st *next;
};

struct device {
    size_t total, used, hidden;
    /* the graph memory pool: bytes of live graph allocations (and rounded to 2 MiB each),
     * bytes it holds (charged to the device), and their high-water marks */
    size_t gm_used, gm_used_rounded, gm_used_high, gm_reserved, gm_reserved_high;
    struct CUctx_st primary;
    struct CUmemPoolHandle_st *default_pool;
    /* the primary context's limits (bytes): what the reservation holds beyond its default
     * is charged hidden on top of the context's own FAKECUDA_CONTEXT_BYTES */
    size_t stack, fifo, heap;
    /* charged hidden by the first kernel calling printf or malloc: the device runtime, and
     * the heap as it was then (0: none yet) */
    int devrt;
    size_t heap_charged;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static int ndevices;
static struct device devices[MAX_DEVICES];
static struct CUctx_st *created_ctxs; /* kept so that a stale handle never dangles */

static __thread CUcontext ctx_stack[CTX_STACK];
static __thread int ctx_depth; /* ctx_stack[ctx_depth - 1] is current */

static long env_long(const char *name, long def, long lo, long hi)
{
    const char *s = getenv(name);
    if (!s || !*s) return def;
    char *end;
    long v = strtol(s, &end, 10);
    return (*end || v < lo || v > hi) ? def : v;
}

/* What a new context costs: FAKECUDA_CONTEXT_BYTES, and with CUDA_MODULE_LOADING=EAGER
 * the kernels the runtime's modules hold, loaded at once. Read once, at the first init. */
static size_t context_cost;

static void init_devices_locked(void)
{
    if (ndevices) return;
    const char *loading = getenv("CUDA_MODULE_LOADING");
    context_cost = FAKECUDA_CONTEXT_BYTES + (loading && !strcmp(loading, "EAGER") ? FAKECUDA_EAGER_BYTES : 0);
    ndevices = (int)env_long("FAKECUDA_DEVICES", 2, 1, MAX_DEVICES);
    size_t mem = (size_t)env_long("FAKECUDA_MEM_MB", 4096, 64, 1L << 22) * MIB;
    for (int i = 0; i < ndevices; i++) {
        devices[i].total = mem;
        devices[i].primary.dev = i;
        devices[i].primary.primary = 1;
        devices[i].stack = FAKECUDA_STACK_DEFAULT;
        devices[i].fifo = FAKECUDA_PRINTF_FIFO_DEFAULT;
        devices[i].heap = FAKECUDA_MALLOC_HEAP_DEFAULT;
        /* another process on the device (the fake NVML lists it): the device's free memory
         * counts it, as a real device's does */
        devices[i].used = (size_t)env_long("FAKENVML_OTHER_MB", 0, 0, 1L << 20) * MIB;
        if (devices[i].used > mem / 2) devices[i].used = 0;
    }
}

/* Charges `bytes` to device `dev`; hidden bytes are also counted as such. */
static CUresult charge_locked(int dev, size_t bytes, int hidden)
{
    struct device *d = &devices[dev];
    if (bytes > d->total - d->used) return CUDA_ERROR_OUT_OF_MEMORY;
    d->used += bytes;
    if (hidden) d->hidden += bytes;
    return CUDA_SUCCESS;
}

static void uncharge_locked(int dev, size_t bytes, int hidden)
{
    if (dev < 0 || dev >= ndevices) return;
    devices[dev].used -= bytes;
    if (hidden) devices[dev].hidden -= bytes;
}

/* Device memory the limits hold when set: the local-memory reservation (stack per thread
 * for every thread the SMs can hold). */
static size_t limits_bytes(size_t stack)
{
    return stack * FAKECUDA_THREADS_PER_SM * FAKECUDA_SMS;
}

/* Moves device dev's limits to the new values, charging or giving back the difference. */
static CUresult set_limits_locked(int dev, size_t stack, size_t fifo, size_t heap)
{
    struct device *d = &devices[dev];
    size_t now = limits_bytes(d->stack), want = limits_bytes(stack);
    if (want > now) {
        CUresult r = charge_locked(dev, want - now, 1);
        if (r) return r;
    } else {
        uncharge_locked(dev, now - want, 1);
    }
    d->stack = stack;
    d->fifo = fifo;
    d->heap = heap;
    return CUDA_SUCCESS;
}

static CUcontext current_ctx(void)
{
    return ctx_depth ? ctx_stack[ctx_depth - 1] : NULL;
}

/* The device of the calling thread's current context, or -1 with the error to return. */
static int current_dev(CUresult *err)
{
    if (!initialized) {
        *err = CUDA_ERROR_NOT_INITIALIZED;
        return -1;
    }
    CUcontext c = current_ctx();
    if (!c || !c->active) {
        *err = CUDA_ERROR_INVALID_CONTEXT;
        return -1;
    }
    return c->dev;
}

#define NEED_INIT()                                                                           \
    do {                                                                                      \
        if (!initialized) return CUDA_ERROR_NOT_INITIALIZED;                                  \
    } while (0)
#define NEED_CTX(devvar)                                                                      \
    CUresult ctx_err_ = CUDA_SUCCESS;                                                         \
    int devvar = current_dev(&ctx_err_);                                                      \
    if (devvar < 0) return ctx_err_

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

/* ------------------------------------------------------------- linear allocations */
enum blk_kind { BLK_DEVICE, BLK_MANAGED, BLK_HOST, BLK_POOL, BLK_IPC, BLK_REGISTERED, BLK_GRAPH };

struct blk {
    uintptr_t addr;
    size_t len;     /* mapped bytes (0 for host registrations: memory not ours) */
    size_t size;    /* bytes asked */
    size_t charged; /* bytes charged to dev */
    int dev;
    enum blk_kind kind;
    int memfd; /* -1 until exported through IPC */
    struct CUmemPoolHandle_st *pool;
    struct blk *next;
};

#define NBUCKETS 1024
static struct blk *buckets[NBUCKETS];

static unsigned bucket_of(uintptr_t a)
{
    return (unsigned)((a >> 12) * 2654435761u) % NBUCKETS;
}

static void blk_insert_locked(struct blk *b)
{
    unsigned h = bucket_of(b->addr);
    b->next = buckets[h];
    buckets[h] = b;
}

static struct blk *blk_take_locked(uintptr_t addr, unsigned kinds)
{
    for (struct blk **pp = &buckets[bucket_of(addr)]; *pp; pp = &(*pp)->next) {
        struct blk *b = *pp;
        if (b->addr == addr && (kinds & (1u << b->kind))) {
            *pp = b->next;
            return b;
        }
    }
    return NULL;
}

static struct blk *blk_containing_locked(uintptr_t addr, unsigned kinds)
{
    for (unsigned i = 0; i < NBUCKETS; i++)
        for (struct blk *b = buckets[i]; b; b = b->next)
            if ((kinds & (1u << b->kind)) && addr >= b->addr && addr < b->addr + (b->len ? b->len : b->size))
                return b;
    return NULL;
}

/* A cuMemFree held inside the driver (the test interface below): armed by
 * fakecuda_hold_next_free; HELD while the freeing thread waits there, its range released
 * and kept in reuse_addr/reuse_len for the next allocation of that length. */
enum { HOLD_OFF, HOLD_ARMED, HOLD_HELD, HOLD_RELEASED };
static pthread_mutex_t hold_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t hold_cv = PTHREAD_COND_INITIALIZER;
static int hold_state;
static uintptr_t reuse_addr;
static size_t reuse_len;

static void *map_anon(size_t len)
{
    pthread_mutex_lock(&hold_mu);
    uintptr_t want = reuse_len == len ? reuse_addr : 0;
    if (want)
        reuse_addr = reuse_len = 0;
    pthread_mutex_unlock(&hold_mu);
    void *p = MAP_FAILED;
    if (want) {
        p = mmap((void *)want, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
        /* taken meanwhile, or a kernel that reads the flag as a hint: any fresh address */
        if (p != MAP_FAILED && (uintptr_t)p != want) {
            munmap(p, len);
            p = MAP_FAILED;
        }
    }
    if (p == MAP_FAILED)
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* In cuMemFree, once [addr, addr + len) is released: waits there when a hold is armed. */
static void hold_point(uintptr_t addr, size_t len)
{
    pthread_mutex_lock(&hold_mu);
    if (hold_state == HOLD_ARMED) {
        reuse_addr = addr;
        reuse_len = len;
        hold_state = HOLD_HELD;
        pthread_cond_broadcast(&hold_cv);
        while (hold_state != HOLD_RELEASED)
            pthread_cond_wait(&hold_cv, &hold_mu);
        hold_state = HOLD_OFF;
    }
    pthread_mutex_unlock(&hold_mu);
}

/* One device allocation: charged rounded up to 2 MiB, mapped at a fresh address. */
static CUresult alloc_blk(int dev, size_t size, enum blk_kind kind, int charge, struct blk **out)
{
    if (size == 0) return CUDA_ERROR_INVALID_VALUE;
    size_t len = round_up(size, (size_t)sysconf(_SC_PAGESIZE));
    size_t charged = charge ? round_up(size, GRAN) : 0;
    pthread_mutex_lock(&lock);
    CUresult r = charged ? charge_locked(dev, charged, 0) : CUDA_SUCCESS;
    pthread_mutex_unlock(&lock);
    if (r) return r;
    void *p = map_anon(len);
    struct blk *b = p ? calloc(1, sizeof *b) : NULL;
    if (!b) {
        if (p) munmap(p, len);
        pthread_mutex_lock(&lock);
        uncharge_locked(dev, charged, 0);
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *b = (struct blk){.addr = (uintptr_t)p, .len = len, .size = size, .charged = charged,
                      .dev = dev, .kind = kind, .memfd = -1};
    pthread_mutex_lock(&lock);
    blk_insert_locked(b);
    pthread_mutex_unlock(&lock);
    *out = b;
    return CUDA_SUCCESS;
}

static void free_blk(struct blk *b)
{
    pthread_mutex_lock(&lock);
    uncharge_locked(b->dev, b->charged, 0);
    pthread_mutex_unlock(&lock);
    if (b->len) munmap((void *)b->addr, b->len);
    if (b->memfd >= 0) close(b->memfd);
    free(b);
}

/* ------------------------------------------------------------------------- init, info */
EXPORT CUresult cuInit(unsigned int flags)
{
    count(FN_cuInit, 0);
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    init_devices_locked();
    initialized = 1;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v)
{
    count(FN_cuDriverGetVersion, 0);
    if (!v) return CUDA_ERROR_INVALID_VALUE;
    *v = CUDA_VERSION;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetCount(int *n)
{
    count(FN_cuDeviceGetCount, 0);
    NEED_INIT();
    if (!n) return CUDA_ERROR_INVALID_VALUE;
    *n = ndevices;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    count(FN_cuDeviceGet, 0);
    NEED_INIT();
    if (!d) return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    count(FN_cuDeviceGetName, 0);
    NEED_INIT();
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "Fake NVIDIA H200 (fakecuda %d)", dev);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    count(FN_cuDeviceTotalMem_v2, 0);
    NEED_INIT();
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
    *bytes = devices[dev].total;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total)
{
    count(FN_cuMemGetInfo_v2, 0);
    NEED_CTX(dev);
    if (!free_b || !total) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    *free_b = devices[dev].total - devices[dev].used;
    *total = devices[dev].total;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

/* ---------------------------------------------------------------------------- contexts */
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    count(FN_cuDevicePrimaryCtxRetain, 0);
    NEED_INIT();
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct CUctx_st *c = &devices[dev].primary;
    if (!c->active) r = charge_locked(dev, context_cost, 1);
    if (r == CUDA_SUCCESS) {
        c->active = 1;
        c->refs++;
        *pctx = c;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult primary_release(CUdevice dev)
{
    NEED_INIT();
    if (dev < 0 || dev >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct CUctx_st *c = &devices[dev].primary;
    if (c->refs == 0) r = CUDA_ERROR_INVALID_CONTEXT;
    /* Released to zero: the context and what it cost go away (allocations stay charged). */
    else if (--c->refs == 0) {
        c->active = 0;
        /* its reservation goes with it: the next primary context starts at the defaults */
        set_limits_locked(dev, FAKECUDA_STACK_DEFAULT, FAKECUDA_PRINTF_FIFO_DEFAULT,
                          FAKECUDA_MALLOC_HEAP_DEFAULT);
        struct device *d = &devices[dev];
        uncharge_locked(dev, context_cost + (d->devrt ? FAKECUDA_DEVRT_BYTES : 0) + d->heap_charged, 1);
        d->devrt = 0;
        d->heap_charged = 0;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    count(FN_cuDevicePrimaryCtxRelease_v2, 0);
    return primary_release(dev);
}

/* The pre-11.0 ABI name; same behaviour in the fake. */
EXPORT CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    count(FN_cuDevicePrimaryCtxRelease, 0);
    return primary_release(dev);
}

/* Whether the device's primary context is alive (retained by someone), without
 * creating it: the tracer's MEMINFO sampling asks before it samples another device. */
EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    count(FN_cuDevicePrimaryCtxGetState, 0);
    NEED_INIT();
    if (!flags || !active) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    *flags = 0;
    *active = devices[dev].primary.active;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    count(FN_cuCtxCreate_v2, 0);
    NEED_INIT();
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
    if (ctx_depth == CTX_STACK) return CUDA_ERROR_OUT_OF_MEMORY;
    struct CUctx_st *c = calloc(1, sizeof *c);
    if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    CUresult r = charge_locked(dev, context_cost, 1);
    if (r == CUDA_SUCCESS) {
        *c = (struct CUctx_st){.dev = dev, .refs = 1, .active = 1, .next = created_ctxs};
        created_ctxs = c;
    }
    pthread_mutex_unlock(&lock);
    if (r) {
        free(c);
        return r;
    }
    ctx_stack[ctx_depth++] = c;
    *pctx = c;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    count(FN_cuCtxDestroy_v2, 0);
    NEED_INIT();
    if (!ctx || ctx->primary || !ctx->active) return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&lock);
    ctx->active = 0;
    uncharge_locked(ctx->dev, context_cost, 1);
    pthread_mutex_unlock(&lock);
    for (int i = 0; i < ctx_depth; i++)
        if (ctx_stack[i] == ctx) {
            memmove(&ctx_stack[i], &ctx_stack[i + 1], (size_t)(ctx_depth - i - 1) * sizeof ctx);
            ctx_depth--;
            break;
        }
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
    count(FN_cuCtxSetCurrent, 0);
    NEED_INIT();
    if (!ctx) {
        if (ctx_depth) ctx_depth--;
        return CUDA_SUCCESS;
    }
    if (!ctx->active) return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == 0) ctx_depth = 1;
    ctx_stack[ctx_depth - 1] = ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    count(FN_cuCtxGetCurrent, 0);
    NEED_INIT();
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    *pctx = current_ctx();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
    count(FN_cuCtxGetDevice, 0);
    NEED_CTX(dev);
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    *device = dev;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    count(FN_cuCtxPushCurrent_v2, 0);
    NEED_INIT();
    if (!ctx || !ctx->active) return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == CTX_STACK) return CUDA_ERROR_OUT_OF_MEMORY;
    ctx_stack[ctx_depth++] = ctx;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    count(FN_cuCtxPopCurrent_v2, 0);
    NEED_INIT();
    if (ctx_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    CUcontext c = ctx_stack[--ctx_depth];
    if (pctx) *pctx = c;
    return CUDA_SUCCESS;
}

/* -------------------------------------------------------------------------------- pools */
struct pool_free {
    struct blk *b;
    struct pool_free *next;
};

struct CUmemPoolHandle_st {
    int dev;
    int is_default;
    size_t threshold;           /* CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, bytes */
    size_t reserved, used;      /* bytes charged by the pool; of them, handed out */
    size_t reserved_high, used_high;
    struct pool_free *free_list; /* freed blocks, still charged, reusable */
    struct CUmemPoolHandle_st *next;
};
static struct CUmemPoolHandle_st *pools;

static void pool_trim_locked_to(struct CUmemPoolHandle_st *p, size_t keep, struct pool_free **out)
{
    while (p->free_list && p->reserved > keep) {
        struct pool_free *f = p->free_list;
        p->free_list = f->next;
        p->reserved -= f->b->charged;
        f->next = *out;
        *out = f;
    }
}

/* Frees, outside the lock, the blocks a trim took out of their pools. */
static void release_trimmed(struct pool_free *list)
{
    while (list) {
        struct pool_free *n = list->next;
        free_blk(list->b);
        free(list);
        list = n;
    }
}

/* Synchronisation releases what pools hold beyond their release threshold. */
static void sync_pools(void)
{
    struct pool_free *out = NULL;
    pthread_mutex_lock(&lock);
    for (struct CUmemPoolHandle_st *p = pools; p; p = p->next) pool_trim_locked_to(p, p->threshold, &out);
    pthread_mutex_unlock(&lock);
    release_trimmed(out);
}

static struct CUmemPoolHandle_st *new_pool_locked(int dev, int is_default)
{
    struct CUmemPoolHandle_st *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->dev = dev;
    p->is_default = is_default;
    p->next = pools;
    pools = p;
    return p;
}

static int pool_valid_locked(struct CUmemPoolHandle_st *q)
{
    for (struct CUmemPoolHandle_st *p = pools; p; p = p->next)
        if (p == q) return 1;
    return 0;
}

EXPORT CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *out, CUdevice dev)
{
    count(FN_cuDeviceGetDefaultMemPool, 0);
    NEED_INIT();
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    if (!devices[dev].default_pool) devices[dev].default_pool = new_pool_locked(dev, 1);
    *out = devices[dev].default_pool;
    pthread_mutex_unlock(&lock);
    return *out ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *props)
{
    count(FN_cuMemPoolCreate, 0);
    NEED_INIT();
    if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED) return CUDA_ERROR_INVALID_VALUE;
    if (props->location.type != CU_MEM_LOCATION_TYPE_DEVICE) return CUDA_ERROR_NOT_SUPPORTED;
    if (props->location.id < 0 || props->location.id >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    *pool = new_pool_locked(props->location.id, 0);
    pthread_mutex_unlock(&lock);
    return *pool ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

EXPORT CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    count(FN_cuMemPoolDestroy, 0);
    NEED_INIT();
    struct pool_free *out = NULL;
    pthread_mutex_lock(&lock);
    if (!pool_valid_locked(pool) || pool->is_default) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    pool_trim_locked_to(pool, 0, &out);
    for (struct CUmemPoolHandle_st **pp = &pools; *pp; pp = &(*pp)->next)
        if (*pp == pool) {
            *pp = pool->next;
            break;
        }
    /* Blocks still handed out stay valid (the real driver defers the destruction until
     * they are freed): they are orphaned and freed directly by cuMemFreeAsync. */
    for (unsigned i = 0; i < NBUCKETS; i++)
        for (struct blk *b = buckets[i]; b; b = b->next)
            if (b->pool == pool) b->pool = NULL;
    pthread_mutex_unlock(&lock);
    release_trimmed(out);
    free(pool);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t keep)
{
    count(FN_cuMemPoolTrimTo, 0);
    NEED_INIT();
    struct pool_free *out = NULL;
    pthread_mutex_lock(&lock);
    if (!pool_valid_locked(pool)) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    pool_trim_locked_to(pool, keep, &out);
    pthread_mutex_unlock(&lock);
    release_trimmed(out);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    count(FN_cuMemPoolSetAttribute, 0);
    NEED_INIT();
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    if (!pool_valid_locked(pool)) r = CUDA_ERROR_INVALID_VALUE;
    else if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) pool->threshold = (size_t) * (cuuint64_t *)value;
    else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) pool->reserved_high = pool->reserved;
    else if (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH) pool->used_high = pool->used;
    else if (attr < CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES || attr > CU_MEMPOOL_ATTR_USED_MEM_HIGH)
        r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    count(FN_cuMemPoolGetAttribute, 0);
    NEED_INIT();
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    cuuint64_t *v = value;
    if (!pool_valid_locked(pool)) r = CUDA_ERROR_INVALID_VALUE;
    else if (attr == CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) *v = pool->threshold;
    else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) *v = pool->reserved;
    else if (attr == CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH) *v = pool->reserved_high;
    else if (attr == CU_MEMPOOL_ATTR_USED_MEM_CURRENT) *v = pool->used;
    else if (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH) *v = pool->used_high;
    else if (attr >= CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES && attr <= CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES)
        *(int *)value = 1;
    else r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&lock);
    return r;
}

static CUresult pool_alloc(CUdeviceptr *dptr, size_t size, struct CUmemPoolHandle_st *pool)
{
    if (!dptr || size == 0) return CUDA_ERROR_INVALID_VALUE;
    size_t want = round_up(size, GRAN);
    pthread_mutex_lock(&lock);
    if (!pool_valid_locked(pool)) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* Reuse a freed block of the same charged size: no new memory from the device. */
    for (struct pool_free **pp = &pool->free_list; *pp; pp = &(*pp)->next) {
        struct pool_free *f = *pp;
        if (f->b->charged == want && f->b->len >= size) {
            *pp = f->next;
            struct blk *b = f->b;
            free(f);
            b->size = size;
            pool->used += b->charged;
            if (pool->used > pool->used_high) pool->used_high = pool->used;
            blk_insert_locked(b);
            pthread_mutex_unlock(&lock);
            *dptr = b->addr;
            return CUDA_SUCCESS;
        }
    }
    int dev = pool->dev;
    pthread_mutex_unlock(&lock);
    struct blk *b;
    CUresult r = alloc_blk(dev, size, BLK_POOL, 1, &b);
    if (r) return r;
    pthread_mutex_lock(&lock);
    b->pool = pool_valid_locked(pool) ? pool : NULL;
    if (b->pool) {
        pool->reserved += b->charged;
        pool->used += b->charged;
        if (pool->reserved > pool->reserved_high) pool->reserved_high = pool->reserved;
        if (pool->used > pool->used_high) pool->used_high = pool->used;
    }
    pthread_mutex_unlock(&lock);
    *dptr = b->addr;
    return CUDA_SUCCESS;
}

static CUresult default_pool_alloc(CUdeviceptr *dptr, size_t size)
{
    NEED_CTX(dev);
    CUmemoryPool p;
    pthread_mutex_lock(&lock);
    if (!devices[dev].default_pool) devices[dev].default_pool = new_pool_locked(dev, 1);
    p = devices[dev].default_pool;
    pthread_mutex_unlock(&lock);
    return p ? pool_alloc(dptr, size, p) : CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult pool_free(CUdeviceptr dptr)
{
    pthread_mutex_lock(&lock);
    struct blk *b = blk_take_locked(dptr, 1u << BLK_POOL);
    if (!b) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    struct CUmemPoolHandle_st *p = b->pool;
    struct pool_free *f = p ? malloc(sizeof *f) : NULL;
    if (f) {
        p->used -= b->charged;
        f->b = b;
        f->next = p->free_list;
        p->free_list = f;
        b = NULL;
    } else if (p) {
        p->used -= b->charged;
        p->reserved -= b->charged;
    }
    pthread_mutex_unlock(&lock);
    if (b) free_blk(b);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------- stream capture and graphs */
/* A graph's allocation: its address is fixed when the node is made (mapped host memory,
 * charged nothing); a launch makes it live, backed by the device's graph memory pool. */
struct galloc {
    uintptr_t addr;
    size_t size;
    int dev;
    int live;
    struct galloc *next;
};
static struct galloc *gallocs; /* every graph allocation, kept for good (addresses stay valid) */

struct gnode {
    int is_free;
    struct galloc *a;
};
#define GRAPH_NODES 64
struct CUgraph_st {
    struct gnode nodes[GRAPH_NODES];
    int n;
};
struct CUgraphExec_st {
    struct gnode nodes[GRAPH_NODES];
    int n;
};
struct CUgraphNode_st {
    int unused;
};
static struct CUgraphNode_st node_handles[GRAPH_NODES];

struct CUstream_st {
    int dev;
    int capturing;
    CUgraph graph;
    unsigned long long capture_id;
};
static unsigned long long next_capture_id = 1;

/* A stream handle that can capture: one cuStreamCreate made (legacy 0x1, per-thread 0x2
 * and the null stream are not simulated). */
static struct CUstream_st *capture_stream(CUstream s)
{
    return (uintptr_t)s > 2 ? s : NULL;
}

static struct galloc *galloc_find_locked(uintptr_t addr)
{
    for (struct galloc *a = gallocs; a; a = a->next)
        if (a->addr == addr) return a;
    return NULL;
}

static CUresult graph_add_alloc(CUgraph g, int dev, size_t size, CUdeviceptr *dptr)
{
    if (g->n == GRAPH_NODES) return CUDA_ERROR_OUT_OF_MEMORY;
    struct blk *b;
    CUresult r = alloc_blk(dev, size, BLK_GRAPH, 0, &b);
    if (r) return r;
    struct galloc *a = calloc(1, sizeof *a);
    if (!a) return CUDA_ERROR_OUT_OF_MEMORY;
    *a = (struct galloc){.addr = b->addr, .size = size, .dev = dev};
    pthread_mutex_lock(&lock);
    a->next = gallocs;
    gallocs = a;
    g->nodes[g->n++] = (struct gnode){0, a};
    pthread_mutex_unlock(&lock);
    *dptr = a->addr;
    return CUDA_SUCCESS;
}

static CUresult graph_add_free(CUgraph g, CUdeviceptr dptr)
{
    pthread_mutex_lock(&lock);
    struct galloc *a = galloc_find_locked(dptr);
    CUresult r = !a ? CUDA_ERROR_INVALID_VALUE : g->n == GRAPH_NODES ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS) g->nodes[g->n++] = (struct gnode){1, a};
    pthread_mutex_unlock(&lock);
    return r;
}

/* Stream-ordered allocation: into the graph of a capturing stream, else from a pool. */
static CUresult async_alloc(CUdeviceptr *dptr, size_t size, CUstream s, CUmemoryPool pool, int default_pool)
{
    struct CUstream_st *cs = capture_stream(s);
    if (cs && cs->capturing) {
        NEED_CTX(dev);
        if (!dptr || !size) return CUDA_ERROR_INVALID_VALUE;
        if (!default_pool) {
            pthread_mutex_lock(&lock);
            int ok = pool_valid_locked(pool);
            pthread_mutex_unlock(&lock);
            if (!ok) return CUDA_ERROR_INVALID_VALUE;
            dev = pool->dev;
        }
        return graph_add_alloc(cs->graph, dev, size, dptr);
    }
    return default_pool ? default_pool_alloc(dptr, size) : pool_alloc(dptr, size, pool);
}

/* A graph allocation freed outside its graph (cuMemFreeAsync, cuMemFree after a launch):
 * 1 when dptr is one. */
static int graph_free_outside(CUdeviceptr dptr, CUresult *r)
{
    pthread_mutex_lock(&lock);
    struct galloc *a = galloc_find_locked(dptr);
    if (a) {
        if (!a->live) *r = CUDA_ERROR_INVALID_VALUE;
        else {
            struct device *d = &devices[a->dev];
            a->live = 0;
            d->gm_used -= a->size;
            d->gm_used_rounded -= round_up(a->size, GRAN);
            *r = CUDA_SUCCESS;
        }
    }
    pthread_mutex_unlock(&lock);
    return a != NULL;
}

static CUresult async_free(CUdeviceptr dptr, CUstream s)
{
    struct CUstream_st *cs = capture_stream(s);
    if (cs && cs->capturing) return graph_add_free(cs->graph, dptr);
    CUresult r;
    if (graph_free_outside(dptr, &r)) return r;
    return pool_free(dptr);
}

static CUresult begin_capture(CUstream s, CUgraph into, CUstreamCaptureMode mode)
{
    NEED_INIT();
    struct CUstream_st *cs = capture_stream(s);
    if (!cs) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if ((unsigned)mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
    if (cs->capturing) return CUDA_ERROR_ILLEGAL_STATE;
    CUgraph g = into ? into : calloc(1, sizeof *g);
    if (!g) return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    cs->graph = g;
    cs->capture_id = next_capture_id++;
    cs->capturing = 1;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamBeginCapture(CUstream s)
{
    count(FN_cuStreamBeginCapture, 0);
    return begin_capture(s, NULL, CU_STREAM_CAPTURE_MODE_GLOBAL);
}
EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s)
{
    count(FN_cuStreamBeginCapture_ptsz, 0);
    return begin_capture(s, NULL, CU_STREAM_CAPTURE_MODE_GLOBAL);
}
EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode)
{
    count(FN_cuStreamBeginCapture_v2, 0);
    return begin_capture(s, NULL, mode);
}
EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode)
{
    count(FN_cuStreamBeginCapture_v2_ptsz, 0);
    return begin_capture(s, NULL, mode);
}
EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *deps,
                                            const CUgraphEdgeData *edges, size_t ndeps, CUstreamCaptureMode mode)
{
    count(FN_cuStreamBeginCaptureToGraph, 0);
    if (!g || (ndeps && !deps)) return CUDA_ERROR_INVALID_VALUE;
    return begin_capture(s, g, mode);
}
EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *deps,
                                                 const CUgraphEdgeData *edges, size_t ndeps, CUstreamCaptureMode mode)
{
    count(FN_cuStreamBeginCaptureToGraph_ptsz, 0);
    if (!g || (ndeps && !deps)) return CUDA_ERROR_INVALID_VALUE;
    return begin_capture(s, g, mode);
}

static CUresult end_capture(CUstream s, CUgraph *g)
{
    NEED_INIT();
    struct CUstream_st *cs = capture_stream(s);
    if (!g) return CUDA_ERROR_INVALID_VALUE;
    if (!cs || !cs->capturing) return CUDA_ERROR_ILLEGAL_STATE;
    pthread_mutex_lock(&lock);
    *g = cs->graph;
    cs->graph = NULL;
    cs->capturing = 0;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *g)
{
    count(FN_cuStreamEndCapture, 0);
    return end_capture(s, g);
}
EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g)
{
    count(FN_cuStreamEndCapture_ptsz, 0);
    return end_capture(s, g);
}

static CUresult capture_info(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *graph)
{
    NEED_INIT();
    if (!st) return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *cs = capture_stream(s);
    pthread_mutex_lock(&lock);
    int on = cs && cs->capturing;
    *st = on ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    if (on && id) *id = cs->capture_id;
    if (on && graph) *graph = cs->graph;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *st)
{
    count(FN_cuStreamIsCapturing, 0);
    return capture_info(s, st, NULL, NULL);
}
EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *st)
{
    count(FN_cuStreamIsCapturing_ptsz, 0);
    return capture_info(s, st, NULL, NULL);
}
/* FAKECUDA_NO_CAPTURE_INFO_V3 builds a driver without cuStreamGetCaptureInfo_v3 (neither
 * exported nor handed out by cuGetProcAddress), as drivers before CUDA 12.3 are and as a
 * driver shim that forwards only what it knows may be: a client then learns that a
 * stream captures (cuStreamIsCapturing) but not into which graph. */
#ifdef FAKECUDA_NO_CAPTURE_INFO_V3
#define EXPORT_INFO_V3 __attribute__((visibility("hidden")))
#else
#define EXPORT_INFO_V3 EXPORT
#endif
EXPORT_INFO_V3 CUresult cuStreamGetCaptureInfo_v3(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *graph,
                                          const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps)
{
    count(FN_cuStreamGetCaptureInfo_v3, 0);
    if (deps) *deps = NULL;
    if (edges) *edges = NULL;
    if (ndeps) *ndeps = 0;
    return capture_info(s, st, id, graph);
}
EXPORT_INFO_V3 CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream s, CUstreamCaptureStatus *st, cuuint64_t *id, CUgraph *graph,
                                               const CUgraphNode **deps, const CUgraphEdgeData **edges, size_t *ndeps)
{
    count(FN_cuStreamGetCaptureInfo_v3_ptsz, 0);
    if (deps) *deps = NULL;
    if (edges) *edges = NULL;
    if (ndeps) *ndeps = 0;
    return capture_info(s, st, id, graph);
}

EXPORT CUresult cuGraphCreate(CUgraph *g, unsigned int flags)
{
    count(FN_cuGraphCreate, 0);
    NEED_INIT();
    if (!g || flags) return CUDA_ERROR_INVALID_VALUE;
    *g = calloc(1, sizeof **g);
    return *g ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* The graph's allocations keep their addresses (an executable made from it may run). */
EXPORT CUresult cuGraphDestroy(CUgraph g)
{
    count(FN_cuGraphDestroy, 0);
    NEED_INIT();
    if (!g) return CUDA_ERROR_INVALID_VALUE;
    free(g);
    return CUDA_SUCCESS;
}

/* The address is handed out at once; the memory is charged when the graph is launched. */
EXPORT CUresult cuGraphAddMemAllocNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                       CUDA_MEM_ALLOC_NODE_PARAMS *params)
{
    count(FN_cuGraphAddMemAllocNode, params ? params->bytesize : 0);
    NEED_INIT();
    if (!node || !g || !params || (ndeps && !deps)) return CUDA_ERROR_INVALID_VALUE;
    int dev = params->poolProps.location.id;
    if (params->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE || dev < 0 || dev >= ndevices)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult r = graph_add_alloc(g, dev, params->bytesize, &params->dptr);
    if (r) return r;
    *node = &node_handles[g->n - 1];
    return CUDA_SUCCESS;
}

EXPORT CUresult cuGraphAddMemFreeNode(CUgraphNode *node, CUgraph g, const CUgraphNode *deps, size_t ndeps,
                                      CUdeviceptr dptr)
{
    count(FN_cuGraphAddMemFreeNode, 0);
    NEED_INIT();
    if (!node || !g || (ndeps && !deps)) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = graph_add_free(g, dptr);
    if (r) return r;
    *node = &node_handles[g->n - 1];
    return CUDA_SUCCESS;
}

static CUresult instantiate(CUgraphExec *e, CUgraph g)
{
    NEED_INIT();
    if (!e || !g) return CUDA_ERROR_INVALID_VALUE;
    struct CUgraphExec_st *x = calloc(1, sizeof *x);
    if (!x) return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    memcpy(x->nodes, g->nodes, sizeof g->nodes);
    x->n = g->n;
    pthread_mutex_unlock(&lock);
    *e = x;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphInstantiate(CUgraphExec *e, CUgraph g, CUgraphNode *err, char *log, size_t len)
{
    count(FN_cuGraphInstantiate, 0);
    if (log && len) log[0] = 0;
    return instantiate(e, g);
}
EXPORT CUresult cuGraphInstantiate_v2(CUgraphExec *e, CUgraph g, CUgraphNode *err, char *log, size_t len)
{
    count(FN_cuGraphInstantiate_v2, 0);
    if (log && len) log[0] = 0;
    return instantiate(e, g);
}
EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *e, CUgraph g, unsigned long long flags)
{
    count(FN_cuGraphInstantiateWithFlags, 0);
    return instantiate(e, g);
}
EXPORT CUresult cuGraphInstantiateWithParams(CUgraphExec *e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    count(FN_cuGraphInstantiateWithParams, 0);
    CUresult r = instantiate(e, g);
    if (p) p->result_out = r ? CUDA_GRAPH_INSTANTIATE_ERROR : CUDA_GRAPH_INSTANTIATE_SUCCESS;
    return r;
}
EXPORT CUresult cuGraphInstantiateWithParams_ptsz(CUgraphExec *e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *p)
{
    count(FN_cuGraphInstantiateWithParams_ptsz, 0);
    CUresult r = instantiate(e, g);
    if (p) p->result_out = r ? CUDA_GRAPH_INSTANTIATE_ERROR : CUDA_GRAPH_INSTANTIATE_SUCCESS;
    return r;
}

/* Runs the graph's memory nodes in order: an allocation becomes live (its bytes count as
 * used), a free ends it. The device's graph pool grows, in 2 MiB steps, to hold the most
 * that is live at once, each allocation rounded up to 2 MiB; it keeps that reserve (and
 * the device keeps it charged) after the frees, until cuDeviceGraphMemTrim. */
static CUresult launch(CUgraphExec x)
{
    NEED_CTX(cur);
    if (!x) return CUDA_ERROR_INVALID_VALUE;
    size_t peak[MAX_DEVICES], live[MAX_DEVICES];
    pthread_mutex_lock(&lock);
    for (int d = 0; d < ndevices; d++) peak[d] = live[d] = devices[d].gm_used_rounded;
    for (int i = 0; i < x->n; i++) {
        struct galloc *a = x->nodes[i].a;
        size_t r = round_up(a->size, GRAN);
        if (x->nodes[i].is_free) live[a->dev] -= r;
        else if (a->live) { /* not freed since the last launch */
            pthread_mutex_unlock(&lock);
            return CUDA_ERROR_INVALID_VALUE;
        } else if ((live[a->dev] += r) > peak[a->dev]) peak[a->dev] = live[a->dev];
    }
    for (int d = 0; d < ndevices; d++)
        if (peak[d] > devices[d].gm_reserved &&
            peak[d] - devices[d].gm_reserved > devices[d].total - devices[d].used) {
            pthread_mutex_unlock(&lock);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
    for (int d = 0; d < ndevices; d++) {
        struct device *dv = &devices[d];
        if (peak[d] <= dv->gm_reserved) continue;
        charge_locked(d, peak[d] - dv->gm_reserved, 0);
        dv->gm_reserved = peak[d];
        if (dv->gm_reserved > dv->gm_reserved_high) dv->gm_reserved_high = dv->gm_reserved;
    }
    for (int i = 0; i < x->n; i++) {
        struct galloc *a = x->nodes[i].a;
        struct device *dv = &devices[a->dev];
        if (x->nodes[i].is_free) {
            if (!a->live) continue;
            a->live = 0;
            dv->gm_used -= a->size;
            dv->gm_used_rounded -= round_up(a->size, GRAN);
        } else {
            a->live = 1;
            dv->gm_used += a->size;
            dv->gm_used_rounded += round_up(a->size, GRAN);
            if (dv->gm_used > dv->gm_used_high) dv->gm_used_high = dv->gm_used;
        }
    }
    pthread_mutex_unlock(&lock);
    (void)cur;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuGraphLaunch(CUgraphExec x, CUstream s)
{
    count(FN_cuGraphLaunch, 0);
    return launch(x);
}
EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec x, CUstream s)
{
    count(FN_cuGraphLaunch_ptsz, 0);
    return launch(x);
}

EXPORT CUresult cuGraphExecDestroy(CUgraphExec x)
{
    count(FN_cuGraphExecDestroy, 0);
    NEED_INIT();
    if (!x) return CUDA_ERROR_INVALID_VALUE;
    free(x);
    return CUDA_SUCCESS;
}

/* Gives the device back what its graph pool holds beyond its live allocations. */
EXPORT CUresult cuDeviceGraphMemTrim(CUdevice dev)
{
    count(FN_cuDeviceGraphMemTrim, 0);
    NEED_INIT();
    if (dev < 0 || dev >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
    pthread_mutex_lock(&lock);
    struct device *d = &devices[dev];
    uncharge_locked(dev, d->gm_reserved - d->gm_used_rounded, 0);
    d->gm_reserved = d->gm_used_rounded;
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDeviceGetGraphMemAttribute(CUdevice dev, CUgraphMem_attribute attr, void *value)
{
    count(FN_cuDeviceGetGraphMemAttribute, 0);
    NEED_INIT();
    if (dev < 0 || dev >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    cuuint64_t v = 0;
    pthread_mutex_lock(&lock);
    struct device *d = &devices[dev];
    switch (attr) {
    case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: v = d->gm_used; break;
    case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH: v = d->gm_used_high; break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT: v = d->gm_reserved; break;
    case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH: v = d->gm_reserved_high; break;
    default: r = CUDA_ERROR_INVALID_VALUE;
    }
    pthread_mutex_unlock(&lock);
    if (r == CUDA_SUCCESS) memcpy(value, &v, sizeof v);
    return r;
}

/* Only the high-water marks can be set, and only to 0 (they restart from the current). */
EXPORT CUresult cuDeviceSetGraphMemAttribute(CUdevice dev, CUgraphMem_attribute attr, void *value)
{
    count(FN_cuDeviceSetGraphMemAttribute, 0);
    NEED_INIT();
    if (dev < 0 || dev >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
    cuuint64_t v = 1;
    if (value) memcpy(&v, value, sizeof v);
    if (v != 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct device *d = &devices[dev];
    CUresult r = CUDA_SUCCESS;
    if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH) d->gm_used_high = d->gm_used;
    else if (attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) d->gm_reserved_high = d->gm_reserved;
    else r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream s)
{
    count(FN_cuMemAllocAsync, size);
    return async_alloc(dptr, size, s, NULL, 1);
}
EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream s)
{
    count(FN_cuMemAllocAsync_ptsz, size);
    return async_alloc(dptr, size, s, NULL, 1);
}
EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s)
{
    count(FN_cuMemAllocFromPoolAsync, size);
    NEED_INIT();
    return async_alloc(dptr, size, s, pool, 0);
}
EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t size, CUmemoryPool pool, CUstream s)
{
    count(FN_cuMemAllocFromPoolAsync_ptsz, size);
    NEED_INIT();
    return async_alloc(dptr, size, s, pool, 0);
}
EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s)
{
    count(FN_cuMemFreeAsync, 0);
    NEED_INIT();
    return async_free(dptr, s);
}
EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s)
{
    count(FN_cuMemFreeAsync_ptsz, 0);
    NEED_INIT();
    return async_free(dptr, s);
}

/* ------------------------------------------------------------------ streams and syncs */
EXPORT CUresult cuStreamCreate(CUstream *ps, unsigned int flags)
{
    count(FN_cuStreamCreate, 0);
    NEED_CTX(dev);
    if (!ps) return CUDA_ERROR_INVALID_VALUE;
    struct CUstream_st *s = calloc(1, sizeof *s);
    if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
    s->dev = dev;
    *ps = s;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s)
{
    count(FN_cuStreamDestroy_v2, 0);
    NEED_INIT();
    if (!s) return CUDA_ERROR_INVALID_HANDLE;
    free(s);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize(CUstream s)
{
    count(FN_cuStreamSynchronize, 0);
    NEED_INIT();
    sync_pools();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s)
{
    count(FN_cuStreamSynchronize_ptsz, 0);
    NEED_INIT();
    sync_pools();
    return CUDA_SUCCESS;
}

EXPORT CUresult cuCtxSynchronize(void)
{
    count(FN_cuCtxSynchronize, 0);
    NEED_CTX(dev);
    sync_pools();
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------ linear allocations */
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size)
{
    count(FN_cuMemAlloc_v2, size);
    NEED_CTX(dev);
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    struct blk *b;
    CUresult r = alloc_blk(dev, size, BLK_DEVICE, 1, &b);
    if (r == CUDA_SUCCESS) *dptr = b->addr;
    return r;
}

EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                                   unsigned int elem)
{
    count(FN_cuMemAllocPitch_v2, 0);
    NEED_CTX(dev);
    if (!dptr || !pitch || !width || !height || (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t p = round_up(width, 512);
    struct blk *b;
    atomic_fetch_add(&fn_stats[FN_cuMemAllocPitch_v2].bytes, p * height);
    CUresult r = alloc_blk(dev, p * height, BLK_DEVICE, 1, &b);
    if (r) return r;
    *dptr = b->addr;
    *pitch = p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t size, unsigned int flags)
{
    count(FN_cuMemAllocManaged, size);
    NEED_CTX(dev);
    if (!dptr || (flags != CU_MEM_ATTACH_GLOBAL && flags != 2)) return CUDA_ERROR_INVALID_VALUE;
    struct blk *b;
    CUresult r = alloc_blk(dev, size, BLK_MANAGED, 0, &b);
    if (r == CUDA_SUCCESS) *dptr = b->addr;
    return r;
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    count(FN_cuMemFree_v2, 0);
    NEED_INIT();
    pthread_mutex_lock(&lock);
    struct blk *b = blk_take_locked(dptr, (1u << BLK_DEVICE) | (1u << BLK_MANAGED));
    pthread_mutex_unlock(&lock);
    if (b) {
        size_t len = b->len;
        free_blk(b);
        hold_point((uintptr_t)dptr, len);
        return CUDA_SUCCESS;
    }
    /* cuMemFree also takes stream-ordered and graph allocations (after synchronising). */
    CUresult r;
    if (graph_free_outside(dptr, &r)) return r;
    return pool_free(dptr);
}

static CUresult host_alloc(void **pp, size_t size)
{
    NEED_CTX(dev);
    if (!pp) return CUDA_ERROR_INVALID_VALUE;
    struct blk *b;
    CUresult r = alloc_blk(dev, size, BLK_HOST, 0, &b);
    if (r == CUDA_SUCCESS) *pp = (void *)b->addr;
    return r;
}

EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t size)
{
    count(FN_cuMemAllocHost_v2, size);
    return host_alloc(pp, size);
}

EXPORT CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
    count(FN_cuMemHostAlloc, size);
    if (flags & ~0xfu) return CUDA_ERROR_INVALID_VALUE;
    return host_alloc(pp, size);
}

EXPORT CUresult cuMemFreeHost(void *p)
{
    count(FN_cuMemFreeHost, 0);
    NEED_INIT();
    pthread_mutex_lock(&lock);
    struct blk *b = blk_take_locked((uintptr_t)p, 1u << BLK_HOST);
    pthread_mutex_unlock(&lock);
    if (!b) return CUDA_ERROR_INVALID_VALUE;
    free_blk(b);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemHostRegister_v2(void *p, size_t size, unsigned int flags)
{
    count(FN_cuMemHostRegister_v2, size);
    NEED_CTX(dev);
    if (!p || !size) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct blk *old = blk_containing_locked((uintptr_t)p, 1u << BLK_REGISTERED);
    pthread_mutex_unlock(&lock);
    if (old) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    struct blk *b = calloc(1, sizeof *b);
    if (!b) return CUDA_ERROR_OUT_OF_MEMORY;
    *b = (struct blk){.addr = (uintptr_t)p, .size = size, .dev = dev, .kind = BLK_REGISTERED, .memfd = -1};
    pthread_mutex_lock(&lock);
    blk_insert_locked(b);
    pthread_mutex_unlock(&lock);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemHostUnregister(void *p)
{
    count(FN_cuMemHostUnregister, 0);
    NEED_INIT();
    pthread_mutex_lock(&lock);
    struct blk *b = blk_take_locked((uintptr_t)p, 1u << BLK_REGISTERED);
    pthread_mutex_unlock(&lock);
    if (!b) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    free(b);
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------------- copies */
EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
    count(FN_cuMemcpyHtoD_v2, n);
    NEED_INIT();
    if (n && (!dst || !src)) return CUDA_ERROR_INVALID_VALUE;
    if (n) memmove((void *)dst, src, n);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
    count(FN_cuMemcpyDtoH_v2, n);
    NEED_INIT();
    if (n && (!dst || !src)) return CUDA_ERROR_INVALID_VALUE;
    if (n) memmove(dst, (const void *)src, n);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    count(FN_cuMemcpyDtoD_v2, n);
    NEED_INIT();
    if (n && (!dst || !src)) return CUDA_ERROR_INVALID_VALUE;
    if (n) memmove((void *)dst, (const void *)src, n);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
    count(FN_cuMemcpy, n);
    NEED_INIT();
    if (n && (!dst || !src)) return CUDA_ERROR_INVALID_VALUE;
    if (n) memmove((void *)dst, (const void *)src, n);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char uc, size_t n)
{
    count(FN_cuMemsetD8_v2, n);
    NEED_INIT();
    if (n && !dst) return CUDA_ERROR_INVALID_VALUE;
    if (n) memset((void *)dst, uc, n);
    return CUDA_SUCCESS;
}

/* -------------------------------------------------------------------------------- VMM */
struct vmm_handle {
    int memfd;
    size_t size;
    int dev;        /* device charged, -1: none (host or imported) */
    size_t charged; /* bytes */
    int refs;       /* cuMemCreate/import 1, +1 per retain, -1 per release */
    int maps;       /* mappings alive */
    CUmemAllocationProp prop;
    struct vmm_handle *next;
};
struct reservation {
    uintptr_t addr;
    size_t size;
    struct reservation *next;
};
struct mapping {
    uintptr_t addr;
    size_t size;
    struct vmm_handle *h;
    struct mapping *next;
};
static struct vmm_handle *handles;
static struct reservation *reservations;
static struct mapping *mappings;

static struct vmm_handle *handle_find_locked(CUmemGenericAllocationHandle hv)
{
    for (struct vmm_handle *h = handles; h; h = h->next)
        if ((CUmemGenericAllocationHandle)(uintptr_t)h == hv) return h;
    return NULL;
}

/* Drops the handle once nothing refers to it: the device gets its memory back. */
static void handle_maybe_free_locked(struct vmm_handle *h)
{
    if (h->refs > 0 || h->maps > 0) return;
    for (struct vmm_handle **pp = &handles; *pp; pp = &(*pp)->next)
        if (*pp == h) {
            *pp = h->next;
            break;
        }
    if (h->dev >= 0) uncharge_locked(h->dev, h->charged, 0);
    close(h->memfd);
    free(h);
}

static CUresult new_handle(int memfd, size_t size, int dev, size_t charged, const CUmemAllocationProp *prop,
                           CUmemGenericAllocationHandle *out)
{
    struct vmm_handle *h = calloc(1, sizeof *h);
    if (!h) return CUDA_ERROR_OUT_OF_MEMORY;
    *h = (struct vmm_handle){.memfd = memfd, .size = size, .dev = dev, .charged = charged, .refs = 1};
    if (prop) h->prop = *prop;
    pthread_mutex_lock(&lock);
    h->next = handles;
    handles = h;
    pthread_mutex_unlock(&lock);
    *out = (CUmemGenericAllocationHandle)(uintptr_t)h;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemGetAllocationGranularity(size_t *gran, const CUmemAllocationProp *prop,
                                              CUmemAllocationGranularity_flags option)
{
    count(FN_cuMemGetAllocationGranularity, 0);
    NEED_INIT();
    if (!gran || !prop) return CUDA_ERROR_INVALID_VALUE;
    *gran = GRAN;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                            unsigned long long flags)
{
    count(FN_cuMemCreate, size);
    NEED_INIT();
    if (!handle || !prop || size == 0 || size % GRAN || flags || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = -1;
    switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        if (prop->location.id < 0 || prop->location.id >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
        dev = prop->location.id;
        break;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
        break; /* host memory: the device is not charged */
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
    if (prop->requestedHandleTypes & ~(unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
    if (dev >= 0) {
        pthread_mutex_lock(&lock);
        CUresult r = charge_locked(dev, size, 0);
        pthread_mutex_unlock(&lock);
        if (r) return r;
    }
    int fd = memfd_create("fakecuda-mem", MFD_CLOEXEC);
    if (fd < 0 || ftruncate(fd, (off_t)size) < 0) {
        if (fd >= 0) close(fd);
        pthread_mutex_lock(&lock);
        if (dev >= 0) uncharge_locked(dev, size, 0);
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult r = new_handle(fd, size, dev, dev >= 0 ? size : 0, prop, handle);
    if (r) {
        close(fd);
        pthread_mutex_lock(&lock);
        if (dev >= 0) uncharge_locked(dev, size, 0);
        pthread_mutex_unlock(&lock);
    }
    return r;
}

EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle hv)
{
    count(FN_cuMemRelease, 0);
    NEED_INIT();
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct vmm_handle *h = handle_find_locked(hv);
    if (!h || h->refs <= 0) r = CUDA_ERROR_INVALID_VALUE;
    else {
        h->refs--;
        handle_maybe_free_locked(h);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t align, CUdeviceptr addr,
                                    unsigned long long flags)
{
    count(FN_cuMemAddressReserve, size);
    NEED_INIT();
    if (!ptr || size == 0 || size % GRAN || (align && (align & (align - 1)))) return CUDA_ERROR_INVALID_VALUE;
    if (align < GRAN) align = GRAN;
    size_t len = size + align;
    void *p = mmap((void *)addr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    uintptr_t start = round_up((uintptr_t)p, align);
    if (start > (uintptr_t)p) munmap(p, start - (uintptr_t)p);
    uintptr_t end = (uintptr_t)p + len;
    if (end > start + size) munmap((void *)(start + size), end - (start + size));
    struct reservation *rv = malloc(sizeof *rv);
    if (!rv) {
        munmap((void *)start, size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    pthread_mutex_lock(&lock);
    *rv = (struct reservation){.addr = start, .size = size, .next = reservations};
    reservations = rv;
    pthread_mutex_unlock(&lock);
    *ptr = start;
    return CUDA_SUCCESS;
}

static int overlaps(uintptr_t a, size_t an, uintptr_t b, size_t bn)
{
    return a < b + bn && b < a + an;
}

EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    count(FN_cuMemAddressFree, size);
    NEED_INIT();
    pthread_mutex_lock(&lock);
    struct reservation **pp = &reservations;
    while (*pp && !((*pp)->addr == ptr && (*pp)->size == size)) pp = &(*pp)->next;
    struct reservation *rv = *pp;
    int mapped = 0;
    for (struct mapping *m = mappings; m; m = m->next)
        if (overlaps(m->addr, m->size, ptr, size)) mapped = 1;
    if (rv && !mapped) *pp = rv->next;
    pthread_mutex_unlock(&lock);
    if (!rv || mapped) return CUDA_ERROR_INVALID_VALUE;
    munmap((void *)ptr, size);
    free(rv);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle hv,
                         unsigned long long flags)
{
    count(FN_cuMemMap, size);
    NEED_INIT();
    if (!ptr || !size || flags || ptr % GRAN || size % GRAN || offset % GRAN) return CUDA_ERROR_INVALID_VALUE;
    struct mapping *m = malloc(sizeof *m);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct vmm_handle *h = handle_find_locked(hv);
    int inside = 0;
    for (struct reservation *rv = reservations; rv; rv = rv->next)
        if (ptr >= rv->addr && ptr + size <= rv->addr + rv->size) inside = 1;
    if (!h || h->refs <= 0 || offset + size > h->size || !inside) r = CUDA_ERROR_INVALID_VALUE;
    for (struct mapping *o = mappings; o && r == CUDA_SUCCESS; o = o->next)
        if (overlaps(o->addr, o->size, ptr, size)) r = CUDA_ERROR_ALREADY_MAPPED;
    if (r == CUDA_SUCCESS) {
        /* Mapped, but inaccessible until cuMemSetAccess, as on the device. */
        void *p = mmap((void *)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->memfd, (off_t)offset);
        if (p == MAP_FAILED) r = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (r == CUDA_SUCCESS) {
        *m = (struct mapping){.addr = ptr, .size = size, .h = h, .next = mappings};
        mappings = m;
        h->maps++;
    }
    pthread_mutex_unlock(&lock);
    if (r) free(m);
    return r;
}

EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    count(FN_cuMemUnmap, size);
    NEED_INIT();
    if (!ptr || !size) return CUDA_ERROR_INVALID_VALUE;
    int found = 0;
    pthread_mutex_lock(&lock);
    for (struct mapping **pp = &mappings; *pp;) {
        struct mapping *m = *pp;
        if (m->addr >= ptr && m->addr + m->size <= ptr + size) {
            *pp = m->next;
            /* Back to a reserved, inaccessible range. */
            mmap((void *)m->addr, m->size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
            m->h->maps--;
            handle_maybe_free_locked(m->h);
            free(m);
            found = 1;
        } else
            pp = &m->next;
    }
    pthread_mutex_unlock(&lock);
    return found ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t n)
{
    count(FN_cuMemSetAccess, size);
    NEED_INIT();
    if (!ptr || !size || !desc || !n) return CUDA_ERROR_INVALID_VALUE;
    int prot = PROT_NONE;
    for (size_t i = 0; i < n; i++) {
        if (desc[i].location.type == CU_MEM_LOCATION_TYPE_DEVICE &&
            (desc[i].location.id < 0 || desc[i].location.id >= ndevices))
            return CUDA_ERROR_INVALID_DEVICE;
        if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE) prot = PROT_READ | PROT_WRITE;
        else if (desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READ && prot == PROT_NONE) prot = PROT_READ;
    }
    size_t covered = 0;
    pthread_mutex_lock(&lock);
    for (struct mapping *m = mappings; m; m = m->next)
        if (m->addr >= ptr && m->addr + m->size <= ptr + size) covered += m->size;
    pthread_mutex_unlock(&lock);
    if (covered != size) return CUDA_ERROR_INVALID_VALUE;
    return mprotect((void *)ptr, size, prot) ? CUDA_ERROR_INVALID_VALUE : CUDA_SUCCESS;
}

EXPORT CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *out, void *addr)
{
    count(FN_cuMemRetainAllocationHandle, 0);
    NEED_INIT();
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    for (struct mapping *m = mappings; m; m = m->next)
        if ((uintptr_t)addr >= m->addr && (uintptr_t)addr < m->addr + m->size) {
            m->h->refs++;
            *out = (CUmemGenericAllocationHandle)(uintptr_t)m->h;
            r = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemExportToShareableHandle(void *shareable, CUmemGenericAllocationHandle hv,
                                             CUmemAllocationHandleType type, unsigned long long flags)
{
    count(FN_cuMemExportToShareableHandle, 0);
    NEED_INIT();
    if (!shareable || flags) return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct vmm_handle *h = handle_find_locked(hv);
    if (!h || !(h->prop.requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)) r = CUDA_ERROR_INVALID_VALUE;
    else {
        int fd = fcntl(h->memfd, F_DUPFD_CLOEXEC, 0);
        if (fd < 0) r = CUDA_ERROR_OUT_OF_MEMORY;
        else *(int *)shareable = fd;
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *out, void *os_handle,
                                               CUmemAllocationHandleType type)
{
    count(FN_cuMemImportFromShareableHandle, 0);
    NEED_INIT();
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
    int fd = fcntl((int)(intptr_t)os_handle, F_DUPFD_CLOEXEC, 0);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size <= 0) {
        if (fd >= 0) close(fd);
        return CUDA_ERROR_INVALID_VALUE;
    }
    /* A peer's memory: mapping it costs this device nothing. */
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR};
    CUresult r = new_handle(fd, (size_t)st.st_size, -1, 0, &prop, out);
    if (r) close(fd);
    return r;
}

/* ----------------------------------------------------------------------------- legacy IPC */
#define IPC_MAGIC 0x4350494b41465f31ull
struct ipc_payload {
    uint64_t magic;
    int32_t pid;
    int32_t fd;
    uint64_t size;
};
_Static_assert(sizeof(struct ipc_payload) <= CU_IPC_HANDLE_SIZE, "IPC payload fits the handle");

EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr dptr)
{
    count(FN_cuIpcGetMemHandle, 0);
    NEED_INIT();
    if (!handle) return CUDA_ERROR_INVALID_VALUE;
    CUresult r = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    struct blk *b = blk_containing_locked(dptr, (1u << BLK_DEVICE) | (1u << BLK_POOL));
    if (!b) r = CUDA_ERROR_INVALID_VALUE;
    else if (b->memfd < 0) {
        /* Move the allocation onto a memfd in place, so another process can map it. */
        int fd = memfd_create("fakecuda-ipc", MFD_CLOEXEC);
        void *tmp = MAP_FAILED;
        if (fd >= 0 && ftruncate(fd, (off_t)b->len) == 0)
            tmp = mmap(NULL, b->len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        if (tmp == MAP_FAILED) r = CUDA_ERROR_OUT_OF_MEMORY;
        else {
            memcpy(tmp, (void *)b->addr, b->len);
            munmap(tmp, b->len);
            if (mmap((void *)b->addr, b->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED)
                r = CUDA_ERROR_OUT_OF_MEMORY;
        }
        if (r == CUDA_SUCCESS) b->memfd = fd;
        else if (fd >= 0) close(fd);
    }
    if (r == CUDA_SUCCESS) {
        struct ipc_payload pl = {.magic = IPC_MAGIC, .pid = (int32_t)getpid(), .fd = b->memfd, .size = b->len};
        memset(handle, 0, sizeof *handle);
        memcpy(handle->reserved, &pl, sizeof pl);
    }
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags)
{
    count(FN_cuIpcOpenMemHandle_v2, 0);
    NEED_CTX(dev);
    struct ipc_payload pl;
    memcpy(&pl, handle.reserved, sizeof pl);
    if (!pdptr || pl.magic != IPC_MAGIC) return CUDA_ERROR_INVALID_VALUE;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pl.pid, (int)pl.fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) return CUDA_ERROR_INVALID_VALUE;
    void *p = mmap(NULL, pl.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    struct blk *b = calloc(1, sizeof *b);
    if (!b) {
        munmap(p, pl.size);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *b = (struct blk){.addr = (uintptr_t)p, .len = pl.size, .size = pl.size, .dev = dev, .kind = BLK_IPC, .memfd = -1};
    pthread_mutex_lock(&lock);
    blk_insert_locked(b);
    pthread_mutex_unlock(&lock);
    *pdptr = (CUdeviceptr)(uintptr_t)p;
    return CUDA_SUCCESS;
}

EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    count(FN_cuIpcCloseMemHandle, 0);
    NEED_INIT();
    pthread_mutex_lock(&lock);
    struct blk *b = blk_take_locked(dptr, 1u << BLK_IPC);
    pthread_mutex_unlock(&lock);
    if (!b) return CUDA_ERROR_INVALID_VALUE;
    free_blk(b);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuMulticastCreate(CUmemGenericAllocationHandle *mc, const void *prop)
{
    count(FN_cuMulticastCreate, 0);
    NEED_INIT();
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* ------------------------------------------------------------------------------ arrays */
/* One object stands for both an array and a mipmapped array: a handle, and what it costs. */
struct fake_array {
    unsigned magic;
    int dev;
    size_t charged;
};
#define ARRAY_MAGIC 0x41525259u    /* "ARRY" */
#define MIPMAP_MAGIC 0x4d49504du   /* "MIPM" */

static size_t format_size(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT: return 4;
    default: return 0;
    }
}

static size_t max1(size_t v)
{
    return v ? v : 1;
}

/* Bytes of a level-0 extent and `levels` levels; 0: a descriptor the driver refuses. */
static size_t array_size(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    size_t elem = format_size(d->Format);
    unsigned ch = d->NumChannels;
    if (!elem || (ch != 1 && ch != 2 && ch != 4) || !d->Width || (d->Depth && !d->Height)) return 0;
    if (d->Flags & ~(unsigned)(CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_SURFACE_LDST | CUDA_ARRAY3D_CUBEMAP |
                               CUDA_ARRAY3D_SPARSE))
        return 0;
    int layered = (d->Flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP)) != 0;
    size_t side = d->Width > d->Height ? d->Width : d->Height;
    if (!layered && d->Depth > side) side = d->Depth;
    unsigned most = 1;
    while ((side >> most) != 0) most++;
    if (levels == 0) levels = 1;
    if (levels > most) levels = most;
    size_t total = 0;
    for (unsigned l = 0; l < levels; l++) {
        size_t w = max1(d->Width >> l), h = max1(d->Height >> l);
        size_t dp = layered ? max1(d->Depth) : max1(d->Depth >> l);
        total += elem * ch * w * h * dp;
    }
    return total;
}

static CUresult array_new(unsigned magic, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels, void **out)
{
    NEED_CTX(dev);
    if (!out || !d) return CUDA_ERROR_INVALID_VALUE;
    size_t bytes = array_size(d, levels);
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    /* A sparse array takes its memory when pages are mapped into it, which the fake does not do. */
    if (d->Flags & CUDA_ARRAY3D_SPARSE) bytes = 0;
    struct fake_array *a = malloc(sizeof *a);
    if (!a) return CUDA_ERROR_OUT_OF_MEMORY;
    size_t charged = round_up(bytes, GRAN);
    pthread_mutex_lock(&lock);
    CUresult r = charged < bytes ? CUDA_ERROR_OUT_OF_MEMORY : charged ? charge_locked(dev, charged, 0) : CUDA_SUCCESS;
    pthread_mutex_unlock(&lock);
    if (r) {
        free(a);
        return r;
    }
    *a = (struct fake_array){.magic = magic, .dev = dev, .charged = charged};
    *out = a;
    return CUDA_SUCCESS;
}

static CUresult array_free(unsigned magic, void *h)
{
    NEED_INIT();
    struct fake_array *a = h;
    if (!a || a->magic != magic) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    uncharge_locked(a->dev, a->charged, 0);
    pthread_mutex_unlock(&lock);
    a->magic = 0;
    free(a);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuArrayCreate_v2(CUarray *arr, const CUDA_ARRAY_DESCRIPTOR *d)
{
    count(FN_cuArrayCreate_v2, 0);
    if (!d) return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d3 = {.Width = d->Width, .Height = d->Height, .Format = d->Format,
                                  .NumChannels = d->NumChannels};
    return array_new(ARRAY_MAGIC, &d3, 1, (void **)arr);
}

EXPORT CUresult cuArray3DCreate_v2(CUarray *arr, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    count(FN_cuArray3DCreate_v2, 0);
    return array_new(ARRAY_MAGIC, d, 1, (void **)arr);
}

EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *arr, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned int levels)
{
    count(FN_cuMipmappedArrayCreate, 0);
    return array_new(MIPMAP_MAGIC, d, levels, (void **)arr);
}

EXPORT CUresult cuArrayDestroy(CUarray arr)
{
    count(FN_cuArrayDestroy, 0);
    return array_free(ARRAY_MAGIC, arr);
}

EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray arr)
{
    count(FN_cuMipmappedArrayDestroy, 0);
    return array_free(MIPMAP_MAGIC, arr);
}

/* ----------------------------------------------------------------------------- limits */
/* The limits are the device's primary context's (a context made by cuCtxCreate shares
 * them: a deviation). The defaults are those the real driver has on an H200:
 * stack 1024 B per thread, printf FIFO 1 MiB, malloc heap 8 MiB. */
EXPORT CUresult cuCtxGetLimit(size_t *value, CUlimit limit)
{
    count(FN_cuCtxGetLimit, 0);
    NEED_CTX(dev);
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_SUCCESS;
    if (limit == CU_LIMIT_STACK_SIZE) *value = devices[dev].stack;
    else if (limit == CU_LIMIT_PRINTF_FIFO_SIZE) *value = devices[dev].fifo;
    else if (limit == CU_LIMIT_MALLOC_HEAP_SIZE) *value = devices[dev].heap;
    else r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
    count(FN_cuCtxSetLimit, value);
    NEED_CTX(dev);
    pthread_mutex_lock(&lock);
    struct device *d = &devices[dev];
    CUresult r;
    if (limit == CU_LIMIT_STACK_SIZE) r = set_limits_locked(dev, value, d->fifo, d->heap);
    else if (limit == CU_LIMIT_PRINTF_FIFO_SIZE) r = set_limits_locked(dev, d->stack, value, d->heap);
    else if (limit == CU_LIMIT_MALLOC_HEAP_SIZE) r = set_limits_locked(dev, d->stack, d->fifo, value);
    else r = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attrib, CUdevice dev)
{
    count(FN_cuDeviceGetAttribute, 0);
    NEED_INIT();
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= ndevices) return CUDA_ERROR_INVALID_DEVICE;
    if (attrib == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT) *value = FAKECUDA_SMS;
    else if (attrib == CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR) *value = FAKECUDA_THREADS_PER_SM;
    else return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

/* ----------------------------------------------------------------------------- modules */
struct CUmod_st {
    int dev;
    size_t bytes;
    size_t local_bytes; /* local memory per thread its kernel needs */
    uint64_t uses;      /* FAKECUDA_USES_*: what its kernel calls on the device */
};

/* Loading charges the image's bytes as hidden device memory, as a real load puts code and
 * data on the device that no allocation call shows: an image of struct fakecuda_image
 * (from memory or a file) says how much, any other FAKECUDA_MODULE_BYTES_DEFAULT. */
static CUresult load_image(CUmodule *mod, const void *image)
{
    const struct fakecuda_image *img = image;
    size_t bytes = (img && img->magic == FAKECUDA_IMAGE_MAGIC) ? img->bytes : FAKECUDA_MODULE_BYTES_DEFAULT;
    NEED_CTX(dev);
    if (!mod || !image) return CUDA_ERROR_INVALID_VALUE;
    struct CUmod_st *m = malloc(sizeof *m);
    if (!m) return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    CUresult r = charge_locked(dev, bytes, 1);
    pthread_mutex_unlock(&lock);
    if (r) {
        free(m);
        return r;
    }
    *m = (struct CUmod_st){.dev = dev, .bytes = bytes,
                           .local_bytes = (img && img->magic == FAKECUDA_IMAGE_MAGIC) ? img->local_bytes : 0,
                           .uses = (img && img->magic == FAKECUDA_IMAGE_MAGIC) ? img->uses : 0};
    *mod = m;
    return CUDA_SUCCESS;
}

/* A file holds the image, as a .cubin does: read whole (what a real load reads too). */
static CUresult load_file(CUmodule *mod, const char *path)
{
    if (!mod || !path) return CUDA_ERROR_INVALID_VALUE;
    FILE *f = fopen(path, "rb");
    if (!f) return CUDA_ERROR_FILE_NOT_FOUND;
    struct fakecuda_image img = {0};
    size_t n = fread(&img, 1, sizeof img, f);
    fclose(f);
    if (n == 0) return CUDA_ERROR_INVALID_IMAGE;
    return load_image(mod, &img);
}

EXPORT CUresult cuModuleLoadData(CUmodule *mod, const void *image)
{
    count(FN_cuModuleLoadData, 0);
    return load_image(mod, image);
}

EXPORT CUresult cuModuleLoad(CUmodule *mod, const char *fname)
{
    count(FN_cuModuleLoad, 0);
    return load_file(mod, fname);
}

EXPORT CUresult cuModuleLoadDataEx(CUmodule *mod, const void *image, unsigned n, CUjit_option *o, void **v)
{
    count(FN_cuModuleLoadDataEx, 0);
    return load_image(mod, image);
}

EXPORT CUresult cuModuleLoadFatBinary(CUmodule *mod, const void *fatbin)
{
    count(FN_cuModuleLoadFatBinary, 0);
    return load_image(mod, fatbin);
}

/* A library is loaded into every context at once in the real driver (context-independent
 * loading); here into the current one, which is the one the tests use. */
EXPORT CUresult cuLibraryLoadData(CUlibrary *lib, const void *code, CUjit_option *jo, void **jv, unsigned nj,
                                  CUlibraryOption *lo, void **lv, unsigned nl)
{
    count(FN_cuLibraryLoadData, 0);
    return load_image((CUmodule *)(void *)lib, code);
}

EXPORT CUresult cuLibraryLoadFromFile(CUlibrary *lib, const char *file, CUjit_option *jo, void **jv,
                                      unsigned nj, CUlibraryOption *lo, void **lv, unsigned nl)
{
    count(FN_cuLibraryLoadFromFile, 0);
    return load_file((CUmodule *)(void *)lib, file);
}

/* A module's one kernel: the function handle is the module's. */
EXPORT CUresult cuModuleGetFunction(CUfunction *f, CUmodule m, const char *name)
{
    count(FN_cuModuleGetFunction, 0);
    NEED_INIT();
    if (!f || !m || !name) return CUDA_ERROR_INVALID_VALUE;
    *f = (CUfunction)(void *)m;
    return CUDA_SUCCESS;
}

/* Runs nothing. A kernel needing more local memory per thread than the stack limit grows
 * the limit to its need at launch, and the reservation with it, with no allocation call:
 * as the real driver does (the limit then stays until set lower by hand). The first kernel
 * calling printf or malloc charges the device runtime, the first calling malloc the heap
 * at its limit then (on an H200: +140 MiB for a printf kernel whatever the FIFO's size,
 * +150 MiB for a malloc kernel with the default 8 MiB heap, +398 MiB with 256 MiB). A
 * heap set after that is charged nothing more here (not measured). */
EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                               unsigned bz, unsigned shared, CUstream s, void **params, void **extra)
{
    count(FN_cuLaunchKernel, 0);
    NEED_CTX(dev);
    if (!f) return CUDA_ERROR_INVALID_HANDLE;
    const struct CUmod_st *m = (const void *)f;
    pthread_mutex_lock(&lock);
    struct device *d = &devices[dev];
    CUresult r = m->local_bytes > d->stack ? set_limits_locked(dev, m->local_bytes, d->fifo, d->heap)
                                           : CUDA_SUCCESS;
    if (r == CUDA_SUCCESS && (m->uses & (FAKECUDA_USES_PRINTF | FAKECUDA_USES_MALLOC)) && !d->devrt &&
        (r = charge_locked(dev, FAKECUDA_DEVRT_BYTES, 1)) == CUDA_SUCCESS)
        d->devrt = 1;
    if (r == CUDA_SUCCESS && (m->uses & FAKECUDA_USES_MALLOC) && !d->heap_charged && d->heap &&
        (r = charge_locked(dev, d->heap, 1)) == CUDA_SUCCESS)
        d->heap_charged = d->heap;
    pthread_mutex_unlock(&lock);
    return r;
}

EXPORT CUresult cuModuleUnload(CUmodule m)
{
    count(FN_cuModuleUnload, 0);
    NEED_INIT();
    if (!m) return CUDA_ERROR_INVALID_HANDLE;
    pthread_mutex_lock(&lock);
    uncharge_locked(m->dev, m->bytes, 1);
    pthread_mutex_unlock(&lock);
    free(m);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuLibraryUnload(CUlibrary lib)
{
    count(FN_cuLibraryUnload, 0);
    return cuModuleUnload((CUmodule)(void *)lib);
}

/* The runtime's private way in (the real cudart loads the modules of its fatbins through
 * the driver's export tables, not through cuModuleLoad*, so an interposer never sees those
 * loads): one table, whatever id is asked for, whose one entry loads an image. */
static const struct fakecuda_export_table export_table = {sizeof export_table, load_image};

EXPORT CUresult cuGetExportTable(const void **table, const void *id)
{
    count(FN_cuGetExportTable, 0);
    if (!table) return CUDA_ERROR_INVALID_VALUE;
    *table = &export_table;
    return CUDA_SUCCESS;
}

/* ------------------------------------------------------------------------------ errors */
#define ERRORS(X)                                                                             \
    X(CUDA_SUCCESS, "no error")                                                               \
    X(CUDA_ERROR_INVALID_VALUE, "invalid argument")                                           \
    X(CUDA_ERROR_OUT_OF_MEMORY, "out of memory")                                              \
    X(CUDA_ERROR_NOT_INITIALIZED, "initialization error")                                     \
    X(CUDA_ERROR_DEINITIALIZED, "driver shutting down")                                       \
    X(CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected")                             \
    X(CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal")                                    \
    X(CUDA_ERROR_INVALID_IMAGE, "device kernel image is invalid")                             \
    X(CUDA_ERROR_INVALID_CONTEXT, "invalid device context")                                   \
    X(CUDA_ERROR_ALREADY_MAPPED, "resource already mapped")                                   \
    X(CUDA_ERROR_NOT_MAPPED, "resource not mapped")                                           \
    X(CUDA_ERROR_FILE_NOT_FOUND, "file not found")                                            \
    X(CUDA_ERROR_INVALID_HANDLE, "invalid resource handle")                                   \
    X(CUDA_ERROR_ILLEGAL_STATE, "the operation cannot be performed in the present state")     \
    X(CUDA_ERROR_NOT_FOUND, "named symbol not found")                                         \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, "an illegal memory access was encountered")                 \
    X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, "part or all of the requested memory range is already mapped") \
    X(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED, "pointer does not correspond to a registered memory region") \
    X(CUDA_ERROR_NOT_PERMITTED, "operation not permitted")                                    \
    X(CUDA_ERROR_NOT_SUPPORTED, "operation not supported")                                    \
    X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "operation not permitted when stream is capturing") \
    X(CUDA_ERROR_UNKNOWN, "unknown error")

EXPORT CUresult cuGetErrorString(CUresult e, const char **s)
{
    count(FN_cuGetErrorString, 0);
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    switch (e) {
#define X(code, text)                                                                         \
    case code:                                                                                \
        *s = text;                                                                            \
        return CUDA_SUCCESS;
        ERRORS(X)
#undef X
    }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

EXPORT CUresult cuGetErrorName(CUresult e, const char **s)
{
    count(FN_cuGetErrorName, 0);
    if (!s) return CUDA_ERROR_INVALID_VALUE;
    switch (e) {
#define X(code, text)                                                                         \
    case code:                                                                                \
        *s = #code;                                                                           \
        return CUDA_SUCCESS;
        ERRORS(X)
#undef X
    }
    *s = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* --------------------------------------------------------------------- cuGetProcAddress */
/* PTDS: the per-thread-default-stream variant of a base name (flags & 2). */
enum sel { ANY, PTDS, LEGACY };

/* base name, the ABI function handed out, the oldest cudaVersion it answers, flags. */
#define PROC_TABLE(X)                                                                         \
    X("cuInit", cuInit, 2000, ANY)                                                            \
    X("cuDriverGetVersion", cuDriverGetVersion, 2020, ANY)                                    \
    X("cuDeviceGet", cuDeviceGet, 2000, ANY)                                                  \
    X("cuDeviceGetCount", cuDeviceGetCount, 2000, ANY)                                        \
    X("cuDeviceGetName", cuDeviceGetName, 2000, ANY)                                          \
    X("cuDeviceTotalMem", cuDeviceTotalMem_v2, 3020, ANY)                                     \
    X("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain, 7000, ANY)                        \
    X("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2, 11000, ANY)                  \
    X("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease, 7000, ANY)                      \
    X("cuCtxCreate", cuCtxCreate_v2, 3020, ANY)                                               \
    X("cuCtxDestroy", cuCtxDestroy_v2, 4000, ANY)                                             \
    X("cuCtxSetCurrent", cuCtxSetCurrent, 4000, ANY)                                          \
    X("cuCtxGetCurrent", cuCtxGetCurrent, 4000, ANY)                                          \
    X("cuCtxGetDevice", cuCtxGetDevice, 2000, ANY)                                            \
    X("cuCtxPushCurrent", cuCtxPushCurrent_v2, 4000, ANY)                                     \
    X("cuCtxPopCurrent", cuCtxPopCurrent_v2, 4000, ANY)                                       \
    X("cuCtxSynchronize", cuCtxSynchronize, 2000, ANY)                                        \
    X("cuStreamCreate", cuStreamCreate, 2000, ANY)                                            \
    X("cuStreamDestroy", cuStreamDestroy_v2, 4000, ANY)                                       \
    X("cuStreamSynchronize", cuStreamSynchronize, 2000, LEGACY)                               \
    X("cuStreamSynchronize", cuStreamSynchronize_ptsz, 7000, PTDS)                            \
    X("cuMemGetInfo", cuMemGetInfo_v2, 3020, ANY)                                             \
    X("cuMemAlloc", cuMemAlloc_v2, 3020, ANY)                                                 \
    X("cuMemFree", cuMemFree_v2, 3020, ANY)                                                   \
    X("cuMemAllocPitch", cuMemAllocPitch_v2, 3020, ANY)                                       \
    X("cuMemAllocManaged", cuMemAllocManaged, 6000, ANY)                                      \
    X("cuMemAllocHost", cuMemAllocHost_v2, 3020, ANY)                                         \
    X("cuMemHostAlloc", cuMemHostAlloc, 2020, ANY)                                            \
    X("cuMemFreeHost", cuMemFreeHost, 2000, ANY)                                              \
    X("cuMemHostRegister", cuMemHostRegister_v2, 6050, ANY)                                   \
    X("cuMemHostUnregister", cuMemHostUnregister, 4000, ANY)                                  \
    X("cuMemAllocAsync", cuMemAllocAsync, 11020, LEGACY)                                      \
    X("cuMemAllocAsync", cuMemAllocAsync_ptsz, 11020, PTDS)                                   \
    X("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync, 11020, LEGACY)                      \
    X("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync_ptsz, 11020, PTDS)                   \
    X("cuMemFreeAsync", cuMemFreeAsync, 11020, LEGACY)                                        \
    X("cuMemFreeAsync", cuMemFreeAsync_ptsz, 11020, PTDS)                                     \
    X("cuMemPoolCreate", cuMemPoolCreate, 11020, ANY)                                         \
    X("cuMemPoolDestroy", cuMemPoolDestroy, 11020, ANY)                                       \
    X("cuMemPoolTrimTo", cuMemPoolTrimTo, 11020, ANY)                                         \
    X("cuMemPoolSetAttribute", cuMemPoolSetAttribute, 11020, ANY)                             \
    X("cuMemPoolGetAttribute", cuMemPoolGetAttribute, 11020, ANY)                             \
    X("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool, 11020, ANY)                     \
    X("cuMemCreate", cuMemCreate, 10020, ANY)                                                 \
    X("cuMemRelease", cuMemRelease, 10020, ANY)                                               \
    X("cuMemAddressReserve", cuMemAddressReserve, 10020, ANY)                                 \
    X("cuMemAddressFree", cuMemAddressFree, 10020, ANY)                                       \
    X("cuMemMap", cuMemMap, 10020, ANY)                                                       \
    X("cuMemUnmap", cuMemUnmap, 10020, ANY)                                                   \
    X("cuMemSetAccess", cuMemSetAccess, 10020, ANY)                                           \
    X("cuMemGetAllocationGranularity", cuMemGetAllocationGranularity, 10020, ANY)             \
    X("cuMemExportToShareableHandle", cuMemExportToShareableHandle, 10020, ANY)               \
    X("cuMemImportFromShareableHandle", cuMemImportFromShareableHandle, 10020, ANY)           \
    X("cuMemRetainAllocationHandle", cuMemRetainAllocationHandle, 11000, ANY)                 \
    X("cuIpcGetMemHandle", cuIpcGetMemHandle, 4010, ANY)                                      \
    X("cuIpcOpenMemHandle", cuIpcOpenMemHandle_v2, 11000, ANY)                                \
    X("cuIpcCloseMemHandle", cuIpcCloseMemHandle, 4010, ANY)                                  \
    X("cuGraphCreate", cuGraphCreate, 10000, ANY)                                             \
    X("cuGraphDestroy", cuGraphDestroy, 10000, ANY)                                           \
    X("cuGraphAddMemAllocNode", cuGraphAddMemAllocNode, 11040, ANY)                           \
    X("cuGraphAddMemFreeNode", cuGraphAddMemFreeNode, 11040, ANY)                             \
    X("cuStreamBeginCapture", cuStreamBeginCapture, 10000, LEGACY)                            \
    X("cuStreamBeginCapture", cuStreamBeginCapture_ptsz, 10000, PTDS)                         \
    X("cuStreamBeginCapture", cuStreamBeginCapture_v2, 10010, LEGACY)                         \
    X("cuStreamBeginCapture", cuStreamBeginCapture_v2_ptsz, 10010, PTDS)                      \
    X("cuStreamBeginCaptureToGraph", cuStreamBeginCaptureToGraph, 12030, LEGACY)              \
    X("cuStreamBeginCaptureToGraph", cuStreamBeginCaptureToGraph_ptsz, 12030, PTDS)           \
    X("cuStreamEndCapture", cuStreamEndCapture, 10000, LEGACY)                                \
    X("cuStreamEndCapture", cuStreamEndCapture_ptsz, 10000, PTDS)                             \
    X("cuStreamIsCapturing", cuStreamIsCapturing, 10000, LEGACY)                              \
    X("cuStreamIsCapturing", cuStreamIsCapturing_ptsz, 10000, PTDS)                           \
    X("cuStreamGetCaptureInfo", cuStreamGetCaptureInfo_v3, 12030, LEGACY)                     \
    X("cuStreamGetCaptureInfo", cuStreamGetCaptureInfo_v3_ptsz, 12030, PTDS)                  \
    X("cuGraphInstantiate", cuGraphInstantiate, 10000, ANY)                                   \
    X("cuGraphInstantiate", cuGraphInstantiate_v2, 11000, ANY)                                \
    X("cuGraphInstantiate", cuGraphInstantiateWithFlags, 12000, ANY)                          \
    X("cuGraphInstantiateWithFlags", cuGraphInstantiateWithFlags, 11040, ANY)                 \
    X("cuGraphInstantiateWithParams", cuGraphInstantiateWithParams, 12000, LEGACY)            \
    X("cuGraphInstantiateWithParams", cuGraphInstantiateWithParams_ptsz, 12000, PTDS)         \
    X("cuGraphLaunch", cuGraphLaunch, 10000, LEGACY)                                          \
    X("cuGraphLaunch", cuGraphLaunch_ptsz, 10000, PTDS)                                       \
    X("cuGraphExecDestroy", cuGraphExecDestroy, 10000, ANY)                                   \
    X("cuDeviceGraphMemTrim", cuDeviceGraphMemTrim, 11040, ANY)                               \
    X("cuDeviceGetGraphMemAttribute", cuDeviceGetGraphMemAttribute, 11040, ANY)               \
    X("cuDeviceSetGraphMemAttribute", cuDeviceSetGraphMemAttribute, 11040, ANY)               \
    X("cuMulticastCreate", cuMulticastCreate, 12010, ANY)                                     \
    X("cuArrayCreate", cuArrayCreate_v2, 3020, ANY)                                           \
    X("cuArray3DCreate", cuArray3DCreate_v2, 3020, ANY)                                       \
    X("cuMipmappedArrayCreate", cuMipmappedArrayCreate, 5000, ANY)                            \
    X("cuArrayDestroy", cuArrayDestroy, 2000, ANY)                                            \
    X("cuMipmappedArrayDestroy", cuMipmappedArrayDestroy, 5000, ANY)                          \
    X("cuMemcpyHtoD", cuMemcpyHtoD_v2, 3020, ANY)                                             \
    X("cuMemcpyDtoH", cuMemcpyDtoH_v2, 3020, ANY)                                             \
    X("cuMemcpyDtoD", cuMemcpyDtoD_v2, 3020, ANY)                                             \
    X("cuMemcpy", cuMemcpy, 4000, ANY)                                                        \
    X("cuMemsetD8", cuMemsetD8_v2, 3020, ANY)                                                 \
    X("cuModuleLoadData", cuModuleLoadData, 2000, ANY)                                        \
    X("cuModuleLoad", cuModuleLoad, 2000, ANY)                                                \
    X("cuModuleLoadDataEx", cuModuleLoadDataEx, 2010, ANY)                                    \
    X("cuModuleLoadFatBinary", cuModuleLoadFatBinary, 2000, ANY)                              \
    X("cuLibraryLoadData", cuLibraryLoadData, 12000, ANY)                                     \
    X("cuLibraryLoadFromFile", cuLibraryLoadFromFile, 12000, ANY)                             \
    X("cuLibraryUnload", cuLibraryUnload, 12000, ANY)                                         \
    X("cuGetExportTable", cuGetExportTable, 3000, ANY)                                        \
    X("cuModuleUnload", cuModuleUnload, 2000, ANY)                                            \
    X("cuModuleGetFunction", cuModuleGetFunction, 2000, ANY)                                  \
    X("cuLaunchKernel", cuLaunchKernel, 4000, ANY)                                            \
    X("cuCtxGetLimit", cuCtxGetLimit, 3010, ANY)                                              \
    X("cuCtxSetLimit", cuCtxSetLimit, 3010, ANY)                                              \
    X("cuDeviceGetAttribute", cuDeviceGetAttribute, 2000, ANY)                                \
    X("cuGetErrorString", cuGetErrorString, 6000, ANY)                                        \
    X("cuGetErrorName", cuGetErrorName, 6000, ANY)                                            \
    X("cuGetProcAddress", cuGetProcAddress_v2, 12000, ANY)                                    \
    X("cuGetProcAddress", cuGetProcAddress, 11030, ANY)

static const struct proc_entry {
    const char *base;
    void *fn;
    int min_version;
    enum sel sel;
} proc_table[] = {
#define X(base, fn, ver, sel) {base, (void *)fn, ver, sel},
    PROC_TABLE(X)
#undef X
};

#define LOOKUP_LOG 4096
static struct {
    char name[64];
    int version;
    unsigned long long flags;
    int found;
} lookup_log[LOOKUP_LOG];
static atomic_uint lookup_count;

static CUresult get_proc(const char *symbol, void **pfn, int version, cuuint64_t flags,
                         CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn) return CUDA_ERROR_INVALID_VALUE;
#ifdef FAKECUDA_NO_CAPTURE_INFO_V3 /* its table has no cuStreamGetCaptureInfo of 12030 */
    if (!strcmp(symbol, "cuStreamGetCaptureInfo") && version >= 12030) version = 12029;
#endif
    /* Per-thread lookups prefer the _ptsz/_ptds variant and fall back to the plain one,
     * as the real driver documents; other lookups never see the per-thread variants. */
    const struct proc_entry *best = NULL;
    int named = 0;
    for (int pass = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ? 0 : 1; pass < 2 && !named; pass++)
        for (size_t i = 0; i < sizeof proc_table / sizeof proc_table[0]; i++) {
            const struct proc_entry *e = &proc_table[i];
            if (strcmp(e->base, symbol) || (e->sel == PTDS) != (pass == 0)) continue;
            named = 1;
            if (e->min_version <= version && (!best || e->min_version > best->min_version)) best = e;
        }
    unsigned i = atomic_fetch_add(&lookup_count, 1);
    if (i < LOOKUP_LOG) {
        snprintf(lookup_log[i].name, sizeof lookup_log[i].name, "%s", symbol);
        lookup_log[i].version = version;
        lookup_log[i].flags = flags;
        lookup_log[i].found = best != NULL;
    }
    *pfn = best ? best->fn : NULL;
    if (status)
        *status = best ? CU_GET_PROC_ADDRESS_SUCCESS
                       : named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return best ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int version, cuuint64_t flags)
{
    count(FN_cuGetProcAddress, 0);
    return get_proc(symbol, pfn, version, flags, NULL);
}

/* FAKECUDA_NO_PROC_ADDRESS_V2 builds a driver older than CUDA 12.0, whose libcuda has
 * no cuGetProcAddress_v2 export: the runtime then falls back to dlsym by ABI name. */
#ifdef FAKECUDA_NO_PROC_ADDRESS_V2
#define EXPORT_V2 __attribute__((visibility("hidden")))
#else
#define EXPORT_V2 EXPORT
#endif
EXPORT_V2 CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int version, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status)
{
    count(FN_cuGetProcAddress_v2, 0);
    return get_proc(symbol, pfn, version, flags, status);
}

/* ------------------------------------------------------------------- test interface */
EXPORT int fakecuda_fn_stats(const char *name, struct fakecuda_fn_stats *out)
{
    memset(out, 0, sizeof *out);
    for (int i = 0; i < FN_COUNT; i++)
        if (!strcmp(fn_names[i], name)) {
            out->calls = atomic_load(&fn_stats[i].calls);
            out->bytes = atomic_load(&fn_stats[i].bytes);
            out->last_tid = atomic_load(&fn_stats[i].last_tid);
            return 0;
        }
    return -1;
}

EXPORT void fakecuda_reset_fn_stats(void)
{
    for (int i = 0; i < FN_COUNT; i++) {
        atomic_store(&fn_stats[i].calls, 0);
        atomic_store(&fn_stats[i].bytes, 0);
        atomic_store(&fn_stats[i].last_tid, 0);
    }
}

EXPORT void fakecuda_hold_next_free(void)
{
    pthread_mutex_lock(&hold_mu);
    hold_state = HOLD_ARMED;
    pthread_mutex_unlock(&hold_mu);
}

EXPORT void fakecuda_wait_free_held(void)
{
    pthread_mutex_lock(&hold_mu);
    while (hold_state == HOLD_ARMED)
        pthread_cond_wait(&hold_cv, &hold_mu);
    pthread_mutex_unlock(&hold_mu);
}

EXPORT void fakecuda_release_free(void)
{
    pthread_mutex_lock(&hold_mu);
    if (hold_state == HOLD_HELD) {
        reuse_addr = reuse_len = 0; /* only the allocations made while it was held */
        hold_state = HOLD_RELEASED;
        pthread_cond_broadcast(&hold_cv);
    }
    pthread_mutex_unlock(&hold_mu);
}

EXPORT int fakecuda_dev_stats(int dev, struct fakecuda_dev_stats *out)
{
    pthread_mutex_lock(&lock);
    init_devices_locked();
    int ok = dev >= 0 && dev < ndevices;
    if (ok) *out = (struct fakecuda_dev_stats){devices[dev].total, devices[dev].used, devices[dev].hidden};
    pthread_mutex_unlock(&lock);
    return ok ? 0 : -1;
}

EXPORT int fakecuda_lookup(unsigned index, const char **base, int *version, unsigned long long *flags, int *found)
{
    unsigned n = atomic_load(&lookup_count);
    if (index >= n || index >= LOOKUP_LOG) return -1;
    *base = lookup_log[index].name;
    *version = lookup_log[index].version;
    *flags = lookup_log[index].flags;
    *found = lookup_log[index].found;
    return 0;
}

/* ------------------------------------------------- PCI bus ids (for the simulated NVML)
 * Added for tests/fakes/fake_nvml.c, which finds devices by bus id as real NVML does:
 * device d sits on bus 0x18 + d. cuDeviceGetPCIBusId answers as the real one does
 * ("0000:18:00.0"); fakecuda_pci_bus_id is the same for the fake NVML, uncounted, so
 * that NVML's calls never look like CUDA calls. */
static _Atomic unsigned long pci_bus_id_calls;

static int pci_bus_id(int dev, char *buf, int len)
{
    pthread_mutex_lock(&lock);
    init_devices_locked();
    int ok = dev >= 0 && dev < ndevices;
    pthread_mutex_unlock(&lock);
    if (!ok || !buf || len < 13) return -1;
    snprintf(buf, (size_t)len, "0000:%02X:00.0", 0x18 + dev);
    return 0;
}

EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    atomic_fetch_add(&pci_bus_id_calls, 1);
    if (!pciBusId || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    return pci_bus_id(dev, pciBusId, len) ? CUDA_ERROR_INVALID_DEVICE : CUDA_SUCCESS;
}

EXPORT int fakecuda_pci_bus_id(int dev, char *buf, int len)
{
    return pci_bus_id(dev, buf, len);
}

EXPORT unsigned long fakecuda_pci_bus_id_calls(void)
{
    return atomic_load(&pci_bus_id_calls);
}
