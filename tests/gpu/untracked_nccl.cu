// untracked_nccl.cu: one GPU, one process: ncclCommInitAll on device 0, an all-reduce, a grouped send+recv to itself, a second all-reduce, destroy; device used and the stack limit at each step, for tests/gpu/untracked.sh.
//
// Usage: untracked_nccl   Prints "step=NAME used=B stack=B" after each step.
#include <cstdio>
#include <cuda_runtime.h>
#include <nccl.h>

static void show(const char *step)
{
    size_t f = 0, t = 0, st = 0;
    cudaMemGetInfo(&f, &t);
    cudaDeviceGetLimit(&st, cudaLimitStackSize);
    printf("step=%s used=%zu stack=%zu\n", step, t - f, st);
}

#define CK(x)                                                                                  \
    do {                                                                                       \
        int e_ = (int)(x);                                                                     \
        if (e_ != 0) {                                                                         \
            fprintf(stderr, "untracked_nccl: %s failed: %d\n", #x, e_);                        \
            return 1;                                                                          \
        }                                                                                      \
    } while (0)

int main(void)
{
    const size_t n = 16u << 20; // floats: 64 MiB
    float *a, *b;
    CK(cudaSetDevice(0));
    CK(cudaMalloc((void **)&a, n * sizeof(float)));
    CK(cudaMalloc((void **)&b, n * sizeof(float)));
    show("start");
    ncclComm_t c;
    int dev = 0;
    CK(ncclCommInitAll(&c, 1, &dev));
    show("init");
    CK(ncclAllReduce(a, a, n, ncclFloat, ncclSum, c, 0));
    CK(cudaDeviceSynchronize());
    show("allreduce");
    CK(ncclGroupStart());
    CK(ncclSend(a, n, ncclFloat, 0, c, 0));
    CK(ncclRecv(b, n, ncclFloat, 0, c, 0));
    CK(ncclGroupEnd());
    CK(cudaDeviceSynchronize());
    show("sendrecv");
    CK(ncclAllReduce(a, a, n / 2, ncclFloat, ncclSum, c, 0));
    CK(cudaDeviceSynchronize());
    show("allreduce2");
    CK(ncclCommDestroy(c));
    show("destroy");
    return 0;
}
