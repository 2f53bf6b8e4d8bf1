/* fake_c10.h: the C interface of the simulated libc10.so and libc10_cuda.so (tests/fakes/fake_c10*.c), for test programs and ctypes. */
#ifndef FAKE_C10_H
#define FAKE_C10_H

#include <stddef.h>
#include <stdint.h>

/* libc10.so: what reached its own reportMemoryUsageToProfiler and
 * reportOutOfMemoryToProfiler (the profiler's side of the report). */
struct fake_c10_profiler {
    uint64_t events;           /* block reports received */
    uint64_t allocs, frees;    /* of them, +size and -size */
    int64_t bytes;             /* sum of the sizes reported */
    uint64_t last_allocated, last_reserved;
    uint64_t ooms;
    uint64_t cuda_events;      /* of events, those of device type CUDA */
};
void fake_c10_profiler_stats(struct fake_c10_profiler *out);
uint64_t fake_c10_profiler_events(void);

/* libc10_cuda.so: the caching allocator on the runtime's current device. NULL: out of
 * memory, after reportOutOfMemoryToProfiler. */
void *fake_c10_cuda_malloc(size_t bytes);
void fake_c10_cuda_free(void *p);
void fake_c10_cuda_empty_cache(void);
/* The allocator's own totals (memory_allocated, memory_reserved), and its counts of
 * block allocations and frees (allocation.all.allocated / freed). */
uint64_t fake_c10_cuda_allocated(void);
uint64_t fake_c10_cuda_reserved(void);
uint64_t fake_c10_cuda_count_allocs(void);
uint64_t fake_c10_cuda_count_frees(void);
/* A CPU allocation that reports as PyTorch's CPU allocator does (device type CPU). */
void *fake_c10_cpu_malloc(size_t bytes);
void fake_c10_cpu_free(void *p, size_t bytes);

#endif
