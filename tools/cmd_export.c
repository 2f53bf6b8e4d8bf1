/* cmd_export.c: `gpumemtrace export`: traces for other tools: folded stacks (flame graphs), Chrome trace events, SQLite, CSV. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "export.h"
#include "jobs.h"
#include "report.h"
#include "stacks.h"
#include "select.h"
#include "util.h"

const char gmt_help_export[] =
    "usage: gpumemtrace export --format folded [options] TRACE...\n"
    "       gpumemtrace export --format chrome|sqlite|csv -o OUT [options] TRACE...\n"
    "\n"
    "folded: device memory by call stack, one line per stack: its frames outermost\n"
    "first, separated by ';', a space and the bytes (flamegraph.pl, inferno,\n"
    "speedscope), on stdout or into OUT. Stacks of no bytes are left out. With several\n"
    "traces each line starts with a frame naming its trace.\n"
    "chrome: one JSON file of Chrome trace events for Perfetto UI or chrome://tracing:\n"
    "device memory per GPU and category as counters, device use as sampled, each NCCL\n"
    "call on its thread, allocations NCCL's proxy thread made for a call, failed\n"
    "allocations, PyTorch's allocated and reserved bytes; one process per rank, on one\n"
    "time line.\n"
    "sqlite: one SQLite database OUT of the tables traces, allocations, nccl_calls,\n"
    "sites, device_samples, failures, blocks and block_sites (docs/export.md).\n"
    "csv: the same tables as OUT/TABLE.csv, one file each (OUT is made if missing).\n"
    "A directory among the TRACEs stands for the traces in it.\n"
    "\n"
    "options:\n"
    "  --format F        folded, chrome, sqlite or csv\n"
    "  -o, --output OUT  where to write (required but for folded)\n"
    "  --max-points N    chrome: points per counter track at most (default 10000, >= 3);\n"
    "                    each track keeps its lowest and highest value per time bucket\n"
    "  --cost WHAT       folded: what a stack's bytes are: peak (default: live at each\n"
    "                    device's peak), allocated (every allocation's bytes, summed),\n"
    "                    leaked (still allocated at the end), at=SEC (live SEC seconds in)\n"
    "  --device N        folded: only device N (one that no trace has: an error)\n"
    "  --debug-dir DIR   extra directories to look for binaries and debug files (repeatable)\n"
    "  --no-symbols      show module+offset, open no binary\n";

enum cost { COST_PEAK, COST_ALLOCATED, COST_LEAKED, COST_AT };

struct export_args {
    struct gmt_report_opts *ro;
    enum cost cost;
    enum { FMT_NONE, FMT_FOLDED, FMT_CHROME, FMT_SQLITE, FMT_CSV } format;
    long max_points;
    bool folded_only;          /* --cost or --device given */
};

static int export_opt(void *ctx, int c, const char *arg)
{
    struct export_args *ea = ctx;
    long v;
    switch (c) {
    case 'F':
        if (!strcmp(arg, "folded"))
            ea->format = FMT_FOLDED;
        else if (!strcmp(arg, "chrome"))
            ea->format = FMT_CHROME;
        else if (!strcmp(arg, "sqlite"))
            ea->format = FMT_SQLITE;
        else if (!strcmp(arg, "csv"))
            ea->format = FMT_CSV;
        else
            return gmt_cli_usage_error("export", "--format wants folded, chrome, sqlite or csv, not '%s'", arg);
        return 0;
    case 'm':
        if (gmt_cli_long(arg, 3, 100000000, &v))
            return gmt_cli_usage_error("export", "--max-points wants a number from 3 to 100000000, not '%s'", arg);
        ea->max_points = v;
        return 0;
    case 'c':
        ea->folded_only = true;
        if (!strcmp(arg, "peak"))
            ea->cost = COST_PEAK;
        else if (!strcmp(arg, "allocated"))
            ea->cost = COST_ALLOCATED;
        else if (!strcmp(arg, "leaked"))
            ea->cost = COST_LEAKED;
        else if (!strncmp(arg, "at=", 3) && !gmt_cli_seconds(arg + 3, &ea->ro->to_ns) && ea->ro->to_ns)
            ea->cost = COST_AT;
        else
            return gmt_cli_usage_error("export", "--cost wants peak, allocated, leaked or at=SEC "
                                       "(SEC > 0), not '%s'", arg);
        return 0;
    case 'd':
        if (gmt_cli_long(arg, 0, 4096, &v))
            return gmt_cli_usage_error("export", "--device wants a device ordinal, not '%s'", arg);
        ea->ro->device = (int)v;
        ea->folded_only = true;
        return 0;
    }
    return GMT_EXIT_ERROR;
}

static const struct option export_opts[] = {
    {"format", required_argument, 0, 'F'}, {"cost", required_argument, 0, 'c'},
    {"device", required_argument, 0, 'd'}, {"max-points", required_argument, 0, 'm'},
    {0, 0, 0, 0}};

static uint64_t site_cost(const struct gmt_site_row *s, enum cost c)
{
    switch (c) {
    case COST_PEAK: return s->live_at_peak;
    case COST_ALLOCATED: return s->bytes_total;
    case COST_LEAKED:
    case COST_AT: return s->live_at_end; /* the replay stopped at SEC: its end is then */
    }
    return 0;
}

/* A trace's name as a root frame: its base name, folded-safe. */
static void root_frame(const char *path, char *buf, size_t len)
{
    const char *b = strrchr(path, '/');
    snprintf(buf, len, "%s", b ? b + 1 : path);
    for (char *p = buf; *p; p++)
        if (*p == ';' || *p == ' ' || (unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '_';
}

static int folded(FILE *out, const struct gmt_analysis *a, enum cost c, const char *root)
{
    const struct gmt_report *rep = &a->rep;
    static char line[65536];
    for (size_t i = 0; i < rep->n_sites; i++) {
        const struct gmt_site_row *s = &rep->sites[i];
        uint64_t bytes = site_cost(s, c);
        if (!bytes)
            continue;
        gmt_stack_folded(a, s->stack, line, sizeof line);
        if (root)
            fprintf(out, "%s;", root);
        fprintf(out, "%s %" PRIu64 "\n", line, bytes);
    }
    return ferror(out) ? -EIO : 0;
}

struct folded_job {
    FILE *out;
    enum cost cost;
    char *const *files;
    bool roots;                /* several traces: each line starts with its trace's frame */
    struct gmt_seen seen;      /* what --device found in the traces taken */
};

/* One trace's folded stacks (perhaps in a worker: jobs.h), after what its selections
 * found (select.h). */
static int folded_one(void *ctx, size_t i, const struct gmt_analysis *a, FILE *out, char *err,
                      size_t errlen)
{
    const struct folded_job *F = ctx;
    char root[256];
    root_frame(F->files[i], root, sizeof root);
    struct gmt_seen seen;
    gmt_seen_init(&seen);
    int r = gmt_seen_add(&seen, a, a->opts);
    r = r ? r : gmt_seen_put(out, &seen);
    gmt_seen_free(&seen);
    if (!r && !folded(out, a, F->cost, F->roots ? root : NULL))
        return 0;
    snprintf(err, errlen, "export: out of memory");
    return -1;
}

static int folded_take(void *ctx, size_t i, const char *p, size_t len)
{
    struct folded_job *F = ctx;
    size_t used;
    if (gmt_seen_take(&F->seen, p, len, &used))
        return -ENOMEM;
    fwrite(p + used, 1, len - used, F->out);
    return 0;
}

int gmt_cmd_export(int argc, char **argv)
{
    struct gmt_args args;
    gmt_args_init(&args);
    args.ro.nccl_model = false; /* none of its outputs shows NCCL's memory by purpose */
    args.ro.sites = false;      /* nor the summary's sites */
    struct export_args ea = {.ro = &args.ro, .cost = COST_PEAK, .max_points = GMT_CHROME_POINTS_DEFAULT};
    const struct gmt_args_spec spec = {
        .cmd = "export", .help = gmt_help_export,
        .shared = GMT_ARGS_NO_SYMBOLS | GMT_ARGS_DEBUG_PATHS | GMT_ARGS_OUTPUT,
        .own = export_opts, .own_opt = export_opt, .ctx = &ea, .optstring = "o:",
        .unknown = "unknown option"};
    int rc = gmt_args_parse(&spec, argc, argv, &args);
    if (rc >= 0)
        return rc;
    const char *output = args.out_path;
    if (!ea.format)
        return gmt_cli_usage_error("export", "--format is required (folded, chrome, sqlite or csv)");
    if (ea.format != FMT_FOLDED && !output)
        return gmt_cli_usage_error("export", "--format %s needs -o OUT",
                                   ea.format == FMT_CHROME ? "chrome" : ea.format == FMT_SQLITE ? "sqlite" : "csv");
    if (ea.format != FMT_FOLDED && ea.folded_only)
        return gmt_cli_usage_error("export", "--cost and --device are for --format folded");
    if (args.first >= argc)
        return gmt_cli_usage_error("export", "no trace given");
    char **files;
    size_t n_files;
    int status = gmt_args_traces(&args, argc, argv, &files, &n_files);
    if (status < 0)
        return GMT_EXIT_ERROR;
    if (ea.format != FMT_FOLDED) {
        if (!n_files) {
            if (status == GMT_EXIT_OK)
                gmt_err("gpumemtrace: export: no trace found");
            gmt_free_paths(files, n_files);
            return GMT_EXIT_ERROR;
        }
        int x = ea.format == FMT_CHROME ? gmt_export_chrome(files, n_files, &args.ro, output, ea.max_points)
              : ea.format == FMT_SQLITE ? gmt_export_sqlite(files, n_files, &args.ro, output)
                                        : gmt_export_csv(files, n_files, &args.ro, output);
        gmt_free_paths(files, n_files);
        return x ? x : status;
    }
    FILE *out = gmt_output_open("export", output);
    if (!out) {
        gmt_free_paths(files, n_files);
        return GMT_EXIT_ERROR;
    }
    struct folded_job F = {.out = out, .cost = ea.cost, .files = files, .roots = n_files > 1};
    gmt_seen_init(&F.seen);
    const struct gmt_jobs J = {.files = files, .n = n_files, .ro = &args.ro, .trace = folded_one,
                               .take = folded_take, .ctx = &F};
    struct gmt_jobs_result res;
    int r = gmt_jobs_run(&J, &res);
    if (r)
        gmt_err("gpumemtrace: %s", r == -ENOMEM ? "out of memory" : "a process reading the traces died");
    if (r || res.skipped || ferror(out) || (F.seen.traces && gmt_seen_check(&F.seen, &args.ro, "export")))
        status = GMT_EXIT_ERROR;
    gmt_seen_free(&F.seen);
    gmt_free_paths(files, n_files);
    int closed = gmt_output_close("export", out, output);
    return closed ? closed : status;
}
