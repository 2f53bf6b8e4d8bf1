/* cmd_merge.c: `gpumemtrace merge`: the traces of many ranks side by side: per-rank peaks, and each collective across ranks. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "reader.h"
#include "report.h"
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
    "  --no-symbols      open no binary (categories still come from module names)\n"
    "  --debug-paths DIR extra directories for binaries and debug files (repeatable)\n";

struct rank_row {
    struct gmt_analysis a;
    int rank;
    uint64_t peak, end, used_max, untracked, init, first_calls;
    bool has_used;
};

/* one collective across ranks, matched as check and diff match them: op label, size,
 * bytes per call */
struct coll_key {
    char label[64];
    int32_t nranks;
    uint64_t bytes;
    int64_t min_first, max_first;
    int min_rank, max_rank;
    int64_t min_dev, max_dev;
    bool has_dev;
    uint64_t calls_min, calls_max;
    int ranks;
};

static bool is_init(uint16_t op)
{
    return op == GMT_OP_CommInitRank || op == GMT_OP_CommInitAll || op == GMT_OP_CommInitRankConfig ||
           op == GMT_OP_CommInitRankScalable || op == GMT_OP_CommSplit || op == GMT_OP_CommShrink;
}

static int cmp_rank(const void *x, const void *y)
{
    const struct rank_row *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return strcmp(a->a.t.path, b->a.t.path);
}

int gmt_cmd_merge(int argc, char **argv)
{
    struct gmt_args args;
    gmt_args_init(&args);
    const struct gmt_args_spec spec = {
        .cmd = "merge", .help = gmt_help_merge, .optstring = "", .unknown = "unknown option",
        .shared = GMT_ARGS_JSON | GMT_ARGS_NO_SYMBOLS | GMT_ARGS_DEBUG_PATHS};
    int rc = gmt_args_parse(&spec, argc, argv, &args);
    if (rc >= 0)
        return rc;
    const struct gmt_report_opts ro = args.ro;
    bool json = args.output == GMT_OUT_JSON;
    int first = args.first;
    if (first >= argc)
        return gmt_cli_usage_error("merge", "no trace given");
    char **files = NULL;
    size_t n_files = 0;
    int status = GMT_EXIT_OK;
    if (gmt_expand_paths(argv + first, (size_t)(argc - first), &files, &n_files))
        status = GMT_EXIT_ERROR;
    struct rank_row *rows = calloc(n_files ? n_files : 1, sizeof *rows);
    if (!rows) {
        fprintf(stderr, "gpumemtrace: out of memory\n");
        return GMT_EXIT_ERROR;
    }
    size_t n = 0;
    for (size_t i = 0; i < n_files; i++) {
        char err[512];
        struct rank_row *r = &rows[n];
        if (gmt_analyze(&r->a, files[i], &ro, err, sizeof err)) {
            fprintf(stderr, "gpumemtrace: %s\n", err);
            status = GMT_EXIT_ERROR;
            continue;
        }
        const struct gmt_trace *t = &r->a.t;
        const struct gmt_report *rep = &r->a.rep;
        r->rank = t->has_proc ? t->proc.rank : -1;
        if (r->rank < 0)
            for (size_t k = 0; k < t->n_comms && r->rank < 0; k++)
                r->rank = t->comms[k].rank;
        for (size_t d = 0; d < rep->n_dev; d++) {
            r->peak += rep->dev[d].peak;
            r->end += rep->dev[d].end;
            if (rep->dev[d].has_used) {
                r->has_used = true;
                r->used_max += rep->dev[d].used_max;
                r->untracked += rep->dev[d].used_max - rep->dev[d].tracked_at_used_max;
            }
        }
        for (size_t k = 0; k < rep->n_colls; k++) {
            const struct gmt_coll_row *cr = &rep->colls[k];
            if (cr->first_tracked <= 0)
                continue;
            if (is_init(cr->op))
                r->init += (uint64_t)cr->first_tracked;
            else
                r->first_calls += (uint64_t)cr->first_tracked;
        }
        n++;
    }
    qsort(rows, n, sizeof *rows, cmp_rank);

    /* collectives across ranks */
    struct coll_key *keys = NULL;
    size_t n_keys = 0, cap_keys = 0;
    for (size_t i = 0; i < n; i++) {
        const struct gmt_report *rep = &rows[i].a.rep;
        for (size_t k = 0; k < rep->n_colls; k++) {
            const struct gmt_coll_row *cr = &rep->colls[k];
            struct coll_key *key = NULL;
            for (size_t j = 0; j < n_keys; j++)
                if (!strcmp(keys[j].label, cr->label) && keys[j].nranks == cr->nranks &&
                    keys[j].bytes == cr->bytes_per_call)
                    key = &keys[j];
            if (!key) {
                if (n_keys == cap_keys) {
                    size_t nc = cap_keys ? cap_keys * 2 : 16;
                    struct coll_key *p = realloc(keys, nc * sizeof *p);
                    if (!p) {
                        status = GMT_EXIT_ERROR;
                        break;
                    }
                    keys = p;
                    cap_keys = nc;
                }
                key = &keys[n_keys++];
                memset(key, 0, sizeof *key);
                snprintf(key->label, sizeof key->label, "%s", cr->label);
                key->nranks = cr->nranks;
                key->bytes = cr->bytes_per_call;
                key->min_first = key->max_first = cr->first_tracked;
                key->min_rank = key->max_rank = rows[i].rank;
                key->calls_min = key->calls_max = cr->calls;
            }
            if (cr->first_tracked < key->min_first) {
                key->min_first = cr->first_tracked;
                key->min_rank = rows[i].rank;
            }
            if (cr->first_tracked > key->max_first) {
                key->max_first = cr->first_tracked;
                key->max_rank = rows[i].rank;
            }
            if (cr->first_has_dev) {
                if (!key->has_dev || cr->first_dev < key->min_dev)
                    key->min_dev = cr->first_dev;
                if (!key->has_dev || cr->first_dev > key->max_dev)
                    key->max_dev = cr->first_dev;
                key->has_dev = true;
            }
            if (cr->calls < key->calls_min)
                key->calls_min = cr->calls;
            if (cr->calls > key->calls_max)
                key->calls_max = cr->calls;
            key->ranks++;
        }
    }

    if (json) {
        printf("{\"schema\": \"gpumemtrace.merge/1\", \"ranks\": [");
        for (size_t i = 0; i < n; i++) {
            const struct rank_row *r = &rows[i];
            printf("%s{\"rank\": %d, \"file\": ", i ? ", " : "", r->rank);
            gmt_fput_json_string(stdout, r->a.t.path);
            printf(", \"peak_bytes\": %" PRIu64 ", \"end_bytes\": %" PRIu64
                   ", \"nccl_init_bytes\": %" PRIu64 ", \"nccl_first_call_bytes\": %" PRIu64,
                   r->peak, r->end, r->init, r->first_calls);
            if (r->has_used)
                printf(", \"device_used_max_bytes\": %" PRIu64 ", \"untracked_bytes\": %" PRIu64 "}",
                       r->used_max, r->untracked);
            else
                printf(", \"device_used_max_bytes\": null, \"untracked_bytes\": null}");
        }
        printf("], \"collectives\": [");
        for (size_t j = 0; j < n_keys; j++) {
            const struct coll_key *k = &keys[j];
            printf("%s{\"op\": ", j ? ", " : "");
            gmt_fput_json_string(stdout, k->label);
            printf(", \"comm_size\": %d, \"bytes_per_call\": %" PRIu64 ", \"ranks\": %d"
                   ", \"first_tracked_min_bytes\": %" PRId64 ", \"first_tracked_max_bytes\": %" PRId64
                   ", \"min_rank\": %d, \"max_rank\": %d, \"calls_min\": %" PRIu64 ", \"calls_max\": %" PRIu64 "}",
                   k->nranks, k->bytes, k->ranks, k->min_first, k->max_first, k->min_rank, k->max_rank,
                   k->calls_min, k->calls_max);
        }
        printf("]}\n");
    } else {
        printf("gpumemtrace merge: %zu trace(s)\n\n", n);
        printf("  %-5s %-8s %10s %10s %10s %10s %12s %12s  %s\n", "rank", "host", "peak", "at end",
               "dev used", "untracked", "NCCL init", "NCCL 1st", "file");
        for (size_t i = 0; i < n; i++) {
            const struct rank_row *r = &rows[i];
            char b[6][GMT_FMT_LEN];
            gmt_fmt_bytes(b[0], sizeof b[0], r->peak);
            gmt_fmt_bytes(b[1], sizeof b[1], r->end);
            if (r->has_used) {
                gmt_fmt_bytes(b[2], sizeof b[2], r->used_max);
                gmt_fmt_bytes(b[3], sizeof b[3], r->untracked);
            } else {
                snprintf(b[2], sizeof b[2], "?");
                snprintf(b[3], sizeof b[3], "?");
            }
            gmt_fmt_bytes(b[4], sizeof b[4], r->init);
            gmt_fmt_bytes(b[5], sizeof b[5], r->first_calls);
            const char *base = strrchr(r->a.t.path, '/');
            printf("  %-5d %-8.8s %10s %10s %10s %10s %12s %12s  %s\n", r->rank,
                   r->a.t.host ? r->a.t.host : "?", b[0], b[1], b[2], b[3], b[4], b[5],
                   base ? base + 1 : r->a.t.path);
        }
        printf("\n  NCCL calls across ranks (what the first call added, tracked)\n");
        printf("  %-28s %5s %10s %6s %10s %10s  %s\n", "op", "size", "bytes/call", "ranks",
               "min", "max", "");
        for (size_t j = 0; j < n_keys; j++) {
            const struct coll_key *k = &keys[j];
            char bb[GMT_FMT_LEN], mn[GMT_FMT_LEN], mx[GMT_FMT_LEN];
            gmt_fmt_bytes(bb, sizeof bb, k->bytes);
            gmt_fmt_sbytes(mn, sizeof mn, k->min_first);
            gmt_fmt_sbytes(mx, sizeof mx, k->max_first);
            char note[96] = "";
            if (k->max_first != k->min_first)
                snprintf(note, sizeof note, "ranks differ: rank %d added most", k->max_rank);
            else if (k->calls_min != k->calls_max)
                snprintf(note, sizeof note, "calls differ: %" PRIu64 "..%" PRIu64, k->calls_min, k->calls_max);
            printf("  %-28.28s %5d %10s %6d %10s %10s  %s\n", k->label, k->nranks, bb, k->ranks, mn, mx, note);
        }
    }
    for (size_t i = 0; i < n; i++)
        gmt_analysis_free(&rows[i].a);
    gmt_free_paths(files, n_files);
    free(rows);
    free(keys);
    return n ? status : GMT_EXIT_ERROR;
}
