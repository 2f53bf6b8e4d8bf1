/* cmd_check.c: `gpumemtrace check`: gates NCCL memory growth in CI against a reviewed baseline; writes baselines. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "baseline.h"
#include "check_ranks.h"
#include "args.h"
#include "cli.h"
#include "job.h"
#include "report.h"
#include "render_check.h"
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
    "Untracked device memory (the CUDA context, the local-memory reservation, other\n"
    "processes on the GPU) is never gated: --verbose shows it per rank, and a rank whose\n"
    "part is well above the job's median (10% and 1 MiB) gets a NOTE with its cause.\n"
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
    "  --verbose              print every check, not only the failures\n"
    "  --per-rank             compare rank by rank, the ranks both sides have (the others\n"
    "                         are named); the default when both have the same ranks\n"
    "  --aggregate            compare the job: each check's min, median and max across\n"
    "                         ranks (world sizes may differ); the traces' groups of ranks\n"
    "                         alike (as summary groups them) are named first, and a check\n"
    "                         whose min, median and max agree is one row, 'all ranks'\n"
    "  --debug-dir DIR        extra directories for binaries and debug files (repeatable)\n"
    "Limits given here override the baseline's, check by check; a default given here\n"
    "overrides all of the baseline's. When the baseline and the traces cover different\n"
    "ranks, the check fails with one message unless --per-rank or --aggregate says how\n"
    "to compare. With GITHUB_ACTIONS set, failures are also printed as ::error\n"
    "annotations (at most 10; the last counts the rest); with GITHUB_STEP_SUMMARY set,\n"
    "the verdict and a table of failures are appended to that file.\n"
    "\n"
    "Exit status: 0 within limits (or baseline written), 1 a limit exceeded, 2 bad usage\n"
    "or unreadable input.\n";

struct check_args {
    const char *baseline_path, *write_path, *junit, *category;
    struct gmt_limits cli;
    bool verbose, per_rank, aggregate;
};

static const struct option check_opts[] = {
    {"baseline", required_argument, 0, 'b'}, {"write-baseline", required_argument, 0, 'w'},
    {"max-growth", required_argument, 0, 'g'}, {"max-bytes", required_argument, 0, 'm'},
    {"category", required_argument, 0, 'c'}, {"junit", required_argument, 0, 'j'},
    {"verbose", no_argument, 0, 'v'}, {"per-rank", no_argument, 0, 'p'},
    {"aggregate", no_argument, 0, 'a'}, {0, 0, 0, 0}};

static int check_opt(void *ctx, int c, const char *arg)
{
    struct check_args *ca = ctx;
    char err[512];
    switch (c) {
    case 'b': ca->baseline_path = arg; break;
    case 'w': ca->write_path = arg; break;
    case 'j': ca->junit = arg; break;
    case 'v': ca->verbose = true; break;
    case 'p': ca->per_rank = true; break;
    case 'a': ca->aggregate = true; break;
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

/* The baseline at path, its category reconciled with --category (*category, which may
 * then point into base): 0, or the exit status after saying why not. */
static int load_baseline(struct gmt_baseline *base, const char *path, const char **category)
{
    char err[512];
    if (gmt_baseline_load(base, path, err, sizeof err)) {
        gmt_err("gpumemtrace: %s", err);
        return GMT_EXIT_ERROR;
    }
    const char *cat = *category;
    if (cat && base->category[0] && strcmp(cat, base->category)) {
        gmt_err("gpumemtrace: %s: written with --category %s, asked for %s: the "
                "numbers would not compare (write a new baseline)", path,
                base->category, cat);
        return GMT_EXIT_ERROR;
    }
    if (!cat && base->category[0])
        *category = cat = base->category;
    if (cat && !base->category[0] && base->metrics.n) {
        gmt_err("gpumemtrace: %s: written without --category, asked for %s: the "
                "numbers would not compare (write a new baseline)", path, cat);
        return GMT_EXIT_ERROR;
    }
    return GMT_EXIT_OK;
}

/* The metrics of the traces named by the operands, sorted by identity: GMT_EXIT_OK, or
 * the exit status after saying why not. */
static int measure(struct gmt_metrics *now, char *const *operands, size_t n,
                   const struct gmt_report_opts *ro, const char *category, struct gmt_job *job)
{
    char **paths;
    size_t n_paths;
    int status = GMT_EXIT_OK;
    struct gmt_msgs msgs = GMT_MSGS_INIT;
    if (gmt_expand_paths(operands, n, &paths, &n_paths, &msgs))
        status = GMT_EXIT_ERROR;
    if (gmt_metrics_from_paths_job(now, paths, n_paths, ro, category, &msgs, job) ||
        (job && gmt_job_finish(job)))
        status = GMT_EXIT_ERROR;
    gmt_msgs_print(&msgs, stderr);
    gmt_free_paths(paths, n_paths);
    if (status == GMT_EXIT_OK && now->n == 0) {
        gmt_err("gpumemtrace: no device memory and no NCCL call in the traces: was the "
                "job traced? (the traces are there, but empty)");
        status = GMT_EXIT_ERROR;
    }
    if (status == GMT_EXIT_OK)
        gmt_metrics_sort(now);
    return status;
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

/* --write-baseline: the metrics measured and the limits given, as a new baseline. */
static int write_new_baseline(const char *path, const struct gmt_metrics *now,
                              const struct gmt_limits *cli, const char *category,
                              const struct gmt_nccl_print *nccl)
{
    struct gmt_baseline nb = {.metrics = *now, .limits = *cli, .nccl = *nccl};
    if (category)
        snprintf(nb.category, sizeof nb.category, "%s", category);
    int r = write_baseline(path, &nb);
    if (r) {
        gmt_err("gpumemtrace: %s: cannot write the baseline: %s", path, strerror(-r));
        return GMT_EXIT_ERROR;
    }
    if (strcmp(path, "-"))
        printf("gpumemtrace check: wrote %zu metrics to %s\n", now->n, path);
    return GMT_EXIT_OK;
}

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* The one message of a rank-set change: printed, annotated, summarised; exit 1. */
static int ranks_differ(const struct gmt_whos *bw, const struct gmt_whos *nw)
{
    char b[600], n[600], msg[1400];
    snprintf(msg, sizeof msg, "the baseline has %s, the traces have %s: compare with "
             "--per-rank (the ranks both have) or --aggregate (min/median/max across ranks)",
             gmt_whos_text(bw, b, sizeof b), gmt_whos_text(nw, n, sizeof n));
    printf("FAILED: %s\n", msg);
    const char *gh = getenv("GITHUB_ACTIONS");
    if (gh && *gh)
        printf("::error title=gpumemtrace::%s\n", msg);
    const char *sum = getenv("GITHUB_STEP_SUMMARY");
    FILE *o = sum && *sum ? fopen(sum, "a") : NULL;
    if (o) {
        fprintf(o, "### gpumemtrace check: FAILED\n\n%s\n\n", msg);
        fclose(o);
    }
    return GMT_EXIT_FAIL;
}

/* --baseline: each metric against the baseline's, rendered; the exit status. `base` and
 * `now` are the side's own, changed here (ranks kept, or the job's aggregates); job: the
 * traces' ranks, their groups alike named with --aggregate, their untracked memory shown
 * beside the checks (never gated). */
static int compare(struct gmt_baseline *base, struct gmt_metrics *now, const struct check_args *ca,
                   const struct timespec *t0, const struct gmt_nccl_print *nccl,
                   const struct gmt_job *job)
{
    char changed[1024];
    if (gmt_safe_stdout())
        return GMT_EXIT_ERROR;
    if (gmt_nccl_print_diff(&base->nccl, nccl, changed, sizeof changed)[0])
        printf("NCCL changed since the baseline: %s\n", changed);
    struct gmt_whos bw = {0}, nw = {0};
    struct gmt_metrics bagg = {0}, nagg = {0};
    const struct gmt_metrics *bm = &base->metrics, *nm = now;
    int status = GMT_EXIT_OK;
    if (gmt_whos_of(&bw, bm) || gmt_whos_of(&nw, nm))
        status = GMT_EXIT_ERROR;
    bool same = status == GMT_EXIT_OK && gmt_whos_equal(&bw, &nw);
    if (status == GMT_EXIT_OK && ca->aggregate) {
        if (gmt_metrics_across_ranks(&bagg, bm) || gmt_metrics_across_ranks(&nagg, nm))
            status = GMT_EXIT_ERROR;
        bm = &bagg;
        nm = &nagg;
        gmt_render_check_groups(stdout, job);
        if (!same) {
            char b[600], n[600];
            printf("the job across ranks: the baseline has %s, the traces have %s\n",
                   gmt_whos_text(&bw, b, sizeof b), gmt_whos_text(&nw, n, sizeof n));
        }
    } else if (status == GMT_EXIT_OK && !same) {
        if (!ca->per_rank) {
            status = ranks_differ(&bw, &nw);
            goto out;
        }
        char only[600];
        if (gmt_whos_minus(&nw, &bw, only, sizeof only)[0])
            printf("not in the baseline, not checked: %s\n", only);
        if (gmt_whos_minus(&bw, &nw, only, sizeof only)[0])
            printf("not in the traces, not checked: %s\n", only);
        /* nw becomes the ranks both sides have */
        gmt_whos_intersect(&nw, &bw);
        gmt_metrics_keep(&base->metrics, &nw);
        gmt_metrics_keep(now, &nw);
    }
    if (status != GMT_EXIT_OK) {
        gmt_err("gpumemtrace: out of memory");
        goto out;
    }
    const char *gh = getenv("GITHUB_ACTIONS");
    gmt_render_check_untracked(stdout, job, ca->verbose, ca->aggregate, gh && *gh);
    struct gmt_verdicts vs;
    if (gmt_verdicts_of(&vs, bm, &base->limits, nm, &ca->cli)) {
        gmt_err("gpumemtrace: out of memory");
        status = GMT_EXIT_ERROR;
        goto out;
    }
    /* across ranks, the min, median and max that agree are one row */
    unsigned char *fold = ca->aggregate ? malloc(vs.n ? vs.n : 1) : NULL;
    if (fold)
        gmt_verdicts_fold(&vs, fold);
    gmt_render_check_text(stdout, &vs, ca->verbose, gh && *gh, fold);
    free(fold);
    status = vs.fails ? GMT_EXIT_FAIL : GMT_EXIT_OK;
    const char *sum = getenv("GITHUB_STEP_SUMMARY");
    if (sum && *sum) {
        FILE *f = fopen(sum, "a"), *o = f ? gmt_safe_stream(f) : NULL;
        if (f && !o)
            fclose(f);
        if (o) {
            gmt_render_check_step_summary(o, &vs);
            fclose(o);
        } else {
            gmt_err("gpumemtrace: GITHUB_STEP_SUMMARY %s: %s (the step summary is not written)",
                    sum, strerror(errno));
        }
    }
    if (ca->junit) {
        int r = gmt_render_check_junit(ca->junit, &vs, seconds_since(t0));
        if (r) {
            gmt_err("gpumemtrace: %s: cannot write JUnit XML: %s", ca->junit, strerror(-r));
            status = GMT_EXIT_ERROR;
        }
    }
    gmt_verdicts_free(&vs);
out:
    gmt_whos_free(&bw);
    gmt_whos_free(&nw);
    gmt_metrics_free(&bagg);
    gmt_metrics_free(&nagg);
    return status;
}

int gmt_cmd_check(int argc, char **argv)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    struct check_args ca = {0};
    struct gmt_args args;
    gmt_args_init(&args);
    args.ro.nccl_model = false; /* none of its outputs shows NCCL's memory by purpose */
    args.ro.sites = false;      /* nor the summary's sites */
    const struct gmt_args_spec spec = {
        .cmd = "check", .help = gmt_help_check, .shared = GMT_ARGS_DEBUG_PATHS,
        .own = check_opts, .own_opt = check_opt, .ctx = &ca, .optstring = "",
        .unknown = "unknown option"};
    int status = gmt_args_parse(&spec, argc, argv, &args);
    if (status >= 0)
        return status;
    if (args.first >= argc)
        return gmt_cli_usage_error("check", "no trace given");
    if (!ca.baseline_path == !ca.write_path)
        return gmt_cli_usage_error("check", "give one of --baseline FILE or --write-baseline FILE");
    if (ca.write_path && (ca.junit || ca.per_rank || ca.aggregate))
        return gmt_cli_usage_error("check", "--junit, --per-rank and --aggregate go with --baseline");
    if (ca.per_rank && ca.aggregate)
        return gmt_cli_usage_error("check", "give one of --per-rank or --aggregate");

    struct gmt_baseline base;
    memset(&base, 0, sizeof base);
    const char *category = ca.category;
    struct gmt_metrics now = {0};
    if (ca.baseline_path)
        status = load_baseline(&base, ca.baseline_path, &category);
    else
        status = GMT_EXIT_OK;
    struct gmt_job job;
    gmt_job_init(&job);
    if (status == GMT_EXIT_OK)
        status = measure(&now, argv + args.first, (size_t)(argc - args.first), &args.ro,
                         category, ca.write_path ? NULL : &job);
    /* what of NCCL the run had: the first trace's (the ranks of a job share it) */
    static struct gmt_nccl_print nccl;
    if (status == GMT_EXIT_OK) {
        char **paths = NULL;
        size_t n_paths = 0;
        struct gmt_msgs msgs = GMT_MSGS_INIT;
        if (gmt_expand_paths(argv + args.first, (size_t)(argc - args.first), &paths, &n_paths,
                             &msgs) == 0)
            (void)gmt_nccl_print_of_paths(paths, n_paths, &nccl);
        gmt_msgs_print(&msgs, stderr); /* measure() read the same paths: none, normally */
        gmt_free_paths(paths, n_paths);
    }
    if (status == GMT_EXIT_OK)
        status = ca.write_path ? write_new_baseline(ca.write_path, &now, &ca.cli, category, &nccl)
                               : compare(&base, &now, &ca, &t0, &nccl, &job);
    gmt_job_free(&job);
    gmt_metrics_free(&now);
    gmt_baseline_free(&base);
    return status;
}
