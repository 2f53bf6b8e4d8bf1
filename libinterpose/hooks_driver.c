/* hooks_driver.c: the CUDA driver's memory calls (cuMem*, cuIpc*, VMM, pools, graph allocations): call the real one, then record. */
#include <errno.h>

#include "hooks.h"

#define U64(x) ((uint64_t)(uintptr_t)(x))
#define ALWAYS static inline __attribute__((always_inline))

#define ALLOC_BODY(api, kind, call, address, bytes, device, stream, related, offset)         \
    GMT_ALLOC_BODY(CUresult, CUDA_SUCCESS, call, api, kind, address, bytes, device, stream, \
                   related, offset)
#define FREE_BODY(api, call, address, stream) GMT_FREE_BODY(CUresult, call, api, address, stream)

ALWAYS CUresult gmt_body_cuMemAlloc(gmt_fn_cuMemAlloc_v2 *real, CUdeviceptr *dptr, size_t bytes)
{
    ALLOC_BODY(GMT_API_cuMemAlloc, GMT_KIND_DEVICE, real(dptr, bytes), *dptr, bytes, -1, 0, 0, 0);
}

ALWAYS CUresult gmt_body_cuMemFree(gmt_fn_cuMemFree_v2 *real, CUdeviceptr dptr)
{
    FREE_BODY(GMT_API_cuMemFree, real(dptr), dptr, 0);
}

ALWAYS CUresult gmt_body_cuMemAllocPitch(gmt_fn_cuMemAllocPitch_v2 *real, CUdeviceptr *dptr,
                                         size_t *pitch, size_t w, size_t h, unsigned int elem)
{
    if (!gmt_hook_enter())
        return real(dptr, pitch, w, h, elem);
    CUresult r = real(dptr, pitch, w, h, elem);
    gmt_hook_leave();
    bool ok = r == CUDA_SUCCESS;
    gmt_record_alloc(ok, (int)r, GMT_API_cuMemAllocPitch, GMT_KIND_DEVICE, ok ? *dptr : 0,
                     ok ? (uint64_t)*pitch * h : (uint64_t)w * h, -1, 0, 0, 0);
    return r;
}

ALWAYS CUresult gmt_body_cuMemAllocManaged(gmt_fn_cuMemAllocManaged *real, CUdeviceptr *dptr,
                                           size_t bytes, unsigned int flags)
{
    ALLOC_BODY(GMT_API_cuMemAllocManaged, GMT_KIND_MANAGED, real(dptr, bytes, flags), *dptr,
               bytes, -1, 0, 0, 0);
}

ALWAYS CUresult gmt_body_cuMemAllocHost(gmt_fn_cuMemAllocHost_v2 *real, void **pp, size_t bytes)
{
    ALLOC_BODY(GMT_API_cuMemAllocHost, GMT_KIND_HOST_PINNED, real(pp, bytes), U64(*pp), bytes,
               -1, 0, 0, 0);
}

ALWAYS CUresult gmt_body_cuMemHostAlloc(gmt_fn_cuMemHostAlloc *real, void **pp, size_t bytes,
                                        unsigned int flags)
{
    ALLOC_BODY(GMT_API_cuMemHostAlloc, GMT_KIND_HOST_PINNED, real(pp, bytes, flags), U64(*pp),
               bytes, -1, 0, 0, 0);
}

ALWAYS CUresult gmt_body_cuMemFreeHost(gmt_fn_cuMemFreeHost *real, void *p)
{
    FREE_BODY(GMT_API_cuMemFreeHost, real(p), U64(p), 0);
}

ALWAYS CUresult gmt_body_cuMemHostRegister(gmt_fn_cuMemHostRegister_v2 *real, void *p,
                                           size_t bytes, unsigned int flags)
{
    ALLOC_BODY(GMT_API_cuMemHostRegister, GMT_KIND_HOST_REGISTERED, real(p, bytes, flags),
               U64(p), bytes, -1, 0, 0, 0);
}

ALWAYS CUresult gmt_body_cuMemHostUnregister(gmt_fn_cuMemHostUnregister *real, void *p)
{
    FREE_BODY(GMT_API_cuMemHostUnregister, real(p), U64(p), 0);
}

/* Under stream capture an async allocation is a graph's memory node (hooks_graph.c). */
ALWAYS CUresult gmt_body_cuMemAllocAsync(gmt_fn_cuMemAllocAsync *real, CUdeviceptr *dptr,
                                         size_t bytes, CUstream s)
{
    GMT_ASYNC_ALLOC_BODY(CUresult, CUDA_SUCCESS, real(dptr, bytes, s), GMT_API_cuMemAllocAsync,
                         *dptr, bytes, U64(s), 0);
}

ALWAYS CUresult gmt_body_cuMemAllocFromPoolAsync(gmt_fn_cuMemAllocFromPoolAsync *real,
                                                 CUdeviceptr *dptr, size_t bytes,
                                                 CUmemoryPool pool, CUstream s)
{
    GMT_ASYNC_ALLOC_BODY(CUresult, CUDA_SUCCESS, real(dptr, bytes, pool, s),
                         GMT_API_cuMemAllocFromPoolAsync, *dptr, bytes, U64(s), U64(pool));
}

ALWAYS CUresult gmt_body_cuMemFreeAsync(gmt_fn_cuMemFreeAsync *real, CUdeviceptr dptr, CUstream s)
{
    FREE_BODY(GMT_API_cuMemFreeAsync, real(dptr, s), dptr, U64(s));
}

static int pool_device(const CUmemPoolProps *props)
{
    return props && props->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? props->location.id
                                                                         : -1;
}

ALWAYS CUresult gmt_body_cuMemPoolCreate(gmt_fn_cuMemPoolCreate *real, CUmemoryPool *pool,
                                         const CUmemPoolProps *props)
{
    ALLOC_BODY(GMT_API_cuMemPoolCreate, GMT_KIND_POOL, real(pool, props), U64(*pool), 0,
               pool_device(props), 0, 0, 0);
}

ALWAYS CUresult gmt_body_cuMemPoolDestroy(gmt_fn_cuMemPoolDestroy *real, CUmemoryPool pool)
{
    FREE_BODY(GMT_API_cuMemPoolDestroy, real(pool), U64(pool), 0);
}

/* Trimming returns a pool's unused memory to the device: no allocation begins or ends,
 * and the format has no record for it, so it passes through. */
ALWAYS CUresult gmt_body_cuMemPoolTrimTo(gmt_fn_cuMemPoolTrimTo *real, CUmemoryPool pool,
                                         size_t keep)
{
    return real(pool, keep);
}

static enum gmt_kind create_kind(const CUmemAllocationProp *prop)
{
    /* NCCL puts host memory in cuMemCreate with a host-NUMA location (its location type says so). */
    if (prop && (prop->location.type == CU_MEM_LOCATION_TYPE_HOST ||
                 prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
                 prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT))
        return GMT_KIND_PHYSICAL_HOST;
    return GMT_KIND_PHYSICAL;
}

static int create_device(const CUmemAllocationProp *prop)
{
    return prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1;
}

ALWAYS CUresult gmt_body_cuMemCreate(gmt_fn_cuMemCreate *real, CUmemGenericAllocationHandle *h,
                                     size_t size, const CUmemAllocationProp *prop,
                                     unsigned long long flags)
{
    ALLOC_BODY(GMT_API_cuMemCreate, create_kind(prop), real(h, size, prop, flags), *h, size,
               create_device(prop), 0, 0, 0);
}

ALWAYS CUresult gmt_body_cuMemRelease(gmt_fn_cuMemRelease *real, CUmemGenericAllocationHandle h)
{
    FREE_BODY(GMT_API_cuMemRelease, real(h), h, 0);
}

ALWAYS CUresult gmt_body_cuMemAddressReserve(gmt_fn_cuMemAddressReserve *real, CUdeviceptr *ptr,
                                             size_t size, size_t align, CUdeviceptr addr,
                                             unsigned long long flags)
{
    ALLOC_BODY(GMT_API_cuMemAddressReserve, GMT_KIND_VIRTUAL,
               real(ptr, size, align, addr, flags), *ptr, size, -1, 0, 0, 0);
}

ALWAYS CUresult gmt_body_cuMemAddressFree(gmt_fn_cuMemAddressFree *real, CUdeviceptr ptr,
                                          size_t size)
{
    FREE_BODY(GMT_API_cuMemAddressFree, real(ptr, size), ptr, 0);
}

ALWAYS CUresult gmt_body_cuMemMap(gmt_fn_cuMemMap *real, CUdeviceptr ptr, size_t size,
                                  size_t offset, CUmemGenericAllocationHandle h,
                                  unsigned long long flags)
{
    ALLOC_BODY(GMT_API_cuMemMap, GMT_KIND_MAPPING, real(ptr, size, offset, h, flags), ptr, size,
               -1, 0, h, offset);
}

ALWAYS CUresult gmt_body_cuMemUnmap(gmt_fn_cuMemUnmap *real, CUdeviceptr ptr, size_t size)
{
    FREE_BODY(GMT_API_cuMemUnmap, real(ptr, size), ptr, 0);
}

ALWAYS CUresult gmt_body_cuMemImportFromShareableHandle(gmt_fn_cuMemImportFromShareableHandle *real,
                                                        CUmemGenericAllocationHandle *h, void *os,
                                                        CUmemAllocationHandleType type)
{
    ALLOC_BODY(GMT_API_cuMemImportFromShareableHandle, GMT_KIND_IMPORTED, real(h, os, type), *h,
               0, -1, 0, 0, 0);
}

ALWAYS CUresult gmt_body_cuMemRetainAllocationHandle(gmt_fn_cuMemRetainAllocationHandle *real,
                                                     CUmemGenericAllocationHandle *h, void *addr)
{
    ALLOC_BODY(GMT_API_cuMemRetainAllocationHandle, GMT_KIND_RETAINED, real(h, addr), *h, 0, -1,
               0, U64(addr), 0);
}

ALWAYS CUresult gmt_body_cuIpcOpenMemHandle(gmt_fn_cuIpcOpenMemHandle_v2 *real, CUdeviceptr *p,
                                            CUipcMemHandle handle, unsigned int flags)
{
    ALLOC_BODY(GMT_API_cuIpcOpenMemHandle, GMT_KIND_IPC_MAPPING, real(p, handle, flags), *p, 0,
               -1, 0, 0, 0);
}

ALWAYS CUresult gmt_body_cuIpcCloseMemHandle(gmt_fn_cuIpcCloseMemHandle *real, CUdeviceptr p)
{
    FREE_BODY(GMT_API_cuIpcCloseMemHandle, real(p), p, 0);
}

ALWAYS CUresult gmt_body_cuGraphAddMemAllocNode(gmt_fn_cuGraphAddMemAllocNode *real,
                                                CUgraphNode *node, CUgraph graph,
                                                const CUgraphNode *deps, size_t ndeps,
                                                CUDA_MEM_ALLOC_NODE_PARAMS *params)
{
    if (!gmt_hook_enter())
        return real(node, graph, deps, ndeps, params);
    CUresult r = real(node, graph, deps, ndeps, params);
    gmt_hook_leave();
    bool ok = r == CUDA_SUCCESS && params;
    if (ok)
        gmt_graph_note_memory(U64(graph), pool_device(&params->poolProps));
    gmt_record_alloc(ok, (int)r, GMT_API_cuGraphAddMemAllocNode, GMT_KIND_GRAPH_MEM,
                     ok ? params->dptr : 0, params ? params->bytesize : 0,
                     params ? pool_device(&params->poolProps) : -1, 0, ok ? U64(graph) : 0, 0);
    return r;
}

ALWAYS CUresult gmt_body_cuMulticastCreate(gmt_fn_cuMulticastCreate *real,
                                           CUmemGenericAllocationHandle *mc,
                                           const CUmulticastObjectProp *prop)
{
    ALLOC_BODY(GMT_API_cuMulticastCreate, GMT_KIND_MULTICAST, real(mc, prop), *mc,
               prop ? prop->size : 0, -1, 0, 0, 0);
}

/* ---- module and library loads and unloads: the device memory each takes or gives back,
 * which no allocation shows */
ALWAYS CUresult gmt_body_cuModuleLoad(gmt_fn_cuModuleLoad *real, CUmodule *m, const char *fname)
{
    GMT_MODLOAD_BODY(GMT_MODLOAD_cuModuleLoad, real(m, fname), m ? *m : NULL);
}

ALWAYS CUresult gmt_body_cuModuleLoadData(gmt_fn_cuModuleLoadData *real, CUmodule *m, const void *image)
{
    GMT_MODLOAD_BODY(GMT_MODLOAD_cuModuleLoadData, real(m, image), m ? *m : NULL);
}

ALWAYS CUresult gmt_body_cuModuleLoadDataEx(gmt_fn_cuModuleLoadDataEx *real, CUmodule *m, const void *image,
                                            unsigned int n, CUjit_option *o, void **v)
{
    GMT_MODLOAD_BODY(GMT_MODLOAD_cuModuleLoadDataEx, real(m, image, n, o, v), m ? *m : NULL);
}

ALWAYS CUresult gmt_body_cuModuleLoadFatBinary(gmt_fn_cuModuleLoadFatBinary *real, CUmodule *m,
                                               const void *fatbin)
{
    GMT_MODLOAD_BODY(GMT_MODLOAD_cuModuleLoadFatBinary, real(m, fatbin), m ? *m : NULL);
}

ALWAYS CUresult gmt_body_cuLibraryLoadData(gmt_fn_cuLibraryLoadData *real, CUlibrary *l, const void *code,
                                           CUjit_option *jo, void **jv, unsigned int nj, CUlibraryOption *lo,
                                           void **lv, unsigned int nl)
{
    GMT_MODLOAD_BODY(GMT_MODLOAD_cuLibraryLoadData, real(l, code, jo, jv, nj, lo, lv, nl), l ? *l : NULL);
}

ALWAYS CUresult gmt_body_cuLibraryLoadFromFile(gmt_fn_cuLibraryLoadFromFile *real, CUlibrary *l,
                                               const char *file, CUjit_option *jo, void **jv,
                                               unsigned int nj, CUlibraryOption *lo, void **lv,
                                               unsigned int nl)
{
    GMT_MODLOAD_BODY(GMT_MODLOAD_cuLibraryLoadFromFile, real(l, file, jo, jv, nj, lo, lv, nl),
                     l ? *l : NULL);
}

/* An unload gives the memory back: the same samples, a negative difference. */
ALWAYS CUresult gmt_body_cuModuleUnload(gmt_fn_cuModuleUnload *real, CUmodule m)
{
    GMT_MODLOAD_BODY(GMT_MODLOAD_cuModuleUnload, real(m), m);
}

ALWAYS CUresult gmt_body_cuLibraryUnload(gmt_fn_cuLibraryUnload *real, CUlibrary l)
{
    GMT_MODLOAD_BODY(GMT_MODLOAD_cuLibraryUnload, real(l), l);
}

#define GMT_X(file, ...) GMT_HOOKS_OF_DRV_##file(GMT_HOOK_DEFINE, file, __VA_ARGS__)
GMT_HOOKS(GMT_X)
#undef GMT_X
