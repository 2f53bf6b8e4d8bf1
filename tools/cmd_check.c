/* cmd_check.c: `gpumemtrace check`: gates NCCL memory growth in CI against a reviewed baseline; writes baselines. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "args.h"
#include "cli.h"
#include "report.h"
#include "util.h"

const char gmt_help_check[] =
    "usage: gpumemtrace check [options] TRACE... --baseline FILE\n"
    "       gpumemtrace check [options] TRACE... --write-baseline FILE\n"
    "\n"
    "Compares the NCCL memory of traced processes with a baseline and fails (exit 1)\n"
    "when something grew beyond its limit. TRACE is a trace file or a directory of\n"
    "them (what 'gpumemtrace run -o DIR' writes); processes are matched by rank (by\n"
    "file-name order when the rank is unknown). Per process it checks:\n"
    "  init        tracked device bytes each communicator init/split added\n"
    "  first_call  tracked device bytes each collective's first call added\n"
    "  steady      the most one later call of a collective added (expected 0)\n"
    "  peak        peak tracked device memory per device (--category: that category's)\n"
    "  leak        tracked device memory still live at exit (--category: that category's)\n"
    "A check fails when  new - base > max(base * max_growth, max_bytes).\n"
    "Collectives are matched by op, communicator size and rank and bytes per call; one\n"
    "not in the baseline is growth from 0, one gone from the traces is reported only.\n"
    "\n"
    "options:\n"
    "  --baseline FILE        the baseline to compare with (docs/ci-gate.md)\n"
    "  --write-baseline FILE  write the traces' metrics and the limits given as a new\n"
    "                         baseline ('-': standard output) and exit 0\n"
    "  --max-growth SPEC      relative limit: 5% (default), or per check:\n"
    "                         '5%,peak=10%,first_call=0%' (a bare value is the default)\n"
    "  --max-bytes SPEC       absolute limit: 0 (default), 64MiB, '1MiB,steady=0'\n"
    "                         (B, KiB, MiB, GiB, TiB; K/M/G/T the same; KB/MB/GB decimal)\n"
    "  --category NAME        peak and leak count only this category (nccl, pytorch, ...)\n"
    "  --junit FILE           also write JUnit XML, one test case per check\n"
    "  --debug-paths DIR      extra directories for binaries and debug files (repeatable)\n"
    "Limits given here override the baseline's, check by check; a default given here\n"
    "overrides all of the baseline's. With GITHUB_ACTIONS set, failures are also printed\n"
    "as ::error annotations.\n"
    "\n"
    "Exit status: 0 within limits (or baseline written), 1 a limit exceeded, 2 bad usage\n"
    "or unreadable input.\n";

enum verdict { V_PASS, V_FAIL, V_GONE };

struct result {
    enum verdict v;
    const struct gmt_metric *base, *now;   /* either may be NULL (new / gone) */
    int64_t growth;
    uint64_t allowed, ppm, max_bytes;
};

static int64_t sat_sub(int64_t a, int64_t b)
{
    if (b < 0 && a > INT64_MAX + b)
        return INT64_MAX;
    if (b > 0 && a < INT64_MIN + b)
        return INT64_MIN;
    return a - b;
}

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

static const char *verdict_name(enum verdict v)
{
    return v == V_PASS ? "PASS" : v == V_FAIL ? "FAIL" : "GONE";
}

/* The numbers of one result as a sentence, for JUnit and annotations. */
static void describe(const struct result *r, char *buf, size_t len)
{
    char b[GMT_FMT_LEN], n[GMT_FMT_LEN], d[GMT_FMT_LEN], l[GMT_FMT_LEN], p[GMT_FMT_LEN];
    gmt_fmt_ppm(p, sizeof p, r->ppm);
    if (r->v == V_GONE) {
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

static int write_junit(const char *path, const struct result *res, size_t n, size_t fails,
                       size_t gone)
{
    FILE *o = fopen(path, "w");
    if (!o)
        return -errno;
    fprintf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<testsuites name=\"gpumemtrace check\" tests=\"%zu\" failures=\"%zu\">\n"
               "  <testsuite name=\"gpumemtrace check\" tests=\"%zu\" failures=\"%zu\" "
               "skipped=\"%zu\" errors=\"0\">\n", n, fails, n, fails, gone);
    for (size_t i = 0; i < n; i++) {
        const struct result *r = &res[i];
        const struct gmt_metric *m = r->now ? r->now : r->base;
        char who[64], what[256], msg[512];
        gmt_metric_who(m, who, sizeof who);
        gmt_metric_what(m, what, sizeof what);
        describe(r, msg, sizeof msg);
        fprintf(o, "    <testcase classname=\"gpumemtrace.");
        xml_text(o, who);
        fprintf(o, "\" name=\"");
        xml_text(o, what);
        fprintf(o, "\"");
        if (r->v == V_PASS) {
            fprintf(o, "/>\n");
            continue;
        }
        fprintf(o, ">\n      <%s message=\"", r->v == V_FAIL ? "failure" : "skipped");
        xml_text(o, msg);
        if (r->v == V_FAIL) {
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

static int write_baseline(const char *path, const struct gmt_baseline *b)
{
    if (!strcmp(path, "-"))
        return gmt_baseline_write(stdout, b);
    FILE *o = fopen(path, "w");
    if (!o)
        return -errno;
    int r = gmt_baseline_write(o, b);
    if (fclose(o) && !r)
        r = -EIO;
    return r;
}

struct check_args {
    const char *baseline_path, *write_path, *junit, *category;
    struct gmt_limits cli;
};

static const struct option check_opts[] = {
    {"baseline", required_argument, 0, 'b'}, {"write-baseline", required_argument, 0, 'w'},
    {"max-growth", required_argument, 0, 'g'}, {"max-bytes", required_argument, 0, 'm'},
    {"category", required_argument, 0, 'c'}, {"junit", required_argument, 0, 'j'},
    {0, 0, 0, 0}};

static int check_opt(void *ctx, int c, const char *arg)
{
    struct check_args *ca = ctx;
    char err[512];
    switch (c) {
    case 'b': ca->baseline_path = arg; break;
    case 'w': ca->write_path = arg; break;
    case 'j': ca->junit = arg; break;
    case 'g':
        if (gmt_limits_parse_growth(&ca->cli, arg, err, sizeof err))
            return gmt_cli_usage_error("check", "%s", err);
        break;
    case 'm':
        if (gmt_limits_parse_bytes(&ca->cli, arg, err, sizeof err))
            return gmt_cli_usage_error("check", "%s", err);
        break;
    case 'c':
        if (!gmt_category_name_ok(arg, strlen(arg)))
            return gmt_cli_usage_error("check", "--category wants a category name (nccl, "
                                       "pytorch, user, ...), not '%s'", arg);
        ca->category = arg;
        break;
    }
    return 0;
}

int gmt_cmd_check(int argc, char **argv)
{
    struct check_args ca = {0};
    struct gmt_args args;
    gmt_args_init(&args);
    const struct gmt_args_spec spec = {
        .cmd = "check", .help = gmt_help_check, .shared = GMT_ARGS_DEBUG_PATHS,
        .own = check_opts, .own_opt = check_opt, .ctx = &ca, .optstring = "",
        .unknown = "unknown option or missing value"};
    int rc = gmt_args_parse(&spec, argc, argv, &args);
    if (rc >= 0)
        return rc;
    const struct gmt_report_opts ro = args.ro;
    const char *baseline_path = ca.baseline_path, *write_path = ca.write_path;
    const char *junit = ca.junit, *category = ca.category;
    struct gmt_limits cli = ca.cli;
    char err[512];
    int first = args.first;
    if (first >= argc)
        return gmt_cli_usage_error("check", "no trace given");
    if (!baseline_path == !write_path)
        return gmt_cli_usage_error("check", "give one of --baseline FILE or --write-baseline FILE");
    if (write_path && junit)
        return gmt_cli_usage_error("check", "--junit goes with --baseline");

    struct gmt_baseline base;
    memset(&base, 0, sizeof base);
    if (baseline_path) {
        if (gmt_baseline_load(&base, baseline_path, err, sizeof err)) {
            fprintf(stderr, "gpumemtrace: %s\n", err);
            return GMT_EXIT_ERROR;
        }
        if (category && base.category[0] && strcmp(category, base.category)) {
            fprintf(stderr, "gpumemtrace: %s: written with --category %s, asked for %s: the "
                    "numbers would not compare (write a new baseline)\n", baseline_path,
                    base.category, category);
            gmt_baseline_free(&base);
            return GMT_EXIT_ERROR;
        }
        if (!category && base.category[0])
            category = base.category;
        if (category && !base.category[0] && base.metrics.n) {
            fprintf(stderr, "gpumemtrace: %s: written without --category, asked for %s: the "
                    "numbers would not compare (write a new baseline)\n", baseline_path, category);
            gmt_baseline_free(&base);
            return GMT_EXIT_ERROR;
        }
    }

    char **paths;
    size_t n_paths;
    int status = GMT_EXIT_OK;
    if (gmt_expand_paths(argv + first, (size_t)(argc - first), &paths, &n_paths))
        status = GMT_EXIT_ERROR;
    struct gmt_metrics now = {0};
    if (gmt_metrics_from_paths(&now, paths, n_paths, &ro, category))
        status = GMT_EXIT_ERROR;
    gmt_free_paths(paths, n_paths);
    if (status == GMT_EXIT_OK && now.n == 0) {
        fprintf(stderr, "gpumemtrace: no device memory and no NCCL call in the traces: was the "
                "job traced? (the traces are there, but empty)\n");
        status = GMT_EXIT_ERROR;
    }
    if (status != GMT_EXIT_OK) {
        gmt_metrics_free(&now);
        gmt_baseline_free(&base);
        return status;
    }
    gmt_metrics_sort(&now);

    if (write_path) {
        struct gmt_baseline nb = {.metrics = now, .limits = cli};
        if (category)
            snprintf(nb.category, sizeof nb.category, "%s", category);
        int r = write_baseline(write_path, &nb);
        if (r) {
            fprintf(stderr, "gpumemtrace: %s: cannot write the baseline: %s\n", write_path,
                    strerror(-r));
            status = GMT_EXIT_ERROR;
        } else if (strcmp(write_path, "-")) {
            printf("gpumemtrace check: wrote %zu metrics to %s\n", now.n, write_path);
        }
        gmt_metrics_free(&now);
        return status;
    }

    /* merge the two sorted lists */
    size_t cap = now.n + base.metrics.n, n = 0;
    struct result *res = calloc(cap ? cap : 1, sizeof *res);
    if (!res) {
        fprintf(stderr, "gpumemtrace: out of memory\n");
        gmt_metrics_free(&now);
        gmt_baseline_free(&base);
        return GMT_EXIT_ERROR;
    }
    size_t i = 0, j = 0, fails = 0, gone = 0, added = 0;
    while (i < base.metrics.n || j < now.n) {
        struct result *r = &res[n++];
        int cmp = i >= base.metrics.n ? 1 : j >= now.n ? -1
                                                       : gmt_metric_cmp(&base.metrics.v[i], &now.v[j]);
        if (cmp < 0) {
            r->v = V_GONE;
            r->base = &base.metrics.v[i++];
            gmt_limits_resolve(&cli, &base.limits, r->base->check, &r->ppm, &r->max_bytes);
            gone++;
            continue;
        }
        r->now = &now.v[j++];
        if (cmp == 0)
            r->base = &base.metrics.v[i++];
        else
            added++;
        int64_t b = r->base ? r->base->value : 0;
        gmt_limits_resolve(&cli, &base.limits, r->now->check, &r->ppm, &r->max_bytes);
        r->growth = sat_sub(r->now->value, b);
        r->allowed = gmt_limit_allowed(b, r->ppm, r->max_bytes);
        r->v = r->growth > 0 && (uint64_t)r->growth > r->allowed ? V_FAIL : V_PASS;
        if (r->v == V_FAIL)
            fails++;
    }

    /* aligned text: widths from the rows themselves */
    int ww = 0, wt = 0, wb = 0, wn = 0, wd = 0;
    for (size_t k = 0; k < n; k++) {
        const struct gmt_metric *m = res[k].now ? res[k].now : res[k].base;
        char s[256], b[GMT_FMT_LEN];
        int l;
        if ((l = (int)strlen(gmt_metric_who(m, s, sizeof s))) > ww) ww = l;
        if ((l = (int)strlen(gmt_metric_what(m, s, sizeof s))) > wt) wt = l;
        if (res[k].base && (l = (int)strlen(fmt_value(b, sizeof b, res[k].base->value))) > wb) wb = l;
        if (res[k].now && (l = (int)strlen(fmt_value(b, sizeof b, res[k].now->value))) > wn) wn = l;
        if (res[k].now && (l = (int)strlen(fmt_delta(b, sizeof b, res[k].growth))) > wd) wd = l;
    }
    if (wb < 3) wb = 3;
    if (wn < 1) wn = 1;
    for (size_t k = 0; k < n; k++) {
        const struct result *r = &res[k];
        const struct gmt_metric *m = r->now ? r->now : r->base;
        char who[64], what[256], b[GMT_FMT_LEN], nw[GMT_FMT_LEN], d[GMT_FMT_LEN], l[GMT_FMT_LEN];
        gmt_metric_who(m, who, sizeof who);
        gmt_metric_what(m, what, sizeof what);
        printf("%s  %-*s  %-*s  %*s -> %*s  ", verdict_name(r->v), ww, who, wt, what, wb,
               r->base ? fmt_value(b, sizeof b, r->base->value) : "new", wn,
               r->now ? fmt_value(nw, sizeof nw, r->now->value) : "-");
        if (r->v == V_GONE) {
            printf("(not in the traces)\n");
            continue;
        }
        fmt_delta(d, sizeof d, r->growth);
        l[0] = '+';
        gmt_fmt_bytes(l + 1, sizeof l - 1, r->allowed);
        printf("%*s (limit %s)", wd, d, l);
        /* human units round: when they hide why it failed, say the bytes */
        if (r->v == V_FAIL && !strcmp(d, l))
            printf(" [+%" PRId64 " B > +%" PRIu64 " B]", r->growth, r->allowed);
        printf("\n");
    }
    if (fails)
        printf("FAILED: %zu of %zu checks grew beyond their limits", fails, n - gone);
    else
        printf("ok: %zu checks within their limits", n - gone);
    printf(" (%zu new, %zu gone; fails when new - base > max(base * max_growth, max_bytes))\n",
           added, gone);

    if (getenv("GITHUB_ACTIONS") && *getenv("GITHUB_ACTIONS"))
        for (size_t k = 0; k < n; k++) {
            if (res[k].v != V_FAIL)
                continue;
            char who[64], what[256], msg[512];
            gmt_metric_who(res[k].now, who, sizeof who);
            gmt_metric_what(res[k].now, what, sizeof what);
            describe(&res[k], msg, sizeof msg);
            printf("::error title=gpumemtrace::");
            gh_escape(stdout, who);
            printf(" ");
            gh_escape(stdout, what);
            printf(" grew beyond its limit: ");
            gh_escape(stdout, msg);
            printf("\n");
        }

    status = fails ? GMT_EXIT_FAIL : GMT_EXIT_OK;
    if (junit) {
        int r = write_junit(junit, res, n, fails, gone);
        if (r) {
            fprintf(stderr, "gpumemtrace: %s: cannot write JUnit XML: %s\n", junit, strerror(-r));
            status = GMT_EXIT_ERROR;
        }
    }
    free(res);
    gmt_metrics_free(&now);
    gmt_baseline_free(&base);
    return status;
}
