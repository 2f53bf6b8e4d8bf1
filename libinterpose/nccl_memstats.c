/* nccl_memstats.c: NCCL's own count of each communicator's device memory (ncclCommMemStats, NCCL 2.29 and later), asked when a communicator is ready and right before it goes away. */
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "nccl_memstats.h"
#include "resolve.h"
#include "writer_api.h"

/*
 * ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value),
 * stat 0..3: ncclStatGpuMemSuspend, ncclStatGpuMemSuspended, ncclStatGpuMemPersist,
 * ncclStatGpuMemTotal. NCCL 2.28 has no such function: it is looked up by name in the
 * NCCL the process loaded (gmt_resolve, which keeps a miss until the next dlopen), never
 * bound through the PLT, and a process whose NCCL lacks it simply has no NCCL_MEMSTATS.
 * A communicator still initializing in the background (non-blocking) or in error is not
 * asked: ncclCommGetAsyncError must say ncclSuccess first, as NCCL requires of every
 * query. Only at a communicator's init and end, never per collective.
 */
typedef int (*memstats_fn)(void *comm, int stat, uint64_t *value);
typedef int (*async_error_fn)(void *comm, int *state);
#define NSTATS 4

void gmt_nccl_memstats(uint64_t comm, enum gmt_memstats_phase phase, int device)
{
    if (!comm || !gmt_writer_ready())
        return;
    int e = gmt_lib_enter();
    memstats_fn stats = GMT_REAL(GMT_LIB_NCCL, memstats_fn, ncclCommMemStats);
    async_error_fn async = stats ? GMT_REAL(GMT_LIB_NCCL, async_error_fn, ncclCommGetAsyncError) : NULL;
    int state = -1;
    bool ready = async && async((void *)(uintptr_t)comm, &state) == 0 && state == 0;
    uint64_t v[NSTATS];
    for (int i = 0; i < NSTATS; i++) {
        v[i] = GMT_MEMSTATS_UNKNOWN;
        uint64_t x = 0;
        if (ready && stats((void *)(uintptr_t)comm, i, &x) == 0)
            v[i] = x;
    }
    gmt_lib_leave(e);
    if (!ready)
        return;
    struct gmt_rec_nccl_memstats r = {
        .h = {.type = GMT_REC_NCCL_MEMSTATS, .aux = (uint16_t)phase, .size = sizeof r},
        .time_ns = gmt_now_ns(),
        .comm = comm,
        .suspend_bytes = v[0],
        .suspended = v[1],
        .persist_bytes = v[2],
        .total_bytes = v[3],
        .scope_id = gmt_current_scope(),
        .device = device,
    };
    gmt_emit(&r, 0);
}
_Static_assert(sizeof(struct gmt_rec_nccl_memstats) % GMT_ALIGN == 0, "NCCL_MEMSTATS needs no padding");
