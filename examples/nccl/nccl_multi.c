/* nccl_multi.c: one process drives every visible GPU (2 by default) through ncclCommInitAll and runs all_reduce, all_gather and reduce_scatter loops, printing checksums. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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

#define MAXDEV 8

/* Small integers in float: sums are exact, so checksums do not depend on the order
 * NCCL reduces in. */
static double checksum(const float *h, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)h[i] * (double)(i % 7 + 1);
    return s;
}

int main(int argc, char **argv)
{
    int ndev = argc > 1 ? atoi(argv[1]) : 2;
    int iters = argc > 2 ? atoi(argv[2]) : 5;
    size_t count = (size_t)(argc > 3 ? atol(argv[3]) : 16L << 20); /* floats per rank: 64 MiB */
    if (ndev < 1 || ndev > MAXDEV || iters < 1 || count < 1) {
        fprintf(stderr, "usage: %s [NDEV 1..%d] [ITERS] [COUNT]\n", argv[0], MAXDEV);
        return 2;
    }
    int visible = 0;
    CUDA(cudaGetDeviceCount(&visible));
    if (visible < ndev) {
        fprintf(stderr, "need %d GPUs, %d visible\n", ndev, visible);
        return 2;
    }

    ncclComm_t comms[MAXDEV];
    int devs[MAXDEV];
    cudaStream_t streams[MAXDEV];
    float *send[MAXDEV], *recv[MAXDEV];
    float *host = malloc(count * ndev * sizeof(float));
    if (!host)
        return 1;
    for (int d = 0; d < ndev; d++)
        devs[d] = d;
    NCCL(ncclCommInitAll(comms, ndev, devs));
    int version = 0;
    NCCL(ncclGetVersion(&version));
    printf("nccl %d, %d ranks, %zu floats per rank\n", version, ndev, count);

    for (int d = 0; d < ndev; d++) {
        CUDA(cudaSetDevice(d));
        CUDA(cudaStreamCreate(&streams[d]));
        CUDA(cudaMalloc((void **)&send[d], count * ndev * sizeof(float)));
        CUDA(cudaMalloc((void **)&recv[d], count * ndev * sizeof(float)));
        for (size_t i = 0; i < count * ndev; i++)
            host[i] = (float)((i + (size_t)d * 13) % 101);
        CUDA(cudaMemcpy(send[d], host, count * ndev * sizeof(float), cudaMemcpyHostToDevice));
    }

    for (int it = 0; it < iters; it++) {
        for (int op = 0; op < 3; op++) {
            const char *name = op == 0 ? "all_reduce" : op == 1 ? "all_gather" : "reduce_scatter";
            size_t out = op == 0 ? count : op == 1 ? count * ndev : count / ndev;
            NCCL(ncclGroupStart());
            for (int d = 0; d < ndev; d++) {
                if (op == 0)
                    NCCL(ncclAllReduce(send[d], recv[d], count, ncclFloat, ncclSum, comms[d],
                                       streams[d]));
                else if (op == 1)
                    NCCL(ncclAllGather(send[d], recv[d], count, ncclFloat, comms[d], streams[d]));
                else
                    NCCL(ncclReduceScatter(send[d], recv[d], count / ndev, ncclFloat, ncclSum,
                                           comms[d], streams[d]));
            }
            NCCL(ncclGroupEnd());
            for (int d = 0; d < ndev; d++) {
                CUDA(cudaSetDevice(d));
                CUDA(cudaStreamSynchronize(streams[d]));
                CUDA(cudaMemcpy(host, recv[d], out * sizeof(float), cudaMemcpyDeviceToHost));
                printf("CHECK iter %d %-14s rank %d checksum %.1f\n", it, name, d,
                       checksum(host, out));
            }
        }
    }

    for (int d = 0; d < ndev; d++) {
        CUDA(cudaSetDevice(d));
        CUDA(cudaFree(send[d]));
        CUDA(cudaFree(recv[d]));
        CUDA(cudaStreamDestroy(streams[d]));
        NCCL(ncclCommDestroy(comms[d]));
    }
    free(host);
    printf("done\n");
    return 0;
}
