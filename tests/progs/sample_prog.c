/* sample_prog.c: a CUDA program with no NCCL call, for test_sampling: allocations on two devices, an idle stretch, a failed allocation, a fork. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_cuda.h"

/* Usage: sample_prog MODE MS
 *   plain MS   allocate on device 0 and device 1, stay MS ms, free; exit 0
 *   sampled MS  allocate on device 0 and device 1, stay until the tracer's thread has
 *              had a memory query about each answered by the fake NVML (at most MS ms),
 *              print whether it had, free; exit 0
 *   idle MS    as plain, and print how many driver calls the process made while it
 *              slept (none of its own: any would be the tracer's)
 *   oom MS     device 0: a too large allocation fails; stay MS ms; exit 7
 *   fork MS    fork before any allocation: the child allocates on device 0 and stays
 *              MS ms; then the parent does the same
 *   forkafter MS  allocate on device 0, stay MS ms, fork: the child allocates on
 *              device 1 and stays MS ms
 * Prints the fake driver's counts of context creations and primary-context retains:
 * the same traced or not, if the tracer creates no context.
 * SAMPLE_PROG_ANSWERS=N: under the tracer, each stay of a process that allocated lasts
 * until the tracer's thread has also had N memory queries about each of its devices
 * answered by the fake NVML (at most 30 s more): N periodic samples of each are then in
 * the trace, however late the flusher ran on a loaded machine. */

static const char *const driver_fns[] = {
    "cuInit", "cuDriverGetVersion", "cuDeviceGet", "cuDeviceGetCount", "cuDeviceGetName",
    "cuDeviceTotalMem_v2", "cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease",
    "cuDevicePrimaryCtxRelease_v2", "cuDevicePrimaryCtxGetState", "cuCtxCreate_v2",
    "cuCtxDestroy_v2", "cuCtxSetCurrent", "cuCtxGetCurrent", "cuCtxGetDevice",
    "cuCtxPushCurrent_v2", "cuCtxPopCurrent_v2", "cuCtxSynchronize", "cuStreamCreate",
    "cuStreamDestroy_v2", "cuStreamSynchronize", "cuStreamSynchronize_ptsz", "cuMemGetInfo_v2",
    "cuMemAlloc_v2", "cuMemFree_v2", "cuMemAllocPitch_v2", "cuMemAllocManaged",
    "cuMemAllocHost_v2", "cuMemHostAlloc", "cuMemFreeHost", "cuMemHostRegister_v2",
    "cuMemHostUnregister", "cuMemAllocAsync", "cuMemAllocAsync_ptsz", "cuMemAllocFromPoolAsync",
    "cuMemAllocFromPoolAsync_ptsz", "cuMemFreeAsync", "cuMemFreeAsync_ptsz", "cuMemPoolCreate",
    "cuMemPoolDestroy", "cuMemPoolTrimTo", "cuMemPoolSetAttribute", "cuMemPoolGetAttribute",
    "cuDeviceGetDefaultMemPool", "cuMemCreate", "cuMemRelease", "cuMemAddressReserve",
    "cuMemAddressFree", "cuMemMap", "cuMemUnmap", "cuMemSetAccess",
    "cuMemGetAllocationGranularity", "cuMemExportToShareableHandle",
    "cuMemImportFromShareableHandle", "cuMemRetainAllocationHandle", "cuIpcGetMemHandle",
    "cuIpcOpenMemHandle_v2", "cuIpcCloseMemHandle", "cuGraphCreate", "cuGraphDestroy",
    "cuGraphAddMemAllocNode", "cuMulticastCreate", "cuArrayCreate_v2", "cuArray3DCreate_v2",
    "cuMipmappedArrayCreate", "cuArrayDestroy", "cuMipmappedArrayDestroy", "cuMemcpyHtoD_v2",
    "cuMemcpyDtoH_v2", "cuMemcpyDtoD_v2", "cuMemcpy", "cuMemsetD8_v2", "cuModuleLoadData",
    "cuModuleUnload", "cuGetErrorString", "cuGetErrorName", "cuGetProcAddress",
    "cuGetProcAddress_v2",
};
unsigned long fakecuda_pci_bus_id_calls(void);

static unsigned long driver_calls(void)
{
    unsigned long n = fakecuda_pci_bus_id_calls();
    for (size_t i = 0; i < sizeof driver_fns / sizeof driver_fns[0]; i++) {
        struct fakecuda_fn_stats s;
        if (fakecuda_fn_stats(driver_fns[i], &s) == 0)
            n += s.calls;
    }
    return n;
}

static unsigned long calls_of(const char *name)
{
    struct fakecuda_fn_stats s;
    return fakecuda_fn_stats(name, &s) == 0 ? s.calls : 0;
}

static void stay(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts))
        ;
}

/* Waits, at most ms, for the fake NVML to have answered the tracer's thread `n` times
 * about each device of the mask `devs`: a periodic sample of each is then in the trace,
 * however late the flusher ran. The NVML is the one the tracer loaded (none loaded:
 * none to wait for). */
static int sampled_within(long ms, unsigned long n, unsigned devs)
{
    typedef unsigned long count_fn(int);
    for (long waited = 0; waited <= ms; waited++) {
        void *h = dlopen("libnvidia-ml.so.1", RTLD_NOLOAD | RTLD_LAZY);
        count_fn *f = h ? (count_fn *)dlsym(h, "fakenvml_flusher_meminfo") : NULL;
        int done = f != NULL;
        for (int d = 0; d < 2 && done; d++)
            done = !(devs >> d & 1) || f(d) >= n;
        if (h)
            dlclose(h);
        if (done)
            return 1;
        stay(1);
    }
    return 0;
}

/* stay(ms), then under the tracer with SAMPLE_PROG_ANSWERS=N until N periodic samples
 * of each device of `devs` are in (the top's comment). */
static void stay_sampled(long ms, unsigned devs)
{
    stay(ms);
    const char *n = getenv("SAMPLE_PROG_ANSWERS");
    if (n && atol(n) > 0 && dlsym(RTLD_DEFAULT, "gpumemtrace_query_version"))
        sampled_within(30000, (unsigned long)atol(n), devs);
}

static CUcontext ctx_of(int dev)
{
    CUcontext c = NULL;
    if (cuDevicePrimaryCtxRetain(&c, dev) != CUDA_SUCCESS || cuCtxSetCurrent(c) != CUDA_SUCCESS) {
        fprintf(stderr, "sample_prog: no context on device %d\n", dev);
        exit(1);
    }
    return c;
}

static CUdeviceptr alloc_on(int dev, size_t bytes)
{
    ctx_of(dev);
    CUdeviceptr p = 0;
    if (cuMemAlloc_v2(&p, bytes) != CUDA_SUCCESS) {
        fprintf(stderr, "sample_prog: allocation on device %d failed\n", dev);
        exit(1);
    }
    return p;
}

static void report(const char *who)
{
    printf("%s: cuCtxCreate %lu, primary retains %lu\n", who, calls_of("cuCtxCreate_v2"),
           calls_of("cuDevicePrimaryCtxRetain"));
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: sample_prog plain|sampled|idle|oom|fork|forkafter MS\n");
        return 2;
    }
    const char *mode = argv[1];
    long ms = atol(argv[2]);
    if (cuInit(0) != CUDA_SUCCESS)
        return 1;
    if (!strcmp(mode, "plain") || !strcmp(mode, "idle") || !strcmp(mode, "sampled")) {
        CUdeviceptr a = alloc_on(0, 64 << 20);
        CUdeviceptr b = alloc_on(1, 32 << 20);
        unsigned long before = driver_calls();
        if (!strcmp(mode, "sampled"))
            printf("sampled: %s\n", sampled_within(ms, 1, 3) ? "yes" : "no");
        else
            stay_sampled(ms, 3);
        unsigned long during = driver_calls() - before;
        if (!strcmp(mode, "idle"))
            printf("driver calls while idle: %lu\n", during);
        ctx_of(0);
        cuMemFree_v2(a);
        ctx_of(1);
        cuMemFree_v2(b);
        report("main");
        return 0;
    }
    if (!strcmp(mode, "oom")) {
        ctx_of(0);
        CUdeviceptr p = 0;
        CUresult r = cuMemAlloc_v2(&p, (size_t)1 << 50);
        printf("huge allocation: %d\n", (int)r);
        stay(ms);
        report("main");
        return 7;
    }
    if (!strcmp(mode, "fork") || !strcmp(mode, "forkafter")) {
        int after = !strcmp(mode, "forkafter");
        if (after) {
            alloc_on(0, 16 << 20);
            stay_sampled(ms, 1);
        }
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0)
            return 1;
        if (pid == 0) {
            alloc_on(after ? 1 : 0, 8 << 20);
            /* the child of a sampling parent has no periodic samples to wait for */
            if (after)
                stay(ms);
            else
                stay_sampled(ms, 1);
            report("child");
            fflush(stdout);
            exit(0);
        }
        int st = 0;
        if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
            return 1;
        if (!after) {
            alloc_on(0, 16 << 20);
            stay_sampled(ms, 1);
        }
        report("parent");
        return 0;
    }
    return 2;
}
