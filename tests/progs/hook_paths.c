/* hook_paths.c: makes the same driver and runtime memory calls through one lookup path (PLT, cuGetProcAddress v1/v2, entry points, dlsym), printing every result. */

/* Usage: hook_paths PATH [FLAGS]
 *   PATH: plt, getproc1, getproc2, entry, entryver, dlsym (driver calls, FLAGS 0/1/2 for
 *         the lookups), runtime (cudaMalloc & co through the PLT), rtdlsym (the same
 *         through dlsym on a libcudart handle).
 * Prints one line per call: its result and errno (set to 4242 before each call), never
 * an address, so runs with and without the tracer can be compared line by line. Ends
 * with the fake driver's own call counts of the stream-ordered variants, which show
 * which real function each lookup reached. */
#include "fake_cuda.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1ull << 20)

struct drv {
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free_)(CUdeviceptr);
    CUresult (*alloc_pitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
    CUresult (*alloc_managed)(CUdeviceptr *, size_t, unsigned int);
    CUresult (*alloc_host)(void **, size_t);
    CUresult (*host_alloc)(void **, size_t, unsigned int);
    CUresult (*free_host)(void *);
    CUresult (*host_register)(void *, size_t, unsigned int);
    CUresult (*host_unregister)(void *);
    CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream);
    CUresult (*alloc_pool)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
    CUresult (*free_async)(CUdeviceptr, CUstream);
    CUresult (*pool_create)(CUmemoryPool *, const CUmemPoolProps *);
    CUresult (*pool_destroy)(CUmemoryPool);
    CUresult (*pool_trim)(CUmemoryPool, size_t);
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *,
                       unsigned long long);
    CUresult (*release)(CUmemGenericAllocationHandle);
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*address_free)(CUdeviceptr, size_t);
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*unmap)(CUdeviceptr, size_t);
    CUresult (*import)(CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType);
    CUresult (*retain)(CUmemGenericAllocationHandle *, void *);
    CUresult (*ipc_open)(CUdeviceptr *, CUipcMemHandle, unsigned int);
    CUresult (*ipc_close)(CUdeviceptr);
    CUresult (*graph_alloc)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                            CUDA_MEM_ALLOC_NODE_PARAMS *);
    CUresult (*multicast)(CUmemGenericAllocationHandle *, const void *);
    CUresult (*array_create)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
    CUresult (*array3d_create)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *);
    CUresult (*mipmap_create)(CUmipmappedArray *, const CUDA_ARRAY3D_DESCRIPTOR *, unsigned int);
    CUresult (*array_destroy)(CUarray);
    CUresult (*mipmap_destroy)(CUmipmappedArray);
};

/* field, base name, version asked, ABI name, ABI name of the per-thread variant */
#define DRV_FNS(X)                                                                            \
    X(alloc, "cuMemAlloc", 3020, "cuMemAlloc_v2", NULL)                                       \
    X(free_, "cuMemFree", 3020, "cuMemFree_v2", NULL)                                         \
    X(alloc_pitch, "cuMemAllocPitch", 3020, "cuMemAllocPitch_v2", NULL)                       \
    X(alloc_managed, "cuMemAllocManaged", 6000, "cuMemAllocManaged", NULL)                    \
    X(alloc_host, "cuMemAllocHost", 3020, "cuMemAllocHost_v2", NULL)                          \
    X(host_alloc, "cuMemHostAlloc", 2020, "cuMemHostAlloc", NULL)                             \
    X(free_host, "cuMemFreeHost", 2000, "cuMemFreeHost", NULL)                                \
    X(host_register, "cuMemHostRegister", 6050, "cuMemHostRegister_v2", NULL)                 \
    X(host_unregister, "cuMemHostUnregister", 4000, "cuMemHostUnregister", NULL)              \
    X(alloc_async, "cuMemAllocAsync", 11020, "cuMemAllocAsync", "cuMemAllocAsync_ptsz")       \
    X(alloc_pool, "cuMemAllocFromPoolAsync", 11020, "cuMemAllocFromPoolAsync",                \
      "cuMemAllocFromPoolAsync_ptsz")                                                         \
    X(free_async, "cuMemFreeAsync", 11020, "cuMemFreeAsync", "cuMemFreeAsync_ptsz")           \
    X(pool_create, "cuMemPoolCreate", 11020, "cuMemPoolCreate", NULL)                         \
    X(pool_destroy, "cuMemPoolDestroy", 11020, "cuMemPoolDestroy", NULL)                      \
    X(pool_trim, "cuMemPoolTrimTo", 11020, "cuMemPoolTrimTo", NULL)                           \
    X(create, "cuMemCreate", 10020, "cuMemCreate", NULL)                                      \
    X(release, "cuMemRelease", 10020, "cuMemRelease", NULL)                                   \
    X(reserve, "cuMemAddressReserve", 10020, "cuMemAddressReserve", NULL)                     \
    X(address_free, "cuMemAddressFree", 10020, "cuMemAddressFree", NULL)                      \
    X(map, "cuMemMap", 10020, "cuMemMap", NULL)                                               \
    X(unmap, "cuMemUnmap", 10020, "cuMemUnmap", NULL)                                         \
    X(import, "cuMemImportFromShareableHandle", 10020, "cuMemImportFromShareableHandle", NULL) \
    X(retain, "cuMemRetainAllocationHandle", 11000, "cuMemRetainAllocationHandle", NULL)      \
    X(ipc_open, "cuIpcOpenMemHandle", 11000, "cuIpcOpenMemHandle_v2", NULL)                   \
    X(ipc_close, "cuIpcCloseMemHandle", 4010, "cuIpcCloseMemHandle", NULL)                    \
    X(graph_alloc, "cuGraphAddMemAllocNode", 11040, "cuGraphAddMemAllocNode", NULL)           \
    X(multicast, "cuMulticastCreate", 12010, "cuMulticastCreate", NULL)                       \
    X(array_create, "cuArrayCreate", 3020, "cuArrayCreate_v2", NULL)                          \
    X(array3d_create, "cuArray3DCreate", 3020, "cuArray3DCreate_v2", NULL)                    \
    X(mipmap_create, "cuMipmappedArrayCreate", 5000, "cuMipmappedArrayCreate", NULL)          \
    X(array_destroy, "cuArrayDestroy", 2000, "cuArrayDestroy", NULL)                          \
    X(mipmap_destroy, "cuMipmappedArrayDestroy", 5000, "cuMipmappedArrayDestroy", NULL)

static void die(const char *what)
{
    fprintf(stderr, "hook_paths: %s\n", what);
    exit(2);
}

static void fill_plt(struct drv *d)
{
    d->alloc = cuMemAlloc_v2;
    d->free_ = cuMemFree_v2;
    d->alloc_pitch = cuMemAllocPitch_v2;
    d->alloc_managed = cuMemAllocManaged;
    d->alloc_host = cuMemAllocHost_v2;
    d->host_alloc = cuMemHostAlloc;
    d->free_host = cuMemFreeHost;
    d->host_register = cuMemHostRegister_v2;
    d->host_unregister = cuMemHostUnregister;
    d->alloc_async = cuMemAllocAsync;
    d->alloc_pool = cuMemAllocFromPoolAsync;
    d->free_async = cuMemFreeAsync;
    d->pool_create = cuMemPoolCreate;
    d->pool_destroy = cuMemPoolDestroy;
    d->pool_trim = cuMemPoolTrimTo;
    d->create = cuMemCreate;
    d->release = cuMemRelease;
    d->reserve = cuMemAddressReserve;
    d->address_free = cuMemAddressFree;
    d->map = cuMemMap;
    d->unmap = cuMemUnmap;
    d->import = cuMemImportFromShareableHandle;
    d->retain = cuMemRetainAllocationHandle;
    d->ipc_open = cuIpcOpenMemHandle_v2;
    d->ipc_close = cuIpcCloseMemHandle;
    d->graph_alloc = cuGraphAddMemAllocNode;
    d->multicast = cuMulticastCreate;
    d->array_create = cuArrayCreate_v2;
    d->array3d_create = cuArray3DCreate_v2;
    d->mipmap_create = cuMipmappedArrayCreate;
    d->array_destroy = cuArrayDestroy;
    d->mipmap_destroy = cuMipmappedArrayDestroy;
}

typedef CUresult gpa1_fn(const char *, void **, int, cuuint64_t);
typedef CUresult gpa2_fn(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void *lookup(const char *path, void *h, const char *base, int ver, unsigned flags,
                    const char *abi, const char *abi_ptsz)
{
    void *p = NULL;
    if (!strcmp(path, "dlsym")) {
        p = dlsym(h, flags == 2 && abi_ptsz ? abi_ptsz : abi);
    } else if (!strcmp(path, "getproc1")) {
        /* As cudart does: the v1 entry point asked for itself at 11030 replaces dlsym's. */
        gpa1_fn *gpa = (gpa1_fn *)dlsym(h, "cuGetProcAddress");
        void *self = NULL;
        if (!gpa || gpa("cuGetProcAddress", &self, 11030, 0) != CUDA_SUCCESS || !self)
            die("cuGetProcAddress v1");
        if (((gpa1_fn *)self)(base, &p, ver, flags) != CUDA_SUCCESS)
            p = NULL;
    } else if (!strcmp(path, "getproc2")) {
        gpa2_fn *gpa = (gpa2_fn *)dlsym(h, "cuGetProcAddress_v2");
        void *self = NULL;
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (!gpa || gpa("cuGetProcAddress", &self, 12000, 0, &st) != CUDA_SUCCESS || !self)
            die("cuGetProcAddress_v2");
        st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (((gpa2_fn *)self)(base, &p, ver, flags, &st) != CUDA_SUCCESS ||
            st != CU_GET_PROC_ADDRESS_SUCCESS)
            p = NULL;
    } else if (!strcmp(path, "entry")) {
        enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
        if (cudaGetDriverEntryPoint(base, &p, flags, &st) != cudaSuccess ||
            st != cudaDriverEntryPointSuccess)
            p = NULL;
    } else if (!strcmp(path, "entryver")) {
        enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
        if (cudaGetDriverEntryPointByVersion(base, &p, 13000, flags, &st) != cudaSuccess ||
            st != cudaDriverEntryPointSuccess)
            p = NULL;
    }
    if (!p) {
        fprintf(stderr, "hook_paths: %s: no %s\n", path, base);
        exit(2);
    }
    return p;
}

static void fill_lookup(struct drv *d, const char *path, unsigned flags)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        die("dlopen libcuda.so.1");
#define X(field, base, ver, abi, abi_ptsz)                                                    \
    *(void **)&d->field = lookup(path, h, base, ver, flags, abi, abi_ptsz);
    DRV_FNS(X)
#undef X
}

static int step;

static void show(const char *what, int r, const char *extra)
{
    printf("%02d %-28s r=%d errno=%d%s%s\n", ++step, what, r, errno, extra ? " " : "",
           extra ? extra : "");
}

#define CALL(what, expr)                                                                      \
    do {                                                                                      \
        errno = 4242;                                                                         \
        int r_ = (int)(expr);                                                                 \
        show(what, r_, NULL);                                                                 \
    } while (0)

static void driver_sequence(const struct drv *d)
{
    CUdevice dev;
    CUcontext ctx;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx))
        die("context");
    CUstream s;
    if (cuStreamCreate(&s, 0))
        die("stream");

    CUdeviceptr p, q;
    size_t pitch = 0;
    void *hp;
    char extra[64];

    CALL("cuMemAlloc", d->alloc(&p, 3 * MIB));
    CALL("cuMemFree", d->free_(p));
    errno = 4242;
    int r = d->alloc_pitch(&p, &pitch, 1000, 100, 4);
    snprintf(extra, sizeof extra, "pitch=%zu", pitch);
    show("cuMemAllocPitch", r, extra);
    CALL("cuMemFree", d->free_(p));
    CALL("cuMemAllocManaged", d->alloc_managed(&p, 5 * MIB, 1));
    CALL("cuMemFree", d->free_(p));
    CALL("cuMemAllocHost", d->alloc_host(&hp, 1 * MIB));
    CALL("cuMemFreeHost", d->free_host(hp));
    CALL("cuMemHostAlloc", d->host_alloc(&hp, 2 * MIB, 0));
    CALL("cuMemFreeHost", d->free_host(hp));
    void *buf = aligned_alloc(4096, MIB);
    CALL("cuMemHostRegister", d->host_register(buf, MIB, 0));
    CALL("cuMemHostUnregister", d->host_unregister(buf));
    free(buf);

    CALL("cuMemAllocAsync", d->alloc_async(&p, 7 * MIB, s));
    CALL("cuMemFreeAsync", d->free_async(p, s));
    CUmemPoolProps pp;
    memset(&pp, 0, sizeof pp);
    pp.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    pp.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    pp.location.id = 0;
    CUmemoryPool pool;
    CALL("cuMemPoolCreate", d->pool_create(&pool, &pp));
    CALL("cuMemAllocFromPoolAsync", d->alloc_pool(&p, 9 * MIB, pool, s));
    CALL("cuMemFreeAsync", d->free_async(p, s));
    CALL("cuMemPoolTrimTo", d->pool_trim(pool, 0));
    CALL("cuMemPoolDestroy", d->pool_destroy(pool));

    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    CUmemGenericAllocationHandle h, h2, h3;
    CUdeviceptr va;
    CALL("cuMemCreate", d->create(&h, 4 * MIB, &prop, 0));
    CALL("cuMemAddressReserve", d->reserve(&va, 8 * MIB, 0, 0, 0));
    CALL("cuMemMap", d->map(va, 4 * MIB, 0, h, 0));
    CALL("cuMemRetainAllocationHandle", d->retain(&h2, (void *)(uintptr_t)va));
    int fd = -1;
    if (cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0))
        die("export");
    CALL("cuMemImportFromShareableHandle",
         d->import(&h3, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    CALL("cuMemRelease", d->release(h3));
    CALL("cuMemRelease", d->release(h2));
    CALL("cuMemRelease", d->release(h));
    CALL("cuMemUnmap", d->unmap(va, 4 * MIB));
    CALL("cuMemAddressFree", d->address_free(va, 8 * MIB));
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_NONE;
    CALL("cuMemCreate", d->create(&h, 2 * MIB, &prop, 0));
    CALL("cuMemRelease", d->release(h));

    CALL("cuMemAlloc", d->alloc(&p, 2 * MIB));
    CUipcMemHandle ih;
    if (cuIpcGetMemHandle(&ih, p))
        die("ipc handle");
    errno = 4242;
    r = d->ipc_open(&q, ih, 1);
    show("cuIpcOpenMemHandle", r, NULL);
    if (r == CUDA_SUCCESS)
        CALL("cuIpcCloseMemHandle", d->ipc_close(q));
    CALL("cuMemFree", d->free_(p));

    CUgraph g;
    if (cuGraphCreate(&g, 0))
        die("graph");
    CUDA_MEM_ALLOC_NODE_PARAMS np;
    memset(&np, 0, sizeof np);
    np.poolProps = pp;
    np.bytesize = 6 * MIB;
    CUgraphNode node;
    CALL("cuGraphAddMemAllocNode", d->graph_alloc(&node, g, NULL, 0, &np));
    cuGraphDestroy(g);

    struct { /* CUmulticastObjectProp, which fake_cuda.h leaves opaque */
        unsigned int numDevices;
        size_t size;
        unsigned long long handleTypes, flags;
    } mp;
    memset(&mp, 0, sizeof mp);
    mp.numDevices = 1;
    mp.size = 2 * MIB;
    CALL("cuMulticastCreate", d->multicast(&h, &mp));

    /* Arrays: 1024² float4 (16 MiB), 256²×64 float4 (64 MiB), 512² uchar4 with 4 levels
     * (1,392,640 bytes), then one too large for the device (4 TiB). */
    CUarray arr2d, arr3d, huge;
    CUmipmappedArray mip;
    CUDA_ARRAY_DESCRIPTOR ad = { 1024, 1024, CU_AD_FORMAT_FLOAT, 4 };
    CUDA_ARRAY3D_DESCRIPTOR a3 = { 256, 256, 64, CU_AD_FORMAT_FLOAT, 4, 0 };
    CUDA_ARRAY3D_DESCRIPTOR am = { 512, 512, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0 };
    CUDA_ARRAY3D_DESCRIPTOR ah = { 65536, 65536, 64, CU_AD_FORMAT_FLOAT, 4, 0 };
    size_t free0 = 0, free1 = 0, total = 0;
    cuMemGetInfo_v2(&free0, &total);
    CALL("cuArrayCreate", d->array_create(&arr2d, &ad));
    CALL("cuArray3DCreate", d->array3d_create(&arr3d, &a3));
    CALL("cuMipmappedArrayCreate", d->mipmap_create(&mip, &am, 4));
    cuMemGetInfo_v2(&free1, &total);
    printf("arrays took %zu bytes\n", free0 - free1);
    /* A layered mipmapped array (levels keep the 8 layers), a level count past the
     * largest (clamped to 5 for 16²), a sparse array (no memory until mapped). */
    CUmipmappedArray mipl, mipc;
    CUarray sparse;
    CUDA_ARRAY3D_DESCRIPTOR al = { 64, 64, 8, CU_AD_FORMAT_FLOAT, 1, CUDA_ARRAY3D_LAYERED };
    CUDA_ARRAY3D_DESCRIPTOR ac = { 16, 16, 0, CU_AD_FORMAT_UNSIGNED_INT16, 2, 0 };
    CUDA_ARRAY3D_DESCRIPTOR as = { 4096, 4096, 0, CU_AD_FORMAT_FLOAT, 4, CUDA_ARRAY3D_SPARSE };
    CALL("cuMipmappedArrayCreate(layered)", d->mipmap_create(&mipl, &al, 3));
    CALL("cuMipmappedArrayCreate(99 levels)", d->mipmap_create(&mipc, &ac, 99));
    CALL("cuArray3DCreate(sparse)", d->array3d_create(&sparse, &as));
    CALL("cuArray3DCreate(out of memory)", d->array3d_create(&huge, &ah));
    CALL("cuArrayDestroy", d->array_destroy(arr2d));
    CALL("cuArrayDestroy", d->array_destroy(arr3d));
    CALL("cuArrayDestroy", d->array_destroy(sparse));
    CALL("cuMipmappedArrayDestroy", d->mipmap_destroy(mip));
    CALL("cuMipmappedArrayDestroy", d->mipmap_destroy(mipl));
    CALL("cuMipmappedArrayDestroy", d->mipmap_destroy(mipc));

    CALL("cuMemAlloc(out of memory)", d->alloc(&p, 1ull << 40));

    struct fakecuda_fn_stats a, b;
    fakecuda_fn_stats("cuMemAllocAsync", &a);
    fakecuda_fn_stats("cuMemAllocAsync_ptsz", &b);
    printf("variants cuMemAllocAsync=%lu cuMemAllocAsync_ptsz=%lu\n", a.calls, b.calls);
}

struct rt {
    cudaError_t (*malloc_)(void **, size_t);
    cudaError_t (*free_)(void *);
    cudaError_t (*malloc_async)(void **, size_t, cudaStream_t);
    cudaError_t (*free_async)(void *, cudaStream_t);
    cudaError_t (*malloc_pool)(void **, size_t, cudaMemPool_t, cudaStream_t);
    cudaError_t (*malloc_managed)(void **, size_t, unsigned int);
    cudaError_t (*malloc_pitch)(void **, size_t *, size_t, size_t);
    cudaError_t (*malloc_3d)(struct cudaPitchedPtr *, struct cudaExtent);
    cudaError_t (*malloc_host)(void **, size_t);
    cudaError_t (*host_alloc)(void **, size_t, unsigned int);
    cudaError_t (*free_host)(void *);
    cudaError_t (*host_register)(void *, size_t, unsigned int);
    cudaError_t (*host_unregister)(void *);
    cudaError_t (*pool_create)(cudaMemPool_t *, const struct cudaMemPoolProps *);
    cudaError_t (*pool_destroy)(cudaMemPool_t);
    cudaError_t (*pool_trim)(cudaMemPool_t, size_t);
    cudaError_t (*malloc_array)(cudaArray_t *, const struct cudaChannelFormatDesc *, size_t, size_t,
                                unsigned int);
    cudaError_t (*malloc_3d_array)(cudaArray_t *, const struct cudaChannelFormatDesc *,
                                   struct cudaExtent, unsigned int);
    cudaError_t (*malloc_mipmap)(cudaMipmappedArray_t *, const struct cudaChannelFormatDesc *,
                                 struct cudaExtent, unsigned int, unsigned int);
    cudaError_t (*free_array)(cudaArray_t);
    cudaError_t (*free_mipmap)(cudaMipmappedArray_t);
};

#define RT_FNS(X)                                                                             \
    X(malloc_, cudaMalloc) X(free_, cudaFree) X(malloc_async, cudaMallocAsync)                \
    X(free_async, cudaFreeAsync) X(malloc_pool, cudaMallocFromPoolAsync)                      \
    X(malloc_managed, cudaMallocManaged) X(malloc_pitch, cudaMallocPitch)                     \
    X(malloc_3d, cudaMalloc3D) X(malloc_host, cudaMallocHost) X(host_alloc, cudaHostAlloc)    \
    X(free_host, cudaFreeHost) X(host_register, cudaHostRegister)                             \
    X(host_unregister, cudaHostUnregister) X(pool_create, cudaMemPoolCreate)                  \
    X(pool_destroy, cudaMemPoolDestroy) X(pool_trim, cudaMemPoolTrimTo)                      \
    X(malloc_array, cudaMallocArray) X(malloc_3d_array, cudaMalloc3DArray)                    \
    X(malloc_mipmap, cudaMallocMipmappedArray) X(free_array, cudaFreeArray)                   \
    X(free_mipmap, cudaFreeMipmappedArray)

static void runtime_sequence(const struct rt *t)
{
    void *p;
    size_t pitch = 0;
    char extra[64];
    cudaStream_t s;
    if (cudaSetDevice(0) || cudaStreamCreate(&s))
        die("runtime setup");
    CALL("cudaMalloc", t->malloc_(&p, 3 * MIB));
    CALL("cudaFree", t->free_(p));
    errno = 4242;
    int r = t->malloc_pitch(&p, &pitch, 1000, 100);
    snprintf(extra, sizeof extra, "pitch=%zu", pitch);
    show("cudaMallocPitch", r, extra);
    CALL("cudaFree", t->free_(p));
    struct cudaPitchedPtr pp;
    struct cudaExtent ext = { 1000, 10, 3 };
    CALL("cudaMalloc3D", t->malloc_3d(&pp, ext));
    CALL("cudaFree", t->free_(pp.ptr));
    CALL("cudaMallocManaged", t->malloc_managed(&p, 5 * MIB, 1));
    CALL("cudaFree", t->free_(p));
    CALL("cudaMallocHost", t->malloc_host(&p, MIB));
    CALL("cudaFreeHost", t->free_host(p));
    CALL("cudaHostAlloc", t->host_alloc(&p, 2 * MIB, 0));
    CALL("cudaFreeHost", t->free_host(p));
    void *buf = aligned_alloc(4096, MIB);
    CALL("cudaHostRegister", t->host_register(buf, MIB, 0));
    CALL("cudaHostUnregister", t->host_unregister(buf));
    free(buf);
    CALL("cudaMallocAsync", t->malloc_async(&p, 7 * MIB, s));
    CALL("cudaFreeAsync", t->free_async(p, s));
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    cudaMemPool_t pool;
    CALL("cudaMemPoolCreate", t->pool_create(&pool, &props));
    CALL("cudaMallocFromPoolAsync", t->malloc_pool(&p, 9 * MIB, pool, s));
    CALL("cudaFreeAsync", t->free_async(p, s));
    CALL("cudaMemPoolTrimTo", t->pool_trim(pool, 0));
    CALL("cudaMemPoolDestroy", t->pool_destroy(pool));
    /* Arrays: 2048² float4 (64 MiB), 256²×64 float4 (64 MiB), 256² float with 3 levels
     * (344,064 bytes), then one too large for the device (4 TiB). */
    struct cudaChannelFormatDesc f4 = { 32, 32, 32, 32, cudaChannelFormatKindFloat };
    struct cudaChannelFormatDesc f1 = { 32, 0, 0, 0, cudaChannelFormatKindFloat };
    cudaArray_t arr2d, arr3d, huge;
    cudaMipmappedArray_t mip;
    size_t free0 = 0, free1 = 0, total = 0;
    cudaMemGetInfo(&free0, &total);
    CALL("cudaMallocArray", t->malloc_array(&arr2d, &f4, 2048, 2048, 0));
    CALL("cudaMalloc3DArray",
         t->malloc_3d_array(&arr3d, &f4, (struct cudaExtent){ 256, 256, 64 }, 0));
    CALL("cudaMallocMipmappedArray",
         t->malloc_mipmap(&mip, &f1, (struct cudaExtent){ 256, 256, 0 }, 3, 0));
    cudaMemGetInfo(&free1, &total);
    printf("arrays took %zu bytes\n", free0 - free1);
    CALL("cudaMalloc3DArray(out of memory)",
         t->malloc_3d_array(&huge, &f4, (struct cudaExtent){ 65536, 65536, 64 }, 0));
    CALL("cudaFreeArray", t->free_array(arr2d));
    CALL("cudaFreeArray", t->free_array(arr3d));
    CALL("cudaFreeMipmappedArray", t->free_mipmap(mip));
    CALL("cudaMalloc(out of memory)", t->malloc_(&p, 1ull << 40));
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die("usage: hook_paths PATH [FLAGS]");
    const char *path = argv[1];
    unsigned flags = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(path, "runtime") || !strcmp(path, "rtdlsym")) {
        struct rt t;
        if (!strcmp(path, "runtime")) {
#define X(field, name) t.field = name;
            RT_FNS(X)
#undef X
        } else {
            void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
            if (!h)
                die("dlopen libcudart.so.13");
#define X(field, name)                                                                        \
    if (!(*(void **)&t.field = dlsym(h, #name)))                                              \
        die("dlsym " #name);
            RT_FNS(X)
#undef X
        }
        runtime_sequence(&t);
    } else {
        struct drv d;
        if (!strcmp(path, "plt"))
            fill_plt(&d);
        else
            fill_lookup(&d, path, flags);
        driver_sequence(&d);
    }
    printf("hook_paths: done\n");
    return 0;
}
