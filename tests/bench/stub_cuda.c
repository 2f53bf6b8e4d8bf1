/* stub_cuda.c: a libcuda.so.1 whose calls return at once, so a benchmark sees the tracer's own cost and not the simulated driver's mmap/munmap. */
#include <stddef.h>
#include <stdint.h>

#include "fake_cuda.h"

#define EXPORT __attribute__((visibility("default")))

/* Addresses come from a counter: nothing is allocated, nothing can run out. */
static uintptr_t next_addr = (uintptr_t)1 << 40;
static struct CUctx_st *const the_ctx = (struct CUctx_st *)(uintptr_t)0x1000;
static __thread CUcontext current;

EXPORT CUresult cuInit(unsigned int flags) { (void)flags; return CUDA_SUCCESS; }
EXPORT CUresult cuDriverGetVersion(int *v) { *v = 13000; return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal) { *d = ordinal; return CUDA_SUCCESS; }
EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *c, CUdevice d) { (void)d; *c = the_ctx; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxSetCurrent(CUcontext c) { current = c; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxGetCurrent(CUcontext *c) { *c = current; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxGetDevice(CUdevice *d) { *d = 0; return CUDA_SUCCESS; }
EXPORT CUresult cuMemGetInfo_v2(size_t *f, size_t *t) { *f = (size_t)100 << 30; *t = (size_t)140 << 30; return CUDA_SUCCESS; }
/* what the library reads beside each cuMemGetInfo sample (limits.c) */
EXPORT CUresult cuCtxGetLimit(size_t *v, CUlimit l) { *v = l == CU_LIMIT_STACK_SIZE ? 1024 : 1u << 20; return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGetAttribute(int *v, CUdevice_attribute a, CUdevice d)
{
    (void)d;
    *v = a == CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT ? 132 : 2048;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t bytes)
{
    *p = next_addr;
    next_addr += (bytes + 4095) & ~(size_t)4095;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) { (void)p; return CUDA_SUCCESS; }
