/* sample_bench.c: cuMemAlloc_v2/cuMemFree_v2 pairs on every device for a fixed wall time, for comparing the tracer's periodic device samples on and off. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_cuda.h"

/* Built against the simulated driver; on a GPU host the real libcuda.so.1 stands in
 * (LD_LIBRARY_PATH before the run path): it calls only what both export. Each device
 * gets a context and a live allocation, so the tracer samples every one of them; the
 * loop alternates over the devices, 4 KiB a pair. */

static double ns_of(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* CPU ns of the tracer's thread ("gpumemtrace": the flusher, which takes the periodic
 * samples), 0 when there is none. A thread of this process is read through the CPU clock
 * Linux gives each thread id (the encoding glibc's pthread_getcpuclockid uses). */
static double flusher_cpu_ns(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return 0;
    struct dirent *e;
    double ns = 0;
    while ((e = readdir(d))) {
        char path[300], name[32] = "";
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        if (fgets(name, sizeof name, f) && !strcmp(name, "gpumemtrace\n")) {
            long tid = atol(e->d_name);
            clockid_t c = (clockid_t)((~(unsigned)tid << 3) | 6); /* CPUCLOCK_SCHED, per thread */
            ns = ns_of(c);
        }
        fclose(f);
    }
    closedir(d);
    return ns;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: sample_bench SECONDS\n");
        return 2;
    }
    double secs = atof(argv[1]);
    int n = 0;
    if (cuInit(0) != CUDA_SUCCESS || cuDeviceGetCount(&n) != CUDA_SUCCESS || n < 1) {
        fprintf(stderr, "sample_bench: no CUDA device\n");
        return 1;
    }
    if (n > 8)
        n = 8;
    CUcontext ctx[8];
    CUdeviceptr keep[8];
    for (int d = 0; d < n; d++)
        if (cuDevicePrimaryCtxRetain(&ctx[d], d) != CUDA_SUCCESS || cuCtxSetCurrent(ctx[d]) != CUDA_SUCCESS ||
            cuMemAlloc_v2(&keep[d], 2 << 20) != CUDA_SUCCESS) {
            fprintf(stderr, "sample_bench: device %d unusable\n", d);
            return 1;
        }
    long pairs = 0;
    double w0 = ns_of(CLOCK_MONOTONIC), c0 = ns_of(CLOCK_PROCESS_CPUTIME_ID), w = w0;
    while (w - w0 < secs * 1e9) {
        for (int d = 0; d < n; d++) {
            cuCtxSetCurrent(ctx[d]);
            for (int i = 0; i < 64; i++) {
                CUdeviceptr p;
                if (cuMemAlloc_v2(&p, 4096) != CUDA_SUCCESS || cuMemFree_v2(p) != CUDA_SUCCESS) {
                    fprintf(stderr, "sample_bench: an allocation failed\n");
                    return 1;
                }
            }
            pairs += 64;
        }
        w = ns_of(CLOCK_MONOTONIC);
    }
    double cpu = ns_of(CLOCK_PROCESS_CPUTIME_ID) - c0;
    /* One line: wall ns per pair, process CPU ns per pair (every thread: the tracer's
     * flusher and its samples too), pairs, devices, the flusher's CPU ns in all. */
    printf("%.1f %.1f %ld %d %.0f\n", (w - w0) / (double)pairs, cpu / (double)pairs, pairs, n,
           flusher_cpu_ns());
    for (int d = 0; d < n; d++) {
        cuCtxSetCurrent(ctx[d]);
        cuMemFree_v2(keep[d]);
    }
    return 0;
}
