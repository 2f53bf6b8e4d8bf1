// hang.cu: on a real GPU, a process that hangs inside NCCL: rank 0 of a 2-rank communicator whose rank 1 never comes, so ncclCommInitRank waits for good. The validation kills it and reads the trace it left.
//
// Build on the GPU machine: nvcc -o hang hang.cu -I$NCCL/include -L$NCCL/lib -lnccl
// (NCCL from PyTorch's wheel). Prints "WAITING" just before the call that never returns.
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <stdio.h>

int main(void)
{
    void *p = NULL;
    if (cudaMalloc(&p, 16u << 20))
        return 1;
    ncclUniqueId id;
    if (ncclGetUniqueId(&id))
        return 1;
    ncclComm_t comm;
    printf("WAITING\n");
    fflush(stdout);
    ncclResult_t r = ncclCommInitRank(&comm, 2, id, 0); /* rank 1 never joins */
    printf("returned %d\n", (int)r);
    return 0;
}
