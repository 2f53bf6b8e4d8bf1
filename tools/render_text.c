/* render_text.c: the summary as text for a person: the process, peaks, NCCL calls, sites, leaks, failures. */
#include "idnames.h"
#include "render.h"
#include "render_job.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "render_explain.h"
#include "reader.h"
#include "sites.h"
#include "stacks.h"
#include "untracked.h"
#include "util.h"

static const char *op_label(const struct gmt_analysis *a, uint32_t scope_id, char *buf, size_t len)
{
    struct gmt_scope tmp;
    const struct gmt_scope *s = scope_id ? gmt_trace_scope_by_id(&a->t, scope_id, &tmp) : NULL;
    if (!s) {
        snprintf(buf, len, "-");
        return buf;
    }
    snprintf(buf, len, "%s #%u at %.3f s", gmt_op_name(s->op), s->id,
             (double)(s->t_begin - a->t.t_first) / 1e9);
    return buf;
}

static const char *version_text(int32_t v, bool nccl, char *buf, size_t len)
{
    if (v <= 0)
        snprintf(buf, len, "?");
    else if (nccl) /* 22809 = 2.28.9 */
        snprintf(buf, len, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    else /* 13000 = 13.0 */
        snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
    return buf;
}

static void text_header(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_trace *t = &a->t;
    const struct gmt_rec_process *p = &t->proc;
    char b1[32], b2[32], b3[32];
    fprintf(out, "gpumemtrace summary of %s\n\n", gmt_one_line(t->path));
    if (t->has_proc) {
        fprintf(out, "  process   pid %u (parent %u) on %s", p->pid, p->ppid, t->host ? gmt_one_line(t->host) : "?");
        if (p->rank >= 0)
            fprintf(out, ", rank %d of %d (local rank %d)", p->rank, p->world_size, p->local_rank);
        if (p->flags & GMT_PROC_FORKED)
            fprintf(out, ", forked");
        fprintf(out, "\n  command   ");
        gmt_fput_quoted(out, t->cmdline ? t->cmdline : "", t->cmdline ? strlen(t->cmdline) : 0);
        fprintf(out, "\n");
    }
    fprintf(out, "  devices   ");
    for (size_t d = 0; d < a->rep.n_dev; d++)
        fprintf(out, "%s%d", d ? ", " : "", a->rep.dev[d].device);
    fprintf(out, "%s\n", a->rep.n_dev ? "" : "none seen");
    fprintf(out, "  versions  CUDA driver %s, runtime %s, NCCL %s\n",
            version_text(t->version[GMT_COMP_DRIVER], false, b1, sizeof b1),
            version_text(t->version[GMT_COMP_RUNTIME], false, b2, sizeof b2),
            version_text(t->version[GMT_COMP_NCCL], true, b3, sizeof b3));
    gmt_names_text_line(out, a);
    char span[GMT_FMT_LEN];
    gmt_fmt_duration(span, sizeof span, t->t_last > t->t_first ? t->t_last - t->t_first : 0);
    fprintf(out, "  span      %s, %" PRIu64 " records, ", span, t->records);
    if (t->complete)
        fprintf(out, "complete");
    else if (t->cut)
        fprintf(out, "CUT at offset %" PRIu64 " (the process crashed or was killed)", t->cut_offset);
    else
        fprintf(out, "INCOMPLETE (no end record: the process crashed, was killed or exec'd)");
    if (t->records_dropped)
        fprintf(out, ", %" PRIu64 " records dropped", t->records_dropped);
    /* what is set, not every default: NCCL's settings that shape memory first (in the
     * table's order), then any other NCCL_* the process had */
    fprintf(out, "\n  NCCL env  ");
    int col = 12, shown = 0;
    for (size_t pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < (pass ? t->n_env : GMT_N_NCCL_SETTINGS); i++) {
            char item[160];
            if (!pass) {
                const char *v = gmt_trace_env(t, gmt_nccl_settings[i].name);
                if (!v)
                    continue;
                snprintf(item, sizeof item, "%s=%s", gmt_nccl_settings[i].name, v);
            } else {
                const char *e = t->env[i];
                size_t nl = strcspn(e, "=");
                bool known = strncmp(e, "NCCL_", 5) != 0;
                for (size_t k = 0; !known && k < GMT_N_NCCL_SETTINGS; k++)
                    known = strlen(gmt_nccl_settings[k].name) == nl &&
                            !strncmp(gmt_nccl_settings[k].name, e, nl);
                /* the plugin `gpumemtrace run` set is this tool, not a setting */
                if (known || (!strncmp(e, "NCCL_PROFILER_PLUGIN=", 21) && strstr(e, "libgpumemtrace")))
                    continue;
                snprintf(item, sizeof item, "%s", e);
            }
            int w = (int)strlen(item) + 2;
            if (shown && col + w > o->width) {
                fprintf(out, "\n            ");
                col = 12;
            }
            fprintf(out, "%s", shown ? "  " : "");
            gmt_fput_safe(out, item, strlen(item));
            col += w;
            shown++;
        }
    fprintf(out, "%s\n", shown ? "; the rest unset (NCCL's defaults)" : "none set (NCCL's defaults)");
}

/* The peak row's untracked and dev used are the largest device-used sample's, which is
 * seldom the peak's instant: when it is another, when it was and what was tracked then,
 * so that the row's figures add up (tracked then + graph + untracked = dev used). */
static void peak_row_moment(FILE *out, const struct gmt_analysis *a, const struct gmt_dev_report *r)
{
    if (!r->has_used || r->used_max_time == r->peak_time)
        return;
    uint64_t t = r->used_max_time, p = r->peak_time;
    char when[GMT_FMT_LEN], d[GMT_FMT_LEN], tr[GMT_FMT_LEN], g[GMT_FMT_LEN];
    snprintf(when, sizeof when, "%.3f", t > a->t.t_first ? (double)(t - a->t.t_first) / 1e9 : 0.0);
    gmt_fmt_duration(d, sizeof d, t > p ? t - p : p - t);
    gmt_fmt_bytes(tr, sizeof tr, r->tracked_at_used_max);
    fprintf(out, "         untracked, dev used: largest sample at %s s, %s %s the peak; tracked then %s",
            when, d, t > p ? "after" : "before", tr);
    if (r->graph_at_used_max)
        fprintf(out, ", graph %s", gmt_fmt_bytes(g, sizeof g, r->graph_at_used_max));
    fputc('\n', out);
}

static void text_peaks(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_report *rep = &a->rep;
    fprintf(out, "\nPeak device memory\n");
    /* the last column, the call in flight, is cut to the width (a narrow one: dropped) */
    int room = o->width - 67;
    fprintf(out, "  %-6s %10s %12s %10s %10s %10s%s%.*s\n", "device", "peak", "at", "at end",
            "untracked", "dev used", room >= 8 ? "  " : "", room >= 8 ? room : 0,
            room >= 21 ? "in flight at the peak" : "in flight");
    for (size_t d = 0; d < rep->n_dev; d++) {
        const struct gmt_dev_report *r = &rep->dev[d];
        if (!gmt_report_dev_selected(o, r->device) || !gmt_dev_shown(r))
            continue;
        char bpeak[32], bend[32], bu[32], bused[32], bt[32], lab[96];
        gmt_fmt_bytes(bpeak, sizeof bpeak, r->peak);
        gmt_fmt_bytes(bend, sizeof bend, r->end);
        snprintf(bt, sizeof bt, "%.3f", r->peak_time ? (double)(r->peak_time - a->t.t_first) / 1e9 : 0.0);
        if (r->has_used) {
            gmt_fmt_sbytes(bu, sizeof bu, gmt_dev_untracked(r));
            gmt_fmt_bytes(bused, sizeof bused, r->used_max);
        } else {
            snprintf(bu, sizeof bu, "?");
            snprintf(bused, sizeof bused, "?");
        }
        char dn[16];
        snprintf(dn, sizeof dn, "%d", r->device);
        fprintf(out, "  %-6s %10s %10s s %10s %10s %10s%s%.*s\n", r->device < 0 ? "?" : dn, bpeak,
                bt, bend, bu, bused, room >= 8 ? "  " : "", room >= 8 ? room : 0,
                op_label(a, r->peak_scope, lab, sizeof lab));
        peak_row_moment(out, a, r);
        fprintf(out, "         at the peak:");
        for (size_t c = 0; c < a->n_cats; c++)
            if (r->peak_by_cat[c]) {
                char bc[32];
                fprintf(out, " %s %s;", a->cat_names[c], gmt_fmt_bytes(bc, sizeof bc, r->peak_by_cat[c]));
            }
        fprintf(out, "\n         at the end: ");
        for (size_t c = 0; c < a->n_cats; c++)
            if (r->end_by_cat[c]) {
                char bc[32];
                fprintf(out, " %s %s;", a->cat_names[c], gmt_fmt_bytes(bc, sizeof bc, r->end_by_cat[c]));
            }
        char b1[32], b2[32], b3[32];
        if (r->has_graph)
            fprintf(out, "\n         graph memory (CUDA graphs' pool, not in tracked): peak %s, %s at "
                         "end; graph allocations at most %s",
                    gmt_fmt_bytes(b1, sizeof b1, r->graph_peak), gmt_fmt_bytes(b2, sizeof b2, r->graph_end),
                    gmt_fmt_bytes(b3, sizeof b3, r->graph_used_high));
        if (r->has_proc)
            fprintf(out, "\n         this process (NVML): at most %s, %s at the last sample",
                    gmt_fmt_bytes(b1, sizeof b1, r->proc_max), gmt_fmt_bytes(b2, sizeof b2, r->proc_last));
        if (r->peer_peak)
            fprintf(out, "\n         peer memory mapped (other processes' memory, not this device's): "
                         "peak %s, %s at end",
                    gmt_fmt_bytes(b1, sizeof b1, r->peer_peak), gmt_fmt_bytes(b2, sizeof b2, r->peer_end));
        if (r->host_peak)
            fprintf(out, "\n         pinned host memory: peak %s", gmt_fmt_bytes(b1, sizeof b1, r->host_peak));
        if (r->has_used)
            gmt_untracked_text(out, a, d);
        else
            fprintf(out, "\n");
    }
    if (a->host_only_peak) {
        char bh[32];
        fprintf(out, "  pinned host memory with no device: peak %s\n",
                gmt_fmt_bytes(bh, sizeof bh, a->host_only_peak));
    }
    fprintf(out, "  untracked = device used - tracked - graph memory, named in parts where the\n"
                 "  trace measured them (docs/untracked.md). '?' = never sampled.\n");
}

/* The NCCL calls table's columns, each as wide as its widest cell (op at most 28): a
 * narrow --width drops the right-hand ones first (host time, allocation counts, the device
 * deltas, later max, calls) and then narrows the op column; op, rank, bytes/call and the
 * first call's tracked bytes always stay. The footnote explains only columns shown and
 * names those left out. */
enum { C_OP, C_RANK, C_CALLS, C_BPC, C_FT, C_FD, C_LM, C_LD, C_AL, C_HT, C_N };
static const int coll_width[C_N] = {28, 9, 6, 10, 10, 10, 10, 10, 13, 9};
static const char *const coll_heads[C_N] = {"op", "rank", "calls", "bytes/call", "1st track",
                                            "1st dev", "later max", "later dev", "allocs(proxy)",
                                            "host time"};

struct coll_layout {
    int w[C_N];
    bool show[C_N];
    int full;                  /* the width every column needs */
};

static void coll_rank_text(const struct gmt_analysis *a, const struct gmt_coll_row *c, char *buf,
                           size_t len)
{
    int ci = gmt_trace_comm_index(&a->t, c->comm);
    if (c->rank >= 0 && a->t.n_comms > 1 && ci > 0)
        snprintf(buf, len, "%d/%d c%d", c->rank, c->nranks, ci);
    else if (c->rank >= 0)
        snprintf(buf, len, "%d/%d", c->rank, c->nranks);
    else
        snprintf(buf, len, "-");
}

static bool coll_shown(const struct gmt_report_opts *o, const struct gmt_coll_row *c)
{
    return gmt_report_coll_selected(o, c) && gmt_report_dev_selected(o, c->device);
}

/* Which columns fit in width, and how wide each is. */
static void coll_columns(int width, const struct gmt_analysis *a, const struct gmt_report_opts *o,
                         struct coll_layout *L)
{
    static const int drop[] = {C_HT, C_AL, C_LD, C_FD, C_LM, C_CALLS};
    memcpy(L->w, coll_width, sizeof L->w);
    int op = (int)strlen(coll_heads[C_OP]), rank = (int)strlen(coll_heads[C_RANK]);
    for (size_t i = 0; i < a->rep.n_colls; i++) {
        const struct gmt_coll_row *c = &a->rep.colls[i];
        if (!coll_shown(o, c))
            continue;
        char r[48];
        coll_rank_text(a, c, r, sizeof r);
        int l = (int)strnlen(c->label, sizeof c->label);
        op = l > op ? l : op;
        rank = (int)strlen(r) > rank ? (int)strlen(r) : rank;
    }
    L->w[C_OP] = op < coll_width[C_OP] ? op : coll_width[C_OP];
    L->w[C_RANK] = rank < coll_width[C_RANK] ? rank : coll_width[C_RANK];
    int total = 2;
    for (int c = 0; c < C_N; c++) {
        L->show[c] = true;
        total += L->w[c] + (c ? 1 : 0);
    }
    L->full = total;
    for (size_t k = 0; k < sizeof drop / sizeof drop[0] && total > width; k++) {
        L->show[drop[k]] = false;
        total -= L->w[drop[k]] + 1;
    }
    if (total > width)
        L->w[C_OP] = L->w[C_OP] - (total - width) > 12 ? L->w[C_OP] - (total - width) : 12;
}

static void print_coll_row(FILE *out, const struct coll_layout *L, const char *const cells[C_N])
{
    fprintf(out, "  %-*.*s", L->w[C_OP], L->w[C_OP], cells[C_OP]);
    for (int c = 1; c < C_N; c++)
        if (L->show[c])
            fprintf(out, c == C_RANK ? " %-*s" : " %*s", L->w[c], cells[c]);
    fputc('\n', out);
}

/* What the columns shown mean, and which were left out at this width. */
static void coll_footnote(FILE *out, const struct coll_layout *L, int width)
{
    if (L->show[C_HT])
        fprintf(out, "  host time = mean per timed call (grouped calls after their first are written\n"
                     "  untimed).");
    if (L->show[C_AL])
        fprintf(out, "%s(proxy) = allocations made on another thread than the caller's\n"
                     "  (NCCL's proxy service thread) while the call was in flight.",
                L->show[C_HT] ? " " : "  ");
    if (L->show[C_HT] || L->show[C_AL])
        fputc('\n', out);
    char gone[160] = "";
    size_t at = 0;
    for (int c = 0; c < C_N && at < sizeof gone; c++)
        if (!L->show[c])
            at += (size_t)snprintf(gone + at, sizeof gone - at, "%s%s", at ? ", " : "", coll_heads[c]);
    if (at)
        fprintf(out, "  left out at width %d: %s (--width %d shows every column)\n", width, gone,
                L->full);
}

static void text_colls(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_report *rep = &a->rep;
    fprintf(out, "\nNCCL calls (first call vs later calls; tracked = allocation calls, device = cuMemGetInfo)\n");
    if (!rep->n_colls) {
        fprintf(out, "  none\n");
        return;
    }
    struct coll_layout L;
    coll_columns(o->width, a, o, &L);
    print_coll_row(out, &L, coll_heads);
    for (size_t i = 0; i < rep->n_colls; i++) {
        const struct gmt_coll_row *c = &rep->colls[i];
        if (!coll_shown(o, c))
            continue;
        char rank[48], bpc[32], ft[32], fd[32], lm[32], ld[32], al[48], ht[32];
        coll_rank_text(a, c, rank, sizeof rank);
        gmt_fmt_bytes(bpc, sizeof bpc, c->bytes_per_call);
        gmt_fmt_sbytes(ft, sizeof ft, c->first_tracked);
        if (c->first_has_dev)
            gmt_fmt_sbytes(fd, sizeof fd, c->first_dev);
        else
            snprintf(fd, sizeof fd, "?");
        gmt_fmt_sbytes(lm, sizeof lm, c->calls > 1 ? c->later_tracked_max : 0);
        if (c->later_has_dev)
            gmt_fmt_sbytes(ld, sizeof ld, c->later_dev_max);
        else
            snprintf(ld, sizeof ld, c->calls > 1 ? "?" : "-");
        snprintf(al, sizeof al, "%" PRIu64 "(%" PRIu64 ")", c->allocs, c->allocs_other_thread);
        gmt_fmt_duration(ht, sizeof ht, c->host_calls ? c->host_ns_total / c->host_calls : 0);
        char calls[24];
        snprintf(calls, sizeof calls, "%" PRIu64, c->calls);
        const char *cells[C_N] = {c->label, rank, calls, bpc, ft, fd, lm, ld, al, ht};
        print_coll_row(out, &L, cells);
        if (c->failed)
            fprintf(out, "  %-*s %" PRIu64 " call(s) returned an error\n", L.w[C_OP], "", c->failed);
        gmt_untracked_call_text(out, a, i);
        const struct gmt_nccl_pick *pk = &c->pick;
        if (pk->total)
            fprintf(out, "    NCCL chose %s/%s, %u channel(s), %u warps%s\n",
                    gmt_nccl_algo_name(pk->algo), gmt_nccl_proto_name(pk->proto), pk->nchannels,
                    pk->nwarps, pk->choices > 1 ? " (most often: its choice changed)" : "");
        if (c->allocs && c->first_stack) {
            char line[1024];
            gmt_stack_line(a, c->first_stack, o->frames ? o->frames : 4, line, sizeof line);
            int room = o->width - 16 > 20 ? o->width - 16 : 20;
            fprintf(out, "    called from %.*s%s\n", room, line, (int)strlen(line) > room ? "…" : "");
        }
    }
    coll_footnote(out, &L, o->width);
}

static void text_sites(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o,
                       bool leaks)
{
    fprintf(out, leaks ? "\nLeaks (device memory still allocated at the end that nothing holds for reuse, by site)\n"
                       : "\nTop allocation sites (device memory, by bytes live at the peak)\n");
    /* sites that print alike are one site: grouped at the frames shown */
    const struct gmt_site_groups *G = leaks ? gmt_sites_text_leaks(&a->sites) : &a->sites.live;
    if (G->rc) {
        fprintf(out, "  (out of memory)\n");
        return;
    }
    size_t shown = (size_t)o->top < G->n ? (size_t)o->top : G->n;
    for (size_t j = 0; j < shown; j++) {
        const struct gmt_site_row *s = &G->g[j].sum;
        char b1[32], b2[32], b3[32], stacks[32] = "";
        gmt_fmt_bytes(b1, sizeof b1, s->live_at_peak);
        gmt_fmt_bytes(b2, sizeof b2, s->live_at_end);
        gmt_fmt_bytes(b3, sizeof b3, s->bytes_total);
        if (G->g[j].n_stacks > 1)
            snprintf(stacks, sizeof stacks, ", %zu stacks", G->g[j].n_stacks);
        if (leaks)
            fprintf(out, "  %10s in %" PRIu64 " allocation(s)%s  [%s]\n", b2, s->count_at_end, stacks,
                    a->cat_names[s->cat]);
        else
            fprintf(out, "  %10s at peak, %s at end, %" PRIu64 " allocs, %s in all%s  [%s]\n", b1, b2,
                    s->allocs, b3, stacks, a->cat_names[s->cat]);
        /* cut to the width, unless --frames asked for the frames */
        const char *line = G->g[j].line;
        int room = o->width - 6 > 20 ? o->width - 6 : 20;
        if (o->frames || (int)strlen(line) <= room)
            fprintf(out, "      %s\n", line);
        else
            fprintf(out, "      %.*s…\n", room, line);
    }
    if (!shown)
        fprintf(out, "  none\n");
}

/* Memory still allocated at the end that a cache or a communicator holds for reuse:
 * normal at exit, so apart from the leaks, by holder. */
static void text_held(FILE *out, const struct gmt_analysis *a)
{
    const struct gmt_held *h = a->held;
    size_t n = a->n_held;
    if (!n)
        return;
    fprintf(out, "\nHeld at the end for reuse (caches and live communicators: normal at exit)\n");
    for (size_t k = 0; k < n; k++) {
        char b[32];
        fprintf(out, "  %10s in %" PRIu64 " allocation(s)  %s\n", gmt_fmt_bytes(b, sizeof b, h[k].bytes),
                h[k].count, h[k].holder);
    }
}

static void text_fails(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_report *rep = &a->rep;
    fprintf(out, "\nAllocation failures\n");
    if (!rep->n_fails) {
        fprintf(out, "  none\n");
        return;
    }
    for (size_t i = 0; i < rep->n_fails; i++) {
        const struct gmt_fail_row *f = &rep->fails[i];
        if (!gmt_report_dev_selected(o, f->device))
            continue;
        char b1[32], b2[32], b3[32], b4[32], lab[96], line[1024], err[48];
        gmt_error_text(f->api, f->error, err, sizeof err);
        fprintf(out, "  %.3f s  %s of %s on device %d failed: %s; %s tracked then; in flight: %s\n",
                (double)(f->time - a->t.t_first) / 1e9, gmt_api_name(f->api),
                gmt_fmt_bytes(b1, sizeof b1, f->bytes), f->device, err,
                gmt_fmt_bytes(b2, sizeof b2, f->tracked), op_label(a, f->scope, lab, sizeof lab));
        if (f->has_dev)
            fprintf(out, "      device: %s free of %s %s\n", gmt_fmt_bytes(b3, sizeof b3, f->dev_free),
                    gmt_fmt_bytes(b4, sizeof b4, f->dev_total),
                    f->dev_at_fail ? "right after the failure" : "at the last sample before it");
        else
            fprintf(out, "      device: free memory never sampled\n");
        fprintf(out, "      live:");
        for (size_t c = 0; c < a->n_cats; c++)
            if (f->by_cat[c]) {
                char bc[32];
                fprintf(out, " %s %s;", a->cat_names[c], gmt_fmt_bytes(bc, sizeof bc, f->by_cat[c]));
            }
        fprintf(out, "\n      %s\n", gmt_stack_line(a, f->stack, o->frames ? o->frames : 4, line, sizeof line));
    }
}

/* Hang forensics: the NCCL calls the trace ends inside. */
static void text_open(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_report *rep = &a->rep;
    if (!rep->n_open)
        return;
    fprintf(out, "\nOpen when the trace ends (the process %s inside these NCCL calls)\n",
            a->t.complete ? "exited while a thread was" : "stopped: hung, killed or crashed");
    for (size_t i = 0; i < rep->n_open; i++) {
        const struct gmt_open_row *r = &rep->open[i];
        if (!gmt_report_dev_selected(o, r->device))
            continue;
        char lab[96], b1[32], dur[32], comm[64] = "";
        const struct gmt_comm *c = gmt_trace_comm(&a->t, r->comm);
        if (c)
            snprintf(comm, sizeof comm, " on comm %d (rank %d of %d)", gmt_trace_comm_index(&a->t, r->comm),
                     c->rank, c->nranks);
        uint64_t end = a->t.t_last > r->since ? a->t.t_last : r->since;
        gmt_fmt_duration(dur, sizeof dur, end - r->since);
        snprintf(lab, sizeof lab, "%s #%u at %.3f s", r->label, r->scope,
                 (double)(r->since - a->t.t_first) / 1e9);
        fprintf(out, "  %s%s, device %d, thread %u: open since %.3f s (%s before the trace ends); "
                     "allocated %s under it\n",
                lab, comm, r->device, r->tid,
                (double)(r->since - a->t.t_first) / 1e9, dur, gmt_fmt_sbytes(b1, sizeof b1, r->tracked));
        if (r->stack) {
            char line[1024];
            gmt_stack_line(a, r->stack, o->frames ? o->frames : 4, line, sizeof line);
            fprintf(out, "      called from %s\n", line);
        }
    }
}

/* Device memory by NVTX phase (phases.c): the ranges, the stacks of ranges open at the
 * allocations, and the step marker's verdict. */
static void text_phases(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_phases *p = &a->phases;
    if (!p->ranges)
        return;
    fprintf(out, "\nDevice memory by phase (NVTX ranges; peak while open, growth = live at end - at start)\n");
    fprintf(out, "  %-40s %8s %10s %11s %11s %8s %10s\n", "RANGE", "COUNT", "PEAK", "GROWTH",
            "MAX GROWTH", "ALLOCS", "ALLOCATED");
    long shown = 0;
    for (size_t i = 0; i < p->n_rows && shown < o->top; i++, shown++) {
        const struct gmt_phase_row *r = &p->rows[i];
        char b1[32], b2[32], b3[32], b4[32];
        fprintf(out, "  %-40.*s %8" PRIu64 " %10s %11s %11s %8" PRIu64 " %10s%s\n", 40, gmt_one_line(r->name),
                r->count, gmt_fmt_bytes(b1, sizeof b1, r->peak), gmt_fmt_sbytes(b2, sizeof b2, r->growth),
                gmt_fmt_sbytes(b3, sizeof b3, r->growth_max), r->allocs,
                gmt_fmt_bytes(b4, sizeof b4, r->alloc_bytes), r->open_at_end ? "  (open at end)" : "");
    }
    if (p->n_stacks) {
        fprintf(out, "  allocations by the ranges open on their thread:\n");
        for (size_t i = 0; i < p->n_stacks && (long)i < o->top; i++) {
            char b[32];
            fprintf(out, "    %10s in %8" PRIu64 "  %s\n", gmt_fmt_bytes(b, sizeof b, p->stacks[i].bytes),
                    p->stacks[i].allocs, gmt_one_line(p->stacks[i].path));
        }
        if (p->unnamed_allocs)
            fprintf(out, "    %" PRIu64 " allocation(s) with no range open on their thread\n",
                    p->unnamed_allocs);
    }
    if (!p->steps) {
        fprintf(out, "  steps: no range matches --step\n");
        return;
    }
    char b1[32], b2[32];
    fprintf(out, "  steps: %" PRIu64 "; the first grew %s", p->steps,
            gmt_fmt_sbytes(b1, sizeof b1, p->first_step_growth));
    if (p->steps > 1)
        fprintf(out, ", the %" PRIu64 " after it %s together", p->steps - 1,
                gmt_fmt_sbytes(b2, sizeof b2, p->later_growth));
    fprintf(out, "\n");
    if (p->grows_every_step) {
        char line[1024];
        fprintf(out, "  grows every step: %s per step over %" PRIu64 " steps, from %s\n",
                gmt_fmt_sbytes(b1, sizeof b1, p->growth_per_step), p->steps - 1,
                p->grow_stack_bytes ? gmt_stack_line(a, p->grow_stack, o->frames ? o->frames : 3, line, sizeof line)
                                    : "(no allocation of those steps is still live)");
    }
}

static void text_trace(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o,
                       size_t i)
{
    if (i > 0)
        fprintf(out, "\n");
    text_header(out, a, o);
    text_peaks(out, a, o);
    text_colls(out, a, o);
    gmt_render_explain_brief_text(out, a);
    text_phases(out, a, o);
    text_sites(out, a, o, false);
    text_sites(out, a, o, true);
    text_held(out, a);
    gmt_blocks_text(out, a);
    text_fails(out, a, o);
    text_open(out, a, o);
    if (a->rep.unmatched_frees)
        fprintf(out, "\n  note: %" PRIu64 " free(s) of addresses the trace never saw allocated "
                     "(allocated before tracing started, or by an API not traced)\n",
                a->rep.unmatched_frees);
}

static void text_begin(FILE *out, const struct gmt_job *j, const struct gmt_report_opts *o)
{
    if (j)
        gmt_render_job_text(out, j, o);
}

const struct gmt_renderer gmt_render_text = {.begin = text_begin, .trace = text_trace};
