/* hooks.h: the one list of hooked CUDA runtime and driver functions, and what expands from it (exports, wrappers, real slots, lookup table). */
#ifndef GMT_HOOKS_H
#define GMT_HOOKS_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "cuda_abi.h"
#include "gmt.h"
#include "resolve.h"
#include "sampling.h"

/*
 * GMT_HOOKS(X): X(file, lib, abi, base, ver, var, body, ret, params, args)
 *   file    DRV, RT, ARR, GR or DL: which of hooks_driver.c, hooks_runtime.c, hooks_array.c
 *           (CUDA arrays, runtime and driver), hooks_graph.c (stream capture, graphs and
 *           their memory), hooks_dl.c defines it
 *   lib     DRIVER or RUNTIME: where gmt_resolve finds the real one
 *   abi     the exported symbol (what dlsym and the PLT ask for)
 *   base    the name cuGetProcAddress is asked for (driver only)
 *   ver     the lowest cudaVersion for which a lookup of `base` returns `abi`: below it
 *           the driver hands out an older function of another ABI (cuMemAlloc with a
 *           32-bit CUdeviceptr), which is passed through untouched. 0: any version.
 *   var     DEF or PTSZ: the default-stream variant that lookup flags 2 select
 *   body    gmt_body_<body> in the defining file holds the logic, shared by variants;
 *           for recorded calls it is also the API id, GMT_API_<body>
 *   ret, params, args: the prototype, as in cuda_abi.h's gmt_fn_<abi>
 *
 * Each entry expands to:
 *   - `abi` itself, exported, for callers that bind through the PLT or dlsym(RTLD_DEFAULT);
 *     it calls the real function gmt_resolve found by ABI name (cached in gmt_plt_<abi>);
 *   - gmt_wrap_<abi>, handed out by dlsym on a CUDA library's handle and by
 *     cuGetProcAddress/cudaGetDriverEntryPoint; it calls exactly the pointer the real
 *     lookup returned (gmt_lkp_<abi>), so a lookup never changes which function runs;
 *   - a row of gmt_hooks[], which the lookup hooks search.
 *
 * NCCL: hooks_nccl.c (another file's concern) may define
 *   void *gmt_nccl_wrapper(const char *name);
 * returning its exported wrapper for an NCCL ABI name ("ncclAllReduce", "pncclSend"…),
 * NULL when it has none. It is declared weak here: dlsym hands out that wrapper for a
 * lookup by name when the real definition the lookup found is the one gmt_resolve
 * (GMT_LIB_NCCL) finds, i.e. the one the wrapper calls; otherwise it passes through.
 */
#define GMT_HOOKS(X)                                                                          \
    /* ---- driver ---- */                                                                    \
    X(DRV, DRIVER, cuMemAlloc_v2, cuMemAlloc, 3020, DEF, cuMemAlloc, CUresult,                \
      (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize))                                \
    X(DRV, DRIVER, cuMemFree_v2, cuMemFree, 3020, DEF, cuMemFree, CUresult,                   \
      (CUdeviceptr dptr), (dptr))                                                             \
    X(DRV, DRIVER, cuMemAllocPitch_v2, cuMemAllocPitch, 3020, DEF, cuMemAllocPitch, CUresult, \
      (CUdeviceptr * dptr, size_t * pPitch, size_t w, size_t h, unsigned int elem),           \
      (dptr, pPitch, w, h, elem))                                                             \
    X(DRV, DRIVER, cuMemAllocManaged, cuMemAllocManaged, 0, DEF, cuMemAllocManaged, CUresult, \
      (CUdeviceptr * dptr, size_t bytesize, unsigned int flags), (dptr, bytesize, flags))     \
    X(DRV, DRIVER, cuMemAllocHost_v2, cuMemAllocHost, 3020, DEF, cuMemAllocHost, CUresult,    \
      (void **pp, size_t bytesize), (pp, bytesize))                                           \
    X(DRV, DRIVER, cuMemHostAlloc, cuMemHostAlloc, 0, DEF, cuMemHostAlloc, CUresult,          \
      (void **pp, size_t bytesize, unsigned int flags), (pp, bytesize, flags))                \
    X(DRV, DRIVER, cuMemFreeHost, cuMemFreeHost, 0, DEF, cuMemFreeHost, CUresult,             \
      (void *p), (p))                                                                         \
    X(DRV, DRIVER, cuMemHostRegister_v2, cuMemHostRegister, 6050, DEF, cuMemHostRegister,     \
      CUresult, (void *p, size_t bytesize, unsigned int flags), (p, bytesize, flags))         \
    X(DRV, DRIVER, cuMemHostUnregister, cuMemHostUnregister, 0, DEF, cuMemHostUnregister,     \
      CUresult, (void *p), (p))                                                               \
    X(DRV, DRIVER, cuMemAllocAsync, cuMemAllocAsync, 0, DEF, cuMemAllocAsync, CUresult,       \
      (CUdeviceptr * dptr, size_t bytesize, CUstream s), (dptr, bytesize, s))                 \
    X(DRV, DRIVER, cuMemAllocAsync_ptsz, cuMemAllocAsync, 0, PTSZ, cuMemAllocAsync, CUresult, \
      (CUdeviceptr * dptr, size_t bytesize, CUstream s), (dptr, bytesize, s))                 \
    X(DRV, DRIVER, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, 0, DEF,                  \
      cuMemAllocFromPoolAsync, CUresult,                                                      \
      (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream s),                   \
      (dptr, bytesize, pool, s))                                                              \
    X(DRV, DRIVER, cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, 0, PTSZ,            \
      cuMemAllocFromPoolAsync, CUresult,                                                      \
      (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream s),                   \
      (dptr, bytesize, pool, s))                                                              \
    X(DRV, DRIVER, cuMemFreeAsync, cuMemFreeAsync, 0, DEF, cuMemFreeAsync, CUresult,          \
      (CUdeviceptr dptr, CUstream s), (dptr, s))                                              \
    X(DRV, DRIVER, cuMemFreeAsync_ptsz, cuMemFreeAsync, 0, PTSZ, cuMemFreeAsync, CUresult,    \
      (CUdeviceptr dptr, CUstream s), (dptr, s))                                              \
    X(DRV, DRIVER, cuMemPoolCreate, cuMemPoolCreate, 0, DEF, cuMemPoolCreate, CUresult,       \
      (CUmemoryPool * pool, const CUmemPoolProps *props), (pool, props))                      \
    X(DRV, DRIVER, cuMemPoolDestroy, cuMemPoolDestroy, 0, DEF, cuMemPoolDestroy, CUresult,    \
      (CUmemoryPool pool), (pool))                                                            \
    X(DRV, DRIVER, cuMemPoolTrimTo, cuMemPoolTrimTo, 0, DEF, cuMemPoolTrimTo, CUresult,       \
      (CUmemoryPool pool, size_t keep), (pool, keep))                                         \
    X(DRV, DRIVER, cuMemCreate, cuMemCreate, 0, DEF, cuMemCreate, CUresult,                   \
      (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp *prop,   \
       unsigned long long flags),                                                             \
      (handle, size, prop, flags))                                                            \
    X(DRV, DRIVER, cuMemRelease, cuMemRelease, 0, DEF, cuMemRelease, CUresult,                \
      (CUmemGenericAllocationHandle handle), (handle))                                        \
    X(DRV, DRIVER, cuMemAddressReserve, cuMemAddressReserve, 0, DEF, cuMemAddressReserve,     \
      CUresult,                                                                               \
      (CUdeviceptr * ptr, size_t size, size_t align, CUdeviceptr addr,                        \
       unsigned long long flags),                                                             \
      (ptr, size, align, addr, flags))                                                        \
    X(DRV, DRIVER, cuMemAddressFree, cuMemAddressFree, 0, DEF, cuMemAddressFree, CUresult,    \
      (CUdeviceptr ptr, size_t size), (ptr, size))                                            \
    X(DRV, DRIVER, cuMemMap, cuMemMap, 0, DEF, cuMemMap, CUresult,                            \
      (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,      \
       unsigned long long flags),                                                             \
      (ptr, size, offset, handle, flags))                                                     \
    X(DRV, DRIVER, cuMemUnmap, cuMemUnmap, 0, DEF, cuMemUnmap, CUresult,                      \
      (CUdeviceptr ptr, size_t size), (ptr, size))                                            \
    X(DRV, DRIVER, cuMemImportFromShareableHandle, cuMemImportFromShareableHandle, 0, DEF,    \
      cuMemImportFromShareableHandle, CUresult,                                               \
      (CUmemGenericAllocationHandle * handle, void *os, CUmemAllocationHandleType type),      \
      (handle, os, type))                                                                     \
    X(DRV, DRIVER, cuMemRetainAllocationHandle, cuMemRetainAllocationHandle, 0, DEF,          \
      cuMemRetainAllocationHandle, CUresult,                                                  \
      (CUmemGenericAllocationHandle * handle, void *addr), (handle, addr))                    \
    X(DRV, DRIVER, cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle, 11000, DEF, cuIpcOpenMemHandle, \
      CUresult, (CUdeviceptr * pdptr, CUipcMemHandle handle, unsigned int flags),             \
      (pdptr, handle, flags))                                                                 \
    X(DRV, DRIVER, cuIpcCloseMemHandle, cuIpcCloseMemHandle, 0, DEF, cuIpcCloseMemHandle,     \
      CUresult, (CUdeviceptr dptr), (dptr))                                                   \
    X(DRV, DRIVER, cuGraphAddMemAllocNode, cuGraphAddMemAllocNode, 0, DEF,                    \
      cuGraphAddMemAllocNode, CUresult,                                                       \
      (CUgraphNode * node, CUgraph graph, const CUgraphNode *deps, size_t ndeps,              \
       CUDA_MEM_ALLOC_NODE_PARAMS *params),                                                   \
      (node, graph, deps, ndeps, params))                                                     \
    X(DRV, DRIVER, cuMulticastCreate, cuMulticastCreate, 0, DEF, cuMulticastCreate, CUresult, \
      (CUmemGenericAllocationHandle * mc, const CUmulticastObjectProp *prop), (mc, prop))     \
    X(DRV, DRIVER, cuModuleLoad, cuModuleLoad, 0, DEF, cuModuleLoad, CUresult,                \
      (CUmodule * m, const char *fname), (m, fname))                                          \
    X(DRV, DRIVER, cuModuleLoadData, cuModuleLoadData, 0, DEF, cuModuleLoadData, CUresult,    \
      (CUmodule * m, const void *image), (m, image))                                          \
    X(DRV, DRIVER, cuModuleLoadDataEx, cuModuleLoadDataEx, 0, DEF, cuModuleLoadDataEx,        \
      CUresult, (CUmodule * m, const void *image, unsigned int n, CUjit_option *o, void **v), \
      (m, image, n, o, v))                                                                    \
    X(DRV, DRIVER, cuModuleLoadFatBinary, cuModuleLoadFatBinary, 0, DEF,                      \
      cuModuleLoadFatBinary, CUresult, (CUmodule * m, const void *fatbin), (m, fatbin))       \
    X(DRV, DRIVER, cuLibraryLoadData, cuLibraryLoadData, 0, DEF, cuLibraryLoadData, CUresult, \
      (CUlibrary * l, const void *code, CUjit_option *jo, void **jv, unsigned int nj,         \
       CUlibraryOption *lo, void **lv, unsigned int nl),                                      \
      (l, code, jo, jv, nj, lo, lv, nl))                                                      \
    X(DRV, DRIVER, cuLibraryLoadFromFile, cuLibraryLoadFromFile, 0, DEF,                      \
      cuLibraryLoadFromFile, CUresult,                                                        \
      (CUlibrary * l, const char *file, CUjit_option *jo, void **jv, unsigned int nj,         \
       CUlibraryOption *lo, void **lv, unsigned int nl),                                      \
      (l, file, jo, jv, nj, lo, lv, nl))                                                      \
    X(DRV, DRIVER, cuModuleUnload, cuModuleUnload, 0, DEF, cuModuleUnload, CUresult,          \
      (CUmodule m), (m))                                                                      \
    X(DRV, DRIVER, cuLibraryUnload, cuLibraryUnload, 0, DEF, cuLibraryUnload, CUresult,       \
      (CUlibrary l), (l))                                                                     \
    X(ARR, DRIVER, cuArrayCreate_v2, cuArrayCreate, 3020, DEF, cuArrayCreate, CUresult,      \
      (CUarray * arr, const CUDA_ARRAY_DESCRIPTOR *desc), (arr, desc))                        \
    X(ARR, DRIVER, cuArray3DCreate_v2, cuArray3DCreate, 3020, DEF, cuArray3DCreate, CUresult, \
      (CUarray * arr, const CUDA_ARRAY3D_DESCRIPTOR *desc), (arr, desc))                      \
    X(ARR, DRIVER, cuMipmappedArrayCreate, cuMipmappedArrayCreate, 0, DEF,                    \
      cuMipmappedArrayCreate, CUresult,                                                       \
      (CUmipmappedArray * arr, const CUDA_ARRAY3D_DESCRIPTOR *desc, unsigned int levels),     \
      (arr, desc, levels))                                                                    \
    X(ARR, DRIVER, cuArrayDestroy, cuArrayDestroy, 0, DEF, cuArrayDestroy, CUresult,          \
      (CUarray arr), (arr))                                                                   \
    X(ARR, DRIVER, cuMipmappedArrayDestroy, cuMipmappedArrayDestroy, 0, DEF,                  \
      cuMipmappedArrayDestroy, CUresult, (CUmipmappedArray arr), (arr))                       \
    X(GR, DRIVER, cuStreamBeginCapture_v2, cuStreamBeginCapture, 10010, DEF,                  \
      cuStreamBeginCapture, CUresult, (CUstream s, CUstreamCaptureMode mode), (s, mode))      \
    X(GR, DRIVER, cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture, 10010, PTSZ,            \
      cuStreamBeginCapture, CUresult, (CUstream s, CUstreamCaptureMode mode), (s, mode))      \
    X(GR, DRIVER, cuStreamBeginCaptureToGraph, cuStreamBeginCaptureToGraph, 0, DEF,           \
      cuStreamBeginCaptureToGraph, CUresult,                                                  \
      (CUstream s, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges,          \
       size_t ndeps, CUstreamCaptureMode mode),                                               \
      (s, g, deps, edges, ndeps, mode))                                                       \
    X(GR, DRIVER, cuStreamBeginCaptureToGraph_ptsz, cuStreamBeginCaptureToGraph, 0, PTSZ,     \
      cuStreamBeginCaptureToGraph, CUresult,                                                  \
      (CUstream s, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *edges,          \
       size_t ndeps, CUstreamCaptureMode mode),                                               \
      (s, g, deps, edges, ndeps, mode))                                                       \
    X(GR, DRIVER, cuStreamEndCapture, cuStreamEndCapture, 0, DEF, cuStreamEndCapture,         \
      CUresult, (CUstream s, CUgraph * g), (s, g))                                            \
    X(GR, DRIVER, cuStreamEndCapture_ptsz, cuStreamEndCapture, 0, PTSZ, cuStreamEndCapture,   \
      CUresult, (CUstream s, CUgraph * g), (s, g))                                            \
    X(GR, DRIVER, cuGraphInstantiate, cuGraphInstantiate, 0, DEF, cuGraphInstantiate,         \
      CUresult, (CUgraphExec * e, CUgraph g, CUgraphNode *err, char *log, size_t len),        \
      (e, g, err, log, len))                                                                  \
    X(GR, DRIVER, cuGraphInstantiate_v2, cuGraphInstantiate, 11000, DEF, cuGraphInstantiate,  \
      CUresult, (CUgraphExec * e, CUgraph g, CUgraphNode *err, char *log, size_t len),        \
      (e, g, err, log, len))                                                                  \
    X(GR, DRIVER, cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags, 0, DEF,           \
      cuGraphInstantiateWithFlags, CUresult,                                                  \
      (CUgraphExec * e, CUgraph g, unsigned long long flags), (e, g, flags))                  \
    X(GR, DRIVER, cuGraphInstantiateWithParams, cuGraphInstantiateWithParams, 0, DEF,         \
      cuGraphInstantiateWithParams, CUresult,                                                 \
      (CUgraphExec * e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *params), (e, g, params))    \
    X(GR, DRIVER, cuGraphInstantiateWithParams_ptsz, cuGraphInstantiateWithParams, 0, PTSZ,   \
      cuGraphInstantiateWithParams, CUresult,                                                 \
      (CUgraphExec * e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *params), (e, g, params))    \
    X(GR, DRIVER, cuGraphLaunch, cuGraphLaunch, 0, DEF, cuGraphLaunch, CUresult,              \
      (CUgraphExec e, CUstream s), (e, s))                                                    \
    X(GR, DRIVER, cuGraphLaunch_ptsz, cuGraphLaunch, 0, PTSZ, cuGraphLaunch, CUresult,        \
      (CUgraphExec e, CUstream s), (e, s))                                                    \
    X(GR, DRIVER, cuGraphExecDestroy, cuGraphExecDestroy, 0, DEF, cuGraphExecDestroy,         \
      CUresult, (CUgraphExec e), (e))                                                         \
    X(GR, DRIVER, cuGraphDestroy, cuGraphDestroy, 0, DEF, cuGraphDestroy, CUresult,           \
      (CUgraph g), (g))                                                                       \
    X(GR, DRIVER, cuDeviceGraphMemTrim, cuDeviceGraphMemTrim, 0, DEF, cuDeviceGraphMemTrim,   \
      CUresult, (CUdevice dev), (dev))                                                        \
    /* ---- runtime ---- */                                                                   \
    X(RT, RUNTIME, cudaMalloc, cudaMalloc, 0, DEF, cudaMalloc, cudaError_t,                   \
      (void **p, size_t size), (p, size))                                                     \
    X(RT, RUNTIME, cudaFree, cudaFree, 0, DEF, cudaFree, cudaError_t, (void *p), (p))         \
    X(RT, RUNTIME, cudaMallocAsync, cudaMallocAsync, 0, DEF, cudaMallocAsync, cudaError_t,    \
      (void **p, size_t size, cudaStream_t s), (p, size, s))                                  \
    X(RT, RUNTIME, cudaMallocAsync_ptsz, cudaMallocAsync, 0, PTSZ, cudaMallocAsync,           \
      cudaError_t, (void **p, size_t size, cudaStream_t s), (p, size, s))                     \
    X(RT, RUNTIME, cudaFreeAsync, cudaFreeAsync, 0, DEF, cudaFreeAsync, cudaError_t,          \
      (void *p, cudaStream_t s), (p, s))                                                      \
    X(RT, RUNTIME, cudaFreeAsync_ptsz, cudaFreeAsync, 0, PTSZ, cudaFreeAsync, cudaError_t,    \
      (void *p, cudaStream_t s), (p, s))                                                      \
    X(RT, RUNTIME, cudaMallocFromPoolAsync, cudaMallocFromPoolAsync, 0, DEF,                  \
      cudaMallocFromPoolAsync, cudaError_t,                                                   \
      (void **p, size_t size, cudaMemPool_t pool, cudaStream_t s), (p, size, pool, s))        \
    X(RT, RUNTIME, cudaMallocFromPoolAsync_ptsz, cudaMallocFromPoolAsync, 0, PTSZ,            \
      cudaMallocFromPoolAsync, cudaError_t,                                                   \
      (void **p, size_t size, cudaMemPool_t pool, cudaStream_t s), (p, size, pool, s))        \
    X(RT, RUNTIME, cudaMallocManaged, cudaMallocManaged, 0, DEF, cudaMallocManaged,           \
      cudaError_t, (void **p, size_t size, unsigned int flags), (p, size, flags))             \
    X(RT, RUNTIME, cudaMallocPitch, cudaMallocPitch, 0, DEF, cudaMallocPitch, cudaError_t,    \
      (void **p, size_t *pitch, size_t w, size_t h), (p, pitch, w, h))                        \
    X(RT, RUNTIME, cudaMalloc3D, cudaMalloc3D, 0, DEF, cudaMalloc3D, cudaError_t,             \
      (struct cudaPitchedPtr * pp, struct cudaExtent ext), (pp, ext))                         \
    X(RT, RUNTIME, cudaMallocHost, cudaMallocHost, 0, DEF, cudaMallocHost, cudaError_t,       \
      (void **p, size_t size), (p, size))                                                     \
    X(RT, RUNTIME, cudaHostAlloc, cudaHostAlloc, 0, DEF, cudaHostAlloc, cudaError_t,          \
      (void **p, size_t size, unsigned int flags), (p, size, flags))                          \
    X(RT, RUNTIME, cudaFreeHost, cudaFreeHost, 0, DEF, cudaFreeHost, cudaError_t, (void *p),  \
      (p))                                                                                    \
    X(RT, RUNTIME, cudaHostRegister, cudaHostRegister, 0, DEF, cudaHostRegister, cudaError_t, \
      (void *p, size_t size, unsigned int flags), (p, size, flags))                           \
    X(RT, RUNTIME, cudaHostUnregister, cudaHostUnregister, 0, DEF, cudaHostUnregister,        \
      cudaError_t, (void *p), (p))                                                            \
    X(RT, RUNTIME, cudaMemPoolCreate, cudaMemPoolCreate, 0, DEF, cudaMemPoolCreate,           \
      cudaError_t, (cudaMemPool_t * pool, const struct cudaMemPoolProps *props),              \
      (pool, props))                                                                          \
    X(RT, RUNTIME, cudaMemPoolDestroy, cudaMemPoolDestroy, 0, DEF, cudaMemPoolDestroy,        \
      cudaError_t, (cudaMemPool_t pool), (pool))                                              \
    X(RT, RUNTIME, cudaMemPoolTrimTo, cudaMemPoolTrimTo, 0, DEF, cudaMemPoolTrimTo,           \
      cudaError_t, (cudaMemPool_t pool, size_t keep), (pool, keep))                           \
    X(ARR, RUNTIME, cudaMallocArray, cudaMallocArray, 0, DEF, cudaMallocArray, cudaError_t,    \
      (cudaArray_t * arr, const struct cudaChannelFormatDesc *desc, size_t w, size_t h,       \
       unsigned int flags),                                                                   \
      (arr, desc, w, h, flags))                                                               \
    X(ARR, RUNTIME, cudaMalloc3DArray, cudaMalloc3DArray, 0, DEF, cudaMalloc3DArray,           \
      cudaError_t,                                                                            \
      (cudaArray_t * arr, const struct cudaChannelFormatDesc *desc, struct cudaExtent ext,    \
       unsigned int flags),                                                                   \
      (arr, desc, ext, flags))                                                                \
    X(ARR, RUNTIME, cudaMallocMipmappedArray, cudaMallocMipmappedArray, 0, DEF,                \
      cudaMallocMipmappedArray, cudaError_t,                                                  \
      (cudaMipmappedArray_t * arr, const struct cudaChannelFormatDesc *desc,                  \
       struct cudaExtent ext, unsigned int levels, unsigned int flags),                       \
      (arr, desc, ext, levels, flags))                                                        \
    X(ARR, RUNTIME, cudaFreeArray, cudaFreeArray, 0, DEF, cudaFreeArray, cudaError_t,          \
      (cudaArray_t arr), (arr))                                                               \
    X(ARR, RUNTIME, cudaFreeMipmappedArray, cudaFreeMipmappedArray, 0, DEF,                    \
      cudaFreeMipmappedArray, cudaError_t, (cudaMipmappedArray_t arr), (arr))                 \
    /* ---- lookup paths ---- */                                                              \
    X(DL, DRIVER, cuGetProcAddress, cuGetProcAddress, 0, DEF, getproc_v1, CUresult,           \
      (const char *sym, void **pfn, int ver, cuuint64_t flags), (sym, pfn, ver, flags))       \
    X(DL, DRIVER, cuGetProcAddress_v2, cuGetProcAddress, 12000, DEF, getproc_v2, CUresult,    \
      (const char *sym, void **pfn, int ver, cuuint64_t flags,                                \
       CUdriverProcAddressQueryResult *status),                                               \
      (sym, pfn, ver, flags, status))                                                         \
    X(DL, RUNTIME, cudaGetDriverEntryPoint, cudaGetDriverEntryPoint, 0, DEF, entry_point,     \
      cudaError_t,                                                                            \
      (const char *sym, void **pfn, unsigned long long flags,                                 \
       enum cudaDriverEntryPointQueryResult *status),                                         \
      (sym, pfn, flags, status))                                                              \
    X(DL, RUNTIME, cudaGetDriverEntryPoint_ptsz, cudaGetDriverEntryPoint, 0, PTSZ,            \
      entry_point, cudaError_t,                                                               \
      (const char *sym, void **pfn, unsigned long long flags,                                 \
       enum cudaDriverEntryPointQueryResult *status),                                         \
      (sym, pfn, flags, status))                                                              \
    X(DL, RUNTIME, cudaGetDriverEntryPointByVersion, cudaGetDriverEntryPointByVersion, 0,     \
      DEF, entry_point_by_version, cudaError_t,                                               \
      (const char *sym, void **pfn, unsigned int ver, unsigned long long flags,               \
       enum cudaDriverEntryPointQueryResult *status),                                         \
      (sym, pfn, ver, flags, status))                                                         \
    X(DL, RUNTIME, cudaGetDriverEntryPointByVersion_ptsz, cudaGetDriverEntryPointByVersion,   \
      0, PTSZ, entry_point_by_version, cudaError_t,                                           \
      (const char *sym, void **pfn, unsigned int ver, unsigned long long flags,               \
       enum cudaDriverEntryPointQueryResult *status),                                         \
      (sym, pfn, ver, flags, status))

/* What a hook returns when its real function can't be found: the API family's own
 * "not found" error, never a call through NULL. */
#define GMT_NOT_FOUND_DRIVER CUDA_ERROR_NOT_FOUND
#define GMT_NOT_FOUND_RUNTIME cudaErrorSymbolNotFound

enum gmt_hook_var { GMT_VAR_DEF, GMT_VAR_PTSZ };

/* One row per entry, in list order. */
struct gmt_hook {
    const char *abi;
    const char *base;
    unsigned char lib;          /* enum gmt_lib */
    unsigned char var;          /* enum gmt_hook_var */
    int ver;
    void *wrapper;              /* gmt_wrap_<abi> */
    _Atomic(void *) *lkp;       /* the real function lookups returned */
    _Atomic(void *) *plt;       /* the real function gmt_resolve found */
};

#define GMT_UNPAREN(...) __VA_ARGS__

#define GMT_HOOK_DECLARE(file, lib, abi, base, ver, var, body, ret, params, args)          \
    GMT_HIDDEN extern _Atomic(void *) gmt_plt_##abi;                                      \
    GMT_HIDDEN extern _Atomic(void *) gmt_lkp_##abi;                                      \
    GMT_EXPORT ret abi params;                                                            \
    GMT_HIDDEN ret gmt_wrap_##abi params;
GMT_HOOKS(GMT_HOOK_DECLARE)
#undef GMT_HOOK_DECLARE

GMT_HIDDEN extern const struct gmt_hook gmt_hooks[];
GMT_HIDDEN extern const size_t gmt_hooks_count;

/* Defines one entry's export and wrapper around gmt_body_<body>(real, args…), which the
 * including file defines first. The export's prototype is checked against cuda_abi.h. */
#define GMT_HOOK_DEFINE(file, lib, abi, base, ver, var, body, ret, params, args)           \
    _Atomic(void *) gmt_plt_##abi;                                                         \
    _Atomic(void *) gmt_lkp_##abi;                                                         \
    ret abi params                                                                         \
    {                                                                                      \
        gmt_fn_##abi *real = (gmt_fn_##abi *)gmt_hook_plt_for(                              \
            &gmt_plt_##abi, GMT_LIB_##lib, #abi, __builtin_return_address(0));             \
        if (GMT_UNLIKELY(real == NULL))                                                    \
            return GMT_NOT_FOUND_##lib;                                                    \
        return gmt_body_##body(real, GMT_UNPAREN args);                                    \
    }                                                                                      \
    ret gmt_wrap_##abi params                                                              \
    {                                                                                      \
        gmt_fn_##abi *real = (gmt_fn_##abi *)atomic_load_explicit(&gmt_lkp_##abi,          \
                                                                  memory_order_acquire);  \
        if (GMT_UNLIKELY(real == NULL))                                                    \
            return GMT_NOT_FOUND_##lib;                                                    \
        return gmt_body_##body(real, GMT_UNPAREN args);                                    \
    }                                                                                      \
    _Static_assert(__builtin_types_compatible_p(__typeof__(abi), gmt_fn_##abi),            \
                   #abi " matches cuda_abi.h");

/* Expands the entries of one file: GMT_HOOKS_OF(DRV, GMT_HOOK_DEFINE). */
#define GMT_HOOKS_SKIP(...)
#define GMT_HOOKS_OF_DRV_DRV(m, ...) m(__VA_ARGS__)
#define GMT_HOOKS_OF_DRV_RT(m, ...)
#define GMT_HOOKS_OF_DRV_ARR(m, ...)
#define GMT_HOOKS_OF_DRV_GR(m, ...)
#define GMT_HOOKS_OF_DRV_DL(m, ...)
#define GMT_HOOKS_OF_RT_DRV(m, ...)
#define GMT_HOOKS_OF_RT_RT(m, ...) m(__VA_ARGS__)
#define GMT_HOOKS_OF_RT_ARR(m, ...)
#define GMT_HOOKS_OF_RT_GR(m, ...)
#define GMT_HOOKS_OF_RT_DL(m, ...)
#define GMT_HOOKS_OF_ARR_DRV(m, ...)
#define GMT_HOOKS_OF_ARR_RT(m, ...)
#define GMT_HOOKS_OF_ARR_ARR(m, ...) m(__VA_ARGS__)
#define GMT_HOOKS_OF_ARR_GR(m, ...)
#define GMT_HOOKS_OF_ARR_DL(m, ...)
#define GMT_HOOKS_OF_GR_DRV(m, ...)
#define GMT_HOOKS_OF_GR_RT(m, ...)
#define GMT_HOOKS_OF_GR_ARR(m, ...)
#define GMT_HOOKS_OF_GR_GR(m, ...) m(__VA_ARGS__)
#define GMT_HOOKS_OF_GR_DL(m, ...)
#define GMT_HOOKS_OF_DL_DRV(m, ...)
#define GMT_HOOKS_OF_DL_RT(m, ...)
#define GMT_HOOKS_OF_DL_ARR(m, ...)
#define GMT_HOOKS_OF_DL_GR(m, ...)
#define GMT_HOOKS_OF_DL_DL(m, ...) m(__VA_ARGS__)

/* Re-entrancy: true when this call should be recorded (the thread is not already inside
 * an allocation hook or the library); then gmt_hook_leave() must follow. */
static inline bool gmt_hook_enter(void)
{
    if (gmt_ts.guard.in_hook > 0 || gmt_ts.guard.in_lib > 0)
        return false;
    gmt_ts.guard.in_hook++;
    return true;
}
static inline void gmt_hook_leave(void)
{
    gmt_ts.guard.in_hook--;
}

/* ---- recording, shared by the runtime's and the driver's hooks ----
 * Always inlined into the hook, so GMT_HOOK_FRAME() is the hook's frame and the stack
 * starts in the application; errno stays as the real call left it. */
static inline __attribute__((always_inline)) void
gmt_record_alloc(bool ok, int error, enum gmt_api api, enum gmt_kind kind, uint64_t address,
                 uint64_t bytes, int device, uint64_t stream, uint64_t related, uint64_t offset)
{
    int e = errno;
    if (ok)
        gmt_event_alloc(api, kind, address, bytes, device, stream, related, offset,
                        GMT_HOOK_FRAME());
    else
        gmt_event_fail(api, kind, bytes, device, error, GMT_HOOK_FRAME());
    errno = e;
}

static inline __attribute__((always_inline)) void gmt_record_free(enum gmt_api api,
                                                                  uint64_t address,
                                                                  uint64_t stream)
{
    int e = errno;
    gmt_event_free(api, address, stream);
    errno = e;
}

/* Allocation: the real call (of result type `type`, `ok` on success) with nested hooks
 * silenced, then recorded once. */
#define GMT_ALLOC_BODY(type, ok, call, api, kind, address, bytes, device, stream, related,    \
                       offset)                                                                \
    do {                                                                                      \
        if (!gmt_hook_enter())                                                                \
            return call;                                                                      \
        type r_ = call;                                                                       \
        gmt_hook_leave();                                                                     \
        gmt_record_alloc(r_ == (ok), (int)r_, api, kind, r_ == (ok) ? (address) : 0, bytes,   \
                         device, stream, related, offset);                                    \
        return r_;                                                                            \
    } while (0)

/* Release: recorded before the real call, so the address can't be reused in between. */
#define GMT_FREE_BODY(type, call, api, address, stream)                                       \
    do {                                                                                      \
        if (!gmt_hook_enter())                                                                \
            return call;                                                                      \
        gmt_record_free(api, address, stream);                                                \
        type r_ = call;                                                                       \
        gmt_hook_leave();                                                                     \
        return r_;                                                                            \
    } while (0)

/* ---- hooks_graph.c: stream capture and graph memory ----
 * gmt_graph_capture_seen: set for good by the first stream capture begun (a hook of the
 * cuStreamBeginCapture family): until then no stream can be capturing, and an async
 * allocation costs one load to know it. */
GMT_HIDDEN extern _Atomic int gmt_graph_capture_seen;
/* For an async allocation on `stream`: true when the stream is capturing (asked of the
 * driver), with the graph being captured in *graph (0 unknown). */
GMT_HIDDEN bool gmt_graph_capturing(uint64_t stream, uint64_t *graph);
/* Records an allocation made under capture: ALLOC of kind GRAPH_MEM, flag
 * GMT_ALLOC_CAPTURED, related = graph, on the current context's device. */
GMT_HIDDEN void gmt_graph_event_captured(enum gmt_api api, uint64_t address, uint64_t bytes,
                                         uint64_t stream, uint64_t graph, const void *frame);
/* A graph that holds memory nodes (cuGraphAddMemAllocNode, or an allocation captured
 * into it), its memory on `device` (-1: the current context's): its launches are sampled. */
GMT_HIDDEN void gmt_graph_note_memory(uint64_t graph, int device);
/* At exit: GRAPHMEM EXIT for each device that had a GRAPHMEM record. */
GMT_HIDDEN void gmt_graph_exit(void);

/* Async allocation (cudaMallocAsync, cuMemAllocAsync and their pool variants): POOL_ALLOC,
 * or, on a capturing stream, the graph's memory node it stands for. */
#define GMT_ASYNC_ALLOC_BODY(type, ok, call, api, address, bytes, stream, pool)               \
    do {                                                                                      \
        if (!gmt_hook_enter())                                                                \
            return call;                                                                      \
        type r_ = call;                                                                       \
        gmt_hook_leave();                                                                     \
        uint64_t graph_ = 0;                                                                  \
        if (GMT_UNLIKELY(atomic_load_explicit(&gmt_graph_capture_seen,                        \
                                              memory_order_relaxed)) &&                       \
            gmt_graph_capturing(stream, &graph_)) {                                           \
            int e_ = errno;                                                                   \
            if (r_ == (ok))                                                                   \
                gmt_graph_event_captured(api, address, bytes, stream, graph_,                 \
                                         GMT_HOOK_FRAME());                                   \
            else                                                                              \
                gmt_event_fail(api, GMT_KIND_GRAPH_MEM, bytes, -1, (int)r_, GMT_HOOK_FRAME()); \
            errno = e_;                                                                       \
            return r_;                                                                        \
        }                                                                                     \
        gmt_record_alloc(r_ == (ok), (int)r_, api, GMT_KIND_POOL_ALLOC,                       \
                         r_ == (ok) ? (address) : 0, bytes, -1, stream, pool, 0);             \
        return r_;                                                                            \
    } while (0)

/* A module or library load or unload: the real call between two device samples (two
 * cuMemGetInfo, about 6 us each on an H200: loads are rare), then one MODLOAD record. */
#define GMT_MODLOAD_BODY(api, call, handle)                                                   \
    do {                                                                                      \
        if (!gmt_hook_enter())                                                                \
            return call;                                                                      \
        struct gmt_modload_mark m_;                                                           \
        gmt_modload_before(&m_);                                                              \
        CUresult r_ = call;                                                                   \
        gmt_hook_leave();                                                                     \
        int e_ = errno;                                                                       \
        gmt_modload_after(&m_, api, (int)r_, r_ == CUDA_SUCCESS ? (uint64_t)(uintptr_t)(handle) : 0); \
        errno = e_;                                                                           \
        return r_;                                                                            \
    } while (0)

/* ---- hooks_exec.c ---- */
/* Looks up the real exec functions (at library load, where dlsym is safe). */
GMT_HIDDEN void gmt_exec_resolve(void);

/* ---- hooks_dl.c: the lookup side of the table ---- */
/* For a dlsym of `abi` that returned `real`: the wrapper to hand out instead, or `real`. */
GMT_HIDDEN void *gmt_hook_for_abi(const char *abi, void *real);
/* For a cuGetProcAddress-style lookup of `base` that returned `real`. */
GMT_HIDDEN void *gmt_hook_for_base(const char *base, int version, uint64_t flags, void *real);
/* True when fn is one of our exports or wrappers. */
GMT_HIDDEN bool gmt_hook_is_ours(const void *fn);

/* hooks_nccl.c, when it exists (see above). */
GMT_HIDDEN void *gmt_nccl_wrapper(const char *name) __attribute__((weak));
GMT_HIDDEN const char *gmt_nccl_name(const char *name) __attribute__((weak));

#endif
