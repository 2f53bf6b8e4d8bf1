// untracked.cu: one-GPU programs whose untracked device memory tests/gpu/untracked.sh names: a context only, a kernel needing local memory, limits set by hand.
//
// Usage: untracked MODE [BYTES]
//   ctx          the context and one 16 MiB cudaMalloc
//   local BYTES  a kernel with BYTES of local memory per thread, launched once
//   stack BYTES  cudaDeviceSetLimit(cudaLimitStackSize, BYTES)
//   fifo BYTES   cudaDeviceSetLimit(cudaLimitPrintfFifoSize, BYTES)
//   heap BYTES   cudaDeviceSetLimit(cudaLimitMallocHeapSize, BYTES)
//   fifo_use BYTES, heap_use BYTES  the same (BYTES 0: the limit left as it is), then a
//                kernel that calls printf / malloc, launched once: when the driver charges
//                the FIFO and the heap
// Each then asks for 1 PiB, which fails: the tracer samples device memory (and the limits)
// after a failed allocation, and otherwise would take no sample after the change.
// Prints "used_before=B used_set=B used_after=B stack=B fifo=B heap=B" (cudaMemGetInfo
// before the change, after setting the limit, after the kernel; the limits after it).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

template <int N> __global__ void needs_local(int *out, int i)
{
    volatile char buf[N]; // volatile: kept in local memory, not registers
    for (int k = 0; k < N; k++) buf[k] = (char)(k + i);
    out[threadIdx.x] = buf[(i + threadIdx.x) % N];
}

__global__ void says(int i)
{
    if (i == 0 && threadIdx.x == 0 && blockIdx.x == 0) printf("untracked: printf from the device\n");
}

__global__ void mallocs(int *out)
{
    char *p = (char *)malloc(64);
    if (p) p[0] = (char)threadIdx.x;
    out[threadIdx.x] = p ? p[0] : -1;
    free(p);
}

static size_t used(void)
{
    size_t f = 0, t = 0;
    cudaMemGetInfo(&f, &t);
    return t - f;
}

#define CK(x)                                                                                  \
    do {                                                                                       \
        cudaError_t e_ = (x);                                                                  \
        if (e_ != cudaSuccess) {                                                               \
            fprintf(stderr, "untracked: %s: %s\n", #x, cudaGetErrorString(e_));                \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ctx";
    size_t bytes = argc > 2 ? strtoull(argv[2], NULL, 10) : 0;
    void *keep;
    int *out;
    CK(cudaMalloc(&keep, 16u << 20));
    CK(cudaMalloc((void **)&out, 4096));
    size_t before = used(), set = 0;
    if (!strcmp(mode, "local")) {
        if (bytes >= 4096) needs_local<4096><<<132, 256>>>(out, 1);
        else needs_local<1024><<<132, 256>>>(out, 1);
        CK(cudaDeviceSynchronize());
    } else if (!strcmp(mode, "stack")) {
        CK(cudaDeviceSetLimit(cudaLimitStackSize, bytes));
    } else if (!strcmp(mode, "fifo")) {
        CK(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, bytes));
    } else if (!strcmp(mode, "heap")) {
        CK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, bytes));
    } else if (!strcmp(mode, "fifo_use")) {
        if (bytes) CK(cudaDeviceSetLimit(cudaLimitPrintfFifoSize, bytes));
        set = used();
        says<<<1, 32>>>(0);
        CK(cudaDeviceSynchronize());
    } else if (!strcmp(mode, "heap_use")) {
        if (bytes) CK(cudaDeviceSetLimit(cudaLimitMallocHeapSize, bytes));
        set = used();
        mallocs<<<1, 32>>>(out);
        CK(cudaDeviceSynchronize());
    }
    size_t after = used(), st = 0, fi = 0, he = 0;
    cudaDeviceGetLimit(&st, cudaLimitStackSize);
    cudaDeviceGetLimit(&fi, cudaLimitPrintfFifoSize);
    cudaDeviceGetLimit(&he, cudaLimitMallocHeapSize);
    void *huge = NULL;
    if (cudaMalloc(&huge, (size_t)1 << 50) == cudaSuccess) cudaFree(huge);
    cudaGetLastError();
    printf("used_before=%zu used_set=%zu used_after=%zu stack=%zu fifo=%zu heap=%zu\n", before,
           set ? set : after, after, st, fi, he);
    return 0;
}
