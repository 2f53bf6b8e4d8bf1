/* robust_group.c: communicators created inside a group into slots that are gone by ncclGroupEnd (unmapped memory): the tracer must not read them then. */
#include <stdio.h>
#include <sys/mman.h>

#include "fake_cuda.h"
#include "fake_nccl.h"

int main(void)
{
    cudaSetDevice(0);
    ncclComm_t comms[2];
    ncclGroupStart();
    for (int i = 0; i < 2; i++) {
        /* A slot that dies before the group ends, like a loop-local variable. */
        ncclComm_t *slot = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (slot == MAP_FAILED)
            return 2;
        ncclUniqueId id;
        ncclGetUniqueId(&id);
        ncclCommInitRank(slot, 1, id, 0);
        comms[i] = *slot;
        munmap(slot, 4096);
    }
    int r = ncclGroupEnd();
    printf("groupend=%d comms %p %p\n", r, (void *)comms[0], (void *)comms[1]);
    return r;
}
