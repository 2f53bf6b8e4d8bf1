/* fake_driver_vmm.c: a program to trace that reaches the driver's VMM and pools the ways PyTorch and JAX do (entry-point API, dlsym on libcuda), besides the runtime. */

/* What it does, checking every result (exit 1 with a message on the first failure,
 * "fake_driver_vmm: ok" and exit 0 otherwise):
 *   1. PyTorch expandable segments: cuMemCreate/cuMemAddressReserve/cuMemMap/
 *      cuMemSetAccess/cuMemUnmap/cuMemRelease/cuMemAddressFree obtained through
 *      cudaGetDriverEntryPointByVersion (12000); reserves 8 GiB of addresses on device 0,
 *      maps a 2 MiB and a 20 MiB chunk into it, writes and reads them, unmaps and frees;
 *   2. host memory through cuMemCreate with a HOST_NUMA location (no device memory);
 *   3. JAX: cuMemCreate and friends from dlsym(dlopen("libcuda.so.1")), 64 MiB on device 1;
 *   4. pools: cudaMallocAsync_ptsz, a private cudaMemPool with cudaMallocFromPoolAsync,
 *      cudaFreeAsync, cudaMemPoolTrimTo, cudaMemPoolDestroy;
 *   5. cudaMalloc3D and cudaHostRegister of a malloc'd buffer.
 * It prints the device-0 cudaMemGetInfo drop while the 22 MiB are mapped ("mapped=N"). */
#include "fake_cuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB ((size_t)1 << 20)
#define CK(call)                                                                              \
    do {                                                                                      \
        long e_ = (long)(call);                                                               \
        if (e_ != 0) {                                                                        \
            fprintf(stderr, "fake_driver_vmm: %s failed: %ld\n", #call, e_);                  \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

struct vmm {
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult (*unmap)(CUdeviceptr, size_t);
    CUresult (*release)(CUmemGenericAllocationHandle);
    CUresult (*addr_free)(CUdeviceptr, size_t);
};

static const char *const names[] = {"cuMemCreate", "cuMemAddressReserve", "cuMemMap", "cuMemSetAccess",
                                    "cuMemUnmap", "cuMemRelease", "cuMemAddressFree"};
static const char *const abi_names[] = {"cuMemCreate", "cuMemAddressReserve", "cuMemMap", "cuMemSetAccess",
                                        "cuMemUnmap", "cuMemRelease", "cuMemAddressFree"};

static void load_entry_points(struct vmm *v)
{
    void **slots = (void **)v;
    for (int i = 0; i < 7; i++) {
        enum cudaDriverEntryPointQueryResult st;
        CK(cudaGetDriverEntryPointByVersion(names[i], &slots[i], 12000, cudaEnableDefault, &st));
        CK(st);
    }
}

static void load_dlsym(struct vmm *v)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "fake_driver_vmm: dlopen libcuda.so.1: %s\n", dlerror());
        exit(1);
    }
    void **slots = (void **)v;
    for (int i = 0; i < 7; i++)
        if (!(slots[i] = dlsym(h, abi_names[i]))) {
            fprintf(stderr, "fake_driver_vmm: dlsym %s\n", abi_names[i]);
            exit(1);
        }
}

static size_t used(void)
{
    size_t f, t;
    CK(cudaMemGetInfo(&f, &t));
    return t - f;
}

int main(void)
{
    struct vmm v;
    CK(cudaSetDevice(0));
    load_entry_points(&v);
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CUmemAccessDesc acc = {.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    size_t u0 = used();
    CUdeviceptr base;
    CK(v.reserve(&base, 8192 * MIB, 0, 0, 0));
    CUmemGenericAllocationHandle h1, h2;
    CK(v.create(&h1, 2 * MIB, &prop, 0));
    CK(v.create(&h2, 20 * MIB, &prop, 0));
    CK(v.map(base, 2 * MIB, 0, h1, 0));
    CK(v.map(base + 2 * MIB, 20 * MIB, 0, h2, 0));
    CK(v.access(base, 22 * MIB, &acc, 1));
    memset((void *)(uintptr_t)base, 0x5a, 22 * MIB);
    size_t mapped = used() - u0;
    if (((unsigned char *)(uintptr_t)base)[22 * MIB - 1] != 0x5a) return 1;
    CK(v.unmap(base, 22 * MIB));
    CK(v.release(h1));
    CK(v.release(h2));
    CK(v.addr_free(base, 8192 * MIB));

    CUmemAllocationProp host = {.type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_HOST_NUMA, 0}};
    CUmemGenericAllocationHandle hh;
    CK(v.create(&hh, 4 * MIB, &host, 0));
    CK(v.release(hh));

    struct vmm j;
    load_dlsym(&j);
    CK(cudaSetDevice(1));
    CUmemAllocationProp p1 = {.type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_DEVICE, 1}};
    CUmemAccessDesc a1 = {.location = {CU_MEM_LOCATION_TYPE_DEVICE, 1}, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CUdeviceptr jb;
    CUmemGenericAllocationHandle jh;
    CK(j.create(&jh, 64 * MIB, &p1, 0));
    CK(j.reserve(&jb, 64 * MIB, 0, 0, 0));
    CK(j.map(jb, 64 * MIB, 0, jh, 0));
    CK(j.access(jb, 64 * MIB, &a1, 1));
    CK(j.unmap(jb, 64 * MIB));
    CK(j.release(jh));
    CK(j.addr_free(jb, 64 * MIB));

    CK(cudaSetDevice(0));
    void *a = NULL, *b = NULL;
    CK(cudaMallocAsync_ptsz(&a, 6 * MIB, NULL));
    struct cudaMemPoolProps pp = {.allocType = cudaMemAllocationTypePinned, .location = {cudaMemLocationTypeDevice, 0}};
    cudaMemPool_t pool;
    CK(cudaMemPoolCreate(&pool, &pp));
    CK(cudaMallocFromPoolAsync(&b, 10 * MIB, pool, NULL));
    CK(cudaFreeAsync(b, NULL));
    CK(cudaFreeAsync_ptsz(a, NULL));
    CK(cudaMemPoolTrimTo(pool, 0));
    CK(cudaStreamSynchronize(NULL));
    CK(cudaMemPoolDestroy(pool));

    struct cudaPitchedPtr pitched;
    struct cudaExtent ext = {1000, 10, 4};
    CK(cudaMalloc3D(&pitched, ext));
    CK(cudaFree(pitched.ptr));
    void *reg = malloc(1 << 20);
    CK(cudaHostRegister(reg, 1 << 20, cudaHostRegisterDefault));
    CK(cudaHostUnregister(reg));
    free(reg);
    if (used() != u0) {
        fprintf(stderr, "fake_driver_vmm: device 0 did not get its memory back\n");
        return 1;
    }
    printf("fake_driver_vmm: ok mapped=%zu\n", mapped);
    return 0;
}
