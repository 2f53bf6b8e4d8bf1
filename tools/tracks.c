/* tracks.c: device memory over a trace's time for the Chrome export and the HTML report: counter tracks per device and category, and the bytes each stack holds at the device's peak. */
#include "tracks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "util.h"

int gmt_tracks_init(struct gmt_tracks *T, const struct gmt_analysis *a, long max_points,
                    bool by_stack, gmt_tracks_point_fn *point, void *ctx)
{
    const struct gmt_trace *t = &a->t;
    memset(T, 0, sizeof *T);
    T->a = a;
    T->point = point;
    T->ctx = ctx;
    T->bk.t0 = t->t_first;
    T->bk.span = t->t_last > t->t_first ? t->t_last - t->t_first : 0;
    T->bk.n = (uint64_t)(max_points - 1) / 2;
    T->by_stack = by_stack;
    T->n_stacks = t->n_stacks + 1;
    for (size_t ds = 0; by_stack && ds < a->rep.n_dev && ds < GMT_MAX_DEVS; ds++)
        if (!(T->live[ds] = calloc(T->n_stacks, sizeof *T->live[ds])))
            return -ENOMEM;
    return 0;
}

/* which track a point is of, for the point callback */
struct track_of {
    struct gmt_tracks *T;
    int ds, k;
};

static void point(void *ctx, uint64_t t, uint64_t v)
{
    const struct track_of *w = ctx;
    w->T->point(w->T->ctx, w->ds, w->k, t, v);
}

static void sample(struct gmt_tracks *T, int ds, int k, uint64_t t, uint64_t v)
{
    struct track_of w = {T, ds, k};
    const struct gmt_xtrack_out o = {point, &w};
    gmt_xtrack_sample(&T->tr[ds][k], &T->bk, t, v, &o);
}

/* The stacks' bytes now saved the first time the device's tracked bytes reach its peak. */
static void by_stack_alloc(struct gmt_tracks *T, int ds, const struct gmt_xlive *l)
{
    if (!T->live[ds] || l->stack >= T->n_stacks)
        return;
    T->live[ds][l->stack] += l->bytes;
    if (T->at_peak[ds] || (size_t)ds >= T->a->rep.n_dev || T->tracked[ds] != T->a->rep.dev[ds].peak)
        return;
    if (!(T->at_peak[ds] = malloc(T->n_stacks * sizeof *T->at_peak[ds])))
        T->oom = true;
    else
        memcpy(T->at_peak[ds], T->live[ds], T->n_stacks * sizeof *T->live[ds]);
}

int gmt_tracks_event(struct gmt_tracks *T, const struct gmt_timed_event *e, const struct gmt_xlive *l)
{
    if (e->type == GMT_EV_ALLOC && l && gmt_kind_is_device(l->kind)) {
        int ds = gmt_export_dslot(T->a, l->device);
        if (ds >= 0 && ds < GMT_MAX_DEVS) {
            T->tracked[ds] += l->bytes;
            T->by_cat[ds][l->cat] += l->bytes;
            by_stack_alloc(T, ds, l);
            sample(T, ds, GMT_TR_TRACKED, e->time, T->tracked[ds]);
            sample(T, ds, GMT_TR_CAT0 + l->cat, e->time, T->by_cat[ds][l->cat]);
        }
    } else if (e->type == GMT_EV_MEMINFO) {
        int ds = gmt_export_dslot(T->a, e->device);
        if (ds >= 0 && ds < GMT_MAX_DEVS && e->bytes >= e->addr)
            sample(T, ds, GMT_TR_USED, e->time, e->bytes - e->addr);
    }
    return T->oom ? -ENOMEM : 0;
}

int gmt_tracks_done(struct gmt_tracks *T, const struct gmt_xlive *l, uint64_t freed_at)
{
    if (!freed_at || !gmt_kind_is_device(l->kind))
        return 0;
    int ds = gmt_export_dslot(T->a, l->device);
    if (ds < 0 || ds >= GMT_MAX_DEVS)
        return 0;
    T->tracked[ds] -= l->bytes;
    T->by_cat[ds][l->cat] -= l->bytes;
    if (T->live[ds] && l->stack < T->n_stacks)
        T->live[ds][l->stack] -= l->bytes;
    sample(T, ds, GMT_TR_TRACKED, freed_at, T->tracked[ds]);
    sample(T, ds, GMT_TR_CAT0 + l->cat, freed_at, T->by_cat[ds][l->cat]);
    return T->oom ? -ENOMEM : 0;
}

void gmt_tracks_end(struct gmt_tracks *T)
{
    for (size_t ds = 0; ds < T->a->rep.n_dev && ds < GMT_MAX_DEVS; ds++)
        for (int k = 0; k < GMT_TR_PER_DEV; k++) {
            struct track_of w = {T, (int)ds, k};
            const struct gmt_xtrack_out o = {point, &w};
            gmt_xtrack_end(&T->tr[ds][k], T->a->t.t_last, &o);
        }
}

void gmt_tracks_free(struct gmt_tracks *T)
{
    for (size_t d = 0; d < GMT_MAX_DEVS; d++) {
        free(T->live[d]);
        free(T->at_peak[d]);
    }
    memset(T, 0, sizeof *T);
}

static int cmp_flame(const void *x, const void *y)
{
    const struct gmt_flame_site *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

int gmt_tracks_flame(const struct gmt_tracks *T, size_t ds, struct gmt_flame_site **out, size_t *n_out)
{
    const uint64_t *at = ds < GMT_MAX_DEVS ? T->at_peak[ds] : NULL;
    size_t n = 0;
    for (size_t k = 0; at && k < T->n_stacks; k++)
        n += at[k] != 0;
    struct gmt_flame_site *v = malloc((n ? n : 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    n = 0;
    for (size_t k = 0; at && k < T->n_stacks; k++)
        if (at[k])
            v[n++] = (struct gmt_flame_site){(uint32_t)k, at[k]};
    gmt_sort(v, n, sizeof *v, cmp_flame);
    *out = v;
    *n_out = n;
    return 0;
}
