/* driver.c: the CUDA driver functions the library calls itself (the current device, a device's free memory, stream capture, graph memory), resolved once found. */
#include <stdatomic.h>
#include <stddef.h>

#include "driver.h"
#include "resolve.h"

_Atomic(void *) gmt_driver_slots[GMT_DRIVER_NCALLS];
static const char *const names[GMT_DRIVER_NCALLS] = {
#define GMT_X(name) [GMT_DRIVER_##name] = #name,
    GMT_DRIVER_CALLS(GMT_X)
#undef GMT_X
};

void *gmt_driver_resolve(enum gmt_driver_call c)
{
    return gmt_resolve_cached(&gmt_driver_slots[c], GMT_LIB_DRIVER, names[c]);
}
int gmt_driver_current_device(void)
{
    gmt_fn_cuCtxGetCurrent *get = GMT_DRIVER(cuCtxGetCurrent);
    gmt_fn_cuCtxGetDevice *dev = GMT_DRIVER(cuCtxGetDevice);
    CUcontext cur = NULL;
    CUdevice d = -1;
    if (!get || !dev || get(&cur) != 0 || !cur || dev(&d) != 0)
        return -1;
    return d;
}

int gmt_driver_meminfo(int device, uint64_t *free_b, uint64_t *total_b)
{
    gmt_fn_cuMemGetInfo_v2 *info = GMT_DRIVER(cuMemGetInfo_v2);
    if (!info)
        return -1;
    size_t f = 0, t = 0;
    if (gmt_driver_current_device() == device) {
        if (info(&f, &t) != 0)
            return -1;
        *free_b = f;
        *total_b = t;
        return 0;
    }
    gmt_fn_cuDeviceGet *dget = GMT_DRIVER(cuDeviceGet);
    gmt_fn_cuDevicePrimaryCtxGetState *state = GMT_DRIVER(cuDevicePrimaryCtxGetState);
    gmt_fn_cuDevicePrimaryCtxRetain *retain = GMT_DRIVER(cuDevicePrimaryCtxRetain);
    gmt_fn_cuDevicePrimaryCtxRelease_v2 *release = GMT_DRIVER(cuDevicePrimaryCtxRelease_v2);
    gmt_fn_cuCtxPushCurrent_v2 *push = GMT_DRIVER(cuCtxPushCurrent_v2);
    gmt_fn_cuCtxPopCurrent_v2 *pop = GMT_DRIVER(cuCtxPopCurrent_v2);
    if (!dget || !state || !retain || !release || !push || !pop)
        return -1;
    CUdevice dev;
    unsigned flags = 0;
    int active = 0;
    if (dget(&dev, device) != 0 || state(dev, &flags, &active) != 0 || !active)
        return -1;
    CUcontext ctx = NULL, popped = NULL;
    if (retain(&ctx, dev) != 0)
        return -1;
    int rc = -1;
    if (push(ctx) == 0) {
        if (info(&f, &t) == 0)
            rc = 0;
        pop(&popped);
    }
    release(dev);
    *free_b = f;
    *total_b = t;
    return rc;
}

int gmt_driver_capturing(uint64_t stream, uint64_t *graph)
{
    gmt_fn_cuStreamIsCapturing *is = GMT_DRIVER(cuStreamIsCapturing);
    /* The legacy stream never captures: a 0 that can be capturing is the thread's
     * per-thread default stream (the _ptsz calls'). */
    CUstream s = stream ? (CUstream)(uintptr_t)stream : CU_STREAM_PER_THREAD;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    *graph = 0;
    if (!is || is(s, &st) != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_ACTIVE)
        return 0;
    gmt_fn_cuStreamGetCaptureInfo_v3 *info = GMT_DRIVER(cuStreamGetCaptureInfo_v3);
    CUgraph g = NULL;
    cuuint64_t id = 0;
    if (info && info(s, &st, &id, &g, NULL, NULL, NULL) == CUDA_SUCCESS)
        *graph = (uint64_t)(uintptr_t)g;
    return 1;
}

int gmt_driver_graph_mem(int device, uint64_t out[4])
{
    gmt_fn_cuDeviceGetGraphMemAttribute *get = GMT_DRIVER(cuDeviceGetGraphMemAttribute);
    if (!get || device < 0)
        return -1;
    static const CUgraphMem_attribute attrs[4] = {
        CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
        CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH};
    for (int i = 0; i < 4; i++) {
        cuuint64_t v = 0;
        if (get(device, attrs[i], &v) != CUDA_SUCCESS)
            return -1;
        out[i] = v;
    }
    return 0;
}

/* CU_STREAM_CAPTURE_MODE_RELAXED: the calling thread may make calls that a capture in
 * global mode (on any stream) would otherwise refuse and be invalidated by. */
#define CAPTURE_MODE_RELAXED 2

int gmt_driver_meminfo_here(int device, uint64_t *free_b, uint64_t *total_b)
{
    gmt_fn_cuMemGetInfo_v2 *info = GMT_DRIVER(cuMemGetInfo_v2);
    if (!info || device < 0 || gmt_driver_current_device() != device)
        return -1;
    gmt_fn_cuThreadExchangeStreamCaptureMode *xchg = GMT_DRIVER(cuThreadExchangeStreamCaptureMode);
    int mode = CAPTURE_MODE_RELAXED;
    bool swapped = xchg && xchg(&mode) == 0;
    size_t f = 0, t = 0;
    int rc = info(&f, &t) == 0 ? 0 : -1;
    if (swapped)
        xchg(&mode); /* the thread's own mode back */
    *free_b = f;
    *total_b = t;
    return rc;
}

int gmt_driver_pci_bus_id(int device, char *buf, int len)
{
    gmt_fn_cuDeviceGet *dget = GMT_DRIVER(cuDeviceGet);
    gmt_fn_cuDeviceGetPCIBusId *bus = GMT_DRIVER(cuDeviceGetPCIBusId);
    CUdevice dev;
    if (!dget || !bus || len < 2 || dget(&dev, device) != 0 || bus(buf, len, dev) != 0)
        return -1;
    buf[len - 1] = 0;
    return buf[0] ? 0 : -1;
}

int gmt_driver_limits(uint64_t out[3])
{
    gmt_fn_cuCtxGetLimit *get = GMT_DRIVER(cuCtxGetLimit);
    static const CUlimit which[3] = {CU_LIMIT_STACK_SIZE, CU_LIMIT_PRINTF_FIFO_SIZE,
                                     CU_LIMIT_MALLOC_HEAP_SIZE};
    if (!get)
        return -1;
    for (int i = 0; i < 3; i++) {
        size_t v = 0;
        out[i] = get(&v, which[i]) == CUDA_SUCCESS ? (uint64_t)v : GMT_LIMIT_UNKNOWN;
    }
    return 0;
}

int gmt_driver_sm_shape(int device, uint32_t *sms, uint32_t *threads_per_sm)
{
    gmt_fn_cuDeviceGet *dget = GMT_DRIVER(cuDeviceGet);
    gmt_fn_cuDeviceGetAttribute *attr = GMT_DRIVER(cuDeviceGetAttribute);
    CUdevice dev;
    int a = 0, b = 0;
    if (!dget || !attr || dget(&dev, device) != 0 ||
        attr(&a, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev) != 0 ||
        attr(&b, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, dev) != 0 || a <= 0 || b <= 0)
        return -1;
    *sms = (uint32_t)a;
    *threads_per_sm = (uint32_t)b;
    return 0;
}
