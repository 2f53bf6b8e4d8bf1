/* cmd_explain.c: `gpumemtrace explain`: each communicator's NCCL memory by purpose, why each buffer has its size, and what other settings would make of it. */
#include <errno.h>
#include <stdio.h>

#include "args.h"
#include "cli.h"
#include "explain.h"
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
    "\n"
    "options:\n"
    "  --what-if SPEC    predict each communicator's and the process's memory under other\n"
    "                    settings, SPEC = NAME=VALUE[,NAME=VALUE...] (NCCL_BUFFSIZE=1M,\n"
    "                    NCCL_MAX_NCHANNELS=8; K, M, G: binary units); repeatable\n"
    "  --json            one JSON document (schema gpumemtrace.explain/1, docs/nccl-memory.md)\n"
    "  --debug-dir DIR   extra directories to look for binaries and debug files (repeatable)\n"
    "  --no-symbols      open no binary: classify by API, size and timing only\n"
    "\n"
    "Exit status: 0, 2 bad usage or unreadable input.\n";

struct opts {
    const char *spec[GMT_EXPLAIN_MAX_WHATIF];
    int n;
};

static int explain_opt(void *ctx, int c, const char *arg)
{
    struct opts *o = ctx;
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

static const struct option explain_opts[] = {{"what-if", required_argument, 0, 'w'}, {0, 0, 0, 0}};

struct each {
    const struct opts *w;
    bool json;
    size_t written;
};

/* One trace's explanation, rendered (perhaps in a worker: jobs.h) without what goes
 * between traces. */
static int explain_one(void *ctx, size_t i, const struct gmt_analysis *a, FILE *out, char *err,
                       size_t errlen)
{
    const struct each *E = ctx;
    struct gmt_explain x;
    if (a->nccl_rc || gmt_explain_fill(&x, a, E->w->spec, E->w->n)) {
        snprintf(err, errlen, "%s: out of memory", a->t.path);
        return -1;
    }
    if (E->json)
        gmt_render_explain_json(out, a, &x, true);
    else
        gmt_render_explain_text(out, a, &x, 0);
    gmt_explain_free(&x);
    return 0;
}

/* Here, in the order of the traces: each after the separator its format wants. */
static int write_one(void *ctx, size_t i, const char *p, size_t len)
{
    struct each *E = ctx;
    if (E->written++)
        fputs(E->json ? ", " : "\n", stdout);
    fwrite(p, 1, len, stdout);
    return 0;
}

int gmt_cmd_explain(int argc, char **argv)
{
    struct opts w = {0};
    struct gmt_args args;
    gmt_args_init(&args);
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
    struct each E = {&w, args.output == GMT_OUT_JSON, 0};
    const struct gmt_jobs J = {.files = files, .n = n_files, .ro = &args.ro, .trace = explain_one,
                               .take = write_one, .ctx = &E};
    struct gmt_jobs_result res;
    if (E.json)
        gmt_render_explain_json_begin(stdout);
    int r = gmt_jobs_run(&J, &res);
    if (r)
        gmt_err("gpumemtrace: %s", r == -ENOMEM ? "out of memory" : "a process reading the traces died");
    if (r || res.skipped)
        status = GMT_EXIT_ERROR;
    if (E.json)
        gmt_render_explain_json_end(stdout);
    gmt_free_paths(files, n_files);
    return status;
}
