/* render_check.c: check's verdicts rendered: the aligned table, GitHub annotations, JUnit XML; beside them each rank's untracked memory, not gated. */
#include "render_check.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static const char *fmt_value(char *buf, size_t len, int64_t v)
{
    if (v >= 0)
        return gmt_fmt_bytes(buf, len, (uint64_t)v);
    return gmt_fmt_sbytes(buf, len, v);
}

static const char *fmt_delta(char *buf, size_t len, int64_t v)
{
    if (v == 0) {
        snprintf(buf, len, "+0 B");
        return buf;
    }
    return gmt_fmt_sbytes(buf, len, v);
}

static const char *verdict_name(enum gmt_verdict_kind v)
{
    return v == GMT_PASS ? "PASS" : v == GMT_FAIL ? "FAIL" : "GONE";
}

/* The numbers of one result as a sentence, for JUnit and annotations. */
static void describe(const struct gmt_verdict *r, char *buf, size_t len)
{
    char b[GMT_FMT_LEN], n[GMT_FMT_LEN], d[GMT_FMT_LEN], l[GMT_FMT_LEN], p[GMT_FMT_LEN];
    gmt_fmt_ppm(p, sizeof p, r->ppm);
    if (r->kind == GMT_GONE) {
        snprintf(buf, len, "in the baseline (%s) but not in the traces",
                 fmt_value(b, sizeof b, r->base->value));
        return;
    }
    gmt_fmt_bytes(l, sizeof l, r->allowed);
    snprintf(buf, len, "%s -> %s: %s (%" PRId64 " B), limit +%s (%" PRIu64 " B = max(%s of the "
             "base, max_bytes %" PRIu64 " B))%s",
             r->base ? fmt_value(b, sizeof b, r->base->value) : "new",
             fmt_value(n, sizeof n, r->now->value), fmt_delta(d, sizeof d, r->growth), r->growth,
             l, r->allowed, p, r->max_bytes, r->base ? "" : "; not in the baseline");
}

static void xml_text(FILE *o, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '<': fputs("&lt;", o); break;
        case '>': fputs("&gt;", o); break;
        case '&': fputs("&amp;", o); break;
        case '"': fputs("&quot;", o); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\n')
                fputc(*s, o);
        }
    }
}

int gmt_render_check_junit(const char *path, const struct gmt_verdicts *vs, double seconds)
{
    const struct gmt_verdict *res = vs->v;
    size_t n = vs->n, fails = vs->fails, gone = vs->gone;
    FILE *o = fopen(path, "w");
    if (!o)
        return -errno;
    char host[256] = "", stamp[32] = "";
    if (gethostname(host, sizeof host - 1))
        host[0] = 0;
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm))
        strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
    fprintf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<testsuites name=\"gpumemtrace check\" tests=\"%zu\" failures=\"%zu\" "
               "time=\"%.3f\">\n"
               "  <testsuite name=\"gpumemtrace check\" tests=\"%zu\" failures=\"%zu\" "
               "skipped=\"%zu\" errors=\"0\" time=\"%.3f\" timestamp=\"%s\" hostname=\"",
            n, fails, seconds, n, fails, gone, seconds, stamp);
    xml_text(o, host);
    fprintf(o, "\">\n");
    for (size_t i = 0; i < n; i++) {
        const struct gmt_verdict *r = &res[i];
        const struct gmt_metric *m = r->now ? r->now : r->base;
        char who[64], what[256], msg[512];
        gmt_metric_who(m, who, sizeof who);
        gmt_metric_what(m, what, sizeof what);
        describe(r, msg, sizeof msg);
        fprintf(o, "    <testcase classname=\"gpumemtrace.");
        xml_text(o, who);
        fprintf(o, "\" name=\"");
        xml_text(o, what);
        fprintf(o, "\" time=\"0\"");
        if (r->kind == GMT_PASS) {
            fprintf(o, "/>\n");
            continue;
        }
        fprintf(o, ">\n      <%s message=\"", r->kind == GMT_FAIL ? "failure" : "skipped");
        xml_text(o, msg);
        if (r->kind == GMT_FAIL) {
            fprintf(o, "\" type=\"growth\">");
            xml_text(o, who);
            fprintf(o, " ");
            xml_text(o, what);
            fprintf(o, ": ");
            xml_text(o, msg);
            fprintf(o, "</failure>\n");
        } else {
            fprintf(o, "\"/>\n");
        }
        fprintf(o, "    </testcase>\n");
    }
    fprintf(o, "  </testsuite>\n</testsuites>\n");
    int bad = ferror(o);
    if (fclose(o) || bad)
        return -EIO;
    return 0;
}

/* GitHub's workflow commands end at a newline and decode %XX: escape what would cut
 * or change the message. */
static void gh_escape(FILE *o, const char *s)
{
    for (; *s; s++) {
        if (*s == '%')
            fputs("%25", o);
        else if (*s == '\r')
            fputs("%0D", o);
        else if (*s == '\n')
            fputs("%0A", o);
        else
            fputc(*s, o);
    }
}

static const char *row_who(const struct gmt_metric *m, bool folded, char *buf, size_t len);

/* The verdicts shown (failures; all with verbose) as an aligned table, widths from the
 * rows themselves, and the tally. */
static void text_table(FILE *o, const struct gmt_verdicts *vs, bool verbose,
                       const unsigned char *fold)
{
    const struct gmt_verdict *res = vs->v;
    size_t n = vs->n;
    int ww = 0, wt = 0, wb = 0, wn = 0, wd = 0;
    for (size_t k = 0; k < n; k++) {
        if (!verbose && res[k].kind != GMT_FAIL)
            continue;
        const struct gmt_metric *m = res[k].now ? res[k].now : res[k].base;
        char s[256], b[GMT_FMT_LEN];
        int l;
        if (fold && fold[k] == 2)
            continue;
        if ((l = (int)strlen(row_who(m, fold && fold[k], s, sizeof s))) > ww) ww = l;
        if ((l = (int)strlen(gmt_metric_what(m, s, sizeof s))) > wt) wt = l;
        if (res[k].base && (l = (int)strlen(fmt_value(b, sizeof b, res[k].base->value))) > wb) wb = l;
        if (res[k].now && (l = (int)strlen(fmt_value(b, sizeof b, res[k].now->value))) > wn) wn = l;
        if (res[k].now && (l = (int)strlen(fmt_delta(b, sizeof b, res[k].growth))) > wd) wd = l;
    }
    if (wb < 3) wb = 3;
    if (wn < 1) wn = 1;
    for (size_t k = 0; k < n; k++) {
        const struct gmt_verdict *r = &res[k];
        if (!verbose && r->kind != GMT_FAIL)
            continue;
        const struct gmt_metric *m = r->now ? r->now : r->base;
        char who[64], what[256], b[GMT_FMT_LEN], nw[GMT_FMT_LEN], d[GMT_FMT_LEN], l[GMT_FMT_LEN];
        if (fold && fold[k] == 2)
            continue;
        row_who(m, fold && fold[k], who, sizeof who);
        gmt_metric_what(m, what, sizeof what);
        fprintf(o, "%s  %-*s  %-*s  %*s -> %*s  ", verdict_name(r->kind), ww, who, wt, what, wb,
                r->base ? fmt_value(b, sizeof b, r->base->value) : "new", wn,
                r->now ? fmt_value(nw, sizeof nw, r->now->value) : "-");
        if (r->kind == GMT_GONE) {
            fprintf(o, "(not in the traces)\n");
            continue;
        }
        fmt_delta(d, sizeof d, r->growth);
        l[0] = '+';
        gmt_fmt_bytes(l + 1, sizeof l - 1, r->allowed);
        fprintf(o, "%*s (limit %s)", wd, d, l);
        /* human units round: when they hide why it failed, say the bytes */
        if (r->kind == GMT_FAIL && !strcmp(d, l))
            fprintf(o, " [+%" PRId64 " B > +%" PRIu64 " B]", r->growth, r->allowed);
        fprintf(o, "\n");
    }
    if (vs->fails)
        fprintf(o, "FAILED: %zu of %zu checks grew beyond their limits", vs->fails, n - vs->gone);
    else
        fprintf(o, "ok: %zu checks within their limits", n - vs->gone);
    fprintf(o, " (%zu new, %zu gone; fails when new - base > max(base * max_growth, max_bytes))%s\n",
            vs->added, vs->gone, verbose || !vs->fails ? "" : "; --verbose shows every check");
    size_t folded = 0;
    for (size_t k = 0; fold && k < n; k++)
        folded += fold[k] == 1 && (verbose || res[k].kind == GMT_FAIL);
    if (folded)
        fprintf(o, "(\"all ranks\": the min, median and max of a check that agree, one row for "
                   "the three: %zu rows for %zu checks)\n", folded, folded * 3);
}

/* A row's who: the metric's, or "all ranks" for the row that stands for a check's min,
 * median and max. */
static const char *row_who(const struct gmt_metric *m, bool folded, char *buf, size_t len)
{
    if (!folded)
        return gmt_metric_who(m, buf, len);
    snprintf(buf, len, "all ranks");
    return buf;
}

/* One failure as a GitHub workflow ::error annotation. */
static void github_error(FILE *o, const struct gmt_verdict *r)
{
    char who[64], what[256], msg[512];
    gmt_metric_who(r->now, who, sizeof who);
    gmt_metric_what(r->now, what, sizeof what);
    describe(r, msg, sizeof msg);
    fprintf(o, "::error title=gpumemtrace::");
    gh_escape(o, who);
    fprintf(o, " ");
    gh_escape(o, what);
    fprintf(o, " grew beyond its limit: ");
    gh_escape(o, msg);
    fprintf(o, "\n");
}

/* The failures as ::error annotations; beyond GitHub's 10, the last one counts the rest. */
static void github_annotations(FILE *o, const struct gmt_verdicts *vs)
{
    size_t shown = 0, room = vs->fails > GMT_GITHUB_MAX_ERRORS ? GMT_GITHUB_MAX_ERRORS - 1
                                                               : GMT_GITHUB_MAX_ERRORS;
    for (size_t k = 0; k < vs->n && shown < room; k++)
        if (vs->v[k].kind == GMT_FAIL) {
            github_error(o, &vs->v[k]);
            shown++;
        }
    if (vs->fails > shown)
        fprintf(o, "::error title=gpumemtrace::%zu more checks grew beyond their limits (%zu in "
                   "all): see the step's log\n", vs->fails - shown, vs->fails);
}

void gmt_render_check_text(FILE *o, const struct gmt_verdicts *vs, bool verbose, bool github,
                           const unsigned char *fold)
{
    text_table(o, vs, verbose, fold);
    if (github)
        github_annotations(o, vs);
}

void gmt_render_check_groups(FILE *o, const struct gmt_job *j)
{
    fprintf(o, "the traces: %zu rank%s in %zu group%s of ranks alike: ", j->n, j->n == 1 ? "" : "s",
            j->n_groups, j->n_groups == 1 ? "" : "s");
    for (size_t k = 0; k < j->n_groups; k++) {
        char ranks[512];
        size_t cnt, rep;
        gmt_job_group_ranks(j, j->order[k], ranks, sizeof ranks, &cnt, &rep);
        if (cnt > 1)
            fprintf(o, "%sranks %s (%zu alike)", k ? "; " : "", ranks, cnt);
        else
            fprintf(o, "%srank %s", k ? "; " : "", ranks);
    }
    fprintf(o, "\n");
}

/* ---- untracked memory per rank: shown beside the checks, never gated ---- */

struct upart {
    const char *name;
    size_t has, val;           /* offsets in struct gmt_job_rank of its bool and its bytes */
    const struct gmt_job_spread *s;
    const char *why;           /* why a trace may lack it */
};

static size_t uparts_of(const struct gmt_job *j, struct upart *p)
{
    size_t n = 0;
    p[n++] = (struct upart){"CUDA context", offsetof(struct gmt_job_rank, has_context),
                            offsetof(struct gmt_job_rank, u_context), &j->u_context,
                            "no sample of the device before its first allocation"};
    p[n++] = (struct upart){"local-memory reservation", offsetof(struct gmt_job_rank, has_reserv),
                            offsetof(struct gmt_job_rank, u_reserv), &j->u_reserv,
                            "no limits in the traces (format < 2.6)"};
    p[n++] = (struct upart){"other processes", offsetof(struct gmt_job_rank, has_other),
                            offsetof(struct gmt_job_rank, u_other), &j->u_other,
                            "no NVML process list in the traces"};
    return n;
}

/* A part's figure of rank r into buf: its bytes, or "?" unmeasured. */
static const char *upart_value(const struct gmt_job_rank *r, const struct upart *p, char *buf, size_t len)
{
    const char *base = (const char *)r;
    if (!*(const bool *)(base + p->has)) {
        snprintf(buf, len, "?");
        return buf;
    }
    uint64_t v;
    memcpy(&v, base + p->val, sizeof v);
    return gmt_fmt_bytes(buf, len, v);
}

static bool any_untracked(const struct gmt_job *j)
{
    return j && (j->u_context.known || j->u_reserv.known || j->u_other.known);
}

void gmt_render_check_untracked(FILE *o, const struct gmt_job *j, bool verbose, bool aggregate, bool github)
{
    if (!any_untracked(j))
        return;
    struct upart p[3];
    size_t np = uparts_of(j, p);
    if (verbose) {
        fprintf(o, "untracked memory per rank, not gated (docs/untracked.md):\n");
        if (aggregate || j->n > GMT_CHECK_UNTRACKED_ROWS) {
            for (size_t k = 0; k < np; k++) {
                char a[GMT_FMT_LEN], b[GMT_FMT_LEN], c[GMT_FMT_LEN];
                const struct gmt_job_spread *s = p[k].s;
                if (!s->known)
                    fprintf(o, "  %-26s ?  %s\n", p[k].name, p[k].why);
                else if (s->min == s->max)
                    fprintf(o, "  %-26s %s on every rank\n", p[k].name, gmt_fmt_bytes(a, sizeof a, s->min));
                else
                    fprintf(o, "  %-26s min %s (rank %" PRId32 ")  median %s  max %s (rank %" PRId32 ")\n",
                            p[k].name, gmt_fmt_bytes(a, sizeof a, s->min), s->min_rank,
                            gmt_fmt_bytes(b, sizeof b, s->median), gmt_fmt_bytes(c, sizeof c, s->max),
                            s->max_rank);
            }
        } else {
            fprintf(o, "  %-8s %12s %26s %16s\n", "", p[0].name, p[1].name, p[2].name);
            for (size_t i = 0; i < j->n; i++) {
                char who[32], v[3][GMT_FMT_LEN];
                if (j->r[i].rank >= 0)
                    snprintf(who, sizeof who, "rank %" PRId32, j->r[i].rank);
                else
                    snprintf(who, sizeof who, "?");
                for (size_t k = 0; k < np; k++)
                    upart_value(&j->r[i], &p[k], v[k], sizeof v[k]);
                fprintf(o, "  %-8s %12s %26s %16s\n", who, v[0], v[1], v[2]);
            }
        }
    }
    for (size_t i = 0; i < j->n; i++) {
        const char *cause = j->r[i].cause;
        if (!cause[0])
            continue;
        char who[32];
        if (j->r[i].rank >= 0)
            snprintf(who, sizeof who, "rank %" PRId32, j->r[i].rank);
        else
            snprintf(who, sizeof who, "a rank of unknown number");
        fprintf(o, "NOTE  %s: untracked memory stands out, not gated: %s\n", who, cause);
        if (github) {
            fprintf(o, "::notice title=gpumemtrace::%s: untracked memory stands out: ", who);
            gh_escape(o, cause);
            fputc('\n', o);
        }
    }
}

/* Markdown table cells: no '|' or newline may end one. */
static void md_cell(FILE *o, const char *s)
{
    for (; *s; s++) {
        if (*s == '|')
            fputs("\\|", o);
        else if (*s == '\n' || *s == '\r')
            fputc(' ', o);
        else
            fputc(*s, o);
    }
}

void gmt_render_check_step_summary(FILE *o, const struct gmt_verdicts *vs)
{
    size_t checked = vs->n - vs->gone;
    if (!vs->fails) {
        fprintf(o, "### gpumemtrace check: ok\n\n%zu checks within their limits (%zu new, %zu gone).\n\n",
                checked, vs->added, vs->gone);
        return;
    }
    fprintf(o, "### gpumemtrace check: FAILED\n\n%zu of %zu checks grew beyond their limits.\n\n"
               "| who | check | base | now | growth | limit |\n|---|---|---:|---:|---:|---:|\n",
            vs->fails, checked);
    size_t shown = 0;
    for (size_t k = 0; k < vs->n; k++) {
        const struct gmt_verdict *r = &vs->v[k];
        if (r->kind != GMT_FAIL)
            continue;
        if (++shown > 100) {
            fprintf(o, "\n%zu more not shown: see the step's log.\n", vs->fails - 100);
            break;
        }
        char who[64], what[256], b[GMT_FMT_LEN], nw[GMT_FMT_LEN], d[GMT_FMT_LEN], l[GMT_FMT_LEN];
        gmt_metric_who(r->now, who, sizeof who);
        gmt_metric_what(r->now, what, sizeof what);
        fputs("| ", o);
        md_cell(o, who);
        fputs(" | ", o);
        md_cell(o, what);
        gmt_fmt_bytes(l, sizeof l, r->allowed);
        fprintf(o, " | %s | %s | %s | +%s |\n",
                r->base ? fmt_value(b, sizeof b, r->base->value) : "new",
                fmt_value(nw, sizeof nw, r->now->value), fmt_delta(d, sizeof d, r->growth), l);
    }
    fputc('\n', o);
}
