/* driver.h: the CUDA driver functions the library calls itself, one table for every caller (driver.c). */
#ifndef GMT_DRIVER_H
#define GMT_DRIVER_H

#include <stdatomic.h>

#include "cuda_abi.h"
#include "gmt.h"

/* The one table of them, typed by cuda_abi.h's gmt_fn_<name>. A slot holds the real
 * function once gmt_resolve found it; a NULL answer (no driver loaded yet) is asked
 * again at the next call (gmt_resolve keeps a miss until the next dlopen or dlclose). */
#define GMT_DRIVER_CALLS(X)                                                                  \
    X(cuCtxGetCurrent)                                                                       \
    X(cuCtxGetDevice)                                                                        \
    X(cuMemGetInfo_v2)                                                                       \
    X(cuDeviceGet)                                                                           \
    X(cuDevicePrimaryCtxGetState)                                                            \
    X(cuDevicePrimaryCtxRetain)                                                              \
    X(cuDevicePrimaryCtxRelease_v2)                                                          \
    X(cuCtxPushCurrent_v2)                                                                   \
    X(cuCtxPopCurrent_v2)                                                                    \
    X(cuStreamIsCapturing)                                                                   \
    X(cuStreamGetCaptureInfo_v3)                                                             \
    X(cuDeviceGetGraphMemAttribute)                                                          \
    X(cuDeviceGetPCIBusId)                                                                   \
    X(cuThreadExchangeStreamCaptureMode)                                                     \
    X(cuCtxGetLimit)                                                                         \
    X(cuDeviceGetAttribute)

enum gmt_driver_call {
#define GMT_X(name) GMT_DRIVER_##name,
    GMT_DRIVER_CALLS(GMT_X)
#undef GMT_X
    GMT_DRIVER_NCALLS
};
GMT_HIDDEN extern _Atomic(void *) gmt_driver_slots[GMT_DRIVER_NCALLS];
GMT_HIDDEN void *gmt_driver_resolve(enum gmt_driver_call c);
/* The real function once found: one load for an allocation's context query. */
static inline void *gmt_driver_fn(enum gmt_driver_call c)
{
    void *p = atomic_load_explicit(&gmt_driver_slots[c], memory_order_acquire);
    return GMT_LIKELY(p != NULL) ? p : gmt_driver_resolve(c);
}
#define GMT_DRIVER(name) ((gmt_fn_##name *)gmt_driver_fn(GMT_DRIVER_##name))

/* ---- driver.c: the queries built on them ---- */
/* The device of the calling thread's current context, -1 when none or no driver. */
GMT_HIDDEN int gmt_driver_current_device(void);
/* 0 and `device`'s free and total bytes, or -1: nothing was sampled (no driver, no
 * context on that device). Never creates a context: another device's primary context is
 * used only if active, and the caller's current context is left as it was. */
GMT_HIDDEN int gmt_driver_meminfo(int device, uint64_t *free_b, uint64_t *total_b);
/* 1 when `stream` (0: the thread's per-thread default stream) is capturing, with the
 * graph being captured in *graph (0 when the driver can't say); 0 otherwise. */
GMT_HIDDEN int gmt_driver_capturing(uint64_t stream, uint64_t *graph);
/* 0 and `device`'s four graph-memory figures (cuDeviceGetGraphMemAttribute: used
 * current, used high, reserved current, reserved high, bytes), or -1. */
GMT_HIDDEN int gmt_driver_graph_mem(int device, uint64_t out[4]);
/* The same for the calling thread's current device only (-1 when `device` is not it),
 * asked in relaxed stream-capture mode: the allocating thread's samples. */
GMT_HIDDEN int gmt_driver_meminfo_here(int device, uint64_t *free_b, uint64_t *total_b);
/* 0 and `device`'s PCI bus id ("0000:65:00.0") in buf, or -1. Needs no context. */
GMT_HIDDEN int gmt_driver_pci_bus_id(int device, char *buf, int len);
/* 0 and the current context's stack, printf FIFO and malloc heap limits (bytes, each
 * GMT_LIMIT_UNKNOWN where the driver did not answer), or -1: no driver. */
GMT_HIDDEN int gmt_driver_limits(uint64_t out[3]);
/* 0 and `device`'s multiprocessor count and resident threads per multiprocessor, or -1. */
GMT_HIDDEN int gmt_driver_sm_shape(int device, uint32_t *sms, uint32_t *threads_per_sm);

#endif
