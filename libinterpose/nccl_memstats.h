/* nccl_memstats.h: NCCL's own count of its device memory, per communicator (nccl_memstats.c). */
#ifndef GMT_NCCL_MEMSTATS_H
#define GMT_NCCL_MEMSTATS_H

#include <stdint.h>

#include "gmt.h"

/* An NCCL_MEMSTATS record of `comm` (on `device`, -1 unknown) at `phase`: NCCL's own count
 * of its device memory, where the loaded NCCL has ncclCommMemStats and the communicator
 * is ready (ncclCommGetAsyncError says ncclSuccess); nothing otherwise. Not for hot paths:
 * five calls into NCCL. */
GMT_HIDDEN void gmt_nccl_memstats(uint64_t comm, enum gmt_memstats_phase phase, int device);

#endif
