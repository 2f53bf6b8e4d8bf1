/* report_html.c: `gpumemtrace report`'s page: each trace's device memory over time (its timeline, timeline.h), NCCL spans, failures, sites and the job's spread, as JSON inside one offline HTML file. */
#include "report_html.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "job.h"
#include "jobs.h"
#include "idnames.h"
#include "reader.h"
#include "render_explain.h"
#include "render_job.h"
#include "sites.h"
#include "stacks.h"
#include "timeline.h"
#include "u64map.h"
#include "util.h"

struct page {
    const struct gmt_analysis *a;
    const struct gmt_timeline *tl; /* its tracks, icicles and lanes (timeline.h) */
};

static void put_track(FILE *o, const struct gmt_points *x)
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
 * [{"stack": id, "bytes": B, "frames": [index, ...]}], its first GMT_FLAME_SITES sites
 * (most bytes first), each stack outermost frame first and ending at its site (the
 * allocator's and runtime's frames inside it left out). */
static int put_icicle(FILE *o, struct page *P, const char *name, const struct gmt_icicle *c,
                      struct frames *F)
{
    static char buf[131072];
    static const char *fr[512];
    const struct gmt_flame_site *v = c->v;
    size_t n = c->n;
    fprintf(o, ",\"%s_rest_bytes\":%" PRIu64 ",\"%s_sites_total\":%zu,\"%s\":[", name, c->rest,
            name, n, name);
    for (size_t i = 0; i < n && i < GMT_FLAME_SITES; i++) {
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
                    d->line[i].time > P->tl->t0 ? d->line[i].time - P->tl->t0 : 0,
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
                first ? "" : ",", r->device, r->peak, r->peak_time > P->tl->t0 ? r->peak_time - P->tl->t0 : 0,
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
        put_track(o, &P->tl->pts[d][GMT_TR_TRACKED]);
        fputs(",\"used\":", o);
        put_track(o, &P->tl->pts[d][GMT_TR_USED]);
        put_blocks_line(o, P, r->device);
        fputs(",\"categories\":[", o);
        fc = 1;
        for (size_t c = 0; c < a->n_cats && c < GMT_MAX_CATS; c++) {
            const struct gmt_points *x = &P->tl->pts[d][GMT_TR_CAT0 + c];
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
        if (put_icicle(o, P, "flame", &P->tl->flame[d], F) ||
            put_icicle(o, P, "block_flame", &P->tl->block_flame[d], F))
            return -ENOMEM;
        fputc('}', o);
        first = 0;
    }
    fputc(']', o);
    return 0;
}

/* NCCL calls as [begin, end, op, device, calls]: each call, or per time bucket one span
 * from its first begin to its last end (timeline.h). */
static void put_spans(FILE *o, const struct page *P)
{
    fputs(",\"nccl\":[", o);
    for (size_t i = 0; i < P->tl->n_nccl; i++) {
        const struct gmt_lane_item *x = &P->tl->nccl[i];
        fprintf(o, "%s[%" PRIu64 ",%" PRIu64 ",", i ? "," : "", x->b0, x->b1);
        gmt_fput_json_string(o, x->op >= 0 ? gmt_op_name((unsigned)x->op) : "several");
        fprintf(o, ",%d,%" PRIu64 "]", x->device, x->n);
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

/* NVTX ranges as [begin, end, name, depth, ranges]: each occurrence, or per time bucket
 * one span from its first begin to its last end, name "several" when they differ
 * (timeline.h). */
static void put_phases(FILE *o, const struct page *P)
{
    const struct gmt_phases *p = &P->a->phases;
    fputs(",\"phases\":", o);
    if (!p->n_spans) {
        fputs("null", o);
        return;
    }
    fprintf(o, "{\"occurrences\":%zu,\"spans\":[", p->n_spans);
    for (size_t i = 0; i < P->tl->n_phases; i++) {
        const struct gmt_lane_item *x = &P->tl->phases[i];
        fprintf(o, "%s[%" PRIu64 ",%" PRIu64 ",", i ? "," : "", x->b0, x->b1);
        gmt_fput_json_string(o, x->name ? x->name : "several");
        fprintf(o, ",%" PRIu32 ",%" PRIu64 "]", x->depth, x->n);
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

static int put_trace(FILE *o, const struct gmt_analysis *a, const char *file,
                     const struct gmt_report_opts *ro)
{
    const struct gmt_trace *t = &a->t;
    if (a->timeline_rc)
        return a->timeline_rc;
    struct page page = {a, a->timeline}, *P = &page;
    fputs("{\"file\":", o);
    gmt_fput_json_string(o, file);
    fputs(",\"name\":", o);
    put_name(o, t, file);
    fprintf(o, ",\"rank\":%d,\"span_ns\":%" PRIu64 ",\"complete\":%s", t->has_proc ? t->proc.rank : -1, P->tl->span,
            t->complete ? "true" : "false");
    struct frames F = {0};
    gmt_u64map_init(&F.at);
    int r = put_devices(o, P, ro, &F);
    fputs(",\"frames\":[", o);
    for (size_t i = 0; i < F.n; i++) {
        fputs(i ? "," : "", o);
        gmt_fput_json_string(o, F.s[i]);
    }
    fputc(']', o);
    frames_free(&F);
    if (r)
        return r;
    put_spans(o, P);
    put_first_calls(o, a, P->tl->t0);
    put_phases(o, P);
    put_fails(o, a, P->tl->t0, ro);
    put_sites(o, a, ro);
    put_leaks(o, a, ro);
    if ((r = put_explain(o, a)))
        return r;
    fputc('}', o);
    return ferror(o) ? -EIO : 0;
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
    if (G->written)
        fputc(',', G->m);
    int r = put_trace(G->m, a, a->t.path, G->ro);
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
    /* each trace's analysis makes its timeline, with at most max_points points a track */
    struct gmt_report_opts o = *ro;
    o.timeline = max_points;
    struct gather G = {.m = open_memstream(&buf, &len), .ro = &o,
                       .max_points = max_points, .n = n, .ok = calloc(n ? n : 1, sizeof *G.ok),
                       .anch = calloc(n ? n : 1, sizeof *G.anch), .base = UINT64_MAX,
                       .every_rank = every_rank};
    gmt_job_init(&G.j);
    int status = GMT_EXIT_OK, r = 0;
    struct gmt_jobs_result res = {0};
    if (!G.m || !G.ok || !G.anch) {
        r = -ENOMEM;
    } else {
        const struct gmt_jobs J = {.files = files, .n = n, .ro = &o, .trace = report_one, .ctx = &G};
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
    free(G.ok);
    free(G.anch);
    gmt_job_free(&G.j);
    return status;
}
