/* render_json.c: the summary as one JSON document (schema gpumemtrace.summary/1, docs/summary-json.md). */
#include "idnames.h"
#include "render.h"
#include "render_job.h"

#include <inttypes.h>
#include <string.h>

#include "holders.h"
#include "names.h"
#include "render_explain.h"
#include "reader.h"
#include "sites.h"
#include "stacks.h"
#include "untracked.h"
#include "util.h"

static void jcats(FILE *out, const struct gmt_analysis *a, const uint64_t *by_cat)
{
    fputc('{', out);
    int first = 1;
    for (size_t c = 0; c < a->n_cats; c++)
        if (by_cat[c]) {
            fprintf(out, "%s", first ? "" : ", ");
            gmt_fput_json_string(out, a->cat_names[c]);
            fprintf(out, ": %" PRIu64, by_cat[c]);
            first = 0;
        }
    fputc('}', out);
}

static void json_process(FILE *out, const struct gmt_trace *t)
{
    fprintf(out, "{\"file\": ");
    gmt_fput_json_string(out, t->path);
    fprintf(out, ", \"pid\": %u, \"ppid\": %u, \"host\": ", t->proc.pid, t->proc.ppid);
    gmt_fput_json_string(out, t->host ? t->host : "");
    fprintf(out, ", \"rank\": %d, \"world_size\": %d, \"local_rank\": %d, \"command\": ",
            t->has_proc ? t->proc.rank : -1, t->has_proc ? t->proc.world_size : -1,
            t->has_proc ? t->proc.local_rank : -1);
    gmt_fput_json_string(out, t->cmdline ? t->cmdline : "");
    fprintf(out, ", \"versions\": {\"driver\": %d, \"runtime\": %d, \"nccl\": %d}",
            t->version[GMT_COMP_DRIVER], t->version[GMT_COMP_RUNTIME], t->version[GMT_COMP_NCCL]);
    fprintf(out, ", \"nccl_env\": {");
    for (size_t i = 0; i < GMT_N_NCCL_SETTINGS; i++) {
        const char *v = gmt_trace_env(t, gmt_nccl_settings[i].name);
        fprintf(out, "%s", i ? ", " : "");
        gmt_fput_json_string(out, gmt_nccl_settings[i].name);
        fprintf(out, ": ");
        if (v)
            gmt_fput_json_string(out, v);
        else
            fprintf(out, "null");
    }
    fprintf(out, "}, \"span_ns\": %" PRIu64 ", \"records\": %" PRIu64 ", \"complete\": %s",
            t->t_last > t->t_first ? t->t_last - t->t_first : 0, t->records,
            t->complete ? "true" : "false");
    if (t->cut)
        fprintf(out, ", \"cut_offset\": %" PRIu64, t->cut_offset);
    else
        fprintf(out, ", \"cut_offset\": null");
    fprintf(out, ", \"records_dropped\": %" PRIu64, t->records_dropped);
}


/* The named parts of untracked memory (docs/untracked.md): a part the trace did not
 * measure is null. */
static void json_untracked_parts(FILE *out, const struct gmt_analysis *a, size_t d)
{
    const struct gmt_untracked u = a->untracked[d];
    if (!u.known) {
        fprintf(out, ", \"untracked_parts\": null");
        return;
    }
    fprintf(out, ", \"untracked_parts\": {");
    if (u.has_context)
        fprintf(out, "\"context_bytes\": %" PRId64, u.context);
    else
        fprintf(out, "\"context_bytes\": null");
    if (u.has_modules)
        fprintf(out, ", \"modules_loaded_bytes\": %" PRId64 ", \"modules_loaded\": %" PRIu32, u.modules,
                u.n_modules);
    else
        fprintf(out, ", \"modules_loaded_bytes\": null, \"modules_loaded\": null");
    fprintf(out, ", \"loaded_in_nccl_calls_bytes\": %" PRId64, u.in_calls);
    if (u.lim.known)
        fprintf(out, ", \"stack_bytes_per_thread\": %" PRIu64 ", \"threads\": %" PRIu64
                     ", \"local_reservation_bytes\": %" PRIu64 ", \"printf_fifo_limit_bytes\": %" PRIu64
                     ", \"malloc_heap_limit_bytes\": %" PRIu64,
                u.lim.stack, u.lim.threads, u.lim.reservation, u.lim.fifo, u.lim.heap);
    else
        fprintf(out, ", \"stack_bytes_per_thread\": null, \"threads\": null, \"local_reservation_bytes\": null"
                     ", \"printf_fifo_limit_bytes\": null, \"malloc_heap_limit_bytes\": null");
    if (u.has_other)
    {
        fprintf(out, ", \"other_processes_bytes\": %" PRIu64 ", \"other_processes\": %" PRIu32, u.other,
                u.other_count);
        if (u.other_pid)
            fprintf(out, ", \"other_processes_largest_pid\": %" PRIu32, u.other_pid);
        else
            fputs(", \"other_processes_largest_pid\": null", out);
    }
    else
        fprintf(out, ", \"other_processes_bytes\": null, \"other_processes\": null");
    fprintf(out, ", \"unexplained_bytes\": %" PRId64 "}", u.unexplained);
}

static void json_devices(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_trace *t = &a->t;
    const struct gmt_report *rep = &a->rep;
    fprintf(out, ", \"devices\": [");
    int first = 1;
    for (size_t d = 0; d < rep->n_dev; d++) {
        const struct gmt_dev_report *r = &rep->dev[d];
        if (!gmt_report_dev_selected(o, r->device) || !gmt_dev_shown(r))
            continue;
        fprintf(out, "%s{\"device\": %d, \"peak_bytes\": %" PRIu64 ", \"peak_time_ns\": %" PRIu64
                     ", \"peak_scope\": %u, \"peak_by_category\": ",
                first ? "" : ", ", r->device, r->peak,
                r->peak_time ? r->peak_time - t->t_first : 0, r->peak_scope);
        jcats(out, a, r->peak_by_cat);
        fprintf(out, ", \"end_bytes\": %" PRIu64 ", \"end_by_category\": ", r->end);
        jcats(out, a, r->end_by_cat);
        fprintf(out, ", \"host_pinned_peak_bytes\": %" PRIu64 ", \"virtual_peak_bytes\": %" PRIu64,
                r->host_peak, r->virtual_peak);
        if (r->has_used)
            fprintf(out, ", \"device_used_max_bytes\": %" PRIu64 ", \"tracked_at_used_max_bytes\": %" PRIu64
                         ", \"untracked_bytes\": %" PRId64 ", \"device_total_bytes\": %" PRIu64,
                    r->used_max, r->tracked_at_used_max,
                    gmt_dev_untracked(r), r->total);
        else
            fprintf(out, ", \"device_used_max_bytes\": null, \"untracked_bytes\": null");
        json_untracked_parts(out, a, d);
        if (r->has_proc)
            fprintf(out, ", \"process_used_max_bytes\": %" PRIu64 ", \"process_used_end_bytes\": %" PRIu64,
                    r->proc_max, r->proc_last);
        else
            fprintf(out, ", \"process_used_max_bytes\": null");
        if (r->has_graph)
            fprintf(out, ", \"graph_reserved_peak_bytes\": %" PRIu64 ", \"graph_reserved_end_bytes\": %" PRIu64
                         ", \"graph_used_high_bytes\": %" PRIu64 ", \"graph_at_used_max_bytes\": %" PRIu64,
                    r->graph_peak, r->graph_end, r->graph_used_high, r->graph_at_used_max);
        else
            fprintf(out, ", \"graph_reserved_peak_bytes\": null");
        fprintf(out, ", \"peer_mapped_peak_bytes\": %" PRIu64 ", \"peer_mapped_end_bytes\": %" PRIu64,
                r->peer_peak, r->peer_end);
        fprintf(out, ", \"allocs\": %" PRIu64 ", \"frees\": %" PRIu64 ", \"failures\": %" PRIu64 "}",
                r->allocs, r->frees, r->failures);
        first = 0;
    }
    fprintf(out, "], \"host_pinned_without_device_peak_bytes\": %" PRIu64, a->host_only_peak);
}

static void json_colls(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_report *rep = &a->rep;
    fprintf(out, ", \"collectives\": [");
    int first = 1;
    for (size_t i = 0; i < rep->n_colls; i++) {
        const struct gmt_coll_row *c = &rep->colls[i];
        if (!gmt_report_coll_selected(o, c) || !gmt_report_dev_selected(o, c->device))
            continue;
        fprintf(out, "%s{\"op\": ", first ? "" : ", ");
        gmt_fput_json_string(out, c->label);
        fprintf(out, ", \"comm_rank\": %d, \"comm_size\": %d, \"device\": %d, \"bytes_per_call\": %" PRIu64
                     ", \"calls\": %" PRIu64 ", \"failed_calls\": %" PRIu64
                     ", \"first_tracked_bytes\": %" PRId64 ", \"first_device_bytes\": ",
                c->rank, c->nranks, c->device, c->bytes_per_call, c->calls, c->failed,
                c->first_tracked);
        if (c->first_has_dev)
            fprintf(out, "%" PRId64, c->first_dev);
        else
            fprintf(out, "null");
        fprintf(out, ", \"later_tracked_max_bytes\": %" PRId64 ", \"later_tracked_total_bytes\": %" PRId64
                     ", \"later_device_max_bytes\": ",
                c->later_tracked_max, c->later_tracked_total);
        if (c->later_has_dev)
            fprintf(out, "%" PRId64, c->later_dev_max);
        else
            fprintf(out, "null");
        fprintf(out, ", \"allocs\": %" PRIu64 ", \"alloc_bytes\": %" PRIu64
                     ", \"allocs_other_thread\": %" PRIu64 ", \"host_ns_first\": %" PRIu64
                     ", \"host_ns_total\": %" PRIu64 ", \"host_calls\": %" PRIu64
                     ", \"first_call_stack\": ",
                c->allocs, c->alloc_bytes, c->allocs_other_thread, c->host_ns_first, c->host_ns_total,
                c->host_calls);
        char line[8192];
        gmt_fput_json_string(out, c->first_stack ? gmt_stack_full(a, c->first_stack, 64, line, sizeof line) : "");
        const struct gmt_nccl_pick *pk = &c->pick;
        if (pk->total)
            fprintf(out, ", \"nccl_choice\": {\"algo\": \"%s\", \"proto\": \"%s\", \"nchannels\": %u"
                         ", \"nwarps\": %u, \"records\": %" PRIu64 ", \"records_total\": %" PRIu64
                         ", \"choices\": %u}",
                    gmt_nccl_algo_name(pk->algo), gmt_nccl_proto_name(pk->proto), pk->nchannels,
                    pk->nwarps, pk->calls, pk->total, pk->choices);
        fprintf(out, "}");
        first = 0;
    }
}

/* A stack as "frames" (every frame, innermost first) and "site" (the index of the first
 * frame outside allocator and runtime internals), after the "stack" string. */
static void json_frames(FILE *out, const struct gmt_analysis *a, uint32_t stack)
{
    /* 256 native frames at most, and up to 128 Python frames among them */
    static char buf[131072];
    static const char *frames[512];
    size_t site;
    size_t n = gmt_stack_frames(a, stack, buf, sizeof buf, frames, 512, &site);
    fprintf(out, ", \"frames\": [");
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputs(", ", out);
        gmt_fput_json_string(out, frames[i]);
    }
    fprintf(out, "], \"site\": %zu", site);
}

/* The sites, grouped as the text groups them (at --frames, default 3): each with its
 * line and the stacks in it; "stack" and "frames" are its largest stack's. */
static void json_sites(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    fprintf(out, "], \"sites\": [");
    const struct gmt_site_groups *G = &a->sites.all;
    if (G->rc)
        return; /* out of memory: no sites rather than a broken document */
    for (size_t i = 0; i < G->n && (long)i < o->top; i++) {
        const struct gmt_site_row *s = &G->g[i].sum;
        char line[8192];
        fprintf(out, "%s{\"category\": ", i ? ", " : "");
        gmt_fput_json_string(out, a->cat_names[s->cat]);
        fprintf(out, ", \"live_at_peak_bytes\": %" PRIu64 ", \"live_at_end_bytes\": %" PRIu64
                     ", \"live_at_end_count\": %" PRIu64 ", \"allocs\": %" PRIu64
                     ", \"bytes_total\": %" PRIu64 ", \"stack\": ",
                s->live_at_peak, s->live_at_end, s->count_at_end, s->allocs, s->bytes_total);
        gmt_fput_json_string(out, gmt_stack_full(a, s->stack, 64, line, sizeof line));
        json_frames(out, a, s->stack);
        const char *who = G->g[i].holder;
        fprintf(out, ", \"held_by\": ");
        if (who)
            gmt_fput_json_string(out, who);
        else
            fprintf(out, "null");
        fprintf(out, ", \"line\": ");
        gmt_fput_json_string(out, G->g[i].line);
        fprintf(out, ", \"stack_ids\": [");
        for (size_t k = 0; k < G->g[i].n_stacks; k++)
            fprintf(out, "%s%" PRIu32, k ? ", " : "", G->g[i].stacks[k]);
        fprintf(out, "]}");
    }
}

/* What caches and communicators hold at the end, by holder (not leaks). */
static void json_held(FILE *out, const struct gmt_analysis *a)
{
    const struct gmt_held *h = a->held;
    size_t n = a->n_held;
    fprintf(out, "], \"held_at_end\": [");
    for (size_t k = 0; k < n; k++) {
        fprintf(out, "%s{\"holder\": ", k ? ", " : "");
        gmt_fput_json_string(out, h[k].holder);
        fprintf(out, ", \"bytes\": %" PRIu64 ", \"allocations\": %" PRIu64 "}", h[k].bytes, h[k].count);
    }
}

static void json_fails(FILE *out, const struct gmt_analysis *a)
{
    const struct gmt_trace *t = &a->t;
    const struct gmt_report *rep = &a->rep;
    fprintf(out, "], \"failures\": [");
    for (size_t i = 0; i < rep->n_fails; i++) {
        const struct gmt_fail_row *f = &rep->fails[i];
        char line[8192];
        fprintf(out, "%s{\"time_ns\": %" PRIu64 ", \"api\": ", i ? ", " : "", f->time - t->t_first);
        gmt_fput_json_string(out, gmt_api_name(f->api));
        fprintf(out, ", \"bytes\": %" PRIu64 ", \"device\": %d, \"error\": %d, \"tracked_bytes\": %" PRIu64
                     ", \"scope\": %u, \"live_by_category\": ",
                f->bytes, f->device, f->error, f->tracked, f->scope);
        jcats(out, a, f->by_cat);
        fprintf(out, ", \"error_name\": ");
        const char *en = gmt_error_name(f->api, f->error);
        if (en)
            gmt_fput_json_string(out, en);
        else
            fprintf(out, "null");
        if (f->has_dev)
            fprintf(out, ", \"device_free_bytes\": %" PRIu64 ", \"device_total_bytes\": %" PRIu64
                         ", \"device_sampled\": \"%s\"",
                    f->dev_free, f->dev_total, f->dev_at_fail ? "after_failure" : "before");
        else
            fprintf(out, ", \"device_free_bytes\": null");
        fprintf(out, ", \"stack\": ");
        gmt_fput_json_string(out, gmt_stack_full(a, f->stack, 64, line, sizeof line));
        json_frames(out, a, f->stack);
        fprintf(out, "}");
    }
}

/* The NCCL calls the trace ends inside (hang forensics). */
static void json_open(FILE *out, const struct gmt_analysis *a)
{
    const struct gmt_trace *t = &a->t;
    const struct gmt_report *rep = &a->rep;
    fprintf(out, "], \"open_at_end\": [");
    for (size_t i = 0; i < rep->n_open; i++) {
        const struct gmt_open_row *r = &rep->open[i];
        char line[8192];
        fprintf(out, "%s{\"scope\": %u, \"op\": ", i ? ", " : "", r->scope);
        gmt_fput_json_string(out, r->label);
        const struct gmt_comm *c = gmt_trace_comm(t, r->comm);
        fprintf(out, ", \"comm_rank\": %d, \"comm_size\": %d, \"device\": %d, \"tid\": %u"
                     ", \"since_ns\": %" PRIu64 ", \"open_for_ns\": %" PRIu64
                     ", \"tracked_bytes\": %" PRId64 ", \"stack\": ",
                c ? c->rank : -1, c ? c->nranks : -1, r->device, r->tid, r->since - t->t_first,
                t->t_last > r->since ? t->t_last - r->since : 0, r->tracked);
        gmt_fput_json_string(out, gmt_stack_full(a, r->stack, 64, line, sizeof line));
        json_frames(out, a, r->stack);
        fprintf(out, "}");
    }
}

/* Device memory by NVTX phase (phases.c; docs/summary-json.md "phases"). */
static void json_phases(FILE *out, const struct gmt_analysis *a)
{
    const struct gmt_phases *p = &a->phases;
    fprintf(out, "], \"phases\": {\"ranges\": %" PRIu64 ", \"rows\": [", p->ranges);
    for (size_t i = 0; i < p->n_rows; i++) {
        const struct gmt_phase_row *r = &p->rows[i];
        fprintf(out, "%s{\"name\": ", i ? ", " : "");
        gmt_fput_json_string(out, r->name);
        fprintf(out, ", \"step\": %s, \"count\": %" PRIu64 ", \"open_at_end\": %" PRIu64
                     ", \"peak_bytes\": %" PRIu64 ", \"growth_bytes\": %" PRId64
                     ", \"growth_max_bytes\": %" PRId64 ", \"time_ns\": %" PRIu64
                     ", \"allocs\": %" PRIu64 ", \"alloc_bytes\": %" PRIu64 "}",
                r->step ? "true" : "false", r->count, r->open_at_end, r->peak, r->growth,
                r->growth_max, r->time_ns, r->allocs, r->alloc_bytes);
    }
    fprintf(out, "], \"stacks\": [");
    for (size_t i = 0; i < p->n_stacks; i++) {
        fprintf(out, "%s{\"ranges\": ", i ? ", " : "");
        gmt_fput_json_string(out, p->stacks[i].path);
        fprintf(out, ", \"allocs\": %" PRIu64 ", \"bytes\": %" PRIu64 "}", p->stacks[i].allocs,
                p->stacks[i].bytes);
    }
    fprintf(out, "], \"allocs_outside_ranges\": %" PRIu64 ", \"steps\": {\"regex\": ",
            p->unnamed_allocs);
    gmt_fput_json_string(out, p->step_regex ? p->step_regex : "");
    fprintf(out, ", \"count\": %" PRIu64 ", \"first_growth_bytes\": %" PRId64
                 ", \"later_growth_bytes\": %" PRId64 ", \"grows_every_step\": %s",
            p->steps, p->steps ? p->first_step_growth : 0, p->later_growth,
            p->grows_every_step ? "true" : "false");
    if (p->grows_every_step) {
        char line[8192];
        fprintf(out, ", \"growth_per_step_bytes\": %" PRId64 ", \"growth_steps\": %" PRIu64
                     ", \"site_bytes\": %" PRIu64 ", \"site\": ",
                p->growth_per_step, p->steps - 1, p->grow_stack_bytes);
        gmt_fput_json_string(out, p->grow_stack_bytes ? gmt_stack_full(a, p->grow_stack, 64, line, sizeof line) : "");
    }
    fprintf(out, "}}");
}

static void json_begin(FILE *out, const struct gmt_job *j, const struct gmt_report_opts *o)
{
    (void)o;
    fprintf(out, "{\"schema\": \"gpumemtrace.summary/1\", ");
    gmt_render_job_json(out, j);
    fprintf(out, "\"traces\": [");
}

static void json_trace(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o,
                       size_t i)
{
    if (i > 0)
        fprintf(out, ",");
    json_process(out, &a->t);
    gmt_names_json(out, a);
    json_devices(out, a, o);
    json_colls(out, a, o);
    json_sites(out, a, o);
    json_held(out, a);
    json_fails(out, a);
    json_open(out, a);
    json_phases(out, a);
    fprintf(out, ", \"unmatched_frees\": %" PRIu64 ", \"nccl_memory\": ", a->rep.unmatched_frees);
    gmt_render_explain_brief_json(out, a);
    gmt_blocks_json(out, a);
    fprintf(out, "}");
}

static void json_end(FILE *out)
{
    fprintf(out, "]}\n");
}

const struct gmt_renderer gmt_render_json = {.begin = json_begin, .trace = json_trace, .end = json_end};
