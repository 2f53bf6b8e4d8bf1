/* sampling.h: device memory samples outside NCCL calls (sampling.c), with the inline check of a device's first allocation. */
#ifndef GMT_SAMPLING_H
#define GMT_SAMPLING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gmt.h"

/* ---- sampling.c: device memory outside NCCL calls (MEMINFO FIRST, FAIL, PERIODIC, EXIT) ----
 * FIRST and FAIL are taken on the allocating thread with cuMemGetInfo (its context is
 * current there); PERIODIC by the flusher and EXIT at exit through NVML, which needs no
 * context: the library's own thread never calls CUDA. */
#define GMT_SAMPLE_DEVICES 64
GMT_HIDDEN extern _Atomic uint64_t gmt_sample_seen; /* bit d: device d had its first allocation */
GMT_HIDDEN void gmt_sample_first_slow(int device);
/* After a successful allocation of device memory on `device` (-1 unknown): the device's
 * first one gets a FIRST sample. One load when the device has had one already. */
static inline void gmt_sample_first(int device)
{
    if ((unsigned)device < GMT_SAMPLE_DEVICES &&
        GMT_UNLIKELY(!(atomic_load_explicit(&gmt_sample_seen, memory_order_acquire) &
                       (1ull << device))))
        gmt_sample_first_slow(device);
}
/* After an allocation on `device` failed: a FAIL sample, when the thread's context is on
 * that device. */
GMT_HIDDEN void gmt_sample_fail(int device);
/* The flusher, at each wake-up while the file is open: takes the periodic samples that are
 * due. Returns how long, in ns, until the next one is due (UINT64_MAX: none will be). */
GMT_HIDDEN uint64_t gmt_sampler_tick(uint64_t now_ns);
/* sampling.c: the process began to exit (its atexit ran): no more samples or queries. */
GMT_HIDDEN bool gmt_sampler_exiting(void);

/* ---- sampling.c: device memory around NCCL calls (the policy: scope.h's gmt_sample_wanted) ----
 * Counts a call of (comm, op, bytes) against the policy: 1 sample it, 0 not this one, -1
 * none of its key ever again (past the first N, with no every:K). Keys the table can't
 * hold are not sampled (0): sampling is a cost, never a correctness matter. */
GMT_HIDDEN int gmt_sample_count(uint64_t comm, unsigned op, uint64_t bytes);
/* Writes a MEMINFO record of `device` for scope `scope_id`, when the driver can say. */
GMT_HIDDEN void gmt_sample(uint32_t scope_id, int device, enum gmt_meminfo_phase phase);

/* ---- sampling.c: a device sample before and after an explicit module load ---- */
struct gmt_modload_mark {
    bool ok;                   /* the sample before was taken */
    int device;
    uint64_t free_b, total_b;  /* cuMemGetInfo before the load */
    uint64_t t0;               /* ns, CLOCK_MONOTONIC */
};
GMT_HIDDEN void gmt_modload_before(struct gmt_modload_mark *m);
/* The sample after it and the MODLOAD record; handle 0 when the load failed. */
GMT_HIDDEN void gmt_modload_after(const struct gmt_modload_mark *m, enum gmt_modload_api api, int result,
                                  uint64_t handle);

#endif
