/* watch_prom.c: watch's view as Prometheus metrics, text exposition format 0.0.4, one series per rank and device. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "idnames.h"
#include "util.h"
#include "watch_view.h"

/* A label value as the format wants it: '\\', '"' and newline escaped; any other byte
 * that is not printable text (controls, DEL, bytes of no valid UTF-8 sequence) written as
 * the four characters \xHH behind an escaped backslash, so nothing from a trace can end
 * the line or the value. */
static void label_value(FILE *o, const char *s)
{
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t n = strlen((const char *)p);
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        if (c == '\\' || c == '"' || c == '\n') {
            fputs(c == '\n' ? "\\n" : c == '"' ? "\\\"" : "\\\\", o);
            i++;
            continue;
        }
        size_t k = c < 0x80 ? (c >= 0x20 && c != 0x7f) : gmt_utf8_len(p + i, n - i);
        if (!k || (k == 2 && c == 0xc2 && p[i + 1] < 0xa0)) { /* C1 controls: U+0080..U+009F */
            fprintf(o, "\\\\x%02x", c);
            i++;
            continue;
        }
        fwrite(p + i, 1, k, o);
        i += k;
    }
}

/* The labels every series of a rank has: job, host, rank, pid. */
static void rank_labels(FILE *o, const struct gmt_watch_row *r)
{
    fputs("job=\"", o);
    label_value(o, r->w->job_id);
    fputs("\",host=\"", o);
    label_value(o, r->w->host);
    fprintf(o, "\",rank=\"%" PRId32 "\",pid=\"%" PRIu32 "\"", r->rank, r->w->pid);
}

static void family(FILE *o, const char *name, const char *type, const char *help)
{
    fprintf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

enum dev_fig { DEV_TRACKED, DEV_NCCL, DEV_PEAK, DEV_UNTRACKED, DEV_USED, DEV_TOTAL,
               DEV_FIRST_STEP, DEV_FAILS };

/* One figure of a device; false when the device does not have it. */
static bool dev_value(const struct gmt_watch_trace *w, const struct gmt_watch_dev *d,
                      enum dev_fig f, int64_t *v)
{
    switch (f) {
    case DEV_TRACKED: *v = (int64_t)d->tracked; return true;
    case DEV_NCCL: *v = w->nccl_cat >= 0 ? (int64_t)d->by_cat[w->nccl_cat] : 0; return true;
    case DEV_PEAK: *v = (int64_t)d->peak; return true;
    case DEV_UNTRACKED: return gmt_watch_untracked(d, v);
    case DEV_USED: *v = (int64_t)d->used_last; return d->has_used;
    case DEV_TOTAL: *v = (int64_t)d->total; return d->has_used;
    case DEV_FIRST_STEP: *v = (int64_t)d->nccl_first_step; return d->has_first_step;
    case DEV_FAILS: *v = (int64_t)d->failures; return true;
    }
    return false;
}

static void dev_family(FILE *o, const struct gmt_watch_view *v, const char *name, const char *type,
                       const char *help, enum dev_fig f)
{
    family(o, name, type, help);
    for (size_t i = 0; i < v->n; i++) {
        const struct gmt_watch_trace *w = v->rows[i].w;
        for (size_t k = 0; k < w->n_dev; k++) {
            int64_t x;
            if (!gmt_watch_dev_shown(&w->dev[k]) || !dev_value(w, &w->dev[k], f, &x))
                continue;
            fprintf(o, "%s{", name);
            rank_labels(o, &v->rows[i]);
            fprintf(o, ",device=\"%d\"} %" PRId64 "\n", w->dev[k].device, x);
        }
    }
}

static void by_category(FILE *o, const struct gmt_watch_view *v)
{
    family(o, "gpumemtrace_device_bytes", "gauge",
           "Tracked device memory live now, by the software whose call stack asked for it.");
    for (size_t i = 0; i < v->n; i++) {
        const struct gmt_watch_trace *w = v->rows[i].w;
        for (size_t k = 0; k < w->n_dev; k++) {
            const struct gmt_watch_dev *d = &w->dev[k];
            for (size_t c = 0; gmt_watch_dev_shown(d) && c < w->n_cats; c++) {
                if (!d->by_cat[c])
                    continue;
                fputs("gpumemtrace_device_bytes{", o);
                rank_labels(o, &v->rows[i]);
                fprintf(o, ",device=\"%d\",category=\"", d->device);
                label_value(o, w->cat_names[c]);
                fprintf(o, "\"} %" PRIu64 "\n", d->by_cat[c]);
            }
        }
    }
}

static void calls(FILE *o, const struct gmt_watch_view *v)
{
    family(o, "gpumemtrace_nccl_call_seconds", "gauge",
           "How long the rank has been in the NCCL call it has been in longest; absent when in none.");
    for (size_t i = 0; i < v->n; i++) {
        const struct gmt_watch_row *r = &v->rows[i];
        if (!r->call)
            continue;
        const struct gmt_watch_comm *c = gmt_watch_comm_of(r->w, r->call->comm);
        char name[64];
        fputs("gpumemtrace_nccl_call_seconds{", o);
        rank_labels(o, r);
        fputs(",op=\"", o);
        label_value(o, gmt_watch_call_name(r->call, name, sizeof name));
        fprintf(o, "\",comm=\"%zu\"} %.3f\n", c ? (size_t)(c - r->w->comms) + 1 : 0,
                (double)r->call_ns / 1e9);
    }
    family(o, "gpumemtrace_nccl_calls_total", "counter", "NCCL calls that returned, by operation.");
    for (size_t i = 0; i < v->n; i++)
        for (unsigned op = 1; op < GMT_OP_MAX; op++) {
            if (!v->rows[i].w->calls[op])
                continue;
            fputs("gpumemtrace_nccl_calls_total{", o);
            rank_labels(o, &v->rows[i]);
            fprintf(o, ",op=\"%s\"} %" PRIu64 "\n", gmt_op_name(op), v->rows[i].w->calls[op]);
        }
}

enum rank_fig { RANK_HANGING, RANK_STEPS, RANK_STEP_GROWTH, RANK_ENDED, RANK_RESTARTS };

static void rank_family(FILE *o, const struct gmt_watch_view *v, const char *name, const char *type,
                        const char *help, enum rank_fig f)
{
    family(o, name, type, help);
    for (size_t i = 0; i < v->n; i++) {
        const struct gmt_watch_row *r = &v->rows[i];
        int64_t x = 0;
        if (f == RANK_STEP_GROWTH && !r->has_step_growth)
            continue;
        x = f == RANK_HANGING ? r->hanging : f == RANK_STEPS ? (int64_t)r->w->steps
            : f == RANK_STEP_GROWTH ? r->step_growth : f == RANK_ENDED ? r->w->complete
            : (int64_t)r->w->restarts;
        fprintf(o, "%s{", name);
        rank_labels(o, r);
        fprintf(o, "} %" PRId64 "\n", x);
    }
}

void gmt_watch_render_prom(FILE *o, const struct gmt_watch_view *v)
{
    by_category(o, v);
    dev_family(o, v, "gpumemtrace_tracked_bytes", "gauge",
               "Device memory that allocation calls hold now (summary's tracked bytes).", DEV_TRACKED);
    dev_family(o, v, "gpumemtrace_nccl_bytes", "gauge",
               "Tracked device memory of category nccl, live now.", DEV_NCCL);
    dev_family(o, v, "gpumemtrace_peak_bytes", "gauge",
               "The most tracked device memory live at once so far.", DEV_PEAK);
    dev_family(o, v, "gpumemtrace_untracked_bytes", "gauge",
               "Device memory in use that no allocation call shows, at the latest device sample.",
               DEV_UNTRACKED);
    dev_family(o, v, "gpumemtrace_device_used_bytes", "gauge",
               "The device's used memory (total - free) at the latest sample.", DEV_USED);
    dev_family(o, v, "gpumemtrace_device_total_bytes", "gauge", "The device's memory.", DEV_TOTAL);
    dev_family(o, v, "gpumemtrace_nccl_first_step_bytes", "gauge",
               "Tracked device memory of category nccl when the first training step ended.",
               DEV_FIRST_STEP);
    dev_family(o, v, "gpumemtrace_alloc_failures_total", "counter",
               "Allocation calls that returned an error.", DEV_FAILS);
    calls(o, v);
    rank_family(o, v, "gpumemtrace_nccl_hanging", "gauge",
                "1 while the rank has been in one NCCL call for longer than watch's --hang.",
                RANK_HANGING);
    rank_family(o, v, "gpumemtrace_steps_total", "counter",
                "Training steps (NVTX ranges named as steps) that ended.", RANK_STEPS);
    rank_family(o, v, "gpumemtrace_step_growth_bytes", "gauge",
                "Tracked device memory added per step after the first, on average.",
                RANK_STEP_GROWTH);
    rank_family(o, v, "gpumemtrace_trace_ended", "gauge",
                "1 once the trace's END record was read (the process exited cleanly).", RANK_ENDED);
    rank_family(o, v, "gpumemtrace_trace_restarts_total", "counter",
                "Times the trace file was replaced or rewritten (a restarted rank).", RANK_RESTARTS);
    const struct gmt_watch_set *s = v->set;
    family(o, "gpumemtrace_watch_traces", "gauge", "Traces this watch follows.");
    fprintf(o, "gpumemtrace_watch_traces %zu\n", v->n_traces);
    family(o, "gpumemtrace_watch_refresh_seconds", "gauge", "Wall time of watch's latest refresh.");
    fprintf(o, "gpumemtrace_watch_refresh_seconds %.6f\n", (double)s->refresh_ns / 1e9);
    family(o, "gpumemtrace_watch_read_bytes_total", "counter", "Bytes of trace this watch read.");
    fprintf(o, "gpumemtrace_watch_read_bytes_total %" PRIu64 "\n", s->bytes_total);
}
