/* cmd_merge.c: `gpumemtrace merge`: the traces of many ranks side by side: per-rank peaks, and each collective across ranks. */
#include <errno.h>
#include <stdio.h>

#include "args.h"
#include "cli.h"
#include "merge.h"
#include "render_merge.h"
#include "util.h"

const char gmt_help_merge[] =
    "usage: gpumemtrace merge [options] TRACE|DIR...\n"
    "\n"
    "Reads the traces of a job's ranks (files, or directories as 'gpumemtrace run'\n"
    "writes) and puts them side by side: one line per rank (peak, untracked memory,\n"
    "what NCCL's communicator init and first collective calls added), then each\n"
    "collective across ranks (min and max of what its first call added, and which\n"
    "rank stands out), so one rank that grew or an imbalance shows at a glance.\n"
    "\n"
    "options:\n"
    "  --json            one JSON document (schema gpumemtrace.merge/1)\n"
    "  --top N           allocation sites across ranks to show (default 10)\n"
    "  --frames N        stack frames shown per site, from where the code asked (1..64;\n"
    "                    default 3); never so few that two sites of a rank look alike\n"
    "  --internal GLOB   frames whose function or module matches are allocator internals,\n"
    "                    skipped before a site (repeatable; built-in: docs/stacks.md)\n"
    "  --allow-mixed     merge traces of different runs or with duplicate ranks anyway\n"
    "  --no-symbols      open no binary (categories still come from module names)\n"
    "  --debug-dir DIR   extra directories for binaries and debug files (repeatable)\n";

static const struct option merge_opts[] = {{"allow-mixed", no_argument, 0, 'm'}, {0, 0, 0, 0}};

static int merge_opt(void *ctx, int c, const char *arg)
{
    (void)arg;
    if (c == 'm')
        *(bool *)ctx = true;
    return 0;
}

int gmt_cmd_merge(int argc, char **argv)
{
    bool allow_mixed = false;
    struct gmt_args args;
    gmt_args_init(&args);
    args.ro.nccl_model = false; /* none of its outputs shows NCCL's memory by purpose */
    args.ro.sites = false;      /* nor the summary's sites: it groups its own */
    args.ro.top = 10;
    const struct gmt_args_spec spec = {
        .cmd = "merge", .help = gmt_help_merge, .optstring = "", .unknown = "unknown option",
        .own = merge_opts, .own_opt = merge_opt, .ctx = &allow_mixed,
        .top_max = 100000,
        .shared = GMT_ARGS_JSON | GMT_ARGS_NO_SYMBOLS | GMT_ARGS_DEBUG_PATHS | GMT_ARGS_TOP |
                  GMT_ARGS_FRAMES};
    int status = gmt_args_parse(&spec, argc, argv, &args);
    if (status >= 0)
        return status;
    if (args.first >= argc)
        return gmt_cli_usage_error("merge", "no trace given");
    char **files = NULL;
    size_t n_files = 0;
    status = GMT_EXIT_OK;
    struct gmt_msgs msgs = GMT_MSGS_INIT;
    if (gmt_expand_paths(argv + args.first, (size_t)(argc - args.first), &files, &n_files,
                         &msgs))
        status = GMT_EXIT_ERROR;
    struct gmt_merge m;
    int r = gmt_merge_of(&m, files, n_files, &args.ro, &msgs);
    gmt_msgs_print(&msgs, stderr);
    if (r == -ENOMEM) {
        gmt_err("gpumemtrace: out of memory");
        return GMT_EXIT_ERROR;
    }
    if (r || !m.n_ranks)
        status = GMT_EXIT_ERROR;
    if (!m.n_ranks) { /* nothing read: what was wrong with each operand was said */
        gmt_merge_free(&m);
        gmt_free_paths(files, n_files);
        return status;
    }
    char why[1024];
    if (!allow_mixed && !gmt_merge_one_run(&m, why, sizeof why)) {
        gmt_err("gpumemtrace merge: %s (--allow-mixed merges them anyway)", why);
        gmt_merge_free(&m);
        gmt_free_paths(files, n_files);
        return GMT_EXIT_ERROR;
    }
    if (args.output == GMT_OUT_JSON)
        gmt_render_merge_json(stdout, &m, args.ro.top);
    else if (!gmt_safe_stdout())
        gmt_render_merge_text(stdout, &m, args.ro.top);
    else
        status = GMT_EXIT_ERROR;
    gmt_merge_free(&m);
    gmt_free_paths(files, n_files);
    return status;
}
