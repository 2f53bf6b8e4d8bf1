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

/*
 * Each trace is read once, by the job driver (jobs.h), perhaps in a worker, and rendered
 * before the job's time base and process ids are known: those come from every trace's
 * PROCESS record. Where the rendering needs them it writes a token, a control byte that
 * the JSON never holds otherwise (its strings escape them), decimals, then TOK_END:
 *   TOK_TS  V      a time of an anchored trace, V its CLOCK_REALTIME ns (wrapping)
 *   TOK_PID I      the process of trace I: its rank, or I where the ranks do not serve
 *   TOK_FLOW I K   the K-th flow arrow of trace I, numbered across the job
 * The parent keeps the renderings, in the order of the traces, in a temporary file, and
 * writes them out with each token replaced once every trace is in. One trace alone is
 * the whole job: it is written straight to the output, without tokens.
 */
#define TOK_TS '\x01'
#define TOK_PID '\x02'
#define TOK_END '\x03'
#define TOK_FLOW '\x04'

struct chrome {
    FILE *out;
    bool first;                /* no event of this trace written yet */
    uint64_t flows;            /* the trace's flow arrows so far */
    /* the trace being written */
    const struct gmt_analysis *a;
    size_t index;
    char pidtok[32];
    bool direct;               /* the one trace: no tokens, out is the output */
    bool anchored;             /* its times are tokens (TOK_TS) */
    uint64_t to_real;          /* anchored: trace time + to_real = CLOCK_REALTIME ns */
    int64_t shift;             /* else trace time + shift = ns since the job's start */
    long max_points;
    struct gmt_tracks tk;      /* its counters (tracks.h) */
    struct gmt_group_labels *members; /* its groups' members (collectives.h) */
};

static void sep(struct chrome *C)
{
    fputs(C->first ? "\n" : ",\n", C->out);
    C->first = false;
}

/* ns as the viewer's microseconds, ns exact; before the start, the start. */
static void put_us(FILE *o, int64_t ns)
{
    if (ns < 0)
        ns = 0;
    fprintf(o, "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
}

/* A trace time as the viewer's microseconds since the job's start (a token, TOK_TS, for
 * an anchored trace: the start is known when every trace is in). */
static void ts(struct chrome *C, uint64_t t)
{
    if (C->anchored)
        fprintf(C->out, "%c%" PRIu64 "%c", TOK_TS, t + C->to_real, TOK_END);
    else
        put_us(C->out, (int64_t)t + C->shift);
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
    fprintf(C->out, "{\"ph\":\"C\",\"pid\":%s,\"tid\":0,\"name\":", C->pidtok);
    gmt_fput_json_string(C->out, name);
    fputs(",\"ts\":", C->out);
    ts(C, t);
    fprintf(C->out, ",\"args\":{\"bytes\":%" PRIu64 "}}", v);
}

static void instant(struct chrome *C, const char *name, uint32_t tid, uint64_t t)
{
    sep(C);
    fprintf(C->out, "{\"ph\":\"i\",\"s\":\"t\",\"pid\":%s,\"tid\":%" PRIu32 ",\"name\":",
            C->pidtok, tid);
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
        fprintf(C->out, "{\"ph\":\"X\",\"cat\":\"nccl\",\"pid\":%s,\"tid\":%" PRIu32 ",\"name\":",
                C->pidtok, s->tid);
    else
        fprintf(C->out, "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"nccl\",\"pid\":%s,\"tid\":%" PRIu32
                        ",\"name\":", C->pidtok, s->tid);
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
            char id[48];
            if (C->direct)
                snprintf(id, sizeof id, "%" PRIu64, ++C->flows);
            else
                snprintf(id, sizeof id, "%c%zu %" PRIu64 "%c", TOK_FLOW, C->index, ++C->flows, TOK_END);
            instant(C, "NCCL proxy allocation", l->tid, e->time);
            char name[GMT_GROUP_MEMBERS + 8];
            fprintf(C->out, ",\"args\":{\"bytes\":%" PRIu64 ",\"kind\":\"%s\",\"memory\":\"%s\",\"api\":\"%s\","
                            "\"scope\":%" PRIu32 ",\"op\":",
                    l->bytes, gmt_kind_name(l->kind), gmt_export_memory(l->kind), gmt_api_name(l->api), s->id);
            gmt_fput_json_string(C->out, call_name(C, (size_t)l->scope, name, sizeof name));
            fprintf(C->out, ",\"stack_id\":%" PRIu32 "}}", l->stack);
            /* a flow arrow from the call to the allocation */
            sep(C);
            fprintf(C->out, "{\"ph\":\"s\",\"cat\":\"nccl\",\"name\":\"proxy allocation\",\"id\":%s"
                            ",\"pid\":%s,\"tid\":%" PRIu32 ",\"ts\":", id, C->pidtok, s->tid);
            ts(C, e->time);
            fputs("}", C->out);
            sep(C);
            fprintf(C->out, "{\"ph\":\"f\",\"bp\":\"e\",\"cat\":\"nccl\",\"name\":\"proxy allocation\",\"id\":%s"
                            ",\"pid\":%s,\"tid\":%" PRIu32 ",\"ts\":", id, C->pidtok, l->tid);
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
    fprintf(C->out, "{\"ph\":\"M\",\"pid\":%s,\"tid\":%" PRIu32 ",\"name\":\"%s\",\"args\":{\"name\":",
            C->pidtok, tid, what);
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
    fprintf(C->out, "{\"ph\":\"M\",\"pid\":%s,\"tid\":0,\"name\":\"process_sort_index\","
                    "\"args\":{\"sort_index\":%s}}", C->pidtok, C->pidtok);
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
                fprintf(C->out, "{\"ph\":\"C\",\"pid\":%s,\"tid\":0,\"name\":", C->pidtok);
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

/* What a rendering brings before its events: the trace's anchor and rank. After them
 * comes its count of flow arrows (uint64_t). */
struct head {
    uint64_t realtime_ns;
    int32_t rank;
    uint8_t has;               /* it has a PROCESS record */
};

struct chrome_job {
    char *const *files;
    long max_points;
    FILE *direct;              /* the one trace's output (no take), else NULL */
    const char *path;          /* the output's name */
    bool said;                 /* a failure of the one trace said */
    FILE *tmp;                 /* the renderings, in the order of the traces */
    size_t written;            /* renderings in tmp */
    /* of each trace: its anchor and rank (has), its flow arrows' first number */
    struct gmt_rec_process *procs;
    bool *has;
    uint64_t *flow0, flows;
};

/* One trace's process, counters and calls, rendered with its tokens (perhaps in a
 * worker); -1 with the message when it could not be made. The one trace of a job is
 * written straight out (out NULL): a failure to write stops the export, said here. */
static int chrome_one(void *ctx, size_t i, const struct gmt_analysis *a, FILE *out, char *err,
                      size_t errlen)
{
    struct chrome_job *X = ctx;
    struct chrome c = {.out = out ? out : X->direct, .first = true, .a = a, .index = i,
                       .direct = !out, .max_points = X->max_points},
                  *C = &c;
    const struct gmt_trace *t = &a->t;
    struct head h = {.has = t->has_proc, .rank = t->has_proc ? t->proc.rank : -1};
    h.realtime_ns = t->has_proc ? t->proc.realtime_ns : 0;
    /* trace time -> realtime: + realtime_ns - monotonic_ns; without an anchor, its
     * first record at the job's start */
    C->to_real = t->proc.realtime_ns - t->proc.monotonic_ns;
    C->shift = -(int64_t)t->t_first;
    if (C->direct) {
        /* its own anchor is the job's earliest; its rank, if it has one, its process */
        snprintf(C->pidtok, sizeof C->pidtok, "%d", h.has && h.rank >= 0 ? h.rank : 0);
        if (t->has_proc)
            C->shift = -(int64_t)t->proc.monotonic_ns;
    } else {
        fwrite(&h, sizeof h, 1, out);
        snprintf(C->pidtok, sizeof C->pidtok, "%c%zu%c", TOK_PID, i, TOK_END);
        C->anchored = t->has_proc;
    }
    int r = gmt_colls_group_labels(t, &C->members);
    if (!r && (r = gmt_tracks_init(&C->tk, a, C->max_points, false, point, C)))
        gmt_colls_group_labels_free(C->members);
    if (!r) {
        trace_meta(C, t->path);
        const struct gmt_xwalk_ops ops = {.alloc_done = on_done, .event = on_event, .ctx = C};
        r = gmt_export_walk(a, &ops);
        gmt_tracks_end(&C->tk);
        gmt_tracks_free(&C->tk);
        gmt_colls_group_labels_free(C->members);
    }
    if (!r)
        block_counters(C);
    if (C->direct) {
        if (!r)
            return 0;
        gmt_err(r == -ENOMEM ? "gpumemtrace: export: out of memory"
                             : "gpumemtrace: export: cannot write %s", X->path);
        X->said = true;
        return r == -1 ? -EIO : r;
    }
    if (!r && (fwrite(&C->flows, sizeof C->flows, 1, out) != 1 || ferror(out)))
        r = -ENOMEM;
    if (!r)
        return 0;
    snprintf(err, errlen, "export: out of memory");
    return -1;
}

/* A rendering, here in the order of the traces: its head kept, its events into tmp. */
static int chrome_take(void *ctx, size_t i, const char *p, size_t len)
{
    struct chrome_job *X = ctx;
    struct head h;
    uint64_t flows;
    if (len < sizeof h + sizeof flows)
        return -ENOMEM;
    memcpy(&h, p, sizeof h);
    len -= sizeof flows;
    memcpy(&flows, p + len, sizeof flows);
    X->has[i] = h.has;
    X->procs[i].rank = h.rank;
    X->procs[i].realtime_ns = h.realtime_ns;
    X->flow0[i] = X->flows;
    X->flows += flows;
    /* each rendering begins its first event on a line of its own: after another, a comma */
    if (len > sizeof h && X->written++)
        fputc(',', X->tmp);
    fwrite(p + sizeof h, 1, len - sizeof h, X->tmp);
    return 0;
}

/* A trace that could not be read: said, and its anchor taken if it has one, so that the
 * time base and the processes are what they would be had it been read. */
static void chrome_skipped(void *ctx, size_t i, const char *why)
{
    struct chrome_job *X = ctx;
    gmt_err("gpumemtrace: %s", why);
    if (!X->direct)
        X->has[i] = !anchor(X->files[i], &X->procs[i]);
}

/* The renderings in X->tmp into f, each token replaced: the job's earliest anchor is its
 * start; a process per rank where every trace has a distinct rank, else per trace. */
static void chrome_write(FILE *f, struct chrome_job *X, size_t n)
{
    uint64_t base = UINT64_MAX;
    bool by_rank = true;
    for (size_t i = 0; i < n; i++) {
        if (X->has[i] && X->procs[i].realtime_ns < base)
            base = X->procs[i].realtime_ns;
        if (!X->has[i] || X->procs[i].rank < 0)
            by_rank = false;
        for (size_t j = 0; by_rank && j < i; j++)
            by_rank = X->procs[j].rank != X->procs[i].rank;
    }
    if (base == UINT64_MAX)
        base = 0;
    rewind(X->tmp);
    char *seg = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getdelim(&seg, &cap, TOK_END, X->tmp)) > 0) {
        char *end = seg + len - 1, *tok = NULL;
        if (*end == TOK_END)
            for (char *q = end; !tok && q-- > seg;)
                if (*q == TOK_TS || *q == TOK_PID || *q == TOK_FLOW)
                    tok = q;
        if (!tok) {
            fwrite(seg, 1, (size_t)len, f);
            continue;
        }
        fwrite(seg, 1, (size_t)(tok - seg), f);
        *end = 0;
        unsigned long long v = 0, k = 0;
        if (*tok == TOK_TS) {
            sscanf(tok + 1, "%llu", &v);
            put_us(f, (int64_t)((uint64_t)v - base));
        } else if (*tok == TOK_PID) {
            sscanf(tok + 1, "%llu", &v);
            fprintf(f, "%" PRId64, by_rank && v < n ? (int64_t)X->procs[v].rank : (int64_t)v);
        } else {
            sscanf(tok + 1, "%llu %llu", &v, &k);
            fprintf(f, "%" PRIu64, (v < n ? X->flow0[v] : 0) + (uint64_t)k);
        }
    }
    free(seg);
}

int gmt_export_chrome(char *const *files, size_t n, const struct gmt_report_opts *ro,
                      const char *out, long max_points)
{
    struct chrome_job X = {.files = files, .max_points = max_points};
    X.procs = calloc(n ? n : 1, sizeof *X.procs);
    X.has = calloc(n ? n : 1, sizeof *X.has);
    X.flow0 = calloc(n ? n : 1, sizeof *X.flow0);
    FILE *f = NULL;
    int status = GMT_EXIT_ERROR;
    if (!X.procs || !X.has || !X.flow0)
        gmt_err("gpumemtrace: out of memory");
    else if (!(f = fopen(out, "w")))
        gmt_err("gpumemtrace: export: cannot create %s: %s", out, strerror(errno));
    else if (n != 1 && !(X.tmp = tmpfile()))
        gmt_err("gpumemtrace: export: cannot make a temporary file: %s", strerror(errno));
    if (!f || (n != 1 && !X.tmp)) {
        if (f)
            fclose(f);
        free(X.procs);
        free(X.has);
        free(X.flow0);
        return status;
    }
    X.path = out;
    X.direct = n == 1 ? f : NULL;
    fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[", f);
    const struct gmt_jobs J = {.files = files, .n = n, .ro = ro, .trace = chrome_one,
                               .take = X.direct ? NULL : chrome_take, .ctx = &X,
                               .skipped = chrome_skipped};
    struct gmt_jobs_result res;
    int r = gmt_jobs_run(&J, &res);
    if (r && !X.said)
        gmt_err("gpumemtrace: %s", r == -ENOMEM ? "out of memory" : "a process reading the traces died");
    status = r || res.skipped ? GMT_EXIT_ERROR : GMT_EXIT_OK;
    if (X.tmp && (fflush(X.tmp) || ferror(X.tmp))) {
        gmt_err("gpumemtrace: export: cannot write a temporary file");
        status = GMT_EXIT_ERROR;
    } else if (X.tmp) {
        chrome_write(f, &X, n);
    }
    fprintf(f, "\n],\"otherData\":{\"source\":\"gpumemtrace\",\"max_points_per_counter\":%ld}}\n", max_points);
    if (ferror(f) | fclose(f)) {
        gmt_err("gpumemtrace: export: cannot write %s", out);
        status = GMT_EXIT_ERROR;
    }
    if (X.tmp)
        fclose(X.tmp);
    free(X.procs);
    free(X.has);
    free(X.flow0);
    return status;
}
