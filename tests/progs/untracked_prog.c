/* untracked_prog.c: one-GPU programs whose untracked memory the tests name: a context only, NCCL with a send/receive kernel that grows the stack, the stack set by hand, explicit module loads; and one of two GPUs whose limits differ. */

/* Usage: untracked_prog ctx | nccl | stack BYTES | stackback BYTES | launch LOCAL_BYTES |
 *                       two BYTES | fifo BYTES | heap BYTES | heap_use BYTES
 *   ctx     cudaSetDevice(0), one 16 MiB cudaMalloc kept to the end: context and limits only
 *   nccl    the same, then ncclCommInitAll on device 0, a 1 Mi-float ncclAllReduce, a
 *           grouped ncclSend + ncclRecv to itself (its kernel grows the stack limit), and
 *           a second all_reduce of another size; ncclCommDestroy
 *   stack   the same as nccl up to the first all_reduce, then cuCtxSetLimit(STACK, BYTES)
 *           by hand and a second all_reduce of another size (sampled: a first call)
 *   stackback  the stack limit set to BYTES right after ncclCommInitAll, so the first
 *           all_reduce's closing sample is the largest; then back to 1024 and the second
 *           all_reduce: the samples after the largest have the first sample's limits
 *   launch  a kernel needing LOCAL_BYTES of local memory per thread, launched once
 *           (no NCCL), then one all_reduce so that a sample follows
 *   fifo    the printf FIFO set to BYTES, then a kernel calling printf launched once, then
 *           one all_reduce so that a sample follows
 *   heap    the malloc heap set to BYTES and no kernel calling malloc, then one all_reduce
 *   heap_use  the same, then a kernel calling malloc launched once
 *   modules a 4 MiB cuModuleLoadData before the first allocation, then after it every load
 *           call once: cuModuleLoad of a file (6 MiB), cuModuleLoadDataEx looked up with
 *           cuGetProcAddress (8 MiB), cuModuleLoadFatBinary looked up with dlsym (10 MiB),
 *           cuLibraryLoadData (12 MiB), cuLibraryLoadFromFile (6 MiB) then cuLibraryUnload,
 *           cuModuleLoadData (3 MiB) then cuModuleUnload: 40 MiB stay loaded; then
 *           ncclCommInitAll and one all_reduce, so that a sample follows
 *   two     (FAKECUDA_DEVICES=2) the 16 MiB on device 0, then device 1's stack limit set
 *           to BYTES and 16 MiB there; device 0 current again, ncclCommInitAll over both
 *           and an all_reduce on each in a group: device 1's calls are sampled from
 *           device 0's thread, in device 1's context pushed for the moment
 * UNTRACKED_LINGER_MS=N: wait N ms before exiting (the tracer's NVML samples).
 * Prints "untracked_prog: ok stack=S" (the stack limit at the end) and exits 0. */
#include "fake_nccl.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CK(call)                                                                              \
    do {                                                                                      \
        long e_ = (long)(call);                                                               \
        if (e_ != 0) {                                                                        \
            fprintf(stderr, "untracked_prog: %s failed: %ld\n", #call, e_);                   \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

#define COUNT (1u << 20)

static void all_reduce(ncclComm_t c, float *buf, size_t n)
{
    CK(ncclAllReduce(buf, buf, n, ncclFloat, ncclSum, c, NULL));
}

#define MIB_ (1ull << 20)

static struct fakecuda_image image(unsigned long long mib)
{
    return (struct fakecuda_image){FAKECUDA_IMAGE_MAGIC, mib * MIB_, 0, 0};
}

/* A file holding an image of `mib` MiB, as a .cubin on disk. */
static void image_file(char *path, size_t len, unsigned long long mib)
{
    snprintf(path, len, "/tmp/untracked_prog.%d.cubin", (int)getpid());
    struct fakecuda_image img = image(mib);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(&img, sizeof img, 1, f) != 1 || fclose(f) != 0) {
        fprintf(stderr, "untracked_prog: cannot write %s\n", path);
        exit(1);
    }
}

/* Every load call once, through the PLT, cuGetProcAddress and dlsym. */
static void load_modules(void)
{
    CUmodule m;
    CUlibrary l;
    char path[64];
    image_file(path, sizeof path, 6);
    CK(cuModuleLoad(&m, path));
    struct fakecuda_image i8 = image(8), i10 = image(10), i12 = image(12), i3 = image(3);
    CUresult (*ex)(CUmodule *, const void *, unsigned, CUjit_option *, void **) = NULL;
    CK(cuGetProcAddress_v2("cuModuleLoadDataEx", (void **)&ex, 12000, 0, NULL));
    CK(ex(&m, &i8, 0, NULL, NULL));
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    CUresult (*fat)(CUmodule *, const void *) = h ? (CUresult(*)(CUmodule *, const void *))dlsym(h, "cuModuleLoadFatBinary") : NULL;
    if (!fat) {
        fprintf(stderr, "untracked_prog: no cuModuleLoadFatBinary by dlsym\n");
        exit(1);
    }
    CK(fat(&m, &i10));
    CK(cuLibraryLoadData(&l, &i12, NULL, NULL, 0, NULL, NULL, 0));
    image_file(path, sizeof path, 6);
    CK(cuLibraryLoadFromFile(&l, path, NULL, NULL, 0, NULL, NULL, 0));
    CK(cuLibraryUnload(l));
    unlink(path);
    CK(cuModuleLoadData(&m, &i3));
    CK(cuModuleUnload(m));
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "ctx";
    unsigned long arg = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
    void *keep;
    CK(cudaSetDevice(0));
    if (!strcmp(mode, "modules")) { /* before the first allocation: not the context's */
        CUmodule m;
        struct fakecuda_image i4 = image(4);
        CK(cuModuleLoadData(&m, &i4));
    }
    CK(cudaMalloc(&keep, 16u << 20));
    if (!strcmp(mode, "two")) {
        float *buf[2];
        CK(cudaSetDevice(1));
        CK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, arg));
        CK(cudaMalloc(&keep, 16u << 20));
        CK(cudaMalloc((void **)&buf[1], COUNT * sizeof(float)));
        CK(cudaSetDevice(0));
        CK(cudaMalloc((void **)&buf[0], COUNT * sizeof(float)));
        ncclComm_t c[2];
        CK(ncclCommInitAll(c, 2, NULL));
        CK(ncclGroupStart());
        for (int d = 0; d < 2; d++)
            all_reduce(c[d], buf[d], COUNT);
        CK(ncclGroupEnd());
        for (int d = 0; d < 2; d++)
            CK(ncclCommDestroy(c[d]));
    } else if (strcmp(mode, "ctx") != 0) {
        float *buf, *rbuf;
        CK(cudaMalloc((void **)&buf, COUNT * sizeof(float)));
        CK(cudaMalloc((void **)&rbuf, COUNT * sizeof(float)));
        memset(buf, 0, COUNT * sizeof(float)); /* device memory is host-visible in the fake */
        if (!strcmp(mode, "modules"))
            load_modules();
        if (!strcmp(mode, "launch")) { /* before NCCL: the next samples are around its calls */
            struct fakecuda_image img = {FAKECUDA_IMAGE_MAGIC, 2u << 20, arg, 0};
            CUmodule m;
            CUfunction f;
            CK(cuModuleLoadData(&m, &img));
            CK(cuModuleGetFunction(&f, m, "needs_local"));
            CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
        }
        if (!strcmp(mode, "fifo") || !strcmp(mode, "heap") || !strcmp(mode, "heap_use")) {
            int fifo = !strcmp(mode, "fifo");
            CK(cuCtxSetLimit(fifo ? CU_LIMIT_PRINTF_FIFO_SIZE : CU_LIMIT_MALLOC_HEAP_SIZE, arg));
            if (strcmp(mode, "heap") != 0) { /* a kernel calling printf / malloc, once */
                struct fakecuda_image img = {FAKECUDA_IMAGE_MAGIC, 2u << 20, 0,
                                             fifo ? FAKECUDA_USES_PRINTF : FAKECUDA_USES_MALLOC};
                CUmodule m;
                CUfunction f;
                CK(cuModuleLoadData(&m, &img));
                CK(cuModuleGetFunction(&f, m, fifo ? "says" : "mallocs"));
                CK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
            }
        }
        ncclComm_t c;
        int dev0 = 0;
        CK(ncclCommInitAll(&c, 1, &dev0));
        if (!strcmp(mode, "stackback"))
            CK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, arg));
        all_reduce(c, buf, COUNT);
        if (!strcmp(mode, "nccl")) {
            CK(ncclGroupStart());
            CK(ncclSend(buf, COUNT, ncclFloat, 0, c, NULL));
            CK(ncclRecv(rbuf, COUNT, ncclFloat, 0, c, NULL));
            CK(ncclGroupEnd());
        } else if (!strcmp(mode, "stack")) {
            CK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, arg));
        } else if (!strcmp(mode, "stackback")) {
            CK(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 1024));
        }
        all_reduce(c, buf, COUNT / 2);
        CK(ncclCommDestroy(c));
    }
    /* UNTRACKED_LINGER_MS: stay that long, so that the tracer's own thread samples NVML
     * (its first sample loads NVML; only then is there an exit sample too) */
    const char *linger = getenv("UNTRACKED_LINGER_MS");
    if (linger)
        usleep((useconds_t)strtoul(linger, NULL, 10) * 1000u);
    size_t stack = 0;
    CK(cuCtxGetLimit(&stack, CU_LIMIT_STACK_SIZE));
    printf("untracked_prog: ok stack=%zu\n", stack);
    return 0;
}
