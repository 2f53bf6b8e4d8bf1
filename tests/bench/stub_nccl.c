/* stub_nccl.c: a libnccl.so.2 whose calls return at once, so nccl_bench sees the cost of the tracer's NCCL wrapper alone; with STUB_PROFILER, also the profiler plugin's events per call. */
#include <stddef.h>
#include <stdint.h>

#include "fake_nccl.h"

#ifdef STUB_PROFILER
/* NCCL 2.28's profiler plugin interface (tests/fakes/fake_nccl_profiler.c): loaded at the
 * communicator's init; per ncclAllReduce the events real NCCL makes for a bare call, as
 * on 2 ranks and 24 channels (the H200 hosts'). */
#include "fake_nccl_profiler.h"
static struct fakeprof prof;
#define PROF_INIT(id) fakeprof_init(&prof, &(id), sizeof(id), 1, 2, 0)
#define PROF_LAUNCH(s, r, count, t) fakeprof_launch(&prof, "AllReduce", 2, 0, 24, 24, s, r, count, t, 0)
#else
#define PROF_INIT(id) (void)(id)
#define PROF_LAUNCH(s, r, count, t) (void)0
#endif

#define EXPORT __attribute__((visibility("default")))

EXPORT ncclResult_t ncclGetVersion(int *v) { *v = 22809; return ncclSuccess; }
/* Communicators are 0x5000 + 0x1000 * device: stable non-null values the stub never reads. */
EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t c, int *d) { *d = (int)(((uintptr_t)c - 0x5000) / 0x1000); return ncclSuccess; }
EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t c, int *r) { (void)c; *r = 0; return ncclSuccess; }
EXPORT ncclResult_t ncclCommCount(const ncclComm_t c, int *n) { (void)c; *n = 2; return ncclSuccess; }
EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    for (size_t i = 0; i < sizeof id->internal; i++)
        id->internal[i] = (char)i;
    return ncclSuccess;
}
EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    (void)nranks; (void)rank;
    PROF_INIT(id);
    *comm = (ncclComm_t)(uintptr_t)0x5000;
    return ncclSuccess;
}
/* One process, ndev devices, as tests/gpu/bench_allreduce.c makes them. */
EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    for (int i = 0; i < ndev; i++)
        comms[i] = (ncclComm_t)(uintptr_t)(0x5000 + 0x1000 * (devlist ? devlist[i] : i));
    return ncclSuccess;
}
EXPORT ncclResult_t ncclGroupStart(void) { return ncclSuccess; }
EXPORT ncclResult_t ncclGroupEnd(void) { return ncclSuccess; }
EXPORT ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t t,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    (void)s; (void)r; (void)count; (void)t; (void)op; (void)comm; (void)stream;
    PROF_LAUNCH(s, r, count, t);
    return ncclSuccess;
}
