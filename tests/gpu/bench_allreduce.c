/* bench_allreduce.c: one process drives 2 GPUs (ncclCommInitAll) and prints 8-byte all_reduce latency and 128 MiB all_reduce bus bandwidth, one line each. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define CUDA(call)                                                                   \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
                    cudaGetErrorString(e_));                                         \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)
#define NCCL(call)                                                                   \
    do {                                                                             \
        ncclResult_t r_ = (call);                                                    \
        if (r_ != ncclSuccess) {                                                     \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
                    ncclGetErrorString(r_));                                         \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

#define NDEV 2

static ncclComm_t comms[NDEV];
static cudaStream_t streams[NDEV];
static float *buf[NDEV];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void all_reduce(size_t count)
{
    NCCL(ncclGroupStart());
    for (int d = 0; d < NDEV; d++)
        NCCL(ncclAllReduce(buf[d], buf[d], count, ncclFloat, ncclSum, comms[d], streams[d]));
    NCCL(ncclGroupEnd());
}

static void sync_all(void)
{
    for (int d = 0; d < NDEV; d++) {
        CUDA(cudaSetDevice(d));
        CUDA(cudaStreamSynchronize(streams[d]));
    }
}

/* Seconds per all_reduce of `count` floats: `iters` back to back, then one sync, as
 * nccl-tests times them. */
static double time_loop(size_t count, int warmup, int iters)
{
    for (int i = 0; i < warmup; i++)
        all_reduce(count);
    sync_all();
    double t0 = now_s();
    for (int i = 0; i < iters; i++)
        all_reduce(count);
    sync_all();
    return (now_s() - t0) / iters;
}

int main(int argc, char **argv)
{
    int lat_iters = argc > 1 ? atoi(argv[1]) : 5000;
    int bw_iters = argc > 2 ? atoi(argv[2]) : 40;
    const size_t big = (size_t)128 << 20; /* bytes */
    int devs[NDEV] = {0, 1};
    NCCL(ncclCommInitAll(comms, NDEV, devs));
    for (int d = 0; d < NDEV; d++) {
        CUDA(cudaSetDevice(d));
        CUDA(cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking));
        CUDA(cudaMalloc((void **)&buf[d], big));
        CUDA(cudaMemset(buf[d], 0, big));
    }
    double lat = time_loop(2, 200, lat_iters);
    printf("allreduce_8B_us %.3f\n", lat * 1e6);
    double t = time_loop(big / sizeof(float), 5, bw_iters);
    /* bus bandwidth as nccl-tests defines it: algbw * 2(n-1)/n */
    printf("allreduce_128MiB_busbw_GBs %.3f\n", (double)big / t * 2.0 * (NDEV - 1) / NDEV / 1e9);
    fflush(stdout);
    for (int d = 0; d < NDEV; d++) {
        CUDA(cudaSetDevice(d));
        CUDA(cudaFree(buf[d]));
        NCCL(ncclCommDestroy(comms[d]));
    }
    return 0;
}
