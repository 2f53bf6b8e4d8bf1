/* export_track.c: a counter track downsampled as it streams (lowest and highest value per time bucket), for the Chrome export and the HTML report. */
#include "export.h"

#include <stdint.h>

void gmt_xtrack_point(struct gmt_xtrack *x, uint64_t t, uint64_t v, const struct gmt_xtrack_out *o)
{
    if (x->emitted && v == x->out_v)
        return;
    o->point(o->ctx, t, v);
    x->emitted = true;
    x->out_v = v;
}

void gmt_xtrack_flush(struct gmt_xtrack *x, const struct gmt_xtrack_out *o)
{
    if (!x->has)
        return;
    if (x->min_t <= x->max_t) {
        gmt_xtrack_point(x, x->min_t, x->min_v, o);
        gmt_xtrack_point(x, x->max_t, x->max_v, o);
    } else {
        gmt_xtrack_point(x, x->max_t, x->max_v, o);
        gmt_xtrack_point(x, x->min_t, x->min_v, o);
    }
    x->has = false;
}

void gmt_xtrack_sample(struct gmt_xtrack *x, const struct gmt_xbuckets *bk, uint64_t t, uint64_t v,
                       const struct gmt_xtrack_out *o)
{
    uint64_t off = t > bk->t0 ? t - bk->t0 : 0;
    uint64_t b = (uint64_t)((unsigned __int128)off * bk->n / (bk->span + 1));
    if (x->has && b != x->b)
        gmt_xtrack_flush(x, o);
    if (!x->has) {
        x->has = true;
        x->b = b;
        x->min_t = x->max_t = t;
        x->min_v = x->max_v = v;
    } else if (v > x->max_v) {
        x->max_v = v;
        x->max_t = t;
    } else if (v < x->min_v) {
        x->min_v = v;
        x->min_t = t;
    }
    x->last_v = v;
}

void gmt_xtrack_end(struct gmt_xtrack *x, uint64_t t_last, const struct gmt_xtrack_out *o)
{
    gmt_xtrack_flush(x, o);
    if (x->emitted)
        gmt_xtrack_point(x, t_last, x->last_v, o);
}
