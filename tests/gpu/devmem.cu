// devmem.cu: on a real GPU, device memory taken every common way but arrays and graphs (arrays.cu, graphs.cu), each step's cudaMemGetInfo delta, two allocations too large for the device, and a handle exported and imported back (what a peer's buffer looks like), with no NCCL call.
//
// Build on the GPU machine: nvcc -o devmem devmem.cu -lcuda (static runtime, nvcc's
// default). Prints "STEP name delta=BYTES" after each step (device used, all processes,
// from cudaMemGetInfo), "FAIL api error=N" for the failures, then sleeps so that the
// library's periodic device samples have time to run, frees everything and exits 0.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static size_t used(void)
{
    size_t f = 0, t = 0;
    cudaMemGetInfo(&f, &t);
    return t - f;
}

static size_t mark;

static void step(const char *name, int rc)
{
    size_t now = used();
    printf("STEP %-36s rc=%d delta=%lld\n", name, rc, (long long)now - (long long)mark);
    fflush(stdout);
    mark = now;
}

__global__ void touch(char *p, size_t n)
{
    for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = 1;
}

int main(int argc, char **argv)
{
    int sleep_ms = argc > 1 ? atoi(argv[1]) : 1500;
    cudaFree(0);
    mark = used();
    printf("START used=%zu\n", mark);

    void *d64, *a32, *pitched, *host;
    char *managed;
    size_t pitch = 0;
    step("cudaMalloc 64 MiB", cudaMalloc(&d64, 64u << 20));
    cudaStream_t s;
    cudaStreamCreate(&s);
    step("cudaMallocAsync 32 MiB", cudaMallocAsync(&a32, 32u << 20, s) || cudaStreamSynchronize(s));
    step("cudaMallocManaged 40 MiB", cudaMallocManaged((void **)&managed, 40u << 20));
    touch<<<64, 256>>>(managed, 40u << 20);
    step("  (touched by a kernel)", cudaDeviceSynchronize());
    step("cudaMallocPitch 1000x1000", cudaMallocPitch(&pitched, &pitch, 1000, 1000));
    step("cudaHostAlloc 8 MiB (host)", cudaHostAlloc(&host, 8u << 20, cudaHostAllocDefault));

    // cuMem: a 64 MiB handle that can be exported, reserved, mapped and made accessible
    int dev = 0;
    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    size_t gran = 0;
    cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
    size_t vmm = ((64u << 20) + gran - 1) / gran * gran;
    CUmemGenericAllocationHandle h = 0, imported = 0;
    CUdeviceptr va = 0, va2 = 0;
    CUmemAccessDesc acc = {};
    acc.location = prop.location;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    step("cuMemCreate 64 MiB", cuMemCreate(&h, vmm, &prop, 0));
    step("cuMemAddressReserve + cuMemMap", cuMemAddressReserve(&va, vmm, 0, 0, 0) ||
                                               cuMemMap(va, vmm, 0, h, 0) || cuMemSetAccess(va, vmm, &acc, 1));

    // a peer's buffer, as NCCL's peers see one: exported as a file descriptor, imported,
    // mapped at a second address (here the same process plays the peer: no new memory)
    int fd = -1;
    int rc = cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0);
    if (!rc)
        rc = cuMemImportFromShareableHandle(&imported, (void *)(long)fd,
                                            CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
    if (!rc)
        rc = cuMemAddressReserve(&va2, vmm, 0, 0, 0) || cuMemMap(va2, vmm, 0, imported, 0) ||
             cuMemSetAccess(va2, vmm, &acc, 1);
    step("import of an exported handle + map", rc);

    // out of memory, by the runtime and by the driver
    void *huge = NULL;
    CUdeviceptr dhuge = 0;
    printf("FAIL cudaMalloc 1 TiB error=%d\n", (int)cudaMalloc(&huge, 1ull << 40));
    printf("FAIL cuMemAlloc 1 TiB error=%d\n", (int)cuMemAlloc(&dhuge, 1ull << 40));
    cudaGetLastError();
    fflush(stdout);

    usleep((useconds_t)sleep_ms * 1000);

    cuMemUnmap(va2, vmm);
    cuMemAddressFree(va2, vmm);
    cuMemRelease(imported);
    if (fd >= 0)
        close(fd);
    cuMemUnmap(va, vmm);
    cuMemAddressFree(va, vmm);
    cuMemRelease(h);
    cudaFreeHost(host);
    cudaFree(pitched);
    cudaFree(managed);
    cudaFreeAsync(a32, s);
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
    cudaFree(d64);
    step("everything freed", 0);
    printf("END used=%zu\n", used());
    return 0;
}
