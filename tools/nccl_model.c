/* nccl_model.c: NCCL's device memory explained: allocations grouped by purpose from NCCL's own frames, sized by NCCL's rules, predicted under other settings. */
#include "nccl_model.h"

#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "category.h"
#include "idnames.h"
#include "reader.h"
#include "replay.h"
#include "report.h"
#include "symbolize.h"
#include "util.h"

#define MiB (1ull << 20)
/* p2p.cc aligns transport buffers to CUDA_IPC_MIN; cuMem's granularity is the same 2 MiB
 * on the GPUs NCCL 2.28 runs on, so every cuMem buffer is a multiple of it. */
#define IPC_MIN (2 * MiB)
#define RECV_MEM 4096u         /* sizeof(struct ncclRecvMem), NCCL 2.28 */
#define SEND_MEM 4096u         /* sizeof(struct ncclSendMem) */
#define MAXCHANNELS 64

static const char *const purpose_keys[] = {
#define GMT_X(name, key, text) key,
    GMT_NCCL_PURPOSES(GMT_X)
#undef GMT_X
};
static const char *const purpose_texts[] = {
#define GMT_X(name, key, text) text,
    GMT_NCCL_PURPOSES(GMT_X)
#undef GMT_X
};
static const char *const how_keys[] = {
#define GMT_X(name, key) key,
    GMT_NCCL_HOWS(GMT_X)
#undef GMT_X
};
static const char *const knob_names[] = {
#define GMT_X(name, env) env,
    GMT_NCCL_KNOBS(GMT_X)
#undef GMT_X
};

const char *gmt_nccl_purpose_key(int p)
{
    return p >= 0 && p < GMT_NCCL_NPURPOSES ? purpose_keys[p] : "?";
}

const char *gmt_nccl_purpose_text(int p)
{
    return p >= 0 && p < GMT_NCCL_NPURPOSES ? purpose_texts[p] : "?";
}

const char *gmt_nccl_how_key(int h)
{
    return h >= 0 && h < (int)(sizeof how_keys / sizeof how_keys[0]) ? how_keys[h] : "?";
}

const char *gmt_nccl_knob_name(int k)
{
    return k >= 0 && k < GMT_NCCL_NKNOBS ? knob_names[k] : "?";
}

/*
 * NCCL's functions that allocate, from its source (2.28: channel.cc, init.cc, proxy.cc,
 * transport/p2p.cc, shm.cc, net.cc, nvls.cc, coll_net.cc, the register directory), and
 * what for.
 * A stack is read innermost first: the first frame that matches names the purpose, so
 * the transport's setup function wins over the proxy thread's loop around it.
 * X(glob, purpose, host purpose): the second for the same function allocating host memory.
 */
#define NCCL_FUNCTION_RULES(X)                                                      \
    X("ncclMemAlloc", MEMALLOC, MEMALLOC)                                           \
    X("ncclCommRegister*", REG, REG)                                                \
    X("ncclCommWindowRegister*", REG, REG)                                          \
    X("ncclRegister*", REG, REG)                                                    \
    X("ncclRegBuffer*", REG, REG)                                                   \
    X("*RegisterBuffer*", REG, REG)                                                 \
    X("ipcRegister*", REG, REG)                                                     \
    X("p2pProxyRegister", REG, REG)                                                 \
    X("ncclWindowRegister*", REG, REG)                                              \
    X("initNvlsChannel", NVLS, NVLS)                                                \
    X("nvls*", NVLS, NVLS)                                                          \
    X("ncclNvls*", NVLS, NVLS)                                                      \
    X("initCollnetChannel", COLLNET, COLLNET)                                       \
    X("collNet*", COLLNET, COLLNET)                                                 \
    X("ncclCollNet*", COLLNET, COLLNET)                                             \
    X("p2pRecv*", RECV, PROXY)                                                      \
    X("p2pSend*", SEND, PROXY)                                                      \
    X("shmRecv*", RECV, RECV)                                                       \
    X("shmSend*", SEND, SEND)                                                       \
    X("recvProxy*", RECV, PROXY)                                                    \
    X("sendProxy*", SEND, PROXY)                                                    \
    X("recvSetup", RECV, PROXY)                                                     \
    X("sendSetup", SEND, PROXY)                                                     \
    X("initChannel", CHANNEL, CHANNEL)                                              \
    X("devCommSetup", DEVCOMM, FIFO)                                                \
    X("ncclProxy*", PROXY, PROXY)                                                   \
    X("proxy*", PROXY, PROXY)                                                       \
    X("sharedBuffersInit", PROXY, PROXY)                                            \
    X("ncclShm*", PROXY, PROXY)

static const struct {
    const char *glob;
    uint8_t dev, host;
} fn_rules[] = {
#define GMT_X(g, d, h) {g, GMT_NCCL_##d, GMT_NCCL_##h},
    NCCL_FUNCTION_RULES(GMT_X)
#undef GMT_X
};

int gmt_nccl_purpose_of_function(const char *name, bool host)
{
    if (!name || !name[0])
        return -1;
    for (size_t i = 0; i < sizeof fn_rules / sizeof fn_rules[0]; i++)
        if (fnmatch(fn_rules[i].glob, name, 0) == 0)
            return host ? fn_rules[i].host : fn_rules[i].dev;
    return -1;
}

/* ---------------------------------------------------------------------------- settings */

/* NCCL 2.28's defaults (init.cc's DEFAULT_*BUFFSIZE, NCCL_WORK_FIFO_BYTES); -1: NCCL
 * decides from the topology. */
static const int64_t knob_defaults[GMT_NCCL_NKNOBS] = {
    [GMT_NCCL_K_BUFFSIZE] = 4194304,
    [GMT_NCCL_K_LL_BUFFSIZE] = 524288,      /* 8 lines x 512 threads x 8 steps x 16 B */
    [GMT_NCCL_K_LL128_BUFFSIZE] = 4915200,  /* 120 elems x 640 threads x 8 steps x 8 B */
    [GMT_NCCL_K_MIN_NCHANNELS] = -1,
    [GMT_NCCL_K_MAX_NCHANNELS] = -1,
    [GMT_NCCL_K_MAX_P2P_NCHANNELS] = -1,
    [GMT_NCCL_K_P2P_READ_ENABLE] = -1,
    [GMT_NCCL_K_WORK_FIFO_BYTES] = 1048576,
    [GMT_NCCL_K_CUMEM_ENABLE] = -1,
};

/* A value as NCCL reads it (strtoll, any base), or with a K/M/G suffix (a what-if's
 * convenience): 0 or -EINVAL. */
static int parse_value(const char *s, int64_t *out)
{
    if (!s || !*s)
        return -EINVAL;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 0);
    if (errno || end == s || v < 0)
        return -EINVAL;
    uint64_t mul = 1;
    if (*end == 'K' || *end == 'k')
        mul = 1ull << 10;
    else if (*end == 'M' || *end == 'm')
        mul = 1ull << 20;
    else if (*end == 'G' || *end == 'g')
        mul = 1ull << 30;
    if (mul != 1)
        end++;
    if (*end || (uint64_t)v > (1ull << 40) / mul)
        return -EINVAL;
    *out = (int64_t)((uint64_t)v * mul);
    return 0;
}

static int knob_of(const char *name, size_t n)
{
    for (int k = 0; k < GMT_NCCL_NKNOBS; k++)
        if (strlen(knob_names[k]) == n && !strncmp(knob_names[k], name, n))
            return k;
    return -1;
}

void gmt_nccl_settings_of(const struct gmt_trace *t, struct gmt_nccl_settings *s)
{
    memcpy(s->v, knob_defaults, sizeof s->v);
    s->set = 0;
    for (int k = 0; t && k < GMT_NCCL_NKNOBS; k++) {
        const char *v = gmt_trace_env(t, knob_names[k]);
        int64_t x;
        /* NCCL ignores a value it cannot read, and so does the model */
        if (v && parse_value(v, &x) == 0) {
            s->v[k] = x;
            s->set |= 1u << k;
        }
    }
}

int gmt_nccl_settings_parse(struct gmt_nccl_settings *s, const char *spec, char *err, size_t errlen)
{
    const char *p = spec;
    if (!p || !*p) {
        snprintf(err, errlen, "--what-if wants NAME=VALUE[,NAME=VALUE...], not ''");
        return -1;
    }
    while (*p) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        if (!eq) {
            snprintf(err, errlen, "--what-if wants NAME=VALUE, not '%.*s'", (int)n, p);
            return -1;
        }
        int k = knob_of(p, (size_t)(eq - p));
        if (k < 0 || k == GMT_NCCL_K_CUMEM_ENABLE) {
            snprintf(err, errlen, "--what-if: the model does not size '%.*s' (it sizes "
                     "NCCL_BUFFSIZE, NCCL_LL_BUFFSIZE, NCCL_LL128_BUFFSIZE, NCCL_MIN_NCHANNELS, "
                     "NCCL_MAX_NCHANNELS, NCCL_MAX_P2P_NCHANNELS, NCCL_P2P_READ_ENABLE, "
                     "NCCL_WORK_FIFO_BYTES)", (int)(eq - p), p);
            return -1;
        }
        char val[64];
        size_t vn = n - (size_t)(eq + 1 - p);
        int64_t x;
        if (vn >= sizeof val) {
            snprintf(err, errlen, "--what-if: value of %s too long", knob_names[k]);
            return -1;
        }
        memcpy(val, eq + 1, vn);
        val[vn] = 0;
        bool chans = k == GMT_NCCL_K_MIN_NCHANNELS || k == GMT_NCCL_K_MAX_NCHANNELS ||
                     k == GMT_NCCL_K_MAX_P2P_NCHANNELS;
        if (parse_value(val, &x) || (chans && (x < 1 || x > MAXCHANNELS)) ||
            (k == GMT_NCCL_K_P2P_READ_ENABLE && x > 1) ||
            ((k == GMT_NCCL_K_BUFFSIZE || k == GMT_NCCL_K_WORK_FIFO_BYTES) && x < 4096)) {
            snprintf(err, errlen, "--what-if: bad value '%s' for %s", val, knob_names[k]);
            return -1;
        }
        s->v[k] = x;
        s->set |= 1u << k;
        p += n;
        if (*p == ',')
            p++;
    }
    return 0;
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
    return (v + a - 1) / a * a;
}

void gmt_nccl_p2p_sizes(const struct gmt_nccl_settings *s, struct gmt_nccl_p2p_sizes *z)
{
    memset(z, 0, sizeof *z);
    z->header_recv = RECV_MEM;
    z->header_send = SEND_MEM;
    z->ll = (uint64_t)s->v[GMT_NCCL_K_LL_BUFFSIZE];
    z->ll128 = (uint64_t)s->v[GMT_NCCL_K_LL128_BUFFSIZE];
    z->simple = (uint64_t)s->v[GMT_NCCL_K_BUFFSIZE];
    /* NCCL turns P2P read on by topology (NVLink on Ampere); on the H200s measured the
     * receive side held Simple, so "auto" is read off */
    z->read = s->v[GMT_NCCL_K_P2P_READ_ENABLE] == 1;
    z->recv_need = z->header_recv + z->ll + z->ll128 + (z->read ? 0 : z->simple);
    z->send_need = z->header_send + (z->read ? z->simple : 0);
    z->recv = round_up(z->recv_need, IPC_MIN);
    z->send = round_up(z->send_need, IPC_MIN);
}

bool gmt_nccl_version_modelled(int32_t v)
{
    /* read and measured on 2.28 (2.28.9), checked against the source of 2.30 */
    return v >= 22800 && v < 23100;
}

/* -------------------------------------------------------------------------- the model */

struct frame_info {
    int purpose;               /* -1: no NCCL function the model knows */
    char func[96], where[160];
};

struct build {
    const struct gmt_analysis *a;
    const struct gmt_trace *t;
    struct gmt_nccl_model *m;
    int32_t *open; size_t n_open, cap_open;
    /* per stack id: 0 unseen, else 1 + index into info */
    uint32_t *stack_info;
    struct frame_info *info; size_t n_info, cap_info;
    struct gmt_u64map cause_of; /* top scope index -> 1 + index into causes (the scopes
                                 * that allocated: few of the calls) */
    struct cause { char text[80]; uint64_t comm; bool first_coll, p2p, init; } *causes;
    size_t n_causes, cap_causes;
};

/* The plain name of a frame's function: demangled, without arguments or clone suffix. */
static void plain_name(const char *fn, char *buf, size_t len)
{
    char dm[512];
    const char *d = gmt_demangle(fn, dm, sizeof dm);
    snprintf(buf, len, "%s", d ? d : "");
    /* no arguments, template arguments or clone suffix; then the last word of what is
     * left ("ncclResult_t ncclCudaCallocAsyncDebug<int>") after any C++ scope */
    buf[strcspn(buf, "(.<")] = 0;
    char *cut = strrchr(buf, ':'), *sp = strrchr(buf, ' ');
    if (sp && (!cut || sp > cut))
        cut = sp;
    if (cut)
        memmove(buf, cut + 1, strlen(cut + 1) + 1);
}

static bool is_nccl_module(const char *path)
{
    const char *b = path ? strrchr(path, '/') : NULL;
    b = b ? b + 1 : path;
    return b && !strncmp(b, "libnccl", 7);
}

/* What NCCL's frames on stack `id` say: the first known function, else the first NCCL
 * frame that is not an allocation helper. */
static int stack_frames(struct build *B, uint32_t id, bool host, struct frame_info *out)
{
    const struct gmt_trace *t = B->t;
    out->purpose = -1;
    out->func[0] = out->where[0] = 0;
    if (!id || id >= t->n_stacks || !t->stacks[id].ip)
        return 0;
    const struct gmt_stack *st = &t->stacks[id];
    bool have_fallback = false;
    for (uint32_t i = 0; i < st->depth; i++) {
        const struct gmt_frame *fr;
        size_t n;
        if (gmt_sym_resolve(B->a->sym, st->ip[i], &fr, &n))
            return -ENOMEM;
        for (size_t k = 0; k < n; k++) {
            if (!is_nccl_module(fr[k].module))
                continue;
            char name[96];
            plain_name(fr[k].function, name, sizeof name);
            int p = gmt_nccl_purpose_of_function(name, host);
            char where[160];
            if (fr[k].file) {
                const char *b = strrchr(fr[k].file, '/');
                snprintf(where, sizeof where, "%s:%u", b ? b + 1 : fr[k].file, fr[k].line);
            } else if (fr[k].module) {
                const char *b = strrchr(fr[k].module, '/');
                snprintf(where, sizeof where, "%s+0x%" PRIx64, b ? b + 1 : fr[k].module, fr[k].offset);
            } else {
                where[0] = 0;
            }
            if (p >= 0) {
                out->purpose = p;
                snprintf(out->func, sizeof out->func, "%s", name);
                snprintf(out->where, sizeof out->where, "%s", where);
                return 0;
            }
            if (!have_fallback && is_nccl_module(fr[k].module) &&
                (!name[0] || (strncmp(name, "ncclCuMem", 9) && strncmp(name, "ncclCuda", 8) &&
                              strcmp(name, "bufs_add")))) {
                have_fallback = true;
                snprintf(out->func, sizeof out->func, "%s", name);
                snprintf(out->where, sizeof out->where, "%s", where);
            }
        }
    }
    return 0;
}

static int frames_of(struct build *B, uint32_t id, bool host, const struct frame_info **out)
{
    /* host and device memory from one stack read alike but for devCommSetup: key both */
    static struct frame_info tmp;
    if (!id || id >= B->t->n_stacks) {
        tmp.purpose = -1;
        tmp.func[0] = tmp.where[0] = 0;
        *out = &tmp;
        return 0;
    }
    uint32_t slot = B->stack_info[id];
    if (!slot) {
        if (gmt_grow((void **)&B->info, &B->cap_info, B->n_info + 2, sizeof *B->info))
            return -ENOMEM;
        int r = stack_frames(B, id, false, &B->info[B->n_info]);
        if (!r)
            r = stack_frames(B, id, true, &B->info[B->n_info + 1]);
        if (r)
            return r;
        B->n_info += 2;
        slot = B->stack_info[id] = (uint32_t)(B->n_info - 1);
    }
    *out = &B->info[slot - 1 + (host ? 1 : 0)];
    return 0;
}

static long top_of(const struct gmt_trace *t, long i)
{
    for (int hops = 0; hops < 64 && i >= 0; hops++) {
        struct gmt_scope tmp;
        const struct gmt_scope *s = gmt_trace_scope(t, (size_t)i, &tmp);
        long p = gmt_trace_parent_index(t, (size_t)i, s);
        if (p < 0 || p == i)
            break;
        i = p;
    }
    return i;
}

static bool is_p2p_op(unsigned op)
{
    return op == GMT_OP_Send || op == GMT_OP_Recv;
}

/* Why scope i (a top scope) allocated: its first call's row says "first", a later call
 * "later"; the communicator and label come from the replay's rows where it has one. */
static int cause_of(struct build *B, long i, const struct cause **out)
{
    const struct gmt_trace *t = B->t;
    const uint64_t *known = gmt_u64map_get(&B->cause_of, (uint64_t)i);
    if (known) {
        *out = &B->causes[*known - 1];
        return 0;
    }
    if (gmt_grow((void **)&B->causes, &B->cap_causes, B->n_causes + 1, sizeof *B->causes))
        return -ENOMEM;
    struct cause *c = &B->causes[B->n_causes];
    memset(c, 0, sizeof *c);
    struct gmt_scope tmp, tm;
    const struct gmt_scope *s = gmt_trace_scope(t, (size_t)i, &tmp);
    c->comm = s->comm;
    bool all_p2p = false, any_member = false;
    if (s->op == GMT_OP_Group) {
        all_p2p = true;
        for (size_t k = (size_t)i + 1; k < t->n_scopes; k++) {
            if (top_of(t, (long)k) != i)
                continue;
            const struct gmt_scope *mbr = gmt_trace_scope(t, k, &tm);
            any_member = true;
            if (!c->comm)
                c->comm = mbr->comm;
            if (!is_p2p_op(mbr->op))
                all_p2p = false;
        }
    }
    const struct gmt_coll_row *row = NULL;
    for (size_t r = 0; r < B->a->rep.n_colls; r++) {
        const struct gmt_coll_row *cr = &B->a->rep.colls[r];
        if (cr->op == s->op && cr->first_time == s->t_begin && (!c->comm || cr->comm == c->comm)) {
            row = cr;
            break;
        }
    }
    char bytes[32];
    if (gmt_op_is_comm_init(s->op)) {
        c->init = true;
        snprintf(c->text, sizeof c->text, "init (%s)", gmt_op_name(s->op));
    } else if (s->op == GMT_OP_MemAlloc || s->op == GMT_OP_CommRegister ||
               s->op == GMT_OP_CommWindowRegister) {
        snprintf(c->text, sizeof c->text, "%s", gmt_op_name(s->op));
    } else if (row) {
        if (!c->comm)
            c->comm = row->comm;
        c->p2p = is_p2p_op(s->op) || (any_member && all_p2p);
        c->first_coll = !c->p2p;
        snprintf(c->text, sizeof c->text, "first %s %s/call", row->label,
                 gmt_fmt_bytes(bytes, sizeof bytes, row->bytes_per_call));
    } else {
        c->p2p = is_p2p_op(s->op) || (any_member && all_p2p);
        snprintf(c->text, sizeof c->text, "later %s", gmt_op_name(s->op));
    }
    if (gmt_u64map_put_new(&B->cause_of, (uint64_t)i, B->n_causes + 1))
        return -ENOMEM;
    B->n_causes++;
    *out = c;
    return 0;
}

static struct gmt_nccl_comm *comm_slot(struct build *B, uint64_t comm)
{
    struct gmt_nccl_model *m = B->m;
    for (size_t i = 0; i < m->n_c; i++)
        if (m->c[i].comm == comm)
            return &m->c[i];
    void *q = realloc(m->c, (m->n_c + 1) * sizeof *m->c);
    if (!q)
        return NULL;
    m->c = q;
    struct gmt_nccl_comm *c = &m->c[m->n_c++];
    memset(c, 0, sizeof *c);
    c->comm = comm;
    c->index = gmt_trace_comm_index(B->t, comm);
    const struct gmt_comm *tc = gmt_trace_comm(B->t, comm);
    c->rank = tc ? tc->rank : -1;
    c->nranks = tc ? tc->nranks : -1;
    c->device = tc ? tc->device : -1;
    return c;
}

static bool counted_kind(unsigned kind, bool *host)
{
    *host = gmt_kind_is_host(kind);
    return *host || gmt_kind_is_device(kind);
}

/* The purpose when NCCL's frames do not say: the API, the call it happened in and the
 * size the model gives the run's settings. */
static int fallback(const struct build *B, const struct gmt_timed_event *e, bool host,
                    const struct gmt_scope *top, const struct cause *c, uint8_t *how)
{
    *how = GMT_NCCL_BY_TIMING;
    if (e->kind == GMT_KIND_NCCL_MEM || e->api == GMT_API_ncclMemAlloc) {
        *how = GMT_NCCL_BY_API;
        return GMT_NCCL_MEMALLOC;
    }
    if (top && (top->op == GMT_OP_CommRegister || top->op == GMT_OP_CommWindowRegister))
        return GMT_NCCL_REG;
    if (host) {
        if (c && c->init && e->bytes == (uint64_t)B->m->set.v[GMT_NCCL_K_WORK_FIFO_BYTES]) {
            *how = GMT_NCCL_BY_SIZE;
            return GMT_NCCL_FIFO;
        }
        return GMT_NCCL_PROXY;
    }
    if (c && c->init)
        return GMT_NCCL_CHANNEL;
    struct gmt_nccl_p2p_sizes z;
    gmt_nccl_p2p_sizes(&B->m->set, &z);
    if (c && B->m->modelled && e->bytes == z.recv) {
        *how = GMT_NCCL_BY_SIZE;
        return GMT_NCCL_RECV;
    }
    if (c && B->m->modelled && e->bytes == z.send) {
        *how = GMT_NCCL_BY_SIZE;
        return GMT_NCCL_SEND;
    }
    return GMT_NCCL_OTHER;
}

static int add_alloc(struct build *B, const struct gmt_timed_event *e)
{
    const struct gmt_trace *t = B->t;
    bool host;
    if (!counted_kind(e->kind, &host))
        return 0;
    /* whose: NCCL's module on the stack, NCCL's own thread, or no stack inside a call */
    long sc = -1;
    if (e->scope)
        sc = gmt_trace_scope_index(t, e->scope);
    if (sc < 0) {
        uint64_t sc_begin = 0;
        struct gmt_scope tmp;
        for (size_t i = 0; i < B->n_open; i++) {
            const struct gmt_scope *s = gmt_trace_scope(t, (size_t)B->open[i], &tmp);
            if (s->tid == e->tid || s->op == GMT_OP_MemFree)
                continue;
            if (s->device >= 0 && e->device >= 0 && s->device != e->device)
                continue;
            if (sc < 0 || s->t_begin >= sc_begin) {
                sc = B->open[i];
                sc_begin = s->t_begin;
            }
        }
    }
    const char *cat = e->stack < t->n_stacks ? B->a->cat_names[B->a->stack_cat[e->stack]]
                                             : GMT_CAT_UNKNOWN;
    const char *tname = gmt_trace_thread_name(t, e->tid);
    bool nccl = e->kind == GMT_KIND_NCCL_MEM || !strcmp(cat, "nccl") || (tname && !strncmp(tname, "NCCL", 4)) ||
                (sc >= 0 && (!strcmp(cat, GMT_CAT_UNKNOWN) || !e->stack));
    if (!nccl)
        return 0;
    long top = sc >= 0 ? top_of(t, sc) : -1;
    const struct cause *c = NULL;
    if (top >= 0 && cause_of(B, top, &c))
        return -ENOMEM;
    const struct frame_info *fi;
    if (frames_of(B, e->stack, host, &fi))
        return -ENOMEM;
    uint8_t how = GMT_NCCL_BY_STACK;
    int purpose = fi->purpose;
    struct gmt_scope top_tmp;
    if (purpose >= 0)
        B->m->symbols = true;
    else
        purpose = fallback(B, e, host, top >= 0 ? gmt_trace_scope(t, (size_t)top, &top_tmp) : NULL,
                           c, &how);
    uint64_t comm = c ? c->comm : 0;
    struct gmt_nccl_comm *cm = comm_slot(B, comm);
    if (!cm)
        return -ENOMEM;
    const char *cause = c ? c->text : "outside NCCL calls";
    struct gmt_nccl_group *g = NULL;
    for (size_t i = 0; i < cm->n_g; i++) {
        struct gmt_nccl_group *x = &cm->g[i];
        if (x->purpose == purpose && x->how == how && x->host == host && x->each == e->bytes &&
            !strcmp(x->cause, cause) && !strcmp(x->func, fi->func) && !strcmp(x->where, fi->where)) {
            g = x;
            break;
        }
    }
    if (!g) {
        if (gmt_grow((void **)&cm->g, &cm->cap_g, cm->n_g + 1, sizeof *cm->g))
            return -ENOMEM;
        g = &cm->g[cm->n_g++];
        memset(g, 0, sizeof *g);
        g->purpose = (uint8_t)purpose;
        g->how = how;
        g->host = host;
        g->each = e->bytes;
        g->first_coll = c && c->first_coll;
        g->p2p = c && c->p2p;
        snprintf(g->cause, sizeof g->cause, "%s", cause);
        snprintf(g->func, sizeof g->func, "%s", fi->func);
        snprintf(g->where, sizeof g->where, "%s", fi->where);
    }
    g->count++;
    g->bytes += e->bytes;
    cm->allocs++;
    if (host)
        cm->host_bytes += e->bytes;
    else
        cm->dev_bytes += e->bytes;
    cm->by_purpose[purpose] += e->bytes;
    if (!host && e->kind != GMT_KIND_PHYSICAL && e->kind != GMT_KIND_NCCL_MEM)
        B->m->cumem = false;
    return 0;
}

/* The channel structures and device comm at init, without frames to tell them apart:
 * NCCL 2.28 makes 3 small allocations per channel and 2 for the device comm, each its
 * own buffer; a count of that form is read so (a count of another form is left alone). */
static void guess_init_channels(struct gmt_nccl_comm *c)
{
    uint64_t n = 0, each = 0;
    for (size_t i = 0; i < c->n_g; i++) {
        const struct gmt_nccl_group *g = &c->g[i];
        if (g->purpose != GMT_NCCL_CHANNEL || g->host)
            continue;
        if (g->how == GMT_NCCL_BY_STACK || (each && g->each != each))
            return;
        each = g->each;
        n += g->count;
    }
    if (n > 2 && (n - 2) % 3 == 0 && (n - 2) / 3 <= MAXCHANNELS) {
        c->init_channels = (int)((n - 2) / 3);
        c->init_guessed = true;
    }
}

static void implied_counts(struct gmt_nccl_comm *c)
{
    for (size_t i = 0; i < c->n_g; i++) {
        const struct gmt_nccl_group *g = &c->g[i];
        if (g->purpose == GMT_NCCL_CHANNEL && g->how == GMT_NCCL_BY_STACK &&
            (int)g->count > c->init_channels)
            c->init_channels = (int)g->count;
        if (g->purpose == GMT_NCCL_RECV && g->first_coll && (int)g->count > c->coll_channels) {
            c->coll_channels = (int)g->count;
            c->recv_each = g->each;
        }
        if (g->purpose == GMT_NCCL_SEND && g->first_coll && !c->send_each)
            c->send_each = g->each;
    }
    if (!c->init_channels)
        guess_init_channels(c);
}

int gmt_nccl_model_build(const struct gmt_analysis *a, struct gmt_nccl_model *m)
{
    memset(m, 0, sizeof *m);
    const struct gmt_trace *t = &a->t;
    m->version = t->version[GMT_COMP_NCCL];
    m->modelled = gmt_nccl_version_modelled(m->version);
    m->cumem = true;
    gmt_nccl_settings_of(t, &m->set);
    struct build B = {.a = a, .t = t, .m = m};
    B.stack_info = calloc(t->n_stacks ? t->n_stacks : 1, sizeof *B.stack_info);
    gmt_u64map_init(&B.cause_of);
    struct gmt_trace_iter *it = gmt_trace_iter_new(t);
    int rc = 0;
    if (!B.stack_info || !it) {
        rc = -ENOMEM;
        goto out;
    }
    struct gmt_timed_event ev[256];
    size_t n;
    while (!rc && (n = gmt_trace_iter_next(it, ev, 256)) > 0) {
        for (size_t i = 0; i < n && !rc; i++) {
            const struct gmt_timed_event *e = &ev[i];
            if (e->type == GMT_EV_SCOPE_BEGIN) {
                rc = gmt_grow((void **)&B.open, &B.cap_open, B.n_open + 1, sizeof *B.open);
                if (!rc)
                    B.open[B.n_open++] = (int32_t)e->scope;
            } else if (e->type == GMT_EV_SCOPE_END) {
                for (size_t k = B.n_open; k-- > 0;)
                    if (B.open[k] == (int32_t)e->scope) {
                        B.open[k] = B.open[--B.n_open];
                        break;
                    }
            } else if (e->type == GMT_EV_ALLOC) {
                rc = add_alloc(&B, e);
            }
        }
    }
    for (size_t i = 0; i < m->n_c; i++) {
        if (m->modelled)
            implied_counts(&m->c[i]);
        m->dev_bytes += m->c[i].dev_bytes;
        m->host_bytes += m->c[i].host_bytes;
    }
    if (!m->n_c)
        m->cumem = false;
    gmt_nccl_p2p_sizes(&m->set, &m->p2p);
    m->n_savings = gmt_nccl_savings(m, m->savings, GMT_NCCL_MAX_SAVINGS);
out:
    if (it)
        gmt_trace_iter_free(it);
    free(B.open);
    free(B.stack_info);
    free(B.info);
    gmt_u64map_free(&B.cause_of);
    free(B.causes);
    if (rc)
        gmt_nccl_model_free(m);
    return rc;
}

void gmt_nccl_model_free(struct gmt_nccl_model *m)
{
    for (size_t i = 0; i < m->n_c; i++)
        free(m->c[i].g);
    free(m->c);
    m->c = NULL;
    m->n_c = 0;
}

/* ------------------------------------------------------------------------- prediction */

/* The channels NCCL would use under `to`, given that it used `now` under `from`: NCCL
 * picks a count from the topology and then clamps it to [MIN, MAX]. *assumed: the
 * answer rests on the topology's count, which the trace does not show. */
static int channels_under(int now, const struct gmt_nccl_settings *from,
                          const struct gmt_nccl_settings *to, bool *assumed)
{
    int64_t fmax = from->v[GMT_NCCL_K_MAX_NCHANNELS], tmax = to->v[GMT_NCCL_K_MAX_NCHANNELS];
    int64_t fmin = from->v[GMT_NCCL_K_MIN_NCHANNELS], tmin = to->v[GMT_NCCL_K_MIN_NCHANNELS];
    int64_t n = now;
    /* a bound that held the run's count back may have hidden a larger natural count */
    if ((fmax > 0 && now == fmax && (tmax < 0 || tmax > fmax)) ||
        (fmin > 0 && now == fmin && (tmin < 0 || tmin < fmin)))
        *assumed = true;
    if (tmin > 0 && n < tmin)
        n = tmin;
    if (tmax > 0 && n > tmax)
        n = tmax;
    return (int)n;
}

void gmt_nccl_predict(const struct gmt_nccl_model *m, const struct gmt_nccl_comm *c,
                      const struct gmt_nccl_settings *to, struct gmt_nccl_prediction *p)
{
    memset(p, 0, sizeof *p);
    if (!m->modelled) {
        p->dev_bytes = c->dev_bytes;
        p->host_bytes = c->host_bytes;
        memcpy(p->by_purpose, c->by_purpose, sizeof p->by_purpose);
        p->confidence = "observed";
        snprintf(p->note, sizeof p->note, "no model for this NCCL version: the run's figures");
        return;
    }
    struct gmt_nccl_p2p_sizes was, will;
    gmt_nccl_p2p_sizes(&m->set, &was);
    gmt_nccl_p2p_sizes(to, &will);
    bool assumed = false, disagree = false, guessed_done = false;
    bool chans_change = to->v[GMT_NCCL_K_MIN_NCHANNELS] != m->set.v[GMT_NCCL_K_MIN_NCHANNELS] ||
                        to->v[GMT_NCCL_K_MAX_NCHANNELS] != m->set.v[GMT_NCCL_K_MAX_NCHANNELS];
    int ch_coll = c->coll_channels, ch_init = c->init_channels;
    int new_coll = ch_coll ? channels_under(ch_coll, &m->set, to, &assumed) : 0;
    int new_init = ch_init ? channels_under(ch_init, &m->set, to, &assumed) : 0;
    int64_t tp2p = to->v[GMT_NCCL_K_MAX_P2P_NCHANNELS], fp2p = m->set.v[GMT_NCCL_K_MAX_P2P_NCHANNELS];
    if (tp2p != fp2p)
        assumed = true; /* send/recv channels: per peer, from the P2P schedule */
    for (size_t i = 0; i < c->n_g; i++) {
        const struct gmt_nccl_group *g = &c->g[i];
        uint64_t count = g->count, each = g->each;
        switch (g->purpose) {
        case GMT_NCCL_CHANNEL:
            if (ch_init && g->how == GMT_NCCL_BY_STACK) {
                count = g->count * (uint64_t)new_init / (uint64_t)ch_init;
            } else if (g->how != GMT_NCCL_BY_STACK && !g->host && c->init_guessed) {
                /* 3 per channel and 2 more, over all such groups: charged once, here */
                if (!guessed_done)
                    count = 3 * (uint64_t)new_init + 2;
                else
                    count = 0;
                guessed_done = true;
                if (new_init != ch_init)
                    assumed = true;
            } else if (g->how != GMT_NCCL_BY_STACK && chans_change) {
                assumed = true; /* structures at init with no frames to count channels by */
            }
            break;
        case GMT_NCCL_RECV:
        case GMT_NCCL_SEND: {
            bool recv = g->purpose == GMT_NCCL_RECV;
            uint64_t model_was = recv ? was.recv : was.send, model_will = recv ? will.recv : will.send;
            if (!g->host && each == model_was)
                each = model_will;
            else if (!g->host && model_will != model_was) {
                disagree = true;
                each = (uint64_t)((int64_t)each + (int64_t)model_will - (int64_t)model_was);
            }
            if (g->first_coll && ch_coll)
                count = g->count * (uint64_t)new_coll / (uint64_t)ch_coll;
            else if (g->p2p && ch_coll)
                count = g->count * (uint64_t)new_coll / (uint64_t)ch_coll;
            break;
        }
        case GMT_NCCL_FIFO:
            if (each == (uint64_t)m->set.v[GMT_NCCL_K_WORK_FIFO_BYTES])
                each = (uint64_t)to->v[GMT_NCCL_K_WORK_FIFO_BYTES];
            break;
        default:
            break;
        }
        uint64_t bytes = count * each;
        if (g->host)
            p->host_bytes += bytes;
        else
            p->dev_bytes += bytes;
        p->by_purpose[g->purpose] += bytes;
    }
    if (disagree) {
        p->confidence = "low";
        snprintf(p->note, sizeof p->note, "transport buffers of sizes the model does not give "
                 "these settings: scaled from the run's");
    } else if (assumed) {
        p->confidence = "likely";
        snprintf(p->note, sizeof p->note, "channel counts NCCL picks from the topology "
                 "assumed unchanged within the new bounds");
    } else {
        p->confidence = "exact";
        snprintf(p->note, sizeof p->note, "NCCL's sizing rule applied to the run's buffers");
    }
}

/* Candidate settings, their cost as NCCL's documentation of the variables gives it. */
size_t gmt_nccl_savings(const struct gmt_nccl_model *m, struct gmt_nccl_saving *out, size_t max)
{
    if (!m->modelled || !m->n_c)
        return 0;
    int chans = 0;
    for (size_t i = 0; i < m->n_c; i++) {
        if (m->c[i].coll_channels > chans)
            chans = m->c[i].coll_channels;
        if (m->c[i].init_channels > chans)
            chans = m->c[i].init_channels;
    }
    struct {
        int knob;
        int64_t value;
        const char *cost;
    } cand[3] = {
        {GMT_NCCL_K_BUFFSIZE, 1 << 20,
         "smaller Simple-protocol buffer per peer: less data in flight, lower bandwidth on large messages"},
        {GMT_NCCL_K_MAX_NCHANNELS, chans > 1 ? chans / 2 : 1,
         "fewer channels (CUDA blocks) per collective: lower peak bandwidth, fewer SMs taken"},
        {GMT_NCCL_K_LL128_BUFFSIZE, 1228800,
         "smaller LL128 buffer: fewer LL128 steps in flight, slower medium-size messages"},
    };
    struct gmt_nccl_saving tmp[3];
    size_t n = 0;
    for (size_t k = 0; k < 3; k++) {
        if (m->set.v[cand[k].knob] >= 0 && m->set.v[cand[k].knob] <= cand[k].value)
            continue;
        if (cand[k].knob == GMT_NCCL_K_MAX_NCHANNELS && chans <= 1)
            continue;
        struct gmt_nccl_settings to = m->set;
        to.v[cand[k].knob] = cand[k].value;
        to.set |= 1u << cand[k].knob;
        uint64_t saves = 0;
        for (size_t i = 0; i < m->n_c; i++) {
            struct gmt_nccl_prediction p;
            gmt_nccl_predict(m, &m->c[i], &to, &p);
            uint64_t now = m->c[i].dev_bytes;
            if (p.dev_bytes < now)
                saves += now - p.dev_bytes;
        }
        if (!saves)
            continue;
        snprintf(tmp[n].setting, sizeof tmp[n].setting, "%s=%" PRId64, knob_names[cand[k].knob],
                 cand[k].value);
        tmp[n].saves = saves;
        tmp[n].cost = cand[k].cost;
        n++;
    }
    /* best first */
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (tmp[j].saves > tmp[i].saves) {
                struct gmt_nccl_saving x = tmp[i];
                tmp[i] = tmp[j];
                tmp[j] = x;
            }
    if (n > max)
        n = max;
    memcpy(out, tmp, n * sizeof *out);
    return n;
}
