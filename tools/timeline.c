/* timeline.c: a trace's device memory over time as `gpumemtrace report` draws it: the export walk into downsampled tracks and icicles, NCCL calls and NVTX ranges on lanes merged per time bucket. */
#include "timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* What the walk fills as it goes. */
struct build {
    struct gmt_timeline *tl;
    struct gmt_tracks tk;      /* the counters and the bytes by stack (tracks.h) */
    bool oom;
};

static void point(void *ctx, int ds, int k, uint64_t t, uint64_t v)
{
    struct build *P = ctx;
    struct gmt_points *x = &P->tl->pts[ds][k];
    if (x->n + 2 > x->cap) {
        size_t c = x->cap ? x->cap * 2 : 64;
        uint64_t *q = realloc(x->tv, c * sizeof *q);
        if (!q) {
            P->oom = true;
            return;
        }
        x->tv = q;
        x->cap = c;
    }
    x->tv[x->n++] = t > P->tk.bk.t0 ? t - P->tk.bk.t0 : 0;
    x->tv[x->n++] = v;
}

static int on_done(void *ctx, const struct gmt_xlive *l, uint64_t freed_at)
{
    struct build *P = ctx;
    int r = gmt_tracks_done(&P->tk, l, freed_at);
    return r ? r : P->oom ? -ENOMEM : 0;
}

static int on_event(void *ctx, const struct gmt_timed_event *e, const struct gmt_xlive *l)
{
    struct build *P = ctx;
    int r = gmt_tracks_event(&P->tk, e, l);
    return r ? r : P->oom ? -ENOMEM : 0;
}

/* ------------------------------------------------------------ the icicles */

static void icicle_rest(struct gmt_icicle *c)
{
    c->rest = 0;
    for (size_t i = GMT_FLAME_SITES; i < c->n; i++)
        c->rest += c->v[i].bytes;
}

/* Each device's icicle of device memory at its peak (tracks.h), and of PyTorch's live
 * blocks at its allocated peak (blocks.h; empty without blocks on it). */
static int flames(const struct gmt_analysis *a, const struct gmt_tracks *tk, struct gmt_timeline *tl)
{
    const struct gmt_blocks *B = &a->blocks;
    for (size_t d = 0; d < a->rep.n_dev && d < GMT_MAX_DEVS; d++) {
        struct gmt_icicle *f = &tl->flame[d], *b = &tl->block_flame[d];
        if (gmt_tracks_flame(tk, d, &f->v, &f->n))
            return -ENOMEM;
        icicle_rest(f);
        const struct gmt_block_dev *bd = NULL;
        for (size_t i = 0; i < B->n_dev; i++)
            if (B->dev[i].device == a->rep.dev[d].device)
                bd = &B->dev[i];
        b->n = bd ? bd->n_at_peak : 0;
        if (!(b->v = malloc((b->n ? b->n : 1) * sizeof *b->v)))
            return -ENOMEM;
        for (size_t i = 0; i < b->n; i++)
            b->v[i] = (struct gmt_flame_site){bd->at_peak[i].stack, bd->at_peak[i].bytes};
        icicle_rest(b);
    }
    return 0;
}

/* ------------------------------------------------------------ the lanes */

static bool is_call(uint16_t op)
{
    return op != GMT_OP_MemAlloc && op != GMT_OP_MemFree;
}

/* A lane's spans, merged per time bucket when there are too many: each span alone while
 * there are at most the limit (B == 0), else one per bucket of B over the axis, from its
 * first begin to its last end. The caller walks its spans in time order and, per span:
 * lane_closes() says whether the bucket in hand is complete (the caller keeps it and
 * calls lane_written()); lane_take() adds the span, true when it opens a bucket (the
 * caller sets the bucket's own fields) and false when it joins one (the caller merges
 * them). */
struct lane {
    uint64_t B, span;        /* buckets (0: every span alone) over [0, span] ns */
    uint64_t cur, b0, b1, n; /* the bucket in hand, its extent and its spans */
};

static struct lane lane_start(uint64_t count, uint64_t limit, uint64_t span)
{
    return (struct lane){ .B = count > limit ? limit : 0, .span = span, .cur = UINT64_MAX };
}

static uint64_t lane_bucket(const struct lane *L, size_t i, uint64_t beg)
{
    return L->B ? (uint64_t)((unsigned __int128)beg * L->B / (L->span + 1)) : i;
}

static bool lane_closes(const struct lane *L, uint64_t bucket)
{
    return L->n && bucket != L->cur;
}

/* The bucket in hand as an item of the lane: its extent and count (the caller sets the
 * rest). NULL: out of memory. */
static struct gmt_lane_item *lane_keep(const struct lane *L, struct gmt_lane_item **v, size_t *n,
                                       size_t *cap)
{
    struct gmt_lane_item *x = gmt_array_push((void **)v, n, cap, sizeof *x);
    if (x)
        *x = (struct gmt_lane_item){.b0 = L->b0, .b1 = L->b1, .n = L->n, .op = -1, .device = -1};
    return x;
}

static void lane_written(struct lane *L)
{
    L->n = 0;
}

static bool lane_take(struct lane *L, uint64_t bucket, uint64_t beg, uint64_t end)
{
    bool opens = !L->n;
    if (opens) {
        L->cur = bucket;
        L->b0 = beg;
        L->b1 = end;
    } else {
        if (beg < L->b0)
            L->b0 = beg;
        if (end > L->b1)
            L->b1 = end;
    }
    L->n++;
    return opens;
}

/* A span's [begin, end) on the axis that starts at t0 (an open one ends at t_last). */
static void lane_times(uint64_t t_begin, uint64_t t_end, uint64_t t_last, uint64_t t0,
                       uint64_t *beg, uint64_t *end)
{
    uint64_t te = t_end ? t_end : t_last;
    *beg = t_begin > t0 ? t_begin - t0 : 0;
    *end = te > t0 ? te - t0 : 0;
    if (*end < *beg)
        *end = *beg;
}

/* NCCL calls: each call while there are at most GMT_LANE_SPANS, else per time bucket one
 * span from its first begin to its last end. */
static int nccl_lane(const struct gmt_trace *t, struct gmt_timeline *tl)
{
    size_t n = 0;
    struct gmt_scope tmp;
    for (size_t i = 0; i < t->n_scopes; i++)
        n += is_call(gmt_trace_scope(t, i, &tmp)->op);
    struct lane L = lane_start(n, GMT_LANE_SPANS, tl->span);
    int op = -1, dev = -1;
    for (size_t i = 0; i <= t->n_scopes; i++) {
        const struct gmt_scope *s = i < t->n_scopes ? gmt_trace_scope(t, i, &tmp) : NULL;
        if (s && !is_call(s->op))
            continue;
        uint64_t beg = 0, end = 0;
        if (s)
            lane_times(s->t_begin, s->t_end, t->t_last, tl->t0, &beg, &end);
        uint64_t bucket = s ? lane_bucket(&L, i, beg) : UINT64_MAX - 1;
        if (lane_closes(&L, bucket)) {
            struct gmt_lane_item *x = lane_keep(&L, &tl->nccl, &tl->n_nccl, &tl->cap_nccl);
            if (!x)
                return -ENOMEM;
            x->op = op;
            x->device = dev;
            lane_written(&L);
        }
        if (!s)
            break;
        if (lane_take(&L, bucket, beg, end)) {
            op = s->op;
            dev = s->device;
        } else {
            if (op != s->op)
                op = -1;
            if (dev != s->device) /* calls of several devices: on every chart */
                dev = -1;
        }
    }
    return 0;
}

/* NVTX ranges: each occurrence while there are at most GMT_LANE_SPANS of depth < 3, else
 * the outermost only; past that, one span per time bucket from its first begin to its
 * last end (name NULL when they differ). */
static int phases_lane(const struct gmt_phases *p, struct gmt_timeline *tl)
{
    uint32_t maxd = 2;
    size_t n = 0;
    for (size_t i = 0; i < p->n_spans; i++)
        n += p->spans[i].depth <= maxd;
    if (n > GMT_LANE_SPANS) {
        maxd = 0;
        n = 0;
        for (size_t i = 0; i < p->n_spans; i++)
            n += p->spans[i].depth == 0;
    }
    struct lane L = lane_start(n, GMT_LANE_SPANS, tl->span);
    const char *name = NULL;
    uint32_t depth = 0;
    for (size_t i = 0; p->n_spans && i <= p->n_spans; i++) {
        const struct gmt_phase_span *s = i < p->n_spans ? &p->spans[i] : NULL;
        if (s && s->depth > maxd)
            continue;
        uint64_t beg = 0, end = 0;
        if (s)
            lane_times(s->t_begin, s->t_end, tl->t0 + tl->span, tl->t0, &beg, &end);
        uint64_t bucket = s ? lane_bucket(&L, i, beg) : UINT64_MAX - 1;
        if (lane_closes(&L, bucket)) {
            struct gmt_lane_item *x = lane_keep(&L, &tl->phases, &tl->n_phases, &tl->cap_phases);
            if (!x)
                return -ENOMEM;
            x->name = name;
            x->depth = depth;
            lane_written(&L);
        }
        if (!s)
            break;
        if (lane_take(&L, bucket, beg, end)) {
            name = s->name;
            depth = s->depth;
        } else if (name && strcmp(name, s->name)) {
            name = NULL;
        }
    }
    return 0;
}

int gmt_timeline_build(const struct gmt_analysis *a, long max_points, struct gmt_timeline **out)
{
    struct build P = {.tl = calloc(1, sizeof *P.tl)};
    *out = NULL;
    if (!P.tl)
        return -ENOMEM;
    int r = gmt_tracks_init(&P.tk, a, max_points, true, point, &P);
    if (!r) {
        const struct gmt_xwalk_ops ops = {.alloc_done = on_done, .event = on_event, .ctx = &P};
        r = gmt_export_walk(a, &ops);
    }
    if (!r) {
        gmt_tracks_end(&P.tk);
        r = P.oom ? -ENOMEM : 0;
    }
    P.tl->t0 = P.tk.bk.t0;
    P.tl->span = P.tk.bk.span;
    if (!r)
        r = flames(a, &P.tk, P.tl);
    if (!r)
        r = nccl_lane(&a->t, P.tl);
    if (!r)
        r = phases_lane(&a->phases, P.tl);
    gmt_tracks_free(&P.tk);
    if (r) {
        gmt_timeline_free(P.tl);
        return r;
    }
    *out = P.tl;
    return 0;
}

void gmt_timeline_free(struct gmt_timeline *tl)
{
    if (!tl)
        return;
    for (size_t d = 0; d < GMT_MAX_DEVS; d++) {
        for (size_t k = 0; k < GMT_TR_PER_DEV; k++)
            free(tl->pts[d][k].tv);
        free(tl->flame[d].v);
        free(tl->block_flame[d].v);
    }
    free(tl->nccl);
    free(tl->phases);
    free(tl);
}
