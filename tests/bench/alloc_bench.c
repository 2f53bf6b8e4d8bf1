/* alloc_bench.c: CPU ns per cuMemAlloc_v2/cuMemFree_v2 pair, called from N frames of recursion, for runs with and without the tracer preloaded. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "fake_cuda.h"

/* Linked against the simulated driver (tests/fakes) or the stub (stub_cuda.c): both
 * export the driver's ABI names, so the preloaded tracer's cuMemAlloc_v2 stands in front. */

static long pairs;
static volatile long sink;

static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int loop(long n)
{
    for (long i = 0; i < n; i++) {
        CUdeviceptr p;
        if (cuMemAlloc_v2(&p, 4096) != CUDA_SUCCESS || cuMemFree_v2(p) != CUDA_SUCCESS)
            return 1;
    }
    return 0;
}

/* The timed loop runs at the bottom of `depth` frames of this function; noinline and the
 * use of the result afterwards keep each call a real frame (no tail call). */
__attribute__((noinline)) static int recurse(int depth, double *ns)
{
    if (depth == 0) {
        /* Warm-up: the stack gets interned, the writer's buffer and the driver's tables
         * reach their steady state before the clock starts. */
        if (loop(pairs / 10 + 1000))
            return 1;
        double t0 = cpu_ns();
        int rc = loop(pairs);
        *ns = cpu_ns() - t0;
        return rc;
    }
    int rc = recurse(depth - 1, ns);
    sink += depth;
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: alloc_bench DEPTH PAIRS\n");
        return 2;
    }
    int depth = atoi(argv[1]);
    pairs = atol(argv[2]);
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS) {
        fprintf(stderr, "alloc_bench: no CUDA context\n");
        return 1;
    }
    double ns = 0;
    if (recurse(depth, &ns)) {
        fprintf(stderr, "alloc_bench: an allocation failed\n");
        return 1;
    }
    /* One line for run.sh: CPU ns per pair (two events), then all events made. */
    printf("%.1f %ld\n", ns / (double)pairs, 2 * (pairs + pairs / 10 + 1000));
    return 0;
}
