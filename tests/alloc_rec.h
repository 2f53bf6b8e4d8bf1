/* alloc_rec.h: for suites that read the library's traces: an ALLOC or ALLOC_SMALL record as the one full ALLOC (extension included, zero when absent) it stands for. */
#ifndef GMT_TEST_ALLOC_REC_H
#define GMT_TEST_ALLOC_REC_H

#include <stdbool.h>
#include <string.h>

#include "trace_format.h"

/* False for any other record. Afterwards x->a.h.type is ALLOC and x->a.h.aux the API. */
static inline bool as_alloc(const struct gmt_rec *h, struct gmt_rec_alloc_ext *x)
{
    memset(x, 0, sizeof *x);
    if (h->type == GMT_REC_ALLOC) {
        size_t n = h->size < sizeof *x ? h->size : sizeof *x;
        memcpy(x, h, n);
        return true;
    }
    if (h->type != GMT_REC_ALLOC_SMALL)
        return false;
    const struct gmt_rec_alloc_small *s = (const void *)h;
    x->a.h = (struct gmt_rec){GMT_REC_ALLOC, (uint16_t)GMT_SMALL_API(h->aux), sizeof x->a};
    x->a.address = s->address;
    x->a.bytes = s->bytes;
    x->a.dt = s->dt;
    x->a.stack_id = s->stack_id;
    x->a.kind = (uint8_t)GMT_SMALL_KIND(h->aux);
    x->a.flags = (uint8_t)GMT_SMALL_FLAGS(h->aux);
    x->a.device = -1;
    return true;
}

#endif
