/* render_job.c: the job overview that opens a summary of several traces: as text for a person, as the "job" object of the JSON document. */
#include "render_job.h"

#include <inttypes.h>
#include <string.h>

#include "util.h"

#define MAX_SHOWN 10 /* ranks and collectives named as standing out, at most */

static void spread_line(FILE *o, const char *what, const struct gmt_job_spread *s)
{
    char a[GMT_FMT_LEN], b[GMT_FMT_LEN], c[GMT_FMT_LEN];
    if (!s->known) {
        fprintf(o, "  %-18s not sampled\n", what);
        return;
    }
    if (s->min == s->max) {
        fprintf(o, "  %-18s %s on every rank\n", what, gmt_fmt_bytes(a, sizeof a, s->min));
        return;
    }
    gmt_fmt_bytes(a, sizeof a, s->min);
    gmt_fmt_bytes(b, sizeof b, s->median);
    gmt_fmt_bytes(c, sizeof c, s->max);
    fprintf(o, "  %-18s min %s (rank %" PRId32 ")  median %s  max %s (rank %" PRId32 ")\n", what,
            a, s->min_rank, b, c, s->max_rank);
}

/* "  hosts  node-a: ranks 0-3; node-b: ranks 4-7", at most 8 hosts named. */
static void hosts_line(FILE *o, const struct gmt_job *j)
{
    fprintf(o, "  hosts  ");
    size_t named = 0;
    for (size_t i = 0; i < j->n && named < 8; i++) {
        const char *h = j->r[i].host ? j->r[i].host : "?";
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = !strcmp(j->r[k].host ? j->r[k].host : "?", h);
        if (seen)
            continue;
        fprintf(o, "%s", named++ ? "; " : "");
        gmt_fput_safe(o, h, strlen(h));
        fprintf(o, ":");
        /* its ranks (sorted already), as runs */
        int32_t start = -1, prev = -1;
        size_t runs = 0;
        for (size_t k = i; k < j->n; k++) {
            if (j->r[k].rank < 0 || strcmp(j->r[k].host ? j->r[k].host : "?", h) ||
                j->r[k].rank == prev)
                continue;
            if (prev >= 0 && j->r[k].rank == prev + 1) {
                prev = j->r[k].rank;
                continue;
            }
            if (prev >= 0)
                fprintf(o, start == prev ? "%s%d" : "%s%d-%d", runs++ ? "," : " ranks ", start, prev);
            start = prev = j->r[k].rank;
        }
        if (prev >= 0)
            fprintf(o, start == prev ? "%s%d" : "%s%d-%d", runs++ ? "," : " ranks ", start, prev);
    }
    if (j->n_hosts > named)
        fprintf(o, "; and %zu more", j->n_hosts - named);
    fputc('\n', o);
}

void gmt_render_job_text(FILE *o, const struct gmt_job *j, const struct gmt_report_opts *ro)
{
    (void)ro;
    fprintf(o, "gpumemtrace summary of a job: %zu trace(s), %zu with a rank, on %zu host(s)", j->n,
            j->n_ranked, j->n_hosts);
    if (j->n && j->r[0].job_id)
        fprintf(o, ", job %s", j->r[0].job_id);
    fputc('\n', o);
    if (j->world_mixed)
        fprintf(o, "  world size differs between the traces\n");
    else if (j->world_size > 0 && j->all_there)
        fprintf(o, "  world size %" PRId32 ", every rank here\n", j->world_size);
    else if (j->world_size > 0)
        fprintf(o, "  world size %" PRId32 ", %zu rank(s) MISSING\n", j->world_size, j->n_missing);
    if (j->n_hosts > 1)
        hosts_line(o, j);
    spread_line(o, "peak per rank", &j->peak);
    spread_line(o, "NCCL per rank", &j->nccl);
    spread_line(o, "untracked per rank", &j->untracked);
    if (j->u_context.known)
        spread_line(o, "  CUDA context", &j->u_context);
    if (j->u_reserv.known)
        spread_line(o, "  local-mem reservation", &j->u_reserv);
    if (j->u_other.known && j->u_other.max)
        spread_line(o, "  other processes", &j->u_other);
    /* what stands out, and what the traces say is different there */
    size_t shown = 0, out = 0;
    for (size_t i = 0; i < j->n; i++) {
        if (!j->r[i].stands_out)
            continue;
        if (out++ == 0)
            fprintf(o, "\n  Ranks that stand out\n");
        if (shown >= MAX_SHOWN)
            continue;
        shown++;
        const struct gmt_job_rank *r = &j->r[i];
        char p[GMT_FMT_LEN], n[GMT_FMT_LEN];
        gmt_fmt_bytes(p, sizeof p, r->peak);
        gmt_fmt_bytes(n, sizeof n, r->nccl);
        fprintf(o, "    rank %" PRId32 ": peak %s, NCCL %s", r->rank, p, n);
        if (r->cause[0])
            fprintf(o, "; untracked: %s", r->cause);
        if (r->diff[0]) {
            fprintf(o, "; recorded differences: ");
            gmt_fput_safe(o, r->diff, strlen(r->diff));
        } else {
            fprintf(o, "; no recorded setting, version or device count differs");
        }
        fputc('\n', o);
    }
    if (out > shown)
        fprintf(o, "    ... and %zu more (--per-rank shows every report)\n", out - shown);
    size_t cs = 0;
    for (size_t k = 0; k < j->n_colls; k++) {
        const struct gmt_job_coll_spread *c = &j->colls[k];
        if (c->out_rank < 0)
            continue;
        if (cs++ == 0)
            fprintf(o, "\n  Collectives that differ across ranks (what the first call added)\n");
        if (cs > MAX_SHOWN)
            continue;
        char m[GMT_FMT_LEN], x[GMT_FMT_LEN], b[GMT_FMT_LEN];
        gmt_fmt_sbytes(m, sizeof m, c->c.first);
        gmt_fmt_sbytes(x, sizeof x, c->out_first);
        gmt_fmt_bytes(b, sizeof b, c->c.bytes);
        fprintf(o, "    %s %" PRId32 " ranks %s/call on %d rank(s): median %s, rank %" PRId32 " %s\n",
                c->c.label, c->c.nranks, b, c->ranks, m, c->out_rank, x);
    }
    if (cs > MAX_SHOWN)
        fprintf(o, "    ... and %zu more\n", cs - MAX_SHOWN);
    fprintf(o, "\n  Ranks alike: %zu group(s)\n", j->n_groups);
    const size_t *order = j->order;
    for (size_t k = 0; k < j->n_groups && k < GMT_JOB_MAX_REPORTS; k++) {
        char ranks[512];
        size_t n, rep;
        gmt_job_group_ranks(j, order[k], ranks, sizeof ranks, &n, &rep);
        fprintf(o, "    ranks %s (%zu): report of rank %" PRId32 " below\n", ranks, n, j->r[rep].rank);
    }
    if (j->n_groups > GMT_JOB_MAX_REPORTS)
        fprintf(o, "    ... and %zu smaller group(s), not shown (--per-rank shows every report)\n",
                j->n_groups - GMT_JOB_MAX_REPORTS);
    fputc('\n', o);
}

static void json_spread(FILE *o, const char *key, const struct gmt_job_spread *s)
{
    if (!s->known) {
        fprintf(o, "\"%s\": null", key);
        return;
    }
    fprintf(o, "\"%s\": {\"min_bytes\": %" PRIu64 ", \"min_rank\": %" PRId32 ", \"median_bytes\": %" PRIu64
               ", \"max_bytes\": %" PRIu64 ", \"max_rank\": %" PRId32 "}",
            key, s->min, s->min_rank, s->median, s->max, s->max_rank);
}

/* , "untracked_bytes": N|null, "untracked_parts": {context, reservation, other_processes}
 * of one rank, each null where its traces did not measure it */
static void json_rank_untracked(FILE *o, const struct gmt_job_rank *r)
{
    const struct {
        const char *key;
        bool known;
        uint64_t v;
    } f[] = {{"context", r->has_context, r->u_context},
             {"reservation", r->has_reserv, r->u_reserv},
             {"other_processes", r->has_other, r->u_other}};
    if (r->has_used)
        fprintf(o, ", \"untracked_bytes\": %" PRIu64, r->untracked);
    else
        fputs(", \"untracked_bytes\": null", o);
    fputs(", \"untracked_parts\": {", o);
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        fprintf(o, "%s\"%s_bytes\": ", k ? ", " : "", f[k].key);
        if (f[k].known)
            fprintf(o, "%" PRIu64, f[k].v);
        else
            fputs("null", o);
    }
    if (r->u_other_pid)
        fprintf(o, ", \"other_processes_largest_pid\": %" PRIu32, r->u_other_pid);
    else
        fputs(", \"other_processes_largest_pid\": null", o);
    fputc('}', o);
}

void gmt_render_job_json(FILE *o, const struct gmt_job *j)
{
    if (!j) {
        fprintf(o, "\"job\": null, ");
        return;
    }
    fprintf(o, "\"job\": {\"traces\": %zu, \"ranked\": %zu, \"hosts\": %zu, \"job_id\": ", j->n,
            j->n_ranked, j->n_hosts);
    if (j->n && j->r[0].job_id)
        gmt_fput_json_string(o, j->r[0].job_id);
    else
        fputs("null", o);
    if (j->world_size > 0 && !j->world_mixed)
        fprintf(o, ", \"world_size\": %" PRId32 ", \"missing_ranks\": %zu", j->world_size, j->n_missing);
    else
        fprintf(o, ", \"world_size\": null, \"missing_ranks\": null");
    fputs(", ", o);
    json_spread(o, "peak", &j->peak);
    fputs(", ", o);
    json_spread(o, "nccl", &j->nccl);
    fputs(", ", o);
    json_spread(o, "untracked", &j->untracked);
    fputs(", \"untracked_parts\": {", o);
    json_spread(o, "context", &j->u_context);
    fputs(", ", o);
    json_spread(o, "reservation", &j->u_reserv);
    fputs(", ", o);
    json_spread(o, "other_processes", &j->u_other);
    fputs("}, \"stand_out\": [", o);
    size_t n = 0;
    for (size_t i = 0; i < j->n; i++) {
        if (!j->r[i].stands_out)
            continue;
        fprintf(o, "%s{\"rank\": %" PRId32 ", \"file\": ", n++ ? ", " : "", j->r[i].rank);
        gmt_fput_json_string(o, j->r[i].path);
        fprintf(o, ", \"peak_bytes\": %" PRIu64 ", \"nccl_bytes\": %" PRIu64 ", \"differences\": ",
                j->r[i].peak, j->r[i].nccl);
        gmt_fput_json_string(o, j->r[i].diff);
        json_rank_untracked(o, &j->r[i]);
        fputs(", \"untracked_cause\": ", o);
        gmt_fput_json_string(o, j->r[i].cause);
        fputc('}', o);
    }
    fputs("], \"collectives\": [", o);
    for (size_t k = 0; k < j->n_colls; k++) {
        const struct gmt_job_coll_spread *c = &j->colls[k];
        fprintf(o, "%s{\"op\": ", k ? ", " : "");
        gmt_fput_json_string(o, c->c.label);
        fprintf(o, ", \"comm_size\": %" PRId32 ", \"bytes_per_call\": %" PRIu64 ", \"ranks\": %d"
                   ", \"first_tracked_median_bytes\": %" PRId64,
                c->c.nranks, c->c.bytes, c->ranks, c->c.first);
        if (c->out_rank >= 0)
            fprintf(o, ", \"outlier_rank\": %" PRId32 ", \"outlier_first_tracked_bytes\": %" PRId64 "}",
                    c->out_rank, c->out_first);
        else
            fputs(", \"outlier_rank\": null, \"outlier_first_tracked_bytes\": null}", o);
    }
    fputs("], \"groups\": [", o);
    const size_t *order = j->order;
    for (size_t k = 0; k < j->n_groups; k++) {
        char ranks[512];
        size_t cnt, rep, g = order[k];
        gmt_job_group_ranks(j, g, ranks, sizeof ranks, &cnt, &rep);
        fprintf(o, "%s{\"ranks\": ", k ? ", " : "");
        gmt_fput_json_string(o, ranks);
        fprintf(o, ", \"count\": %zu, \"representative_rank\": %" PRId32 "}", cnt, j->r[rep].rank);
    }
    fputs("]}, ", o);
}
