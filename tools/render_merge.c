/* render_merge.c: the ranks side by side rendered: as text for a person, as JSON (gpumemtrace.merge/1). */
#include "render_merge.h"

#include <inttypes.h>
#include <string.h>

#include "util.h"

void gmt_render_merge_json(FILE *o, const struct gmt_merge *m, long top)
{
    fprintf(o, "{\"schema\": \"gpumemtrace.merge/1\", \"ranks\": [");
    for (size_t i = 0; i < m->n_ranks; i++) {
        const struct gmt_merge_rank *r = &m->ranks[i];
        fprintf(o, "%s{\"rank\": %d, \"file\": ", i ? ", " : "", r->rank);
        gmt_fput_json_string(o, r->a.t.path);
        fprintf(o, ", \"nccl_changed_from_first\": ");
        gmt_fput_json_string(o, r->nccl_from_first);
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
               ", \"min_rank\": %d, \"max_rank\": %d, \"calls_min\": %" PRIu64 ", \"calls_max\": %" PRIu64,
               k->nranks, k->bytes, k->ranks, k->min_first, k->max_first, k->min_rank, k->max_rank,
               k->calls_min, k->calls_max);
        fprintf(o, ", \"first_tracked_median_bytes\": %" PRId64, k->median_first);
        if (k->out_rank >= 0)
            fprintf(o, ", \"outlier_rank\": %d, \"outlier_first_tracked_bytes\": %" PRId64 "}",
                   k->out_rank, k->out_first);
        else
            fprintf(o, ", \"outlier_rank\": null, \"outlier_first_tracked_bytes\": null}");
    }
    fprintf(o, "], \"sites\": [");
    for (size_t j = 0; j < m->n_sites && (long)j < top; j++) {
        const struct gmt_merge_site *s = &m->sites[j];
        fprintf(o, "%s{\"site\": ", j ? ", " : "");
        gmt_fput_json_string(o, s->line);
        fprintf(o, ", \"ranks\": %d, \"live_at_peak_bytes\": %" PRIu64
               ", \"min_bytes\": %" PRIu64 ", \"max_bytes\": %" PRIu64
               ", \"min_rank\": %d, \"max_rank\": %d}",
               s->ranks, s->total, s->min, s->max, s->min_rank, s->max_rank);
    }
    fprintf(o, "]}\n");
}

void gmt_render_merge_text(FILE *o, const struct gmt_merge *m, long top)
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
               r->a.t.host ? gmt_one_line(r->a.t.host) : "?", b[0], b[1], b[2], b[3], b[4], b[5],
               gmt_one_line(base ? base + 1 : r->a.t.path));
    }
    bool sampled = false;
    for (size_t i = 0; i < m->n_ranks; i++)
        sampled |= m->ranks[i].has_used;
    if (sampled) /* the peak's instant is seldom a sample's: `summary` says when each was */
        fprintf(o, "  dev used, untracked: at each rank's largest device-used sample, not at its peak\n");
    fprintf(o, "\n  NCCL calls across ranks (what the first call added, tracked)\n");
    fprintf(o, "  %-28s %5s %10s %6s %10s %10s  %s\n", "op", "size", "bytes/call", "ranks",
           "min", "max", "");
    for (size_t j = 0; j < m->n_colls; j++) {
        const struct gmt_merge_coll *k = &m->colls[j];
        char bb[GMT_FMT_LEN], mn[GMT_FMT_LEN], mx[GMT_FMT_LEN];
        gmt_fmt_bytes(bb, sizeof bb, k->bytes);
        gmt_fmt_sbytes(mn, sizeof mn, k->min_first);
        gmt_fmt_sbytes(mx, sizeof mx, k->max_first);
        char note[700] = "";
        if (k->out_rank >= 0) {
            char ob[GMT_FMT_LEN], md[GMT_FMT_LEN];
            gmt_fmt_sbytes(ob, sizeof ob, k->out_first);
            gmt_fmt_sbytes(md, sizeof md, k->median_first);
            const char *nc = k->nccl_out;
            snprintf(note, sizeof note, "rank %d stands out: %s (median %s)%s%s", k->out_rank, ob,
                     md, nc[0] ? " -- " : "", nc);
        }
        else if (k->calls_min != k->calls_max)
            snprintf(note, sizeof note, "calls differ: %" PRIu64 "..%" PRIu64, k->calls_min, k->calls_max);
        fprintf(o, "  %-28.28s %5d %10s %6d %10s %10s  %s\n", k->label, k->nranks, bb, k->ranks, mn, mx, note);
    }
    /* ranks of one job normally share their NCCL settings: say where they do not */
    bool any = false;
    for (size_t i = 1; i < m->n_ranks; i++) {
        const char *nc = m->ranks[i].nccl_from_first;
        if (nc[0])
            fprintf(o, "%s  rank %d's NCCL differs from rank %d's: %s\n", any ? "" : "\n",
                    m->ranks[i].rank, m->ranks[0].rank, nc);
        any = any || nc[0];
    }
    if (!m->n_sites || top <= 0)
        return;
    fprintf(o, "\n  Allocation sites across ranks (live at each rank's peak; a rank without one: 0)\n");
    fprintf(o, "  %10s %6s %10s %10s  %s\n", "all ranks", "ranks", "min", "max", "site");
    for (size_t j = 0; j < m->n_sites && (long)j < top; j++) {
        const struct gmt_merge_site *s = &m->sites[j];
        char t[GMT_FMT_LEN], mn[GMT_FMT_LEN], mx[GMT_FMT_LEN];
        gmt_fmt_bytes(t, sizeof t, s->total);
        gmt_fmt_bytes(mn, sizeof mn, s->min);
        gmt_fmt_bytes(mx, sizeof mx, s->max);
        fprintf(o, "  %10s %6d %10s %10s  %s", t, s->ranks, mn, mx, s->line);
        if (s->min != s->max && m->n_ranks > 1)
            fprintf(o, "  (rank %d %s, rank %d %s)", s->max_rank, mx, s->min_rank, mn);
        fputc('\n', o);
    }
}
