/* cmd_summary.c: `gpumemtrace summary`: what was traced, the peak, per-collective deltas, sites, leaks, failures. */
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "reader.h"
#include "replay.h"
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
    "  --csv             the tables as CSV (section,columns...)\n"
    "  --top N           allocation sites and leaks to show (default 10)\n"
    "  --device N        only device N\n"
    "  --from SEC        ignore peaks and failures before SEC seconds into the trace\n"
    "  --to SEC          stop the replay at SEC seconds into the trace\n"
    "  --op NAME         only collectives of this op (AllReduce, Group, ...)\n"
    "  --debug-paths DIR extra directories to look for binaries and debug files (repeatable)\n"
    "  --category NAME=GLOB  add a category rule for modules matching GLOB (repeatable)\n"
    "  --width N         output width (default: the terminal's, else 100)\n"
    "  --frames N        stack frames shown per site, from where the code asked (1..64;\n"
    "                    default 3, 5 from width 140); never so few that two sites look alike\n"
    "  --internal GLOB   frames whose function or module matches are allocator internals,\n"
    "                    skipped before a site (repeatable; built-in: docs/stacks.md)\n"
    "  --no-symbols      show module+offset, open no binary (fast; traces from elsewhere)\n"
    "  --step REGEX      the NVTX range that marks a training step (POSIX ERE, any case;\n"
    "                    default: step, train_step, iteration, iter N, ProfilerStep#N,\n"
    "                    batch ...: docs/phases.md)\n";

static int term_width(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 60)
        return ws.ws_col;
    return 100;
}

static int summary_opt(void *ctx, int c, const char *arg)
{
    struct gmt_report_opts *ro = ctx;
    long v;
    switch (c) {
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
    case 'o':
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

static const struct option summary_opts[] = {
    {"device", required_argument, 0, 'd'},
    {"from", required_argument, 0, 'f'}, {"to", required_argument, 0, 'T'},
    {"op", required_argument, 0, 'o'},   {"category", required_argument, 0, 'C'},
    {"width", required_argument, 0, 'w'}, {"step", required_argument, 0, 's'},
    {0, 0, 0, 0}};

int gmt_cmd_summary(int argc, char **argv)
{
    struct gmt_args args;
    gmt_args_init(&args);
    args.ro.width = term_width();
    const struct gmt_args_spec spec = {
        .cmd = "summary", .help = gmt_help_summary, .top_max = 100000,
        .shared = GMT_ARGS_JSON | GMT_ARGS_CSV | GMT_ARGS_NO_SYMBOLS | GMT_ARGS_DEBUG_PATHS |
                  GMT_ARGS_TOP | GMT_ARGS_FRAMES,
        .own = summary_opts, .own_opt = summary_opt, .ctx = &args.ro, .optstring = "",
        .unknown = "unknown option"};
    int rc = gmt_args_parse(&spec, argc, argv, &args);
    if (rc >= 0)
        return rc;
    if (args.ro.to_ns && args.ro.from_ns >= args.ro.to_ns)
        return gmt_cli_usage_error("summary", "--from wants a time before --to's");
    if (args.first >= argc)
        return gmt_cli_usage_error("summary", "no trace given");
    const struct gmt_report_opts ro = args.ro;
    const struct gmt_renderer *out = args.output == GMT_OUT_JSON  ? &gmt_render_json
                                     : args.output == GMT_OUT_CSV ? &gmt_render_csv
                                                                  : &gmt_render_text;
    int status = GMT_EXIT_OK;
    if (out->begin)
        out->begin(stdout);
    /* a directory (what `run` writes) stands for the traces in it */
    char **files = NULL;
    size_t n_files = 0;
    struct gmt_msgs msgs = GMT_MSGS_INIT;
    int r = gmt_expand_paths(argv + args.first, (size_t)(argc - args.first), &files, &n_files,
                             &msgs);
    gmt_msgs_print(&msgs, stderr);
    if (r == -ENOMEM) {
        gmt_err("gpumemtrace: out of memory");
        return GMT_EXIT_ERROR;
    }
    if (r)
        status = GMT_EXIT_ERROR;
    size_t written = 0;
    for (size_t i = 0; i < n_files; i++) {
        struct gmt_analysis a;
        char err[512];
        if (gmt_analyze(&a, files[i], &ro, err, sizeof err)) {
            gmt_err("gpumemtrace: %s", err);
            status = GMT_EXIT_ERROR;
            continue;
        }
        out->trace(stdout, &a, &ro, written++);
        gmt_analysis_free(&a);
    }
    gmt_free_paths(files, n_files);
    if (out->end)
        out->end(stdout);
    return status;
}
