/* gpumemtrace.h: the API that libgpumemtrace.so exports to the process it traces: that process's own tracked device memory, now and at its peak. */
#ifndef GPUMEMTRACE_H
#define GPUMEMTRACE_H

#include <stdint.h>

/* The library is preloaded, not linked: find these with dlsym(RTLD_DEFAULT, ...), and a
 * NULL answer means the process is not traced. The figures are the bytes of device
 * memory that allocation calls hold (cudaMalloc, cuMemAlloc, pool allocations, managed
 * memory, arrays, cuMemCreate on a device), counted as the library records them. */

#define GPUMEMTRACE_QUERY_VERSION 1

/* device: an ordinal 0..63, or one of these */
#define GPUMEMTRACE_ALL_DEVICES (-1)    /* current: summed over devices; peak: the largest device's */
#define GPUMEMTRACE_UNKNOWN_DEVICE (-2) /* memory allocated where no device was known */

/* category */
#define GPUMEMTRACE_CAT_ALL 0
#define GPUMEMTRACE_CAT_NCCL 1          /* allocated inside an NCCL call, or for one on NCCL's thread */
#define GPUMEMTRACE_CAT_OTHER 2

int gpumemtrace_query_version(void);
/* Bytes now and at the peak since the start or the last reset; 0 for a bad argument. */
int64_t gpumemtrace_current_bytes(int device, int category);
int64_t gpumemtrace_peak_bytes(int device, int category);
/* Every peak becomes what is held now. */
void gpumemtrace_reset_peak(void);
/* Bit d: device d has had tracked memory (bit 63: device 63 or unknown). */
uint64_t gpumemtrace_devices(void);
/* 1 while the figures count every allocation the trace records, 0 otherwise (tracing
 * off or failed, more allocations live at once than the library keeps: 1 Mi). */
int gpumemtrace_exact(void);

#endif
