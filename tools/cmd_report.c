/* cmd_report.c: `gpumemtrace report`: a job's traces as one HTML page that works offline (docs/report.md). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "report_html.h"
#include "util.h"

const char gmt_help_report[] =
    "usage: gpumemtrace report -o REPORT.html [options] TRACE...\n"
    "\n"
    "One HTML file, self-contained (it fetches nothing; open it from disk): each\n"
    "device's memory over time stacked by category, with the device use as sampled,\n"
    "the peak marked, NCCL calls on a lane below (each collective's first call with\n"
    "the bytes it added), NVTX ranges on another, failed allocations as markers; one\n"
    "chart per rank on one time axis; per device an icicle of the stacks live at the\n"
    "peak; tables of the top sites, leaks, failures and NCCL memory by purpose (as\n"
    "explain); for a job, the spread of peaks and a row per rank. Ranks that behave\n"
    "alike (as summary groups them) are drawn once, named with their rank list.\n"
    "Drag or scroll on a chart to zoom, shift-drag to pan, double-click to reset;\n"
    "click an icicle's frame to zoom into it, its top bar to go back.\n"
    "A directory among the TRACEs stands for the traces in it (docs/report.md).\n"
    "\n"
    "options:\n"
    "  -o, --output OUT  the page to write (required)\n"
    "  --max-points N    points per counter track at most (default 2000, >= 3); each\n"
    "                    track keeps its lowest and highest value per time bucket\n"
    "  --top N           sites in the table (default as summary's)\n"
    "  --every-rank      draw every rank; by default ranks alike (as summary groups\n"
    "                    them) are drawn once, named with their rank list\n"
    "  --debug-dir DIR   extra directories to look for binaries and debug files (repeatable)\n"
    "  --no-symbols      show module+offset, open no binary\n";

struct report_args {
    const char *output;
    long max_points;
    bool every_rank;
};

static int report_opt(void *ctx, int c, const char *arg)
{
    struct report_args *ra = ctx;
    long v;
    switch (c) {
    case 'o':
        if (!*arg)
            return gmt_cli_usage_error("report", "-o wants a path");
        ra->output = arg;
        return 0;
    case 'm':
        if (gmt_cli_long(arg, 3, 1000000, &v))
            return gmt_cli_usage_error("report", "--max-points wants a number from 3 to 1000000, not '%s'", arg);
        ra->max_points = v;
        return 0;
    case 'e':
        ra->every_rank = true;
        return 0;
    }
    return GMT_EXIT_ERROR;
}

static const struct option report_opts[] = {
    {"output", required_argument, 0, 'o'}, {"max-points", required_argument, 0, 'm'},
    {"every-rank", no_argument, 0, 'e'}, {0, 0, 0, 0}};

int gmt_cmd_report(int argc, char **argv)
{
    struct gmt_args args;
    gmt_args_init(&args);
    struct report_args ra = {.max_points = GMT_HTML_POINTS_DEFAULT};
    const struct gmt_args_spec spec = {
        .cmd = "report", .help = gmt_help_report,
        .shared = GMT_ARGS_NO_SYMBOLS | GMT_ARGS_DEBUG_PATHS | GMT_ARGS_TOP, .top_max = 10000,
        .own = report_opts, .own_opt = report_opt, .ctx = &ra, .optstring = "o:",
        .unknown = "unknown option"};
    int rc = gmt_args_parse(&spec, argc, argv, &args);
    if (rc >= 0)
        return rc;
    if (!ra.output)
        return gmt_cli_usage_error("report", "-o REPORT.html is required");
    if (args.first >= argc)
        return gmt_cli_usage_error("report", "no trace given");
    char **files;
    size_t n_files;
    int status = gmt_args_traces(&args, argc, argv, &files, &n_files);
    if (status < 0)
        return GMT_EXIT_ERROR;
    if (!n_files) {
        if (status == GMT_EXIT_OK)
            gmt_err("gpumemtrace: report: no trace found");
        gmt_free_paths(files, n_files);
        return GMT_EXIT_ERROR;
    }
    int x = gmt_report_html(files, n_files, &args.ro, ra.output, ra.max_points, ra.every_rank);
    gmt_free_paths(files, n_files);
    return x ? x : status;
}
