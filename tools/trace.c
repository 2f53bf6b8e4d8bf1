/* trace.c: loads a whole trace: metadata tables, scopes, and events sorted by time. */
#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "u64map.h"

#define MAX_STACK_ID (1u << 24) /* ids are dense from 1; a larger one is a corrupt file */

/* Appends one element to a growable array; returns the new slot or NULL. */
static void *push(void **arr, size_t *n, size_t *cap, size_t elem)
{
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        void *p = realloc(*arr, ncap * elem);
        if (!p)
            return NULL;
        *arr = p;
        *cap = ncap;
    }
    void *slot = (char *)*arr + (*n)++ * elem;
    memset(slot, 0, elem);
    return slot;
}

struct loader {
    struct gmt_trace *t;
    size_t cap_env, cap_mod, cap_thr, cap_comm, cap_scope, cap_ev;
    struct gmt_u64map tid_device;   /* tid -> device of its current CUDA context + 1 */
    uint64_t seq;
};

static char *dupn(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

static int thread_device(struct loader *L, uint32_t tid)
{
    uint64_t *v = gmt_u64map_get(&L->tid_device, tid);
    return v ? (int)*v - 1 : -1;
}

static struct gmt_ev *new_event(struct loader *L, const struct gmt_event *e, uint8_t type)
{
    struct gmt_trace *t = L->t;
    struct gmt_ev *ev = push((void **)&t->events, &t->n_events, &L->cap_ev, sizeof *ev);
    if (!ev)
        return NULL;
    ev->time = e->time_ns;
    ev->tid = e->tid;
    ev->type = type;
    ev->device = (int16_t)thread_device(L, e->tid);
    return ev;
}

static int on_process(struct loader *L, const struct gmt_rec *r)
{
    struct gmt_trace *t = L->t;
    const struct gmt_rec_process *p = (const void *)r;
    t->proc = *p;
    t->has_proc = true;
    const char *s = (const char *)(p + 1);
    size_t room = r->size - sizeof *p;
    size_t hl = p->host_len <= room ? p->host_len : room;
    t->host = dupn(s, hl ? strnlen(s, hl) : 0);
    size_t cl = p->cmdline_len <= room - hl ? p->cmdline_len : room - hl;
    char *c = dupn(s + hl, cl);
    if (!t->host || !c)
        return -ENOMEM;
    /* arguments are NUL-separated: join them with spaces, drop the final NUL */
    while (cl > 0 && c[cl - 1] == 0)
        cl--;
    for (size_t i = 0; i < cl; i++)
        if (c[i] == 0)
            c[i] = ' ';
    c[cl] = 0;
    t->cmdline = c;
    return 0;
}

static int on_env(struct loader *L, const struct gmt_rec *r)
{
    struct gmt_trace *t = L->t;
    const struct gmt_rec_env *e = (const void *)r;
    const char *s = (const char *)(e + 1), *end = (const char *)r + r->size;
    if (e->bytes <= (size_t)(end - s))
        end = s + e->bytes;
    while (s < end && *s) {
        size_t n = strnlen(s, (size_t)(end - s));
        char **slot = push((void **)&t->env, &t->n_env, &L->cap_env, sizeof *slot);
        if (!slot || !(*slot = dupn(s, n)))
            return -ENOMEM;
        s += n + 1;
    }
    return 0;
}

static int on_module(struct loader *L, const struct gmt_event *e)
{
    struct gmt_trace *t = L->t;
    const struct gmt_rec_module_load *m = (const void *)e->rec;
    struct gmt_module *mod = push((void **)&t->modules, &t->n_modules, &L->cap_mod, sizeof *mod);
    if (!mod)
        return -ENOMEM;
    const char *p = (const char *)(m + 1);
    size_t room = e->rec->size - sizeof *m;
    size_t bl = m->build_id_len <= room ? m->build_id_len : room;
    mod->id = m->module_id;
    mod->build_id = (uint8_t *)dupn(p, bl);
    mod->build_id_len = (uint32_t)bl;
    size_t pl = m->path_len <= room - bl ? m->path_len : room - bl;
    mod->path = dupn(p + bl, strnlen(p + bl, pl));
    mod->bias = m->load_bias;
    mod->start = m->start;
    mod->end = m->end;
    mod->t_load = m->time_ns;
    return mod->path && mod->build_id ? 0 : -ENOMEM;
}

static int on_stack(struct loader *L, const struct gmt_rec *r, char *err, size_t errlen,
                    uint64_t off)
{
    struct gmt_trace *t = L->t;
    const struct gmt_rec_stack *s = (const void *)r;
    if (s->stack_id == 0 || s->stack_id >= MAX_STACK_ID) {
        snprintf(err, errlen, "%s: offset %llu: stack id %u out of range", t->path,
                 (unsigned long long)off, s->stack_id);
        return -EINVAL;
    }
    if (s->stack_id >= t->n_stacks) {
        size_t n = t->n_stacks ? t->n_stacks : 64;
        while (n <= s->stack_id)
            n *= 2;
        struct gmt_stack *p = realloc(t->stacks, n * sizeof *p);
        if (!p)
            return -ENOMEM;
        memset(p + t->n_stacks, 0, (n - t->n_stacks) * sizeof *p);
        t->stacks = p;
        t->n_stacks = n;
    }
    struct gmt_stack *st = &t->stacks[s->stack_id];
    if (st->ip)
        return 0; /* defined twice: keep the first */
    uint32_t depth = s->depth;
    if ((size_t)depth > (r->size - sizeof *s) / 8)
        depth = (uint32_t)((r->size - sizeof *s) / 8);
    st->ip = malloc((depth ? depth : 1) * sizeof(uint64_t));
    if (!st->ip)
        return -ENOMEM;
    memcpy(st->ip, s->ip, depth * sizeof(uint64_t));
    st->depth = depth;
    return 0;
}

/* Scope ids are dense from 1 (the library draws them from one counter), and every event
 * of a trace looks its scope up: an array answers with one load where the hash map took
 * three cache misses. Ids far beyond the scopes seen (a corrupt or odd file) stay in the
 * map only, so the array never grows past a few times the number of scopes. */
static int dense_put(struct gmt_trace *t, uint32_t id, size_t idx)
{
    if (idx >= UINT32_MAX)
        return 0;
    if (id >= t->n_scope_dense) {
        if ((uint64_t)id > 4 * (uint64_t)t->n_scopes + 65536)
            return 0;
        size_t n = t->n_scope_dense ? t->n_scope_dense : 1024;
        while (n <= id)
            n *= 2;
        uint32_t *p = realloc(t->scope_dense, n * sizeof *p);
        if (!p)
            return -ENOMEM;
        memset(p + t->n_scope_dense, 0, (n - t->n_scope_dense) * sizeof *p);
        t->scope_dense = p;
        t->n_scope_dense = n;
    }
    t->scope_dense[id] = (uint32_t)idx + 1;
    return 0;
}

static int on_scope_begin(struct loader *L, const struct gmt_event *e)
{
    struct gmt_trace *t = L->t;
    const struct gmt_rec_scope_begin *b = (const void *)e->rec;
    struct gmt_scope *s = push((void **)&t->scopes, &t->n_scopes, &L->cap_scope, sizeof *s);
    if (!s)
        return -ENOMEM;
    s->id = b->scope_id;
    s->parent_id = b->parent_id;
    s->stack_id = b->stack_id;
    s->tid = e->tid;
    s->op = b->h.aux;
    s->comm = b->comm;
    s->count = b->count;
    s->stream = b->stream;
    s->datatype = b->datatype;
    s->peer = b->peer;
    s->t_begin = e->time_ns;
    s->device = (int16_t)thread_device(L, e->tid);
    size_t idx = t->n_scopes - 1;
    if (gmt_u64map_put(&t->scope_by_id, b->scope_id, idx))
        return -ENOMEM;
    if (dense_put(t, b->scope_id, idx))
        return -ENOMEM;
    struct gmt_ev *ev = new_event(L, e, GMT_EV_SCOPE_BEGIN);
    if (!ev)
        return -ENOMEM;
    ev->scope = (uint32_t)idx;
    return 0;
}

static int on_scope_end(struct loader *L, const struct gmt_event *e)
{
    struct gmt_trace *t = L->t;
    const struct gmt_rec_scope_end *x = (const void *)e->rec;
    long i = gmt_trace_scope_index(t, x->scope_id);
    if (i < 0)
        return 0; /* its begin was lost (cut, or before a fork): nothing to close */
    const size_t one = (size_t)i, *idx = &one;
    struct gmt_scope *s = &t->scopes[*idx];
    s->t_end = e->time_ns;
    s->ended = true;
    s->result = x->result;
    struct gmt_ev *ev = new_event(L, e, GMT_EV_SCOPE_END);
    if (!ev)
        return -ENOMEM;
    ev->scope = (uint32_t)*idx;
    return 0;
}

static int on_record(struct loader *L, const struct gmt_event *e, char *err, size_t errlen)
{
    struct gmt_trace *t = L->t;
    const struct gmt_rec *r = e->rec;
    struct gmt_ev *ev;

    if (e->time_ns) {
        if (!t->t_first || e->time_ns < t->t_first)
            t->t_first = e->time_ns;
        if (e->time_ns > t->t_last)
            t->t_last = e->time_ns;
    }
    switch (r->type) {
    case GMT_REC_PROCESS:
        return on_process(L, r);
    case GMT_REC_ENV:
        return on_env(L, r);
    case GMT_REC_VERSION: {
        const struct gmt_rec_version *v = (const void *)r;
        if (r->aux < 4)
            t->version[r->aux] = v->version;
        return 0;
    }
    case GMT_REC_MODULE_LOAD:
        return on_module(L, e);
    case GMT_REC_MODULE_UNLOAD: {
        const struct gmt_rec_module_unload *u = (const void *)r;
        for (size_t i = 0; i < t->n_modules; i++)
            if (t->modules[i].id == u->module_id && !t->modules[i].t_unload)
                t->modules[i].t_unload = u->time_ns ? u->time_ns : 1;
        return 0;
    }
    case GMT_REC_THREAD: {
        const struct gmt_rec_thread *th = (const void *)r;
        struct gmt_thread *slot = NULL;
        for (size_t i = 0; i < t->n_threads; i++)
            if (t->threads[i].tid == th->tid)
                slot = &t->threads[i];
        if (!slot && !(slot = push((void **)&t->threads, &t->n_threads, &L->cap_thr, sizeof *slot)))
            return -ENOMEM;
        slot->tid = th->tid;
        memcpy(slot->name, th->name, GMT_THREAD_NAME_LEN);
        slot->name[GMT_THREAD_NAME_LEN] = 0;
        return 0;
    }
    case GMT_REC_STACK:
        return on_stack(L, r, err, errlen, e->offset);
    case GMT_REC_CUCTX: {
        const struct gmt_rec_cuctx *c = (const void *)r;
        return gmt_u64map_put(&L->tid_device, e->tid, (uint64_t)((int64_t)c->device + 1));
    }
    case GMT_REC_ALLOC: {
        const struct gmt_rec_alloc *a = (const void *)r;
        if (!(ev = new_event(L, e, GMT_EV_ALLOC)))
            return -ENOMEM;
        ev->addr = a->address;
        ev->bytes = a->bytes;
        ev->api = r->aux;
        ev->kind = a->kind;
        ev->flags = a->flags;
        ev->stack = a->stack_id;
        ev->scope = a->scope_id;
        if (a->device >= 0)
            ev->device = a->device;
        if (r->size >= sizeof(struct gmt_rec_alloc_ext))
            ev->related = ((const struct gmt_rec_alloc_ext *)r)->related;
        return 0;
    }
    case GMT_REC_FREE: {
        const struct gmt_rec_free *f = (const void *)r;
        if (!(ev = new_event(L, e, GMT_EV_FREE)))
            return -ENOMEM;
        ev->addr = f->address;
        ev->api = r->aux;
        ev->scope = f->scope_id;
        if (r->size >= sizeof(struct gmt_rec_free_ext))
            ev->stack = ((const struct gmt_rec_free_ext *)r)->stack_id;
        return 0;
    }
    case GMT_REC_ALLOC_FAIL: {
        const struct gmt_rec_alloc_fail *f = (const void *)r;
        if (!(ev = new_event(L, e, GMT_EV_FAIL)))
            return -ENOMEM;
        ev->bytes = f->bytes;
        ev->api = r->aux;
        ev->kind = f->kind;
        ev->stack = f->stack_id;
        ev->scope = f->scope_id;
        ev->error = f->error;
        if (f->device >= 0)
            ev->device = f->device;
        return 0;
    }
    case GMT_REC_COMM: {
        const struct gmt_rec_comm *c = (const void *)r;
        struct gmt_comm *slot = NULL;
        for (size_t i = 0; i < t->n_comms; i++)
            if (t->comms[i].comm == c->comm)
                slot = &t->comms[i];
        if (!slot && !(slot = push((void **)&t->comms, &t->n_comms, &L->cap_comm, sizeof *slot)))
            return -ENOMEM;
        slot->comm = c->comm;
        slot->parent = c->parent;
        slot->unique_id_hash = c->unique_id_hash;
        slot->rank = c->rank;
        slot->nranks = c->nranks;
        slot->device = c->device;
        /* an init or split scope opens before its communicator exists: the COMM record
         * its thread writes on return names it */
        for (size_t i = t->n_scopes; i-- > 0;) {
            struct gmt_scope *s = &t->scopes[i];
            if (s->tid != e->tid)
                continue;
            if (!s->comm && (s->op == GMT_OP_CommInitRank || s->op == GMT_OP_CommInitRankConfig ||
                             s->op == GMT_OP_CommInitRankScalable || s->op == GMT_OP_CommInitAll ||
                             s->op == GMT_OP_CommSplit || s->op == GMT_OP_CommShrink)) {
                s->comm = c->comm;
                if (c->device >= 0)
                    s->device = (int16_t)c->device;
            }
            break;
        }
        return 0;
    }
    case GMT_REC_SCOPE_BEGIN:
        return on_scope_begin(L, e);
    case GMT_REC_SCOPE_END:
        return on_scope_end(L, e);
    case GMT_REC_MEMINFO: {
        const struct gmt_rec_meminfo *m = (const void *)r;
        if (!(ev = new_event(L, e, GMT_EV_MEMINFO)))
            return -ENOMEM;
        ev->addr = m->free_bytes;
        ev->bytes = m->total_bytes;
        ev->device = (int16_t)m->device;
        ev->scope = m->scope_id;
        ev->kind = (uint8_t)r->aux;
        return 0;
    }
    case GMT_REC_END: {
        const struct gmt_rec_end *x = (const void *)r;
        t->complete = true;
        t->records_dropped = x->records_dropped;
        return 0;
    }
    default:
        return 0;
    }
}

struct ev_key {
    uint64_t time, idx;
};

static int cmp_key(const void *a, const void *b)
{
    const struct ev_key *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Moves events so that position i holds the one at src[i]; src is used up (a position
 * whose src is itself is done). In place, cycle by cycle: a second array of events would
 * be as large as the first, and its fresh pages cost the kernel more than the moves. */
static void permute(struct gmt_ev *ev, size_t n, uint32_t *src)
{
    for (size_t i = 0; i < n; i++) {
        if (src[i] == i)
            continue;
        struct gmt_ev tmp = ev[i];
        size_t j = i;
        for (;;) {
            size_t from = src[j];
            src[j] = (uint32_t)j;
            if (from == i) {
                ev[j] = tmp;
                break;
            }
            ev[j] = ev[from];
            j = from;
        }
    }
}

/* The general case: sort (time, file order) keys. */
static int sort_by_keys(struct gmt_trace *t)
{
    size_t n = t->n_events;
    struct ev_key *k = malloc(n * sizeof *k);
    uint32_t *src = malloc(n * sizeof *src);
    if (!k || !src) {
        free(k);
        free(src);
        return -ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        k[i].time = t->events[i].time;
        k[i].idx = i;
    }
    qsort(k, n, sizeof *k, cmp_key);
    for (size_t i = 0; i < n; i++)
        src[i] = (uint32_t)k[i].idx;
    free(k);
    permute(t->events, n, src);
    free(src);
    return 0;
}

#define MERGE_THREADS 4096

/* Heap of thread cursors ordered by (time of the next event, its file position). */
struct cursor {
    uint64_t time;
    uint32_t at, end; /* positions in the grouped index list */
};

static bool cursor_before(const struct cursor *a, const struct cursor *b, const uint32_t *grouped)
{
    if (a->time != b->time)
        return a->time < b->time;
    return grouped[a->at] < grouped[b->at];
}

static void sift_down(struct cursor *h, size_t n, size_t i, const uint32_t *grouped)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && cursor_before(&h[l], &h[m], grouped))
            m = l;
        if (l + 1 < n && cursor_before(&h[l + 1], &h[m], grouped))
            m = l + 1;
        if (m == i)
            return;
        struct cursor x = h[i];
        h[i] = h[m];
        h[m] = x;
        i = m;
    }
}

/*
 * Records of one thread are in file order and in time order (its clock only moves
 * forward), but chunks of different threads interleave. So the events are a few sorted
 * sequences, one per thread: merged through a heap that costs n log(threads), where
 * sorting all of them cost n log(n) and keys twice the size. Equal times keep file order,
 * as the general sort does. A file where a thread's times go backwards (corrupt, or
 * written by something else) takes the general sort; so do unusual shapes (very many
 * threads, 2^32 events).
 */
static int sort_events(struct gmt_trace *t)
{
    size_t n = t->n_events;
    bool sorted = true;
    for (size_t i = 1; i < n && sorted; i++)
        sorted = t->events[i].time >= t->events[i - 1].time;
    if (sorted)
        return 0;
    if (n >= UINT32_MAX)
        return sort_by_keys(t);

    static uint32_t tids[MERGE_THREADS];
    static struct cursor heap[MERGE_THREADS];
    size_t nt = 0, last = 0;
    uint32_t *tix = malloc(n * sizeof *tix), *grouped = malloc(n * sizeof *grouped);
    if (!tix || !grouped) {
        free(tix);
        free(grouped);
        return -ENOMEM;
    }
    int rc = 0;
    /* thread index of each event: they come in runs of one thread (a chunk) */
    for (size_t i = 0; i < n; i++) {
        uint32_t tid = t->events[i].tid;
        if (!nt || tids[last] != tid) {
            size_t j = 0;
            while (j < nt && tids[j] != tid)
                j++;
            if (j == nt) {
                if (nt == MERGE_THREADS)
                    goto general;
                tids[nt++] = tid;
            }
            last = j;
        }
        tix[i] = (uint32_t)last;
    }
    /* counting sort by thread, stable: each thread's events in file order */
    for (size_t j = 0; j < nt; j++)
        heap[j] = (struct cursor){0, 0, 0};
    for (size_t i = 0; i < n; i++)
        heap[tix[i]].end++;
    uint32_t off = 0;
    for (size_t j = 0; j < nt; j++) {
        heap[j].at = off;
        off += heap[j].end;
        heap[j].end = heap[j].at;
    }
    for (size_t i = 0; i < n; i++)
        grouped[heap[tix[i]].end++] = (uint32_t)i;
    for (size_t j = 0; j < nt; j++) {
        for (uint32_t a = heap[j].at + 1; a < heap[j].end; a++)
            if (t->events[grouped[a]].time < t->events[grouped[a - 1]].time)
                goto general;
        heap[j].time = t->events[grouped[heap[j].at]].time;
    }
    /* every thread has at least one event, so no cursor starts empty */
    for (size_t j = nt / 2; j-- > 0;)
        sift_down(heap, nt, j, grouped);
    size_t live = nt;
    for (size_t i = 0; i < n; i++) { /* tix now receives the order */
        struct cursor *c = &heap[0];
        tix[i] = grouped[c->at++];
        if (c->at == c->end)
            *c = heap[--live];
        else
            c->time = t->events[grouped[c->at]].time;
        sift_down(heap, live, 0, grouped);
    }
    permute(t->events, n, tix);
    goto out;
general:
    rc = sort_by_keys(t);
out:
    free(tix);
    free(grouped);
    return rc;
}

/* Scope devices: the communicator's device when known; MEMINFO samples around a scope
 * give its before/after device memory. */
static void finish_scopes(struct gmt_trace *t)
{
    for (size_t i = 0; i < t->n_scopes; i++) {
        const struct gmt_comm *c = gmt_trace_comm(t, t->scopes[i].comm);
        if (c && c->device >= 0)
            t->scopes[i].device = (int16_t)c->device;
    }
    for (size_t i = 0; i < t->n_events; i++) {
        const struct gmt_ev *e = &t->events[i];
        if (e->type != GMT_EV_MEMINFO || !e->scope)
            continue;
        struct gmt_scope *s = (struct gmt_scope *)gmt_trace_scope_by_id(t, e->scope);
        if (!s || e->bytes < e->addr)
            continue;
        if (e->kind == GMT_MEMINFO_BEGIN) {
            s->has_mem_before = true;
            s->used_before = e->bytes - e->addr;
        } else if (e->kind == GMT_MEMINFO_END) {
            s->has_mem_after = true;
            s->used_after = e->bytes - e->addr;
        }
        s->total = e->bytes;
    }
}

int gmt_trace_load(struct gmt_trace *t, const char *path, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    struct loader L = {.t = t};
    gmt_u64map_init(&L.tid_device);
    gmt_u64map_init(&t->scope_by_id);
    struct gmt_reader *r = NULL;
    int rc = -1;

    if (!(t->path = strdup(path)))
        goto nomem;
    if (gmt_reader_open(&r, path, err, errlen))
        goto out;
    struct gmt_event e;
    int n;
    while ((n = gmt_reader_next(r, &e, err, errlen)) > 0) {
        int x = on_record(&L, &e, err, errlen);
        if (x == -ENOMEM)
            goto nomem;
        if (x)
            goto out;
    }
    if (n < 0)
        goto out;
    t->records = gmt_reader_records(r);
    t->cut = gmt_reader_cut(r, &t->cut_offset);
    if (sort_events(t))
        goto nomem;
    /* the scope index is by position in t->scopes, which sorting events did not move */
    finish_scopes(t);
    rc = 0;
    goto out;
nomem:
    snprintf(err, errlen, "%s: out of memory", path);
out:
    if (r)
        gmt_reader_close(r);
    gmt_u64map_free(&L.tid_device);
    if (rc)
        gmt_trace_free(t);
    return rc;
}

void gmt_trace_free(struct gmt_trace *t)
{
    free(t->path);
    free(t->host);
    free(t->cmdline);
    for (size_t i = 0; i < t->n_env; i++)
        free(t->env[i]);
    free(t->env);
    for (size_t i = 0; i < t->n_modules; i++) {
        free(t->modules[i].path);
        free(t->modules[i].build_id);
    }
    free(t->modules);
    for (size_t i = 0; i < t->n_stacks; i++)
        free(t->stacks[i].ip);
    free(t->stacks);
    free(t->threads);
    free(t->comms);
    free(t->scopes);
    free(t->events);
    gmt_u64map_free(&t->scope_by_id);
    free(t->scope_dense);
    memset(t, 0, sizeof *t);
}

const struct gmt_comm *gmt_trace_comm(const struct gmt_trace *t, uint64_t comm)
{
    for (size_t i = 0; comm && i < t->n_comms; i++)
        if (t->comms[i].comm == comm)
            return &t->comms[i];
    return NULL;
}

long gmt_trace_scope_index(const struct gmt_trace *t, uint32_t id)
{
    if (id < t->n_scope_dense && t->scope_dense[id])
        return (long)t->scope_dense[id] - 1;
    const uint64_t *idx = gmt_u64map_get(&t->scope_by_id, id);
    return idx ? (long)*idx : -1;
}

const struct gmt_scope *gmt_trace_scope_by_id(const struct gmt_trace *t, uint32_t id)
{
    long i = gmt_trace_scope_index(t, id);
    return i >= 0 ? &t->scopes[i] : NULL;
}

const char *gmt_trace_thread_name(const struct gmt_trace *t, uint32_t tid)
{
    for (size_t i = 0; i < t->n_threads; i++)
        if (t->threads[i].tid == tid)
            return t->threads[i].name;
    return "";
}

const struct gmt_module *gmt_trace_module_at(const struct gmt_trace *t, uint64_t ip)
{
    for (size_t i = 0; i < t->n_modules; i++)
        if (ip >= t->modules[i].start && ip < t->modules[i].end)
            return &t->modules[i];
    return NULL;
}

const char *gmt_trace_env(const struct gmt_trace *t, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < t->n_env; i++)
        if (!strncmp(t->env[i], name, n) && t->env[i][n] == '=')
            return t->env[i] + n + 1;
    return NULL;
}
