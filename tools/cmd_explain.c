/* cmd_explain.c: `gpumemtrace explain`: each communicator's NCCL memory by purpose, why each buffer has its size, and what other settings would make of it. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "nccl_model.h"
#include "report.h"
#include "trace.h"
#include "util.h"

const char gmt_help_explain[] =
    "usage: gpumemtrace explain [options] TRACE...\n"
    "\n"
    "What NCCL's memory is for. For each communicator of each traced process: its\n"
    "allocations grouped by purpose (per-channel structures, the device communicator,\n"
    "transport buffers by side, proxy and host buffers, the work FIFO, NVLS, CollNet,\n"
    "registrations, ncclMemAlloc), each with its count, bytes, the NCCL function and\n"
    "source line that asked and the call that caused it; the channel counts the buffers\n"
    "imply and NCCL's sizing rule for them (docs/nccl-memory.md). 'how' says how a group\n"
    "was classified: stack (NCCL's own frames), api, size or timing (no NCCL symbols).\n"
    "\n"
    "options:\n"
    "  --what-if SPEC    predict each communicator's and the process's memory under other\n"
    "                    settings, SPEC = NAME=VALUE[,NAME=VALUE...] (NCCL_BUFFSIZE=1M,\n"
    "                    NCCL_MAX_NCHANNELS=8; K, M, G: binary units); repeatable\n"
    "  --json            one JSON document (schema gpumemtrace.explain/1, docs/nccl-memory.md)\n"
    "  --debug-paths DIR extra directories to look for binaries and debug files (repeatable)\n"
    "  --no-symbols      open no binary: classify by API, size and timing only\n"
    "\n"
    "Exit status: 0, 2 bad usage or unreadable input.\n";

#define MAX_WHATIF 8

struct opts {
    const char *spec[MAX_WHATIF];
    struct gmt_nccl_settings to[MAX_WHATIF]; /* filled per trace: the run's, then the spec */
    int n;
};

static int explain_opt(void *ctx, int c, const char *arg)
{
    struct opts *o = ctx;
    if (c != 'w')
        return GMT_EXIT_ERROR;
    if (o->n == MAX_WHATIF)
        return gmt_cli_usage_error("explain", "at most %d --what-if", MAX_WHATIF);
    struct gmt_nccl_settings s;
    gmt_nccl_settings_of(NULL, &s);
    char err[400];
    if (gmt_nccl_settings_parse(&s, arg, err, sizeof err))
        return gmt_cli_usage_error("explain", "%s", err);
    o->spec[o->n++] = arg;
    return 0;
}

static const struct option explain_opts[] = {{"what-if", required_argument, 0, 'w'}, {0, 0, 0, 0}};

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

static void why_text(FILE *o, const struct gmt_nccl_model *m, const struct gmt_nccl_comm *c)
{
    char b1[32], b2[32], b3[32], b4[32], b5[32], b6[32];
    struct gmt_nccl_p2p_sizes z;
    gmt_nccl_p2p_sizes(&m->set, &z);
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
    uint64_t waste = 0;
    if (c->recv_each) {
        fprintf(o, "    receive    ncclRecvMem %s + LL %s + LL128 %s%s%s = %s needed, %s each",
                mb(b1, sizeof b1, z.header_recv), mb(b2, sizeof b2, z.ll), mb(b3, sizeof b3, z.ll128),
                z.read ? "" : " + Simple ", z.read ? "" : mb(b4, sizeof b4, z.simple),
                mb(b5, sizeof b5, z.recv_need), mb(b6, sizeof b6, z.recv));
        fprintf(o, " (aligned to 2 MiB)\n");
        if (c->recv_each != z.recv)
            fprintf(o, "    DISAGREE   the trace's receive buffers are %s each, the model's %s\n",
                    mb(b1, sizeof b1, c->recv_each), mb(b2, sizeof b2, z.recv));
        else
            waste += (z.recv - z.recv_need) * (uint64_t)c->coll_channels;
    }
    if (c->send_each) {
        fprintf(o, "    send       ncclSendMem %s%s%s = %s needed, %s each (aligned to 2 MiB)\n",
                mb(b1, sizeof b1, z.header_send), z.read ? " + Simple " : "",
                z.read ? mb(b2, sizeof b2, z.simple) : "", mb(b3, sizeof b3, z.send_need),
                mb(b4, sizeof b4, z.send));
        if (c->send_each != z.send)
            fprintf(o, "    DISAGREE   the trace's send buffers are %s each, the model's %s\n",
                    mb(b1, sizeof b1, c->send_each), mb(b2, sizeof b2, z.send));
        else
            waste += (z.send - z.send_need) * (uint64_t)c->coll_channels;
    }
    uint64_t small = 0, small_n = 0;
    for (size_t i = 0; i < c->n_g; i++)
        if (!c->g[i].host && (c->g[i].purpose == GMT_NCCL_CHANNEL || c->g[i].purpose == GMT_NCCL_DEVCOMM)) {
            small += c->g[i].bytes;
            small_n += c->g[i].count;
        }
    if (small_n)
        fprintf(o, "    structures %" PRIu64 " allocations of %s in all for structures of a few hundred "
                "bytes to a few KiB each\n               (2.28: ncclDevChannelPeer 608 B per rank, "
                "peer pointers, ring ranks; ncclDevCommAndChannels)%s\n",
                small_n, mb(b1, sizeof b1, small),
                m->cumem ? ": the 2 MiB cuMem granularity sets their size" : "");
    if (waste)
        fprintf(o, "    rounding   %s of the transport buffers is alignment, not data\n",
                mb(b1, sizeof b1, waste));
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

static void trace_text(FILE *o, const struct gmt_analysis *a, const struct gmt_nccl_model *m,
                       struct opts *w)
{
    const struct gmt_trace *t = &a->t;
    char b1[32], b2[32], b3[32];
    fprintf(o, "gpumemtrace explain: NCCL memory of %s\n", t->path);
    if (t->has_proc) {
        fprintf(o, "  process   pid %u%s%s", t->proc.pid, t->host ? " on " : "", t->host ? t->host : "");
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
    if (!m->n_c) {
        fprintf(o, "\nno NCCL allocation in this trace\n");
        return;
    }
    uint64_t total_dev = 0, total_host = 0;
    for (size_t i = 0; i < m->n_c; i++) {
        const struct gmt_nccl_comm *c = &m->c[i];
        total_dev += c->dev_bytes;
        total_host += c->host_bytes;
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
        why_text(o, m, c);
        for (int k = 0; k < w->n; k++) {
            struct gmt_nccl_prediction p;
            gmt_nccl_predict(m, c, &w->to[k], &p);
            fprintf(o, "  what if %s: %s device (%s), %s host; %s: %s\n", w->spec[k],
                    mb(b1, sizeof b1, p.dev_bytes),
                    gmt_fmt_sbytes(b2, sizeof b2, (int64_t)p.dev_bytes - (int64_t)c->dev_bytes),
                    mb(b3, sizeof b3, p.host_bytes), p.confidence, p.note);
        }
    }
    fprintf(o, "\nthis process: %s device, %s pinned host of NCCL's\n", mb(b1, sizeof b1, total_dev),
            mb(b2, sizeof b2, total_host));
    for (int k = 0; k < w->n; k++) {
        uint64_t dev = 0, host = 0;
        const char *conf = "exact";
        for (size_t i = 0; i < m->n_c; i++) {
            struct gmt_nccl_prediction p;
            gmt_nccl_predict(m, &m->c[i], &w->to[k], &p);
            dev += p.dev_bytes;
            host += p.host_bytes;
            if (strcmp(p.confidence, "exact"))
                conf = p.confidence;
        }
        fprintf(o, "  what if %s: %s device (%s), %s host; %s\n", w->spec[k], mb(b1, sizeof b1, dev),
                gmt_fmt_sbytes(b2, sizeof b2, (int64_t)dev - (int64_t)total_dev),
                mb(b3, sizeof b3, host), conf);
    }
    struct gmt_nccl_saving sv[3];
    size_t ns = gmt_nccl_savings(m, sv, 3);
    if (ns)
        fprintf(o, "\nsettings that would save the most here\n");
    for (size_t i = 0; i < ns; i++)
        fprintf(o, "  %-28s saves %9s  cost: %s\n", sv[i].setting, mb(b1, sizeof b1, sv[i].saves),
                sv[i].cost);
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

static void trace_json(FILE *o, const struct gmt_analysis *a, const struct gmt_nccl_model *m,
                       struct opts *w, bool first)
{
    const struct gmt_trace *t = &a->t;
    fprintf(o, "%s{\"file\": ", first ? "" : ", ");
    gmt_fput_json_string(o, t->path);
    fprintf(o, ", \"rank\": %d, \"nccl_version\": %d, \"modelled\": %s, \"cumem\": %s, "
            "\"symbols\": %s, \"settings\": {", t->has_proc ? t->proc.rank : -1, m->version,
            m->modelled ? "true" : "false", m->cumem ? "true" : "false", m->symbols ? "true" : "false");
    for (int k = 0; k < GMT_NCCL_NKNOBS; k++)
        fprintf(o, "%s\"%s\": {\"value\": %" PRId64 ", \"set\": %s}", k ? ", " : "", gmt_nccl_knob_name(k),
                m->set.v[k], m->set.set & (1u << k) ? "true" : "false");
    struct gmt_nccl_p2p_sizes z;
    gmt_nccl_p2p_sizes(&m->set, &z);
    fprintf(o, "}, \"p2p_sizes\": {\"recv_need\": %" PRIu64 ", \"recv\": %" PRIu64
            ", \"send_need\": %" PRIu64 ", \"send\": %" PRIu64 ", \"read\": %s}, \"communicators\": [",
            z.recv_need, z.recv, z.send_need, z.send, z.read ? "true" : "false");
    uint64_t total = 0;
    for (size_t i = 0; i < m->n_c; i++) {
        const struct gmt_nccl_comm *c = &m->c[i];
        total += c->dev_bytes;
        fprintf(o, "%s{\"index\": %d, \"rank\": %d, \"nranks\": %d, \"device\": %d, \"device_bytes\": %"
                PRIu64 ", \"host_bytes\": %" PRIu64 ", \"allocations\": %" PRIu64
                ", \"channels_init\": %d, \"channels_collective\": %d, ", i ? ", " : "", c->index,
                c->rank, c->nranks, c->device, c->dev_bytes, c->host_bytes, c->allocs,
                c->init_channels, c->coll_channels);
        json_groups(o, c);
        fprintf(o, ", \"what_if\": [");
        for (int k = 0; k < w->n; k++) {
            struct gmt_nccl_prediction p;
            gmt_nccl_predict(m, c, &w->to[k], &p);
            fprintf(o, "%s{\"settings\": ", k ? ", " : "");
            gmt_fput_json_string(o, w->spec[k]);
            fprintf(o, ", \"device_bytes\": %" PRIu64 ", \"host_bytes\": %" PRIu64 ", \"confidence\": \"%s\"}",
                    p.dev_bytes, p.host_bytes, p.confidence);
        }
        fprintf(o, "]}");
    }
    fprintf(o, "], \"device_bytes\": %" PRIu64 ", \"savings\": [", total);
    struct gmt_nccl_saving sv[3];
    size_t ns = gmt_nccl_savings(m, sv, 3);
    for (size_t i = 0; i < ns; i++) {
        fprintf(o, "%s{\"setting\": ", i ? ", " : "");
        gmt_fput_json_string(o, sv[i].setting);
        fprintf(o, ", \"saves\": %" PRIu64 ", \"cost\": ", sv[i].saves);
        gmt_fput_json_string(o, sv[i].cost);
        fprintf(o, "}");
    }
    fprintf(o, "]}");
}

void gmt_explain_trace_json(FILE *o, const struct gmt_analysis *a, const struct gmt_nccl_model *m)
{
    struct opts none = {0};
    trace_json(o, a, m, &none, true);
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

void gmt_explain_brief_text(FILE *o, const struct gmt_analysis *a)
{
    struct gmt_nccl_model m;
    if (gmt_nccl_model_build(a, &m))
        return;
    if (!m.n_c) {
        gmt_nccl_model_free(&m);
        return;
    }
    char b1[32], b2[32];
    fprintf(o, "\nNCCL memory by purpose ('gpumemtrace explain' says why, and what other settings would do)\n");
    for (size_t i = 0; i < m.n_c && i < 4; i++) {
        const struct gmt_nccl_comm *c = &m.c[i];
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
    if (m.n_c > 4)
        fprintf(o, "  ... %zu more communicators\n", m.n_c - 4);
    struct gmt_nccl_saving sv[3];
    size_t ns = gmt_nccl_savings(&m, sv, 3);
    for (size_t i = 0; i < ns; i++)
        fprintf(o, "  %s %s would save %s (%s)\n", i ? "   " : "try", sv[i].setting,
                mb(b1, sizeof b1, sv[i].saves), sv[i].cost);
    gmt_nccl_model_free(&m);
}

void gmt_explain_brief_json(FILE *o, const struct gmt_analysis *a)
{
    struct gmt_nccl_model m;
    if (gmt_nccl_model_build(a, &m) || !m.n_c) {
        gmt_nccl_model_free(&m);
        fprintf(o, "null");
        return;
    }
    fprintf(o, "{\"modelled\": %s, \"communicators\": [", m.modelled ? "true" : "false");
    for (size_t i = 0; i < m.n_c; i++) {
        const struct gmt_nccl_comm *c = &m.c[i];
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
        fprintf(o, "}}");
    }
    fprintf(o, "], \"savings\": [");
    struct gmt_nccl_saving sv[3];
    size_t ns = gmt_nccl_savings(&m, sv, 3);
    for (size_t i = 0; i < ns; i++) {
        fprintf(o, "%s{\"setting\": ", i ? ", " : "");
        gmt_fput_json_string(o, sv[i].setting);
        fprintf(o, ", \"saves\": %" PRIu64 ", \"cost\": ", sv[i].saves);
        gmt_fput_json_string(o, sv[i].cost);
        fprintf(o, "}");
    }
    fprintf(o, "]}");
    gmt_nccl_model_free(&m);
}

int gmt_cmd_explain(int argc, char **argv)
{
    struct opts w = {0};
    struct gmt_args args;
    gmt_args_init(&args);
    const struct gmt_args_spec spec = {
        .cmd = "explain", .help = gmt_help_explain,
        .shared = GMT_ARGS_JSON | GMT_ARGS_NO_SYMBOLS | GMT_ARGS_DEBUG_PATHS,
        .own = explain_opts, .own_opt = explain_opt, .ctx = &w, .optstring = "",
        .unknown = "unknown option"};
    int rc = gmt_args_parse(&spec, argc, argv, &args);
    if (rc >= 0)
        return rc;
    if (args.first >= argc)
        return gmt_cli_usage_error("explain", "no trace given");
    char **files;
    size_t n_files;
    int status = gmt_args_traces(&args, argc, argv, &files, &n_files);
    if (status < 0)
        return GMT_EXIT_ERROR;
    bool json = args.output == GMT_OUT_JSON;
    if (json)
        printf("{\"schema\": \"gpumemtrace.explain/1\", \"traces\": [");
    size_t written = 0;
    const struct gmt_report_opts ro = args.ro;
    for (size_t i = 0; i < n_files; i++) {
        struct gmt_analysis a;
        char err[512];
        if (gmt_analyze(&a, files[i], &ro, err, sizeof err)) {
            gmt_err("gpumemtrace: %s", err);
            status = GMT_EXIT_ERROR;
            continue;
        }
        struct gmt_nccl_model m;
        if (gmt_nccl_model_build(&a, &m)) {
            gmt_err("gpumemtrace: %s: out of memory", files[i]);
            gmt_analysis_free(&a);
            status = GMT_EXIT_ERROR;
            continue;
        }
        /* each what-if starts from the run's own settings */
        for (int k = 0; k < w.n; k++) {
            char e2[400];
            w.to[k] = m.set;
            (void)gmt_nccl_settings_parse(&w.to[k], w.spec[k], e2, sizeof e2);
        }
        if (json)
            trace_json(stdout, &a, &m, &w, written == 0);
        else {
            if (written)
                fputc('\n', stdout);
            trace_text(stdout, &a, &m, &w);
        }
        written++;
        gmt_nccl_model_free(&m);
        gmt_analysis_free(&a);
    }
    if (json)
        printf("]}\n");
    gmt_free_paths(files, n_files);
    return status;
}
