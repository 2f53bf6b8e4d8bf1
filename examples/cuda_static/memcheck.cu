// memcheck.cu: a CUDA C program built with plain nvcc (static cudart) that allocates in every common way and prints checksums to compare with and without tracing.
#include <cstdio>
#include <cstdint>
#include <cuda_runtime.h>

#define CHECK(call)                                                                 \
    do {                                                                            \
        cudaError_t e_ = (call);                                                    \
        if (e_ != cudaSuccess) {                                                    \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,           \
                    cudaGetErrorString(e_));                                        \
            return 1;                                                               \
        }                                                                           \
    } while (0)

__global__ void fill(uint32_t *p, size_t n, uint32_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (uint32_t)(i * 2654435761u) ^ seed;
}

// Order-independent so the result does not depend on how the copy was chunked.
static uint64_t checksum(const uint32_t *p, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += (uint64_t)p[i] * (i % 1021 + 1);
    return s;
}

int main(void)
{
    const size_t n_dev = (64u << 20) / 4, n_async = (32u << 20) / 4, n_host = (8u << 20) / 4;
    uint32_t *dev = nullptr, *adev = nullptr, *host = nullptr;
    cudaStream_t s;

    CHECK(cudaSetDevice(0));
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaMallocHost((void **)&host, n_dev * 4));  // pinned, big enough for both copies

    CHECK(cudaMalloc((void **)&dev, n_dev * 4));
    fill<<<256, 256>>>(dev, n_dev, 0x1234u);
    CHECK(cudaGetLastError());
    CHECK(cudaMemcpy(host, dev, n_dev * 4, cudaMemcpyDeviceToHost));
    printf("cudaMalloc      %8zu bytes checksum %016llx\n", n_dev * 4,
           (unsigned long long)checksum(host, n_dev));

    for (int round = 0; round < 3; round++) {
        CHECK(cudaMallocAsync((void **)&adev, n_async * 4, s));
        fill<<<256, 256, 0, s>>>(adev, n_async, 0xabcd0000u + (uint32_t)round);
        CHECK(cudaGetLastError());
        CHECK(cudaMemcpyAsync(host, adev, n_async * 4, cudaMemcpyDeviceToHost, s));
        CHECK(cudaFreeAsync(adev, s));
        CHECK(cudaStreamSynchronize(s));
        printf("cudaMallocAsync %8zu bytes checksum %016llx (round %d)\n", n_async * 4,
               (unsigned long long)checksum(host, n_async), round);
    }

    uint32_t *small = nullptr;
    CHECK(cudaMallocHost((void **)&small, n_host * 4));
    for (size_t i = 0; i < n_host; i++)
        small[i] = (uint32_t)(i * 7u);
    CHECK(cudaMemcpy(dev, small, n_host * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(host, dev, n_host * 4, cudaMemcpyDeviceToHost));
    printf("cudaMallocHost  %8zu bytes checksum %016llx\n", n_host * 4,
           (unsigned long long)checksum(host, n_host));

    CHECK(cudaFree(dev));
    CHECK(cudaFreeHost(small));
    CHECK(cudaFreeHost(host));
    CHECK(cudaStreamDestroy(s));
    printf("done\n");
    return 0;
}
