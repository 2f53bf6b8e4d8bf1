/* probe.h: the cost probe, compiled in only with -DGMT_COST_PROBE (tests/gpu/alloc_cost.sh builds it): TSC cycles spent recording events and capturing stacks, printed at exit. */
#ifndef GMT_PROBE_H
#define GMT_PROBE_H

enum gmt_probe_slot { GMT_PROBE_ALLOC, GMT_PROBE_FREE, GMT_PROBE_STACK, GMT_PROBE_SLOTS };

#ifdef GMT_COST_PROBE
#include <x86intrin.h>
void gmt_probe_add(enum gmt_probe_slot slot, unsigned long long cycles);
#define GMT_PROBE_BEGIN(var) unsigned long long var = __rdtsc()
#define GMT_PROBE_END(var, slot) gmt_probe_add(slot, __rdtsc() - (var))
#else
#define GMT_PROBE_BEGIN(var) do { } while (0)
#define GMT_PROBE_END(var, slot) do { } while (0)
#endif

#endif
