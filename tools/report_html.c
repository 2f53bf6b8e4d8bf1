/* report_html.c: `gpumemtrace report`'s page: each trace's device memory over time (export walk, counters downsampled), NCCL spans, failures, sites and the job's spread, as JSON inside one offline HTML file. */
#include "report_html.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "export.h"
#include "holders.h"
#include "job.h"
#include "jobs.h"
#include "idnames.h"
#include "reader.h"
#include "render_explain.h"
#include "render_job.h"
#include "sites.h"
#include "stacks.h"
#include "tracks.h"
#include "u64map.h"
#include "util.h"

/* A counter track's points as the engine decides them (tracks.h): time (ns from the
 * trace's start), value pairs. */
struct points {
    uint64_t *tv;
    size_t n, cap;
};

struct page {
    const struct gmt_analysis *a;
    struct gmt_tracks tk;      /* the counters and the bytes by stack (tracks.h) */
    struct points pts[GMT_MAX_DEVS][GMT_TR_PER_DEV];
    bool oom;
};

static void point(void *ctx, int ds, int k, uint64_t t, uint64_t v)
{
    struct page *P = ctx;
    struct points *x = &P->pts[ds][k];
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
    struct page *P = ctx;
    int r = gmt_tracks_done(&P->tk, l, freed_at);
    return r ? r : P->oom ? -ENOMEM : 0;
}

static int on_event(void *ctx, const struct gmt_timed_event *e, const struct gmt_xlive *l)
{
    struct page *P = ctx;
    int r = gmt_tracks_event(&P->tk, e, l);
    return r ? r : P->oom ? -ENOMEM : 0;
}

static void put_track(FILE *o, const struct points *x)
{
    fputc('[', o);
    for (size_t i = 0; i < x->n; i++)
        fprintf(o, "%s%" PRIu64, i ? "," : "", x->tv[i]);
    fputc(']', o);
}

static void put_name(FILE *o, const struct gmt_trace *t, const char *file)
{
    char name[512];
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    if (t->has_proc && t->proc.rank >= 0)
        snprintf(name, sizeof name, "rank %d (%s pid %" PRIu32 ")", t->proc.rank, t->host ? t->host : "?",
                 t->proc.pid);
    else
        snprintf(name, sizeof name, "%s", base);
    gmt_fput_json_string(o, name);
}


/* ------------------------------------------------------------ the icicle's frames */

#define FLAME_SITES 200   /* sites per device in the icicle, by bytes at its peak */
#define FLAME_DEPTH 64    /* frames per site, outermost first, down to the site */

/* The frames the icicles name, each once: the page refers to them by index. */
struct frames {
    char **s; size_t n, cap;
    struct gmt_u64map at;      /* hash of a frame's text (then +1 on collision) -> index */
};

static uint64_t fnv(const char *p)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *p; p++) {
        h ^= (unsigned char)*p;
        h *= 0x100000001b3ull;
    }
    return h;
}

static long frame_index(struct frames *F, const char *text)
{
    uint64_t k = fnv(text);
    for (;; k++) {
        const uint64_t *v = gmt_u64map_get(&F->at, k);
        if (!v)
            break;
        if (!strcmp(F->s[*v], text))
            return (long)*v;
    }
    char **slot = gmt_array_push((void **)&F->s, &F->n, &F->cap, sizeof *F->s);
    if (!slot)
        return -1;
    if (!(*slot = strdup(text)) || gmt_u64map_put(&F->at, k, F->n - 1)) {
        free(*slot);
        F->n--;
        return -1;
    }
    return (long)(F->n - 1);
}

static void frames_free(struct frames *F)
{
    for (size_t i = 0; i < F->n; i++)
        free(F->s[i]);
    free(F->s);
    gmt_u64map_free(&F->at);
}

/* An icicle as the members NAME_rest_bytes, NAME_sites_total and NAME:
 * [{"stack": id, "bytes": B, "frames": [index, ...]}], the sites v[0..n) (most bytes
 * first), each stack outermost frame first and ending at its site (the allocator's and
 * runtime's frames inside it left out). */
static int put_icicle(FILE *o, struct page *P, const char *name, const struct gmt_flame_site *v,
                      size_t n, struct frames *F)
{
    static char buf[131072];
    static const char *fr[512];
    uint64_t rest = 0;
    for (size_t i = FLAME_SITES; i < n; i++)
        rest += v[i].bytes;
    fprintf(o, ",\"%s_rest_bytes\":%" PRIu64 ",\"%s_sites_total\":%zu,\"%s\":[", name, rest,
            name, n, name);
    for (size_t i = 0; i < n && i < FLAME_SITES; i++) {
        size_t site = 0, nf = v[i].stack ? gmt_stack_frames(P->a, v[i].stack, buf, sizeof buf, fr, 512, &site) : 0;
        fprintf(o, "%s{\"stack\":%" PRIu32 ",\"bytes\":%" PRIu64 ",\"frames\":[", i ? "," : "", v[i].stack,
                v[i].bytes);
        if (!nf) {
            long x = frame_index(F, "(no stack)");
            if (x < 0)
                return -ENOMEM;
            fprintf(o, "%ld", x);
        }
        size_t last = nf > site + FLAME_DEPTH ? site + FLAME_DEPTH : nf; /* outermost kept */
        for (size_t k = last; k-- > site;) {
            long x = frame_index(F, fr[k]);
            if (x < 0)
                return -ENOMEM;
            fprintf(o, "%s%ld", k + 1 == last ? "" : ",", x);
        }
        fputs("]}", o);
    }
    fputc(']', o);
    return 0;
}

/* A device's icicle of device memory at its peak (tracks.h), and of PyTorch's live
 * blocks at its allocated peak (blocks.h; empty without blocks on it). */
static int put_flames(FILE *o, struct page *P, size_t ds, int device, struct frames *F)
{
    struct gmt_flame_site *v;
    size_t n;
    if (gmt_tracks_flame(&P->tk, ds, &v, &n))
        return -ENOMEM;
    int rc = put_icicle(o, P, "flame", v, n, F);
    free(v);
    const struct gmt_blocks *B = &P->a->blocks;
    const struct gmt_block_dev *bd = NULL;
    for (size_t i = 0; i < B->n_dev; i++)
        if (B->dev[i].device == device)
            bd = &B->dev[i];
    n = bd ? bd->n_at_peak : 0;
    v = malloc((n ? n : 1) * sizeof *v);
    if (rc || !v) {
        free(v);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = (struct gmt_flame_site){bd->at_peak[i].stack, bd->at_peak[i].bytes};
    rc = put_icicle(o, P, "block_flame", v, n, F);
    free(v);
    return rc;
}

/* PyTorch's allocated and reserved bytes on `device` (blocks.h's line of them), as two
 * tracks of [time, bytes, ...]; empty when the trace has no blocks there. */
static void put_blocks_line(FILE *o, const struct page *P, int device)
{
    const struct gmt_blocks *B = &P->a->blocks;
    const struct gmt_block_dev *d = NULL;
    for (size_t i = 0; i < B->n_dev; i++)
        if (B->dev[i].device == device)
            d = &B->dev[i];
    for (int k = 0; k < 2; k++) {
        fputs(k ? "],\"pytorch_reserved\":[" : ",\"pytorch_allocated\":[", o);
        for (size_t i = 0; d && i < d->n_line; i++)
            fprintf(o, "%s%" PRIu64 ",%" PRIu64, i ? "," : "",
                    d->line[i].time > P->tk.bk.t0 ? d->line[i].time - P->tk.bk.t0 : 0,
                    k ? d->line[i].reserved : d->line[i].allocated);
    }
    fputc(']', o);
}

static int put_devices(FILE *o, struct page *P, const struct gmt_report_opts *ro, struct frames *F)
{
    const struct gmt_analysis *a = P->a;
    const struct gmt_report *rep = &a->rep;
    fputs(",\"devices\":[", o);
    int first = 1;
    for (size_t d = 0; d < rep->n_dev && d < GMT_MAX_DEVS; d++) {
        const struct gmt_dev_report *r = &rep->dev[d];
        if (!gmt_report_dev_selected(ro, r->device) || !gmt_dev_shown(r))
            continue;
        fprintf(o, "%s{\"device\":%d,\"peak_bytes\":%" PRIu64 ",\"peak_time_ns\":%" PRIu64
                   ",\"end_bytes\":%" PRIu64 ",\"failures\":%" PRIu64,
                first ? "" : ",", r->device, r->peak, r->peak_time > P->tk.bk.t0 ? r->peak_time - P->tk.bk.t0 : 0,
                r->end, r->failures);
        if (r->has_used)
            fprintf(o, ",\"device_used_max_bytes\":%" PRIu64 ",\"device_total_bytes\":%" PRIu64,
                    r->used_max, r->total);
        fputs(",\"peak_by_category\":{", o);
        int fc = 1;
        for (size_t c = 0; c < a->n_cats; c++)
            if (r->peak_by_cat[c]) {
                fputs(fc ? "" : ",", o);
                gmt_fput_json_string(o, a->cat_names[c]);
                fprintf(o, ":%" PRIu64, r->peak_by_cat[c]);
                fc = 0;
            }
        fputs("},\"tracked\":", o);
        put_track(o, &P->pts[d][GMT_TR_TRACKED]);
        fputs(",\"used\":", o);
        put_track(o, &P->pts[d][GMT_TR_USED]);
        put_blocks_line(o, P, r->device);
        fputs(",\"categories\":[", o);
        fc = 1;
        for (size_t c = 0; c < a->n_cats && c < GMT_MAX_CATS; c++) {
            const struct points *x = &P->pts[d][GMT_TR_CAT0 + c];
            if (!x->n)
                continue;
            fputs(fc ? "{\"name\":" : ",{\"name\":", o);
            gmt_fput_json_string(o, a->cat_names[c]);
            fputs(",\"points\":", o);
            put_track(o, x);
            fputc('}', o);
            fc = 0;
        }
        fputc(']', o);
        if (put_flames(o, P, d, r->device, F))
            return -ENOMEM;
        fputc('}', o);
        first = 0;
    }
    fputc(']', o);
    return 0;
}

static bool is_call(uint16_t op)
{
    return op != GMT_OP_MemAlloc && op != GMT_OP_MemFree;
}

/* A lane's spans, merged per time bucket when there are too many: each span alone while
 * there are at most the limit (B == 0), else one per bucket of B over the axis, from its
 * first begin to its last end. The caller walks its spans in time order and, per span:
 * lane_closes() says whether the bucket in hand is complete (the caller writes it and
 * calls lane_written()); lane_take() adds the span, true when it opens a bucket (the
 * caller sets the bucket's own fields) and false when it joins one (the caller merges
 * them). */
struct lane {
    uint64_t B, span;        /* buckets (0: every span alone) over [0, span] ns */
    uint64_t cur, b0, b1, n; /* the bucket in hand, its extent and its spans */
    int first;               /* nothing written yet */
};

static struct lane lane_start(uint64_t count, uint64_t limit, uint64_t span)
{
    return (struct lane){ .B = count > limit ? limit : 0, .span = span, .cur = UINT64_MAX, .first = 1 };
}

static uint64_t lane_bucket(const struct lane *L, size_t i, uint64_t beg)
{
    return L->B ? (uint64_t)((unsigned __int128)beg * L->B / (L->span + 1)) : i;
}

static bool lane_closes(const struct lane *L, uint64_t bucket)
{
    return L->n && bucket != L->cur;
}

/* Writes "[b0,b1," of the bucket in hand (the caller writes the rest and the "]"). */
static void lane_open_item(FILE *o, const struct lane *L)
{
    fprintf(o, "%s[%" PRIu64 ",%" PRIu64 ",", L->first ? "" : ",", L->b0, L->b1);
}

static void lane_written(struct lane *L)
{
    L->first = 0;
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

/* NCCL calls as [begin, end, op, device, calls]: each call while there are at most
 * max_spans, else per time bucket one span from its first begin to its last end. */
static void put_spans(FILE *o, const struct page *P, long max_spans)
{
    const struct gmt_trace *t = &P->a->t;
    size_t n = 0;
    struct gmt_scope tmp;
    for (size_t i = 0; i < t->n_scopes; i++)
        n += is_call(gmt_trace_scope(t, i, &tmp)->op);
    fputs(",\"nccl\":[", o);
    struct lane L = lane_start(n, (uint64_t)max_spans, P->tk.bk.span);
    int op = -1, dev = -1;
    for (size_t i = 0; i <= t->n_scopes; i++) {
        const struct gmt_scope *s = i < t->n_scopes ? gmt_trace_scope(t, i, &tmp) : NULL;
        if (s && !is_call(s->op))
            continue;
        uint64_t beg = 0, end = 0;
        if (s)
            lane_times(s->t_begin, s->t_end, t->t_last, P->tk.bk.t0, &beg, &end);
        uint64_t bucket = s ? lane_bucket(&L, i, beg) : UINT64_MAX - 1;
        if (lane_closes(&L, bucket)) {
            lane_open_item(o, &L);
            gmt_fput_json_string(o, op >= 0 ? gmt_op_name((unsigned)op) : "several");
            fprintf(o, ",%d,%" PRIu64 "]", dev, L.n);
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
    fputc(']', o);
}

static void put_fails(FILE *o, const struct gmt_analysis *a, uint64_t t0, const struct gmt_report_opts *ro)
{
    const struct gmt_report *rep = &a->rep;
    fputs(",\"failures\":[", o);
    for (size_t i = 0; i < rep->n_fails && i < GMT_HTML_FAILS_MAX; i++) {
        const struct gmt_fail_row *f = &rep->fails[i];
        char line[8192];
        fprintf(o, "%s[%" PRIu64 ",%" PRIu64 ",%d,", i ? "," : "", f->time > t0 ? f->time - t0 : 0, f->bytes,
                f->device);
        gmt_fput_json_string(o, gmt_api_name(f->api));
        fputc(',', o);
        gmt_fput_json_string(o, f->stack ? gmt_stack_line(a, f->stack, ro->frames ? ro->frames : 4, line,
                                                          sizeof line) : "");
        fputc(']', o);
    }
    fprintf(o, "],\"failures_total\":%zu", rep->n_fails);
}

/* A site's table row, grouped as summary groups its sites (sites.h): its line at the
 * frames shown, its largest stack (its id and every frame) and the ids of all. */
static void put_site_stacks(FILE *o, const struct gmt_analysis *a, const struct gmt_site_group *g)
{
    char line[8192];
    fputs(",\"line\":", o);
    gmt_fput_json_string(o, g->line);
    fputs(",\"stack\":", o);
    gmt_fput_json_string(o, gmt_stack_full(a, g->sum.stack, 64, line, sizeof line));
    fputs(",\"stack_ids\":[", o);
    for (size_t k = 0; k < g->n_stacks; k++)
        fprintf(o, "%s%" PRIu32, k ? "," : "", g->stacks[k]);
    fputc(']', o);
}

/* As summary's leaks: sites with device memory live at the end that no cache or
 * communicator holds for reuse, the first --top. */
static void put_leaks(FILE *o, const struct gmt_analysis *a, const struct gmt_report_opts *ro)
{
    fputs(",\"leaks\":[", o);
    const struct gmt_site_groups *G = &a->sites.leaks;
    if (!G->rc) {
        for (size_t i = 0; i < G->n && (long)i < ro->top; i++) {
            const struct gmt_site_row *s = &G->g[i].sum;
            fprintf(o, "%s{\"live_at_end_bytes\":%" PRIu64 ",\"live_at_end_count\":%" PRIu64 ",\"category\":",
                    i ? "," : "", s->live_at_end, s->count_at_end);
            gmt_fput_json_string(o, a->cat_names[s->cat]);
            put_site_stacks(o, a, &G->g[i]);
            fputc('}', o);
        }
    }
    fputc(']', o);
}

/* What each collective's first call added (summary's "1st track"): one marker per row of
 * communicator, op and bytes per call, at the first call's time. */
static void put_first_calls(FILE *o, const struct gmt_analysis *a, uint64_t t0)
{
    const struct gmt_report *rep = &a->rep;
    fputs(",\"first_calls\":[", o);
    int first = 1;
    for (size_t i = 0; i < rep->n_colls; i++) {
        const struct gmt_coll_row *c = &rep->colls[i];
        fprintf(o, "%s{\"time_ns\":%" PRIu64 ",\"first_tracked_bytes\":%" PRId64 ",\"op\":", first ? "" : ",",
                c->first_time > t0 ? c->first_time - t0 : 0, c->first_tracked);
        gmt_fput_json_string(o, c->label);
        fprintf(o, ",\"comm\":%d,\"comm_rank\":%d,\"comm_size\":%d,\"device\":%d,\"bytes_per_call\":%" PRIu64
                   ",\"calls\":%" PRIu64 "}",
                gmt_trace_comm_index(&a->t, c->comm), c->rank, c->nranks, c->device, c->bytes_per_call, c->calls);
        first = 0;
    }
    fputc(']', o);
}

/* NVTX ranges as [begin, end, name, depth]: each occurrence while there are at most
 * GMT_HTML_SPANS_DEFAULT of depth < 3, else the outermost only; past that, one span per
 * time bucket from its first begin to its last end (name "several" when they differ). */
static void put_phases(FILE *o, const struct gmt_analysis *a, uint64_t t0, uint64_t span)
{
    const struct gmt_phases *p = &a->phases;
    fputs(",\"phases\":", o);
    if (!p->n_spans) {
        fputs("null", o);
        return;
    }
    uint32_t maxd = 2;
    size_t n = 0;
    for (size_t i = 0; i < p->n_spans; i++)
        n += p->spans[i].depth <= maxd;
    if (n > GMT_HTML_SPANS_DEFAULT) {
        maxd = 0;
        n = 0;
        for (size_t i = 0; i < p->n_spans; i++)
            n += p->spans[i].depth == 0;
    }
    fprintf(o, "{\"occurrences\":%zu,\"spans\":[", p->n_spans);
    struct lane L = lane_start(n, GMT_HTML_SPANS_DEFAULT, span);
    const char *name = NULL;
    uint32_t depth = 0;
    for (size_t i = 0; i <= p->n_spans; i++) {
        const struct gmt_phase_span *s = i < p->n_spans ? &p->spans[i] : NULL;
        if (s && s->depth > maxd)
            continue;
        uint64_t beg = 0, end = 0;
        if (s)
            lane_times(s->t_begin, s->t_end, t0 + span, t0, &beg, &end);
        uint64_t bucket = s ? lane_bucket(&L, i, beg) : UINT64_MAX - 1;
        if (lane_closes(&L, bucket)) {
            lane_open_item(o, &L);
            gmt_fput_json_string(o, name ? name : "several");
            fprintf(o, ",%" PRIu32 ",%" PRIu64 "]", depth, L.n);
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
    fputs("]}", o);
}

/* explain --json's object of this trace where it has NCCL memory, else null. */
static int put_explain(FILE *o, const struct gmt_analysis *a)
{
    fputs(",\"explain\":", o);
    if (a->nccl_rc)
        return -ENOMEM;
    if (a->nccl.n_c)
        gmt_render_explain_json(o, a, NULL, true);
    else
        fputs("null", o);
    return 0;
}

/* As summary --json selects and groups them: sites that allocated, the first --top;
 * stack_id is the largest stack's, the one the icicles name. */
static void put_sites(FILE *o, const struct gmt_analysis *a, const struct gmt_report_opts *ro)
{
    fputs(",\"sites\":[", o);
    const struct gmt_site_groups *G = &a->sites.all;
    if (!G->rc) {
        for (size_t i = 0; i < G->n && (long)i < ro->top; i++) {
            const struct gmt_site_row *s = &G->g[i].sum;
            fputs(i ? ",{\"category\":" : "{\"category\":", o);
            gmt_fput_json_string(o, a->cat_names[s->cat]);
            fprintf(o, ",\"stack_id\":%" PRIu32 ",\"live_at_peak_bytes\":%" PRIu64 ",\"live_at_end_bytes\":%" PRIu64
                       ",\"allocs\":%" PRIu64, s->stack, s->live_at_peak, s->live_at_end, s->allocs);
            put_site_stacks(o, a, &G->g[i]);
            fputc('}', o);
        }
    }
    fputc(']', o);
}

static int put_trace(FILE *o, struct page *P, const char *file, const struct gmt_report_opts *ro,
                     long max_points)
{
    const struct gmt_analysis *a = P->a;
    const struct gmt_trace *t = &a->t;
    if (gmt_tracks_init(&P->tk, a, max_points, true, point, P))
        return -ENOMEM;
    const struct gmt_xwalk_ops ops = {.alloc_done = on_done, .event = on_event, .ctx = P};
    int r = gmt_export_walk(a, &ops);
    if (r)
        return r;
    gmt_tracks_end(&P->tk);
    if (P->oom)
        return -ENOMEM;
    fputs("{\"file\":", o);
    gmt_fput_json_string(o, file);
    fputs(",\"name\":", o);
    put_name(o, t, file);
    fprintf(o, ",\"rank\":%d,\"span_ns\":%" PRIu64 ",\"complete\":%s", t->has_proc ? t->proc.rank : -1, P->tk.bk.span,
            t->complete ? "true" : "false");
    struct frames F = {0};
    gmt_u64map_init(&F.at);
    r = put_devices(o, P, ro, &F);
    fputs(",\"frames\":[", o);
    for (size_t i = 0; i < F.n; i++) {
        fputs(i ? "," : "", o);
        gmt_fput_json_string(o, F.s[i]);
    }
    fputc(']', o);
    frames_free(&F);
    if (r)
        return r;
    put_spans(o, P, GMT_HTML_SPANS_DEFAULT);
    put_first_calls(o, a, P->tk.bk.t0);
    put_phases(o, a, P->tk.bk.t0, P->tk.bk.span);
    put_fails(o, a, P->tk.bk.t0, ro);
    put_sites(o, a, ro);
    put_leaks(o, a, ro);
    if ((r = put_explain(o, a)))
        return r;
    fputc('}', o);
    return ferror(o) ? -EIO : 0;
}

static void page_reset(struct page *P)
{
    for (size_t d = 0; d < GMT_MAX_DEVS; d++)
        for (size_t k = 0; k < GMT_TR_PER_DEV; k++)
            free(P->pts[d][k].tv);
    gmt_tracks_free(&P->tk);
    memset(P, 0, sizeof *P);
}

/* The job's ranks, one row each as the job's spread counts them (job.c): rank, host,
 * peak, NCCL bytes at the peaks, untracked bytes, failed allocations, and its group of
 * ranks alike (job.c's grouping): "alike" its ranks, "drawn" false for all but the
 * group's representative, whose section the page draws for the group. */
static void put_ranks(FILE *o, const struct gmt_job *j, bool every_rank)
{
    fputs("\"ranks\":", o);
    if (!j) {
        fputs("null,", o);
        return;
    }
    fputc('[', o);
    for (size_t i = 0; i < j->n; i++) {
        const struct gmt_job_rank *r = &j->r[i];
        fprintf(o, "%s{\"rank\":%" PRId32 ",\"file\":", i ? "," : "", r->rank);
        gmt_fput_json_string(o, r->path);
        fputs(",\"host\":", o);
        if (r->host)
            gmt_fput_json_string(o, r->host);
        else
            fputs("null", o);
        fprintf(o, ",\"peak_bytes\":%" PRIu64 ",\"nccl_bytes\":%" PRIu64 ",\"untracked_bytes\":", r->peak,
                r->nccl);
        if (r->has_used)
            fprintf(o, "%" PRIu64, r->untracked);
        else
            fputs("null", o);
        char ranks[512];
        size_t cnt = 0, rep = i;
        gmt_job_group_ranks(j, r->group, ranks, sizeof ranks, &cnt, &rep);
        fprintf(o, ",\"failures\":%" PRIu64 ",\"stands_out\":%s,\"alike\":", r->fails,
                r->stands_out ? "true" : "false");
        gmt_fput_json_string(o, ranks);
        fprintf(o, ",\"alike_count\":%zu,\"drawn\":%s}", cnt, every_rank || cnt < 2 || rep == i ? "true" : "false");
    }
    fputs("],", o);
}

/* The data into the page: '<' only ever stands inside a JSON string, where \u003c reads
 * the same, so nothing in it can close the script element. */
static void put_escaped(FILE *f, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '<')
            fputs("\\u003c", f);
        else
            fputc(s[i], f);
    }
}

/* What the page gathers of each trace as the driver hands it over: its part of the
 * data (m), the job, and each trace's anchor for the one time axis. */
struct gather {
    FILE *m;
    struct page *P;
    const struct gmt_report_opts *ro;
    long max_points;
    size_t n, written;
    struct gmt_job j;
    bool *ok;
    struct anchor { uint64_t real, mono, first; bool has; } *anch;
    uint64_t base;
    bool every_rank;           /* draw ranks alike each, not once */
};

static int report_one(void *ctx, size_t i, const struct gmt_analysis *a, FILE *out, char *err,
                      size_t errlen)
{
    struct gather *G = ctx;
    page_reset(G->P);
    G->P->a = a;
    if (G->written)
        fputc(',', G->m);
    int r = put_trace(G->m, G->P, a->t.path, G->ro, G->max_points);
    if (!r && G->n > 1)
        r = gmt_job_add(&G->j, a);
    G->ok[i] = true;
    G->anch[i] = (struct anchor){a->t.proc.realtime_ns, a->t.proc.monotonic_ns, a->t.t_first,
                                 a->t.has_proc};
    if (a->t.has_proc && a->t.proc.realtime_ns < G->base)
        G->base = a->t.proc.realtime_ns;
    G->written++;
    return r;
}

/* The page's data ahead of the traces': the job, the ranks, the purposes' names and each
 * trace's start on the one time axis (ns from the job's earliest anchor). */
static void put_head(FILE *h, const struct gather *G)
{
    const struct gmt_job *j = G->n > 1 ? &G->j : NULL;
    fprintf(h, "{\"schema\":\"gpumemtrace.report/1\",\"max_points\":%ld,", G->max_points);
    gmt_render_job_json(h, j);
    put_ranks(h, j, G->every_rank);
    fputs("\"purposes\":{", h);
    for (int k = 0; k < GMT_NCCL_NPURPOSES; k++) {
        fputs(k ? "," : "", h);
        gmt_fput_json_string(h, gmt_nccl_purpose_key(k));
        fputc(':', h);
        gmt_fput_json_string(h, gmt_nccl_purpose_text(k));
    }
    fputs("},", h);
    fputs("\"start_ns\":[", h);
    size_t k = 0;
    for (size_t i = 0; i < G->n; i++) {
        const struct anchor *x = &G->anch[i];
        int64_t start = 0;
        if (G->ok[i] && x->has && G->base != UINT64_MAX)
            start = (int64_t)(x->real - G->base) + (int64_t)x->first - (int64_t)x->mono;
        if (G->ok[i])
            fprintf(h, "%s%" PRId64, k++ ? "," : "", start);
    }
    fputs("],\"traces\":[", h);
}

/* The page into out: the template around the data (the head, then the traces' parts in
 * buf). GMT_EXIT_OK, or GMT_EXIT_ERROR after saying why. */
static int write_page(const char *out, const struct gather *G, const char *buf, size_t len)
{
    FILE *f = fopen(out, "w");
    if (!f) {
        gmt_err("gpumemtrace: report: cannot create %s: %s", out, strerror(errno));
        return GMT_EXIT_ERROR;
    }
    const char *mark = strstr(gmt_report_page, "<!--GMT-DATA-->");
    size_t pre = mark ? (size_t)(mark - gmt_report_page) : strlen(gmt_report_page);
    fwrite(gmt_report_page, 1, pre, f);
    fputs("<script type=\"application/json\" id=\"gmt-data\">", f);
    char *jb = NULL;
    size_t jl = 0;
    FILE *h = open_memstream(&jb, &jl);
    if (h) {
        put_head(h, G);
        fclose(h);
        put_escaped(f, jb, jl);
    }
    free(jb);
    put_escaped(f, buf, len);
    fputs("]}</script>\n", f);
    if (mark)
        fputs(mark + strlen("<!--GMT-DATA-->"), f);
    if (!h || ferror(f) | fclose(f)) {
        gmt_err("gpumemtrace: report: cannot write %s", out);
        return GMT_EXIT_ERROR;
    }
    return GMT_EXIT_OK;
}

int gmt_report_html(char *const *files, size_t n, const struct gmt_report_opts *ro,
                    const char *out, long max_points, bool every_rank)
{
    char *buf = NULL;
    size_t len = 0;
    struct gather G = {.m = open_memstream(&buf, &len), .P = calloc(1, sizeof *G.P), .ro = ro,
                       .max_points = max_points, .n = n, .ok = calloc(n ? n : 1, sizeof *G.ok),
                       .anch = calloc(n ? n : 1, sizeof *G.anch), .base = UINT64_MAX,
                       .every_rank = every_rank};
    gmt_job_init(&G.j);
    int status = GMT_EXIT_OK, r = 0;
    struct gmt_jobs_result res = {0};
    if (!G.m || !G.P || !G.ok || !G.anch) {
        r = -ENOMEM;
    } else {
        const struct gmt_jobs J = {.files = files, .n = n, .ro = ro, .trace = report_one, .ctx = &G};
        r = gmt_jobs_run(&J, &res);
    }
    if (res.skipped)
        status = GMT_EXIT_ERROR;
    if (!r && n > 1 && G.written)
        r = gmt_job_finish(&G.j);
    if (G.m && fclose(G.m))
        r = r ? r : -ENOMEM;
    if (r || !G.written) {
        if (r)
            gmt_err("gpumemtrace: report: out of memory");
        else if (status == GMT_EXIT_OK)
            gmt_err("gpumemtrace: report: no trace found");
        status = GMT_EXIT_ERROR;
    } else if (write_page(out, &G, buf, len)) {
        status = GMT_EXIT_ERROR;
    }
    free(buf);
    if (G.P)
        page_reset(G.P);
    free(G.P);
    free(G.ok);
    free(G.anch);
    gmt_job_free(&G.j);
    return status;
}
