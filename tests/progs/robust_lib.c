/* robust_lib.c: tiny stand-in libraries for test_robust, one per -D: a partial NCCL, a minimal driver, a runtime copy, a plugin that calls cudaMalloc, a filler. */
#include <stddef.h>
#include <stdio.h>

#define API __attribute__((visibility("default")))

#if defined(ROBUST_NCCL)
/* An NCCL that lacks ncclCommRevoke and ncclGetVersion (so lookups of those miss), and
 * whose non-blocking init, like the real one, completes only when polled: until then a
 * query of the communicator is a usage error that prints a WARN, as NCCL 2.28 does. */
#include <string.h>
#include "nccl_abi.h"
struct ncclComm {
    int ready;    /* 0 while the non-blocking init is in progress */
    int polls;
    int rank, nranks, device;
};
static struct ncclComm comms[8];
static int ncomms;

static ncclResult_t not_ready(const char *what)
{
    fprintf(stderr, "robust-nccl WARN %s: communicator is still initializing\n", what);
    return ncclInvalidUsage;
}
API ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    memset(id, 7, sizeof *id);
    return ncclSuccess;
}
API ncclResult_t ncclCommInitRankConfig(ncclComm_t *newcomm, int nranks, ncclUniqueId id, int rank,
                                        ncclConfig_t *config)
{
    if (ncomms == 8)
        return ncclSystemError;
    struct ncclComm *c = &comms[ncomms++];
    c->rank = rank;
    c->nranks = nranks;
    c->device = 1;
    int blocking = !config || config->blocking != 0;
    c->ready = blocking;
    *newcomm = c;
    return blocking ? ncclSuccess : ncclInProgress;
}
API ncclResult_t ncclCommInitRank(ncclComm_t *newcomm, int nranks, ncclUniqueId id, int rank)
{
    return ncclCommInitRankConfig(newcomm, nranks, id, rank, NULL);
}
API ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *err)
{
    if (!c->ready && ++c->polls >= 3)
        c->ready = 1;
    *err = c->ready ? ncclSuccess : ncclInProgress;
    return ncclSuccess;
}
API ncclResult_t ncclCommUserRank(const ncclComm_t c, int *rank)
{
    if (!c->ready)
        return not_ready("ncclCommUserRank");
    *rank = c->rank;
    return ncclSuccess;
}
API ncclResult_t ncclCommCount(const ncclComm_t c, int *count)
{
    if (!c->ready)
        return not_ready("ncclCommCount");
    *count = c->nranks;
    return ncclSuccess;
}
API ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *device)
{
    if (!c->ready)
        return not_ready("ncclCommCuDevice");
    *device = c->device;
    return ncclSuccess;
}
API ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, ncclDataType_t t, ncclRedOp_t op,
                               ncclComm_t c, cudaStream_t st)
{
    return c->ready ? ncclSuccess : ncclInProgress;
}

#elif defined(ROBUST_CUDA)
/* A driver with just what an allocation event asks for. */
API int cuInit(unsigned flags) { return 0; }
API int cuMemAlloc_v2(unsigned long long *p, size_t n) { *p = 0x100000; return 0; }
API int cuMemFree_v2(unsigned long long p) { return 0; }
API int cuCtxGetCurrent(void **c) { *c = (void *)0x10; return 0; }
API int cuCtxGetDevice(int *d) { *d = 0; return 0; }
API int cuDriverGetVersion(int *v) { *v = 13000; return 0; }

#elif defined(ROBUST_RT)
/* One copy of a runtime: says which one ran. */
API int cudaMalloc(void **p, size_t n)
{
    printf("cudaMalloc of %s\n", ROBUST_RT);
    *p = (void *)0x1000;
    return 0;
}
API int cudaRuntimeGetVersion(int *v) { *v = 12000; return 0; }

#elif defined(ROBUST_USER)
/* A plugin linked to one runtime copy, calling it through the PLT. */
int cudaMalloc(void **p, size_t n);
API int user_alloc(void)
{
    void *p;
    return cudaMalloc(&p, 64);
}

#elif defined(ROBUST_X)
/* Something to dlopen and dlclose. */
API int robust_x(void) { return ROBUST_X; }
#endif
