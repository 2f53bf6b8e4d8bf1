/* blocks.c: replays PyTorch's BLOCK records: allocated against reserved per device, sites and leaks by block, the step rule on allocated bytes, and each OOM's fragmentation against the segments the trace's ALLOCs show. */
#include "blocks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "phases.h"
#include "replay.h"
#include "u64map.h"
#include "util.h"

static const char *const mode_keys[] = {
#define GMT_X(name, key, what) key,
    GMT_BLOCK_MODES(GMT_X)
#undef GMT_X
};
static const char *const mode_texts[] = {
#define GMT_X(name, key, what) what,
    GMT_BLOCK_MODES(GMT_X)
#undef GMT_X
};

const char *gmt_block_mode_key(enum gmt_block_mode m)
{
    return (unsigned)m < sizeof mode_keys / sizeof mode_keys[0] ? mode_keys[m] : "?";
}

const char *gmt_block_mode_text(enum gmt_block_mode m)
{
    return (unsigned)m < sizeof mode_texts / sizeof mode_texts[0] ? mode_texts[m] : "?";
}

/* Why a trace has no blocks: PyTorch's CUDA allocator is loaded, and its settings say. */
static enum gmt_block_mode mode_without_events(const struct gmt_trace *t)
{
    bool c10_cuda = false;
    for (size_t i = 0; i < t->n_modules && !c10_cuda; i++)
        c10_cuda = t->modules[i].path && strstr(t->modules[i].path, "libc10_cuda");
    if (!c10_cuda)
        return GMT_BLOCKS_NONE;
    const char *nc = gmt_trace_env(t, "PYTORCH_NO_CUDA_MEMORY_CACHING");
    if (nc && *nc && strcmp(nc, "0") != 0)
        return GMT_BLOCKS_NO_CACHE;
    const char *names[] = {"PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"};
    for (size_t i = 0; i < 2; i++) {
        const char *conf = gmt_trace_env(t, names[i]);
        if (conf && strstr(conf, "backend:cudaMallocAsync"))
            return GMT_BLOCKS_ASYNC;
    }
    return GMT_BLOCKS_SILENT;
}

/* ---- the segments: device allocations, live from t_alloc to t_free ---- */
struct seg {
    uint64_t addr, size, t_alloc, t_free; /* t_free UINT64_MAX: never freed */
};
struct segs {
    struct seg *v;
    size_t n, cap;
};

static int load_segments(const struct gmt_trace *t, struct segs *S)
{
    struct gmt_trace_iter *it = gmt_trace_iter_new(t);
    if (!it)
        return -ENOMEM;
    struct gmt_u64map live;
    gmt_u64map_init(&live);
    struct gmt_timed_event ev[256];
    size_t n;
    int rc = 0;
    while (!rc && (n = gmt_trace_iter_next(it, ev, 256)) > 0)
        for (size_t i = 0; i < n && !rc; i++) {
            const struct gmt_timed_event *e = &ev[i];
            if (e->type == GMT_EV_ALLOC && e->bytes &&
                (e->kind == GMT_KIND_DEVICE || e->kind == GMT_KIND_MAPPING)) {
                struct seg *s = gmt_array_push((void **)&S->v, &S->n, &S->cap, sizeof *s);
                if (!s || gmt_u64map_put(&live, gmt_replay_alloc_key(e->kind, e->addr), S->n - 1)) {
                    rc = -ENOMEM;
                    break;
                }
                *s = (struct seg){e->addr, e->bytes, e->time, UINT64_MAX};
            } else if (e->type == GMT_EV_FREE) {
                uint64_t *v = gmt_u64map_get(&live, gmt_replay_free_key(e->api, e->addr));
                if (v) {
                    S->v[*v].t_free = e->time;
                    gmt_u64map_del_at(&live, v);
                }
            }
        }
    gmt_u64map_free(&live);
    gmt_trace_iter_free(it);
    return rc;
}

/* ---- the replay ---- */
struct lblock {
    uint64_t addr, size, time;
    uint32_t stack;
    int16_t device;
    uint16_t step;             /* the step it was allocated in (1-based), 0 none */
};

struct steps {
    uint64_t *b, *e;           /* outermost step occurrences that ended, by begin */
    size_t n;
};

struct pass {
    const struct gmt_trace *t;
    struct gmt_blocks *B;
    int device;
    struct gmt_u64map live_at;  /* block key -> index in live */
    struct lblock *live;
    size_t n_live, cap_live;
    struct gmt_u64map site_of;  /* stack -> index in B->sites + 1 */
    size_t cap_sites, cap_ooms;
    struct segs segs;
    struct steps st;
    struct gmt_u64map kept;     /* stack -> bytes of steps 2.. kept past the last step */
};

static uint64_t block_key(uint64_t addr, int device)
{
    return addr ^ (uint64_t)(uint16_t)device << 48;
}

static struct gmt_block_dev *dev_of(struct gmt_blocks *B, int device)
{
    for (size_t i = 0; i < B->n_dev; i++)
        if (B->dev[i].device == device)
            return &B->dev[i];
    if (B->n_dev == sizeof B->dev / sizeof B->dev[0])
        return NULL;
    struct gmt_block_dev *d = &B->dev[B->n_dev++];
    memset(d, 0, sizeof *d);
    d->device = device;
    return d;
}

static struct gmt_block_site *site_of(struct pass *P, uint32_t stack)
{
    uint64_t *v = gmt_u64map_get(&P->site_of, stack);
    if (v)
        return &P->B->sites[*v - 1];
    struct gmt_block_site *s = gmt_array_push((void **)&P->B->sites, &P->B->n_sites, &P->cap_sites,
                                              sizeof *s);
    if (!s)
        return NULL;
    memset(s, 0, sizeof *s);
    s->stack = stack;
    if (gmt_u64map_put(&P->site_of, stack, P->B->n_sites)) {
        P->B->n_sites--;
        return NULL;
    }
    return s;
}

/* The step (1-based) whose span holds time, 0 none. */
static uint16_t step_at(const struct steps *st, uint64_t time)
{
    size_t lo = 0, hi = st->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (st->b[mid] <= time)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || time > st->e[lo - 1])
        return 0;
    return lo > 65535 ? 65535 : (uint16_t)lo;
}

static int collect_steps(const struct gmt_phases *p, struct steps *st)
{
    if (!p)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < p->n_spans; i++)
        n++;
    st->b = malloc((n ? n : 1) * sizeof *st->b);
    st->e = malloc((n ? n : 1) * sizeof *st->e);
    if (!st->b || !st->e)
        return -ENOMEM;
    uint64_t last_end = 0;
    for (size_t i = 0; i < p->n_spans; i++) {
        const struct gmt_phase_span *s = &p->spans[i];
        if (!s->t_end)
            continue;
        bool step = false;
        for (size_t r = 0; r < p->n_rows && !step; r++)
            step = p->rows[r].step && p->rows[r].name == s->name;
        /* a step inside a step is no step of its own (phases.c) */
        if (!step || (st->n && s->t_begin < last_end))
            continue;
        st->b[st->n] = s->t_begin;
        st->e[st->n] = s->t_end;
        st->n++;
        last_end = s->t_end;
    }
    return 0;
}

static int cmp_note(const void *x, const void *y)
{
    const struct gmt_block_note *a = *(const struct gmt_block_note *const *)x;
    const struct gmt_block_note *b = *(const struct gmt_block_note *const *)y;
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    return a < b ? -1 : a > b;
}

static int cmp_lblock_addr(const void *x, const void *y)
{
    const struct lblock *a = x, *b = y;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int cmp_seg_addr(const void *x, const void *y)
{
    const struct seg *a = x, *b = y;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Segment x of an OOM, with free_b bytes free, among the GMT_OOM_SEGMENTS kept: those with
 * the most free bytes, in that order. */
static void oom_keep_segment(struct gmt_block_oom *o, const struct gmt_block_segment *x, uint64_t free_b)
{
    size_t at_i = o->n_seg < GMT_OOM_SEGMENTS ? o->n_seg++ : GMT_OOM_SEGMENTS;
    if (at_i == GMT_OOM_SEGMENTS) {
        const struct gmt_block_segment *w = &o->seg[GMT_OOM_SEGMENTS - 1];
        if (free_b <= w->size - w->live)
            return;
        at_i = GMT_OOM_SEGMENTS - 1;
    }
    o->seg[at_i] = *x;
    for (size_t j = at_i; j > 0; j--) {
        struct gmt_block_segment *a = &o->seg[j - 1], *b = &o->seg[j];
        if (a->size - a->live >= b->size - b->live)
            break;
        struct gmt_block_segment tmp = *a;
        *a = *b;
        *b = tmp;
    }
}

/* The live blocks lb[0..n) of an OOM's device by site, the largest first. */
static void oom_sites(struct gmt_block_oom *o, const struct lblock *lb, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        size_t j = 0;
        while (j < o->n_site && o->site[j].stack != lb[i].stack)
            j++;
        if (j == o->n_site) {
            if (o->n_site == GMT_OOM_SITES) {
                /* beyond the kept rows: replaces the smallest when larger */
                size_t m = 0;
                for (size_t q = 1; q < o->n_site; q++)
                    if (o->site[q].bytes < o->site[m].bytes)
                        m = q;
                if (o->site[m].bytes >= lb[i].size)
                    continue;
                j = m;
            } else {
                o->n_site++;
            }
            o->site[j].stack = lb[i].stack;
            o->site[j].bytes = 0;
            o->site[j].count = 0;
        }
        o->site[j].bytes += lb[i].size;
        o->site[j].count++;
    }
    for (size_t i = 1; i < o->n_site; i++)
        for (size_t j = i; j > 0 && o->site[j - 1].bytes < o->site[j].bytes; j--) {
            __typeof__(o->site[0]) tmp = o->site[j - 1];
            o->site[j - 1] = o->site[j];
            o->site[j] = tmp;
        }
}

/* At an OOM: the segments that hold live blocks of its device, their free ranges, and
 * the live blocks by site. */
static int oom_picture(struct pass *P, struct gmt_block_oom *o)
{
    size_t n = 0;
    for (size_t i = 0; i < P->n_live; i++)
        n += P->live[i].device == o->device;
    struct lblock *lb = malloc((n ? n : 1) * sizeof *lb);
    struct seg *sg = malloc((P->segs.n ? P->segs.n : 1) * sizeof *sg);
    if (!lb || !sg) {
        free(lb);
        free(sg);
        return -ENOMEM;
    }
    n = 0;
    for (size_t i = 0; i < P->n_live; i++)
        if (P->live[i].device == o->device)
            lb[n++] = P->live[i];
    gmt_sort(lb, n, sizeof *lb, cmp_lblock_addr);
    size_t ns = 0;
    for (size_t i = 0; i < P->segs.n; i++)
        if (P->segs.v[i].t_alloc <= o->time && P->segs.v[i].t_free > o->time)
            sg[ns++] = P->segs.v[i];
    gmt_sort(sg, ns, sizeof *sg, cmp_seg_addr);
    size_t k = 0;
    for (size_t s = 0; s < ns; s++) {
        uint64_t lo = sg[s].addr, hi = sg[s].addr + sg[s].size;
        while (k < n && lb[k].addr < lo)
            k++;
        if (k == n || lb[k].addr >= hi)
            continue; /* no live block in it: not PyTorch's (or empty, then freed before the OOM) */
        struct gmt_block_segment x = {lo, sg[s].size, 0, 0, 0};
        uint64_t at = lo;
        for (; k < n && lb[k].addr < hi; k++) {
            if (lb[k].addr > at && lb[k].addr - at > x.largest_free)
                x.largest_free = lb[k].addr - at;
            x.live += lb[k].size;
            if (lb[k].addr + lb[k].size > at)
                at = lb[k].addr + lb[k].size;
        }
        if (hi > at && hi - at > x.largest_free)
            x.largest_free = hi - at;
        uint64_t free_b = x.size > x.live ? x.size - x.live : 0;
        o->segments++;
        if (x.largest_free > o->largest_free)
            o->largest_free = x.largest_free;
        if (x.largest_free < o->request)
            o->free_unusable += free_b;
        oom_keep_segment(o, &x, free_b);
    }
    oom_sites(o, lb, n);
    free(lb);
    free(sg);
    return 0;
}

static int add_kept(struct pass *P, const struct lblock *l)
{
    if (l->step < 2)
        return 0;
    uint64_t *v = gmt_u64map_get(&P->kept, l->stack);
    if (v) {
        *v += l->size;
        return 0;
    }
    return gmt_u64map_put(&P->kept, l->stack, l->size);
}

static void line_point(struct gmt_block_dev *d, uint64_t t0, uint64_t span, uint64_t time,
                       uint64_t allocated, uint64_t reserved)
{
    /* one point per slice of the trace's span: the one of most allocated bytes */
    size_t slot = span ? (size_t)((unsigned __int128)(time - t0) * (GMT_BLOCK_POINTS - 1) / span) : 0;
    if (d->n_line && d->line[d->n_line - 1].time >= t0 &&
        (span ? (size_t)((unsigned __int128)(d->line[d->n_line - 1].time - t0) * (GMT_BLOCK_POINTS - 1) / span) : 0) == slot) {
        struct gmt_block_point *p = &d->line[d->n_line - 1];
        if (allocated >= p->allocated || reserved > p->reserved)
            *p = (struct gmt_block_point){time, allocated, reserved};
        return;
    }
    if (d->n_line < GMT_BLOCK_POINTS)
        d->line[d->n_line++] = (struct gmt_block_point){time, allocated, reserved};
}

static int cmp_site(const void *x, const void *y)
{
    const struct gmt_block_site *a = x, *b = y;
    if (a->live_at_peak != b->live_at_peak)
        return a->live_at_peak > b->live_at_peak ? -1 : 1;
    if (a->live_at_end != b->live_at_end)
        return a->live_at_end > b->live_at_end ? -1 : 1;
    if (a->bytes_total != b->bytes_total)
        return a->bytes_total > b->bytes_total ? -1 : 1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static int cmp_live(const void *x, const void *y)
{
    const struct gmt_block_live *a = x, *b = y;
    if (a->bytes != b->bytes)
        return a->bytes > b->bytes ? -1 : 1;
    return a->stack < b->stack ? -1 : a->stack > b->stack;
}

/* Device d at its allocated peak: the bytes its live blocks hold, added to their sites'
 * live_at_peak and kept by stack for the report's icicle. */
static int peak_picture(struct pass *P, struct gmt_block_dev *d)
{
    struct gmt_u64map at;
    size_t cap = 0;
    int rc = -ENOMEM;
    gmt_u64map_init(&at);
    for (size_t k = 0; k < P->n_live; k++) {
        const struct lblock *l = &P->live[k];
        if (l->device != d->device)
            continue;
        struct gmt_block_site *s = site_of(P, l->stack);
        if (!s)
            goto out;
        s->live_at_peak += l->size;
        uint64_t *x = gmt_u64map_get(&at, l->stack);
        if (!x) {
            struct gmt_block_live *e = gmt_array_push((void **)&d->at_peak, &d->n_at_peak, &cap,
                                                      sizeof *e);
            if (!e || gmt_u64map_put(&at, l->stack, d->n_at_peak - 1))
                goto out;
            *e = (struct gmt_block_live){l->stack, 0};
            x = gmt_u64map_get(&at, l->stack);
        }
        d->at_peak[*x].bytes += l->size;
    }
    gmt_sort(d->at_peak, d->n_at_peak, sizeof *d->at_peak, cmp_live);
    rc = 0;
out:
    gmt_u64map_free(&at);
    return rc;
}

/* The first walk's figures of a block: its device's counts, peaks, ends and line. */
static void note_figures(struct gmt_block_dev *d, const struct gmt_block_note *b, uint64_t t0,
                         uint64_t span)
{
    if (b->op == GMT_BLOCK_ALLOC)
        d->allocs++;
    else if (b->op == GMT_BLOCK_FREE)
        d->frees++;
    else if (b->op == GMT_BLOCK_OOM)
        d->ooms++;
    if (b->allocated > d->allocated_peak) {
        d->allocated_peak = b->allocated;
        d->allocated_peak_time = b->time;
        d->reserved_at_peak = b->reserved;
    }
    if (b->reserved > d->reserved_peak)
        d->reserved_peak = b->reserved;
    d->allocated_end = b->allocated;
    d->reserved_end = b->reserved;
    line_point(d, t0, span, b->time, b->allocated, b->reserved);
}

/* An ALLOC: the block live, in the place of one still live at its address; its site's
 * counts. total: the live bytes, moved. */
static int live_alloc(struct pass *P, const struct gmt_block_note *b, uint64_t *total)
{
    uint64_t key = block_key(b->addr, b->device);
    struct lblock *l = gmt_array_push((void **)&P->live, &P->n_live, &P->cap_live, sizeof *l);
    uint64_t *old = gmt_u64map_get(&P->live_at, key);
    if (!l)
        return -ENOMEM;
    if (old) { /* a second ALLOC of a live block: the first one's free was lost */
        P->n_live--;
        l = &P->live[*old];
        *total -= l->size;
    } else if (gmt_u64map_put(&P->live_at, key, P->n_live - 1)) {
        return -ENOMEM;
    }
    /* an ALLOC's size is positive as PyTorch reports it; a corrupt one is read as
     * its magnitude */
    uint64_t size = b->size < 0 ? (uint64_t)0 - (uint64_t)b->size : (uint64_t)b->size;
    *l = (struct lblock){b->addr, size, b->time, b->stack, b->device,
                         step_at(&P->st, b->time)};
    *total += size;
    struct gmt_block_site *s = site_of(P, b->stack);
    if (!s)
        return -ENOMEM;
    s->allocs++;
    s->bytes_total += size;
    return 0;
}

/* A FREE: the block out of the live set (the last one takes its place), its bytes kept
 * by its stack when freed after the last step's end (0: no step ended). */
static int live_free(struct pass *P, const struct gmt_block_note *b, uint64_t last_step_end,
                     uint64_t *total)
{
    uint64_t key = block_key(b->addr, b->device);
    uint64_t *at = gmt_u64map_get(&P->live_at, key);
    if (!at) {
        P->B->unmatched_frees++;
        return 0;
    }
    size_t k = (size_t)*at;
    gmt_u64map_del_at(&P->live_at, at);
    struct lblock *l = &P->live[k];
    *total -= l->size;
    if (last_step_end && b->time > last_step_end && add_kept(P, l))
        return -ENOMEM;
    if (k != P->n_live - 1) {
        *l = P->live[P->n_live - 1];
        uint64_t *moved = gmt_u64map_get(&P->live_at, block_key(l->addr, l->device));
        if (moved)
            *moved = k;
    }
    P->n_live--;
    return 0;
}

/* An OOM: its row, with the segments and blocks as the failure found them. */
static int oom_row(struct pass *P, const struct gmt_block_note *b)
{
    struct gmt_blocks *B = P->B;
    struct gmt_block_oom *o = gmt_array_push((void **)&B->ooms, &B->n_ooms, &P->cap_ooms, sizeof *o);
    if (!o)
        return -ENOMEM;
    memset(o, 0, sizeof *o);
    o->time = b->time;
    o->device = b->device;
    o->stack = b->stack;
    o->tid = b->tid;
    o->request = b->size > 0 ? (uint64_t)b->size : 0;
    o->allocated = b->allocated;
    o->reserved = b->reserved;
    if (oom_picture(P, o))
        return -ENOMEM;
    return 0;
}

/* After the second walk: what each site still holds, and the bytes of steps 2.. that
 * stay live to the end. */
static int sites_at_end(struct pass *P)
{
    for (size_t k = 0; k < P->n_live; k++) {
        struct gmt_block_site *s = site_of(P, P->live[k].stack);
        if (!s)
            return -ENOMEM;
        s->live_at_end += P->live[k].size;
        s->count_at_end++;
        if (add_kept(P, &P->live[k]))
            return -ENOMEM;
    }
    return 0;
}

/* One walk over the blocks in time order. peak_at[d]: the index of device slot d's
 * allocated peak (from the first walk), or NULL on the first walk itself. */
static int walk(struct pass *P, const struct gmt_block_note *const *v, size_t n,
                const size_t *peak_at, int64_t *total_after)
{
    struct gmt_blocks *B = P->B;
    uint64_t t0 = n ? v[0]->time : 0, span = n ? v[n - 1]->time - t0 : 0;
    uint64_t last_step_end = P->st.n ? P->st.e[P->st.n - 1] : 0;
    /* unsigned: a corrupt trace's sums wrap instead of overflowing */
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const struct gmt_block_note *b = v[i];
        struct gmt_block_dev *d = dev_of(B, b->device);
        if (!d)
            continue;
        if (!peak_at) {
            note_figures(d, b, t0, span);
            continue;
        }
        int r = 0;
        if (b->op == GMT_BLOCK_ALLOC)
            r = live_alloc(P, b, &total);
        else if (b->op == GMT_BLOCK_FREE)
            r = live_free(P, b, last_step_end, &total);
        else if (b->op == GMT_BLOCK_OOM)
            r = oom_row(P, b);
        if (r)
            return r;
        total_after[i] = (int64_t)total;
        size_t slot = (size_t)(d - B->dev);
        if (peak_at[slot] == i && peak_picture(P, d))
            return -ENOMEM;
    }
    return sites_at_end(P);
}

/* The total allocated bytes after the last block at or before time (0 before the first). */
static int64_t total_at(const struct gmt_block_note *const *v, const int64_t *total, size_t n,
                        uint64_t time)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v[mid]->time <= time)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? total[lo - 1] : 0;
}

static void step_rule(struct pass *P, const struct gmt_block_note *const *v, const int64_t *total,
                      size_t n)
{
    struct gmt_blocks *B = P->B;
    B->steps = P->st.n;
    for (size_t i = 0; i < P->st.n; i++) {
        int64_t g = (int64_t)((uint64_t)total_at(v, total, n, P->st.e[i]) -
                              (uint64_t)total_at(v, total, n, P->st.b[i]));
        if (i == 0) {
            B->first_step_growth = g;
            continue;
        }
        B->later_growth = (int64_t)((uint64_t)B->later_growth + (uint64_t)g);
        if (i == 1 || g < B->later_min)
            B->later_min = g;
    }
    B->grows_every_step = P->st.n >= 3 && B->later_min > 0;
    if (!B->grows_every_step)
        return;
    B->growth_per_step = B->later_growth / (int64_t)(B->steps - 1);
    for (size_t i = 0; i < P->kept.cap; i++)
        if (P->kept.state && P->kept.state[i] == 1 &&
            (P->kept.vals[i] > B->grow_stack_bytes ||
             (P->kept.vals[i] == B->grow_stack_bytes && P->kept.keys[i] < B->grow_stack))) {
            B->grow_stack = (uint32_t)P->kept.keys[i];
            B->grow_stack_bytes = P->kept.vals[i];
        }
}

/* What the cache holds free: at each device's end, at each OOM, in each OOM's segments. */
static void caches(struct gmt_blocks *B)
{
    for (size_t i = 0; i < B->n_dev; i++) {
        struct gmt_block_dev *d = &B->dev[i];
        d->cache_end = d->reserved_end > d->allocated_end ? d->reserved_end - d->allocated_end : 0;
    }
    for (size_t i = 0; i < B->n_ooms; i++) {
        struct gmt_block_oom *o = &B->ooms[i];
        o->cache = o->reserved > o->allocated ? o->reserved - o->allocated : 0;
        for (size_t k = 0; k < o->n_seg; k++)
            o->seg[k].free = o->seg[k].size - o->seg[k].live;
    }
}

int gmt_blocks_compute(const struct gmt_trace *t, const struct gmt_phases *p, int device,
                       struct gmt_blocks *B)
{
    memset(B, 0, sizeof *B);
    if (!t->n_blocks) {
        B->mode = mode_without_events(t);
        return 0;
    }
    B->mode = GMT_BLOCKS_EVENTS;
    struct pass P = {.t = t, .B = B, .device = device};
    gmt_u64map_init(&P.live_at);
    gmt_u64map_init(&P.site_of);
    gmt_u64map_init(&P.kept);
    const struct gmt_block_note **v = malloc(t->n_blocks * sizeof *v);
    int64_t *total = malloc(t->n_blocks * sizeof *total);
    size_t *peak_at = NULL;
    int rc = -ENOMEM;
    if (!v || !total)
        goto out;
    size_t n = 0;
    bool oom = false;
    for (size_t i = 0; i < t->n_blocks; i++)
        if (device < 0 || t->blocks[i].device == device) {
            v[n++] = &t->blocks[i];
            oom |= t->blocks[i].op == GMT_BLOCK_OOM;
        }
    gmt_sort(v, n, sizeof *v, cmp_note);
    if (collect_steps(p, &P.st) || (oom && load_segments(t, &P.segs)))
        goto out;
    if (walk(&P, v, n, NULL, total))
        goto out;
    peak_at = malloc(sizeof B->dev / sizeof B->dev[0] * sizeof *peak_at);
    if (!peak_at)
        goto out;
    for (size_t d = 0; d < sizeof B->dev / sizeof B->dev[0]; d++)
        peak_at[d] = SIZE_MAX;
    for (size_t i = 0; i < n; i++)
        for (size_t d = 0; d < B->n_dev; d++)
            if (B->dev[d].device == v[i]->device && peak_at[d] == SIZE_MAX &&
                v[i]->time == B->dev[d].allocated_peak_time &&
                v[i]->allocated == B->dev[d].allocated_peak)
                peak_at[d] = i;
    if (walk(&P, v, n, peak_at, total))
        goto out;
    step_rule(&P, v, total, n);
    gmt_sort(B->sites, B->n_sites, sizeof *B->sites, cmp_site);
    caches(B);
    rc = 0;
out:
    free(v);
    free(total);
    free(peak_at);
    free(P.live);
    free(P.segs.v);
    free(P.st.b);
    free(P.st.e);
    gmt_u64map_free(&P.live_at);
    gmt_u64map_free(&P.site_of);
    gmt_u64map_free(&P.kept);
    if (rc)
        gmt_blocks_free(B);
    return rc;
}

int gmt_blocks_each(const struct gmt_trace *t, int device,
                    int (*fn)(void *ctx, const struct gmt_block_note *b), void *ctx)
{
    const struct gmt_block_note **v = malloc((t->n_blocks ? t->n_blocks : 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < t->n_blocks; i++)
        if (device < 0 || t->blocks[i].device == device)
            v[n++] = &t->blocks[i];
    gmt_sort(v, n, sizeof *v, cmp_note);
    int r = 0;
    for (size_t i = 0; i < n && !r; i++)
        r = fn(ctx, v[i]);
    free(v);
    return r;
}

void gmt_blocks_free(struct gmt_blocks *B)
{
    for (size_t d = 0; d < B->n_dev; d++) {
        free(B->dev[d].at_peak);
        B->dev[d].at_peak = NULL;
        B->dev[d].n_at_peak = 0;
    }
    free(B->sites);
    free(B->ooms);
    B->sites = NULL;
    B->ooms = NULL;
    B->n_sites = B->n_ooms = 0;
}
