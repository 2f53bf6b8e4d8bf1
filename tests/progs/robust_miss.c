/* robust_miss.c: lookups that fail (a hooked NCCL name and ncclGetVersion missing from the library) must not take the loader's locks again until something is loaded: calls made while another thread holds the loader's lock must all return. */
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "nccl_abi.h"

/* Weak: the library lacks it; bound to the tracer's export when that is preloaded. */
#pragma weak ncclCommRevoke

static atomic_int holding, done, timed_out;

/* Runs with the loader's lock held (dl_iterate_phdr takes it around the whole walk). */
static int hold(struct dl_phdr_info *info, size_t size, void *arg)
{
    atomic_store(&holding, 1);
    for (int i = 0; i < 2000 && !atomic_load(&done); i++) {
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (!atomic_load(&done))
        atomic_store(&timed_out, 1);
    return 1;
}

static void *holder(void *arg)
{
    dl_iterate_phdr(hold, NULL);
    return NULL;
}

static void calls(ncclComm_t comm, int n)
{
    for (int i = 0; i < n; i++) {
        if (ncclCommRevoke)
            ncclCommRevoke(comm, 0);
        ncclAllReduce(NULL, NULL, 1, ncclFloat32, ncclSum, comm, NULL);
    }
}

int main(void)
{
    ncclUniqueId id;
    ncclGetUniqueId(&id);
    ncclComm_t comm;
    if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess)
        return 2;
    calls(comm, 4); /* the first calls may look things up, capture stacks, sample */
    pthread_t t;
    pthread_create(&t, NULL, holder, NULL);
    while (!atomic_load(&holding))
        ;
    calls(comm, 1000);
    atomic_store(&done, 1);
    pthread_join(t, NULL);
    printf("%s\n", atomic_load(&timed_out) ? "blocked on the loader lock" : "free");
    return atomic_load(&timed_out) ? 3 : 0;
}
