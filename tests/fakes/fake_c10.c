/* fake_c10.c: a simulated libc10.so: PyTorch's two profiler report functions, under their mangled names, counting what reaches them as the profiler would. */
/*
 * Stands for: libc10.so defines c10::reportMemoryUsageToProfiler(void *, int64_t, size_t,
 * size_t, c10::Device) and c10::reportOutOfMemoryToProfiler(int64_t, size_t, size_t,
 * c10::Device), exported with default visibility; libc10_cuda.so imports both and calls
 * them through its PLT. c10::Device is {int8 type; int8 index}, passed by value in one
 * register; CUDA is 1. The real ones hand the report to the active profiler (if any); this
 * one counts, so a test can see that a preloaded definition still forwards.
 */
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>

#include "fake_c10.h"

#define EXPORT __attribute__((visibility("default")))

struct c10_device {
    int8_t type;
    int8_t index;
};

EXPORT void fake_c10_report(void *ptr, int64_t size, size_t allocated, size_t reserved,
                            struct c10_device device)
    __asm__("_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE");
EXPORT void fake_c10_report_oom(int64_t size, size_t allocated, size_t reserved,
                                struct c10_device device)
    __asm__("_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE");

static _Atomic uint64_t events, allocs, frees, ooms, cuda_events, last_allocated, last_reserved;
static _Atomic int64_t bytes;

void fake_c10_report(void *ptr, int64_t size, size_t allocated, size_t reserved,
                     struct c10_device device)
{
    (void)ptr;
    atomic_fetch_add(&events, 1);
    atomic_fetch_add(size >= 0 ? &allocs : &frees, 1);
    atomic_fetch_add(&bytes, size);
    if (device.type == 1) {
        atomic_fetch_add(&cuda_events, 1);
        atomic_store(&last_allocated, allocated);
        atomic_store(&last_reserved, reserved);
    }
}

void fake_c10_report_oom(int64_t size, size_t allocated, size_t reserved,
                         struct c10_device device)
{
    (void)size;
    (void)device;
    atomic_fetch_add(&ooms, 1);
    atomic_store(&last_allocated, allocated);
    atomic_store(&last_reserved, reserved);
}

EXPORT void fake_c10_profiler_stats(struct fake_c10_profiler *out)
{
    memset(out, 0, sizeof *out);
    out->events = atomic_load(&events);
    out->allocs = atomic_load(&allocs);
    out->frees = atomic_load(&frees);
    out->bytes = atomic_load(&bytes);
    out->last_allocated = atomic_load(&last_allocated);
    out->last_reserved = atomic_load(&last_reserved);
    out->ooms = atomic_load(&ooms);
    out->cuda_events = atomic_load(&cuda_events);
}

/* The same count alone, for ctypes. */
EXPORT uint64_t fake_c10_profiler_events(void)
{
    return atomic_load(&events);
}
