/* export_chrome.c: the job as Chrome trace events (Perfetto UI, chrome://tracing): counters of device memory, NCCL calls as slices, one process per rank. */
#include "export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "collectives.h"
#include "jobs.h"
#include "idnames.h"
#include "tracks.h"
#include "util.h"

/* Counter tracks are downsampled as they stream (export.h, struct gmt_xtrack). */

struct chrome {
    FILE *out;
    const char *path;
    bool first;                /* no event written yet */
    uint64_t base_ns;          /* the job's earliest anchor, CLOCK_REALTIME */
    uint64_t flows;
    /* the trace being written */
    const struct gmt_analysis *a;
    int64_t pid;
    int64_t shift;             /* trace time + shift = ns since base_ns */
    long max_points;
    struct gmt_tracks tk;      /* its counters (tracks.h) */
    struct gmt_group_labels *members; /* its groups' members (collectives.h) */
};

static void sep(struct chrome *C)
{
    fputs(C->first ? "\n" : ",\n", C->out);
    C->first = false;
}

/* A trace time as the viewer's microseconds since the job's start, ns exact. */
static void ts(struct chrome *C, uint64_t t)
{
    int64_t ns = (int64_t)t + C->shift;
    if (ns < 0)
        ns = 0;
    fprintf(C->out, "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
}

static void track_name(const struct chrome *C, int ds, int k, char *buf, size_t len)
{
    int dev = C->a->rep.dev[ds].device;
    if (k == GMT_TR_TRACKED)
        snprintf(buf, len, "GPU %d tracked bytes", dev);
    else if (k == GMT_TR_USED)
        snprintf(buf, len, "GPU %d device used bytes", dev);
    else {
        size_t cat = (size_t)(k - GMT_TR_CAT0);
        snprintf(buf, len, "GPU %d %s bytes", dev, cat < C->a->n_cats ? C->a->cat_names[cat] : "?");
    }
}

static void point(void *ctx, int ds, int k, uint64_t t, uint64_t v)
{
    struct chrome *C = ctx;
    char name[128];
    track_name(C, ds, k, name, sizeof name);
    sep(C);
    fprintf(C->out, "{\"ph\":\"C\",\"pid\":%" PRId64 ",\"tid\":0,\"name\":", C->pid);
    gmt_fput_json_string(C->out, name);
    fputs(",\"ts\":", C->out);
    ts(C, t);
    fprintf(C->out, ",\"args\":{\"bytes\":%" PRIu64 "}}", v);
}

static void instant(struct chrome *C, const char *name, uint32_t tid, uint64_t t)
{
    sep(C);
    fprintf(C->out, "{\"ph\":\"i\",\"s\":\"t\",\"pid\":%" PRId64 ",\"tid\":%" PRIu32 ",\"name\":",
            C->pid, tid);
    gmt_fput_json_string(C->out, name);
    fputs(",\"ts\":", C->out);
    ts(C, t);
}

static int on_done(void *ctx, const struct gmt_xlive *l, uint64_t freed_at)
{
    struct chrome *C = ctx;
    return gmt_tracks_done(&C->tk, l, freed_at);
}

/* The name of scope i, as the summary's rows name it ("Group(AllReduce)" for a group). */
static const char *call_name(const struct chrome *C, size_t i, char *buf, size_t len)
{
    struct gmt_scope tmp;
    return gmt_colls_call_name(gmt_trace_scope(&C->a->t, i, &tmp), gmt_colls_group_label(C->members, i),
                               buf, len);
}

/* A timed call is a slice from its begin to its end, with the weight its duration stands
 * for; one the library did not time (its begin unknown: a loop call it did not sample, a
 * group member written the short way) an instant at its end; one still open a slice to
 * the trace's end. */
static void call_slice(struct chrome *C, size_t i)
{
    const struct gmt_trace *t = &C->a->t;
    struct gmt_scope tmp;
    const struct gmt_scope *s = gmt_trace_scope(t, i, &tmp);
    unsigned w = gmt_scope_weight(s);
    char name[GMT_GROUP_MEMBERS + 8];
    sep(C);
    if (w || !s->t_end)
        fprintf(C->out, "{\"ph\":\"X\",\"cat\":\"nccl\",\"pid\":%" PRId64 ",\"tid\":%" PRIu32 ",\"name\":",
                C->pid, s->tid);
    else
        fprintf(C->out, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"nccl\",\"pid\":%" PRId64 ",\"tid\":%" PRIu32
                        ",\"name\":", C->pid, s->tid);
    gmt_fput_json_string(C->out, call_name(C, i, name, sizeof name));
    fputs(",\"ts\":", C->out);
    ts(C, s->t_begin);
    if (w || !s->t_end) {
        uint64_t end = s->t_end ? s->t_end : t->t_last;
        uint64_t dur = end > s->t_begin ? end - s->t_begin : 0;
        fprintf(C->out, ",\"dur\":%" PRIu64 ".%03d", dur / 1000, (int)(dur % 1000));
    }
    fprintf(C->out, ",\"args\":{\"scope\":%" PRIu32 ",\"comm\":%d,\"count\":%" PRIu64 ",\"result\":%d,"
                    "\"tracked_bytes\":%" PRId64 ",\"timed\":%s,\"weight\":%u%s}}",
            s->id, gmt_trace_comm_index(t, s->comm), s->count, s->result,
            gmt_scope_tracked(t, &C->a->rep, i), w ? "true" : "false", w,
            s->t_end ? "" : ",\"open_at_end\":true");
}

static int on_event(void *ctx, const struct gmt_timed_event *e, const struct gmt_xlive *l)
{
    struct chrome *C = ctx;
    const struct gmt_trace *t = &C->a->t;
    int r = gmt_tracks_event(&C->tk, e, l);
    if (r)
        return r;
    switch (e->type) {
    case GMT_EV_ALLOC: {
        if (!l)
            break;
        /* made on another thread for a call in flight: NCCL's proxy thread */
        struct gmt_scope tmp;
        const struct gmt_scope *s = l->scope >= 0 ? gmt_trace_scope(t, (size_t)l->scope, &tmp) : NULL;
        if (s && s->tid != l->tid) {
            uint64_t id = ++C->flows;
            instant(C, "NCCL proxy allocation", l->tid, e->time);
            char name[GMT_GROUP_MEMBERS + 8];
            fprintf(C->out, ",\"args\":{\"bytes\":%" PRIu64 ",\"kind\":\"%s\",\"memory\":\"%s\",\"api\":\"%s\","
                            "\"scope\":%" PRIu32 ",\"op\":",
                    l->bytes, gmt_kind_name(l->kind), gmt_export_memory(l->kind), gmt_api_name(l->api), s->id);
            gmt_fput_json_string(C->out, call_name(C, (size_t)l->scope, name, sizeof name));
            fprintf(C->out, ",\"stack_id\":%" PRIu32 "}}", l->stack);
            /* a flow arrow from the call to the allocation */
            sep(C);
            fprintf(C->out, "{\"ph\":\"s\",\"cat\":\"nccl\",\"name\":\"proxy allocation\",\"id\":%" PRIu64
                            ",\"pid\":%" PRId64 ",\"tid\":%" PRIu32 ",\"ts\":", id, C->pid, s->tid);
            ts(C, e->time);
            fputs("}", C->out);
            sep(C);
            fprintf(C->out, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"nccl\",\"name\":\"proxy allocation\",\"id\":%" PRIu64
                            ",\"pid\":%" PRId64 ",\"tid\":%" PRIu32 ",\"ts\":", id, C->pid, l->tid);
            ts(C, e->time);
            fputs("}", C->out);
        }
        break;
    }
    case GMT_EV_FAIL: {
        const char *en = gmt_error_name(e->api, e->error);
        instant(C, "allocation failed", e->tid, e->time);
        fprintf(C->out, ",\"args\":{\"bytes\":%" PRIu64 ",\"kind\":\"%s\",\"api\":\"%s\",\"device\":%d,"
                        "\"error\":%" PRId32 ",\"error_name\":",
                e->bytes, gmt_kind_name(e->kind), gmt_api_name(e->api), e->device, e->error);
        if (en)
            gmt_fput_json_string(C->out, en);
        else
            fputs("null", C->out);
        fprintf(C->out, ",\"stack_id\":%" PRIu32 "}}", e->stack);
        break;
    }
    case GMT_EV_SCOPE_BEGIN:
        if (e->scope < t->n_scopes)
            call_slice(C, e->scope);
        break;
    }
    return ferror(C->out) ? -EIO : 0;
}

static void meta(struct chrome *C, const char *what, uint32_t tid, const char *name)
{
    sep(C);
    fprintf(C->out, "{\"ph\":\"M\",\"pid\":%" PRId64 ",\"tid\":%" PRIu32 ",\"name\":\"%s\",\"args\":{\"name\":",
            C->pid, tid, what);
    gmt_fput_json_string(C->out, name);
    fputs("}}", C->out);
}

static void trace_meta(struct chrome *C, const char *file)
{
    const struct gmt_trace *t = &C->a->t;
    char name[512];
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    if (t->has_proc && t->proc.rank >= 0)
        snprintf(name, sizeof name, "rank %d (%s pid %" PRIu32 ")", t->proc.rank, t->host ? t->host : "?",
                 t->proc.pid);
    else if (t->has_proc)
        snprintf(name, sizeof name, "%s (%s pid %" PRIu32 ")", base, t->host ? t->host : "?", t->proc.pid);
    else
        snprintf(name, sizeof name, "%s", base);
    meta(C, "process_name", 0, name);
    sep(C);
    fprintf(C->out, "{\"ph\":\"M\",\"pid\":%" PRId64 ",\"tid\":0,\"name\":\"process_sort_index\","
                    "\"args\":{\"sort_index\":%" PRId64 "}}", C->pid, C->pid);
    for (size_t i = 0; i < t->n_threads; i++) {
        char tn[64];
        if (t->threads[i].name[0])
            snprintf(tn, sizeof tn, "%s", t->threads[i].name);
        else
            snprintf(tn, sizeof tn, "thread %" PRIu32, t->threads[i].tid);
        meta(C, "thread_name", t->threads[i].tid, tn);
    }
}

/* PyTorch's allocated and reserved bytes per device (blocks.h: its line, already one
 * point per slice of the trace), as two counters beside the tracked bytes. */
static void block_counters(struct chrome *C)
{
    const struct gmt_blocks *B = &C->a->blocks;
    for (size_t d = 0; d < B->n_dev; d++)
        for (int k = 0; k < 2; k++) {
            char name[96];
            snprintf(name, sizeof name, "GPU %d PyTorch %s bytes", B->dev[d].device,
                     k ? "reserved" : "allocated");
            for (size_t i = 0; i < B->dev[d].n_line; i++) {
                const struct gmt_block_point *p = &B->dev[d].line[i];
                sep(C);
                fprintf(C->out, "{\"ph\":\"C\",\"pid\":%" PRId64 ",\"tid\":0,\"name\":", C->pid);
                gmt_fput_json_string(C->out, name);
                fputs(",\"ts\":", C->out);
                ts(C, p->time);
                fprintf(C->out, ",\"args\":{\"bytes\":%" PRIu64 "}}", k ? p->reserved : p->allocated);
            }
        }
}

/* The PROCESS record of a trace (its rank and time anchor), read without loading it. */
static int anchor(const char *path, struct gmt_rec_process *p)
{
    struct gmt_reader *r;
    char err[256];
    struct gmt_event ev;
    if (gmt_reader_open(&r, path, err, sizeof err))
        return -1;
    int rc = gmt_reader_next(r, &ev, err, sizeof err);
    const struct gmt_rec_process *q = rc > 0 ? gmt_reader_process(r) : NULL;
    if (q)
        *p = *q;
    gmt_reader_close(r);
    return q ? 0 : -1;
}

struct chrome_job {
    struct chrome *C;
    const struct gmt_rec_process *procs;
    bool by_rank;
};

/* One trace's process, counters and calls; a failure to write stops the export. */
static int chrome_one(void *ctx, size_t i, const struct gmt_analysis *a, FILE *out, char *err,
                      size_t errlen)
{
    const struct chrome_job *X = ctx;
    struct chrome *C = X->C;
    const struct gmt_trace *t = &a->t;
    C->a = a;
    C->pid = X->by_rank ? X->procs[i].rank : (int64_t)i;
    if (gmt_colls_group_labels(t, &C->members))
        return -ENOMEM;
    int r = gmt_tracks_init(&C->tk, a, C->max_points, false, point, C);
    if (r) {
        gmt_colls_group_labels_free(C->members);
        return r;
    }
    /* trace time -> realtime: + realtime_ns - monotonic_ns; without an anchor, its
     * first record at the job's start */
    C->shift = t->has_proc ? (int64_t)(t->proc.realtime_ns - C->base_ns) - (int64_t)t->proc.monotonic_ns
                           : -(int64_t)t->t_first;
    trace_meta(C, t->path);
    const struct gmt_xwalk_ops ops = {.alloc_done = on_done, .event = on_event, .ctx = C};
    r = gmt_export_walk(a, &ops);
    gmt_tracks_end(&C->tk);
    gmt_tracks_free(&C->tk);
    gmt_colls_group_labels_free(C->members);
    C->members = NULL;
    if (!r)
        block_counters(C);
    if (!r)
        return 0;
    gmt_err(r == -ENOMEM ? "gpumemtrace: export: out of memory"
                         : "gpumemtrace: export: cannot write %s", C->path);
    return r == -1 ? -EIO : r;
}

int gmt_export_chrome(char *const *files, size_t n, const struct gmt_report_opts *ro,
                      const char *out, long max_points)
{
    /* one time line: every trace's times moved to CLOCK_REALTIME, from the job's
     * earliest anchor; one process per rank where the ranks are known and distinct,
     * else per trace in the order given */
    struct gmt_rec_process *procs = calloc(n ? n : 1, sizeof *procs);
    bool *has = calloc(n ? n : 1, sizeof *has);
    if (!procs || !has) {
        free(procs);
        free(has);
        gmt_err("gpumemtrace: out of memory");
        return GMT_EXIT_ERROR;
    }
    uint64_t base = UINT64_MAX;
    bool by_rank = true;
    for (size_t i = 0; i < n; i++) {
        has[i] = !anchor(files[i], &procs[i]);
        if (has[i] && procs[i].realtime_ns < base)
            base = procs[i].realtime_ns;
        if (!has[i] || procs[i].rank < 0)
            by_rank = false;
        for (size_t j = 0; by_rank && j < i; j++)
            by_rank = procs[j].rank != procs[i].rank;
    }
    struct chrome *C = calloc(1, sizeof *C);
    FILE *f = C ? fopen(out, "w") : NULL;
    if (!f) {
        if (C)
            gmt_err("gpumemtrace: export: cannot create %s: %s", out, strerror(errno));
        else
            gmt_err("gpumemtrace: out of memory");
        free(C);
        free(procs);
        free(has);
        return GMT_EXIT_ERROR;
    }
    C->out = f;
    C->path = out;
    C->first = true;
    C->base_ns = base == UINT64_MAX ? 0 : base;
    C->max_points = max_points;
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
    struct chrome_job X = {C, procs, by_rank};
    const struct gmt_jobs J = {.files = files, .n = n, .ro = ro, .trace = chrome_one, .ctx = &X};
    struct gmt_jobs_result res;
    int status = gmt_jobs_run(&J, &res) || res.skipped ? GMT_EXIT_ERROR : GMT_EXIT_OK;
    fprintf(f, "\n],\"otherData\":{\"source\":\"gpumemtrace\",\"max_points_per_counter\":%ld}}\n", max_points);
    if (ferror(f) | fclose(f)) {
        gmt_err("gpumemtrace: export: cannot write %s", out);
        status = GMT_EXIT_ERROR;
    }
    free(C);
    free(procs);
    free(has);
    return status;
}
