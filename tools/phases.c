/* phases.c: device memory by NVTX phase: replays the allocations in time order beside the trace's NVTX ranges and measures each range's peak and growth, the ranges open at each allocation, and the growth per step. */
#include "phases.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "u64map.h"
#include "util.h"

/* One occurrence of a range, from its PUSH or START to its POP or END. */
struct occ {
    uint32_t row;
    uint32_t active_at;        /* its index in the active list */
    uint64_t start_live, max_live, t_begin, t_end; /* t_end 0: still open */
    uint32_t tid, depth;       /* push ranges: the thread and its ranges open below it */
    uint64_t step;             /* its ordinal among the outermost steps (from 1), 0 none */
};

/* A push range open on a thread. */
struct frame {
    uint32_t domain;
    uint32_t occ;
};

struct thr {
    uint32_t tid;
    struct frame *f; size_t n, cap;
};

/* A live device allocation: enough to charge and release it as the replay does. */
struct alloc {
    uint64_t bytes;
    uint64_t step;             /* the outermost step open when it was made, 0 none */
    uint32_t stack, refs;
};

struct pass {
    const struct gmt_trace *t;
    struct gmt_phases *p;
    regex_t re;
    int device;
    size_t cap_rows, cap_stacks;
    struct gmt_u64map string_at;   /* NVTX_STRING id -> note index + 1 */
    struct gmt_u64map row_of;      /* hash of a row name -> row index */
    struct gmt_u64map stack_of;    /* hash of a row sequence -> stack index */
    struct gmt_u64map start_occ;   /* START's range id -> occ index */
    struct gmt_u64map live_of;     /* live-set key -> alloc index */
    struct gmt_u64map kept_after;  /* stack -> bytes that steps 2.. made and that were freed
                                    * after the latest step ended, none begun since */
    struct occ *occ; size_t n_occ, cap_occ;
    uint32_t *active; size_t n_active, cap_active;
    struct thr *thr; size_t n_thr, cap_thr;
    struct gmt_u64map thr_of;      /* tid -> thr index */
    struct alloc *al; size_t n_al, cap_al;
    uint32_t *al_free; size_t n_al_free, cap_al_free;
    uint64_t live;
    uint64_t step_open;            /* the outermost step's occ index + 1, 0 none open */
    uint64_t steps_begun;
};

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++) {
        h ^= s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}
#define FNV0 0xcbf29ce484222325ull

static const struct gmt_rec_nvtx_range *range_rec(const struct gmt_trace *t, size_t i)
{
    return (const void *)(t->image + t->nvtx[i].offset);
}

/* An NVTX_STRING's text by id and kind, NULL when the trace does not define it. */
static const char *string_of(struct pass *S, uint32_t id, unsigned kind)
{
    const uint64_t *v = id ? gmt_u64map_get(&S->string_at, id) : NULL;
    if (!v)
        return NULL;
    const struct gmt_rec_nvtx_string *s = (const void *)(S->t->image + S->t->nvtx[*v - 1].offset);
    return s->h.aux == kind ? (const char *)(s + 1) : NULL;
}

/* A step's trailing number as "N": ProfilerStep#1, #2... are one row. */
static void number_as_n(char *name)
{
    size_t n = strlen(name), k = n;
    while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9')
        k--;
    if (k < n) {
        name[k] = 'N';
        name[k + 1] = 0;
    }
}

/* The row of a range named (domain, name): made when new. -1 out of memory. */
static long row_for(struct pass *S, uint32_t domain, uint32_t name_id, bool *is_step)
{
    char buf[2 * GMT_NVTX_STRING_MAX + 32], nb[32];
    const char *name = string_of(S, name_id, GMT_NVTX_STR_NAME);
    if (!name) {
        snprintf(nb, sizeof nb, name_id ? "#%u" : "(unnamed)", name_id);
        name = nb;
    }
    const char *dom = string_of(S, domain, GMT_NVTX_STR_DOMAIN);
    bool step = regexec(&S->re, name, 0, NULL, 0) == 0;
    if (domain && (!dom || dom[0]))
        snprintf(buf, sizeof buf, "%s::%s", dom ? dom : "?", name);
    else
        snprintf(buf, sizeof buf, "%s", name);
    if (step)
        number_as_n(buf);
    *is_step = step;
    uint64_t h = fnv(buf, strlen(buf), FNV0);
    struct gmt_phases *p = S->p;
    for (uint64_t k = h;; k++) { /* a collision of two names moves on to the next key */
        const uint64_t *v = gmt_u64map_get(&S->row_of, k);
        if (!v)
            break;
        if (!strcmp(p->rows[*v].name, buf))
            return (long)*v;
    }
    struct gmt_phase_row *r = gmt_array_push((void **)&p->rows, &p->n_rows, &S->cap_rows, sizeof *r);
    if (!r)
        return -1;
    memset(r, 0, sizeof *r);
    if (!(r->name = strdup(buf))) {
        p->n_rows--;
        return -1;
    }
    r->step = step;
    uint64_t k = h;
    while (gmt_u64map_get(&S->row_of, k))
        k++;
    if (gmt_u64map_put(&S->row_of, k, p->n_rows - 1))
        return -1;
    return (long)(p->n_rows - 1);
}

static struct thr *thr_for(struct pass *S, uint32_t tid)
{
    const uint64_t *v = gmt_u64map_get(&S->thr_of, tid);
    if (v)
        return &S->thr[*v];
    struct thr *t = gmt_array_push((void **)&S->thr, &S->n_thr, &S->cap_thr, sizeof *t);
    if (!t || gmt_u64map_put(&S->thr_of, tid, S->n_thr - 1))
        return NULL;
    memset(t, 0, sizeof *t);
    t->tid = tid;
    return t;
}

static long occ_open(struct pass *S, long row, bool step, uint64_t time, uint32_t tid, uint32_t depth)
{
    struct occ *o = gmt_array_push((void **)&S->occ, &S->n_occ, &S->cap_occ, sizeof *o);
    uint32_t *a = gmt_array_push((void **)&S->active, &S->n_active, &S->cap_active, sizeof *a);
    if (!o || !a)
        return -1;
    uint32_t i = (uint32_t)(S->n_occ - 1);
    *o = (struct occ){.row = (uint32_t)row, .active_at = (uint32_t)(S->n_active - 1),
                      .start_live = S->live, .max_live = S->live, .t_begin = time,
                      .tid = tid, .depth = depth};
    *a = i;
    if (step && !S->step_open) { /* a step inside a step is no step of its own */
        o->step = ++S->steps_begun;
        S->step_open = i + 1;
        /* what was freed between the steps was not kept across them */
        gmt_u64map_free(&S->kept_after);
        gmt_u64map_init(&S->kept_after);
    }
    return i;
}

static void occ_close(struct pass *S, uint32_t i, uint64_t time)
{
    struct occ *o = &S->occ[i];
    if (o->active_at == UINT32_MAX)
        return;
    struct gmt_phase_row *r = &S->p->rows[o->row];
    int64_t g = (int64_t)(S->live - o->start_live);
    o->t_end = time > o->t_begin ? time : o->t_begin + 1;
    r->count++;
    if (o->max_live > r->peak)
        r->peak = o->max_live;
    if (r->count == 1 || g > r->growth_max)
        r->growth_max = g;
    r->growth = gmt_wrap_add(r->growth, g);
    r->time_ns += time > o->t_begin ? time - o->t_begin : 0;
    if (o->step) {
        struct gmt_phases *p = S->p;
        p->steps++;
        if (o->step == 1) {
            p->first_step_growth = g;
        } else {
            if (p->steps == 2 || g < p->later_min)
                p->later_min = g;
            p->later_growth = gmt_wrap_add(p->later_growth, g);
        }
        S->step_open = 0;
    }
    /* out of the active list: the last one takes its place */
    uint32_t last = S->active[--S->n_active];
    if (last != i) {
        S->active[o->active_at] = last;
        S->occ[last].active_at = o->active_at;
    }
    o->active_at = UINT32_MAX;
}

static void live_changed(struct pass *S)
{
    for (size_t k = 0; k < S->n_active; k++) {
        struct occ *o = &S->occ[S->active[k]];
        if (S->live > o->max_live)
            o->max_live = S->live;
    }
}

static int on_range(struct pass *S, size_t i)
{
    const struct gmt_rec_nvtx_range *r = range_rec(S->t, i);
    const struct gmt_rec_nvtx_range_ext *x = (const void *)r;
    if ((r->h.aux == GMT_NVTX_START || r->h.aux == GMT_NVTX_END) && r->h.size < sizeof *x)
        return 0; /* a start or end without its id pairs with nothing */
    uint64_t time = S->t->nvtx[i].time;
    S->p->ranges++;
    bool step;
    switch (r->h.aux) {
    case GMT_NVTX_PUSH: {
        struct thr *th = thr_for(S, S->t->nvtx[i].tid);
        long row = row_for(S, r->domain, r->name, &step);
        if (!th || row < 0)
            return -ENOMEM;
        long o = occ_open(S, row, step, time, th->tid, (uint32_t)th->n);
        struct frame *f = o < 0 ? NULL : gmt_array_push((void **)&th->f, &th->n, &th->cap, sizeof *f);
        if (!f)
            return -ENOMEM;
        *f = (struct frame){r->domain, (uint32_t)o};
        return 0;
    }
    case GMT_NVTX_POP: {
        struct thr *th = thr_for(S, S->t->nvtx[i].tid);
        if (!th)
            return -ENOMEM;
        for (size_t k = th->n; k-- > 0;) /* the thread's innermost range of the domain */
            if (th->f[k].domain == r->domain) {
                occ_close(S, th->f[k].occ, time);
                memmove(&th->f[k], &th->f[k + 1], (th->n - k - 1) * sizeof *th->f);
                th->n--;
                break;
            }
        return 0;
    }
    case GMT_NVTX_START: {
        long row = row_for(S, r->domain, r->name, &step);
        long o = row < 0 ? -1 : occ_open(S, row, step, time, S->t->nvtx[i].tid, 0);
        if (o < 0 || gmt_u64map_put(&S->start_occ, x->range_id, (uint64_t)o))
            return -ENOMEM;
        return 0;
    }
    case GMT_NVTX_END: {
        uint64_t *v = gmt_u64map_get(&S->start_occ, x->range_id);
        if (v) {
            uint32_t o = (uint32_t)*v;
            gmt_u64map_del_at(&S->start_occ, v);
            occ_close(S, o, time);
        }
        return 0;
    }
    }
    return 0; /* MARK, and ops of a newer version */
}

/* Ranges of a thread's stack named in its path: the outermost ones (a program that
 * pushes without popping must not make each allocation cost its whole stack). */
#define PATH_DEPTH 64

/* The stack of ranges open on the thread of a device allocation: its row. */
static int attribute(struct pass *S, uint32_t tid, uint64_t bytes)
{
    const uint64_t *v = gmt_u64map_get(&S->thr_of, tid);
    const struct thr *th = v ? &S->thr[*v] : NULL;
    if (!th || !th->n) {
        S->p->unnamed_allocs++;
        return 0;
    }
    struct gmt_phases *p = S->p;
    struct gmt_phase_row *inner = &p->rows[S->occ[th->f[th->n - 1].occ].row];
    inner->allocs++;
    inner->alloc_bytes += bytes;
    size_t depth = th->n < PATH_DEPTH ? th->n : PATH_DEPTH;
    uint64_t h = FNV0;
    for (size_t k = 0; k < depth; k++)
        h = fnv(&S->occ[th->f[k].occ].row, sizeof(uint32_t), h);
    uint64_t *si = gmt_u64map_get(&S->stack_of, h);
    if (!si) {
        size_t len = 1;
        for (size_t k = 0; k < depth; k++)
            len += strlen(p->rows[S->occ[th->f[k].occ].row].name) + 3;
        char *path = malloc(len);
        struct gmt_phase_stack *ps = path ? gmt_array_push((void **)&p->stacks, &p->n_stacks,
                                                           &S->cap_stacks, sizeof *ps) : NULL;
        if (!ps) {
            free(path);
            return -ENOMEM;
        }
        path[0] = 0;
        for (size_t k = 0; k < depth; k++) {
            if (k)
                strcat(path, " > ");
            strcat(path, p->rows[S->occ[th->f[k].occ].row].name);
        }
        *ps = (struct gmt_phase_stack){path, 0, 0};
        if (gmt_u64map_put(&S->stack_of, h, p->n_stacks - 1))
            return -ENOMEM;
        si = gmt_u64map_get(&S->stack_of, h);
    }
    p->stacks[*si].allocs++;
    p->stacks[*si].bytes += bytes;
    return 0;
}

static int on_alloc(struct pass *S, const struct gmt_timed_event *e)
{
    uint64_t key = gmt_replay_alloc_key(e->kind, e->addr);
    uint64_t *v = gmt_u64map_get(&S->live_of, key);
    if (e->kind == GMT_KIND_RETAINED) { /* a new reference to a handle */
        if (v)
            S->al[*v].refs++;
        return 0;
    }
    if (!gmt_kind_is_device(e->kind) || (S->device >= 0 && e->device != S->device))
        return 0;
    if (v) { /* an address reused without a free seen: the old one is gone */
        S->live -= S->al[*v].bytes;
        S->al[*v] = (struct alloc){0};
    } else {
        uint32_t idx;
        if (S->n_al_free) {
            idx = S->al_free[--S->n_al_free];
        } else {
            if (!gmt_array_push((void **)&S->al, &S->n_al, &S->cap_al, sizeof *S->al))
                return -ENOMEM;
            idx = (uint32_t)(S->n_al - 1);
        }
        if (gmt_u64map_put(&S->live_of, key, idx))
            return -ENOMEM;
        v = gmt_u64map_get(&S->live_of, key);
    }
    struct alloc *a = &S->al[*v];
    *a = (struct alloc){e->bytes, S->step_open ? S->occ[S->step_open - 1].step : 0, e->stack, 1};
    S->live += e->bytes;
    live_changed(S);
    return attribute(S, e->tid, e->bytes);
}

static int on_free(struct pass *S, const struct gmt_timed_event *e)
{
    uint64_t *v = gmt_u64map_get(&S->live_of, gmt_replay_free_key(e->api, e->addr));
    if (!v)
        return 0;
    struct alloc *a = &S->al[*v];
    if (a->refs > 1) {
        a->refs--;
        return 0;
    }
    S->live -= a->bytes;
    if (a->step >= 2 && !S->step_open && S->steps_begun) {
        /* freed after the latest step ended: it was still there when that step ended
         * (a process's exit frees what its last step kept) */
        uint64_t stack = a->stack, bytes = a->bytes;
        uint64_t *k = gmt_u64map_get(&S->kept_after, stack);
        uint64_t sum = (k ? *k : 0) + bytes;
        if (gmt_u64map_put(&S->kept_after, stack, sum)) /* another map: v stays valid */
            return -ENOMEM;
    }
    uint32_t idx = (uint32_t)*v;
    gmt_u64map_del_at(&S->live_of, v);
    uint32_t *f = gmt_array_push((void **)&S->al_free, &S->n_al_free, &S->cap_al_free, sizeof *f);
    if (!f)
        return -ENOMEM;
    *f = idx;
    *a = (struct alloc){0};
    live_changed(S);
    return 0;
}

static int cmp_note_time(const void *a, const void *b)
{
    const struct gmt_nvtx_note *x = *(const struct gmt_nvtx_note *const *)a;
    const struct gmt_nvtx_note *y = *(const struct gmt_nvtx_note *const *)b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

static int cmp_row(const void *a, const void *b)
{
    const struct gmt_phase_row *x = a, *y = b;
    if (x->peak != y->peak)
        return x->peak > y->peak ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int cmp_stack(const void *a, const void *b)
{
    const struct gmt_phase_stack *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return strcmp(x->path, y->path);
}

/* What grew every step: the stack holding most of what later steps allocated and that
 * was still there when the last step ended (live at the end, or freed after the last
 * step: at the process's exit). */
static int grow_site(struct pass *S)
{
    struct gmt_u64map by_stack;
    gmt_u64map_init(&by_stack);
    struct gmt_phases *p = S->p;
    for (size_t i = 0; i < S->kept_after.cap; i++) {
        if (S->kept_after.state[i] != 1)
            continue;
        uint64_t stack = S->kept_after.keys[i], sum = S->kept_after.vals[i];
        if (gmt_u64map_put(&by_stack, stack, sum)) {
            gmt_u64map_free(&by_stack);
            return -ENOMEM;
        }
        if (sum > p->grow_stack_bytes || (sum == p->grow_stack_bytes && stack < p->grow_stack)) {
            p->grow_stack_bytes = sum;
            p->grow_stack = (uint32_t)stack;
        }
    }
    for (size_t i = 0; i < S->live_of.cap; i++) {
        if (S->live_of.state[i] != 1)
            continue;
        const struct alloc *a = &S->al[S->live_of.vals[i]];
        if (a->step < 2)
            continue;
        uint64_t *v = gmt_u64map_get(&by_stack, a->stack);
        uint64_t sum = (v ? *v : 0) + a->bytes;
        if (gmt_u64map_put(&by_stack, a->stack, sum)) {
            gmt_u64map_free(&by_stack);
            return -ENOMEM;
        }
        if (sum > p->grow_stack_bytes || (sum == p->grow_stack_bytes && a->stack < p->grow_stack)) {
            p->grow_stack_bytes = sum;
            p->grow_stack = a->stack;
        }
    }
    gmt_u64map_free(&by_stack);
    return 0;
}

static int run(struct pass *S)
{
    const struct gmt_trace *t = S->t;
    const struct gmt_nvtx_note **order = malloc((t->n_nvtx ? t->n_nvtx : 1) * sizeof *order);
    if (!order)
        return -ENOMEM;
    size_t n_ranges = 0;
    for (size_t i = 0; i < t->n_nvtx; i++) {
        const struct gmt_rec *h = (const void *)(t->image + t->nvtx[i].offset);
        if (h->type == GMT_REC_NVTX_STRING) {
            const struct gmt_rec_nvtx_string *s = (const void *)h;
            if (!gmt_u64map_get(&S->string_at, s->id) && gmt_u64map_put(&S->string_at, s->id, i + 1)) {
                free(order);
                return -ENOMEM;
            }
        } else {
            order[n_ranges++] = &t->nvtx[i];
        }
    }
    gmt_sort(order, n_ranges, sizeof *order, cmp_note_time);
    struct gmt_trace_iter *it = gmt_trace_iter_new(t);
    if (!it) {
        free(order);
        return -ENOMEM;
    }
    struct gmt_timed_event ev[256];
    size_t n, next = 0;
    int r = 0;
    while (!r && (n = gmt_trace_iter_next(it, ev, 256)) > 0) {
        for (size_t i = 0; i < n && !r; i++) {
            /* the ranges begun or ended by this event's time come first */
            while (!r && next < n_ranges && order[next]->time <= ev[i].time)
                r = on_range(S, (size_t)(order[next++] - t->nvtx));
            if (r)
                break;
            if (ev[i].type == GMT_EV_ALLOC)
                r = on_alloc(S, &ev[i]);
            else if (ev[i].type == GMT_EV_FREE)
                r = on_free(S, &ev[i]);
        }
    }
    while (!r && next < n_ranges)
        r = on_range(S, (size_t)(order[next++] - t->nvtx));
    gmt_trace_iter_free(it);
    free(order);
    if (r)
        return r;
    /* occurrences the trace ends inside: their peaks count, their growth is unknown */
    for (size_t k = 0; k < S->n_active; k++) {
        const struct occ *o = &S->occ[S->active[k]];
        struct gmt_phase_row *row = &S->p->rows[o->row];
        row->open_at_end++;
        if (o->max_live > row->peak)
            row->peak = o->max_live;
    }
    struct gmt_phases *p = S->p;
    p->grows_every_step = p->steps >= 3 && p->later_min > 0;
    if (p->grows_every_step)
        p->growth_per_step = p->later_growth / (int64_t)(p->steps - 1);
    if (p->grows_every_step && (r = grow_site(S)))
        return r;
    if (p->n_rows)
        gmt_sort(p->rows, p->n_rows, sizeof *p->rows, cmp_row);
    if (p->n_stacks)
        gmt_sort(p->stacks, p->n_stacks, sizeof *p->stacks, cmp_stack);
    return 0;
}

/* The occurrences, in the order they began, as spans for a time line: S->occ's array
 * rewritten in place (a span is smaller than an occurrence) and handed to p. */
static void keep_spans(struct pass *S)
{
    _Static_assert(sizeof(struct gmt_phase_span) <= sizeof(struct occ), "spans fit in place");
    struct gmt_phase_span *sp = (void *)S->occ;
    for (size_t i = 0; i < S->n_occ; i++) {
        const struct occ o = S->occ[i];
        sp[i] = (struct gmt_phase_span){.name = S->p->rows[o.row].name, .t_begin = o.t_begin,
                                        .t_end = o.t_end, .tid = o.tid, .depth = o.depth};
    }
    S->p->spans = sp;
    S->p->n_spans = S->n_occ;
    S->occ = NULL;
}

int gmt_phases_compute(const struct gmt_trace *t, const char *step_regex, int device,
                       struct gmt_phases *p, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->step_regex = step_regex ? step_regex : GMT_STEP_REGEX_DEFAULT;
    struct pass S = {.t = t, .p = p, .device = device};
    int rc = regcomp(&S.re, p->step_regex, REG_EXTENDED | REG_ICASE | REG_NOSUB);
    if (rc) {
        char m[128];
        regerror(rc, &S.re, m, sizeof m);
        snprintf(err, errlen, "--step '%s' is not a regular expression: %s", p->step_regex, m);
        return -EINVAL;
    }
    if (!t->n_nvtx) {
        regfree(&S.re);
        return 0;
    }
    struct gmt_u64map *maps[] = {&S.string_at, &S.row_of, &S.stack_of, &S.start_occ,
                                 &S.live_of, &S.thr_of, &S.kept_after};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
        gmt_u64map_init(maps[i]);
    rc = run(&S);
    if (!rc)
        keep_spans(&S);
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++)
        gmt_u64map_free(maps[i]);
    for (size_t i = 0; i < S.n_thr; i++)
        free(S.thr[i].f);
    free(S.thr);
    free(S.occ);
    free(S.active);
    free(S.al);
    free(S.al_free);
    regfree(&S.re);
    if (rc) {
        gmt_phases_free(p);
        snprintf(err, errlen, "%s: out of memory", t->path);
    }
    return rc;
}

void gmt_phases_free(struct gmt_phases *p)
{
    for (size_t i = 0; i < p->n_rows; i++)
        free(p->rows[i].name);
    free(p->rows);
    for (size_t i = 0; i < p->n_stacks; i++)
        free(p->stacks[i].path);
    free(p->stacks);
    free(p->spans);
    memset(p, 0, sizeof *p);
}
