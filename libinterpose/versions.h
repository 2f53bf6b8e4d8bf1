/* versions.h: VERSION records (versions.c), with the inline check that a component was noted. */
#ifndef GMT_VERSIONS_H
#define GMT_VERSIONS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gmt.h"

/* ---- versions.c ---- */
/* Writes a VERSION record for the component the first time it can be asked (a query of
 * a constant through the real library); later calls cost one relaxed load. */
GMT_HIDDEN void gmt_version_note_slow(enum gmt_component c);
/* versions.c: the runtime linked into the program (background thread only). */
GMT_HIDDEN void gmt_version_note_static_runtime(void);
static inline void gmt_version_note(enum gmt_component c)
{
    if (GMT_UNLIKELY(!atomic_load_explicit(&gmt_hot.versions.noted[c & 3], memory_order_relaxed)))
        gmt_version_note_slow(c);
}

#endif
