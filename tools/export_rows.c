/* export_rows.c: the job's tables for SQLite and CSV: their columns, and every trace's rows, one trace at a time. */
#include "export.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "collectives.h"
#include "jobs.h"
#include "idnames.h"
#include "nccl_types.h"
#include "reader.h"
#include "stacks.h"
#include "util.h"

#define I(n) {n, GMT_XINT}
#define T(n) {n, GMT_XTEXT}
static const struct gmt_xcol c_traces[] = {
    I("trace"), T("file"), I("rank"), I("local_rank"), I("world_size"), T("host"), I("pid"),
    T("job_id"), I("driver_version"), I("runtime_version"), I("nccl_version"), T("settings"),
    I("start_realtime_ns"), I("span_ns"), I("records"), I("complete"), I("records_dropped")};
/* Columns are named as summary --json names the same figure (docs/export.md). */
static const struct gmt_xcol c_allocs[] = {
    I("trace"), I("id"), I("time_ns"), I("device"), T("kind"), T("memory"), T("api"), I("bytes"),
    I("stack_id"), T("category"), I("scope"), I("tid"), I("freed_at_ns")};
static const struct gmt_xcol c_calls[] = {
    I("trace"), I("scope"), I("parent"), I("counted_as"), T("op"), I("comm"), I("comm_rank"), I("comm_size"),
    I("count"), I("bytes"), I("begin_ns"), I("end_ns"), I("duration_ns"), I("timed"), I("weight"),
    I("tid"), I("device"), I("result"), I("tracked_bytes")};
static const struct gmt_xcol c_sites[] = {
    I("trace"), I("stack_id"), T("category"), T("stack"), T("folded"), T("frame"), I("allocs"),
    I("bytes_total"), I("live_at_peak_bytes"), I("live_at_end_bytes")};
static const struct gmt_xcol c_samples[] = {
    I("trace"), I("time_ns"), I("device"), I("free_bytes"), I("total_bytes"), I("used_bytes"),
    T("source"), T("phase"), I("scope")};
static const struct gmt_xcol c_fails[] = {
    I("trace"), I("time_ns"), I("device"), T("kind"), T("api"), I("bytes"), I("stack_id"),
    I("error"), T("error_name"), I("scope"), I("tid")};
static const struct gmt_xcol c_blocks[] = {
    I("trace"), I("time_ns"), T("op"), I("device"), I("address"), I("bytes"), I("allocated_bytes"),
    I("reserved_bytes"), I("stack_id"), I("tid")};
static const struct gmt_xcol c_block_sites[] = {
    I("trace"), I("stack_id"), T("stack"), T("folded"), T("frame"), I("allocs"), I("bytes_total"),
    I("live_at_peak_bytes"), I("live_at_end_bytes")};
#undef I
#undef T

#define N(a) (sizeof a / sizeof a[0])
const struct gmt_xtable_def gmt_xtables[GMT_XT_COUNT] = {
    [GMT_XT_TRACES] = {"traces", c_traces, N(c_traces), "CREATE INDEX traces_rank ON traces(rank);"},
    [GMT_XT_ALLOCATIONS] = {"allocations", c_allocs, N(c_allocs),
                            "CREATE INDEX allocations_trace_time ON allocations(trace, time_ns);"
                            "CREATE INDEX allocations_stack ON allocations(trace, stack_id);"
                            "CREATE INDEX allocations_scope ON allocations(trace, scope);"},
    [GMT_XT_NCCL_CALLS] = {"nccl_calls", c_calls, N(c_calls),
                           "CREATE INDEX nccl_calls_trace_begin ON nccl_calls(trace, begin_ns);"
                           "CREATE INDEX nccl_calls_op ON nccl_calls(op);"
                           "CREATE INDEX nccl_calls_scope ON nccl_calls(trace, scope);"},
    [GMT_XT_SITES] = {"sites", c_sites, N(c_sites), "CREATE UNIQUE INDEX sites_stack ON sites(trace, stack_id);"},
    [GMT_XT_DEVICE_SAMPLES] = {"device_samples", c_samples, N(c_samples),
                               "CREATE INDEX device_samples_trace_time ON device_samples(trace, time_ns);"},
    [GMT_XT_BLOCKS] = {"blocks", c_blocks, N(c_blocks),
                       "CREATE INDEX blocks_trace_time ON blocks(trace, time_ns);"
                       "CREATE INDEX blocks_stack ON blocks(trace, stack_id);"},
    [GMT_XT_BLOCK_SITES] = {"block_sites", c_block_sites, N(c_block_sites),
                            "CREATE UNIQUE INDEX block_sites_stack ON block_sites(trace, stack_id);"},
    [GMT_XT_FAILURES] = {"failures", c_fails, N(c_fails),
                         "CREATE INDEX failures_trace_time ON failures(trace, time_ns);"},
};

static struct gmt_xval vi(int64_t i)
{
    return (struct gmt_xval){.i = i};
}
static struct gmt_xval vs(const char *s)
{
    return (struct gmt_xval){.s = s, .null = !s};
}
static const struct gmt_xval VNULL = {.null = 1};

struct rows {
    const struct gmt_analysis *a;
    const struct gmt_xsink *sink;
    int64_t trace;
};

static int64_t rel(const struct gmt_trace *t, uint64_t time)
{
    return time >= t->t_first ? (int64_t)(time - t->t_first) : 0;
}

static const char *cat_name(const struct gmt_analysis *a, unsigned cat)
{
    return cat < a->n_cats ? a->cat_names[cat] : NULL;
}

static struct gmt_xval scope_val(const struct gmt_trace *t, int32_t idx)
{
    struct gmt_scope tmp;
    return idx >= 0 && (size_t)idx < t->n_scopes ? vi(gmt_trace_scope(t, (size_t)idx, &tmp)->id) : VNULL;
}

static int alloc_done(void *ctx, const struct gmt_xlive *l, uint64_t freed_at)
{
    struct rows *R = ctx;
    const struct gmt_trace *t = &R->a->t;
    struct gmt_xval v[] = {vi(R->trace), vi((int64_t)l->id), vi(rel(t, l->time)), vi(l->device),
                           vs(gmt_kind_name(l->kind)), vs(gmt_export_memory(l->kind)), vs(gmt_api_name(l->api)),
                           vi((int64_t)l->bytes), vi(l->stack), vs(cat_name(R->a, l->cat)),
                           scope_val(t, l->scope), vi(l->tid),
                           freed_at ? vi(rel(t, freed_at)) : VNULL};
    return R->sink->row(R->sink->ctx, GMT_XT_ALLOCATIONS, v);
}

static int event(void *ctx, const struct gmt_timed_event *e, const struct gmt_xlive *l)
{
    struct rows *R = ctx;
    const struct gmt_trace *t = &R->a->t;
    if (e->type == GMT_EV_MEMINFO) {
        uint64_t used = e->bytes >= e->addr ? e->bytes - e->addr : 0;
        long sc = e->scope ? gmt_trace_scope_index(t, e->scope) : -1;
        struct gmt_xval v[] = {vi(R->trace), vi(rel(t, e->time)), vi(e->device), vi((int64_t)e->addr),
                               vi((int64_t)e->bytes), vi((int64_t)used),
                               vs(gmt_meminfo_source_name(e->api)), vs(gmt_meminfo_phase_name(e->kind)),
                               scope_val(t, (int32_t)sc)};
        return R->sink->row(R->sink->ctx, GMT_XT_DEVICE_SAMPLES, v);
    }
    if (e->type == GMT_EV_FAIL) {
        long sc = e->scope ? gmt_trace_scope_index(t, e->scope) : -1;
        struct gmt_xval v[] = {vi(R->trace), vi(rel(t, e->time)), vi(e->device), vs(gmt_kind_name(e->kind)),
                               vs(gmt_api_name(e->api)), vi((int64_t)e->bytes), vi(e->stack),
                               vi(e->error), vs(gmt_error_name(e->api, e->error)),
                               scope_val(t, (int32_t)sc), vi(e->tid)};
        return R->sink->row(R->sink->ctx, GMT_XT_FAILURES, v);
    }
    return 0;
}

static int trace_row(struct rows *R)
{
    const struct gmt_trace *t = &R->a->t;
    char job[256], *settings = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&settings, &len);
    if (!f)
        return -ENOMEM;
    /* the NCCL settings that change memory, those set: "NAME=value" joined by ';' */
    for (size_t i = 0, k = 0; i < GMT_N_NCCL_SETTINGS; i++) {
        const char *val = gmt_trace_env(t, gmt_nccl_settings[i].name);
        if (val)
            fprintf(f, "%s%s=%s", k++ ? ";" : "", gmt_nccl_settings[i].name, val);
    }
    if (fclose(f))
        return -ENOMEM;
    const struct gmt_rec_process *p = &t->proc;
    int64_t start = t->has_proc ? (int64_t)(p->realtime_ns + (t->t_first - p->monotonic_ns)) : 0;
    struct gmt_xval v[] = {
        vi(R->trace), vs(t->path), t->has_proc ? vi(p->rank) : VNULL,
        t->has_proc ? vi(p->local_rank) : VNULL, t->has_proc ? vi(p->world_size) : VNULL,
        vs(t->host ? t->host : ""), t->has_proc ? vi(p->pid) : VNULL,
        vs(gmt_trace_job_id(t, job, sizeof job)), vi(t->version[GMT_COMP_DRIVER]),
        vi(t->version[GMT_COMP_RUNTIME]), vi(t->version[GMT_COMP_NCCL]), vs(settings),
        t->has_proc ? vi(start) : VNULL, vi(rel(t, t->t_last)), vi((int64_t)t->records),
        vi(t->complete), vi((int64_t)t->records_dropped)};
    int r = R->sink->row(R->sink->ctx, GMT_XT_TRACES, v);
    free(settings);
    return r;
}

/* The call a summary counts scope i as: itself, or for a call NCCL made inside another
 * (ncclBcast calling ncclBroadcast), the outermost one below any group (collectives.c). */
static uint32_t counted_as(const struct gmt_trace *t, size_t i)
{
    size_t j = i;
    struct gmt_scope tmp, tp;
    for (int hops = 0; hops < 64; hops++) {
        const struct gmt_scope *s = gmt_trace_scope(t, j, &tmp);
        long p = gmt_trace_parent_index(t, j, s);
        if (p < 0 || (size_t)p == j || gmt_trace_scope(t, (size_t)p, &tp)->op == GMT_OP_Group)
            break;
        j = (size_t)p;
    }
    return gmt_trace_scope(t, j, &tmp)->id;
}

/* A call's row. Its begin is known only when it was timed: a loop call the library did
 * not time, or a group member written the short way, has its end alone (the trace puts
 * its begin at its end). weight: the calls a timed one's duration stands for. */
static int call_row(struct rows *R, size_t i, const struct gmt_group_labels *members)
{
    const struct gmt_trace *t = &R->a->t;
    const struct gmt_report *rep = &R->a->rep;
    struct gmt_scope tmp;
    const struct gmt_scope *s = gmt_trace_scope(t, i, &tmp);
    const struct gmt_comm *c = gmt_trace_comm(t, s->comm);
    char name[GMT_GROUP_MEMBERS + 8];
    unsigned w = gmt_scope_weight(s);
    bool begun = w || !s->t_end; /* a call still open has its begin */
    struct gmt_xval v[] = {
        vi(R->trace), vi(s->id), s->parent_id ? vi(s->parent_id) : VNULL, vi(counted_as(t, i)),
        vs(gmt_colls_call_name(s, gmt_colls_group_label(members, i), name, sizeof name)),
        s->comm ? vi(gmt_trace_comm_index(t, s->comm)) : VNULL, c ? vi(c->rank) : VNULL,
        c ? vi(c->nranks) : VNULL, vi((int64_t)s->count),
        vi((int64_t)(s->count * gmt_nccl_type_size(s->datatype))), begun ? vi(rel(t, s->t_begin)) : VNULL,
        s->t_end ? vi(rel(t, s->t_end)) : VNULL, w ? vi((int64_t)(s->t_end - s->t_begin)) : VNULL,
        vi(w > 0), vi(w), vi(s->tid), vi(s->device), vi(s->result),
        rep->scope_tracked ? vi(gmt_scope_tracked(t, rep, i)) : VNULL};
    return R->sink->row(R->sink->ctx, GMT_XT_NCCL_CALLS, v);
}

static int call_rows(struct rows *R)
{
    const struct gmt_trace *t = &R->a->t;
    struct gmt_group_labels *members;
    if (gmt_colls_group_labels(t, &members))
        return -ENOMEM;
    int r = 0;
    for (size_t i = 0; !r && i < t->n_scopes; i++)
        r = call_row(R, i, members);
    gmt_colls_group_labels_free(members);
    return r;
}

/* A stack in the orders the tables give it: `stack` innermost first with " < " between
 * frames (as summary --json), `folded` outermost first with ';' (the folded format of
 * flame graph tools), and `frame`, the site's frame. Scratch kept static: one thread. */
struct stack_texts {
    const char *stack, *folded, *frame;
};

static void stack_texts(const struct gmt_analysis *a, uint32_t stack, struct stack_texts *x)
{
    static char full[65536], folded[65536], buf[131072];
    static const char *frames[512];
    size_t site, n = gmt_stack_frames(a, stack, buf, sizeof buf, frames, 512, &site);
    x->stack = gmt_stack_full(a, stack, 64, full, sizeof full);
    x->folded = gmt_stack_folded(a, stack, folded, sizeof folded);
    x->frame = site < n ? frames[site] : "";
}

static int site_rows(struct rows *R)
{
    const struct gmt_report *rep = &R->a->rep;
    for (size_t i = 0; i < rep->n_sites; i++) {
        const struct gmt_site_row *s = &rep->sites[i];
        struct stack_texts x;
        stack_texts(R->a, s->stack, &x);
        struct gmt_xval v[] = {vi(R->trace), vi(s->stack), vs(cat_name(R->a, s->cat)), vs(x.stack),
                               vs(x.folded), vs(x.frame), vi((int64_t)s->allocs), vi((int64_t)s->bytes_total),
                               vi((int64_t)s->live_at_peak), vi((int64_t)s->live_at_end)};
        int r = R->sink->row(R->sink->ctx, GMT_XT_SITES, v);
        if (r)
            return r;
    }
    return 0;
}

/* PyTorch's blocks (blocks.h), each BLOCK in time order, and their sites. */
static int block_row(void *ctx, const struct gmt_block_note *b)
{
    struct rows *R = ctx;
    const struct gmt_trace *t = &R->a->t;
    struct gmt_xval v[] = {vi(R->trace), vi(rel(t, b->time)), vs(gmt_block_op_name(b->op)),
                           vi(b->device), b->op == GMT_BLOCK_OOM ? VNULL : vi((int64_t)b->addr),
                           vi(b->size), vi((int64_t)b->allocated), vi((int64_t)b->reserved),
                           b->stack ? vi(b->stack) : VNULL, vi(b->tid)};
    return R->sink->row(R->sink->ctx, GMT_XT_BLOCKS, v);
}

static int block_rows(struct rows *R)
{
    int r = gmt_blocks_each(&R->a->t, R->a->opts->device, block_row, R);
    const struct gmt_blocks *B = &R->a->blocks;
    for (size_t i = 0; !r && i < B->n_sites; i++) {
        const struct gmt_block_site *s = &B->sites[i];
        struct stack_texts x;
        stack_texts(R->a, s->stack, &x);
        struct gmt_xval v[] = {vi(R->trace), vi(s->stack), vs(x.stack), vs(x.folded), vs(x.frame),
                               vi((int64_t)s->allocs),
                               vi((int64_t)s->bytes_total), vi((int64_t)s->live_at_peak),
                               vi((int64_t)s->live_at_end)};
        r = R->sink->row(R->sink->ctx, GMT_XT_BLOCK_SITES, v);
    }
    return r;
}

/* One trace's rows into the sink; a failure stops the export (the sink said why). */
static int rows_one(void *ctx, size_t i, const struct gmt_analysis *a, FILE *out, char *err,
                    size_t errlen)
{
    struct rows R = {.a = a, .sink = ctx, .trace = (int64_t)i};
    const struct gmt_xwalk_ops ops = {.alloc_done = alloc_done, .event = event, .ctx = &R};
    int r = trace_row(&R);
    if (!r)
        r = call_rows(&R);
    if (!r)
        r = site_rows(&R);
    if (!r)
        r = block_rows(&R);
    if (!r)
        r = gmt_export_walk(a, &ops);
    if (r == -ENOMEM)
        gmt_err("gpumemtrace: export: out of memory");
    return !r ? 0 : r < 0 && r != -1 ? r : -EIO;
}

int gmt_export_rows(char *const *files, size_t n, const struct gmt_report_opts *ro,
                    const struct gmt_xsink *sink)
{
    const struct gmt_jobs J = {.files = files, .n = n, .ro = ro, .trace = rows_one,
                               .ctx = (void *)sink};
    struct gmt_jobs_result res;
    int r = gmt_jobs_run(&J, &res);
    return r ? r : res.skipped ? GMT_EXIT_ERROR : 0;
}
