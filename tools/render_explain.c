/* render_explain.c: `explain`'s text and JSON, and its short form in summary's, from a trace's NCCL model and its what-ifs. */
#include "render_explain.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idnames.h"
#include "nccl_own.h"
#include "untracked.h"
#include "util.h"

static const char *mb(char *buf, size_t len, uint64_t v)
{
    return gmt_fmt_bytes(buf, len, v);
}

static void comm_title(FILE *o, const struct gmt_nccl_comm *c)
{
    if (c->comm == 0)
        fprintf(o, "\nno communicator (ncclMemAlloc, or NCCL outside a communicator's calls)");
    else if (c->rank >= 0)
        fprintf(o, "\ncommunicator #%d (rank %d of %d, device %d)", c->index, c->rank, c->nranks,
                c->device);
    else
        fprintf(o, "\ncommunicator #%d", c->index);
}

static void why_text(FILE *o, const struct gmt_nccl_model *m, const struct gmt_nccl_comm *c,
                     const struct gmt_nccl_why *why)
{
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
    const struct gmt_nccl_p2p_sizes z = m->p2p;
    fprintf(o, "  why that size\n");
    if (c->coll_channels)
        fprintf(o, "    channels   %d at the first collective (%d receive buffers, one ring peer each)\n",
                c->coll_channels, c->coll_channels);
    if (c->init_channels && !c->init_guessed)
        fprintf(o, "    channels   %d with device structures from initChannel at init\n",
                c->init_channels);
    else if (c->init_channels)
        fprintf(o, "    channels   %d with device structures at init, read from their count "
                "(3 per channel and 2, as NCCL 2.28 makes them; no frames)\n", c->init_channels);
    if (!m->modelled) {
        fprintf(o, "    no model for NCCL %s: only what was observed is shown\n",
                m->version ? "of this version" : "of unknown version");
        return;
    }
    if (c->recv_each) {
        fprintf(o, "    receive    ncclRecvMem %s + LL %s + LL128 %s%s%s = %s needed, %s each",
                mb(b1, sizeof b1, z.header_recv), mb(b2, sizeof b2, z.ll), mb(b3, sizeof b3, z.ll128),
                z.read ? "" : " + Simple ", z.read ? "" : mb(b4, sizeof b4, z.simple),
                mb(b5, sizeof b5, z.recv_need), mb(b6, sizeof b6, z.recv));
        fprintf(o, " (aligned to 2 MiB)\n");
        if (c->recv_each != z.recv)
            fprintf(o, "    DISAGREE   the trace's receive buffers are %s each, the model's %s\n",
                    mb(b1, sizeof b1, c->recv_each), mb(b2, sizeof b2, z.recv));
    }
    if (c->send_each) {
        fprintf(o, "    send       ncclSendMem %s%s%s = %s needed, %s each (aligned to 2 MiB)\n",
                mb(b1, sizeof b1, z.header_send), z.read ? " + Simple " : "",
                z.read ? mb(b2, sizeof b2, z.simple) : "", mb(b3, sizeof b3, z.send_need),
                mb(b4, sizeof b4, z.send));
        if (c->send_each != z.send)
            fprintf(o, "    DISAGREE   the trace's send buffers are %s each, the model's %s\n",
                    mb(b1, sizeof b1, c->send_each), mb(b2, sizeof b2, z.send));
    }
    if (why->small_allocs)
        fprintf(o, "    structures %" PRIu64 " allocations of %s in all for structures of a few hundred "
                "bytes to a few KiB each\n               (2.28: ncclDevChannelPeer 608 B per rank, "
                "peer pointers, ring ranks; ncclDevCommAndChannels)%s\n",
                why->small_allocs, mb(b1, sizeof b1, why->small_bytes),
                m->cumem ? ": the 2 MiB cuMem granularity sets their size" : "");
    if (why->waste)
        fprintf(o, "    rounding   %s of the transport buffers is alignment, not data\n",
                mb(b1, sizeof b1, why->waste));
}

/* Whether any communicator of the trace has NCCL's own count (NCCL 2.29's ncclCommMemStats). */
static bool any_own_count(const struct gmt_trace *t)
{
    return t->n_memstats > 0;
}

static void own_line(FILE *o, const char *when, const struct gmt_nccl_own_count *n, const char *trace_what)
{
    char b1[32], b2[32], b3[32], b4[32], b5[32];
    if (n->total == GMT_MEMSTATS_UNKNOWN) {
        fprintf(o, "    %-11s NCCL did not say its total\n", when);
        return;
    }
    fprintf(o, "    %-11s %9s  (suspendable %s, persistent %s%s); the trace: %s %s; ", when,
            mb(b1, sizeof b1, n->total),
            n->suspend == GMT_MEMSTATS_UNKNOWN ? "?" : mb(b2, sizeof b2, n->suspend),
            n->persist == GMT_MEMSTATS_UNKNOWN ? "?" : mb(b3, sizeof b3, n->persist),
            n->suspended ? ", suspended" : "", mb(b4, sizeof b4, n->trace), trace_what);
    if (n->diff == 0)
        fprintf(o, "the same\n");
    else if (n->diff > 0)
        fprintf(o, "difference %s: NCCL counts device memory the trace does not attribute to it\n",
                gmt_fmt_sbytes(b5, sizeof b5, n->diff));
    else
        fprintf(o, "difference %s: the trace attributes to it memory NCCL does not count (or freed "
                "before)\n", gmt_fmt_sbytes(b5, sizeof b5, n->diff));
}

/* NCCL's own count of communicator c beside the trace's, where its NCCL gave one. */
static void own_text(FILE *o, const struct gmt_nccl_own *n)
{
    const struct gmt_nccl_own own = *n;
    if (!own.init.known && !own.end.known)
        return;
    fprintf(o, "  NCCL's own count (ncclCommMemStats)\n");
    if (own.init.known)
        own_line(o, "at init", &own.init, "allocated by its init");
    if (own.end.known) {
        char when[32];
        snprintf(when, sizeof when, "at %s", own.end.phase == GMT_MEMSTATS_FINALIZE ? "finalize"
                                             : own.end.phase == GMT_MEMSTATS_ABORT  ? "abort"
                                                                                    : "destroy");
        own_line(o, when, &own.end, "device in all");
    }
}

static void settings_text(FILE *o, const struct gmt_nccl_model *m)
{
    fprintf(o, "  settings  ");
    int col = 12;
    for (int k = 0; k < GMT_NCCL_NKNOBS; k++) {
        char item[96];
        if (m->set.v[k] < 0)
            snprintf(item, sizeof item, "%s=auto*", gmt_nccl_knob_name(k));
        else
            snprintf(item, sizeof item, "%s=%" PRId64 "%s", gmt_nccl_knob_name(k), m->set.v[k],
                     m->set.set & (1u << k) ? "" : "*");
        if (k && col + 2 + (int)strlen(item) > 98) {
            fprintf(o, "\n            ");
            col = 12;
        } else if (k) {
            col += fprintf(o, "  ");
        }
        col += fprintf(o, "%s", item);
    }
    fprintf(o, "\n            (* unset: NCCL's default)\n");
}

/* The size of a change of device bytes. */
static uint64_t change_size(int64_t change)
{
    return change < 0 ? (uint64_t)-change : (uint64_t)change;
}

/* "saves 4 MiB" / "adds 2 MiB" / "changes nothing" for a change of device bytes. */
static const char *change_text(char *buf, size_t len, int64_t change)
{
    char b[32];
    if (!change)
        snprintf(buf, len, "changes nothing");
    else
        snprintf(buf, len, "%s %s", change < 0 ? "saves" : "adds", mb(b, sizeof b, change_size(change)));
    return buf;
}

void gmt_render_explain_answer_text(FILE *o, const struct gmt_analysis *a,
                                    const struct gmt_explain *x, const char *who, size_t n)
{
    const struct gmt_nccl_model *m = &a->nccl;
    const char *each = who && n > 1 ? " each" : "";
    char b1[32], b2[32], b3[32], b4[32], ch[64];
    if (who)
        fprintf(o, "  %s: ", who);
    else
        fprintf(o, "  NCCL's    ");
    if (!m->n_c) {
        fprintf(o, "no NCCL allocation\n");
        return;
    }
    fprintf(o, "%s device, %s pinned host%s\n", mb(b1, sizeof b1, m->dev_bytes),
            mb(b2, sizeof b2, m->host_bytes), each);
    const char *ind = who ? "    " : "  ";
    for (int k = 0; x && k < x->n; k++) {
        const struct gmt_explain_whatif *w = &x->w[k];
        fprintf(o, "%swhat if %s: %s device%s (%s -> %s)", ind, w->spec,
                change_text(ch, sizeof ch, w->dev_change), each,
                mb(b1, sizeof b1, m->dev_bytes), mb(b2, sizeof b2, w->dev_bytes));
        /* the group's total: what the setting is worth over the ranks it stands for */
        if (each[0] && w->dev_change)
            fprintf(o, ", %s over the %zu", mb(b3, sizeof b3, change_size(w->dev_change) * n), n);
        fprintf(o, ", %s host; %s\n", mb(b4, sizeof b4, w->host_bytes), w->confidence);
    }
    if ((!x || !x->n) && m->n_savings)
        fprintf(o, "%smost saved by %s: %s%s\n", ind, m->savings[0].setting,
                mb(b1, sizeof b1, m->savings[0].saves), each);
}

void gmt_render_explain_job_title(FILE *o, const char *what, size_t n_ranks, size_t n_groups,
                                  bool every_rank)
{
    fprintf(o, "gpumemtrace explain: NCCL memory of %s, %zu rank%s", gmt_one_line(what), n_ranks,
            n_ranks == 1 ? "" : "s");
    if (every_rank)
        fprintf(o, ", each shown\n");
    else
        fprintf(o, " in %zu group%s of ranks alike (--every-rank shows each)\n", n_groups,
                n_groups == 1 ? "" : "s");
}

void gmt_render_explain_group_heading(FILE *o, const char *who, size_t n, int32_t rep_rank)
{
    if (n > 1)
        fprintf(o, "\n== %s: the explanation of rank %d stands for them ==\n", who, rep_rank);
    else
        fprintf(o, "\n== %s ==\n", who);
}

void gmt_render_explain_text(FILE *o, const struct gmt_analysis *a, const struct gmt_explain *x,
                             bool named)
{
    const struct gmt_trace *t = &a->t;
    const struct gmt_nccl_model *m = &a->nccl;
    int n_w = x ? x->n : 0;
    char b1[32], b2[32], b3[32];
    if (named)
        fprintf(o, "  trace     %s\n", gmt_one_line(t->path));
    if (t->has_proc) {
        fprintf(o, "  process   pid %u%s%s", t->proc.pid, t->host ? " on " : "", t->host ? gmt_one_line(t->host) : "");
        if (t->proc.rank >= 0)
            fprintf(o, ", rank %d", t->proc.rank);
        fprintf(o, "\n");
    }
    int32_t v = m->version;
    if (v > 0)
        fprintf(o, "  NCCL      %d.%d.%d: %s", v / 10000, v / 100 % 100, v % 100,
                m->modelled ? "sizing rules of NCCL 2.28-2.30" : "no model for this version");
    else
        fprintf(o, "  NCCL      version unknown: no model");
    fprintf(o, "; %s\n", m->cumem ? "cuMem on (every device buffer a cuMemCreate, 2 MiB steps)"
                                  : "not every device buffer came from cuMemCreate");
    fprintf(o, "  classified %s\n", m->symbols ? "from NCCL's own frames where they were found"
                                               : "without NCCL symbols: by API, size and timing");
    settings_text(o, m);
    if (m->n_c && !any_own_count(t))
        fprintf(o, "  own count none: %s\n", v > 0 && v < 22900
                       ? "this NCCL has no ncclCommMemStats (NCCL 2.29 and later)"
                       : "no ncclCommMemStats record in the trace");
    if (!m->n_c) {
        fprintf(o, "\nno NCCL allocation in this trace\n");
        return;
    }
    for (size_t i = 0; i < m->n_c; i++) {
        const struct gmt_nccl_comm *c = &m->c[i];
        comm_title(o, c);
        fprintf(o, ": %s device, %s pinned host, %" PRIu64 " allocations\n",
                mb(b1, sizeof b1, c->dev_bytes), mb(b2, sizeof b2, c->host_bytes), c->allocs);
        fprintf(o, "  %-32s %6s %10s %9s  %-30s %-40s %s\n", "purpose", "count", "bytes", "each",
                "cause", "allocated by", "how");
        for (int p = 0; p < GMT_NCCL_NPURPOSES; p++)
            for (size_t k = 0; k < c->n_g; k++) {
                const struct gmt_nccl_group *g = &c->g[k];
                if (g->purpose != p)
                    continue;
                char by[272];
                if (g->func[0] && g->where[0])
                    snprintf(by, sizeof by, "%s (%s)", g->func, g->where);
                else
                    snprintf(by, sizeof by, "%s", g->func[0] ? g->func : g->where[0] ? g->where : "-");
                char what[48];
                snprintf(what, sizeof what, "%s%s", gmt_nccl_purpose_text(p), g->host ? " [host]" : "");
                fprintf(o, "  %-32s %6" PRIu64 " %10s %9s  %-30s %-40s %s\n", what, g->count,
                        mb(b1, sizeof b1, g->bytes), mb(b2, sizeof b2, g->each), g->cause, by,
                        gmt_nccl_how_key(g->how));
            }
        why_text(o, m, c, &a->nccl_why[i]);
        own_text(o, &a->nccl_own[i]);
        for (int k = 0; k < n_w; k++) {
            const struct gmt_nccl_prediction *p = &x->w[k].per_comm[i];
            fprintf(o, "  what if %s: %s device (%s), %s host; %s: %s\n", x->w[k].spec,
                    mb(b1, sizeof b1, p->dev_bytes),
                    gmt_fmt_sbytes(b2, sizeof b2, x->w[k].comm_change[i]),
                    mb(b3, sizeof b3, p->host_bytes), p->confidence, p->note);
        }
    }
    fprintf(o, "\nthis process: %s device, %s pinned host of NCCL's\n", mb(b1, sizeof b1, m->dev_bytes),
            mb(b2, sizeof b2, m->host_bytes));
    for (int k = 0; k < n_w; k++) {
        const struct gmt_explain_whatif *w = &x->w[k];
        fprintf(o, "  what if %s: %s device (%s), %s host; %s\n", w->spec, mb(b1, sizeof b1, w->dev_bytes),
                gmt_fmt_sbytes(b2, sizeof b2, w->dev_change),
                mb(b3, sizeof b3, w->host_bytes), w->confidence);
    }
    const struct gmt_nccl_saving *sv = m->savings;
    size_t ns = m->n_savings;
    if (ns)
        fprintf(o, "\nsettings that would save the most here\n");
    for (size_t i = 0; i < ns; i++)
        fprintf(o, "  %-28s saves %9s  cost: %s\n", sv[i].setting, mb(b1, sizeof b1, sv[i].saves),
                sv[i].cost);
    gmt_untracked_whatif_text(o, a);
}

static void json_savings(FILE *o, const struct gmt_nccl_model *m)
{
    for (size_t i = 0; i < m->n_savings; i++) {
        const struct gmt_nccl_saving *sv = &m->savings[i];
        fprintf(o, "%s{\"setting\": ", i ? ", " : "");
        gmt_fput_json_string(o, sv->setting);
        fprintf(o, ", \"saves\": %" PRIu64 ", \"cost\": ", sv->saves);
        gmt_fput_json_string(o, sv->cost);
        fprintf(o, "}");
    }
}

static void json_own_count(FILE *o, const char *key, const struct gmt_nccl_own_count *n)
{
    fprintf(o, ", \"%s\": ", key);
    if (!n->known) {
        fprintf(o, "null");
        return;
    }
    fprintf(o, "{\"phase\": \"%s\"", gmt_memstats_phase_name(n->phase));
    const uint64_t v[3] = {n->total, n->suspend, n->persist};
    const char *k[3] = {"total_bytes", "suspend_bytes", "persist_bytes"};
    for (int i = 0; i < 3; i++) {
        if (v[i] == GMT_MEMSTATS_UNKNOWN)
            fprintf(o, ", \"%s\": null", k[i]);
        else
            fprintf(o, ", \"%s\": %" PRIu64, k[i], v[i]);
    }
    fprintf(o, ", \"suspended\": %s, \"trace_bytes\": %" PRIu64 ", \"difference_bytes\": ",
            n->suspended ? "true" : "false", n->trace);
    if (n->total == GMT_MEMSTATS_UNKNOWN)
        fprintf(o, "null}");
    else
        fprintf(o, "%" PRId64 "}", n->diff);
}

/* "nccl_own": NCCL's own counts, present only when the trace has them (NCCL 2.29 and later). */
static void json_own(FILE *o, const struct gmt_nccl_own *n)
{
    const struct gmt_nccl_own own = *n;
    if (!own.init.known && !own.end.known)
        return;
    fprintf(o, ", \"nccl_own\": {\"source\": \"ncclCommMemStats\"");
    json_own_count(o, "init", &own.init);
    json_own_count(o, "end", &own.end);
    fprintf(o, "}");
}

static void json_groups(FILE *o, const struct gmt_nccl_comm *c)
{
    fprintf(o, "\"groups\": [");
    for (size_t k = 0; k < c->n_g; k++) {
        const struct gmt_nccl_group *g = &c->g[k];
        fprintf(o, "%s{\"purpose\": \"%s\", \"how\": \"%s\", \"host\": %s, \"cause\": ", k ? ", " : "",
                gmt_nccl_purpose_key(g->purpose), gmt_nccl_how_key(g->how), g->host ? "true" : "false");
        gmt_fput_json_string(o, g->cause);
        fprintf(o, ", \"function\": ");
        gmt_fput_json_string(o, g->func);
        fprintf(o, ", \"where\": ");
        gmt_fput_json_string(o, g->where);
        fprintf(o, ", \"count\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"each\": %" PRIu64 "}", g->count,
                g->bytes, g->each);
    }
    fprintf(o, "]");
}

void gmt_render_explain_json_begin(FILE *o)
{
    fprintf(o, "{\"schema\": \"gpumemtrace.explain/1\", \"traces\": [");
}

void gmt_render_explain_json_end(FILE *o, const struct gmt_job *j)
{
    fprintf(o, "]");
    if (j) {
        fprintf(o, ", \"groups\": [");
        for (size_t k = 0; k < j->n_groups; k++) {
            char ranks[512];
            size_t cnt, rep;
            gmt_job_group_ranks(j, j->order[k], ranks, sizeof ranks, &cnt, &rep);
            fprintf(o, "%s{\"ranks\": ", k ? ", " : "");
            gmt_fput_json_string(o, ranks);
            fprintf(o, ", \"count\": %zu, \"stands_for\": ", cnt);
            gmt_fput_json_string(o, j->r[rep].path);
            fprintf(o, ", \"files\": [");
            size_t at = 0;
            for (size_t i = 0; i < j->n; i++)
                if (j->r[i].group == j->order[k]) {
                    fprintf(o, "%s", at++ ? ", " : "");
                    gmt_fput_json_string(o, j->r[i].path);
                }
            fprintf(o, "]}");
        }
        fprintf(o, "]");
    }
    fprintf(o, "}\n");
}

void gmt_render_explain_json(FILE *o, const struct gmt_analysis *a, const struct gmt_explain *x,
                             bool first)
{
    const struct gmt_trace *t = &a->t;
    const struct gmt_nccl_model *m = &a->nccl;
    int n_w = x ? x->n : 0;
    fprintf(o, "%s{\"file\": ", first ? "" : ", ");
    gmt_fput_json_string(o, t->path);
    fprintf(o, ", \"rank\": %d, \"nccl_version\": %d, \"modelled\": %s, \"cumem\": %s, "
            "\"symbols\": %s, \"settings\": {", t->has_proc ? t->proc.rank : -1, m->version,
            m->modelled ? "true" : "false", m->cumem ? "true" : "false", m->symbols ? "true" : "false");
    for (int k = 0; k < GMT_NCCL_NKNOBS; k++)
        fprintf(o, "%s\"%s\": {\"value\": %" PRId64 ", \"set\": %s}", k ? ", " : "", gmt_nccl_knob_name(k),
                m->set.v[k], m->set.set & (1u << k) ? "true" : "false");
    const struct gmt_nccl_p2p_sizes z = m->p2p;
    fprintf(o, "}, \"p2p_sizes\": {\"recv_need\": %" PRIu64 ", \"recv\": %" PRIu64
            ", \"send_need\": %" PRIu64 ", \"send\": %" PRIu64 ", \"read\": %s}, \"communicators\": [",
            z.recv_need, z.recv, z.send_need, z.send, z.read ? "true" : "false");
    for (size_t i = 0; i < m->n_c; i++) {
        const struct gmt_nccl_comm *c = &m->c[i];
        fprintf(o, "%s{\"index\": %d, \"rank\": %d, \"nranks\": %d, \"device\": %d, \"device_bytes\": %"
                PRIu64 ", \"host_bytes\": %" PRIu64 ", \"allocations\": %" PRIu64
                ", \"channels_init\": %d, \"channels_collective\": %d, ", i ? ", " : "", c->index,
                c->rank, c->nranks, c->device, c->dev_bytes, c->host_bytes, c->allocs,
                c->init_channels, c->coll_channels);
        json_groups(o, c);
        json_own(o, &a->nccl_own[i]);
        fprintf(o, ", \"what_if\": [");
        for (int k = 0; k < n_w; k++) {
            const struct gmt_nccl_prediction *p = &x->w[k].per_comm[i];
            fprintf(o, "%s{\"settings\": ", k ? ", " : "");
            gmt_fput_json_string(o, x->w[k].spec);
            fprintf(o, ", \"device_bytes\": %" PRIu64 ", \"host_bytes\": %" PRIu64 ", \"confidence\": \"%s\"}",
                    p->dev_bytes, p->host_bytes, p->confidence);
        }
        fprintf(o, "]}");
    }
    fprintf(o, "], \"device_bytes\": %" PRIu64 ", \"savings\": [", m->dev_bytes);
    json_savings(o, m);
    fprintf(o, "], ");
    gmt_untracked_whatif_json(o, a);
    fputc('}', o);
}

/* ------------------------------------------------------------ the short form in summary */

/* The purposes of a communicator, largest first, as "receive 20 MiB, send 4 MiB". */
static void purposes_line(FILE *o, const struct gmt_nccl_comm *c)
{
    bool done[GMT_NCCL_NPURPOSES] = {0};
    for (int shown = 0; shown < 4; shown++) {
        int best = -1;
        for (int p = 0; p < GMT_NCCL_NPURPOSES; p++)
            if (!done[p] && c->by_purpose[p] && (best < 0 || c->by_purpose[p] > c->by_purpose[best]))
                best = p;
        if (best < 0)
            break;
        done[best] = true;
        char b[32];
        fprintf(o, "%s%s %s", shown ? ", " : "", gmt_nccl_purpose_key(best),
                mb(b, sizeof b, c->by_purpose[best]));
    }
}

void gmt_render_explain_brief_text(FILE *o, const struct gmt_analysis *a)
{
    const struct gmt_nccl_model *m = &a->nccl;
    if (a->nccl_rc || !m->n_c)
        return;
    char b1[32], b2[32];
    fprintf(o, "\nNCCL memory by purpose ('gpumemtrace explain' says why, and what other settings would do)\n");
    for (size_t i = 0; i < m->n_c && i < 4; i++) {
        const struct gmt_nccl_comm *c = &m->c[i];
        if (c->comm)
            fprintf(o, "  comm #%d rank %d/%d", c->index, c->rank, c->nranks);
        else
            fprintf(o, "  no communicator");
        fprintf(o, ": %s device, %s host: ", mb(b1, sizeof b1, c->dev_bytes),
                mb(b2, sizeof b2, c->host_bytes));
        purposes_line(o, c);
        if (c->coll_channels)
            fprintf(o, "; %d channels", c->coll_channels);
        fprintf(o, "\n");
    }
    if (m->n_c > 4)
        fprintf(o, "  ... %zu more communicators\n", m->n_c - 4);
    for (size_t i = 0; i < m->n_savings; i++)
        fprintf(o, "  %s %s would save %s (%s)\n", i ? "   " : "try", m->savings[i].setting,
                mb(b1, sizeof b1, m->savings[i].saves), m->savings[i].cost);
}

void gmt_render_explain_brief_json(FILE *o, const struct gmt_analysis *a)
{
    const struct gmt_nccl_model *m = &a->nccl;
    if (a->nccl_rc || !m->n_c) {
        fprintf(o, "null");
        return;
    }
    fprintf(o, "{\"modelled\": %s, \"communicators\": [", m->modelled ? "true" : "false");
    for (size_t i = 0; i < m->n_c; i++) {
        const struct gmt_nccl_comm *c = &m->c[i];
        fprintf(o, "%s{\"index\": %d, \"rank\": %d, \"nranks\": %d, \"device_bytes\": %" PRIu64
                ", \"host_bytes\": %" PRIu64 ", \"channels\": %d, \"by_purpose\": {", i ? ", " : "",
                c->index, c->rank, c->nranks, c->dev_bytes, c->host_bytes, c->coll_channels);
        bool first = true;
        for (int p = 0; p < GMT_NCCL_NPURPOSES; p++)
            if (c->by_purpose[p]) {
                fprintf(o, "%s\"%s\": %" PRIu64, first ? "" : ", ", gmt_nccl_purpose_key(p),
                        c->by_purpose[p]);
                first = false;
            }
        fprintf(o, "}");
        json_own(o, &a->nccl_own[i]);
        fprintf(o, "}");
    }
    fprintf(o, "], \"savings\": [");
    json_savings(o, m);
    fprintf(o, "]}");
}
