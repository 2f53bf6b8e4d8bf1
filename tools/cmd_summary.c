/* cmd_summary.c: `gpumemtrace summary`: what was traced, the peak, per-collective deltas, sites, leaks, failures. */
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "job.h"
#include "job_read.h"
#include "jobs.h"
#include "metrics.h"
#include "reader.h"
#include "replay.h"
#include "select.h"
#include "render.h"
#include "report.h"
#include "trace.h"
#include "util.h"

const char gmt_help_summary[] =
    "usage: gpumemtrace summary [options] TRACE...\n"
    "\n"
    "Where the device memory of each traced process went: what was traced, the peak\n"
    "per device with its breakdown by category and the memory no allocation call\n"
    "explains (untracked), each NCCL collective's first-call and later deltas, the\n"
    "top allocation sites, leaks at exit, and allocation failures.\n"
    "\n"
    "options:\n"
    "  --json            one JSON document (schema: docs/summary-json.md)\n"
    "  --csv             the tables as CSV, each with one header line: every table as\n"
    "                    DIR/TABLE.csv with -o DIR, or --table NAME alone on stdout\n"
    "  --table NAME      with --csv: only this table, on stdout: one of traces,\n"
    "                    devices, categories, collectives, nccl_memory, phases,\n"
    "                    phase_stacks, steps, sites, leaks, held, failures, open_at_end,\n"
    "                    job_ranks, job_collectives (docs/summary-json.md)\n"
    "  -o, --output OUT  write there, not on stdout: the document, or with --csv the\n"
    "                    directory of the tables (made if missing)\n"
    "  --top N           allocation sites and leaks to show (default 10)\n"
    "  --device N        only device N\n"
    "  --from SEC        ignore peaks and failures before SEC seconds into the trace\n"
    "  --to SEC          stop the replay at SEC seconds into the trace\n"
    "  --op NAME         only collectives of this op (AllReduce, Group, ...)\n"
    "  --debug-dir DIR   extra directories to look for binaries and debug files (repeatable)\n"
    "  --category NAME=GLOB  add a category rule for modules matching GLOB (repeatable)\n"
    "  --width N         output width (default: the terminal's, else 100)\n"
    "  --frames N        stack frames shown per site, from where the code asked (1..64;\n"
    "                    default 3, 5 from width 140); never so few that two sites look alike\n"
    "  --internal GLOB   frames whose function or module matches are allocator internals,\n"
    "                    skipped before a site (repeatable; built-in: docs/stacks.md)\n"
    "  --every-rank, --per-rank\n"
    "                    of several traces, every trace's report (default: one report for\n"
    "                    each group of ranks that behave alike, after the job's overview)\n"
    "  --no-symbols      show module+offset, open no binary (fast; traces from elsewhere)\n"
    "  --step REGEX      the NVTX range that marks a training step (POSIX ERE, any case;\n"
    "                    default: step, train_step, iteration, iter N, ProfilerStep#N,\n"
    "                    batch ...: docs/phases.md)\n"
    "\n"
    "Several traces (files, directories searched for *.gmt, packs, globs quoted or\n"
    "not) are one job: the summary opens with the job's overview (ranks, hosts, world\n"
    "size, the spread of each figure over the ranks, the ranks and collectives that\n"
    "stand out and the recorded differences that explain them), then one report per\n"
    "group of ranks alike.\n"
    "JSON and CSV always hold every trace. A --device, --op or --step that matches\n"
    "nothing in any trace read is an error that lists what the traces have.\n";

static int term_width(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 60)
        return ws.ws_col;
    return 100;
}

static const struct option summary_opts[] = {
    {"device", required_argument, 0, 'd'},
    {"from", required_argument, 0, 'f'}, {"to", required_argument, 0, 'T'},
    {"op", required_argument, 0, 'O'},   {"category", required_argument, 0, 'C'},
    {"table", required_argument, 0, 't'},
    {"width", required_argument, 0, 'w'}, {"per-rank", no_argument, 0, 'p'},
    {"every-rank", no_argument, 0, 'p'},
    {"step", required_argument, 0, 's'}, {0, 0, 0, 0}};

struct summary_ctx {
    struct gmt_report_opts *ro;
    bool per_rank;
    int table;                 /* --table: an enum gmt_csv_table, -1 none */
};

/* The CSV tables' names, "traces, devices, ...". */
static const char *table_list(void)
{
    static char buf[512];
    size_t at = 0;
    for (int t = 0; t < GMT_CSV_COUNT && at < sizeof buf; t++)
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s", t ? ", " : "", gmt_csv_names[t]);
    return buf;
}

static int summary_opt(void *ctx, int c, const char *arg)
{
    struct summary_ctx *sc = ctx;
    struct gmt_report_opts *ro = sc->ro;
    if (c == 'p') {
        sc->per_rank = true;
        return 0;
    }
    long v;
    switch (c) {
    case 't':
        if ((sc->table = gmt_csv_find(arg)) < 0)
            return gmt_cli_usage_error("summary", "--table wants one of %s, not '%s'",
                                       table_list(), arg);
        return 0;
    case 'd':
        if (gmt_cli_long(arg, 0, 4096, &v))
            return gmt_cli_usage_error("summary", "--device wants a device ordinal, not '%s'", arg);
        ro->device = (int)v;
        return 0;
    case 'f':
        if (gmt_cli_seconds(arg, &ro->from_ns))
            return gmt_cli_usage_error("summary", "--from wants seconds, not '%s'", arg);
        return 0;
    case 'T':
        if (gmt_cli_seconds(arg, &ro->to_ns))
            return gmt_cli_usage_error("summary", "--to wants seconds, not '%s'", arg);
        return 0;
    case 'O':
        if (!arg[0])
            return gmt_cli_usage_error("summary", "--op wants an op name, not ''");
        ro->op = arg;
        return 0;
    case 'C':
        if (gmt_report_opts_add_category(ro, arg))
            return gmt_cli_usage_error("summary", "--category wants NAME=GLOB, not '%s'", arg);
        return 0;
    case 's':
    {
        regex_t re;
        if (!arg[0] || regcomp(&re, arg, REG_EXTENDED | REG_ICASE | REG_NOSUB))
            return gmt_cli_usage_error("summary", "--step wants a regular expression, not '%s'", arg);
        regfree(&re);
        ro->step = arg;
        return 0;
    }
    case 'w':
        if (gmt_cli_long(arg, 40, 1000, &v))
            return gmt_cli_usage_error("summary", "--width wants 40..1000, not '%s'", arg);
        ro->width = (int)v;
        return 0;
    }
    return GMT_EXIT_ERROR;
}

/* In one report of a job whose traces the selections matched: --device and --op that
 * select nothing in this trace, said on stderr with what it has (the report then shows
 * the empty sections). */
static void say_unmatched(const struct gmt_analysis *a, const struct gmt_report_opts *ro)
{
    const struct gmt_report *rep = &a->rep;
    char have[512];
    size_t at = 0;
    have[0] = 0;
    if (ro->device >= 0) {
        bool found = false;
        for (size_t d = 0; d < rep->n_dev; d++) {
            found |= rep->dev[d].device == ro->device;
            if (at < sizeof have)
                at += (size_t)snprintf(have + at, sizeof have - at, "%s%d", d ? ", " : "",
                                       rep->dev[d].device);
        }
        if (!found)
            gmt_err("gpumemtrace: %s: device %d is not in the trace (it has %s)", a->t.path,
                    ro->device, rep->n_dev ? have : "none");
    }
    if (ro->op) {
        bool found = false;
        at = 0;
        have[0] = 0;
        for (size_t k = 0; k < rep->n_colls; k++) {
            found |= gmt_report_coll_selected(ro, &rep->colls[k]);
            bool dup = false;
            for (size_t k2 = 0; k2 < k && !dup; k2++)
                dup = !strcmp(rep->colls[k2].label, rep->colls[k].label);
            if (!dup && at < sizeof have)
                at += (size_t)snprintf(have + at, sizeof have - at, "%s%s", at ? ", " : "",
                                       rep->colls[k].label);
        }
        if (!found)
            gmt_err("gpumemtrace: %s: no NCCL call matches --op %s (the trace has: %s)", a->t.path,
                    ro->op, rep->n_colls ? have : "none");
    }
}

/* Where the summary goes: a renderer and its file each; CSV: one per table. */
struct outs {
    size_t n;
    const struct gmt_renderer *r[GMT_CSV_COUNT];
    FILE *f[GMT_CSV_COUNT];
    char *path[GMT_CSV_COUNT]; /* NULL: stdout */
};

/* out->r[0..n) are set: each one's file, out->path[k] or stdout. 0, or GMT_EXIT_ERROR
 * after saying which could not be created. */
static int outs_open(struct outs *out)
{
    for (size_t k = 0; k < out->n; k++) {
        /* the text a person reads: through a stream that lets no control byte pass */
        bool text = out->r[k] == &gmt_render_text;
        if (text && !out->path[k] && gmt_safe_stdout())
            return GMT_EXIT_ERROR;
        if (!(out->f[k] = gmt_output_open("summary", out->path[k])))
            return GMT_EXIT_ERROR;
        FILE *safe = text && out->path[k] ? gmt_safe_stream(out->f[k]) : NULL;
        if (text && out->path[k] && !safe) {
            fclose(out->f[k]);
            out->f[k] = NULL;
            gmt_err("gpumemtrace: out of memory");
            return GMT_EXIT_ERROR;
        }
        if (safe)
            out->f[k] = safe;
    }
    return 0;
}

/* Every table of --csv -o DIR as DIR/TABLE.csv. 0 or GMT_EXIT_ERROR (said why). */
static int outs_tables(struct outs *out, const char *dir)
{
    if (gmt_output_dir("summary", dir))
        return GMT_EXIT_ERROR;
    for (int t = 0; t < GMT_CSV_COUNT; t++) {
        out->r[out->n] = &gmt_render_csv[t];
        if (asprintf(&out->path[out->n], "%s/%s.csv", dir, gmt_csv_names[t]) < 0) {
            out->path[out->n] = NULL;
            gmt_err("gpumemtrace: out of memory");
            return GMT_EXIT_ERROR;
        }
        out->n++;
    }
    return outs_open(out);
}

/* Ends each document and closes its file: status, or GMT_EXIT_ERROR when one was lost. */
static int outs_close(struct outs *out, int status, bool ends)
{
    for (size_t k = 0; k < out->n; k++) {
        if (out->f[k]) {
            if (ends && out->r[k]->end)
                out->r[k]->end(out->f[k]);
            if (gmt_output_close("summary", out->f[k], out->path[k]))
                status = GMT_EXIT_ERROR;
        }
        free(out->path[k]);
    }
    return status;
}

static void outs_begin(const struct outs *out, const struct gmt_job *j, const struct gmt_report_opts *ro)
{
    for (size_t k = 0; k < out->n; k++)
        if (out->r[k]->begin)
            out->r[k]->begin(out->f[k], j, ro);
}

struct summary_run {
    const struct outs *out;
    const struct gmt_report_opts *ro;
    size_t written;
    bool alone;                /* the one trace given: its selections must match in it, and
                                * the document begins once they do */
    bool begun;
};

static int summary_one(void *ctx, size_t i, const struct gmt_analysis *a, FILE *o, char *err,
                       size_t errlen)
{
    struct summary_run *S = ctx;
    if (S->alone) {
        struct gmt_seen seen;
        gmt_seen_init(&seen);
        int r = gmt_seen_add(&seen, a, S->ro);
        if (r)
            gmt_err("gpumemtrace: out of memory");
        else
            r = gmt_seen_check(&seen, S->ro, "summary");
        gmt_seen_free(&seen);
        if (r)
            return 1; /* said why: the run stops, nothing is rendered */
        if (!S->begun)
            outs_begin(S->out, NULL, S->ro);
        S->begun = true;
    } else {
        say_unmatched(a, S->ro);
    }
    for (size_t k = 0; k < S->out->n; k++)
        S->out->r[k]->trace(S->out->f[k], a, S->ro, S->written);
    S->written++;
    return 0;
}

/* The reports of files[0..n), the first of them the `written`-th written. 0, or -1 when
 * some trace could not be read (the driver said why). alone: the one trace given, its
 * document begun here once its selections match (*begun then true). */
static int summarise(const struct outs *out, char *const *files, size_t n,
                     const struct gmt_report_opts *ro, size_t written, bool alone, bool *begun)
{
    struct summary_run S = {out, ro, written, alone, false};
    const struct gmt_jobs J = {.files = files, .n = n, .ro = ro, .trace = summary_one, .ctx = &S};
    struct gmt_jobs_result res;
    int r = gmt_jobs_run(&J, &res) || res.skipped ? -1 : 0;
    if (begun)
        *begun = S.begun;
    return r;
}

/*
 * Several traces as one job. A first pass reads each trace for its figures only (no
 * binary is opened), on the machine's cores (job_read.c, through jobs.h), and keeps
 * them (job.h), so memory holds a few traces at a time; then the overview, then the
 * reports: every trace's with `all`, else one per group of ranks that behave alike
 * (the rank at the group's median peak stands for it). Traces
 * of processes that used no GPU (a launcher) are left out of the job. The exit status.
 */
static int summarise_job(const struct outs *out, char **files, size_t n,
                         const struct gmt_report_opts *ro, bool all)
{
    FILE *text = out->f[0]; /* where the text's headings go (all: none are written) */
    int status = GMT_EXIT_OK;
    struct gmt_job j;
    struct gmt_job_read_result res;
    if (gmt_job_open(&j, files, n, ro, true, &res, &status)) {
        gmt_job_free(&j);
        gmt_job_read_result_free(&res, n);
        return GMT_EXIT_ERROR;
    }
    bool *unread = res.unread;
    size_t idle = res.idle;
    /* a selection that matches nothing in any trace read: an error, before any output */
    if (j.n && gmt_seen_check(&res.seen, ro, "summary")) {
        gmt_job_free(&j);
        gmt_job_read_result_free(&res, n);
        return GMT_EXIT_ERROR;
    }
    outs_begin(out, &j, ro);
    if (idle && !all)
        fprintf(text, "  (%zu trace(s) of processes that used no GPU, a launcher for one, left out)\n\n", idle);
    size_t written = 0;
    if (all) {
        /* what the first pass could not read was said then */
        char **readable = malloc((n ? n : 1) * sizeof *readable);
        size_t k = 0;
        for (size_t i = 0; readable && i < n; i++)
            if (!unread[i])
                readable[k++] = files[i];
        if (!readable)
            gmt_err("gpumemtrace: out of memory");
        else
            (void)summarise(out, readable, k, ro, 0, false, NULL);
        free(readable);
    } else {
        for (size_t k = 0; k < j.n_groups && k < GMT_JOB_MAX_REPORTS; k++) {
            char ranks[512];
            size_t cnt, rep;
            gmt_job_group_ranks(&j, j.order[k], ranks, sizeof ranks, &cnt, &rep);
            if (written)
                fprintf(text, "\n");
            if (cnt > 1)
                fprintf(text, "== ranks %s: %zu ranks alike; the report of rank %d stands for them ==\n\n",
                       ranks, cnt, j.r[rep].rank);
            else
                fprintf(text, "== rank %s ==\n\n", ranks);
            if (summarise(out, &j.r[rep].path, 1, ro, 0, false, NULL) == 0)
                written++;
            else
                status = GMT_EXIT_ERROR;
        }
    }
    gmt_job_free(&j);
    gmt_job_read_result_free(&res, n);
    return status;
}

int gmt_cmd_summary(int argc, char **argv)
{
    struct gmt_args args;
    gmt_args_init(&args);
    args.ro.width = term_width();
    struct summary_ctx sc = {&args.ro, false, -1};
    const struct gmt_args_spec spec = {
        .cmd = "summary", .help = gmt_help_summary, .top_max = 100000,
        .shared = GMT_ARGS_JSON | GMT_ARGS_CSV | GMT_ARGS_NO_SYMBOLS | GMT_ARGS_DEBUG_PATHS |
                  GMT_ARGS_TOP | GMT_ARGS_FRAMES | GMT_ARGS_OUTPUT,
        .own = summary_opts, .own_opt = summary_opt, .ctx = &sc, .optstring = "o:",
        .unknown = "unknown option"};
    int rc = gmt_args_parse(&spec, argc, argv, &args);
    if (rc >= 0)
        return rc;
    const char *output = args.out_path; /* a file, or with --csv a directory; NULL: stdout */
    if (args.ro.to_ns && args.ro.from_ns >= args.ro.to_ns)
        return gmt_cli_usage_error("summary", "--from wants a time before --to's");
    bool csv = args.output == GMT_OUT_CSV;
    if (sc.table >= 0 && !csv)
        return gmt_cli_usage_error("summary", "--table is for --csv");
    if (csv && sc.table >= 0 && output)
        return gmt_cli_usage_error("summary", "--table writes one table on stdout, -o DIR every "
                                   "table into DIR: give one of them");
    /* --csv alone: the tables are many, and a stream of several is no CSV file */
    if (csv && sc.table < 0 && !output)
        return gmt_cli_usage_error("summary", "--csv wants -o DIR (every table as DIR/TABLE.csv) "
                                   "or --table NAME (one on stdout), NAME one of %s", table_list());
    if (args.first >= argc)
        return gmt_cli_usage_error("summary", "no trace given");
    const struct gmt_report_opts ro = args.ro;
    struct outs out = {0};
    int status = GMT_EXIT_OK;
    /* a directory (what `run` writes) stands for the traces in it */
    char **files;
    size_t n_files;
    status = gmt_args_traces(&args, argc, argv, &files, &n_files);
    if (status < 0)
        return GMT_EXIT_ERROR;
    if (csv && sc.table < 0) {
        if (outs_tables(&out, output)) {
            gmt_free_paths(files, n_files);
            return outs_close(&out, GMT_EXIT_ERROR, false);
        }
    } else {
        out.n = 1;
        out.r[0] = csv                               ? &gmt_render_csv[sc.table]
                   : args.output == GMT_OUT_JSON     ? &gmt_render_json
                                                     : &gmt_render_text;
        if (output && !(out.path[0] = strdup(output)))
            gmt_err("gpumemtrace: out of memory");
        if ((output && !out.path[0]) || outs_open(&out)) {
            gmt_free_paths(files, n_files);
            return outs_close(&out, GMT_EXIT_ERROR, false);
        }
    }
    /* several traces: summarise_job begins the document with the job's overview */
    if (n_files > 1 &&
        summarise_job(&out, files, n_files, &ro, sc.per_rank || out.r[0] != &gmt_render_text))
        status = GMT_EXIT_ERROR;
    /* one trace: a document only when it could be read and its selections match */
    bool ends = n_files > 1;
    if (n_files <= 1 && summarise(&out, files, n_files, &ro, 0, true, &ends))
        status = GMT_EXIT_ERROR;
    gmt_free_paths(files, n_files);
    return outs_close(&out, status, ends);
}
