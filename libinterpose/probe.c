/* probe.c: the cost probe's counters (see probe.h); empty unless built with -DGMT_COST_PROBE. */
#ifdef GMT_COST_PROBE
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>

#include "gmt.h"
#include "probe.h"

static _Atomic unsigned long long cycles[GMT_PROBE_SLOTS], counts[GMT_PROBE_SLOTS];
static unsigned long long tsc0, ns0;

static unsigned long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

__attribute__((constructor)) static void probe_start(void)
{
    tsc0 = __rdtsc();
    ns0 = mono_ns();
}

void gmt_probe_add(enum gmt_probe_slot slot, unsigned long long c)
{
    atomic_fetch_add_explicit(&cycles[slot], c, memory_order_relaxed);
    atomic_fetch_add_explicit(&counts[slot], 1, memory_order_relaxed);
}

/* One JSON line on stderr: per slot, the count and the mean ns (the TSC's rate measured
 * over the process's life against CLOCK_MONOTONIC). */
__attribute__((destructor)) static void probe_report(void)
{
    double ns_per_cycle = (double)(mono_ns() - ns0) / (double)(__rdtsc() - tsc0);
    static const char *name[GMT_PROBE_SLOTS] = { "alloc", "free", "stack", "walk", "python",
                                                 "intern", "native_frames", "python_frames" };
    unsigned long slow, decoded, gave_up;
    slow = atomic_load(&gmt_stack_slow_captures);
    gmt_unwind_counts(&decoded, &gave_up);
    fprintf(stderr, "{\"probe\": {");
    for (int i = 0; i < GMT_PROBE_SLOTS; i++) {
        unsigned long long n = atomic_load(&counts[i]);
        double mean = n ? (double)atomic_load(&cycles[i]) / (double)n : 0.0;
        if (i >= GMT_PROBE_NATIVE_FRAMES)
            fprintf(stderr, "\"%s\": {\"n\": %llu, \"mean\": %.1f}, ", name[i], n, mean);
        else
            fprintf(stderr, "\"%s\": {\"n\": %llu, \"ns\": %.1f}, ", name[i], n,
                    mean * ns_per_cycle);
    }
    fprintf(stderr, "\"slow_captures\": %lu, \"rules_decoded\": %lu, \"rules_gave_up\": %lu}}\n",
            slow, decoded, gave_up);
}
#else
typedef int gmt_probe_unused; /* a translation unit is not empty */
#endif
