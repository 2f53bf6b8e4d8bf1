/* render_watch.c: watch's view for a person (lines of text, answer first) and as one JSON object per snapshot. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "idnames.h"
#include "util.h"
#include "watch_view.h"

#define STAND_OUT_SHOWN 8

const char *gmt_watch_call_name(const struct gmt_watch_call *c, char *buf, size_t len)
{
    if (c->op == GMT_OP_Group && c->member_op)
        snprintf(buf, len, "Group(%s)", gmt_op_name(c->member_op));
    else
        snprintf(buf, len, "%s", gmt_op_name(c->op));
    return buf;
}

static void put_safe(FILE *o, const char *s)
{
    gmt_fput_safe(o, s ? s : "", s ? strlen(s) : 0);
}

/* A trace time as the local time of day, "12:00:03"; "?" without PROCESS's anchors. */
static const char *clock_of(const struct gmt_watch_trace *w, uint64_t t, char *buf, size_t len)
{
    if (!w->has_proc || t < w->monotonic_ns) {
        snprintf(buf, len, "?");
        return buf;
    }
    time_t s = (time_t)((w->realtime_ns + (t - w->monotonic_ns)) / 1000000000ull);
    struct tm tm;
    if (!localtime_r(&s, &tm) || !strftime(buf, len, "%H:%M:%S", &tm))
        snprintf(buf, len, "?");
    return buf;
}

static const char *growth_text(const struct gmt_watch_row *r, char *buf, size_t len)
{
    char b[GMT_FMT_LEN];
    if (r->has_step_growth)
        snprintf(buf, len, "%s/step", gmt_fmt_sbytes(b, sizeof b, r->step_growth));
    else if (r->has_min_growth)
        snprintf(buf, len, "%s/min", gmt_fmt_sbytes(b, sizeof b, r->min_growth));
    else
        snprintf(buf, len, "-");
    return buf;
}

static const char *call_text(const struct gmt_watch_row *r, char *buf, size_t len)
{
    if (!r->call) {
        snprintf(buf, len, "-");
        return buf;
    }
    char name[64], d[GMT_FMT_LEN];
    snprintf(buf, len, "%s%s %s", r->hanging ? "HANGING " : "",
             gmt_watch_call_name(r->call, name, sizeof name),
             gmt_fmt_duration(d, sizeof d, r->call_ns));
    return buf;
}

static void categories_text(FILE *o, const struct gmt_watch_trace *w, const struct gmt_watch_dev *d)
{
    int n = 0;
    for (size_t c = 0; c < w->n_cats; c++) {
        if (!d->by_cat[c])
            continue;
        char b[GMT_FMT_LEN];
        fprintf(o, "%s%s %s", n++ ? ", " : "", w->cat_names[c], gmt_fmt_bytes(b, sizeof b, d->by_cat[c]));
    }
}

static void header(FILE *o, const struct gmt_watch_view *v)
{
    const struct gmt_watch_set *s = v->set;
    fputs("gpumemtrace watch:", o);
    for (size_t i = 0; i < s->n_roots; i++) {
        fputc(' ', o);
        put_safe(o, s->roots[i]);
    }
    char when[32] = "?";
    time_t now = (time_t)(v->realtime_ns / 1000000000ull);
    struct tm tm;
    if (localtime_r(&now, &tm))
        strftime(when, sizeof when, "%H:%M:%S", &tm);
    fprintf(o, "  (%s)\n", when);
    size_t hosts = v->job.n_hosts;
    fprintf(o, "%zu rank%s on %zu host%s", v->n, v->n == 1 ? "" : "s", hosts, hosts == 1 ? "" : "s");
    if (v->n && v->rows[0].w->job_id) {
        fputs(", job ", o);
        put_safe(o, v->rows[0].w->job_id);
    }
    if (v->n_other)
        fprintf(o, "; %zu trace%s without GPU use", v->n_other, v->n_other == 1 ? "" : "s");
    fprintf(o, "; %zu hanging; %" PRIu64 " failed allocation%s\n", v->n_hanging, v->failures,
            v->failures == 1 ? "" : "s");
}

/* One rank's lines: a line per device it has, the rank's own columns on the first. */
static void rank_lines(FILE *o, const struct gmt_watch_row *r, const char *label)
{
    const struct gmt_watch_trace *w = r->w;
    char g[64], c[128], b1[GMT_FMT_LEN], b2[GMT_FMT_LEN], b3[GMT_FMT_LEN], b4[GMT_FMT_LEN];
    int shown = 0;
    for (size_t i = 0; i < w->n_dev; i++) {
        const struct gmt_watch_dev *d = &w->dev[i];
        if (!gmt_watch_dev_shown(d))
            continue;
        int64_t u;
        bool has_u = gmt_watch_untracked(d, &u);
        uint64_t nccl = w->nccl_cat >= 0 ? d->by_cat[w->nccl_cat] : 0;
        fprintf(o, "%8s %4d %10s %10s %10s %10s  ", shown ? "" : label, d->device,
                gmt_fmt_bytes(b1, sizeof b1, d->tracked), gmt_fmt_bytes(b2, sizeof b2, nccl),
                has_u ? gmt_fmt_sbytes(b3, sizeof b3, u) : "-", gmt_fmt_bytes(b4, sizeof b4, d->peak));
        if (!shown++)
            fprintf(o, "%6" PRIu64 " %-15s %-8s %-28s ", w->steps, growth_text(r, g, sizeof g),
                    r->state, call_text(r, c, sizeof c));
        else
            fprintf(o, "%6s %-15s %-8s %-28s ", "", "", "", "");
        categories_text(o, w, d);
        fputc('\n', o);
    }
    if (!shown) /* communicators or calls, no device memory yet */
        fprintf(o, "%8s %4s %10s %10s %10s %10s  %6" PRIu64 " %-15s %-8s %s\n", label, "-", "-",
                "-", "-", "-", w->steps, growth_text(r, g, sizeof g), r->state,
                call_text(r, c, sizeof c));
}

static bool alone(const struct gmt_watch_row *r)
{
    return r->hanging || r->stands_out || r->w->n_fails || r->rank < 0;
}

/* Ranks alike in a group, its representative's figures for all: when there are more
 * ranks than rows. The ranks that hang, fail or stand out keep their own rows. */
static void grouped_lines(FILE *o, const struct gmt_watch_view *v)
{
    const struct gmt_job *j = &v->job;
    const size_t *order = j->order;
    size_t ng = j->n_groups < 256 ? j->n_groups : 256;
    for (size_t k = 0; k < ng; k++) {
        char ranks[64], label[80];
        size_t n = 0, rep = 0, in_group = 0;
        for (size_t i = 0; i < v->n; i++)
            in_group += j->r[i].group == order[k] && !alone(&v->rows[i]);
        if (!in_group)
            continue;
        gmt_job_group_ranks(j, order[k], ranks, sizeof ranks, &n, &rep);
        snprintf(label, sizeof label, "%s", ranks);
        if (strlen(label) > 8)
            snprintf(label, sizeof label, "%zu ranks", n);
        rank_lines(o, &v->rows[rep], label);
    }
    for (size_t i = 0; i < v->n; i++)
        if (alone(&v->rows[i])) {
            char label[16];
            snprintf(label, sizeof label, "%" PRId32, v->rows[i].rank);
            rank_lines(o, &v->rows[i], label);
        }
}

static void table(FILE *o, const struct gmt_watch_view *v, int max_rows)
{
    fprintf(o, "\n%8s %4s %10s %10s %10s %10s  %6s %-15s %-8s %-28s %s\n", "RANK", "DEV", "TRACKED",
            "NCCL", "UNTRACKED", "PEAK", "STEPS", "GROWTH", "STATE", "NCCL CALL", "BY CATEGORY");
    if (max_rows > 0 && v->n > (size_t)max_rows) {
        grouped_lines(o, v);
        return;
    }
    for (size_t i = 0; i < v->n; i++) {
        char label[16];
        if (v->rows[i].rank >= 0)
            snprintf(label, sizeof label, "%" PRId32, v->rows[i].rank);
        else
            snprintf(label, sizeof label, "pid %" PRIu32, v->rows[i].w->pid);
        rank_lines(o, &v->rows[i], label);
    }
}

static void hanging_lines(FILE *o, const struct gmt_watch_view *v)
{
    if (!v->n_hanging)
        return;
    char d[GMT_FMT_LEN];
    fprintf(o, "\nHanging (in one NCCL call for more than %s):\n",
            gmt_fmt_duration(d, sizeof d, v->hang_ns));
    for (size_t i = 0; i < v->n; i++) {
        const struct gmt_watch_row *r = &v->rows[i];
        if (!r->hanging)
            continue;
        const struct gmt_watch_trace *w = r->w;
        const struct gmt_watch_comm *c = gmt_watch_comm_of(w, r->call->comm);
        char name[64], since[16];
        fprintf(o, "  rank %" PRId32 " (", r->rank);
        put_safe(o, w->host);
        fprintf(o, " pid %" PRIu32 "): %s", w->pid, gmt_watch_call_name(r->call, name, sizeof name));
        if (c)
            fprintf(o, " on communicator %zu (rank %" PRId32 " of %" PRId32 ")",
                    (size_t)(c - w->comms) + 1, c->rank, c->nranks);
        fprintf(o, " on thread %" PRIu32 ", for %s, since %s\n", r->call->tid,
                gmt_fmt_duration(d, sizeof d, r->call_ns),
                clock_of(w, r->call->begin, since, sizeof since));
    }
}

static void fail_line(FILE *o, const struct gmt_watch_row *r, const struct gmt_watch_fail *f)
{
    char b1[GMT_FMT_LEN], b2[GMT_FMT_LEN], b3[GMT_FMT_LEN], b4[GMT_FMT_LEN], e[64], at[16];
    fprintf(o, "  %s rank %" PRId32 " device %d: %s of %s failed (%s); %s tracked",
            clock_of(r->w, f->time, at, sizeof at), r->rank, f->device, gmt_api_name(f->api),
            gmt_fmt_bytes(b1, sizeof b1, f->bytes), gmt_error_text(f->api, f->error, e, sizeof e),
            gmt_fmt_bytes(b2, sizeof b2, f->tracked));
    if (f->has_dev)
        fprintf(o, ", %s of %s free", gmt_fmt_bytes(b3, sizeof b3, f->dev_free),
                gmt_fmt_bytes(b4, sizeof b4, f->dev_total));
    fputc('\n', o);
}

/* The latest failures over every rank, the latest first. */
static void fail_lines(FILE *o, const struct gmt_watch_view *v)
{
    if (!v->failures)
        return;
    fprintf(o, "\nFailed allocations (%" PRIu64 ", the latest first):\n", v->failures);
    for (size_t i = 0; i < v->n_latest; i++)
        fail_line(o, v->latest[i].r, v->latest[i].f);
}

static void stand_out_lines(FILE *o, const struct gmt_watch_view *v)
{
    const struct gmt_job *j = &v->job;
    size_t n = 0;
    for (size_t i = 0; i < v->n; i++) {
        if (!v->rows[i].stands_out)
            continue;
        if (n++ == 0)
            fprintf(o, "\nRanks that stand out:\n");
        if (n > STAND_OUT_SHOWN)
            continue;
        const struct gmt_job_rank *r = &j->r[i];
        char p[GMT_FMT_LEN], m[GMT_FMT_LEN], nc[GMT_FMT_LEN], nm[GMT_FMT_LEN];
        fprintf(o, "  rank %" PRId32 ": peak %s (median %s), NCCL at its peak %s (median %s)", r->rank,
                gmt_fmt_bytes(p, sizeof p, r->peak), gmt_fmt_bytes(m, sizeof m, j->peak.median),
                gmt_fmt_bytes(nc, sizeof nc, r->nccl), gmt_fmt_bytes(nm, sizeof nm, j->nccl.median));
        if (j->r[i].cause[0])
            fprintf(o, "; untracked: %s", j->r[i].cause);
        if (j->r[i].diff[0]) {
            fputs("; recorded differences: ", o);
            put_safe(o, j->r[i].diff);
        }
        fputc('\n', o);
    }
    if (n > STAND_OUT_SHOWN)
        fprintf(o, "  ... and %zu more\n", n - STAND_OUT_SHOWN);
}

static void error_lines(FILE *o, const struct gmt_watch_view *v)
{
    const struct gmt_watch_set *s = v->set;
    size_t n = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (!s->t[i]->error)
            continue;
        if (n++ == 0)
            fprintf(o, "\nNot read on:\n");
        fputs("  ", o);
        put_safe(o, s->t[i]->error);
        fputc('\n', o);
    }
}

void gmt_watch_render_text(FILE *out, const struct gmt_watch_view *v, int max_rows)
{
    header(out, v);
    if (!v->n)
        fprintf(out, "\nno trace with GPU use yet\n");
    else
        table(out, v, max_rows);
    hanging_lines(out, v);
    fail_lines(out, v);
    stand_out_lines(out, v);
    error_lines(out, v);
}
