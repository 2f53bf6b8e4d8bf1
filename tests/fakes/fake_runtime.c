/* fake_runtime.c: simulated CUDA runtime (libcudart.so.13 and libcudart_static.a) reaching the driver only through cuGetProcAddress. */

/* Stands for the real CUDA 13.0 runtime, shared and static, in the one way that matters
 * to an interposer: it never calls the
 * driver through the PLT. At its first call it dlopens libcuda.so.1, dlsyms
 * "cuGetProcAddress_v2", asks that for "cuGetProcAddress" at 11030 and 12000 (the
 * 12000 answer replaces the dlsym'd pointer) and then for every entry point it uses by
 * base name, version and flags ("cuMemAlloc", 3020, 0; "cuMemAllocAsync", 11020, 0 and
 * 2 for the _ptsz API). Without cuGetProcAddress_v2 it falls back to dlsym by ABI name.
 * The current device is per thread; cudaSetDevice retains the device's primary context
 * and makes it current on the thread, as the real runtime does since CUDA 12.
 * Built twice from this file: shared (-> libcudart.so.13) and, with FAKECUDART_STATIC,
 * as an archive that a program or libnccl.so.2 links in, each copy with its own state,
 * like the real static runtime inside NCCL. */

#include "fake_cuda.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#define API __attribute__((visibility("default")))
#define MAX_DEVICES 16

/* The driver entry points: slot, base name, version, flags, ABI name for the fallback. */
#define DRIVER_ENTRIES(X)                                                                     \
    X(init, "cuInit", 2000, 0, "cuInit")                                                      \
    X(driver_version, "cuDriverGetVersion", 2020, 0, "cuDriverGetVersion")                    \
    X(device_count, "cuDeviceGetCount", 2000, 0, "cuDeviceGetCount")                          \
    X(primary_retain, "cuDevicePrimaryCtxRetain", 7000, 0, "cuDevicePrimaryCtxRetain")        \
    X(ctx_set, "cuCtxSetCurrent", 4000, 0, "cuCtxSetCurrent")                                 \
    X(ctx_get, "cuCtxGetCurrent", 4000, 0, "cuCtxGetCurrent")                                 \
    X(ctx_device, "cuCtxGetDevice", 2000, 0, "cuCtxGetDevice")                                \
    X(ctx_sync, "cuCtxSynchronize", 2000, 0, "cuCtxSynchronize")                              \
    X(stream_create, "cuStreamCreate", 2000, 0, "cuStreamCreate")                             \
    X(stream_destroy, "cuStreamDestroy", 4000, 0, "cuStreamDestroy_v2")                       \
    X(stream_sync, "cuStreamSynchronize", 2000, 0, "cuStreamSynchronize")                     \
    X(mem_info, "cuMemGetInfo", 3020, 0, "cuMemGetInfo_v2")                                   \
    X(mem_alloc, "cuMemAlloc", 3020, 0, "cuMemAlloc_v2")                                      \
    X(mem_free, "cuMemFree", 3020, 0, "cuMemFree_v2")                                         \
    X(mem_alloc_pitch, "cuMemAllocPitch", 3020, 0, "cuMemAllocPitch_v2")                      \
    X(mem_alloc_managed, "cuMemAllocManaged", 6000, 0, "cuMemAllocManaged")                   \
    X(host_alloc, "cuMemHostAlloc", 2020, 0, "cuMemHostAlloc")                                \
    X(free_host, "cuMemFreeHost", 2000, 0, "cuMemFreeHost")                                   \
    X(host_register, "cuMemHostRegister", 6050, 0, "cuMemHostRegister_v2")                    \
    X(host_unregister, "cuMemHostUnregister", 4000, 0, "cuMemHostUnregister")                 \
    X(alloc_async, "cuMemAllocAsync", 11020, 0, "cuMemAllocAsync")                            \
    X(alloc_async_ptsz, "cuMemAllocAsync", 11020, 2, "cuMemAllocAsync_ptsz")                  \
    X(alloc_pool, "cuMemAllocFromPoolAsync", 11020, 0, "cuMemAllocFromPoolAsync")             \
    X(alloc_pool_ptsz, "cuMemAllocFromPoolAsync", 11020, 2, "cuMemAllocFromPoolAsync_ptsz")   \
    X(free_async, "cuMemFreeAsync", 11020, 0, "cuMemFreeAsync")                               \
    X(free_async_ptsz, "cuMemFreeAsync", 11020, 2, "cuMemFreeAsync_ptsz")                     \
    X(pool_create, "cuMemPoolCreate", 11020, 0, "cuMemPoolCreate")                            \
    X(pool_destroy, "cuMemPoolDestroy", 11020, 0, "cuMemPoolDestroy")                         \
    X(pool_trim, "cuMemPoolTrimTo", 11020, 0, "cuMemPoolTrimTo")                              \
    X(ipc_open, "cuIpcOpenMemHandle", 11000, 0, "cuIpcOpenMemHandle_v2")                      \
    X(graph_alloc_node, "cuGraphAddMemAllocNode", 11040, 0, "cuGraphAddMemAllocNode")         \
    X(graph_free_node, "cuGraphAddMemFreeNode", 11040, 0, "cuGraphAddMemFreeNode")            \
    X(graph_create, "cuGraphCreate", 10000, 0, "cuGraphCreate")                               \
    X(capture_begin, "cuStreamBeginCapture", 10010, 0, "cuStreamBeginCapture_v2")             \
    X(capture_end, "cuStreamEndCapture", 10000, 0, "cuStreamEndCapture")                      \
    X(capture_status, "cuStreamIsCapturing", 10000, 0, "cuStreamIsCapturing")                 \
    X(graph_instantiate, "cuGraphInstantiate", 12000, 0, "cuGraphInstantiateWithFlags")       \
    X(graph_launch, "cuGraphLaunch", 10000, 0, "cuGraphLaunch")                               \
    X(graph_exec_destroy, "cuGraphExecDestroy", 10000, 0, "cuGraphExecDestroy")               \
    X(graph_destroy, "cuGraphDestroy", 10000, 0, "cuGraphDestroy")                            \
    X(graph_mem_trim, "cuDeviceGraphMemTrim", 11040, 0, "cuDeviceGraphMemTrim")               \
    X(graph_mem_attr, "cuDeviceGetGraphMemAttribute", 11040, 0, "cuDeviceGetGraphMemAttribute") \
    X(array_create, "cuArrayCreate", 3020, 0, "cuArrayCreate_v2")                             \
    X(array3d_create, "cuArray3DCreate", 3020, 0, "cuArray3DCreate_v2")                       \
    X(mipmap_create, "cuMipmappedArrayCreate", 5000, 0, "cuMipmappedArrayCreate")             \
    X(array_destroy, "cuArrayDestroy", 2000, 0, "cuArrayDestroy")                             \
    X(mipmap_destroy, "cuMipmappedArrayDestroy", 5000, 0, "cuMipmappedArrayDestroy")          \
    X(memcpy_htod, "cuMemcpyHtoD", 3020, 0, "cuMemcpyHtoD_v2")                                \
    X(memcpy_dtoh, "cuMemcpyDtoH", 3020, 0, "cuMemcpyDtoH_v2")                                \
    X(memcpy_dtod, "cuMemcpyDtoD", 3020, 0, "cuMemcpyDtoD_v2")                                \
    X(memcpy_any, "cuMemcpy", 4000, 0, "cuMemcpy")                                            \
    X(memset8, "cuMemsetD8", 3020, 0, "cuMemsetD8_v2")                                      \
    X(export_table, "cuGetExportTable", 3000, 0, "cuGetExportTable")                         \
    X(module_function, "cuModuleGetFunction", 2000, 0, "cuModuleGetFunction")                \
    X(launch, "cuLaunchKernel", 4000, 0, "cuLaunchKernel")

static struct {
    CUresult (*init)(unsigned);
    CUresult (*driver_version)(int *);
    CUresult (*device_count)(int *);
    CUresult (*primary_retain)(CUcontext *, CUdevice);
    CUresult (*ctx_set)(CUcontext);
    CUresult (*ctx_get)(CUcontext *);
    CUresult (*ctx_device)(CUdevice *);
    CUresult (*ctx_sync)(void);
    CUresult (*stream_create)(CUstream *, unsigned);
    CUresult (*stream_destroy)(CUstream);
    CUresult (*stream_sync)(CUstream);
    CUresult (*mem_info)(size_t *, size_t *);
    CUresult (*mem_alloc)(CUdeviceptr *, size_t);
    CUresult (*mem_free)(CUdeviceptr);
    CUresult (*mem_alloc_pitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
    CUresult (*mem_alloc_managed)(CUdeviceptr *, size_t, unsigned);
    CUresult (*host_alloc)(void **, size_t, unsigned);
    CUresult (*free_host)(void *);
    CUresult (*host_register)(void *, size_t, unsigned);
    CUresult (*host_unregister)(void *);
    CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream);
    CUresult (*alloc_async_ptsz)(CUdeviceptr *, size_t, CUstream);
    CUresult (*alloc_pool)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    CUresult (*alloc_pool_ptsz)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    CUresult (*free_async)(CUdeviceptr, CUstream);
    CUresult (*free_async_ptsz)(CUdeviceptr, CUstream);
    CUresult (*pool_create)(CUmemoryPool *, const CUmemPoolProps *);
    CUresult (*pool_destroy)(CUmemoryPool);
    CUresult (*pool_trim)(CUmemoryPool, size_t);
    CUresult (*ipc_open)(CUdeviceptr *, CUipcMemHandle, unsigned);
    CUresult (*graph_alloc_node)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                                 CUDA_MEM_ALLOC_NODE_PARAMS *);
    CUresult (*graph_free_node)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUdeviceptr);
    CUresult (*graph_create)(CUgraph *, unsigned);
    CUresult (*capture_begin)(CUstream, CUstreamCaptureMode);
    CUresult (*capture_end)(CUstream, CUgraph *);
    CUresult (*capture_status)(CUstream, CUstreamCaptureStatus *);
    CUresult (*graph_instantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*graph_launch)(CUgraphExec, CUstream);
    CUresult (*graph_exec_destroy)(CUgraphExec);
    CUresult (*graph_destroy)(CUgraph);
    CUresult (*graph_mem_trim)(CUdevice);
    CUresult (*graph_mem_attr)(CUdevice, CUgraphMem_attribute, void *);
    CUresult (*array_create)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
    CUresult (*array3d_create)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *);
    CUresult (*mipmap_create)(CUmipmappedArray *, const CUDA_ARRAY3D_DESCRIPTOR *, unsigned);
    CUresult (*array_destroy)(CUarray);
    CUresult (*mipmap_destroy)(CUmipmappedArray);
    CUresult (*memcpy_htod)(CUdeviceptr, const void *, size_t);
    CUresult (*memcpy_dtoh)(void *, CUdeviceptr, size_t);
    CUresult (*memcpy_dtod)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*memcpy_any)(CUdeviceptr, CUdeviceptr, size_t);
    CUresult (*memset8)(CUdeviceptr, unsigned char, size_t);
    CUresult (*export_table)(const void **, const void *);
    CUresult (*module_function)(CUfunction *, CUmodule, const char *);
    CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                       CUstream, void **, void **);
} drv;

static const struct entry {
    const char *base;
    int version;
    unsigned long long flags;
    const char *abi;
    size_t offset;
} entries[] = {
#define X(slot, base, ver, flags, abi) {base, ver, flags, abi, offsetof(__typeof__(drv), slot)},
    DRIVER_ENTRIES(X)
#undef X
};

static pthread_once_t once = PTHREAD_ONCE_INIT;
static cudaError_t init_error = cudaSuccess;
static PFN_cuGetProcAddress_v12000 get_proc;
static struct fakecudart_resolution resolution;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext primary[MAX_DEVICES];
static int ndevices;

static __thread int cur_dev; /* used while no context is current on the thread */
static __thread cudaError_t last_error;

static void set_slot(size_t offset, void *fn)
{
    memcpy((char *)&drv + offset, &fn, sizeof fn);
}

static void load_driver(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        init_error = cudaErrorInsufficientDriver;
        return;
    }
    PFN_cuGetProcAddress_v12000 gpa = (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2");
    if (gpa) {
        CUdriverProcAddressQueryResult st;
        void *v1 = NULL, *v2 = NULL;
        /* Both, like cudart 13.0; the v2 answer is the one used from now on. */
        gpa("cuGetProcAddress", &v1, 11030, 0, &st);
        gpa("cuGetProcAddress", &v2, 12000, 0, &st);
        resolution.lookups += 2;
        if (v2) gpa = (PFN_cuGetProcAddress_v12000)v2;
        get_proc = gpa;
        resolution.used_get_proc_address = 1;
        resolution.get_proc_address = (void *)gpa;
        for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
            void *fn = NULL;
            gpa(entries[i].base, &fn, entries[i].version, entries[i].flags, &st);
            resolution.lookups++;
            set_slot(entries[i].offset, fn);
        }
    } else {
        for (size_t i = 0; i < sizeof entries / sizeof entries[0]; i++) {
            void *fn = dlsym(h, entries[i].abi);
            resolution.dlsym_fallbacks += fn != NULL;
            set_slot(entries[i].offset, fn);
        }
    }
    resolution.initialized = 1;
    if (!drv.init || !drv.device_count || !drv.primary_retain || !drv.ctx_set || !drv.ctx_get || !drv.ctx_device) {
        init_error = cudaErrorInsufficientDriver;
        return;
    }
    if (drv.init(0) != CUDA_SUCCESS || drv.device_count(&ndevices) != CUDA_SUCCESS || ndevices <= 0)
        init_error = cudaErrorNoDevice;
    if (ndevices > MAX_DEVICES) ndevices = MAX_DEVICES;
}

static cudaError_t set_error(cudaError_t e)
{
    if (e != cudaSuccess) last_error = e;
    return e;
}

static cudaError_t map(CUresult r)
{
    switch (r) {
    case CUDA_SUCCESS: return cudaSuccess;
    case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
    case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
    case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
    case CUDA_ERROR_DEINITIALIZED: return cudaErrorCudartUnloading;
    case CUDA_ERROR_NO_DEVICE: return cudaErrorNoDevice;
    case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
    case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
    case CUDA_ERROR_ILLEGAL_STATE: return cudaErrorIllegalState;
    case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return cudaErrorStreamCaptureUnsupported;
    case CUDA_ERROR_NOT_FOUND: return cudaErrorSymbolNotFound;
    case CUDA_ERROR_ILLEGAL_ADDRESS: return cudaErrorIllegalAddress;
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED: return cudaErrorHostMemoryAlreadyRegistered;
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED: return cudaErrorHostMemoryNotRegistered;
    case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
    default: return cudaErrorUnknown;
    }
}

/* Driver result -> runtime result, recorded as the thread's last error. */
static cudaError_t ret(CUresult r)
{
    return set_error(map(r));
}

static cudaError_t ensure_init(void)
{
    pthread_once(&once, load_driver);
    return init_error;
}

/* Like the real runtime, works in whatever context is current on the thread (another
 * runtime copy or the driver API may have set it); with none, makes the primary context
 * of the thread's device current, retaining it once per runtime copy. */
static cudaError_t make_current(int dev)
{
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_SUCCESS;
    if (!primary[dev]) r = drv.primary_retain(&primary[dev], dev);
    CUcontext c = primary[dev];
    pthread_mutex_unlock(&lock);
    if (r == CUDA_SUCCESS) r = drv.ctx_set(c);
    return ret(r);
}

static cudaError_t ensure_ctx(void)
{
    cudaError_t e = ensure_init();
    if (e) return set_error(e);
    CUcontext c = NULL;
    if (drv.ctx_get(&c) == CUDA_SUCCESS && c) return cudaSuccess;
    return make_current(cur_dev);
}

#define NEED_CTX()                                                                            \
    do {                                                                                      \
        cudaError_t e_ = ensure_ctx();                                                        \
        if (e_) return e_;                                                                    \
    } while (0)
#define NEED_FN(fn)                                                                           \
    do {                                                                                      \
        if (!drv.fn) return set_error(cudaErrorNotSupported);                                 \
    } while (0)

/* ------------------------------------------------------------------------ devices */
API cudaError_t cudaGetDeviceCount(int *count)
{
    cudaError_t e = ensure_init();
    if (e) return set_error(e);
    if (!count) return set_error(cudaErrorInvalidValue);
    *count = ndevices;
    return cudaSuccess;
}

API cudaError_t cudaSetDevice(int device)
{
    cudaError_t e = ensure_init();
    if (e) return set_error(e);
    if (device < 0 || device >= ndevices) return set_error(cudaErrorInvalidDevice);
    cur_dev = device;
    return make_current(device);
}

API cudaError_t cudaGetDevice(int *device)
{
    cudaError_t e = ensure_init();
    if (e) return set_error(e);
    if (!device) return set_error(cudaErrorInvalidValue);
    CUcontext c = NULL;
    CUdevice d;
    if (drv.ctx_get(&c) == CUDA_SUCCESS && c && drv.ctx_device(&d) == CUDA_SUCCESS) *device = d;
    else *device = cur_dev;
    return cudaSuccess;
}

API cudaError_t cudaDeviceSynchronize(void)
{
    NEED_CTX();
    return ret(drv.ctx_sync());
}

API cudaError_t cudaRuntimeGetVersion(int *v)
{
    if (!v) return set_error(cudaErrorInvalidValue);
    *v = CUDART_VERSION;
    return cudaSuccess;
}

API cudaError_t cudaDriverGetVersion(int *v)
{
    if (!v) return set_error(cudaErrorInvalidValue);
    if (ensure_init() || !drv.driver_version) {
        *v = 0; /* the real runtime reports 0 when no driver is installed */
        return cudaSuccess;
    }
    return ret(drv.driver_version(v));
}

API cudaError_t cudaMemGetInfo(size_t *free_b, size_t *total)
{
    NEED_CTX();
    return ret(drv.mem_info(free_b, total));
}

/* ---------------------------------------------------------------------- allocations */
API cudaError_t cudaMalloc(void **p, size_t size)
{
    NEED_CTX();
    if (!p) return set_error(cudaErrorInvalidValue);
    if (size == 0) {
        *p = NULL;
        return cudaSuccess;
    }
    CUdeviceptr d = 0;
    CUresult r = drv.mem_alloc(&d, size);
    *p = r == CUDA_SUCCESS ? (void *)(uintptr_t)d : NULL;
    return ret(r);
}

API cudaError_t cudaFree(void *p)
{
    NEED_CTX();
    if (!p) return cudaSuccess;
    return ret(drv.mem_free((CUdeviceptr)(uintptr_t)p));
}

/* ptsz: the per-thread-default-stream entry point; read after ensure_ctx() loaded them. */
static cudaError_t malloc_async(void **p, size_t size, int ptsz, cudaStream_t s)
{
    NEED_CTX();
    CUresult (*fn)(CUdeviceptr *, size_t, CUstream) = ptsz ? drv.alloc_async_ptsz : drv.alloc_async;
    if (!fn) return set_error(cudaErrorNotSupported);
    if (!p) return set_error(cudaErrorInvalidValue);
    CUdeviceptr d = 0;
    CUresult r = fn(&d, size, s);
    *p = r == CUDA_SUCCESS ? (void *)(uintptr_t)d : NULL;
    return ret(r);
}

API cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s)
{
    return malloc_async(p, size, 0, s);
}

API cudaError_t cudaMallocAsync_ptsz(void **p, size_t size, cudaStream_t s)
{
    return malloc_async(p, size, 1, s);
}

static cudaError_t malloc_pool(void **p, size_t size, cudaMemPool_t pool, cudaStream_t s, int ptsz)
{
    NEED_CTX();
    CUresult (*fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream) = ptsz ? drv.alloc_pool_ptsz : drv.alloc_pool;
    if (!fn) return set_error(cudaErrorNotSupported);
    if (!p) return set_error(cudaErrorInvalidValue);
    CUdeviceptr d = 0;
    CUresult r = fn(&d, size, pool, s);
    *p = r == CUDA_SUCCESS ? (void *)(uintptr_t)d : NULL;
    return ret(r);
}

API cudaError_t cudaMallocFromPoolAsync(void **p, size_t size, cudaMemPool_t pool, cudaStream_t s)
{
    return malloc_pool(p, size, pool, s, 0);
}

API cudaError_t cudaMallocFromPoolAsync_ptsz(void **p, size_t size, cudaMemPool_t pool, cudaStream_t s)
{
    return malloc_pool(p, size, pool, s, 1);
}

API cudaError_t cudaFreeAsync(void *p, cudaStream_t s)
{
    NEED_CTX();
    NEED_FN(free_async);
    return ret(drv.free_async((CUdeviceptr)(uintptr_t)p, s));
}

API cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s)
{
    NEED_CTX();
    NEED_FN(free_async_ptsz);
    return ret(drv.free_async_ptsz((CUdeviceptr)(uintptr_t)p, s));
}

API cudaError_t cudaMallocManaged(void **p, size_t size, unsigned int flags)
{
    NEED_CTX();
    if (!p) return set_error(cudaErrorInvalidValue);
    CUdeviceptr d = 0;
    CUresult r = drv.mem_alloc_managed(&d, size, flags);
    *p = r == CUDA_SUCCESS ? (void *)(uintptr_t)d : NULL;
    return ret(r);
}

API cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
    NEED_CTX();
    if (!p || !pitch) return set_error(cudaErrorInvalidValue);
    CUdeviceptr d = 0;
    CUresult r = drv.mem_alloc_pitch(&d, pitch, width, height, 4);
    *p = r == CUDA_SUCCESS ? (void *)(uintptr_t)d : NULL;
    return ret(r);
}

API cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pp, struct cudaExtent ext)
{
    NEED_CTX();
    if (!pp) return set_error(cudaErrorInvalidValue);
    CUdeviceptr d = 0;
    size_t pitch = 0;
    CUresult r = drv.mem_alloc_pitch(&d, &pitch, ext.width, ext.height * ext.depth, 4);
    if (r == CUDA_SUCCESS)
        *pp = (struct cudaPitchedPtr){.ptr = (void *)(uintptr_t)d, .pitch = pitch, .xsize = ext.width, .ysize = ext.height};
    return ret(r);
}

API cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags)
{
    NEED_CTX();
    return ret(drv.host_alloc(p, size, flags));
}

API cudaError_t cudaMallocHost(void **p, size_t size)
{
    NEED_CTX();
    return ret(drv.host_alloc(p, size, 0));
}

API cudaError_t cudaFreeHost(void *p)
{
    NEED_CTX();
    return ret(drv.free_host(p));
}

API cudaError_t cudaHostRegister(void *p, size_t size, unsigned int flags)
{
    NEED_CTX();
    return ret(drv.host_register(p, size, flags));
}

API cudaError_t cudaHostUnregister(void *p)
{
    NEED_CTX();
    return ret(drv.host_unregister(p));
}

API cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const struct cudaMemPoolProps *props)
{
    NEED_CTX();
    NEED_FN(pool_create);
    _Static_assert(sizeof(struct cudaMemPoolProps) == sizeof(CUmemPoolProps), "same layout");
    return ret(drv.pool_create(pool, (const CUmemPoolProps *)(const void *)props));
}

API cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool)
{
    NEED_CTX();
    NEED_FN(pool_destroy);
    return ret(drv.pool_destroy(pool));
}

API cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t keep)
{
    NEED_CTX();
    NEED_FN(pool_trim);
    return ret(drv.pool_trim(pool, keep));
}

/* ------------------------------------------------------------------------- arrays */
/* A channel format as the driver's (format, channels): every channel of one size; 0 when
 * the driver has no such format. cudaArray_t is the driver's CUarray, as in the real one. */
static int driver_format(const struct cudaChannelFormatDesc *d, CUarray_format *fmt, unsigned *channels)
{
    if (!d || d->x <= 0) return 0;
    int bits = d->x;
    unsigned n = 1;
    if (d->y) n++, bits = d->y == bits ? bits : -1;
    if (d->z) n++, bits = d->z == bits ? bits : -1;
    if (d->w) n++, bits = d->w == bits ? bits : -1;
    if (bits < 0 || n == 3) return 0;
    switch (d->f) {
    case cudaChannelFormatKindSigned:
        *fmt = bits == 8 ? CU_AD_FORMAT_SIGNED_INT8 : bits == 16 ? CU_AD_FORMAT_SIGNED_INT16
             : bits == 32 ? CU_AD_FORMAT_SIGNED_INT32 : 0;
        break;
    case cudaChannelFormatKindUnsigned:
        *fmt = bits == 8 ? CU_AD_FORMAT_UNSIGNED_INT8 : bits == 16 ? CU_AD_FORMAT_UNSIGNED_INT16
             : bits == 32 ? CU_AD_FORMAT_UNSIGNED_INT32 : 0;
        break;
    case cudaChannelFormatKindFloat:
        *fmt = bits == 16 ? CU_AD_FORMAT_HALF : bits == 32 ? CU_AD_FORMAT_FLOAT : 0;
        break;
    default: return 0;
    }
    *channels = n;
    return *fmt != 0;
}

static cudaError_t array_desc(const struct cudaChannelFormatDesc *desc, struct cudaExtent ext,
                              unsigned flags, CUDA_ARRAY3D_DESCRIPTOR *d)
{
    CUarray_format fmt = 0;
    unsigned ch = 0;
    if (!driver_format(desc, &fmt, &ch)) return cudaErrorInvalidValue;
    *d = (CUDA_ARRAY3D_DESCRIPTOR){.Width = ext.width, .Height = ext.height, .Depth = ext.depth,
                                   .Format = fmt, .NumChannels = ch, .Flags = flags};
    return cudaSuccess;
}

API cudaError_t cudaMallocArray(cudaArray_t *arr, const struct cudaChannelFormatDesc *desc, size_t width,
                                size_t height, unsigned int flags)
{
    NEED_CTX();
    NEED_FN(array_create);
    CUDA_ARRAY3D_DESCRIPTOR d;
    cudaError_t e = array_desc(desc, (struct cudaExtent){width, height, 0}, flags, &d);
    if (e || !arr || flags) return set_error(e ? e : cudaErrorInvalidValue);
    CUDA_ARRAY_DESCRIPTOR d2 = {.Width = width, .Height = height, .Format = d.Format, .NumChannels = d.NumChannels};
    CUarray a = NULL;
    CUresult r = drv.array_create(&a, &d2);
    *arr = r == CUDA_SUCCESS ? (cudaArray_t)(void *)a : NULL;
    return ret(r);
}

API cudaError_t cudaMalloc3DArray(cudaArray_t *arr, const struct cudaChannelFormatDesc *desc, struct cudaExtent ext,
                                  unsigned int flags)
{
    NEED_CTX();
    NEED_FN(array3d_create);
    CUDA_ARRAY3D_DESCRIPTOR d;
    cudaError_t e = array_desc(desc, ext, flags, &d);
    if (e || !arr) return set_error(e ? e : cudaErrorInvalidValue);
    CUarray a = NULL;
    CUresult r = drv.array3d_create(&a, &d);
    *arr = r == CUDA_SUCCESS ? (cudaArray_t)(void *)a : NULL;
    return ret(r);
}

API cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t *arr, const struct cudaChannelFormatDesc *desc,
                                         struct cudaExtent ext, unsigned int levels, unsigned int flags)
{
    NEED_CTX();
    NEED_FN(mipmap_create);
    CUDA_ARRAY3D_DESCRIPTOR d;
    cudaError_t e = array_desc(desc, ext, flags, &d);
    if (e || !arr) return set_error(e ? e : cudaErrorInvalidValue);
    CUmipmappedArray a = NULL;
    CUresult r = drv.mipmap_create(&a, &d, levels);
    *arr = r == CUDA_SUCCESS ? (cudaMipmappedArray_t)(void *)a : NULL;
    return ret(r);
}

API cudaError_t cudaFreeArray(cudaArray_t arr)
{
    NEED_CTX();
    NEED_FN(array_destroy);
    if (!arr) return cudaSuccess;
    return ret(drv.array_destroy((CUarray)(void *)arr));
}

API cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t arr)
{
    NEED_CTX();
    NEED_FN(mipmap_destroy);
    if (!arr) return cudaSuccess;
    return ret(drv.mipmap_destroy((CUmipmappedArray)(void *)arr));
}

/* ------------------------------------------------------- stream capture and graphs */
/* cudaGraph_t, cudaGraphExec_t and cudaGraphNode_t are the driver's handles, as in the
 * real runtime; every call goes to the driver through the entry points. */
API cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    NEED_CTX();
    NEED_FN(capture_begin);
    return ret(drv.capture_begin(s, (CUstreamCaptureMode)mode));
}

API cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g)
{
    NEED_CTX();
    NEED_FN(capture_end);
    return ret(drv.capture_end(s, g));
}

API cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *st)
{
    NEED_CTX();
    NEED_FN(capture_status);
    CUstreamCaptureStatus c = CU_STREAM_CAPTURE_STATUS_NONE;
    CUresult r = drv.capture_status(s, &c);
    if (r == CUDA_SUCCESS && st) *st = (enum cudaStreamCaptureStatus)c;
    return ret(r);
}

API cudaError_t cudaGraphCreate(cudaGraph_t *g, unsigned int flags)
{
    NEED_CTX();
    NEED_FN(graph_create);
    return ret(drv.graph_create(g, flags));
}

API cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps,
                                         size_t ndeps, struct cudaMemAllocNodeParams *params)
{
    NEED_CTX();
    NEED_FN(graph_alloc_node);
    _Static_assert(sizeof(struct cudaMemAllocNodeParams) == sizeof(CUDA_MEM_ALLOC_NODE_PARAMS), "same layout");
    _Static_assert(offsetof(struct cudaMemAllocNodeParams, dptr) == offsetof(CUDA_MEM_ALLOC_NODE_PARAMS, dptr),
                   "same layout");
    return ret(drv.graph_alloc_node(node, g, deps, ndeps, (CUDA_MEM_ALLOC_NODE_PARAMS *)(void *)params));
}

API cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t *node, cudaGraph_t g, const cudaGraphNode_t *deps,
                                        size_t ndeps, void *dptr)
{
    NEED_CTX();
    NEED_FN(graph_free_node);
    return ret(drv.graph_free_node(node, g, deps, ndeps, (CUdeviceptr)(uintptr_t)dptr));
}

API cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags)
{
    NEED_CTX();
    NEED_FN(graph_instantiate);
    return ret(drv.graph_instantiate(e, g, flags));
}

API cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s)
{
    NEED_CTX();
    NEED_FN(graph_launch);
    return ret(drv.graph_launch(e, s));
}

API cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e)
{
    NEED_CTX();
    NEED_FN(graph_exec_destroy);
    return ret(drv.graph_exec_destroy(e));
}

API cudaError_t cudaGraphDestroy(cudaGraph_t g)
{
    NEED_CTX();
    NEED_FN(graph_destroy);
    return ret(drv.graph_destroy(g));
}

API cudaError_t cudaDeviceGraphMemTrim(int device)
{
    NEED_CTX();
    NEED_FN(graph_mem_trim);
    return ret(drv.graph_mem_trim(device));
}

API cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void *value)
{
    NEED_CTX();
    NEED_FN(graph_mem_attr);
    return ret(drv.graph_mem_attr(device, (CUgraphMem_attribute)attr, value));
}

/* ------------------------------------------------------------- copies and streams */
API cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind)
{
    NEED_CTX();
    CUdeviceptr d = (CUdeviceptr)(uintptr_t)dst, s = (CUdeviceptr)(uintptr_t)src;
    switch (kind) {
    case cudaMemcpyHostToDevice: return ret(drv.memcpy_htod(d, src, n));
    case cudaMemcpyDeviceToHost: return ret(drv.memcpy_dtoh(dst, s, n));
    case cudaMemcpyDeviceToDevice: return ret(drv.memcpy_dtod(d, s, n));
    case cudaMemcpyHostToHost:
    case cudaMemcpyDefault: return ret(drv.memcpy_any(d, s, n));
    }
    return set_error(cudaErrorInvalidValue);
}

API cudaError_t cudaMemset(void *p, int value, size_t n)
{
    NEED_CTX();
    return ret(drv.memset8((CUdeviceptr)(uintptr_t)p, (unsigned char)value, n));
}

API cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    NEED_CTX();
    return ret(drv.stream_create(s, 0));
}

API cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    NEED_CTX();
    return ret(drv.stream_destroy(s));
}

API cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    NEED_CTX();
    return ret(drv.stream_sync(s));
}

/* -------------------------------------------------------------------- entry points */
/* Not found: cudaSuccess with the status set when the caller asked for it (so NCCL's
 * check of both sees the miss), cudaErrorSymbolNotFound otherwise. */
static cudaError_t entry_point(const char *symbol, void **fn, int version, unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *status)
{
    cudaError_t e = ensure_init();
    if (e) return set_error(e);
    if (!symbol || !fn) return set_error(cudaErrorInvalidValue);
    if (!get_proc) return set_error(cudaErrorNotSupported);
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult r = get_proc(symbol, fn, version, flags, &st);
    if (status) *status = (enum cudaDriverEntryPointQueryResult)st;
    if (r == CUDA_SUCCESS || status) return cudaSuccess;
    return set_error(r == CUDA_ERROR_NOT_FOUND ? cudaErrorSymbolNotFound : map(r));
}

API cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **fn, unsigned long long flags,
                                        enum cudaDriverEntryPointQueryResult *status)
{
    return entry_point(symbol, fn, CUDART_VERSION, flags, status);
}

API cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn, unsigned int version,
                                                 unsigned long long flags,
                                                 enum cudaDriverEntryPointQueryResult *status)
{
    return entry_point(symbol, fn, (int)version, flags, status);
}

/* -------------------------------------------------------------------------- errors */
API cudaError_t cudaGetLastError(void)
{
    cudaError_t e = last_error;
    last_error = cudaSuccess;
    return e;
}

API cudaError_t cudaPeekAtLastError(void)
{
    return last_error;
}

API const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInitializationError: return "initialization error";
    case cudaErrorCudartUnloading: return "driver shutting down";
    case cudaErrorInsufficientDriver: return "CUDA driver version is insufficient for CUDA runtime version";
    case cudaErrorInvalidDevicePointer: return "invalid device pointer";
    case cudaErrorNoDevice: return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorDeviceUninitialized: return "invalid device context";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorIllegalState: return "the operation cannot be performed in the present state";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorSymbolNotFound: return "named symbol not found";
    case cudaErrorIllegalAddress: return "an illegal memory access was encountered";
    case cudaErrorHostMemoryAlreadyRegistered: return "part or all of the requested memory range is already mapped";
    case cudaErrorHostMemoryNotRegistered: return "pointer does not correspond to a registered memory region";
    case cudaErrorNotSupported: return "operation not supported";
    case cudaErrorUnknown: return "unknown error";
    }
    return "unrecognized error code";
}

/* Stands for the lazy loading of a library's kernels into the current context (what
 * cudart does for the fatbins a library registered): once per device and slot. */
static CUmodule loaded_modules[MAX_DEVICES][4];

static cudaError_t load_module_once(int slot, unsigned long long bytes, unsigned long long local_bytes,
                                    CUmodule *out)
{
    NEED_CTX();
    int dev = 0;
    cudaGetDevice(&dev);
    /* through the driver's private table, as the real runtime loads its fatbins' modules:
     * no cuModuleLoad* call that an interposer could see */
    const struct fakecuda_export_table *tab = NULL;
    if (slot < 0 || slot >= 4 || !drv.export_table || drv.export_table((const void **)&tab, NULL) != CUDA_SUCCESS ||
        !tab || tab->size < sizeof *tab || !tab->module_load)
        return set_error(cudaErrorInvalidValue);
    pthread_mutex_lock(&lock);
    CUresult r = CUDA_SUCCESS;
    if (!loaded_modules[dev][slot]) {
        struct fakecuda_image img = {FAKECUDA_IMAGE_MAGIC, bytes, local_bytes, 0};
        r = tab->module_load(&loaded_modules[dev][slot], &img);
    }
    *out = loaded_modules[dev][slot];
    pthread_mutex_unlock(&lock);
    return ret(r);
}

__attribute__((visibility("hidden"))) cudaError_t fakecudart_load_module_once(int slot, unsigned long long bytes)
{
    CUmodule m;
    return load_module_once(slot, bytes, 0, &m);
}

__attribute__((visibility("hidden"))) cudaError_t fakecudart_launch_once(int slot, unsigned long long bytes,
                                                                         unsigned long long local_bytes)
{
    CUmodule m = NULL;
    cudaError_t e = load_module_once(slot, bytes, local_bytes, &m);
    if (e != cudaSuccess) return e;
    if (!drv.module_function || !drv.launch) return set_error(cudaErrorInvalidValue);
    CUfunction f = NULL;
    CUresult r = drv.module_function(&f, m, "kernel");
    if (r == CUDA_SUCCESS) r = drv.launch(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    return ret(r);
}

/* ------------------------------------------------------------------ test interface */
API int fakecudart_resolution(struct fakecudart_resolution *out)
{
    *out = resolution;
    return 0;
}
