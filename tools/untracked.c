/* untracked.c: names the device memory no allocation call shows, from the trace's limits (DEVLIMITS), first sample and NVML's process list. */
#include "untracked.h"

#include <string.h>

void gmt_limits_view_of(const struct gmt_limits_sample *s, struct gmt_limits_view *v)
{
    memset(v, 0, sizeof *v);
    if (!s || s->stack == GMT_LIMIT_UNKNOWN)
        return;
    v->known = true;
    v->stack = s->stack;
    v->threads = (uint64_t)s->sms * s->threads_per_sm;
    /* both factors are 32-bit and the stack is checked small: no overflow in practice,
     * but a corrupt trace must not wrap either */
    v->reservation = v->stack <= GMT_BYTES_MAX / (v->threads ? v->threads : 1) ? v->stack * v->threads : GMT_BYTES_MAX;
    v->fifo = s->fifo == GMT_LIMIT_UNKNOWN || s->fifo > GMT_BYTES_MAX ? 0 : s->fifo;
    v->heap = s->heap == GMT_LIMIT_UNKNOWN || s->heap > GMT_BYTES_MAX ? 0 : s->heap;
}

static int64_t limits_bytes(const struct gmt_limits_view *v)
{
    return v->known ? (int64_t)(v->reservation + v->fifo + v->heap) : 0;
}

static uint64_t udist(uint64_t a, uint64_t b)
{
    return a > b ? a - b : b - a;
}

/*
 * The device's limits at `time`, where the device used `used`: the sample latest at or
 * before it, or the first one after it when that one's device used is nearer `used`. A
 * sample that is not cuMemGetInfo's (NVML's, from the library's own thread) carries no
 * limits, and can fall inside a call whose kernels grew the local-memory reservation:
 * then device used already shows the growth that only the call's closing sample, later,
 * reads in the limits. The reservation moves device used by its whole size, so the
 * sample nearer in device used is the one in the same state. The first one if none is
 * before.
 */
static const struct gmt_limits_sample *limits_at(const struct gmt_trace *t, int device, uint64_t time,
                                                 uint64_t used)
{
    const struct gmt_limits_sample *best = NULL, *first = NULL, *next = NULL;
    for (size_t i = 0; i < t->n_limits; i++) {
        const struct gmt_limits_sample *s = &t->limits[i];
        if (s->device != device || !s->used)
            continue; /* one not paired with its sample has no instant */
        if (!first || s->time < first->time)
            first = s;
        if (s->time <= time && (!best || s->time >= best->time))
            best = s;
        if (s->time > time && (!next || s->time < next->time))
            next = s;
    }
    if (!best)
        return first;
    if (next && udist(next->used, used) < udist(best->used, used))
        return next;
    return best;
}

/* NVML's other-process figure nearest to `time` on the device. */
static const struct gmt_proc_sample *other_near(const struct gmt_trace *t, int device, uint64_t time)
{
    const struct gmt_proc_sample *best = NULL;
    uint64_t gap = UINT64_MAX;
    for (size_t i = 0; i < t->n_proc_samples; i++) {
        const struct gmt_proc_sample *p = &t->proc_samples[i];
        if (p->device != device || p->other_bytes == GMT_MEMINFO_UNKNOWN)
            continue;
        uint64_t g = p->time > time ? p->time - time : time - p->time;
        if (g < gap) {
            gap = g;
            best = p;
        }
    }
    return best;
}

/* A first call's device jump beyond what it allocated and what its limits grew by. */
static int64_t call_unnamed(const struct gmt_trace *t, const struct gmt_coll_row *c)
{
    int64_t jump = c->first_dev - c->first_tracked;
    struct gmt_limits_view b, a;
    if (gmt_untracked_call_limits(t, c->first_scope, c->device, &b, &a))
        jump -= (int64_t)(a.reservation + a.fifo + a.heap) - (int64_t)(b.reservation + b.fifo + b.heap);
    return jump;
}

void gmt_untracked_parts(const struct gmt_trace *t, const struct gmt_report *rep,
                         const struct gmt_dev_report *d, struct gmt_untracked *u)
{
    memset(u, 0, sizeof *u);
    if (!d->has_used)
        return;
    u->known = true;
    u->total = gmt_dev_untracked(d);
    gmt_limits_view_of(limits_at(t, d->device, d->used_max_time, d->used_max), &u->lim);
    const struct gmt_proc_sample *o = other_near(t, d->device, d->used_max_time);
    if (o) {
        u->has_other = true;
        u->other = o->other_bytes;
        u->other_count = o->other_count;
    }
    int64_t named = limits_bytes(&u->lim) + (u->has_other ? (int64_t)u->other : 0);
    if (d->has_first) {
        /* Before the program's own memory, what the device held beyond the allocation is the
         * context: its code and data, the modules loaded by then, and the limits, which are
         * their own parts. */
        gmt_limits_view_of(limits_at(t, d->device, d->first_time, d->first_used), &u->lim_first);
        const struct gmt_proc_sample *of = other_near(t, d->device, d->first_time);
        u->has_context = true;
        u->context = (int64_t)d->first_used - (int64_t)d->tracked_at_first - limits_bytes(&u->lim_first) -
                     (of ? (int64_t)of->other_bytes : 0);
        named += u->context;
    }
    for (size_t i = 0; i < rep->n_colls; i++) {
        const struct gmt_coll_row *c = &rep->colls[i];
        if (c->device != d->device || !c->first_has_dev || c->first_time > d->used_max_time)
            continue;
        int64_t j = call_unnamed(t, c);
        if (j > 0) {
            u->has_calls = true;
            u->in_calls += j;
            u->n_calls++;
        }
    }
    named += u->in_calls;
    u->unexplained = u->total - named;
}

bool gmt_untracked_call_limits(const struct gmt_trace *t, uint32_t scope, int device,
                               struct gmt_limits_view *before, struct gmt_limits_view *after)
{
    const struct gmt_limits_sample *b = NULL, *a = NULL;
    for (size_t i = 0; i < t->n_limits && scope; i++) {
        const struct gmt_limits_sample *s = &t->limits[i];
        if (s->scope != scope || (device >= 0 && s->device != device))
            continue;
        if (s->phase == GMT_MEMINFO_BEGIN && !b)
            b = s;
        else if (s->phase == GMT_MEMINFO_END)
            a = s;
    }
    if (!a || !b)
        return false;
    gmt_limits_view_of(b, before);
    gmt_limits_view_of(a, after);
    return before->known && after->known;
}
