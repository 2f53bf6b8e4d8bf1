/* worker.h: the background thread (worker.c). */
#ifndef GMT_WORKER_H
#define GMT_WORKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gmt.h"

/* ---- worker.c: the background thread ---- */
/* Starts it once per process (again in a fork child); the writer runs it when the file
 * opens. */
GMT_HIDDEN void gmt_worker_start(void);

#endif
