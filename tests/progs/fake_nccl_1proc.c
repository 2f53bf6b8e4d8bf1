/* fake_nccl_1proc.c: an NCCL program to trace: one process drives two devices (ncclCommInitAll) through groups of collectives and a send/recv pair. */

/* Usage: fake_nccl_1proc [COUNT]   (elements per rank, default 65536)
 * ncclCommInitAll over devices 0 and 1, then, each in one ncclGroupStart/End over both
 * communicators and checked element by element: all_reduce (sum, float), all_gather
 * (int32), reduce_scatter (max, double), broadcast from rank 1 (int64), a group with
 * all_reduce and broadcast together, and send/recv (rank 0 -> rank 1 and back).
 * Prints "fake_nccl_1proc: ok first=A" (the cudaMemGetInfo drop on device 0 over the
 * first group, in bytes) and exits 0; exits 1 with a message on the first mismatch. */
#include "fake_nccl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N 2
#define CK(call)                                                                              \
    do {                                                                                      \
        long e_ = (long)(call);                                                               \
        if (e_ != 0) {                                                                        \
            fprintf(stderr, "fake_nccl_1proc: %s failed: %ld\n", #call, e_);                  \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)
#define EXPECT(cond, ...)                                                                     \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "fake_nccl_1proc: " __VA_ARGS__);                                 \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

static void *dev_alloc(int dev, size_t bytes)
{
    void *p;
    CK(cudaSetDevice(dev));
    CK(cudaMalloc(&p, bytes));
    return p;
}

int main(int argc, char **argv)
{
    size_t n = argc > 1 ? strtoul(argv[1], NULL, 10) : 65536;
    ncclComm_t comms[N];
    CK(ncclCommInitAll(comms, N, NULL));
    float *f[N];
    int32_t *ig[N], *igr[N];
    double *d[N], *dr[N];
    int64_t *b[N];
    for (int r = 0; r < N; r++) {
        f[r] = dev_alloc(r, n * sizeof(float));
        ig[r] = dev_alloc(r, n * sizeof(int32_t));
        igr[r] = dev_alloc(r, N * n * sizeof(int32_t));
        d[r] = dev_alloc(r, N * n * sizeof(double));
        dr[r] = dev_alloc(r, n * sizeof(double));
        b[r] = dev_alloc(r, n * sizeof(int64_t));
        for (size_t i = 0; i < n; i++) {
            f[r][i] = (float)(r + 1) * (float)(i % 5); /* device memory is host-visible in the fake */
            ig[r][i] = (int32_t)(r * 1000000 + (int)i);
            b[r][i] = r == 1 ? (int64_t)i * 3 : -1;
        }
        for (size_t i = 0; i < N * n; i++) d[r][i] = (double)((i * (r + 2)) % 11);
    }
    size_t f0, t0, f1, t1;
    CK(cudaSetDevice(0));
    CK(cudaMemGetInfo(&f0, &t0));
    CK(ncclGroupStart());
    for (int r = 0; r < N; r++) CK(ncclAllReduce(f[r], f[r], n, ncclFloat, ncclSum, comms[r], NULL));
    CK(ncclGroupEnd());
    CK(cudaSetDevice(0));
    CK(cudaMemGetInfo(&f1, &t1));
    for (int r = 0; r < N; r++)
        for (size_t i = 0; i < n; i++) EXPECT(f[r][i] == 3.0f * (float)(i % 5), "all_reduce rank %d [%zu]\n", r, i);

    CK(ncclGroupStart());
    for (int r = 0; r < N; r++) CK(ncclAllGather(ig[r], igr[r], n, ncclInt32, comms[r], NULL));
    CK(ncclGroupEnd());
    for (int r = 0; r < N; r++)
        for (int s = 0; s < N; s++)
            for (size_t i = 0; i < n; i++)
                EXPECT(igr[r][s * n + i] == (int32_t)(s * 1000000 + (int)i), "all_gather rank %d\n", r);

    CK(ncclGroupStart());
    for (int r = 0; r < N; r++) CK(ncclReduceScatter(d[r], dr[r], n, ncclDouble, ncclMax, comms[r], NULL));
    CK(ncclGroupEnd());
    for (int r = 0; r < N; r++)
        for (size_t i = 0; i < n; i++) {
            size_t k = r * n + i;
            double a = (double)((k * 2) % 11), c = (double)((k * 3) % 11);
            EXPECT(dr[r][i] == (a > c ? a : c), "reduce_scatter rank %d [%zu]\n", r, i);
        }

    CK(ncclGroupStart());
    for (int r = 0; r < N; r++) CK(ncclBroadcast(b[r], b[r], n, ncclInt64, 1, comms[r], NULL));
    for (int r = 0; r < N; r++) CK(ncclAllReduce(ig[r], ig[r], n, ncclInt32, ncclMin, comms[r], NULL));
    CK(ncclGroupEnd());
    for (int r = 0; r < N; r++)
        for (size_t i = 0; i < n; i++) {
            EXPECT(b[r][i] == (int64_t)i * 3, "broadcast rank %d\n", r);
            EXPECT(ig[r][i] == (int32_t)i, "all_reduce min rank %d\n", r);
        }

    for (size_t i = 0; i < n; i++) f[0][i] = (float)i + 0.5f;
    CK(ncclGroupStart());
    CK(ncclSend(f[0], n, ncclFloat, 1, comms[0], NULL));
    CK(ncclRecv(f[1], n, ncclFloat, 0, comms[1], NULL));
    CK(ncclGroupEnd());
    for (size_t i = 0; i < n; i++) EXPECT(f[1][i] == (float)i + 0.5f, "send/recv [%zu]\n", i);

    for (int r = 0; r < N; r++) {
        CK(cudaSetDevice(r));
        CK(cudaFree(f[r]));
        CK(cudaFree(ig[r]));
        CK(cudaFree(igr[r]));
        CK(cudaFree(d[r]));
        CK(cudaFree(dr[r]));
        CK(cudaFree(b[r]));
        CK(ncclCommDestroy(comms[r]));
    }
    printf("fake_nccl_1proc: ok first=%zu\n", f0 - f1);
    return 0;
}
