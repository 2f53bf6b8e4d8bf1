/* nccl_bench.c: CPU ns per ncclAllReduce call against the stub NCCL (stub_nccl.c), for runs with and without the tracer preloaded; or per iteration of the GPU benchmark's loop. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "fake_cuda.h"
#include "fake_nccl.h"

static double cpu_ns(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static ncclComm_t comms[2];
static long spin_ns; /* host work per iteration besides the calls, like NCCL's own */
static unsigned char *thrash_buf; /* and memory it walks through, evicting the caches */
static size_t thrash_bytes;
static void (*code_chain)(void); /* and code it runs through, evicting the code caches */

/* CODE_KIB of code that executes one jump in each 64-byte line, then returns: what a
 * large host code path (NCCL's) does to the instruction caches between the calls. */
static int make_code_chain(size_t bytes)
{
    bytes = (bytes + 63) & ~(size_t)63;
    unsigned char *c = mmap(NULL, bytes, PROT_READ | PROT_WRITE | PROT_EXEC,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (c == MAP_FAILED)
        return -1;
    for (size_t i = 0; i + 64 < bytes; i += 64) {
        c[i] = 0xeb; /* jmp rel8: to the next line */
        c[i + 1] = 62;
    }
    c[bytes - 64] = 0xc3; /* ret */
    code_chain = (void (*)(void))(void *)c;
    return 0;
}

static void spin(void)
{
    for (size_t i = 0; i < thrash_bytes; i += 64)
        thrash_buf[i]++;
    if (code_chain)
        code_chain();
    if (spin_ns <= 0)
        return;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    do
        clock_gettime(CLOCK_MONOTONIC, &b);
    while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < spin_ns);
}

/* "single": one ncclAllReduce per iteration on one communicator. "group2": what one
 * iteration of tests/gpu/bench_allreduce.c's 8-byte loop calls: ncclGroupStart, an
 * ncclAllReduce on each of two communicators (two devices), ncclGroupEnd. SPIN_NS: host
 * work per iteration besides the calls (NCCL's own takes 12-19 us on the GPU host): the
 * trace then grows at the GPU loop's rate, and the calling thread's CPU shows what that
 * loop pays. THRASH_KIB: memory written per iteration, one byte per line, so the tracer's
 * data is as cold as between NCCL's calls. CODE_KIB: code run through per iteration, one
 * jump per line, so is the tracer's code. */
static int loop(long n, int group2)
{
    static float buf[2];
    for (long i = 0; i < n; i++) {
        spin();
        if (!group2) {
            if (ncclAllReduce(buf, buf, 2, ncclFloat32, ncclSum, comms[0], NULL) != ncclSuccess)
                return 1;
            continue;
        }
        if (ncclGroupStart() != ncclSuccess)
            return 1;
        for (int d = 0; d < 2; d++)
            if (ncclAllReduce(buf, buf, 2, ncclFloat32, ncclSum, comms[d], NULL) != ncclSuccess)
                return 1;
        if (ncclGroupEnd() != ncclSuccess)
            return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 6 || (argc >= 3 && strcmp(argv[2], "single") != 0 &&
                                 strcmp(argv[2], "group2") != 0)) {
        fprintf(stderr, "usage: nccl_bench CALLS [single|group2 [SPIN_NS [THRASH_KIB [CODE_KIB]]]]\n");
        return 2;
    }
    if (argc >= 4)
        spin_ns = atol(argv[3]);
    if (argc >= 5) {
        thrash_bytes = (size_t)atol(argv[4]) << 10;
        if (thrash_bytes && !(thrash_buf = calloc(1, thrash_bytes)))
            return 1;
    }
    if (argc == 6 && atol(argv[5]) > 0 && make_code_chain((size_t)atol(argv[5]) << 10))
        return 1;
    long calls = atol(argv[1]);
    int group2 = argc >= 3 && strcmp(argv[2], "group2") == 0;
    CUcontext ctx;
    if (cuInit(0) != CUDA_SUCCESS || cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS ||
        cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return 1;
    /* Made through NCCL, as every real communicator is: the tracer then knows its device
     * from the COMM record instead of asking the driver at each call. */
    if (group2) {
        if (ncclCommInitAll(comms, 2, NULL) != ncclSuccess)
            return 1;
    } else {
        ncclUniqueId id;
        if (ncclGetUniqueId(&id) != ncclSuccess || ncclCommInitRank(&comms[0], 1, id, 0) != ncclSuccess)
            return 1;
    }
    if (loop(calls / 10 + 1000, group2))
        return 1;
    /* The process's CPU (every thread: the tracer's flushes wherever they run), then the
     * calling thread's alone: what a GPU loop bound by that thread pays. */
    double p0 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID), t0 = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
    if (loop(calls, group2))
        return 1;
    double t1 = cpu_ns(CLOCK_THREAD_CPUTIME_ID), p1 = cpu_ns(CLOCK_PROCESS_CPUTIME_ID);
    printf("%.1f %.1f\n", (p1 - p0) / (double)calls, (t1 - t0) / (double)calls);
    return 0;
}
