/* hook_scope.c: dlsym relative to its caller (RTLD_NEXT from a third library, RTLD_DEFAULT from an RTLD_LOCAL plugin) and a traced RTLD_LOCAL plugin. */

/* Usage: hook_scope DIR. Prints what each lookup found; the test runs it with and
 * without the tracer and compares. libhook_next_a and libhook_next_b are linked in that
 * order, then libcuda; the plugin DIR/libhook_plugin.so is dlopened RTLD_LOCAL. */
#include "fake_cuda.h"

#include <dlfcn.h>
#include <stdio.h>

int hook_probe(void);
int hook_next_probe(void);
void *hook_next_lookup(const char *name);

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("hook_probe=%d next=%d\n", hook_probe(), hook_next_probe());
    printf("RTLD_NEXT missing name %s\n", hook_next_lookup("hook_no_such_name") ? "found" : "missing");
    printf("dlerror after a miss %s\n", dlerror() ? "set" : "clear");

    /* A hooked name after libhook_next_a: libcuda's. Called once: one allocation. */
    CUresult (*alloc)(CUdeviceptr *, size_t) =
        (CUresult(*)(CUdeviceptr *, size_t))hook_next_lookup("cuMemAlloc_v2");
    printf("RTLD_NEXT cuMemAlloc_v2 %s\n", alloc ? "found" : "missing");
    CUdevice dev;
    CUcontext ctx;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx))
        return 3;
    CUdeviceptr p;
    if (alloc) {
        CUresult r = alloc(&p, 11u << 20);
        printf("cuMemAlloc_v2 via RTLD_NEXT r=%d\n", (int)r);
        if (r == CUDA_SUCCESS)
            cuMemFree_v2(p);
    }

    char path[4096];
    snprintf(path, sizeof path, "%s/libhook_plugin.so", argv[1]);
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlopen plugin failed: %s\n", dlerror());
        return 4;
    }
    printf("global scope cudaStreamCreate %s\n", dlsym(RTLD_DEFAULT, "cudaStreamCreate") ? "visible" : "hidden");
    int (*run)(void) = (int (*)(void))dlsym(h, "hook_plugin_run");
    if (!run)
        return 5;
    run();
    printf("hook_scope: done\n");
    return 0;
}
