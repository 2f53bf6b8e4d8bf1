/* limits.c: the context's limits and the device's multiprocessor shape, read beside each cuMemGetInfo sample (DEVLIMITS), so the CLI can name the memory they hold. */
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "sampling.h"
#include "scope.h"
#include "writer_api.h"

/*
 * Why here and not per event: the driver grows the stack limit by itself when a kernel
 * needing more local memory is first launched, and nothing the program calls says so.
 * The limit can only be read, so it is read where device used is read: three
 * cuCtxGetLimit calls (tens of ns) beside a cuMemGetInfo of several microseconds, on the
 * sampling thread, whose context is the one the sample measured. The multiprocessor
 * shape never changes: asked once per device, kept here.
 */
static _Atomic uint64_t shape_of[GMT_SAMPLE_DEVICES]; /* sms << 32 | threads per SM; 0 not asked */

static uint64_t sm_shape(int device)
{
    if ((unsigned)device >= GMT_SAMPLE_DEVICES)
        return 0;
    uint64_t v = atomic_load_explicit(&shape_of[device], memory_order_relaxed);
    if (v)
        return v;
    uint32_t sms = 0, tps = 0;
    /* a device that does not answer is asked again at its next sample, and says 0 now */
    if (gmt_driver_sm_shape(device, &sms, &tps) != 0)
        return 0;
    v = (uint64_t)sms << 32 | tps;
    atomic_store_explicit(&shape_of[device], v, memory_order_relaxed);
    return v;
}

void gmt_limits_after_sample(uint32_t scope_id, int device, enum gmt_meminfo_phase phase)
{
    int e = gmt_lib_enter();
    uint64_t lim[3];
    /* another device's sample was taken in its primary context, pushed for the moment:
     * the current context's limits are not that device's */
    bool ok = gmt_driver_current_device() == device && gmt_driver_limits(lim) == 0;
    uint64_t shape = ok ? sm_shape(device) : 0;
    gmt_lib_leave(e);
    if (!ok)
        return;
    struct gmt_rec_devlimits r;
    memset(&r, 0, sizeof r);
    r.h = (struct gmt_rec){.type = GMT_REC_DEVLIMITS, .aux = (uint16_t)phase,
                           .size = gmt_rec_padded(sizeof r)};
    r.device = device;
    r.scope_id = scope_id;
    r.stack_bytes = lim[0];
    r.printf_fifo_bytes = lim[1];
    r.malloc_heap_bytes = lim[2];
    r.sm_count = (uint32_t)(shape >> 32);
    r.max_threads_per_sm = (uint32_t)shape;
    gmt_emit(&r, 0);
}
