/* untracked.c: names the device memory no allocation call shows, from the trace's limits (DEVLIMITS), module loads (MODLOAD), first sample and NVML's process list. */
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

/* What the limits hold on the device whatever the kernels do: the local-memory
 * reservation, which the driver charges when the stack limit is set or grown. Neither the
 * printf FIFO nor the malloc heap is charged when set: the FIFO's size never moves device
 * used, and the heap is charged at the first launch of a kernel that calls malloc
 * (gmt_untracked.heap), which no call shows. */
static int64_t limits_bytes(const struct gmt_limits_view *v)
{
    return v->known ? (int64_t)v->reservation : 0;
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

int64_t gmt_untracked_modload_bytes(const struct gmt_modload_note *m)
{
    if (!m->used_before && !m->used_after)
        return 0;
    return (int64_t)m->used_after - (int64_t)m->used_before;
}

/* What explicit loads inside NCCL call `scope` on `device` took: the modules part names them,
 * so the call's first-call jump leaves them out. */
static int64_t loads_in_call(const struct gmt_trace *t, uint32_t scope, int device)
{
    int64_t sum = 0;
    for (size_t i = 0; i < t->n_modloads && scope; i++) {
        const struct gmt_modload_note *m = &t->modloads[i];
        if (m->scope == scope && m->device == device)
            sum += gmt_untracked_modload_bytes(m);
    }
    return sum;
}

/* A first call's device jump beyond what it allocated, what its limits grew by and what
 * explicit module loads inside it took. */
static int64_t call_unnamed(const struct gmt_trace *t, const struct gmt_coll_row *c)
{
    int64_t jump = c->first_dev - c->first_tracked - loads_in_call(t, c->first_scope, c->device);
    struct gmt_limits_view b, a;
    if (gmt_untracked_call_limits(t, c->first_scope, c->device, &b, &a))
        jump -= limits_bytes(&a) - limits_bytes(&b);
    return jump;
}

/* Explicit module and library loads on the device up to its largest sample, a part of their
 * own: those before the first sample are taken out of the context's figure, those inside an
 * NCCL call out of that call's jump. */
static void modules_part(const struct gmt_trace *t, const struct gmt_dev_report *d, struct gmt_untracked *u)
{
    for (size_t i = 0; i < t->n_modloads; i++) {
        const struct gmt_modload_note *m = &t->modloads[i];
        if (m->device != d->device || m->time > d->used_max_time)
            continue;
        u->has_modules = true;
        int64_t b = gmt_untracked_modload_bytes(m);
        if (!b)
            continue;
        if (d->has_first && m->time <= d->first_time)
            u->modules_before_first += b;
        u->modules += b;
        u->n_modules++;
    }
}

/* What giving the stack limit back to the driver's default would change device used by. */
static void stack_whatif(struct gmt_untracked *u)
{
    if (!u->known || !u->lim.known || u->lim.stack <= GMT_STACK_DEFAULT)
        return;
    u->stack_whatif = true;
    /* the reservation is stack x threads: each byte of stack given back frees one per thread */
    u->stack_whatif_bytes = -(int64_t)((u->lim.stack - GMT_STACK_DEFAULT) * u->lim.threads);
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
        u->other_pid = o->other_pid;
    }
    modules_part(t, d, u);
    if (d->has_first) {
        /* Before the program's own memory, what the device held beyond the allocation is the
         * context: its code and data, the modules loaded by then, and the limits, which are
         * their own parts; so are the modules the program loaded itself before then. */
        gmt_limits_view_of(limits_at(t, d->device, d->first_time, d->first_used), &u->lim_first);
        const struct gmt_proc_sample *of = other_near(t, d->device, d->first_time);
        u->has_context = true;
        u->context = (int64_t)d->first_used - (int64_t)d->tracked_at_first - limits_bytes(&u->lim_first) -
                     (of ? (int64_t)of->other_bytes : 0) - u->modules_before_first;
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
    int64_t named = limits_bytes(&u->lim) + (u->has_other ? (int64_t)u->other : 0) + u->context +
                    u->modules + u->in_calls;
    u->unexplained = u->total - named;
    u->unexplained_pct = d->used_max ? 100.0 * (double)u->unexplained / (double)d->used_max : 0.0;
    stack_whatif(u);
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

void gmt_untracked_call_of(const struct gmt_trace *t, const struct gmt_coll_row *c,
                           struct gmt_untracked_call *u)
{
    memset(u, 0, sizeof *u);
    if (!c->first_has_dev || c->first_dev <= c->first_tracked)
        return;
    u->jump = c->first_dev - c->first_tracked;
    if (!gmt_untracked_call_limits(t, c->first_scope, c->device, &u->before, &u->after))
        return;
    u->grew = (int64_t)u->after.reservation - (int64_t)u->before.reservation;
    u->unnamed = u->jump - u->grew;
    u->known = true;
}

bool gmt_untracked_eager(const struct gmt_trace *t)
{
    const char *loading = NULL;
    for (size_t i = 0; i < t->n_env; i++)
        if (!strncmp(t->env[i], "CUDA_MODULE_LOADING=", 20))
            loading = t->env[i] + 20;
    return loading && !strcmp(loading, "EAGER");
}
