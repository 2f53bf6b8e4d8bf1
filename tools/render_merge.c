/* render_merge.c: the ranks side by side rendered: as text for a person, as JSON (gpumemtrace.merge/1). */
#include "render_merge.h"

#include <inttypes.h>
#include <string.h>

#include "nccl_model.h"
#include "util.h"

/* The trace of rank `rank`, NULL when none has it. */
static const struct gmt_trace *rank_trace(const struct gmt_merge *m, int rank)
{
    for (size_t i = 0; i < m->n_ranks; i++)
        if (m->ranks[i].rank == rank)
            return &m->ranks[i].a.t;
    return NULL;
}

void gmt_render_merge_json(FILE *o, const struct gmt_merge *m)
{
    fprintf(o, "{\"schema\": \"gpumemtrace.merge/1\", \"ranks\": [");
    for (size_t i = 0; i < m->n_ranks; i++) {
        const struct gmt_merge_rank *r = &m->ranks[i];
        fprintf(o, "%s{\"rank\": %d, \"file\": ", i ? ", " : "", r->rank);
        gmt_fput_json_string(o, r->a.t.path);
        char nc[512] = "";
        if (i)
            gmt_nccl_settings_diff(&m->ranks[0].a.t, &r->a.t, nc, sizeof nc);
        fprintf(o, ", \"nccl_changed_from_first\": ");
        gmt_fput_json_string(o, nc);
        fprintf(o, ", \"peak_bytes\": %" PRIu64 ", \"end_bytes\": %" PRIu64
               ", \"nccl_init_bytes\": %" PRIu64 ", \"nccl_first_call_bytes\": %" PRIu64,
               r->peak, r->end, r->init, r->first_calls);
        if (r->has_used)
            fprintf(o, ", \"device_used_max_bytes\": %" PRIu64 ", \"untracked_bytes\": %" PRIu64 "}",
                   r->used_max, r->untracked);
        else
            fprintf(o, ", \"device_used_max_bytes\": null, \"untracked_bytes\": null}");
    }
    fprintf(o, "], \"collectives\": [");
    for (size_t j = 0; j < m->n_colls; j++) {
        const struct gmt_merge_coll *k = &m->colls[j];
        fprintf(o, "%s{\"op\": ", j ? ", " : "");
        gmt_fput_json_string(o, k->label);
        fprintf(o, ", \"comm_size\": %d, \"bytes_per_call\": %" PRIu64 ", \"ranks\": %d"
               ", \"first_tracked_min_bytes\": %" PRId64 ", \"first_tracked_max_bytes\": %" PRId64
               ", \"min_rank\": %d, \"max_rank\": %d, \"calls_min\": %" PRIu64 ", \"calls_max\": %" PRIu64 "}",
               k->nranks, k->bytes, k->ranks, k->min_first, k->max_first, k->min_rank, k->max_rank,
               k->calls_min, k->calls_max);
    }
    fprintf(o, "]}\n");
}

void gmt_render_merge_text(FILE *o, const struct gmt_merge *m)
{
    fprintf(o, "gpumemtrace merge: %zu trace(s)\n\n", m->n_ranks);
    fprintf(o, "  %-5s %-8s %10s %10s %10s %10s %12s %12s  %s\n", "rank", "host", "peak", "at end",
           "dev used", "untracked", "NCCL init", "NCCL 1st", "file");
    for (size_t i = 0; i < m->n_ranks; i++) {
        const struct gmt_merge_rank *r = &m->ranks[i];
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
        fprintf(o, "  %-5d %-8.8s %10s %10s %10s %10s %12s %12s  %s\n", r->rank,
               r->a.t.host ? r->a.t.host : "?", b[0], b[1], b[2], b[3], b[4], b[5],
               base ? base + 1 : r->a.t.path);
    }
    fprintf(o, "\n  NCCL calls across ranks (what the first call added, tracked)\n");
    fprintf(o, "  %-28s %5s %10s %6s %10s %10s  %s\n", "op", "size", "bytes/call", "ranks",
           "min", "max", "");
    for (size_t j = 0; j < m->n_colls; j++) {
        const struct gmt_merge_coll *k = &m->colls[j];
        char bb[GMT_FMT_LEN], mn[GMT_FMT_LEN], mx[GMT_FMT_LEN];
        gmt_fmt_bytes(bb, sizeof bb, k->bytes);
        gmt_fmt_sbytes(mn, sizeof mn, k->min_first);
        gmt_fmt_sbytes(mx, sizeof mx, k->max_first);
        char note[640] = "", nc[512] = "";
        const struct gmt_trace *tmin = rank_trace(m, k->min_rank), *tmax = rank_trace(m, k->max_rank);
        if (k->max_first != k->min_first && tmin && tmax)
            gmt_nccl_settings_diff(tmin, tmax, nc, sizeof nc);
        if (k->max_first != k->min_first)
            snprintf(note, sizeof note, "ranks differ: rank %d added most%s%s", k->max_rank,
                     nc[0] ? " -- " : "", nc);
        else if (k->calls_min != k->calls_max)
            snprintf(note, sizeof note, "calls differ: %" PRIu64 "..%" PRIu64, k->calls_min, k->calls_max);
        fprintf(o, "  %-28.28s %5d %10s %6d %10s %10s  %s\n", k->label, k->nranks, bb, k->ranks, mn, mx, note);
    }
    /* ranks of one job normally share their NCCL settings: say where they do not */
    bool any = false;
    for (size_t i = 1; i < m->n_ranks; i++) {
        char nc[512];
        gmt_nccl_settings_diff(&m->ranks[0].a.t, &m->ranks[i].a.t, nc, sizeof nc);
        if (nc[0])
            fprintf(o, "%s  rank %d's NCCL differs from rank %d's: %s\n", any ? "" : "\n",
                    m->ranks[i].rank, m->ranks[0].rank, nc);
        any = any || nc[0];
    }
}
