/* cmd_diff.c: `gpumemtrace diff BASE NEW`: what grew or shrank between two runs, rank by rank, biggest first. */
#include <stdio.h>

#include "args.h"
#include "cli.h"
#include "render_diff.h"
#include "util.h"

const char gmt_help_diff[] =
    "usage: gpumemtrace diff [options] BASE NEW\n"
    "\n"
    "What grew or shrank between two runs. BASE and NEW are each a trace or a directory\n"
    "of traces (what 'gpumemtrace run -o DIR' writes); processes are matched rank by rank\n"
    "(by file-name order when the rank is unknown). For each matched pair, the changes,\n"
    "biggest first:\n"
    "  peak        peak tracked device memory, and device used (cuMemGetInfo) when both\n"
    "              runs sampled it\n"
    "  category    each category's share at the peak (nccl, pytorch, user, ...)\n"
    "  init        bytes each communicator init/split added\n"
    "  first_call  bytes each collective's first call added; steady: the most a later\n"
    "              call added (collectives matched by op, communicator size and rank, bytes\n"
    "              per call, never by address or time)\n"
    "  site        bytes live at the peak per allocation site, matched by its symbolised\n"
    "              stack (never by address); leak: live at exit\n"
    "The answer comes first: the largest change of a peak, what grew most and what shrank\n"
    "most, each with the ranks it was seen in; then the pairs, biggest change first. Pairs\n"
    "whose ranks behave alike in both runs are one group, shown once with its rank list.\n"
    "\n"
    "options:\n"
    "  --json            one JSON document with every row (schema gpumemtrace.diff/1)\n"
    "  --all             also show rows that did not change\n"
    "  --every-rank      every pair's changes (default: once for each group of pairs whose\n"
    "                    ranks behave alike on both sides, as summary groups them)\n"
    "  --top N           rows per process pair (default 25, 0 all)\n"
    "  --frames N        stack frames that identify a site, from where the code asked (default 8)\n"
    "  --internal GLOB   frames whose function or module matches are allocator internals,\n"
    "                    skipped before a site (repeatable; built-in: docs/stacks.md)\n"
    "  --debug-dir DIR   extra directories for binaries and debug files (repeatable)\n"
    "\n"
    "Exit status: 0 (whatever changed), 2 bad usage or unreadable input.\n";

struct opts {
    bool all, every_rank;
};

static const struct option diff_opts[] = {{"all", no_argument, 0, 'a'},
                                          {"every-rank", no_argument, 0, 'e'}, {0, 0, 0, 0}};

static int diff_opt(void *ctx, int c, const char *arg)
{
    (void)arg;
    struct opts *o = ctx;
    if (c == 'a')
        o->all = true;
    if (c == 'e')
        o->every_rank = true;
    return 0;
}

int gmt_cmd_diff(int argc, char **argv)
{
    struct opts o = {0};
    struct gmt_args args;
    gmt_args_init(&args);
    args.ro.nccl_model = false; /* none of its outputs shows NCCL's memory by purpose */
    args.ro.sites = false;      /* nor the summary's sites: it groups its own */
    args.ro.top = 25;
    const struct gmt_args_spec spec = {
        .cmd = "diff", .help = gmt_help_diff, .top_max = 1000000,
        .shared = GMT_ARGS_JSON | GMT_ARGS_DEBUG_PATHS | GMT_ARGS_TOP | GMT_ARGS_FRAMES,
        .own = diff_opts, .own_opt = diff_opt, .ctx = &o, .optstring = "",
        .unknown = "unknown option"};
    int status = gmt_args_parse(&spec, argc, argv, &args);
    if (status >= 0)
        return status;
    if (argc - args.first != 2)
        return gmt_cli_usage_error("diff", "wants two arguments, BASE and NEW");
    struct gmt_diff d;
    struct gmt_msgs msgs = GMT_MSGS_INIT;
    int r = gmt_diff_of(&d, argv[args.first], argv[args.first + 1], &args.ro,
                       args.ro.frames ? args.ro.frames : 8, &msgs);
    gmt_msgs_print(&msgs, stderr);
    if (r) {
        gmt_diff_free(&d);
        return GMT_EXIT_ERROR;
    }
    status = GMT_EXIT_OK;
    if (d.cut_short) {
        gmt_err("gpumemtrace: out of memory");
        status = GMT_EXIT_ERROR;
    }
    if (args.output == GMT_OUT_JSON)
        gmt_render_diff_json(stdout, &d);
    else if (!gmt_safe_stdout())
        gmt_render_diff_text(stdout, &d, args.ro.top, o.all, o.every_rank);
    else
        status = GMT_EXIT_ERROR;
    gmt_diff_free(&d);
    return status;
}
