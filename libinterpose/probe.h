/* probe.h: the cost probe, compiled in only with -DGMT_COST_PROBE (tests/gpu/alloc_cost.sh builds it): TSC cycles spent recording events and capturing stacks, printed at exit. */
#ifndef GMT_PROBE_H
#define GMT_PROBE_H

/* ALLOC..INTERN: cycles per event (a capture's: the native walk, the Python frames and
 * their merge, the interning); NATIVE_FRAMES, PY_FRAMES: frames per capture (added as
 * the "cycles" of the slot, reported as a mean count) */
enum gmt_probe_slot {
    GMT_PROBE_ALLOC, GMT_PROBE_FREE, GMT_PROBE_STACK, GMT_PROBE_WALK, GMT_PROBE_PY,
    GMT_PROBE_INTERN, GMT_PROBE_NATIVE_FRAMES, GMT_PROBE_PY_FRAMES, GMT_PROBE_SLOTS
};

#ifdef GMT_COST_PROBE
#include <x86intrin.h>
void gmt_probe_add(enum gmt_probe_slot slot, unsigned long long cycles);
#define GMT_PROBE_BEGIN(var) unsigned long long var = __rdtsc()
#define GMT_PROBE_END(var, slot) gmt_probe_add(slot, __rdtsc() - (var))
#define GMT_PROBE_COUNT(slot, k) gmt_probe_add(slot, (k))
#else
#define GMT_PROBE_BEGIN(var) do { } while (0)
#define GMT_PROBE_END(var, slot) do { } while (0)
#define GMT_PROBE_COUNT(slot, k) do { } while (0)
#endif

#endif
