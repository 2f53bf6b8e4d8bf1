// alloc_loop.cu: on a real GPU, the cost the tracer adds per allocation event: N cudaMalloc/cudaFree pairs (or cuMemAlloc/cuMemFree, or cudaMallocAsync/cudaFreeAsync from a pool) made DEPTH calls below main, timed by the process's own user and system CPU.
//
// Usage: alloc_loop runtime|driver|async PAIRS DEPTH
// Prints one JSON line: mode, pairs, depth, user and system CPU seconds of the loop
// (getrusage around it, after a warm-up), the process's CPU seconds as the scheduler
// counts them exactly (CLOCK_PROCESS_CPUTIME_ID: getrusage's user/system split is
// sampled at the timer tick), and wall seconds. Run it with and without
// LD_PRELOAD=libgpumemtrace.so, interleaved (tests/gpu/alloc_cost.sh): the difference
// per event (2 per pair) is the tracer's.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/resource.h>
#include <time.h>

static int mode; // 0 runtime, 1 driver, 2 async
static cudaStream_t stream;

static double secs(const struct timeval &t) { return t.tv_sec + t.tv_usec / 1e6; }
static double cpu_secs()
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static int pair(size_t bytes)
{
    if (mode == 1) {
        CUdeviceptr p;
        if (cuMemAlloc(&p, bytes) != CUDA_SUCCESS) return 1;
        return cuMemFree(p) != CUDA_SUCCESS;
    }
    void *p = nullptr;
    if (mode == 2) {
        if (cudaMallocAsync(&p, bytes, stream) != cudaSuccess) return 1;
        return cudaFreeAsync(p, stream) != cudaSuccess;
    }
    if (cudaMalloc(&p, bytes) != cudaSuccess) return 1;
    return cudaFree(p) != cudaSuccess;
}

// DEPTH frames of our own between main and the allocation call
__attribute__((noinline)) static int nest(int depth, long n, size_t bytes)
{
    if (depth > 0) {
        int r = nest(depth - 1, n, bytes);
        __asm__ __volatile__("" ::: "memory"); // not a tail call
        return r;
    }
    for (long i = 0; i < n; i++)
        if (pair(bytes)) return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: alloc_loop runtime|driver|async PAIRS DEPTH\n");
        return 2;
    }
    mode = !strcmp(argv[1], "driver") ? 1 : !strcmp(argv[1], "async") ? 2 : 0;
    long pairs = atol(argv[2]);
    int depth = atoi(argv[3]);
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) return 1;
    cudaStreamCreate(&stream);
    if (nest(depth, 1000, 1 << 20)) return 1; // warm-up: contexts, pools, the tracer's tables
    cudaStreamSynchronize(stream);
    struct rusage a, b;
    struct timespec w0, w1;
    getrusage(RUSAGE_SELF, &a);
    double c0 = cpu_secs();
    clock_gettime(CLOCK_MONOTONIC, &w0);
    int r = nest(depth, pairs, 1 << 20);
    cudaStreamSynchronize(stream);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    double c1 = cpu_secs();
    getrusage(RUSAGE_SELF, &b);
    printf("{\"mode\": \"%s\", \"pairs\": %ld, \"depth\": %d, \"user_s\": %.6f, \"sys_s\": %.6f, \"cpu_s\": %.6f, \"wall_s\": %.6f, \"ok\": %s}\n",
           argv[1], pairs, depth, secs(b.ru_utime) - secs(a.ru_utime), secs(b.ru_stime) - secs(a.ru_stime),
           c1 - c0, (w1.tv_sec - w0.tv_sec) + (w1.tv_nsec - w0.tv_nsec) / 1e9, r ? "false" : "true");
    return r;
}
