/* hooks_runtime.c: the CUDA runtime's memory calls (cudaMalloc*, cudaFree*, host, managed, pools): call the real one, then record. */
#include <errno.h>

#include "hooks.h"

#define U64(x) ((uint64_t)(uintptr_t)(x))
#define ALWAYS static inline __attribute__((always_inline))

/*
 * The runtime reaches the driver through cuGetProcAddress, so a cudaMalloc also passes
 * through our cuMemAlloc_v2 wrapper inside it. gmt_hook_enter() marks the thread while
 * the real runtime call runs, and the nested driver hook passes through unrecorded: the
 * allocation is recorded once, as the API the application called, with its stack.
 */

#define ALLOC_BODY(api, kind, call, address, bytes, stream, related)                      \
    GMT_ALLOC_BODY(cudaError_t, cudaSuccess, call, api, kind, address, bytes, -1, stream,    \
                   related, 0)
#define FREE_BODY(api, call, address, stream)                                            \
    GMT_FREE_BODY(cudaError_t, call, api, address, stream)

ALWAYS cudaError_t gmt_body_cudaMalloc(gmt_fn_cudaMalloc *real, void **p, size_t size)
{
    ALLOC_BODY(GMT_API_cudaMalloc, GMT_KIND_DEVICE, real(p, size), U64(*p), size, 0, 0);
}

ALWAYS cudaError_t gmt_body_cudaFree(gmt_fn_cudaFree *real, void *p)
{
    FREE_BODY(GMT_API_cudaFree, real(p), U64(p), 0);
}

ALWAYS cudaError_t gmt_body_cudaMallocAsync(gmt_fn_cudaMallocAsync *real, void **p, size_t size,
                                            cudaStream_t s)
{
    GMT_ASYNC_ALLOC_BODY(cudaError_t, cudaSuccess, real(p, size, s), GMT_API_cudaMallocAsync,
                         U64(*p), size, U64(s), 0);
}

ALWAYS cudaError_t gmt_body_cudaFreeAsync(gmt_fn_cudaFreeAsync *real, void *p, cudaStream_t s)
{
    FREE_BODY(GMT_API_cudaFreeAsync, real(p, s), U64(p), U64(s));
}

ALWAYS cudaError_t gmt_body_cudaMallocFromPoolAsync(gmt_fn_cudaMallocFromPoolAsync *real,
                                                    void **p, size_t size, cudaMemPool_t pool,
                                                    cudaStream_t s)
{
    GMT_ASYNC_ALLOC_BODY(cudaError_t, cudaSuccess, real(p, size, pool, s),
                         GMT_API_cudaMallocFromPoolAsync, U64(*p), size, U64(s), U64(pool));
}

ALWAYS cudaError_t gmt_body_cudaMallocManaged(gmt_fn_cudaMallocManaged *real, void **p,
                                              size_t size, unsigned int flags)
{
    ALLOC_BODY(GMT_API_cudaMallocManaged, GMT_KIND_MANAGED, real(p, size, flags), U64(*p), size,
               0, 0);
}

ALWAYS cudaError_t gmt_body_cudaMallocPitch(gmt_fn_cudaMallocPitch *real, void **p, size_t *pitch,
                                            size_t w, size_t h)
{
    if (!gmt_hook_enter())
        return real(p, pitch, w, h);
    cudaError_t r = real(p, pitch, w, h);
    gmt_hook_leave();
    bool ok = r == cudaSuccess;
    gmt_record_alloc(ok, (int)r, GMT_API_cudaMallocPitch, GMT_KIND_DEVICE, ok ? U64(*p) : 0,
                     ok ? (uint64_t)*pitch * h : (uint64_t)w * h, -1, 0, 0, 0);
    return r;
}

ALWAYS cudaError_t gmt_body_cudaMalloc3D(gmt_fn_cudaMalloc3D *real, struct cudaPitchedPtr *pp,
                                         struct cudaExtent ext)
{
    if (!gmt_hook_enter())
        return real(pp, ext);
    cudaError_t r = real(pp, ext);
    gmt_hook_leave();
    bool ok = r == cudaSuccess;
    gmt_record_alloc(ok, (int)r, GMT_API_cudaMalloc3D, GMT_KIND_DEVICE, ok ? U64(pp->ptr) : 0,
                     (uint64_t)(ok ? pp->pitch : ext.width) * ext.height * ext.depth, -1, 0, 0,
                     0);
    return r;
}

ALWAYS cudaError_t gmt_body_cudaMallocHost(gmt_fn_cudaMallocHost *real, void **p, size_t size)
{
    ALLOC_BODY(GMT_API_cudaMallocHost, GMT_KIND_HOST_PINNED, real(p, size), U64(*p), size, 0, 0);
}

ALWAYS cudaError_t gmt_body_cudaHostAlloc(gmt_fn_cudaHostAlloc *real, void **p, size_t size,
                                          unsigned int flags)
{
    ALLOC_BODY(GMT_API_cudaHostAlloc, GMT_KIND_HOST_PINNED, real(p, size, flags), U64(*p), size,
               0, 0);
}

ALWAYS cudaError_t gmt_body_cudaFreeHost(gmt_fn_cudaFreeHost *real, void *p)
{
    FREE_BODY(GMT_API_cudaFreeHost, real(p), U64(p), 0);
}

ALWAYS cudaError_t gmt_body_cudaHostRegister(gmt_fn_cudaHostRegister *real, void *p, size_t size,
                                             unsigned int flags)
{
    ALLOC_BODY(GMT_API_cudaHostRegister, GMT_KIND_HOST_REGISTERED, real(p, size, flags), U64(p),
               size, 0, 0);
}

ALWAYS cudaError_t gmt_body_cudaHostUnregister(gmt_fn_cudaHostUnregister *real, void *p)
{
    FREE_BODY(GMT_API_cudaHostUnregister, real(p), U64(p), 0);
}

ALWAYS cudaError_t gmt_body_cudaMemPoolCreate(gmt_fn_cudaMemPoolCreate *real, cudaMemPool_t *pool,
                                              const struct cudaMemPoolProps *props)
{
    if (!gmt_hook_enter())
        return real(pool, props);
    cudaError_t r = real(pool, props);
    gmt_hook_leave();
    int device = props && props->location.type == cudaMemLocationTypeDevice ? props->location.id
                                                                             : -1;
    bool ok = r == cudaSuccess;
    gmt_record_alloc(ok, (int)r, GMT_API_cudaMemPoolCreate, GMT_KIND_POOL, ok ? U64(*pool) : 0,
                     0, device, 0, 0, 0);
    return r;
}

ALWAYS cudaError_t gmt_body_cudaMemPoolDestroy(gmt_fn_cudaMemPoolDestroy *real, cudaMemPool_t pool)
{
    FREE_BODY(GMT_API_cudaMemPoolDestroy, real(pool), U64(pool), 0);
}

/* As cuMemPoolTrimTo: nothing is allocated or released by name, nothing recorded; the
 * hook exists so the nested driver call is not mistaken for the application's. */
ALWAYS cudaError_t gmt_body_cudaMemPoolTrimTo(gmt_fn_cudaMemPoolTrimTo *real, cudaMemPool_t pool,
                                              size_t keep)
{
    if (!gmt_hook_enter())
        return real(pool, keep);
    cudaError_t r = real(pool, keep);
    gmt_hook_leave();
    return r;
}

#define GMT_X(file, ...) GMT_HOOKS_OF_RT_##file(GMT_HOOK_DEFINE, file, __VA_ARGS__)
GMT_HOOKS(GMT_X)
#undef GMT_X
