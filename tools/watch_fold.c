/* watch_fold.c: what a followed trace's records add up to: metadata, categories, open calls and steps as records arrive, allocations and samples queued. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "category.h"
#include "reader.h"
#include "symbolize.h"
#include "trace.h"
#include "util.h"
#include "watch.h"

#define ENV_MAX 4096           /* environment strings kept from a trace */
#define COMMS_MAX 4096         /* communicators kept from a trace */
#define STEPS_OPEN_MAX 4096    /* step ranges started and not ended, kept from a trace */

void gmt_watch_fold_reset(struct gmt_watch_trace *w)
{
    size_t off = offsetof(struct gmt_watch_trace, has_proc);
    memset((char *)w + off, 0, sizeof *w - off);
    w->rank = w->world_size = -1;
    w->nccl_cat = -1;
    w->live.dense = true; /* a thousand traces' live sets: half the memory, and half the
                           * pages a first refresh faults in */
    gmt_u64map_init(&w->stack_cat);
    gmt_u64map_init(&w->thread_of);
    gmt_u64map_init(&w->step_names);
    gmt_u64map_init(&w->step_ranges);
    w->cat_names[0] = GMT_CAT_USER; /* index 0, as summary has it */
    w->n_cats = 1;
}

void gmt_watch_fold_free(struct gmt_watch_trace *w)
{
    free(w->host);
    free(w->job_id);
    for (size_t i = 0; i < w->n_env; i++)
        free(w->env[i]);
    free(w->env);
    if (w->sym)
        gmt_sym_free(w->sym);
    gmt_u64map_free(&w->stack_cat);
    gmt_u64map_free(&w->thread_of);
    gmt_u64map_free(&w->step_names);
    gmt_u64map_free(&w->step_ranges);
    free(w->live.s);
    free(w->open);
    free(w->comms);
    free(w->threads);
    free(w->q);
    w->host = w->job_id = NULL;
    w->env = NULL;
    w->sym = NULL;
    w->live.s = NULL;
    w->open = NULL;
    w->comms = NULL;
    w->threads = NULL;
    w->q = NULL;
}

int gmt_watch_cat_index(struct gmt_watch_trace *w, const char *name)
{
    for (size_t i = 0; i < w->n_cats; i++)
        if (!strcmp(w->cat_names[i], name))
            return (int)i;
    if (w->n_cats == GMT_MAX_CATS)
        return 0;
    w->cat_names[w->n_cats] = name;
    if (!strcmp(name, "nccl"))
        w->nccl_cat = (int)w->n_cats;
    return (int)w->n_cats++;
}

/* The thread's state, made at its first record; NULL out of memory. */
static struct gmt_watch_thread *thread_of(struct gmt_watch_trace *w, uint32_t tid)
{
    uint64_t *i = gmt_u64map_get(&w->thread_of, tid);
    if (i)
        return &w->threads[*i];
    struct gmt_watch_thread *t = gmt_array_push((void **)&w->threads, &w->n_threads,
                                                &w->cap_threads, sizeof *t);
    if (!t)
        return NULL;
    if (gmt_u64map_put(&w->thread_of, tid, w->n_threads - 1)) {
        w->n_threads--;
        return NULL;
    }
    t->tid = tid;
    t->device = -1;
    return t;
}

static int16_t thread_device(struct gmt_watch_trace *w, uint32_t tid)
{
    if (w->last_thread && w->last_tid == tid)
        return w->threads[w->last_thread - 1].device;
    uint64_t *i = gmt_u64map_get(&w->thread_of, tid);
    if (!i)
        return -1;
    w->last_tid = tid;
    w->last_thread = (size_t)*i + 1;
    return w->threads[*i].device;
}

/* A new event at the queue's end, zeroed but for its type, time and seq; NULL out of
 * memory. One per allocation or free: the push is inline, growth apart. */
static int queue_grow(struct gmt_watch_trace *w)
{
    size_t cap = w->cap_q ? w->cap_q * 2 : 64;
    struct gmt_watch_ev *q = realloc(w->q, cap * sizeof *q);
    if (!q)
        return -ENOMEM;
    w->q = q;
    w->cap_q = cap;
    return 0;
}

static inline struct gmt_watch_ev *queue(struct gmt_watch_trace *w, uint8_t type, uint64_t time)
{
    if (w->n_q == w->cap_q && queue_grow(w))
        return NULL;
    struct gmt_watch_ev *e = &w->q[w->n_q++];
    *e = (struct gmt_watch_ev){.time = time, .seq = w->seq++, .type = type};
    return e;
}

/* ---- metadata ---- */

static int fold_process(struct gmt_watch_trace *w, const struct gmt_rec_process *p)
{
    if (w->has_proc)
        return 0;
    w->has_proc = true;
    w->pid = p->pid;
    w->rank = p->rank;
    w->world_size = p->world_size;
    w->realtime_ns = p->realtime_ns;
    w->monotonic_ns = p->monotonic_ns;
    return (w->host = strdup(gmt_process_host(p))) ? 0 : -ENOMEM;
}

static int fold_env(struct gmt_watch_trace *w, const struct gmt_rec_env *e)
{
    const char *s = gmt_env_strings(e);
    for (uint32_t i = 0; i < e->count && w->n_env < ENV_MAX; i++) {
        char **env = realloc(w->env, (w->n_env + 1) * sizeof *env);
        if (!env)
            return -ENOMEM;
        w->env = env;
        if (!(env[w->n_env] = strdup(s)))
            return -ENOMEM;
        w->n_env++;
        s += strlen(s) + 1;
    }
    for (size_t i = 0; i < w->n_env; i++) {
        long ms;
        if (!strncmp(w->env[i], "GPUMEMTRACE_FLUSH_MS=", 21) &&
            !gmt_cli_long(w->env[i] + 21, 1, 3600000, &ms))
            w->hold_ns = 4 * (uint64_t)ms * 1000000;
    }
    char id[256];
    const char *j = gmt_env_job_id(w->env, w->n_env, id, sizeof id);
    free(w->job_id);
    w->job_id = NULL;
    return j && !(w->job_id = strdup(j)) ? -ENOMEM : 0;
}

static struct gmt_symbolizer *sym_of(struct gmt_watch_trace *w)
{
    if (!w->sym && (w->sym = gmt_sym_new(NULL)))
        gmt_sym_set_offline(w->sym, true); /* only the module map: no file is opened */
    return w->sym;
}

/* A stack's category, from the modules loaded so far (as summary takes it). */
static int fold_stack(const struct gmt_watch_ctx *C, struct gmt_watch_trace *w,
                      const struct gmt_rec_stack *s)
{
    struct gmt_symbolizer *sym = sym_of(w);
    if (!sym)
        return -ENOMEM;
    if (gmt_u64map_get(&w->stack_cat, s->stack_id))
        return 0;
    const char *name = gmt_cat_of_stack(C->cats, sym, s->ip, s->depth);
    return gmt_u64map_put(&w->stack_cat, s->stack_id, (uint64_t)gmt_watch_cat_index(w, name));
}

const struct gmt_watch_comm *gmt_watch_comm_of(const struct gmt_watch_trace *w, uint64_t comm)
{
    for (size_t i = 0; comm && i < w->n_comms; i++)
        if (w->comms[i].comm == comm)
            return &w->comms[i];
    return NULL;
}

static int fold_comm(struct gmt_watch_trace *w, const struct gmt_rec_comm *c)
{
    if (gmt_watch_comm_of(w, c->comm) || w->n_comms == COMMS_MAX)
        return 0;
    struct gmt_watch_comm *k = gmt_array_push((void **)&w->comms, &w->n_comms, &w->cap_comms,
                                              sizeof *k);
    if (!k)
        return -ENOMEM;
    *k = (struct gmt_watch_comm){c->comm, c->rank, c->nranks, c->device};
    return 0;
}

/* ---- NCCL calls open now ---- */

static struct gmt_watch_call *call_find(struct gmt_watch_trace *w, uint32_t tid, uint32_t id)
{
    for (size_t i = 0; i < w->n_open; i++)
        if (w->open[i].tid == tid && w->open[i].id == id)
            return &w->open[i];
    return NULL;
}

static int call_open(struct gmt_watch_trace *w, const struct gmt_watch_call *c)
{
    if (call_find(w, c->tid, c->id) || w->n_open == GMT_WATCH_OPEN_MAX)
        return 0;
    struct gmt_watch_call *n = gmt_array_push((void **)&w->open, &w->n_open, &w->cap_open,
                                              sizeof *n);
    if (!n)
        return -ENOMEM;
    *n = *c;
    struct gmt_watch_call *p = c->parent ? call_find(w, c->tid, c->parent) : NULL;
    if (p && p->op == GMT_OP_Group && !p->member_op && c->op != GMT_OP_Group)
        p->member_op = c->op;
    return 0;
}

/* The call `id` of thread tid returned; so did every call it made (their ids are larger:
 * ids increase along a thread). */
static int call_end(struct gmt_watch_trace *w, uint32_t tid, uint32_t id, uint16_t op)
{
    struct gmt_watch_thread *t = thread_of(w, tid);
    if (!t)
        return -ENOMEM;
    if (id > t->max_ended)
        t->max_ended = id;
    if (op < GMT_OP_MAX)
        w->calls[op]++;
    for (size_t i = 0; i < w->n_open;) {
        struct gmt_watch_call *c = &w->open[i];
        if (c->tid != tid || c->id < id) {
            i++;
            continue;
        }
        if (c->id == id && c->op == GMT_OP_Group)
            t->last_group_op = c->member_op;
        *c = w->open[--w->n_open];
    }
    return 0;
}

/* A call another thread noted as open: restored unless its end was read already. */
static int call_noted(struct gmt_watch_trace *w, const struct gmt_rec_scope_open *o)
{
    struct gmt_watch_thread *t = thread_of(w, o->tid);
    if (!t)
        return -ENOMEM;
    if (o->scope_id <= t->max_ended)
        return 0;
    struct gmt_watch_call c = {.comm = o->comm, .begin = o->time_ns, .tid = o->tid,
                               .id = o->scope_id, .op = o->h.aux};
    return call_open(w, &c);
}

static int fold_scope(struct gmt_watch_trace *w, const struct gmt_event *ev)
{
    const struct gmt_rec *h = ev->rec;
    if (h->type == GMT_REC_SCOPE_BEGIN) {
        const struct gmt_rec_scope_begin *b = (const void *)h;
        struct gmt_watch_call c = {.comm = b->comm, .begin = ev->time_ns, .tid = ev->tid,
                                   .id = b->scope_id, .parent = b->parent_id, .op = h->aux};
        return call_open(w, &c);
    }
    if (h->type == GMT_REC_SCOPE_END)
        return call_end(w, ev->tid, ((const struct gmt_rec_scope_end *)(const void *)h)->scope_id,
                        h->aux);
    if (h->type == GMT_REC_SCOPE_OPEN)
        return call_noted(w, (const void *)h);
    /* GROUP_REPEAT: the open group has the members of an earlier one */
    const struct gmt_rec_group_repeat *g = (const void *)h;
    struct gmt_watch_call *c = call_find(w, ev->tid, g->scope_id);
    struct gmt_watch_thread *t = thread_of(w, ev->tid);
    if (!t)
        return -ENOMEM;
    if (c && !c->member_op)
        c->member_op = t->last_group_op;
    return 0;
}

/* ---- steps (NVTX ranges whose name is a step's) ---- */

static int fold_nvtx(const struct gmt_watch_ctx *C, struct gmt_watch_trace *w,
                     const struct gmt_event *ev)
{
    const struct gmt_rec *h = ev->rec;
    if (!C->has_step_re)
        return 0;
    if (h->type == GMT_REC_NVTX_STRING) {
        const struct gmt_rec_nvtx_string *s = (const void *)h;
        if (h->aux == GMT_NVTX_STR_NAME &&
            regexec(&C->step_re, (const char *)(s + 1), 0, NULL, 0) == 0)
            return gmt_u64map_put(&w->step_names, s->id, 1);
        return 0;
    }
    const struct gmt_rec_nvtx_range *r = (const void *)h;
    bool step = r->name && gmt_u64map_get(&w->step_names, r->name);
    uint64_t range_id = h->size >= sizeof(struct gmt_rec_nvtx_range_ext)
                            ? ((const struct gmt_rec_nvtx_range_ext *)(const void *)h)->range_id
                            : 0;
    bool ended = false;
    if (h->aux == GMT_NVTX_START && step && range_id) {
        if (w->step_ranges.used >= STEPS_OPEN_MAX)
            return 0;
        return gmt_u64map_put(&w->step_ranges, range_id, 1);
    }
    if (h->aux == GMT_NVTX_POP)
        ended = step;
    else if (h->aux == GMT_NVTX_END && range_id)
        ended = gmt_u64map_del(&w->step_ranges, range_id);
    if (ended && !queue(w, GMT_WEV_STEP, r->time_ns))
        return -ENOMEM;
    return 0;
}

/* ---- allocations, frees, failures, samples: queued ---- */

static int fold_memory(struct gmt_watch_trace *w, const struct gmt_event *ev)
{
    const struct gmt_rec *h = ev->rec;
    const void *p = h;
    bool graph = h->type == GMT_REC_GRAPHMEM;
    struct gmt_watch_ev *e = queue(w, 0, graph ? ((const struct gmt_rec_graphmem *)p)->time_ns
                                               : ev->time_ns);
    if (!e)
        return -ENOMEM;
    e->tid = ev->tid;
    e->device = thread_device(w, ev->tid);
    switch (h->type) {
    case GMT_REC_GRAPHMEM: {
        const struct gmt_rec_graphmem *g = p;
        e->type = GMT_WEV_GRAPH;
        e->device = (int16_t)g->device;
        e->bytes = g->reserved_current;
        break;
    }
    case GMT_REC_ALLOC: {
        const struct gmt_rec_alloc *a = p;
        e->type = GMT_WEV_ALLOC;
        e->addr = a->address;
        e->bytes = a->bytes;
        e->stack = a->stack_id;
        e->api = h->aux;
        e->kind = a->kind;
        if (a->device >= 0)
            e->device = a->device;
        break;
    }
    case GMT_REC_ALLOC_SMALL: {
        const struct gmt_rec_alloc_small *a = p;
        e->type = GMT_WEV_ALLOC;
        e->addr = a->address;
        e->bytes = a->bytes;
        e->stack = a->stack_id;
        e->api = (uint16_t)GMT_SMALL_API(h->aux);
        e->kind = (uint8_t)GMT_SMALL_KIND(h->aux);
        break;
    }
    case GMT_REC_FREE:
        e->type = GMT_WEV_FREE;
        e->addr = ((const struct gmt_rec_free *)p)->address;
        e->api = h->aux;
        break;
    case GMT_REC_ALLOC_FAIL: {
        const struct gmt_rec_alloc_fail *f = p;
        e->type = GMT_WEV_FAIL;
        e->bytes = f->bytes;
        e->stack = f->stack_id;
        e->error = f->error;
        e->api = h->aux;
        e->kind = f->kind;
        if (f->device >= 0)
            e->device = f->device;
        break;
    }
    default: { /* MEMINFO */
        const struct gmt_rec_meminfo *m = p;
        e->type = GMT_WEV_MEMINFO;
        e->addr = m->free_bytes;
        e->bytes = m->total_bytes;
        e->device = (int16_t)m->device;
        e->api = (uint16_t)m->source;
        e->kind = (uint8_t)h->aux;
        break;
    }
    }
    return 0;
}

int gmt_watch_fold(const struct gmt_watch_ctx *C, struct gmt_watch_trace *w,
                   const struct gmt_event *ev)
{
    const struct gmt_rec *h = ev->rec;
    switch (h->type) {
    case GMT_REC_PROCESS:
        return fold_process(w, (const void *)h);
    case GMT_REC_ENV:
        return fold_env(w, (const void *)h);
    case GMT_REC_VERSION:
        if (h->aux < 4)
            w->version[h->aux] = ((const struct gmt_rec_version *)(const void *)h)->version;
        return 0;
    case GMT_REC_MODULE_LOAD: {
        struct gmt_symbolizer *s = sym_of(w);
        if (!s)
            return -ENOMEM;
        return gmt_sym_add_module_rec(s, h) == -ENOMEM ? -ENOMEM : 0;
    }
    case GMT_REC_CUCTX: {
        struct gmt_watch_thread *t = thread_of(w, ev->tid);
        if (!t)
            return -ENOMEM;
        t->device = (int16_t)((const struct gmt_rec_cuctx *)(const void *)h)->device;
        return 0;
    }
    case GMT_REC_STACK:
        return fold_stack(C, w, (const void *)h);
    case GMT_REC_COMM:
        return fold_comm(w, (const void *)h);
    case GMT_REC_ALLOC: case GMT_REC_ALLOC_SMALL: case GMT_REC_FREE: case GMT_REC_ALLOC_FAIL:
    case GMT_REC_MEMINFO: case GMT_REC_GRAPHMEM:
        return fold_memory(w, ev);
    case GMT_REC_SCOPE_BEGIN: case GMT_REC_SCOPE_END: case GMT_REC_SCOPE_OPEN:
    case GMT_REC_GROUP_REPEAT:
        return fold_scope(w, ev);
    case GMT_REC_NVTX_STRING: case GMT_REC_NVTX_RANGE:
        return fold_nvtx(C, w, ev);
    case GMT_REC_END:
        w->complete = true;
        w->t_end = ev->time_ns;
        return 0;
    }
    return 0;
}
