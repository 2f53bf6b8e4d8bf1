/* render_csv.c: the summary as CSV tables, one header line each, every row naming its trace's file. */
#include "idnames.h"
#include "render.h"

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>

#include "blocks.h"
#include "holders.h"
#include "job.h"
#include "nccl_model.h"
#include "reader.h"
#include "sites.h"
#include "stacks.h"
#include "util.h"

const char *const gmt_csv_names[GMT_CSV_COUNT] = {
#define GMT_X(name, what) #name,
    GMT_CSV_TABLES(GMT_X)
#undef GMT_X
};

int gmt_csv_find(const char *name)
{
    for (int t = 0; t < GMT_CSV_COUNT; t++)
        if (!strcmp(name, gmt_csv_names[t]))
            return t;
    return -1;
}

/* ---- one row: cells written as they come, ',' between them ---- */

struct row {
    FILE *f;
    bool any;
};

static void sep(struct row *r)
{
    if (r->any)
        fputc(',', r->f);
    r->any = true;
}

/* As `export --format csv` writes its cells (util.h: quoting, formulas made inert). */
static void cell_s(struct row *r, const char *s)
{
    sep(r);
    gmt_fput_csv_cell(r->f, s);
}

static void cell_u(struct row *r, uint64_t v)
{
    sep(r);
    fprintf(r->f, "%" PRIu64, v);
}

static void cell_i(struct row *r, int64_t v)
{
    sep(r);
    fprintf(r->f, "%" PRId64, v);
}

static void cell_null(struct row *r)
{
    sep(r);
}

/* A figure the trace may not have: empty (NULL) when it has not. */
static void cell_u_if(struct row *r, bool has, uint64_t v)
{
    if (has)
        cell_u(r, v);
    else
        cell_null(r);
}

static void cell_i_if(struct row *r, bool has, int64_t v)
{
    if (has)
        cell_i(r, v);
    else
        cell_null(r);
}

/* A row of a trace's table: its first cell, the trace's file. */
static struct row trace_row(FILE *f, const struct gmt_analysis *a)
{
    struct row r = {f, false};
    cell_s(&r, a->t.path);
    return r;
}

static void row_end(struct row *r)
{
    fputc('\n', r->f);
}

/* A stack's site: the first frame that is no allocator's or runtime's own ("" none). */
static const char *site_frame(const struct gmt_analysis *a, uint32_t stack)
{
    static char buf[131072];
    static const char *frames[512];
    size_t site;
    size_t n = gmt_stack_frames(a, stack, buf, sizeof buf, frames, 512, &site);
    return site < n ? frames[site] : "";
}

static const char *stack_text(const struct gmt_analysis *a, uint32_t stack)
{
    static char line[8192];
    return stack ? gmt_stack_full(a, stack, 64, line, sizeof line) : "";
}

/* ---- the tables' rows ---- */

static void rows_traces(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_trace *t = &a->t;
    struct row r = trace_row(f, a);
    cell_u(&r, t->proc.pid);
    cell_u(&r, t->proc.ppid);
    cell_s(&r, t->host ? t->host : "");
    cell_i(&r, t->has_proc ? t->proc.rank : -1);
    cell_i(&r, t->has_proc ? t->proc.world_size : -1);
    cell_i(&r, t->has_proc ? t->proc.local_rank : -1);
    cell_s(&r, t->cmdline ? t->cmdline : "");
    cell_i(&r, t->version[GMT_COMP_DRIVER]);
    cell_i(&r, t->version[GMT_COMP_RUNTIME]);
    cell_i(&r, t->version[GMT_COMP_NCCL]);
    cell_u(&r, t->t_last > t->t_first ? t->t_last - t->t_first : 0);
    cell_u(&r, t->records);
    cell_u(&r, t->complete);
    cell_u_if(&r, t->cut, t->cut_offset);
    cell_u(&r, t->records_dropped);
    cell_u(&r, a->rep.unmatched_frees);
    cell_u(&r, a->host_only_peak);
    row_end(&r);
}

static void rows_devices(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    for (size_t d = 0; d < a->rep.n_dev; d++) {
        const struct gmt_dev_report *v = &a->rep.dev[d];
        if (!gmt_report_dev_selected(o, v->device) || !gmt_dev_shown(v))
            continue;
        struct row r = trace_row(f, a);
        cell_i(&r, v->device);
        cell_u(&r, v->peak);
        cell_u(&r, v->peak_time ? v->peak_time - a->t.t_first : 0);
        cell_u(&r, v->peak_scope);
        cell_u(&r, v->end);
        cell_u(&r, v->host_peak);
        cell_u(&r, v->virtual_peak);
        cell_u_if(&r, v->has_used, v->used_max);
        cell_u_if(&r, v->has_used, v->tracked_at_used_max);
        cell_i_if(&r, v->has_used, gmt_dev_untracked(v));
        cell_u_if(&r, v->has_used, v->total);
        cell_u_if(&r, v->has_proc, v->proc_max);
        cell_u_if(&r, v->has_proc, v->proc_last);
        cell_u_if(&r, v->has_graph, v->graph_peak);
        cell_u_if(&r, v->has_graph, v->graph_end);
        cell_u_if(&r, v->has_graph, v->graph_used_high);
        cell_u_if(&r, v->has_graph, v->graph_at_used_max);
        cell_u(&r, v->peer_peak);
        cell_u(&r, v->peer_end);
        cell_u(&r, v->allocs);
        cell_u(&r, v->frees);
        cell_u(&r, v->failures);
        row_end(&r);
    }
}

static void rows_categories(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    for (size_t d = 0; d < a->rep.n_dev; d++) {
        const struct gmt_dev_report *v = &a->rep.dev[d];
        if (!gmt_report_dev_selected(o, v->device) || !gmt_dev_shown(v))
            continue;
        for (size_t c = 0; c < a->n_cats; c++) {
            if (!v->peak_by_cat[c] && !v->end_by_cat[c])
                continue;
            struct row r = trace_row(f, a);
            cell_i(&r, v->device);
            cell_s(&r, a->cat_names[c]);
            cell_u(&r, v->peak_by_cat[c]);
            cell_u(&r, v->end_by_cat[c]);
            row_end(&r);
        }
    }
}

static void rows_collectives(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    for (size_t i = 0; i < a->rep.n_colls; i++) {
        const struct gmt_coll_row *c = &a->rep.colls[i];
        if (!gmt_report_coll_selected(o, c) || !gmt_report_dev_selected(o, c->device))
            continue;
        struct row r = trace_row(f, a);
        cell_s(&r, c->label);
        cell_i(&r, c->rank);
        cell_i(&r, c->nranks);
        cell_i(&r, c->device);
        cell_u(&r, c->bytes_per_call);
        cell_u(&r, c->calls);
        cell_u(&r, c->failed);
        cell_i(&r, c->first_tracked);
        cell_i_if(&r, c->first_has_dev, c->first_dev);
        cell_i(&r, c->later_tracked_max);
        cell_i(&r, c->later_tracked_total);
        cell_i_if(&r, c->later_has_dev, c->later_dev_max);
        cell_u(&r, c->allocs);
        cell_u(&r, c->alloc_bytes);
        cell_u(&r, c->allocs_other_thread);
        cell_u(&r, c->host_ns_first);
        cell_u(&r, c->host_ns_total);
        cell_u(&r, c->host_calls);
        const struct gmt_nccl_pick *pk = &c->pick;
        bool picked = pk->total != 0;
        cell_s(&r, picked ? gmt_nccl_algo_name(pk->algo) : NULL);
        cell_s(&r, picked ? gmt_nccl_proto_name(pk->proto) : NULL);
        cell_u_if(&r, picked, picked ? pk->nchannels : 0);
        cell_s(&r, stack_text(a, c->first_stack));
        row_end(&r);
    }
}

static void rows_nccl_memory(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_nccl_model *m = &a->nccl;
    if (a->nccl_rc)
        return;
    for (size_t i = 0; i < m->n_c; i++) {
        const struct gmt_nccl_comm *c = &m->c[i];
        for (int p = 0; p < GMT_NCCL_NPURPOSES; p++) {
            if (!c->by_purpose[p])
                continue;
            struct row r = trace_row(f, a);
            cell_i(&r, c->index);
            cell_i(&r, c->rank);
            cell_i(&r, c->nranks);
            cell_s(&r, gmt_nccl_purpose_key(p));
            cell_u(&r, c->by_purpose[p]);
            cell_i(&r, c->coll_channels);
            row_end(&r);
        }
    }
}

static void rows_phases(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_phases *p = &a->phases;
    for (size_t i = 0; i < p->n_rows; i++) {
        const struct gmt_phase_row *v = &p->rows[i];
        struct row r = trace_row(f, a);
        cell_s(&r, v->name);
        cell_u(&r, v->step);
        cell_u(&r, v->count);
        cell_u(&r, v->open_at_end);
        cell_u(&r, v->peak);
        cell_i(&r, v->growth);
        cell_i(&r, v->growth_max);
        cell_u(&r, v->time_ns);
        cell_u(&r, v->allocs);
        cell_u(&r, v->alloc_bytes);
        row_end(&r);
    }
}

static void rows_phase_stacks(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_phases *p = &a->phases;
    for (size_t i = 0; i < p->n_stacks; i++) {
        struct row r = trace_row(f, a);
        cell_s(&r, p->stacks[i].path);
        cell_u(&r, p->stacks[i].allocs);
        cell_u(&r, p->stacks[i].bytes);
        row_end(&r);
    }
}

static void rows_steps(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_phases *p = &a->phases;
    struct row r = trace_row(f, a);
    cell_s(&r, p->step_regex ? p->step_regex : "");
    cell_u(&r, p->steps);
    cell_i(&r, p->steps ? p->first_step_growth : 0);
    cell_i(&r, p->later_growth);
    bool grows = p->grows_every_step;
    cell_u(&r, grows);
    cell_i_if(&r, grows, grows ? p->growth_per_step : 0);
    cell_u_if(&r, grows, p->steps - 1);
    cell_u_if(&r, grows, p->grow_stack_bytes);
    cell_s(&r, !grows ? NULL : p->grow_stack_bytes ? stack_text(a, p->grow_stack) : "");
    row_end(&r);
}

/* A site's stacks as one cell: their ids, space-separated. */
static const char *stack_ids(const struct gmt_site_group *g, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (size_t k = 0; k < g->n_stacks && at < len; k++)
        at += (size_t)snprintf(buf + at, len - at, "%s%" PRIu32, k ? " " : "", g->stacks[k]);
    return buf;
}

/* The sites as summary --json lists them (grouped by their lines: sites.h), or the leaks
 * as the text shows them. */
static void rows_site_groups(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o,
                             bool leaks)
{
    const struct gmt_site_groups *G = leaks ? &a->sites.leaks : &a->sites.all;
    if (G->rc)
        return;
    for (size_t i = 0; i < G->n && (long)i < o->top; i++) {
        const struct gmt_site_row *s = &G->g[i].sum;
        struct row r = trace_row(f, a);
        cell_s(&r, a->cat_names[s->cat]);
        if (!leaks)
            cell_u(&r, s->live_at_peak);
        cell_u(&r, s->live_at_end);
        cell_u(&r, s->count_at_end);
        if (!leaks) {
            cell_u(&r, s->allocs);
            cell_u(&r, s->bytes_total);
            cell_s(&r, G->g[i].holder);
        }
        cell_s(&r, site_frame(a, s->stack));
        cell_s(&r, stack_text(a, s->stack));
        char ids[4096];
        cell_s(&r, G->g[i].line);
        cell_s(&r, stack_ids(&G->g[i], ids, sizeof ids));
        row_end(&r);
    }
}

static void rows_sites(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    rows_site_groups(f, a, o, false);
}

static void rows_leaks(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    rows_site_groups(f, a, o, true);
}

static void rows_held(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_held *h = a->held;
    size_t n = a->n_held;
    for (size_t k = 0; k < n; k++) {
        struct row r = trace_row(f, a);
        cell_s(&r, h[k].holder);
        cell_u(&r, h[k].bytes);
        cell_u(&r, h[k].count);
        row_end(&r);
    }
}

static void rows_failures(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    for (size_t i = 0; i < a->rep.n_fails; i++) {
        const struct gmt_fail_row *v = &a->rep.fails[i];
        struct row r = trace_row(f, a);
        cell_u(&r, v->time - a->t.t_first);
        cell_s(&r, gmt_api_name(v->api));
        cell_u(&r, v->bytes);
        cell_i(&r, v->device);
        cell_i(&r, v->error);
        cell_s(&r, gmt_error_name(v->api, v->error));
        cell_u(&r, v->tracked);
        cell_u(&r, v->scope);
        cell_u_if(&r, v->has_dev, v->dev_free);
        cell_u_if(&r, v->has_dev, v->dev_total);
        cell_s(&r, !v->has_dev ? NULL : v->dev_at_fail ? "after_failure" : "before");
        cell_s(&r, site_frame(a, v->stack));
        cell_s(&r, stack_text(a, v->stack));
        row_end(&r);
    }
}

static void rows_open_at_end(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_trace *t = &a->t;
    for (size_t i = 0; i < a->rep.n_open; i++) {
        const struct gmt_open_row *v = &a->rep.open[i];
        const struct gmt_comm *c = gmt_trace_comm(t, v->comm);
        struct row r = trace_row(f, a);
        cell_u(&r, v->scope);
        cell_s(&r, v->label);
        cell_i(&r, c ? c->rank : -1);
        cell_i(&r, c ? c->nranks : -1);
        cell_i(&r, v->device);
        cell_u(&r, v->tid);
        cell_u(&r, v->since - t->t_first);
        cell_u(&r, t->t_last > v->since ? t->t_last - v->since : 0);
        cell_i(&r, v->tracked);
        cell_s(&r, stack_text(a, v->stack));
        row_end(&r);
    }
}

/* ---- PyTorch's blocks (blocks.h): the rows of summary --json's "pytorch" ---- */

static void rows_pytorch_devices(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_blocks *B = &a->blocks;
    for (size_t i = 0; i < B->n_dev; i++) {
        const struct gmt_block_dev *d = &B->dev[i];
        struct row r = trace_row(f, a);
        cell_s(&r, gmt_block_mode_key(B->mode));
        cell_i(&r, d->device);
        cell_u(&r, d->allocs);
        cell_u(&r, d->frees);
        cell_u(&r, d->ooms);
        cell_u(&r, d->allocated_peak);
        cell_u(&r, d->allocated_peak_time > a->t.t_first ? d->allocated_peak_time - a->t.t_first : 0);
        cell_u(&r, d->reserved_at_peak);
        cell_u(&r, d->reserved_peak);
        cell_u(&r, d->allocated_end);
        cell_u(&r, d->reserved_end);
        row_end(&r);
    }
}

static void rows_block_sites(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o,
                             bool leaks)
{
    const struct gmt_site_groups *G = leaks ? &a->sites.block_leaks : &a->sites.blocks;
    if (a->blocks.mode == GMT_BLOCKS_NONE || G->rc)
        return;
    long top = o->top > 0 ? o->top : 10; /* as the JSON's */
    for (size_t i = 0; i < G->n && (long)i < top; i++) {
        const struct gmt_site_row *s = &G->g[i].sum;
        struct row r = trace_row(f, a);
        if (leaks) {
            cell_u(&r, s->live_at_end);
            cell_u(&r, s->count_at_end);
        } else {
            cell_u(&r, s->live_at_peak);
            cell_u(&r, s->live_at_end);
            cell_u(&r, s->count_at_end);
            cell_u(&r, s->allocs);
            cell_u(&r, s->bytes_total);
        }
        cell_s(&r, stack_text(a, s->stack));
        char ids[4096];
        cell_s(&r, G->g[i].line);
        cell_s(&r, stack_ids(&G->g[i], ids, sizeof ids));
        row_end(&r);
    }
}

static void rows_pytorch_sites(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    rows_block_sites(f, a, o, false);
}

static void rows_pytorch_leaks(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    rows_block_sites(f, a, o, true);
}

static void rows_pytorch_ooms(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_blocks *B = &a->blocks;
    for (size_t i = 0; i < B->n_ooms; i++) {
        const struct gmt_block_oom *v = &B->ooms[i];
        struct row r = trace_row(f, a);
        cell_u(&r, v->time > a->t.t_first ? v->time - a->t.t_first : 0);
        cell_i(&r, v->device);
        cell_u(&r, v->tid);
        cell_u(&r, v->request);
        cell_u(&r, v->allocated);
        cell_u(&r, v->reserved);
        cell_u(&r, v->largest_free);
        cell_u(&r, v->free_unusable);
        cell_u(&r, v->segments);
        cell_s(&r, stack_text(a, v->stack));
        row_end(&r);
    }
}

/* ---- the job's tables: rows from the overview, none for one trace ---- */

static void job_ranks(FILE *f, const struct gmt_job *j)
{
    for (size_t i = 0; i < j->n; i++) {
        const struct gmt_job_rank *v = &j->r[i];
        char ranks[512];
        size_t cnt, rep;
        gmt_job_group_ranks(j, v->group, ranks, sizeof ranks, &cnt, &rep);
        struct row r = {f, false};
        cell_s(&r, v->path);
        cell_i(&r, v->rank);
        cell_i(&r, v->world_size);
        cell_s(&r, v->host ? v->host : "");
        cell_s(&r, v->job_id);
        cell_u(&r, v->peak);
        cell_u(&r, v->nccl);
        cell_u_if(&r, v->has_used, v->untracked);
        cell_u(&r, v->complete);
        cell_u(&r, v->fails);
        cell_u(&r, v->n_dev);
        cell_u(&r, j->groups[v->group].place);
        cell_s(&r, ranks);
        cell_u(&r, rep == i);
        cell_u(&r, v->stands_out);
        cell_s(&r, v->diff);
        row_end(&r);
    }
}

static void job_collectives(FILE *f, const struct gmt_job *j)
{
    for (size_t k = 0; k < j->n_colls; k++) {
        const struct gmt_job_coll_spread *c = &j->colls[k];
        struct row r = {f, false};
        cell_s(&r, c->c.label);
        cell_i(&r, c->c.nranks);
        cell_u(&r, c->c.bytes);
        cell_i(&r, c->ranks);
        cell_i(&r, c->c.first);
        cell_i_if(&r, c->out_rank >= 0, c->out_rank);
        cell_i_if(&r, c->out_rank >= 0, c->out_first);
        row_end(&r);
    }
}

/* ---- the tables ---- */

struct table {
    const char *header;
    void (*rows)(FILE *f, const struct gmt_analysis *a, const struct gmt_report_opts *o);
    void (*job)(FILE *f, const struct gmt_job *j);
};

/* The column names are those of summary --json's fields where it has them. */
static const struct table tables[GMT_CSV_COUNT] = {
    [GMT_CSV_traces] = {"file,pid,ppid,host,rank,world_size,local_rank,command,driver_version,"
                        "runtime_version,nccl_version,span_ns,records,complete,cut_offset,"
                        "records_dropped,unmatched_frees,host_pinned_without_device_peak_bytes",
                        rows_traces, NULL},
    [GMT_CSV_devices] = {"file,device,peak_bytes,peak_time_ns,peak_scope,end_bytes,"
                         "host_pinned_peak_bytes,virtual_peak_bytes,device_used_max_bytes,"
                         "tracked_at_used_max_bytes,untracked_bytes,device_total_bytes,"
                         "process_used_max_bytes,process_used_end_bytes,graph_reserved_peak_bytes,"
                         "graph_reserved_end_bytes,graph_used_high_bytes,graph_at_used_max_bytes,"
                         "peer_mapped_peak_bytes,peer_mapped_end_bytes,allocs,frees,failures",
                         rows_devices, NULL},
    [GMT_CSV_categories] = {"file,device,category,peak_bytes,end_bytes", rows_categories, NULL},
    [GMT_CSV_collectives] = {"file,op,comm_rank,comm_size,device,bytes_per_call,calls,failed_calls,"
                             "first_tracked_bytes,first_device_bytes,later_tracked_max_bytes,"
                             "later_tracked_total_bytes,later_device_max_bytes,allocs,alloc_bytes,"
                             "allocs_other_thread,host_ns_first,host_ns_total,host_calls,algo,proto,"
                             "nchannels,first_call_stack",
                             rows_collectives, NULL},
    [GMT_CSV_nccl_memory] = {"file,comm,comm_rank,comm_size,purpose,bytes,channels",
                             rows_nccl_memory, NULL},
    [GMT_CSV_phases] = {"file,name,step,count,open_at_end,peak_bytes,growth_bytes,growth_max_bytes,"
                        "time_ns,allocs,alloc_bytes",
                        rows_phases, NULL},
    [GMT_CSV_phase_stacks] = {"file,ranges,allocs,bytes", rows_phase_stacks, NULL},
    [GMT_CSV_steps] = {"file,regex,count,first_growth_bytes,later_growth_bytes,grows_every_step,"
                       "growth_per_step_bytes,growth_steps,site_bytes,site",
                       rows_steps, NULL},
    [GMT_CSV_sites] = {"file,category,live_at_peak_bytes,live_at_end_bytes,live_at_end_count,allocs,"
                       "bytes_total,held_by,frame,stack,line,stack_ids",
                       rows_sites, NULL},
    [GMT_CSV_leaks] = {"file,category,bytes,allocations,frame,stack,line,stack_ids", rows_leaks, NULL},
    [GMT_CSV_held] = {"file,holder,bytes,allocations", rows_held, NULL},
    [GMT_CSV_failures] = {"file,time_ns,api,bytes,device,error,error_name,tracked_bytes,scope,"
                          "device_free_bytes,device_total_bytes,device_sampled,frame,stack",
                          rows_failures, NULL},
    [GMT_CSV_open_at_end] = {"file,scope,op,comm_rank,comm_size,device,tid,since_ns,open_for_ns,"
                             "tracked_bytes,stack",
                             rows_open_at_end, NULL},
    [GMT_CSV_pytorch_devices] = {"file,mode,device,allocs,frees,ooms,allocated_peak_bytes,"
                                 "allocated_peak_ns,reserved_at_peak_bytes,reserved_peak_bytes,"
                                 "allocated_end_bytes,reserved_end_bytes",
                                 rows_pytorch_devices, NULL},
    [GMT_CSV_pytorch_sites] = {"file,live_at_peak_bytes,live_at_end_bytes,live_at_end_count,allocs,"
                               "bytes_total,stack,line,stack_ids",
                               rows_pytorch_sites, NULL},
    [GMT_CSV_pytorch_leaks] = {"file,bytes,blocks,stack,line,stack_ids", rows_pytorch_leaks, NULL},
    [GMT_CSV_pytorch_ooms] = {"file,time_ns,device,tid,request_bytes,allocated_bytes,reserved_bytes,"
                              "largest_free_bytes,free_unusable_bytes,segments,stack",
                              rows_pytorch_ooms, NULL},
    [GMT_CSV_job_ranks] = {"file,rank,world_size,host,job_id,peak_bytes,nccl_bytes,untracked_bytes,"
                           "complete,failures,devices,group,group_ranks,representative,stands_out,"
                           "differences",
                           NULL, job_ranks},
    [GMT_CSV_job_collectives] = {"op,comm_size,bytes_per_call,ranks,first_tracked_median_bytes,"
                                 "outlier_rank,outlier_first_tracked_bytes",
                                 NULL, job_collectives},
};

static void table_begin(enum gmt_csv_table t, FILE *out, const struct gmt_job *j)
{
    fprintf(out, "%s\n", tables[t].header);
    if (j && tables[t].job)
        tables[t].job(out, j);
}

static void table_trace(enum gmt_csv_table t, FILE *out, const struct gmt_analysis *a,
                        const struct gmt_report_opts *o)
{
    if (tables[t].rows)
        tables[t].rows(out, a, o);
}

/* Each table's renderer: its begin and trace, bound to the table. */
#define GMT_X(name, what)                                                                      \
    static void begin_##name(FILE *out, const struct gmt_job *j, const struct gmt_report_opts *o) \
    {                                                                                          \
        table_begin(GMT_CSV_##name, out, j);                                                   \
    }                                                                                          \
    static void trace_##name(FILE *out, const struct gmt_analysis *a,                          \
                             const struct gmt_report_opts *o, size_t i)                        \
    {                                                                                          \
        table_trace(GMT_CSV_##name, out, a, o);                                                \
    }
GMT_CSV_TABLES(GMT_X)
#undef GMT_X

const struct gmt_renderer gmt_render_csv[GMT_CSV_COUNT] = {
#define GMT_X(name, what) [GMT_CSV_##name] = {.begin = begin_##name, .trace = trace_##name},
    GMT_CSV_TABLES(GMT_X)
#undef GMT_X
};
