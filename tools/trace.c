/* trace.c: loads a whole trace: metadata tables and scopes; its events are merged in time order on demand. */
#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reader.h"
#include "u64map.h"
#include "util.h"

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

/*
 * Events are not stored. Loading reads the file once in file order (validation, the
 * metadata tables, scopes) and notes where each thread's records lie: the chunks of a
 * thread, and the runs in which its event times never go back. A thread's clock only
 * moves forward, so in a sound file each thread is one run, and the events in time
 * order are a merge of a few sorted sequences read in place from the mapped file
 * (gmt_trace_iter_*): no event array (56 bytes per event, most of the page faults) and
 * no sort. A corrupt file whose times go back just has more runs.
 */
_Static_assert(offsetof(struct gmt_rec_module_load, time_ns) == sizeof(struct gmt_rec) &&
                   offsetof(struct gmt_rec_module_unload, time_ns) == sizeof(struct gmt_rec) &&
                   offsetof(struct gmt_rec_thread, time_ns) == sizeof(struct gmt_rec) &&
                   offsetof(struct gmt_rec_time, time_ns) == sizeof(struct gmt_rec) &&
                   offsetof(struct gmt_rec_end, time_ns) == sizeof(struct gmt_rec),
               "walk_decode reads an absolute time right after the header");

struct gmt_seg {
    uint64_t start, end;       /* file offsets of a chunk's records */
};

struct gmt_tstream {
    uint32_t tid;
    struct gmt_seg *segs; size_t n_segs, cap_segs;
    size_t run;                /* its latest run */
    uint64_t last_time;        /* of its latest event */
    bool has_ev;
};

struct gmt_run {
    size_t stream, seg;        /* the segment where it starts */
    uint64_t start, end;       /* file offsets; end: where the thread's next run starts */
    uint64_t clock;            /* the thread's clock and device before `start` */
    bool clock_set;
    int16_t device;
};

/* MEMINFO samples, kept aside to give scopes their device use once all are read. */
struct meminfo_note {
    uint64_t time, off, free_bytes, total_bytes;
    uint32_t scope;
    uint8_t phase;
};

/* on_record's answer to a GROUP_REPEAT: the records are loaded again, expanded */
#define LOAD_EXPAND 1

struct loader {
    struct gmt_trace *t;
    struct gmt_reader *r;
    size_t cap_env, cap_mod, cap_thr, cap_comm, cap_scope, cap_streams, cap_runs;
    struct gmt_u64map tid_device;   /* tid -> device of its current CUDA context + 1 */
    struct gmt_u64map stream_of;    /* tid -> index in t->streams */
    size_t cur;                     /* stream of the latest CHUNK */
    int cur_device;                 /* thread_device() of its thread: a map lookup per
                                     * CHUNK and CUCTX, not per scope */
    struct meminfo_note *mi; size_t n_mi, cap_mi;
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

/* The stream of `tid`, made with its first run when new; its index or -1. */
static long stream_for(struct loader *L, uint32_t tid, uint64_t start)
{
    struct gmt_trace *t = L->t;
    uint64_t *v = gmt_u64map_get(&L->stream_of, tid);
    size_t i;
    if (v) {
        i = (size_t)*v;
    } else {
        struct gmt_tstream *st = push((void **)&t->streams, &t->n_streams, &L->cap_streams, sizeof *st);
        struct gmt_run *run = push((void **)&t->runs, &t->n_runs, &L->cap_runs, sizeof *run);
        if (!st || !run)
            return -1;
        i = t->n_streams - 1;
        st->tid = tid;
        st->run = t->n_runs - 1;
        /* a thread's clock and context are set by its own records only: none yet */
        run->stream = i;
        run->start = start;
        run->end = UINT64_MAX;
        run->device = -1;
        if (gmt_u64map_put_new(&L->stream_of, tid, i))
            return -1;
    }
    struct gmt_tstream *st = &t->streams[i];
    struct gmt_seg *sg = push((void **)&st->segs, &st->n_segs, &st->cap_segs, sizeof *sg);
    if (!sg)
        return -1;
    sg->start = sg->end = start;
    return (long)i;
}

/* The dt of an event record (those note_event sees). */
static uint32_t event_dt(const struct gmt_rec *r)
{
    switch (r->type) {
    case GMT_REC_ALLOC: return ((const struct gmt_rec_alloc *)(const void *)r)->dt;
    case GMT_REC_ALLOC_SMALL: return ((const struct gmt_rec_alloc_small *)(const void *)r)->dt;
    case GMT_REC_FREE: return ((const struct gmt_rec_free *)(const void *)r)->dt;
    case GMT_REC_ALLOC_FAIL: return ((const struct gmt_rec_alloc_fail *)(const void *)r)->dt;
    case GMT_REC_SCOPE_BEGIN: return ((const struct gmt_rec_scope_begin *)(const void *)r)->dt;
    case GMT_REC_SCOPE_END: return ((const struct gmt_rec_scope_end *)(const void *)r)->dt;
    case GMT_REC_MEMINFO: return ((const struct gmt_rec_meminfo *)(const void *)r)->dt;
    }
    return 0;
}

/* An event record of the current thread: a thread whose time goes back starts a run. */
static inline int note_event(struct loader *L, const struct gmt_event *e)
{
    struct gmt_trace *t = L->t;
    struct gmt_tstream *st = &t->streams[L->cur];
    t->n_events++;
    if (st->has_ev && e->time_ns < st->last_time) {
        struct gmt_run *run = push((void **)&t->runs, &t->n_runs, &L->cap_runs, sizeof *run);
        if (!run)
            return -ENOMEM;
        t->runs[st->run].end = e->offset;
        st->run = t->n_runs - 1;
        run->stream = L->cur;
        run->seg = st->n_segs - 1;
        run->start = e->offset;
        run->end = UINT64_MAX;
        run->device = (int16_t)L->cur_device;
        /* The clock before this record. Its time went back, so the thread's clock was
         * set (an unset clock gives 0, and once set a clock stays set): its time is the
         * clock after it. */
        run->clock_set = true;
        run->clock = e->time_ns - event_dt(e->rec);
    }
    st->last_time = e->time_ns;
    st->has_ev = true;
    return 0;
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
 * three cache misses. Ids far beyond the scopes seen (a corrupt or odd file) go to the
 * map instead, so the array never grows past a few times the number of scopes. Returns
 * 1 when placed in the array, 0 when the map must hold it, or -ENOMEM. */
static int dense_put(struct gmt_trace *t, uint32_t id, size_t idx)
{
    if (!id) /* no scope: the replay reads entry 0 for events outside any, so it stays 0 */
        return 0;
    if (idx >= UINT32_MAX) {
        if (id < t->n_scope_dense)
            t->scope_dense[id] = 0; /* the map's newer index must win */
        return 0;
    }
    if (id >= t->n_scope_dense) {
        if ((uint64_t)id > 4 * (uint64_t)t->n_scopes + 65536)
            return 0;
        size_t n = t->n_scope_dense ? t->n_scope_dense : 1024;
        while (n <= id)
            n *= 2;
        if (t->scope_dense_reserved) {
            /* in place: the pages past the old end are fresh, zero (reserve_scopes) */
            if (n * sizeof *t->scope_dense > t->scope_dense_reserved)
                return -ENOMEM; /* cannot be: the bound covers every id placed here */
        } else {
            uint32_t *p = realloc(t->scope_dense, n * sizeof *p);
            if (!p)
                return -ENOMEM;
            memset(p + t->n_scope_dense, 0, (n - t->n_scope_dense) * sizeof *p);
            t->scope_dense = p;
        }
        t->n_scope_dense = n;
    }
    t->scope_dense[id] = (uint32_t)idx + 1;
    return 1;
}

static int on_scope_begin(struct loader *L, const struct gmt_event *e)
{
    struct gmt_trace *t = L->t;
    const struct gmt_rec_scope_begin *b = (const void *)e->rec;
    struct gmt_scope *s;
    if (t->scopes_reserved) {
        /* the bound reserve_scopes() took cannot be passed: each scope has its record */
        if (t->n_scopes == L->cap_scope)
            return -ENOMEM;
        s = &t->scopes[t->n_scopes++]; /* zero: fresh pages, never reused */
    } else if (!(s = push((void **)&t->scopes, &t->n_scopes, &L->cap_scope, sizeof *s))) {
        return -ENOMEM;
    }
    s->id = b->scope_id;
    s->parent_id = b->parent_id;
    s->tid = e->tid;
    s->op = b->h.aux;
    s->comm = b->comm;
    s->count = b->count;
    s->datatype = b->datatype;
    s->t_begin = e->time_ns;
    s->offset = e->offset;
    s->device = (int16_t)L->cur_device;
    size_t idx = t->n_scopes - 1;
    if (gmt_trace_scope_index(t, b->scope_id) >= 0)
        t->scope_dups = true;
    /* the map holds only the ids the dense array declines: a lookup there is a few
     * cache misses per scope, and there are as many scopes as collective calls */
    int placed = dense_put(t, b->scope_id, idx);
    if (placed < 0 || (!placed && gmt_u64map_put(&t->scope_by_id, b->scope_id, idx)))
        return -ENOMEM;
    return note_event(L, e);
}

static int on_scope_end(struct loader *L, const struct gmt_event *e)
{
    struct gmt_trace *t = L->t;
    const struct gmt_rec_scope_end *x = (const void *)e->rec;
    long i = gmt_trace_scope_index(t, x->scope_id);
    if (i < 0)
        return 0; /* its begin was lost (cut, or before a fork): nothing to close */
    struct gmt_scope *s = &t->scopes[i];
    s->t_end = e->time_ns;
    s->result = x->result;
    return note_event(L, e);
}

#define PLAIN_EVENTS ((1u << GMT_REC_ALLOC) | (1u << GMT_REC_ALLOC_SMALL) | \
                      (1u << GMT_REC_FREE) | (1u << GMT_REC_ALLOC_FAIL))

/* Told apart with one bit test, not a switch: they come in no order a branch predictor
 * could learn. */
static inline bool is_plain_event(unsigned type)
{
    return type < 32 && (PLAIN_EVENTS >> type & 1);
}

static int on_record(struct loader *L, const struct gmt_event *e, char *err, size_t errlen)
{
    struct gmt_trace *t = L->t;
    const struct gmt_rec *r = e->rec;

    /* Allocations and frees, most of the records, are decoded again when iterated
     * (cursor_fill): here they only count and mark runs (see also load_records). */
    if (is_plain_event(r->type))
        return note_event(L, e);
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
        int x = gmt_u64map_put(&L->tid_device, e->tid, (uint64_t)((int64_t)c->device + 1));
        if (x)
            return x;
        L->cur_device = thread_device(L, e->tid); /* as the map gives it back */
        return 0;
    }
    case GMT_REC_CHUNK: {
        const struct gmt_rec_chunk *c = (const void *)r;
        t->streams[L->cur].segs[t->streams[L->cur].n_segs - 1].end = e->offset;
        long i = stream_for(L, c->tid, e->offset + r->size);
        if (i < 0)
            return -ENOMEM;
        L->cur = (size_t)i;
        L->cur_device = thread_device(L, c->tid);
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
        struct meminfo_note *n = push((void **)&L->mi, &L->n_mi, &L->cap_mi, sizeof *n);
        if (!n)
            return -ENOMEM;
        n->time = e->time_ns;
        n->off = e->offset;
        n->free_bytes = m->free_bytes;
        n->total_bytes = m->total_bytes;
        n->scope = m->scope_id;
        n->phase = (uint8_t)r->aux;
        return note_event(L, e);
    }
    case GMT_REC_END: {
        const struct gmt_rec_end *x = (const void *)r;
        t->complete = true;
        t->records_dropped = x->records_dropped;
        return 0;
    }
    case GMT_REC_GROUP_REPEAT:
        return LOAD_EXPAND; /* gmt_trace_load starts again from the expanded records */
    default:
        return 0;
    }
}

/* One record handed out by the reader: the common one, an allocation or free at or
 * after its thread's latest event, only counted, with the trace's time span and event
 * count in locals (the stores of a call to on_record could alias them); everything else
 * goes to on_record. */
struct span {
    uint64_t first, last, n_events;
};

static inline int load_one(struct loader *L, struct span *sp, const struct gmt_event *e,
                           char *err, size_t errlen)
{
    struct gmt_trace *t = L->t;
    struct gmt_tstream *st = &t->streams[L->cur];
    uint64_t time = e->time_ns;
    if (time) {
        if (!sp->first || time < sp->first)
            sp->first = time;
        if (time > sp->last)
            sp->last = time;
    }
    /* a thread's clock only moves forward: times go back only in a corrupt file, where
     * note_event starts a run */
    if (is_plain_event(e->rec->type) && time >= st->last_time) {
        st->last_time = time;
        st->has_ev = true;
        sp->n_events++;
        return 0;
    }
    t->n_events += sp->n_events;
    sp->n_events = 0;
    /* the next most common records, one per NCCL call each, without on_record's switch */
    if (e->rec->type == GMT_REC_SCOPE_BEGIN)
        return on_scope_begin(L, e);
    if (e->rec->type == GMT_REC_SCOPE_END)
        return on_scope_end(L, e);
    return on_record(L, e, err, errlen);
}

/*
 * The records in file order. Most are allocations and frees whose times only move
 * forward: the reader skims those (gmt_reader_skim), handing out only the others, and
 * what it cannot take alone (a CHUNK, a record with variable parts, a broken one, a time
 * going back) is read one record at a time. Returns 0 at the end, -ENOMEM, or -1 with a
 * message in err.
 */
static int load_records(struct loader *L, char *err, size_t errlen)
{
    struct gmt_trace *t = L->t;
    struct gmt_event ev[256];
    const size_t max = sizeof ev / sizeof ev[0];
    struct span sp = {0, 0, 0};
    int n = 1, x = 0;
    while (n > 0 && !x) {
        struct gmt_skim sk;
        size_t got = gmt_reader_skim(L->r, PLAIN_EVENTS, t->streams[L->cur].last_time, ev,
                                     max, &sk);
        for (size_t i = 0; i < got && !x; i++)
            x = load_one(L, &sp, &ev[i], err, errlen);
        if (x)
            break;
        if (sk.n) {
            /* skimmed events lie among those handed out, in time order: the thread's
             * latest is the later of the last of each (no record above moves streams) */
            struct gmt_tstream *st = &t->streams[L->cur];
            if (sk.last >= st->last_time)
                st->last_time = sk.last;
            st->has_ev = true;
            sp.n_events += sk.n;
            if (sk.first && (!sp.first || sk.first < sp.first))
                sp.first = sk.first;
            if (sk.last > sp.last)
                sp.last = sk.last;
        }
        if (got < max && gmt_reader_next_batch(L->r, ev, 1, &n, err, errlen))
            x = load_one(L, &sp, &ev[0], err, errlen);
    }
    t->n_events += sp.n_events;
    if (sp.first && (!t->t_first || sp.first < t->t_first))
        t->t_first = sp.first;
    if (sp.last > t->t_last)
        t->t_last = sp.last;
    if (x)
        return x;
    return n < 0 ? -1 : 0;
}

static int cmp_meminfo(const void *a, const void *b)
{
    const struct meminfo_note *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* With duplicate scope ids, which scope a SCOPE_* record means depends on where it lies
 * in the file (the latest begin of that id before it): noted by offset for the
 * iteration, from a second walk of the records in file order. Only corrupt files. */
static int map_scope_records(struct gmt_trace *t, uint64_t from, uint64_t to)
{
    struct gmt_u64map latest;
    gmt_u64map_init(&latest);
    size_t k = 0;
    int rc = 0;
    for (uint64_t off = from; off < to && !rc;) {
        const struct gmt_rec *h = (const void *)(t->image + off);
        if (h->type == GMT_REC_SCOPE_BEGIN) {
            const struct gmt_rec_scope_begin *b = (const void *)h;
            rc = gmt_u64map_put(&latest, b->scope_id, k) ||
                 gmt_u64map_put(&t->scope_at, off, k + 1);
            k++;
        } else if (h->type == GMT_REC_SCOPE_END) {
            const struct gmt_rec_scope_end *x = (const void *)h;
            const uint64_t *v = gmt_u64map_get(&latest, x->scope_id);
            if (v)
                rc = gmt_u64map_put(&t->scope_at, off, *v + 1);
        }
        off += h->size;
    }
    gmt_u64map_free(&latest);
    return rc ? -ENOMEM : 0;
}

/* Scope devices: the communicator's device when known; MEMINFO samples around a scope
 * give its before/after device memory (t->scope_mem). Returns 0 or -ENOMEM. */
static int finish_scopes(struct gmt_trace *t, struct meminfo_note *mi, size_t n_mi)
{
    size_t cap = 0;
    for (size_t i = 0; i < t->n_scopes; i++) {
        const struct gmt_comm *c = gmt_trace_comm(t, t->scopes[i].comm);
        if (c && c->device >= 0)
            t->scopes[i].device = (int16_t)c->device;
    }
    /* in time order, ties in file order, as the events are replayed: the last wins */
    if (n_mi > 1)
        qsort(mi, n_mi, sizeof *mi, cmp_meminfo);
    for (size_t i = 0; i < n_mi; i++) {
        const struct meminfo_note *e = &mi[i];
        if (!e->scope)
            continue;
        struct gmt_scope *s = (struct gmt_scope *)gmt_trace_scope_by_id(t, e->scope);
        if (!s || e->total_bytes < e->free_bytes)
            continue;
        /* its samples, made at its first (scope index -> index in scope_mem + 1) */
        size_t si = (size_t)(s - t->scopes);
        const uint64_t *at = gmt_u64map_get(&t->scope_mem_of, si);
        size_t idx = at ? (size_t)*at - 1 : t->n_scope_mem;
        if (!at) {
            if (!push((void **)&t->scope_mem, &t->n_scope_mem, &cap, sizeof *t->scope_mem) ||
                gmt_u64map_put_new(&t->scope_mem_of, si, t->n_scope_mem))
                return -ENOMEM;
            if (t->n_scope_mem == 1 || si < t->scope_mem_lo)
                t->scope_mem_lo = si;
            if (t->n_scope_mem == 1 || si >= t->scope_mem_hi)
                t->scope_mem_hi = si + 1;
        }
        struct gmt_scope_mem *m = &t->scope_mem[idx];
        if (e->phase == GMT_MEMINFO_BEGIN) {
            m->has_mem_before = true;
            m->used_before = e->total_bytes - e->free_bytes;
        } else if (e->phase == GMT_MEMINFO_END) {
            m->has_mem_after = true;
            m->used_after = e->total_bytes - e->free_bytes;
        }
        m->total = e->total_bytes;
    }
    return 0;
}

/* Scopes are as many as collective calls, tens of megabytes in a long run: grown by
 * doubling, the array was copied again and again, and each copy faulted its pages in.
 * Instead the space for as many as the file has room for (one SCOPE_BEGIN record each)
 * is reserved up front and filled in place; only what is used takes memory. When that
 * space cannot be had, the array grows as before. */
static void reserve_scopes(struct loader *L)
{
    struct gmt_trace *t = L->t;
    size_t bound = t->image_len / sizeof(struct gmt_rec_scope_begin) + 1;
    if (bound > SIZE_MAX / sizeof *t->scopes)
        return;
    size_t bytes = bound * sizeof *t->scopes;
    if (!(t->scopes = gmt_reserve(bytes)))
        return;
    t->scopes_reserved = bytes;
    L->cap_scope = bound;
    /* The dense array of scope ids likewise: it takes ids up to 4 x scopes + 65536 and
     * doubles from 1024 past each, so it never needs more than twice that; reserved, it
     * grows in place, where regrown it was copied and zeroed at each doubling. */
    if (bound > (SIZE_MAX / sizeof *t->scope_dense - 1024 - 2 * 65536) / 8)
        return;
    size_t dense = (2 * (4 * bound + 65536) + 1024) * sizeof *t->scope_dense;
    if ((t->scope_dense = gmt_reserve(dense)))
        t->scope_dense_reserved = dense;
}

/* The whole stream of a pipe or device in memory, for the same in-place reading. */
static int slurp(FILE *f, uint8_t **out, size_t *len)
{
    size_t cap = 1 << 20, n = 0;
    uint8_t *b = malloc(cap);
    if (!b)
        return -ENOMEM;
    for (;;) {
        if (n == cap) {
            uint8_t *nb = cap < SIZE_MAX / 2 ? realloc(b, cap * 2) : NULL;
            if (!nb) {
                free(b);
                return -ENOMEM;
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                free(b);
                *len = n;
                return -EIO;
            }
            break;
        }
    }
    *out = b;
    *len = n;
    return 0;
}

/* ---- repeated groups (GROUP_REPEAT, format 2.1) ----
 *
 * A GROUP_REPEAT stands for the member scopes of its thread's previous group
 * (docs/trace-format.md). Everything after loading works on records in place, so a trace
 * that has them is loaded from an image of the file with each one replaced by the
 * records it stands for: exactly what the library writes for those members when it
 * writes them one by one (GPUMEMTRACE_GROUP_REPEAT=0). One that cannot be expanded (its
 * group or the previous one is not in the file, or their members differ in number)
 * counts its members' records as dropped.
 */
struct rep_member {
    struct gmt_rec_scope_begin b;
    int32_t result;
};
#define GMT_REP_MAX_CLI 64             /* members kept per group; a larger one is not kept */
struct rep_group {
    uint32_t id;                       /* 0: none */
    int n;                             /* members; -1: more than GMT_REP_MAX_CLI */
    struct rep_member *m;
};
struct rep_thread {
    struct rep_group cur;              /* the group open with no scope around it (id 0: none) */
    struct rep_group last[GMT_REPEAT_LIKE_WINDOW]; /* the latest that ended, a ring */
    unsigned next;                     /* the ring's slot the next one takes */
};

struct expander {
    uint8_t *out;
    size_t n, cap;
    struct gmt_u64map of_tid;            /* tid -> index in th + 1 */
    struct rep_thread *th;
    size_t n_th, cap_th;
    uint64_t lost;                       /* records that could not be restored */
};

static int out_put(struct expander *x, const void *p, size_t len)
{
    if (x->cap - x->n < len) {
        size_t cap = x->cap ? x->cap : 1 << 16;
        while (cap - x->n < len)
            cap *= 2;
        uint8_t *o = realloc(x->out, cap);
        if (!o)
            return -ENOMEM;
        x->out = o;
        x->cap = cap;
    }
    memcpy(x->out + x->n, p, len);
    x->n += len;
    return 0;
}

static void rep_thread_free(struct rep_thread *rt)
{
    free(rt->cur.m);
    for (int i = 0; i < GMT_REPEAT_LIKE_WINDOW; i++)
        free(rt->last[i].m);
}

static struct rep_thread *rep_thread_of(struct expander *x, uint32_t tid)
{
    const uint64_t *v = gmt_u64map_get(&x->of_tid, tid);
    if (v)
        return &x->th[*v - 1];
    struct rep_thread *rt = push((void **)&x->th, &x->n_th, &x->cap_th, sizeof *rt);
    if (!rt)
        return NULL;
    memset(rt, 0, sizeof *rt);
    bool ok = (rt->cur.m = calloc(GMT_REP_MAX_CLI, sizeof *rt->cur.m)) != NULL;
    for (int i = 0; i < GMT_REPEAT_LIKE_WINDOW; i++)
        ok = ok && (rt->last[i].m = calloc(GMT_REP_MAX_CLI, sizeof *rt->last[i].m)) != NULL;
    if (!ok || gmt_u64map_put(&x->of_tid, tid, x->n_th))
        return NULL;
    return rt;
}

/* The members of `like`, one of the thread's latest groups, into `cur` (group g), as
 * their records: NULL when it is not there or had another number of members. */
static const struct rep_group *rep_like(const struct rep_thread *rt, uint32_t like, uint32_t count)
{
    for (int i = 0; i < GMT_REPEAT_LIKE_WINDOW; i++)
        if (like && rt->last[i].id == like)
            return rt->last[i].n >= 1 && (uint32_t)rt->last[i].n == count ? &rt->last[i] : NULL;
    return NULL;
}

static int expand_one(struct expander *x, const struct gmt_event *e)
{
    const struct gmt_rec *r = e->rec;
    if (r->type != GMT_REC_THREAD && r->type != GMT_REC_SCOPE_BEGIN &&
        r->type != GMT_REC_SCOPE_END && r->type != GMT_REC_GROUP_REPEAT)
        return out_put(x, r, r->size);
    struct rep_thread *rt = rep_thread_of(x, e->tid);
    if (!rt)
        return -ENOMEM;
    struct rep_group *cur = &rt->cur;
    if (r->type == GMT_REC_THREAD) { /* the thread's records start afresh */
        cur->id = 0;
        for (int i = 0; i < GMT_REPEAT_LIKE_WINDOW; i++)
            rt->last[i].id = 0;
    } else if (r->type == GMT_REC_SCOPE_BEGIN) {
        const struct gmt_rec_scope_begin *b = (const void *)r;
        if (r->aux == GMT_OP_Group && b->parent_id == 0) {
            cur->id = b->scope_id;
            cur->n = 0;
        } else if (cur->id && b->parent_id == cur->id && cur->n >= 0) {
            if (cur->n == GMT_REP_MAX_CLI) {
                cur->n = -1;
            } else {
                struct rep_member *m = &cur->m[cur->n++];
                memcpy(&m->b, b, sizeof m->b);
                m->result = 0;
            }
        }
    } else if (r->type == GMT_REC_SCOPE_END) {
        const struct gmt_rec_scope_end *en = (const void *)r;
        if (cur->id && en->scope_id == cur->id) {
            /* into the ring; its oldest slot's members array becomes the next cur's */
            struct rep_group *slot = &rt->last[rt->next++ % GMT_REPEAT_LIKE_WINDOW];
            struct rep_member *spare = slot->m;
            *slot = *cur;
            cur->m = spare;
            cur->id = 0;
        } else if (cur->id) {
            for (int i = cur->n; i-- > 0;)
                if (cur->m[i].b.scope_id == en->scope_id) {
                    cur->m[i].result = en->result;
                    break;
                }
        }
    } else { /* GROUP_REPEAT: its members, as their group wrote them one by one */
        const struct gmt_rec_group_repeat *g = (const void *)r;
        const struct rep_group *like = rep_like(rt, g->like, g->count);
        if (!cur->id || g->scope_id != cur->id || cur->n != 0 || !like ||
            g->scope_id > UINT32_MAX - g->count) {
            x->lost += 2 * (uint64_t)g->count;
            return 0;
        }
        for (int i = 0; i < like->n; i++) {
            struct rep_member *m = &cur->m[i];
            m->b = like->m[i].b;
            m->b.h.size = sizeof m->b;
            m->b.dt = 0;
            m->b.scope_id = g->scope_id + 1 + (uint32_t)i;
            m->b.parent_id = g->scope_id;
            m->b.stack_id = 0;
            m->result = like->m[i].result;
            struct gmt_rec_scope_end en = {
                .h = {GMT_REC_SCOPE_END, m->b.h.aux, sizeof en},
                .scope_id = m->b.scope_id,
                .result = m->result,
            };
            if (out_put(x, &m->b, sizeof m->b) || out_put(x, &en, sizeof en))
                return -ENOMEM;
        }
        cur->n = like->n;
        return 0;
    }
    return out_put(x, r, r->size);
}

int gmt_trace_expand(const uint8_t *img, size_t len, const char *path, uint8_t **out,
                     size_t *out_len, uint64_t *records, uint64_t *cut_offset, uint64_t *lost,
                     char *err, size_t errlen)
{
    struct gmt_reader *r;
    if (gmt_reader_open_mem(&r, img, len, path, err, errlen))
        return -1;
    struct expander x = {0};
    gmt_u64map_init(&x.of_tid);
    int rc = out_put(&x, img, gmt_reader_offset(r)) ? -ENOMEM : 0;
    struct gmt_event ev;
    int n = 1;
    while (!rc && (n = gmt_reader_next(r, &ev, err, errlen)) > 0)
        rc = expand_one(&x, &ev);
    if (!rc && n < 0)
        rc = -1;
    uint64_t end = gmt_reader_offset(r);
    if (!rc && end < len && out_put(&x, img + end, len - end))
        rc = -ENOMEM;
    *records = gmt_reader_records(r);
    if (!gmt_reader_cut(r, cut_offset))
        *cut_offset = UINT64_MAX;
    *lost = x.lost;
    gmt_reader_close(r);
    for (size_t i = 0; i < x.n_th; i++)
        rep_thread_free(&x.th[i]);
    free(x.th);
    gmt_u64map_free(&x.of_tid);
    if (rc) {
        free(x.out);
        return rc;
    }
    *out = x.out;
    *out_len = x.n;
    return 0;
}

int gmt_trace_open_expanded(struct gmt_reader **r, const char *path, uint8_t **buf,
                            struct gmt_file_end *fe, char *err, size_t errlen)
{
    *buf = NULL;
    *fe = (struct gmt_file_end){0};
    struct gmt_reader *f;
    if (gmt_reader_open(&f, path, err, errlen) < 0)
        return -1;
    size_t len = 0, out_len = 0;
    const uint8_t *img = gmt_reader_image(f, &len);
    int rc = -1;
    if (!img)
        snprintf(err, errlen, "%s: cannot map the file", path);
    else if ((rc = gmt_trace_expand(img, len, path, buf, &out_len, &fe->records,
                                    &fe->cut_offset, &fe->lost, err, errlen)) == -ENOMEM)
        snprintf(err, errlen, "%s: out of memory", path);
    fe->expanded = true;
    fe->end = len;
    gmt_reader_close(f);
    if (rc)
        return -1;
    return gmt_reader_open_mem(r, *buf, out_len, path, err, errlen);
}

/* Loads from the file, or from `image` (malloc'd, taken over) when not NULL. Returns 0,
 * LOAD_EXPAND (the file has GROUP_REPEAT records), or -1 with a message in err. */
static int load(struct gmt_trace *t, const char *path, uint8_t *image, size_t image_len,
                char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    struct loader L = {.t = t, .cur_device = -1};
    gmt_u64map_init(&L.tid_device);
    gmt_u64map_init(&L.stream_of);
    gmt_u64map_init(&t->scope_by_id);
    gmt_u64map_init(&t->scope_at);
    gmt_u64map_init(&t->scope_mem_of);
    int rc = -1;

    if (!(t->path = strdup(path))) {
        free(image);
        goto nomem;
    }
    /* a regular file is mapped by the reader; anything else is read into memory first */
    struct stat st;
    if (image) {
        t->image_buf = image;
        t->image_len = image_len;
        if (gmt_reader_open_mem(&t->reader, t->image_buf, t->image_len, path, err, errlen))
            goto out;
    } else if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        FILE *f = fopen(path, "rb");
        if (!f) {
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
            goto out;
        }
        int x = slurp(f, &t->image_buf, &t->image_len);
        int e = errno;
        fclose(f);
        if (x == -ENOMEM)
            goto nomem;
        if (x) {
            snprintf(err, errlen, "%s: offset %zu: read error: %s", path, t->image_len,
                     strerror(e));
            goto out;
        }
        if (gmt_reader_open_mem(&t->reader, t->image_buf, t->image_len, path, err, errlen))
            goto out;
    } else if (gmt_reader_open(&t->reader, path, err, errlen)) {
        goto out;
    }
    struct gmt_reader *r = t->reader;
    L.r = r;
    if (!(t->image = gmt_reader_image(r, &t->image_len))) {
        snprintf(err, errlen, "%s: cannot map the file", path);
        goto out;
    }
    reserve_scopes(&L);
    uint64_t first = gmt_reader_offset(r);
    if (stream_for(&L, 0, first) < 0) /* records before the first CHUNK: no thread */
        goto nomem;
    int n = load_records(&L, err, errlen);
    if (n == -ENOMEM)
        goto nomem;
    if (n < 0)
        goto out;
    if (n == LOAD_EXPAND) {
        rc = LOAD_EXPAND; /* the caller keeps t (its image) to expand it */
        goto keep;
    }
    uint64_t last = gmt_reader_offset(r);
    t->streams[L.cur].segs[t->streams[L.cur].n_segs - 1].end = last;
    t->records = gmt_reader_records(r);
    t->cut = gmt_reader_cut(r, &t->cut_offset);
    if (t->scope_dups && map_scope_records(t, first, last))
        goto nomem;
    if (finish_scopes(t, L.mi, L.n_mi))
        goto nomem;
    rc = 0;
    goto out;
nomem:
    snprintf(err, errlen, "%s: out of memory", path);
out:
    if (rc)
        gmt_trace_free(t);
keep:
    gmt_u64map_free(&L.tid_device);
    gmt_u64map_free(&L.stream_of);
    free(L.mi);
    return rc;
}

int gmt_trace_load(struct gmt_trace *t, const char *path, char *err, size_t errlen)
{
    int rc = load(t, path, NULL, 0, err, errlen);
    if (rc != LOAD_EXPAND)
        return rc;
    uint8_t *img = NULL;
    size_t len = 0;
    uint64_t records = 0, lost = 0, cut_offset = UINT64_MAX;
    int x = gmt_trace_expand(t->image, t->image_len, path, &img, &len, &records, &cut_offset,
                             &lost, err, errlen);
    gmt_trace_free(t);
    if (x == -ENOMEM)
        snprintf(err, errlen, "%s: out of memory", path);
    if (x)
        return -1;
    rc = load(t, path, img, len, err, errlen);
    if (rc == LOAD_EXPAND) { /* cannot be: none is left */
        gmt_trace_free(t);
        snprintf(err, errlen, "%s: GROUP_REPEAT left after expanding", path);
        return -1;
    }
    if (rc)
        return rc;
    /* what the file itself holds: its records, and where it was cut */
    t->records = records;
    if (cut_offset != UINT64_MAX)
        t->cut_offset = cut_offset;
    t->records_dropped += lost;
    return 0;
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
    if (t->scopes_reserved)
        gmt_unreserve(t->scopes, t->scopes_reserved);
    else
        free(t->scopes);
    free(t->scope_mem);
    gmt_u64map_free(&t->scope_mem_of);
    for (size_t i = 0; i < t->n_streams; i++)
        free(t->streams[i].segs);
    free(t->streams);
    free(t->runs);
    if (t->reader)
        gmt_reader_close(t->reader);
    free(t->image_buf);
    gmt_u64map_free(&t->scope_by_id);
    gmt_u64map_free(&t->scope_at);
    if (t->scope_dense_reserved)
        gmt_unreserve(t->scope_dense, t->scope_dense_reserved);
    else
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

const struct gmt_scope_mem *gmt_trace_scope_mem(const struct gmt_trace *t,
                                                const struct gmt_scope *s)
{
    size_t i = (size_t)(s - t->scopes);
    if (i < t->scope_mem_lo || i >= t->scope_mem_hi) /* most: none sampled, no lookup */
        return NULL;
    const uint64_t *at = gmt_u64map_get(&t->scope_mem_of, i);
    return at && *at <= t->n_scope_mem ? &t->scope_mem[*at - 1] : NULL;
}

/* The SCOPE_BEGIN a scope was made from: whole in the image, which the trace keeps. */
static const struct gmt_rec_scope_begin *scope_rec(const struct gmt_trace *t,
                                                   const struct gmt_scope *s)
{
    return (const void *)(t->image + s->offset);
}

uint32_t gmt_scope_stack(const struct gmt_trace *t, const struct gmt_scope *s)
{
    return scope_rec(t, s)->stack_id;
}

int32_t gmt_scope_peer(const struct gmt_trace *t, const struct gmt_scope *s)
{
    return scope_rec(t, s)->peer;
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

/* ---- events in time order ---- */

/* A run being read: its position, the thread's clock and device there (a walk), and the
 * next event it yields (head), decoded. */
struct cursor {
    struct gmt_walk w;
    uint64_t head_off;
    struct gmt_ev head;
};

struct gmt_ev_iter {
    const struct gmt_trace *t;
    struct cursor *cur;
    struct cursor **heap;      /* by (head time, head offset) */
    size_t n;
};

long gmt_trace_scope_at(const struct gmt_trace *t, uint32_t id, uint64_t off)
{
    if (t->scope_dups) {
        const uint64_t *v = gmt_u64map_get(&t->scope_at, off);
        return v ? (long)*v - 1 : -1;
    }
    long i = gmt_trace_scope_index(t, id);
    return i >= 0 && t->scopes[i].offset <= off ? i : -1;
}

static inline bool walk_next_seg(struct gmt_walk *w)
{
    if (w->pos >= w->run_end || w->seg == w->seg_last)
        return false;
    w->seg++;
    w->pos = w->seg->start;
    w->lim = w->seg->end < w->run_end ? w->seg->end : w->run_end;
    return true;
}

bool gmt_walk_next_seg(struct gmt_walk *w)
{
    return walk_next_seg(w);
}

/* The record at w->pos (pos < lim), of any type: see gmt_walk_decode. The records were
 * validated when loading; the size check only keeps a file changed since then from
 * taking the walk outside the segment or off the 8-byte grid the record structs need.
 * Inlined by force into cursor_fill, whose walk then stays in registers (GCC 12 would
 * call it: it has two callers). */
static inline __attribute__((always_inline)) int walk_decode(const struct gmt_trace *t,
                                                             struct gmt_walk *w,
                                                             struct gmt_ev *e)
{
    const struct gmt_rec *h = (const void *)(w->img + w->pos);
    uint64_t off = w->pos;
    if (h->size < sizeof *h || h->size % GMT_ALIGN || h->size > w->lim - off)
        return -1;
    w->pos += h->size;
    switch (h->type) {
    case GMT_REC_ALLOC:
        gmt_walk_alloc(w, (const void *)h, e);
        return 1;
    case GMT_REC_ALLOC_SMALL:
        gmt_walk_alloc_small(w, (const void *)h, e);
        return 1;
    case GMT_REC_FREE:
        gmt_walk_free(w, (const void *)h, e);
        return 1;
    case GMT_REC_ALLOC_FAIL: {
        const struct gmt_rec_alloc_fail *f = (const void *)h;
        e->time = gmt_walk_tick(w, f->dt);
        e->type = GMT_EV_FAIL;
        e->addr = 0;
        e->bytes = f->bytes;
        e->api = h->aux;
        e->kind = f->kind;
        e->stack = f->stack_id;
        e->scope = f->scope_id;
        e->error = f->error;
        e->device = f->device >= 0 ? f->device : w->device;
        break;
    }
    case GMT_REC_MEMINFO: {
        const struct gmt_rec_meminfo *m = (const void *)h;
        e->time = gmt_walk_tick(w, m->dt);
        e->type = GMT_EV_MEMINFO;
        e->addr = m->free_bytes;
        e->bytes = m->total_bytes;
        e->api = 0;
        e->kind = (uint8_t)h->aux;
        e->stack = 0;
        e->scope = m->scope_id;
        e->error = 0;
        e->device = (int16_t)m->device;
        break;
    }
    case GMT_REC_SCOPE_BEGIN:
        gmt_walk_scope_begin(t, w, (const void *)h, off, e);
        return 1;
    case GMT_REC_SCOPE_END:
        return gmt_walk_scope_end(t, w, (const void *)h, off, e);
    case GMT_REC_COMM:
        gmt_walk_tick(w, ((const struct gmt_rec_comm *)(const void *)h)->dt);
        return 0;
    case GMT_REC_CUCTX: {
        /* as the loader's tid -> device + 1 map gave it back */
        int64_t d = ((const struct gmt_rec_cuctx *)(const void *)h)->device;
        w->device = (int16_t)((int)(uint64_t)(d + 1) - 1);
        return 0;
    }
    case GMT_REC_MODULE_LOAD:
    case GMT_REC_MODULE_UNLOAD:
    case GMT_REC_THREAD:
    case GMT_REC_TIME:
    case GMT_REC_END:
        /* the records with an absolute time: each has its time_ns right after the header */
        memcpy(&w->clock, (const uint8_t *)h + sizeof *h, sizeof w->clock);
        w->clock_set = true;
        return 0;
    default:
        return 0;
    }
    e->tid = w->tid;
    return 1;
}

int gmt_walk_decode(const struct gmt_trace *t, struct gmt_walk *w, struct gmt_ev *e)
{
    return walk_decode(t, w, e);
}

/* Decodes the cursor's next events into out[0..max): its head, or straight into the
 * caller's batch. Returns how many; fewer than max when the run is used up. */
static size_t cursor_fill(const struct gmt_trace *t, struct cursor *c, struct gmt_ev *out,
                          size_t max)
{
    /* the walk in a local: the stores of each decoded event could otherwise alias it and
     * force reloads */
    struct gmt_walk w = c->w;
    size_t k = 0;
    while (k < max) {
        if (w.pos >= w.lim) {
            if (!walk_next_seg(&w))
                break;
            continue;
        }
        uint64_t off = w.pos;
        int x = walk_decode(t, &w, &out[k]);
        if (x < 0)
            break;
        if (x) {
            c->head_off = off;
            k++;
        }
    }
    c->w = w;
    return k;
}

/* The cursor's next event into its head; false when the run is used up. */
static bool cursor_next(const struct gmt_trace *t, struct cursor *c)
{
    return cursor_fill(t, c, &c->head, 1) == 1;
}

static bool head_before(const struct cursor *a, const struct cursor *b)
{
    if (a->head.time != b->head.time)
        return a->head.time < b->head.time;
    return a->head_off < b->head_off;
}

static void heap_down(struct cursor **h, size_t n, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < n && head_before(h[l], h[m]))
            m = l;
        if (l + 1 < n && head_before(h[l + 1], h[m]))
            m = l + 1;
        if (m == i)
            return;
        struct cursor *x = h[i];
        h[i] = h[m];
        h[m] = x;
        i = m;
    }
}

struct gmt_ev_iter *gmt_trace_iter_new(const struct gmt_trace *t)
{
    struct gmt_ev_iter *it = calloc(1, sizeof *it);
    size_t n = t->n_runs ? t->n_runs : 1;
    if (!it || !(it->cur = calloc(n, sizeof *it->cur)) ||
        !(it->heap = calloc(n, sizeof *it->heap))) {
        gmt_trace_iter_free(it);
        return NULL;
    }
    it->t = t;
    for (size_t i = 0; i < t->n_runs; i++) {
        const struct gmt_run *run = &t->runs[i];
        const struct gmt_tstream *st = &t->streams[run->stream];
        struct gmt_walk *w = &it->cur[i].w;
        w->img = t->image;
        w->seg = &st->segs[run->seg];
        w->seg_last = &st->segs[st->n_segs - 1];
        w->pos = run->start;
        w->run_end = run->end;
        w->lim = w->seg->end < run->end ? w->seg->end : run->end;
        w->clock = run->clock;
        w->clock_set = run->clock_set;
        w->device = run->device;
        w->tid = st->tid;
        struct cursor *c = &it->cur[i];
        if (cursor_next(t, c))
            it->heap[it->n++] = c;
    }
    for (size_t j = it->n / 2; j-- > 0;)
        heap_down(it->heap, it->n, j);
    return it;
}

size_t gmt_trace_iter_merge(struct gmt_ev_iter *it, struct gmt_ev *out, size_t max)
{
    size_t k = 0;
    while (k < max && it->n > 1) {
        struct cursor *c = it->heap[0];
        out[k++] = c->head;
        if (!cursor_next(it->t, c))
            it->heap[0] = it->heap[--it->n];
        /* a cursor still ahead of the others stays on top: one compare per child */
        heap_down(it->heap, it->n, 0);
    }
    return k;
}

bool gmt_trace_iter_walk(struct gmt_ev_iter *it, struct gmt_ev *head, struct gmt_walk *w)
{
    if (it->n != 1)
        return false;
    *head = it->heap[0]->head;
    *w = it->heap[0]->w;
    it->n = 0;
    return true;
}

size_t gmt_trace_iter_next(struct gmt_ev_iter *it, struct gmt_ev *out, size_t max)
{
    size_t k = gmt_trace_iter_merge(it, out, max);
    if (k < max && it->n == 1) {
        /* The last run (the whole of a single-threaded trace): nothing to merge, so its
         * events are decoded straight into the batch, and its head is refilled only
         * when the batch is full before the run ends. */
        struct cursor *c = it->heap[0];
        out[k++] = c->head;
        k += cursor_fill(it->t, c, out + k, max - k);
        if (k < max || !cursor_next(it->t, c))
            it->n = 0;
    }
    return k;
}

void gmt_trace_iter_free(struct gmt_ev_iter *it)
{
    if (!it)
        return;
    free(it->cur);
    free(it->heap);
    free(it);
}
