/* cmd_explain.c: `gpumemtrace explain`: each communicator's NCCL memory by purpose, why each buffer has its size, and what other settings would make of it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "explain.h"
#include "job.h"
#include "job_read.h"
#include "jobs.h"
#include "render_explain.h"
#include "report.h"
#include "util.h"

const char gmt_help_explain[] =
    "usage: gpumemtrace explain [options] TRACE...\n"
    "\n"
    "What NCCL's memory is for. For each communicator of each traced process: its\n"
    "allocations grouped by purpose (per-channel structures, the device communicator,\n"
    "transport buffers by side, proxy and host buffers, the work FIFO, NVLS, CollNet,\n"
    "registrations, ncclMemAlloc), each with its count, bytes, the NCCL function and\n"
    "source line that asked and the call that caused it; the channel counts the buffers\n"
    "imply and NCCL's sizing rule for them (docs/nccl-memory.md). 'how' says how a group\n"
    "was classified: stack (NCCL's own frames), api, size or timing (no NCCL symbols).\n"
    "The answer comes first: NCCL's memory and what each --what-if would save (else the\n"
    "setting that would save the most), then the detail. Several traces (a directory of\n"
    "them) are one job: the answer per group of ranks that behave alike, then one\n"
    "explanation per group, named with its rank list.\n"
    "\n"
    "options:\n"
    "  --what-if SPEC    predict each communicator's and the process's memory under other\n"
    "                    settings, SPEC = NAME=VALUE[,NAME=VALUE...] (NCCL_BUFFSIZE=1M,\n"
    "                    NCCL_MAX_NCHANNELS=8; K, M, G: binary units); repeatable\n"
    "  --every-rank      of several traces, every rank's explanation (default: one for\n"
    "                    each group of ranks that behave alike, as summary groups them)\n"
    "  --json            one JSON document (schema gpumemtrace.explain/1, docs/nccl-memory.md):\n"
    "                    every trace, and of several the groups of ranks alike\n"
    "  --debug-dir DIR   extra directories to look for binaries and debug files (repeatable)\n"
    "  --no-symbols      open no binary: classify by API, size and timing only\n"
    "\n"
    "Exit status: 0, 2 bad usage or unreadable input.\n";

struct opts {
    const char *spec[GMT_EXPLAIN_MAX_WHATIF];
    int n;
    bool every_rank;
};

static int explain_opt(void *ctx, int c, const char *arg)
{
    struct opts *o = ctx;
    if (c == 'e') {
        o->every_rank = true;
        return 0;
    }
    if (c != 'w')
        return GMT_EXIT_ERROR;
    if (o->n == GMT_EXPLAIN_MAX_WHATIF)
        return gmt_cli_usage_error("explain", "at most %d --what-if", GMT_EXPLAIN_MAX_WHATIF);
    struct gmt_nccl_settings s;
    gmt_nccl_settings_of(NULL, &s);
    char err[400];
    if (gmt_nccl_settings_parse(&s, arg, err, sizeof err))
        return gmt_cli_usage_error("explain", "%s", err);
    o->spec[o->n++] = arg;
    return 0;
}

static const struct option explain_opts[] = {{"what-if", required_argument, 0, 'w'},
                                             {"every-rank", no_argument, 0, 'e'},
                                             {0, 0, 0, 0}};

/* A trace explained in the text of a job: who it stands for, and what was rendered of
 * it, its answer and its detail, kept until every answer is out. */
struct shown {
    char *path;                /* the job's */
    char who[560];             /* "ranks 0-1 (2 alike)", "rank 3" */
    size_t n;                  /* the ranks it stands for */
    int32_t rep_rank;
    char *answer, *detail;
};

struct each {
    const struct opts *w;
    bool json;
    size_t written;
    struct shown *s;           /* the text of a job: one per trace explained; NULL: one trace */
};

/* One trace's explanation, rendered (perhaps in a worker: jobs.h) without what goes
 * between traces: of a job's text, its answer and its detail split by a NUL byte. */
static int explain_one(void *ctx, size_t i, const struct gmt_analysis *a, FILE *out, char *err,
                       size_t errlen)
{
    const struct each *E = ctx;
    struct gmt_explain x;
    if (a->nccl_rc || gmt_explain_fill(&x, a, E->w->spec, E->w->n)) {
        snprintf(err, errlen, "%s: out of memory", a->t.path);
        return -1;
    }
    if (E->json) {
        gmt_render_explain_json(out, a, &x, true);
    } else if (!E->s) {
        fprintf(out, "gpumemtrace explain: NCCL memory of %s\n", gmt_one_line(a->t.path));
        gmt_render_explain_answer_text(out, a, &x, NULL, 1);
        gmt_render_explain_text(out, a, &x, false);
    } else {
        gmt_render_explain_answer_text(out, a, &x, E->s[i].who, E->s[i].n);
        fputc(0, out);
        gmt_render_explain_text(out, a, &x, true);
    }
    gmt_explain_free(&x);
    return 0;
}

/* Here, in the order of the traces: each after the separator its format wants; of a
 * job's text, kept for later. */
static int write_one(void *ctx, size_t i, const char *p, size_t len)
{
    struct each *E = ctx;
    if (E->s) {
        size_t a = strnlen(p, len);
        struct shown *s = &E->s[i];
        s->answer = strndup(p, a);
        s->detail = strndup(p + (a < len ? a + 1 : a), a < len ? len - a - 1 : 0);
        return s->answer && s->detail ? 0 : -ENOMEM;
    }
    if (E->written++)
        fputs(E->json ? ", " : "\n", stdout);
    fwrite(p, 1, len, stdout);
    return 0;
}

/* Explains files[0..n) with E; the exit status, `status` unless something failed. */
static int explain_files(struct each *E, char *const *files, size_t n,
                         const struct gmt_report_opts *ro, int status)
{
    const struct gmt_jobs J = {.files = files, .n = n, .ro = ro, .trace = explain_one,
                               .take = write_one, .ctx = E};
    struct gmt_jobs_result res;
    int r = gmt_jobs_run(&J, &res);
    if (r)
        gmt_err("gpumemtrace: %s", r == -ENOMEM ? "out of memory" : "a process reading the traces died");
    return r || res.skipped ? GMT_EXIT_ERROR : status;
}

/* What the text of job j shows: a trace per group of ranks alike (the rank at the
 * group's median peak stands for it), largest group first; every rank with every_rank.
 * The number of them, 0 when out of memory. */
static size_t shown_of(const struct gmt_job *j, bool every_rank, struct shown **out)
{
    size_t n = every_rank ? j->n : j->n_groups;
    struct shown *s = calloc(n ? n : 1, sizeof *s);
    if (!s)
        return 0;
    for (size_t k = 0; k < n; k++) {
        char ranks[512];
        size_t cnt = 1, rep = k;
        if (every_rank)
            snprintf(ranks, sizeof ranks, j->r[k].rank >= 0 ? "%d" : "?", j->r[k].rank);
        else
            gmt_job_group_ranks(j, j->order[k], ranks, sizeof ranks, &cnt, &rep);
        if (cnt > 1)
            snprintf(s[k].who, sizeof s[k].who, "ranks %s (%zu alike)", ranks, cnt);
        else
            snprintf(s[k].who, sizeof s[k].who, "rank %s", ranks);
        s[k].n = cnt;
        s[k].path = j->r[rep].path;
        s[k].rep_rank = j->r[rep].rank;
    }
    *out = s;
    return n;
}

/* The text of job j: its title, every answer, then each detail under its heading. */
static int explain_job_text(struct each *E, const struct gmt_job *j, const char *what,
                            const struct gmt_report_opts *ro, int status)
{
    size_t n = shown_of(j, E->w->every_rank, &E->s);
    char **paths = malloc((n ? n : 1) * sizeof *paths);
    if ((!n && j->n) || !paths) {
        free(paths);
        free(E->s);
        gmt_err("gpumemtrace: out of memory");
        return GMT_EXIT_ERROR;
    }
    for (size_t k = 0; k < n; k++)
        paths[k] = E->s[k].path;
    status = explain_files(E, paths, n, ro, status);
    gmt_render_explain_job_title(stdout, what, j->n, j->n_groups, E->w->every_rank);
    for (size_t k = 0; k < n; k++)
        if (E->s[k].answer)
            fputs(E->s[k].answer, stdout);
    for (size_t k = 0; k < n; k++) {
        if (!E->s[k].detail)
            continue;
        gmt_render_explain_group_heading(stdout, E->s[k].who, E->s[k].n, E->s[k].rep_rank);
        fputs(E->s[k].detail, stdout);
    }
    for (size_t k = 0; k < n; k++) {
        free(E->s[k].answer);
        free(E->s[k].detail);
    }
    free(E->s);
    free(paths);
    return status;
}

/*
 * Several traces as one job: a first pass reads each for its figures only (no binary
 * opened, on the machine's cores: job_read.h) and groups the ranks that behave alike, as
 * summary does (job.h); the JSON then holds every trace and the groups, the text the
 * explanation of one rank per group (every rank with --every-rank), answers first.
 * Traces of processes that used no GPU (a launcher) are left out of the text.
 */
static int explain_job(struct each *E, char **files, size_t n, const struct gmt_report_opts *ro,
                       const char *what)
{
    int status = GMT_EXIT_OK;
    struct gmt_job j;
    struct gmt_job_read_result res;
    if (gmt_job_open(&j, files, n, ro, false, &res, &status)) {
        status = GMT_EXIT_ERROR;
    } else if (E->json) {
        /* what the first pass could not read was said then: each trace is said once */
        char **readable = malloc((n ? n : 1) * sizeof *readable);
        size_t k = 0;
        for (size_t i = 0; readable && i < n; i++)
            if (!res.unread[i])
                readable[k++] = files[i];
        gmt_render_explain_json_begin(stdout);
        if (readable) {
            status = explain_files(E, readable, k, ro, status);
        } else {
            gmt_err("gpumemtrace: out of memory");
            status = GMT_EXIT_ERROR;
        }
        gmt_render_explain_json_end(stdout, &j);
        free(readable);
    } else {
        status = explain_job_text(E, &j, what, ro, status);
        if (res.idle)
            printf("\n(%zu trace(s) of processes that used no GPU, a launcher for one, left out)\n",
                   res.idle);
    }
    gmt_job_free(&j);
    gmt_job_read_result_free(&res, n);
    return status;
}

int gmt_cmd_explain(int argc, char **argv)
{
    struct opts w = {0};
    struct gmt_args args;
    gmt_args_init(&args);
    args.ro.sites = false; /* it shows no site */
    const struct gmt_args_spec spec = {
        .cmd = "explain", .help = gmt_help_explain,
        .shared = GMT_ARGS_JSON | GMT_ARGS_NO_SYMBOLS | GMT_ARGS_DEBUG_PATHS,
        .own = explain_opts, .own_opt = explain_opt, .ctx = &w, .optstring = "",
        .unknown = "unknown option"};
    int rc = gmt_args_parse(&spec, argc, argv, &args);
    if (rc >= 0)
        return rc;
    if (args.first >= argc)
        return gmt_cli_usage_error("explain", "no trace given");
    if (args.output != GMT_OUT_JSON && gmt_safe_stdout())
        return GMT_EXIT_ERROR;
    char **files;
    size_t n_files;
    int status = gmt_args_traces(&args, argc, argv, &files, &n_files);
    if (status < 0)
        return GMT_EXIT_ERROR;
    struct each E = {&w, args.output == GMT_OUT_JSON, 0, NULL};
    /* the operands as given name the job in its title, a few of them; more, their count */
    char what[256];
    size_t at = 0;
    what[0] = 0;
    for (int i = args.first; i < argc && at < sizeof what && argc - args.first <= 3; i++)
        at += (size_t)snprintf(what + at, sizeof what - at, "%s%s", at ? " " : "", argv[i]);
    if (argc - args.first > 3)
        snprintf(what, sizeof what, "%zu traces", n_files);
    if (n_files > 1) {
        status = explain_job(&E, files, n_files, &args.ro, what);
    } else {
        if (E.json)
            gmt_render_explain_json_begin(stdout);
        status = explain_files(&E, files, n_files, &args.ro, status);
        if (E.json)
            gmt_render_explain_json_end(stdout, NULL);
    }
    gmt_free_paths(files, n_files);
    return status;
}
