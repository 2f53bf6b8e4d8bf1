/* cmd_summary.c: `gpumemtrace summary`: what was traced, the peak, per-collective deltas, sites, leaks, failures. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli.h"
#include "reader.h"
#include "replay.h"
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
    "  --no-symbols      show module+offset, open no binary (fast; traces from elsewhere)\n";

enum fmt { FMT_TEXT, FMT_JSON, FMT_CSV };

static int term_width(void)
{
    struct winsize ws;
    if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col >= 60)
        return ws.ws_col;
    return 100;
}

static int parse_seconds(const char *s, uint64_t *ns)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || v < 0 || v > 1e9)
        return -EINVAL;
    *ns = (uint64_t)(v * 1e9);
    return 0;
}

int gmt_cmd_summary(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"json", no_argument, 0, 'j'},       {"csv", no_argument, 0, 'c'},
        {"top", required_argument, 0, 't'},  {"device", required_argument, 0, 'd'},
        {"from", required_argument, 0, 'f'}, {"to", required_argument, 0, 'T'},
        {"op", required_argument, 0, 'o'},   {"debug-paths", required_argument, 0, 'D'},
        {"category", required_argument, 0, 'C'}, {"width", required_argument, 0, 'w'},
        {"no-symbols", no_argument, 0, 'n'},
        {"help", no_argument, 0, 'h'},       {0, 0, 0, 0}};
    struct gmt_report_opts ro;
    gmt_report_opts_init(&ro);
    ro.width = term_width();
    enum fmt fmt = FMT_TEXT;
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        long v;
        switch (c) {
        case 'j': fmt = FMT_JSON; break;
        case 'c': fmt = FMT_CSV; break;
        case 't':
            if (gmt_cli_long(optarg, 0, 100000, &ro.top))
                return gmt_cli_usage_error("summary", "--top wants a count, not '%s'", optarg);
            break;
        case 'd':
            if (gmt_cli_long(optarg, 0, 4096, &v))
                return gmt_cli_usage_error("summary", "--device wants a device ordinal, not '%s'", optarg);
            ro.device = (int)v;
            break;
        case 'f':
            if (parse_seconds(optarg, &ro.from_ns))
                return gmt_cli_usage_error("summary", "--from wants seconds, not '%s'", optarg);
            break;
        case 'T':
            if (parse_seconds(optarg, &ro.to_ns))
                return gmt_cli_usage_error("summary", "--to wants seconds, not '%s'", optarg);
            break;
        case 'o':
            ro.op = optarg;
            break;
        case 'D':
            if (gmt_report_opts_add_debug_path(&ro, optarg))
                return gmt_cli_usage_error("summary", "too many --debug-paths");
            break;
        case 'C':
            if (gmt_report_opts_add_category(&ro, optarg))
                return gmt_cli_usage_error("summary", "--category wants NAME=GLOB, not '%s'", optarg);
            break;
        case 'w':
            if (gmt_cli_long(optarg, 40, 1000, &v))
                return gmt_cli_usage_error("summary", "--width wants 40..1000, not '%s'", optarg);
            ro.width = (int)v;
            break;
        case 'n':
            ro.no_symbols = true;
            break;
        case 'h':
            fputs(gmt_help_summary, stdout);
            return GMT_EXIT_OK;
        default:
            return gmt_cli_usage_error("summary", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        return gmt_cli_usage_error("summary", "no trace given");

    int status = GMT_EXIT_OK;
    if (fmt == FMT_JSON)
        printf("{\"schema\": \"gpumemtrace.summary/1\", \"traces\": [");
    /* a directory (what `run` writes) stands for the traces in it */
    char **files = NULL;
    size_t n_files = 0;
    int r = gmt_expand_paths(argv + optind, (size_t)(argc - optind), &files, &n_files);
    if (r == -ENOMEM) {
        fprintf(stderr, "gpumemtrace: out of memory\n");
        return GMT_EXIT_ERROR;
    }
    if (r)
        status = GMT_EXIT_ERROR;
    for (size_t i = 0; i < n_files; i++) {
        struct gmt_analysis a;
        char err[512];
        if (gmt_analyze(&a, files[i], &ro, err, sizeof err)) {
            fprintf(stderr, "gpumemtrace: %s\n", err);
            status = GMT_EXIT_ERROR;
            continue;
        }
        if (fmt == FMT_JSON) {
            if (i > 0)
                printf(",");
            gmt_report_json(stdout, &a, &ro);
        } else if (fmt == FMT_CSV) {
            gmt_report_csv(stdout, &a, &ro);
        } else {
            if (i > 0)
                printf("\n");
            gmt_report_text(stdout, &a, &ro);
        }
        gmt_analysis_free(&a);
    }
    gmt_free_paths(files, n_files);
    if (fmt == FMT_JSON)
        printf("]}\n");
    return status;
}
