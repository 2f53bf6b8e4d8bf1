/* nvml.h: NVML, loaded on the flusher thread when present (nvml.c). */
#ifndef GMT_NVML_H
#define GMT_NVML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gmt.h"

/* ---- nvml.c: NVML, loaded on the flusher thread when present ---- */
/* Each may be called by one thread at a time only (sampling.c's holder of the sampler). */
/* Loads and initialises NVML once: 0 ready, -1 not available (absent, failing, lacking
 * what it needs); never retried. Never shut down: another thread could be sampling. */
GMT_HIDDEN int gmt_nvml_open(void);
/* The NVML device of a CUDA device by its PCI bus id, or NULL. */
GMT_HIDDEN void *gmt_nvml_device(const char *pci_bus_id);
/* 0 and the device's free and total bytes and, in process_b[4], this process's bytes on
 * it (GMT_MEMINFO_UNKNOWN when NVML does not list this pid or can't say), the other
 * listed processes' bytes summed (GMT_MEMINFO_UNKNOWN when NVML withholds one), how
 * many they are and the pid of the one using the most (0 none); or -1. */
GMT_HIDDEN int gmt_nvml_meminfo(void *device, uint64_t *free_b, uint64_t *total_b,
                                uint64_t *process_b);

#endif
