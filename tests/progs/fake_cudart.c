/* fake_cudart.c: a plain CUDA runtime program to trace: cudaMalloc & co on two devices, built with the shared runtime (fake_cudart) and with libcudart_static.a (fake_cudart_static). */

/* What it does, in order, checking every result (exit 1 and a message on the first
 * failure, "fake_cudart: ok" and exit 0 otherwise):
 *   device 0: cudaMalloc 64 MiB (argv[1] MiB if given), copy a pattern in and out,
 *   cudaMemset, cudaMallocAsync 8 MiB + cudaFreeAsync on a stream (flags-0 entry point),
 *   cudaMallocHost 1 MiB, cudaMallocManaged 4 MiB, cudaMallocPitch 1000 x 100,
 *   cudaMalloc of twice the device (fails: cudaErrorMemoryAllocation), then frees all;
 *   device 1 (when there is one): cudaMalloc 32 MiB, free.
 * It prints the cudaMemGetInfo drop over the 64 MiB allocation ("delta=N"), so a test
 * can compare it with what the trace says, and how the runtime reached the driver
 * ("via=get_proc_address", or "via=dlsym" with a driver that lacks cuGetProcAddress_v2,
 * e.g. LD_LIBRARY_PATH=$(FAKES_DIR)/old-driver). */
#include "fake_cuda.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                           \
    do {                                                                                      \
        cudaError_t e_ = (call);                                                              \
        if (e_ != cudaSuccess) {                                                              \
            fprintf(stderr, "fake_cudart: %s: %s\n", #call, cudaGetErrorString(e_));          \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

int main(int argc, char **argv)
{
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 64;
    size_t big = mib << 20;
    int n = 0;
    CHECK(cudaGetDeviceCount(&n));
    CHECK(cudaSetDevice(0));
    size_t free0, total, free1;
    CHECK(cudaMemGetInfo(&free0, &total));
    void *d = NULL;
    CHECK(cudaMalloc(&d, big));
    CHECK(cudaMemGetInfo(&free1, &total));
    unsigned char *h = malloc(big), *back = malloc(big);
    if (!h || !back) return 1;
    for (size_t i = 0; i < big; i++) h[i] = (unsigned char)(i * 7);
    CHECK(cudaMemcpy(d, h, big, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(back, d, big, cudaMemcpyDeviceToHost));
    if (memcmp(h, back, big)) {
        fprintf(stderr, "fake_cudart: copy mismatch\n");
        return 1;
    }
    CHECK(cudaMemset(d, 0, big));

    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    void *a = NULL;
    CHECK(cudaMallocAsync(&a, 8 << 20, s));
    CHECK(cudaFreeAsync(a, s));
    CHECK(cudaStreamSynchronize(s));
    CHECK(cudaStreamDestroy(s));

    void *ph = NULL, *m = NULL, *pd = NULL;
    size_t pitch = 0;
    CHECK(cudaMallocHost(&ph, 1 << 20));
    CHECK(cudaMallocManaged(&m, 4 << 20, cudaMemAttachGlobal));
    CHECK(cudaMallocPitch(&pd, &pitch, 1000, 100));

    void *oom = NULL;
    if (cudaMalloc(&oom, total * 2) != cudaErrorMemoryAllocation || cudaGetLastError() != cudaErrorMemoryAllocation) {
        fprintf(stderr, "fake_cudart: expected an out-of-memory error\n");
        return 1;
    }
    CHECK(cudaFree(pd));
    CHECK(cudaFree(m));
    CHECK(cudaFreeHost(ph));
    CHECK(cudaFree(d));

    if (n > 1) {
        CHECK(cudaSetDevice(1));
        void *d1 = NULL;
        CHECK(cudaMalloc(&d1, 32 << 20));
        CHECK(cudaFree(d1));
    }
    CHECK(cudaDeviceSynchronize());
    free(h);
    free(back);
    struct fakecudart_resolution res;
    fakecudart_resolution(&res);
    printf("fake_cudart: ok delta=%zu via=%s\n", free0 - free1, res.used_get_proc_address ? "get_proc_address" : "dlsym");
    return 0;
}
