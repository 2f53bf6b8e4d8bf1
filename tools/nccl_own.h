/* nccl_own.h: NCCL's own count of a communicator's device memory (ncclCommMemStats, NCCL 2.29 and later) beside the trace's. */
#ifndef GMT_NCCL_OWN_H
#define GMT_NCCL_OWN_H

#include <stdbool.h>
#include <stdint.h>

#include "nccl_model.h"
#include "trace.h"

/* One NCCL_MEMSTATS of a communicator and the trace's figure for the same moment. */
struct gmt_nccl_own_count {
    bool known;
    uint8_t phase;             /* enum gmt_memstats_phase */
    uint64_t time;
    uint64_t suspend, persist; /* bytes; GMT_MEMSTATS_UNKNOWN where NCCL did not say */
    uint64_t total;            /* NCCL's total (suspendable + persistent), GMT_MEMSTATS_UNKNOWN unknown */
    bool suspended;
    uint64_t trace;            /* what the trace attributed to the communicator then, bytes:
                                * at init its init's device allocations; at its end all of them */
    int64_t diff;              /* total - trace; 0 when total is unknown */
};

struct gmt_nccl_own {
    struct gmt_nccl_own_count init; /* when it became ready */
    struct gmt_nccl_own_count end;  /* the latest before its finalize, destroy or abort */
};

/* NCCL's own counts of communicator c of trace t: none known when its NCCL lacks
 * ncclCommMemStats (2.28 and older) or the trace predates NCCL_MEMSTATS (2.7). */
void gmt_nccl_own(const struct gmt_trace *t, const struct gmt_nccl_comm *c, struct gmt_nccl_own *o);

#endif
