/* hooks_array.c: CUDA arrays and mipmapped arrays, runtime and driver: call the real one, then record with the bytes their descriptor asks for. */
#include <errno.h>

#include "hooks.h"

#define U64(x) ((uint64_t)(uintptr_t)(x))
#define ALWAYS static inline __attribute__((always_inline))

/*
 * An array's memory is not addressable, so the record's address is the array handle
 * (CUarray, cudaArray_t: the same value) and its bytes are what the descriptor asks
 * for: element size × width × height × depth, a missing dimension (0) counting as 1.
 * On an H200 the device-used delta of cudaMallocArray, cudaMalloc3DArray and
 * cuArrayCreate was exactly that (2048² and 1024² float4, 256²×64 float4), so the
 * device charges the descriptor's size, rounded like any allocation. A mipmapped array
 * takes the sum over its levels, each halving every dimension (never below 1) except
 * the layers of a layered array and the faces of a cubemap. Sparse and
 * deferred-mapping arrays take no memory when created (it is mapped later): bytes 0.
 * A format whose element size the library does not know (block-compressed, YUV) gives
 * bytes 0.
 *
 * The runtime reaches the driver's array functions as it reaches the others: CUDA 13.0's
 * libcudart.so.13 imports no driver symbol, and its table of entry points names
 * cuArrayCreate, cuArray3DCreate, cuMipmappedArrayCreate, cuArrayDestroy and
 * cuMipmappedArrayDestroy (asked for through cuGetProcAddress by base name) beside their
 * ABI names (its dlsym fallback). Either way its nested driver call meets our wrapper
 * while the runtime hook is active and is not recorded: as for cudaMalloc, once.
 */

/* a × b, saturated: a descriptor too large to allocate must not wrap to a small size. */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* Bytes of one element of a driver format with `channels` channels; 0 unknown. */
static uint64_t format_bytes(CUarray_format f, unsigned channels)
{
    switch ((unsigned)f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return channels;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2ull * channels;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4ull * channels;
    case CU_AD_FORMAT_UNORM_INT_101010_2:
        return 4;
    case CU_AD_FORMAT_UNORM_INT8X1:
    case CU_AD_FORMAT_SNORM_INT8X1:
        return 1;
    case CU_AD_FORMAT_UNORM_INT8X2:
    case CU_AD_FORMAT_SNORM_INT8X2:
    case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1:
        return 2;
    case CU_AD_FORMAT_UNORM_INT8X4:
    case CU_AD_FORMAT_SNORM_INT8X4:
    case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2:
        return 4;
    case CU_AD_FORMAT_UNORM_INT16X4:
    case CU_AD_FORMAT_SNORM_INT16X4:
        return 8;
    default:
        return 0;
    }
}

/* Bytes of one element of a runtime channel format: its channels' bits; 0 unknown. */
static uint64_t channel_bytes(const struct cudaChannelFormatDesc *d)
{
    if (!d)
        return 0;
    unsigned k = (unsigned)d->f;
    bool sized = k <= cudaChannelFormatKindFloat ||
                 (k >= cudaChannelFormatKindUnsignedNormalized8X1 &&
                  k <= cudaChannelFormatKindSignedNormalized16X4) ||
                 k == cudaChannelFormatKindUnsignedNormalized1010102;
    if (!sized || d->x < 0 || d->y < 0 || d->z < 0 || d->w < 0)
        return 0;
    return ((uint64_t)d->x + (uint64_t)d->y + (uint64_t)d->z + (uint64_t)d->w) / 8;
}

static uint64_t at_least_1(uint64_t v)
{
    return v ? v : 1;
}

/* Bytes of an array (levels 1) or mipmapped array of elements of `elem` bytes. */
static uint64_t array_bytes(uint64_t elem, uint64_t w, uint64_t h, uint64_t d, unsigned levels,
                            unsigned flags)
{
    if (elem == 0 || (flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING)))
        return 0;
    bool layers = flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP);
    /* The runtime and driver clamp the level count to [1, 1 + floor(log2(largest side))]. */
    uint64_t side = w > h ? w : h;
    if (!layers && d > side)
        side = d;
    unsigned most = 1;
    while (most < 64 && (side >> most) != 0)
        most++;
    if (levels < 1)
        levels = 1;
    if (levels > most)
        levels = most;
    uint64_t total = 0;
    for (unsigned l = 0; l < levels; l++) {
        uint64_t lw = at_least_1(w >> l), lh = at_least_1(h >> l);
        uint64_t ld = layers ? at_least_1(d) : at_least_1(d >> l);
        total = add_sat(total, mul_sat(mul_sat(mul_sat(elem, lw), lh), ld));
    }
    return total;
}

static uint64_t desc2d_bytes(const CUDA_ARRAY_DESCRIPTOR *d)
{
    return d ? array_bytes(format_bytes(d->Format, d->NumChannels), d->Width, d->Height, 0, 1, 0)
             : 0;
}

static uint64_t desc3d_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    return d ? array_bytes(format_bytes(d->Format, d->NumChannels), d->Width, d->Height, d->Depth,
                           levels, d->Flags)
             : 0;
}

/* ---- driver ---- */

#define DRV_ALLOC(api, kind, call, address, bytes)                                           \
    GMT_ALLOC_BODY(CUresult, CUDA_SUCCESS, call, api, kind, address, bytes, -1, 0, 0, 0)

ALWAYS CUresult gmt_body_cuArrayCreate(gmt_fn_cuArrayCreate_v2 *real, CUarray *arr,
                                       const CUDA_ARRAY_DESCRIPTOR *desc)
{
    DRV_ALLOC(GMT_API_cuArrayCreate, GMT_KIND_ARRAY, real(arr, desc), U64(*arr),
              desc2d_bytes(desc));
}

ALWAYS CUresult gmt_body_cuArray3DCreate(gmt_fn_cuArray3DCreate_v2 *real, CUarray *arr,
                                         const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    DRV_ALLOC(GMT_API_cuArray3DCreate, GMT_KIND_ARRAY, real(arr, desc), U64(*arr),
              desc3d_bytes(desc, 1));
}

ALWAYS CUresult gmt_body_cuMipmappedArrayCreate(gmt_fn_cuMipmappedArrayCreate *real,
                                                CUmipmappedArray *arr,
                                                const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                                unsigned int levels)
{
    DRV_ALLOC(GMT_API_cuMipmappedArrayCreate, GMT_KIND_MIPMAPPED_ARRAY, real(arr, desc, levels),
              U64(*arr), desc3d_bytes(desc, levels));
}

ALWAYS CUresult gmt_body_cuArrayDestroy(gmt_fn_cuArrayDestroy *real, CUarray arr)
{
    GMT_FREE_BODY(CUresult, real(arr), GMT_API_cuArrayDestroy, U64(arr), 0);
}

ALWAYS CUresult gmt_body_cuMipmappedArrayDestroy(gmt_fn_cuMipmappedArrayDestroy *real,
                                                 CUmipmappedArray arr)
{
    GMT_FREE_BODY(CUresult, real(arr), GMT_API_cuMipmappedArrayDestroy, U64(arr), 0);
}

/* ---- runtime ---- */

#define RT_ALLOC(api, kind, call, address, bytes)                                            \
    GMT_ALLOC_BODY(cudaError_t, cudaSuccess, call, api, kind, address, bytes, -1, 0, 0, 0)

ALWAYS cudaError_t gmt_body_cudaMallocArray(gmt_fn_cudaMallocArray *real, cudaArray_t *arr,
                                            const struct cudaChannelFormatDesc *desc, size_t w,
                                            size_t h, unsigned int flags)
{
    RT_ALLOC(GMT_API_cudaMallocArray, GMT_KIND_ARRAY, real(arr, desc, w, h, flags), U64(*arr),
             array_bytes(channel_bytes(desc), w, h, 0, 1, flags));
}

ALWAYS cudaError_t gmt_body_cudaMalloc3DArray(gmt_fn_cudaMalloc3DArray *real, cudaArray_t *arr,
                                              const struct cudaChannelFormatDesc *desc,
                                              struct cudaExtent ext, unsigned int flags)
{
    RT_ALLOC(GMT_API_cudaMalloc3DArray, GMT_KIND_ARRAY, real(arr, desc, ext, flags), U64(*arr),
             array_bytes(channel_bytes(desc), ext.width, ext.height, ext.depth, 1, flags));
}

ALWAYS cudaError_t gmt_body_cudaMallocMipmappedArray(gmt_fn_cudaMallocMipmappedArray *real,
                                                     cudaMipmappedArray_t *arr,
                                                     const struct cudaChannelFormatDesc *desc,
                                                     struct cudaExtent ext, unsigned int levels,
                                                     unsigned int flags)
{
    RT_ALLOC(GMT_API_cudaMallocMipmappedArray, GMT_KIND_MIPMAPPED_ARRAY,
             real(arr, desc, ext, levels, flags), U64(*arr),
             array_bytes(channel_bytes(desc), ext.width, ext.height, ext.depth, levels, flags));
}

ALWAYS cudaError_t gmt_body_cudaFreeArray(gmt_fn_cudaFreeArray *real, cudaArray_t arr)
{
    GMT_FREE_BODY(cudaError_t, real(arr), GMT_API_cudaFreeArray, U64(arr), 0);
}

ALWAYS cudaError_t gmt_body_cudaFreeMipmappedArray(gmt_fn_cudaFreeMipmappedArray *real,
                                                   cudaMipmappedArray_t arr)
{
    GMT_FREE_BODY(cudaError_t, real(arr), GMT_API_cudaFreeMipmappedArray, U64(arr), 0);
}

#define GMT_X(file, ...) GMT_HOOKS_OF_ARR_##file(GMT_HOOK_DEFINE, file, __VA_ARGS__)
GMT_HOOKS(GMT_X)
#undef GMT_X
