/* robust_nonblock.c: a non-blocking communicator (init returns ncclInProgress, polled until ready, then used): the tracer must not query it while it initializes, and must still describe it. */
#include <stdio.h>

#include "nccl_abi.h"

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err);

int main(void)
{
    ncclUniqueId id;
    ncclGetUniqueId(&id);
    ncclConfig_t cfg = {.size = sizeof cfg, .magic = GMT_NCCL_CONFIG_MAGIC, .version = 22800,
                        .blocking = 0};
    ncclComm_t comm = NULL;
    ncclResult_t r = ncclCommInitRankConfig(&comm, 4, id, 2, &cfg);
    printf("init=%d comm=%p\n", r, (void *)comm);
    ncclResult_t st = ncclInProgress;
    while (st == ncclInProgress)
        ncclCommGetAsyncError(comm, &st);
    r = ncclAllReduce(NULL, NULL, 1, ncclFloat32, ncclSum, comm, NULL);
    printf("allreduce=%d\n", r);
    r = ncclAllReduce(NULL, NULL, 1, ncclFloat32, ncclSum, comm, NULL);
    return r;
}
