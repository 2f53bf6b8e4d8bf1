// plain.cu: a CUDA C program as a user writes it, built with plain `nvcc plain.cu` (the static runtime, no -g): its allocation sites must name main.
#include <cstdio>
#include <cuda_runtime.h>

int main()
{
    void *a = nullptr, *b = nullptr;
    if (cudaMalloc(&a, 64 << 20) != cudaSuccess || cudaMalloc(&b, 16 << 20) != cudaSuccess) {
        std::printf("cudaMalloc failed\n");
        return 1;
    }
    cudaFree(b);
    std::printf("ok\n");
    return 0; // a (64 MiB) left for the trace's leak list
}
