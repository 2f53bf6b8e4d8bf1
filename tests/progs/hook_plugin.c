/* hook_plugin.c: a plugin linked with the fake NCCL and runtime, loaded with RTLD_LOCAL the way Python loads PyTorch. */
#include "fake_cuda.h"
#include "fake_nccl.h"

#include <dlfcn.h>
#include <stdio.h>

#define EXPORT __attribute__((visibility("default")))

/* Allocates through the PLT, and looks a runtime name up with RTLD_DEFAULT: glibc
 * searches this library's local scope too, where the runtime is. Prints its results. */
EXPORT int hook_plugin_run(void)
{
    void *p = NULL;
    cudaError_t r = cudaMalloc(&p, 5u << 20);
    printf("plugin cudaMalloc r=%d\n", (int)r);
    if (r == cudaSuccess)
        printf("plugin cudaFree r=%d\n", (int)cudaFree(p));
    void *local = dlsym(RTLD_DEFAULT, "cudaStreamCreate");
    printf("plugin RTLD_DEFAULT cudaStreamCreate %s\n", local ? "found" : "missing");
    void *hooked = dlsym(RTLD_DEFAULT, "cudaMalloc");
    printf("plugin RTLD_DEFAULT cudaMalloc %s\n", hooked ? "found" : "missing");
    if (hooked) {
        r = ((cudaError_t(*)(void **, size_t))hooked)(&p, 6u << 20);
        printf("plugin cudaMalloc via RTLD_DEFAULT r=%d\n", (int)r);
        if (r == cudaSuccess)
            cudaFree(p);
    }
    /* NCCL reaches the driver through the runtime's entry-point API: its own
     * allocations must be traced and the communicators must work. */
    ncclComm_t comms[2];
    int devs[2] = { 0, 1 };
    ncclResult_t nr = ncclCommInitAll(comms, 2, devs);
    printf("plugin ncclCommInitAll r=%d\n", (int)nr);
    if (nr == ncclSuccess)
        for (int i = 0; i < 2; i++)
            printf("plugin ncclCommDestroy r=%d\n", (int)ncclCommDestroy(comms[i]));
    return 0;
}
