/* render_watch_json.c: watch's view as one JSON object per snapshot, on one line (schema gpumemtrace.watch/1, docs/live.md). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "idnames.h"
#include "util.h"
#include "watch_view.h"

static void str_or_null(FILE *o, const char *s)
{
    if (s)
        gmt_fput_json_string(o, s);
    else
        fputs("null", o);
}

/* A trace time on the realtime clock, ns since the epoch; null without PROCESS's anchors. */
static void unix_ns(FILE *o, const struct gmt_watch_trace *w, uint64_t t)
{
    if (w->has_proc && t >= w->monotonic_ns)
        fprintf(o, "%" PRIu64, w->realtime_ns + (t - w->monotonic_ns));
    else
        fputs("null", o);
}

static void cats_json(FILE *o, const struct gmt_watch_trace *w, const uint64_t *by_cat)
{
    fputc('{', o);
    int n = 0;
    for (size_t c = 0; c < w->n_cats; c++) {
        if (!by_cat[c])
            continue;
        if (n++)
            fputs(", ", o);
        gmt_fput_json_string(o, w->cat_names[c]);
        fprintf(o, ": %" PRIu64, by_cat[c]);
    }
    fputc('}', o);
}

static void dev_json(FILE *o, const struct gmt_watch_trace *w, const struct gmt_watch_dev *d)
{
    fprintf(o, "{\"device\": %d, \"tracked_bytes\": %" PRIu64 ", \"peak_bytes\": %" PRIu64
            ", \"nccl_bytes\": %" PRIu64 ", \"by_category\": ", d->device, d->tracked, d->peak,
            w->nccl_cat >= 0 ? d->by_cat[w->nccl_cat] : 0);
    cats_json(o, w, d->by_cat);
    int64_t u;
    if (gmt_watch_untracked(d, &u))
        fprintf(o, ", \"device_used_bytes\": %" PRIu64 ", \"device_total_bytes\": %" PRIu64
                ", \"untracked_bytes\": %" PRId64 ", \"device_used_max_bytes\": %" PRIu64
                ", \"untracked_at_used_max_bytes\": %" PRId64, d->used_last, d->total, u,
                d->used_max, (int64_t)d->used_max - (int64_t)d->tracked_at_used_max -
                (int64_t)d->graph_at_used_max);
    else
        fputs(", \"device_used_bytes\": null, \"device_total_bytes\": null, \"untracked_bytes\": "
              "null, \"device_used_max_bytes\": null, \"untracked_at_used_max_bytes\": null", o);
    if (d->has_graph)
        fprintf(o, ", \"graph_reserved_bytes\": %" PRIu64, d->graph_reserved);
    else
        fputs(", \"graph_reserved_bytes\": null", o);
    if (d->has_first_step)
        fprintf(o, ", \"nccl_first_step_bytes\": %" PRIu64, d->nccl_first_step);
    else
        fputs(", \"nccl_first_step_bytes\": null", o);
    fprintf(o, ", \"allocs\": %" PRIu64 ", \"frees\": %" PRIu64 ", \"failures\": %" PRIu64 "}",
            d->allocs, d->frees, d->failures);
}

static void call_json(FILE *o, const struct gmt_watch_row *r)
{
    const struct gmt_watch_call *c = r->call;
    if (!c) {
        fputs("null", o);
        return;
    }
    char name[64];
    const struct gmt_watch_comm *k = gmt_watch_comm_of(r->w, c->comm);
    fputs("{\"op\": ", o);
    gmt_fput_json_string(o, gmt_op_name(c->op));
    fputs(", \"name\": ", o);
    gmt_fput_json_string(o, gmt_watch_call_name(c, name, sizeof name));
    fprintf(o, ", \"tid\": %" PRIu32 ", \"scope\": %" PRIu32 ", \"comm_rank\": %" PRId32
            ", \"comm_size\": %" PRId32 ", \"began_unix_ns\": ", c->tid, c->id,
            k ? k->rank : -1, k ? k->nranks : -1);
    unix_ns(o, r->w, c->begin);
    fprintf(o, ", \"in_call_ns\": %" PRIu64 ", \"hanging\": %s}", r->call_ns,
            r->hanging ? "true" : "false");
}

static void fails_json(FILE *o, const struct gmt_watch_trace *w)
{
    const struct gmt_watch_fail *f;
    fputc('[', o);
    for (size_t i = 0; (f = gmt_watch_fail_at(w, i)); i++) {
        fputs(i ? ", {\"unix_ns\": " : "{\"unix_ns\": ", o);
        unix_ns(o, w, f->time);
        fputs(", \"api\": ", o);
        gmt_fput_json_string(o, gmt_api_name(f->api));
        fprintf(o, ", \"bytes\": %" PRIu64 ", \"device\": %d, \"error\": %" PRId32
                ", \"error_name\": ", f->bytes, f->device, f->error);
        str_or_null(o, gmt_error_name(f->api, f->error));
        fprintf(o, ", \"tracked_bytes\": %" PRIu64, f->tracked);
        if (f->has_dev)
            fprintf(o, ", \"device_free_bytes\": %" PRIu64 ", \"device_total_bytes\": %" PRIu64 "}",
                    f->dev_free, f->dev_total);
        else
            fputs(", \"device_free_bytes\": null, \"device_total_bytes\": null}", o);
    }
    fputc(']', o);
}

static void int_or_null(FILE *o, bool has, int64_t v)
{
    if (has)
        fprintf(o, "%" PRId64, v);
    else
        fputs("null", o);
}

static void row_json(FILE *o, const struct gmt_watch_row *r)
{
    const struct gmt_watch_trace *w = r->w;
    fputs("{\"file\": ", o);
    gmt_fput_json_string(o, w->path);
    fprintf(o, ", \"rank\": %" PRId32 ", \"world_size\": %" PRId32 ", \"host\": ", r->rank,
            w->world_size);
    str_or_null(o, w->host);
    fprintf(o, ", \"pid\": %" PRIu32 ", \"job_id\": ", w->pid);
    str_or_null(o, w->job_id);
    fprintf(o, ", \"state\": \"%s\", \"complete\": %s, \"restarts\": %" PRIu64
            ", \"tracked_bytes\": %" PRIu64 ", \"nccl_bytes\": %" PRIu64 ", \"peak_bytes\": %" PRIu64
            ", \"untracked_bytes\": ", r->state, w->complete ? "true" : "false", w->restarts,
            r->tracked, r->nccl, r->peak);
    int_or_null(o, r->has_untracked, r->untracked);
    fprintf(o, ", \"steps\": %" PRIu64 ", \"step_growth_bytes\": ", w->steps);
    int_or_null(o, r->has_step_growth, r->step_growth);
    fputs(", \"growth_per_min_bytes\": ", o);
    int_or_null(o, r->has_min_growth, r->min_growth);
    fprintf(o, ", \"alloc_failures\": %" PRIu64 ", \"unmatched_frees\": %" PRIu64
            ", \"nccl_calls\": {", w->n_fails, w->unmatched_frees);
    int n = 0;
    for (unsigned op = 1; op < GMT_OP_MAX; op++)
        if (w->calls[op])
            fprintf(o, "%s\"%s\": %" PRIu64, n++ ? ", " : "", gmt_op_name(op), w->calls[op]);
    fputs("}, \"call\": ", o);
    call_json(o, r);
    fputs(", \"devices\": [", o);
    n = 0;
    for (size_t d = 0; d < w->n_dev; d++)
        if (gmt_watch_dev_shown(&w->dev[d])) {
            if (n++)
                fputs(", ", o);
            dev_json(o, w, &w->dev[d]);
        }
    fputs("], \"failures\": ", o);
    fails_json(o, w);
    fputc('}', o);
}

static void stand_out_json(FILE *o, const struct gmt_watch_view *v)
{
    const struct gmt_job *j = &v->job;
    int n = 0;
    fputc('[', o);
    for (size_t i = 0; i < v->n; i++) {
        if (!v->rows[i].stands_out)
            continue;
        fprintf(o, "%s{\"rank\": %" PRId32 ", \"file\": ", n++ ? ", " : "", j->r[i].rank);
        gmt_fput_json_string(o, j->r[i].path);
        fprintf(o, ", \"peak_bytes\": %" PRIu64 ", \"nccl_bytes\": %" PRIu64 ", \"differences\": ",
                j->r[i].peak, j->r[i].nccl);
        gmt_fput_json_string(o, j->r[i].diff);
        fputs(", \"untracked_cause\": ", o);
        gmt_fput_json_string(o, j->r[i].cause);
        fputc('}', o);
    }
    fputc(']', o);
}

void gmt_watch_render_json(FILE *o, const struct gmt_watch_view *v)
{
    const struct gmt_watch_set *s = v->set;
    fprintf(o, "{\"schema\": \"gpumemtrace.watch/1\", \"unix_ns\": %" PRIu64 ", \"hang_ns\": %" PRIu64
            ", \"traces\": %zu, \"traces_without_gpu\": %zu, \"hanging\": %zu, \"alloc_failures\": %"
            PRIu64 ", \"refresh\": {\"count\": %" PRIu64 ", \"ns\": %" PRIu64 ", \"bytes\": %" PRIu64
            "}, \"ranks\": [", v->realtime_ns, v->hang_ns, v->n_traces, v->n_other, v->n_hanging,
            v->failures, s->refreshes, s->refresh_ns, s->bytes);
    for (size_t i = 0; i < v->n; i++) {
        if (i)
            fputs(", ", o);
        row_json(o, &v->rows[i]);
    }
    fputs("], \"stand_out\": ", o);
    stand_out_json(o, v);
    fputs(", \"errors\": [", o);
    int n = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (!s->t[i]->error)
            continue;
        fputs(n++ ? ", {\"file\": " : "{\"file\": ", o);
        gmt_fput_json_string(o, s->t[i]->path);
        fputs(", \"error\": ", o);
        gmt_fput_json_string(o, s->t[i]->error);
        fputc('}', o);
    }
    fputs("]}\n", o);
}
