/* free_race.c: a free whose memory another thread's allocation takes while the free is still inside the driver. */

/* Usage: free_race driver|runtime
 * Allocates 1 MiB, then frees it on a second thread through cuMemFree_v2 (driver, by the
 * PLT) or cudaFree (runtime); the fake driver holds that free after releasing the memory
 * (fakecuda_hold_next_free), and meanwhile the main thread allocates 1 MiB again, which
 * gets the same address. Prints whether it did and every result, never an address. */
#include "fake_cuda.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTES (1u << 20)

static int runtime;
static unsigned long long first;
static int free_result = -1;

static int alloc(unsigned long long *out)
{
    if (runtime) {
        void *p = NULL;
        int r = cudaMalloc(&p, BYTES);
        *out = (unsigned long long)(uintptr_t)p;
        return r;
    }
    CUdeviceptr p = 0;
    int r = cuMemAlloc_v2(&p, BYTES);
    *out = p;
    return r;
}

static int release(unsigned long long p)
{
    return runtime ? (int)cudaFree((void *)(uintptr_t)p) : (int)cuMemFree_v2(p);
}

static void *freer(void *arg)
{
    (void)arg;
    free_result = release(first);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 2 || (strcmp(argv[1], "driver") && strcmp(argv[1], "runtime"))) {
        fprintf(stderr, "usage: free_race driver|runtime\n");
        return 2;
    }
    runtime = !strcmp(argv[1], "runtime");
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (runtime) {
        printf("cudaSetDevice=%d\n", (int)cudaSetDevice(0));
    } else {
        CUdevice dev;
        CUcontext ctx;
        printf("cuInit=%d\n", (int)cuInit(0));
        printf("cuDeviceGet=%d\n", (int)cuDeviceGet(&dev, 0));
        printf("cuDevicePrimaryCtxRetain=%d\n", (int)cuDevicePrimaryCtxRetain(&ctx, dev));
        printf("cuCtxSetCurrent=%d\n", (int)cuCtxSetCurrent(ctx));
    }
    printf("alloc=%d\n", alloc(&first));
    fakecuda_hold_next_free();
    pthread_t t;
    if (pthread_create(&t, NULL, freer, NULL))
        return 1;
    fakecuda_wait_free_held();
    unsigned long long again = 0;
    printf("alloc while the free is held=%d\n", alloc(&again));
    printf("same address=%d\n", again == first);
    fakecuda_release_free();
    pthread_join(t, NULL);
    printf("free=%d\n", free_result);
    printf("free again=%d\n", release(again));
    return 0;
}
