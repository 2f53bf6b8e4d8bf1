/* nccl_bench.c: CPU ns per ncclAllReduce call against the stub NCCL (stub_nccl.c), for runs with and without the tracer preloaded. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fake_cuda.h"
#include "fake_nccl.h"

static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int loop(long n, ncclComm_t comm)
{
    static float buf[2];
    for (long i = 0; i < n; i++)
        if (ncclAllReduce(buf, buf, 2, ncclFloat32, ncclSum, comm, NULL) != ncclSuccess)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: nccl_bench CALLS\n");
        return 2;
    }
    long calls = atol(argv[1]);
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return 1;
    /* Made through NCCL, as every real communicator is: the tracer then knows its device
     * from the COMM record instead of asking the driver at each call. */
    ncclUniqueId id;
    ncclComm_t comm;
    if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess)
        return 1;
    if (loop(calls / 10 + 1000, comm))
        return 1;
    double t0 = cpu_ns();
    if (loop(calls, comm))
        return 1;
    printf("%.1f\n", (cpu_ns() - t0) / (double)calls);
    return 0;
}
