/* trace_load.c: loads a trace: validates it in file order, builds its scopes and samples (the metadata tables: trace_meta.c; the other tables: trace_load_records.c), notes each thread's runs. */
#include "idnames.h"
#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "trace_finish.h"
#include "trace_image.h"
#include "trace_loader.h"
#include "trace_meta.h"
#include "trace_repeat.h"
#include "trace_runs.h"
#include "u64map.h"
#include "util.h"


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
        struct gmt_tstream *st = gmt_array_push((void **)&t->streams, &t->n_streams, &L->cap_streams, sizeof *st);
        struct gmt_run *run = gmt_array_push((void **)&t->runs, &t->n_runs, &L->cap_runs, sizeof *run);
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
    struct gmt_seg *sg = gmt_array_push((void **)&st->segs, &st->n_segs, &st->cap_segs, sizeof *sg);
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
        struct gmt_run *run = gmt_array_push((void **)&t->runs, &t->n_runs, &L->cap_runs, sizeof *run);
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

/* The reserved arrays moved to the heap, to grow by doubling from there: the bound
 * reserve_scopes() took is one scope per record, which repeated groups pass (their
 * members' scopes lie at one record). Returns 0 or -ENOMEM. */
static int unreserve_scopes(struct loader *L)
{
    struct gmt_trace *t = L->t;
    size_t cap = 2 * L->cap_scope + 1024;
    struct gmt_scope *s = calloc(cap, sizeof *s);
    if (!s)
        return -ENOMEM;
    memcpy(s, t->scopes, t->n_stored * sizeof *s);
    gmt_unreserve(t->scopes, t->scopes_reserved);
    t->scopes = s;
    t->scopes_reserved = 0;
    L->cap_scope = cap;
    return 0;
}

static int unreserve_dense(struct gmt_trace *t)
{
    uint32_t *p = malloc(t->n_scope_dense ? t->n_scope_dense * sizeof *p : 1);
    if (!p)
        return -ENOMEM;
    memcpy(p, t->scope_dense, t->n_scope_dense * sizeof *p);
    gmt_unreserve(t->scope_dense, t->scope_dense_reserved);
    t->scope_dense = p;
    t->scope_dense_reserved = 0;
    return 0;
}

/* Scope ids are dense from 1 (the library draws them from one counter), and every event
 * of a trace looks its scope up: an array answers with one load where the hash map takes
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
        if ((uint64_t)id > 4 * (uint64_t)t->n_stored + 65536)
            return 0;
        size_t n = t->n_scope_dense ? t->n_scope_dense : 1024;
        while (n <= id)
            n *= 2;
        /* past the bound reserved (repeated groups' members): on the heap from now */
        if (t->scope_dense_reserved && n * sizeof *t->scope_dense > t->scope_dense_reserved &&
            unreserve_dense(t))
            return -ENOMEM;
        /* reserved, it grows in place: the pages past the old end are fresh, zero */
        if (!t->scope_dense_reserved) {
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
    if (t->scopes_reserved && t->n_stored == L->cap_scope && unreserve_scopes(L))
        return -ENOMEM;
    if (t->scopes_reserved) {
        s = &t->scopes[t->n_stored++]; /* zero: fresh pages, never reused */
    } else if (!(s = gmt_array_push((void **)&t->scopes, &t->n_stored, &L->cap_scope, sizeof *s))) {
        return -ENOMEM;
    }
    t->n_scopes++;
    s->id = b->scope_id;
    s->parent_id = b->parent_id;
    s->tid = e->tid;
    s->op = (uint8_t)(b->h.aux < 256 ? b->h.aux : 255); /* an op past the list: unknown */
    s->comm = b->comm;
    s->count = b->count;
    s->datatype = b->datatype;
    s->t_begin = e->time_ns;
    s->offset = e->offset;
    s->device = (int16_t)L->cur_device;
    size_t idx = t->n_stored - 1;
    if (b->scope_id <= L->max_id && gmt_trace_scope_index(t, b->scope_id) >= 0)
        t->scope_dups = true;
    if (b->scope_id > L->max_id)
        L->max_id = b->scope_id;
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
    if (e->rec->size >= GMT_SCOPE_CALL_MIN)
        return LOAD_EXPAND; /* the call form: its begin is restored by expanding */
    long i = gmt_trace_stored_index(t, x->scope_id);
    if (i < 0) {
        /* a repeated group's member (its record stands for its end): nothing to close */
        if (t->n_reps && gmt_trace_member_index(t, x->scope_id) >= 0)
            return note_event(L, e);
        return 0; /* its begin was lost (cut, or before a fork): nothing to close */
    }
    struct gmt_scope *s = &t->scopes[i];
    s->t_end = e->time_ns;
    s->result = x->result;
    /* the expanded image's END of a timed call form: its weight (trace_expand.c) */
    s->host_weight = (uint8_t)(x->duration < 255 ? x->duration : 255);
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

static int on_cuctx(struct loader *L, const struct gmt_event *e)
{
    const struct gmt_rec_cuctx *c = (const void *)e->rec;
    int x = gmt_u64map_put(&L->tid_device, e->tid, (uint64_t)(gmt_device_ordinal(c->device) + 1));
    if (x)
        return x;
    L->cur_device = thread_device(L, e->tid); /* as the map gives it back */
    return 0;
}

static int on_chunk(struct loader *L, const struct gmt_event *e)
{
    struct gmt_trace *t = L->t;
    const struct gmt_rec_chunk *c = (const void *)e->rec;
    t->streams[L->cur].segs[t->streams[L->cur].n_segs - 1].end = e->offset;
    long i = stream_for(L, c->tid, e->offset + e->rec->size);
    if (i < 0)
        return -ENOMEM;
    L->cur = (size_t)i;
    L->cur_device = thread_device(L, c->tid);
    return 0;
}






static int on_meminfo(struct loader *L, const struct gmt_event *e, char *err, size_t errlen)
{
    const struct gmt_rec_meminfo *m = (const void *)e->rec;
    if (m->total_bytes > GMT_BYTES_MAX || m->free_bytes > GMT_BYTES_MAX) {
        snprintf(err, errlen, "%s: offset %llu: MEMINFO of %llu bytes free of %llu is beyond "
                 "the 2^56 bytes a trace may hold: the trace is corrupt", L->t->path,
                 (unsigned long long)e->offset, (unsigned long long)m->free_bytes,
                 (unsigned long long)m->total_bytes);
        return -EINVAL;
    }
    const struct gmt_rec_meminfo_ext *x = (const void *)e->rec;
    const struct gmt_rec_meminfo_ext2 *x2 = (const void *)e->rec;
    bool has_other = e->rec->size >= sizeof *x2 && x2->other_bytes != GMT_MEMINFO_UNKNOWN;
    if (has_other && x2->other_bytes > GMT_BYTES_MAX) {
        snprintf(err, errlen, "%s: offset %llu: MEMINFO of %llu bytes used by other processes is "
                 "beyond the 2^56 bytes a trace may hold: the trace is corrupt", L->t->path,
                 (unsigned long long)e->offset, (unsigned long long)x2->other_bytes);
        return -EINVAL;
    }
    if (e->rec->size >= sizeof *x && x->process_bytes != GMT_MEMINFO_UNKNOWN) {
        if (x->process_bytes > GMT_BYTES_MAX) {
            snprintf(err, errlen, "%s: offset %llu: MEMINFO of %llu bytes used by the process is "
                     "beyond the 2^56 bytes a trace may hold: the trace is corrupt", L->t->path,
                     (unsigned long long)e->offset, (unsigned long long)x->process_bytes);
            return -EINVAL;
        }
        struct gmt_trace *t = L->t;
        struct gmt_proc_sample *p = gmt_array_push((void **)&t->proc_samples, &t->n_proc_samples,
                                                   &L->cap_proc, sizeof *p);
        if (!p)
            return -ENOMEM;
        *p = (struct gmt_proc_sample){e->time_ns, x->process_bytes, (int16_t)gmt_device_ordinal(m->device),
                                      has_other ? x2->other_count : 0,
                                      has_other ? x2->other_bytes : GMT_MEMINFO_UNKNOWN,
                                      has_other ? x2->other_pid : 0};
        if (t->n_proc_samples > 1 && p[-1].time > p->time)
            L->samples_unsorted = true;
    }
    struct gmt_meminfo_note *n = gmt_array_push((void **)&L->mi, &L->n_mi, &L->cap_mi, sizeof *n);
    if (!n)
        return -ENOMEM;
    n->time = e->time_ns;
    n->off = e->offset;
    n->free_bytes = m->free_bytes;
    n->total_bytes = m->total_bytes;
    n->scope = m->scope_id;
    n->tid = e->tid;
    n->size = e->rec->size;
    n->phase = (uint8_t)e->rec->aux;
    return note_event(L, e);
}


/* ---- repeated groups (GROUP_REPEAT): trace_repeat.h ---- */

/* The repeat state of thread tid; NULL when out of memory. */
static struct gmt_rep_thread *rep_thread(struct loader *L, uint32_t tid)
{
    if (!L->rep_th || L->rep_tid != tid) {
        if (!gmt_repeats_thread(&L->reps, tid))
            return NULL;
        L->rep_th = (size_t)*gmt_u64map_get(&L->reps.of_tid, tid);
        L->rep_tid = tid;
    }
    return &L->reps.th[L->rep_th - 1];
}

/* A scope record of the thread, noted for the repeats that follow. */
static inline int rep_note(struct loader *L, const struct gmt_event *e)
{
    if (!L->repeats)
        return 0;
    struct gmt_rep_thread *rt = rep_thread(L, e->tid);
    if (!rt)
        return -ENOMEM;
    gmt_rep_note(rt, e->rec, e->offset);
    return 0;
}

/* The members of group `like` (the offsets of the SCOPE_BEGINs they were first read
 * from, and what their records said), noted once for all the groups that repeat it:
 * where they start in t->rep_origin and t->rep_tmpl + 1. */
static int rep_origins(struct loader *L, struct gmt_rep_group *like)
{
    struct gmt_trace *t = L->t;
    if (like->tmpl)
        return 0;
    size_t at = t->n_rep_origin, cap = t->cap_rep_origin;
    if (gmt_grow((void **)&t->rep_origin, &t->cap_rep_origin, at + (size_t)like->n,
                 sizeof *t->rep_origin))
        return -ENOMEM;
    if (t->cap_rep_origin != cap || !t->rep_tmpl) {
        struct gmt_rep_tmpl *m = realloc(t->rep_tmpl, t->cap_rep_origin * sizeof *m);
        if (!m)
            return -ENOMEM;
        t->rep_tmpl = m;
    }
    for (int i = 0; i < like->n; i++) {
        const struct gmt_rep_member *x = &like->m[i];
        t->rep_origin[at + (size_t)i] = x->origin;
        t->rep_tmpl[at + (size_t)i] = (struct gmt_rep_tmpl){
            .comm = x->b.comm, .count = x->b.count, .datatype = x->b.datatype,
            .result = x->result, .device = -1,
            .op = (uint8_t)(x->b.h.aux < 256 ? x->b.h.aux : 255)};
    }
    t->n_rep_origin = at + (size_t)like->n;
    like->tmpl = at + 1;
    return 0;
}

/* The note's place among the notes by group id (t->rep_by_id): last, but for a group
 * whose id is below the latest's (another thread's, written later). 0 or -ENOMEM. */
static int rep_by_id_add(struct loader *L, uint32_t note)
{
    struct gmt_trace *t = L->t;
    if (t->n_reps > L->cap_by_id) {
        size_t cap = L->cap_by_id ? 2 * L->cap_by_id : 1024;
        uint32_t *p = realloc(t->rep_by_id, cap * sizeof *p);
        if (!p)
            return -ENOMEM;
        t->rep_by_id = p;
        L->cap_by_id = cap;
    }
    uint32_t id = t->reps[note].group_id;
    size_t k = t->n_reps - 1;
    while (k > 0 && t->reps[t->rep_by_id[k - 1]].group_id > id) {
        t->rep_by_id[k] = t->rep_by_id[k - 1];
        k--;
    }
    t->rep_by_id[k] = note;
    return 0;
}

/* GROUP_REPEAT: a note of its members, whose scopes are made from it when asked for
 * (gmt_trace_scope) as their records would be read, at the thread's time; the record
 * stays in the image, where the iteration hands out their events (trace_iter.c). One
 * that cannot stand counts its members' records as dropped. */
static int on_repeat(struct loader *L, const struct gmt_event *e)
{
    struct gmt_trace *t = L->t;
    const struct gmt_rec_group_repeat *g = (const void *)e->rec;
    struct gmt_rep_thread *rt = rep_thread(L, e->tid);
    if (!rt)
        return -ENOMEM;
    const struct gmt_rep_member *m;
    struct gmt_rep_group *like;
    int n = gmt_rep_apply(rt, g, &m, &like);
    if (!n) {
        L->rep_lost += 2 * (uint64_t)g->count;
        return 0;
    }
    if (rep_origins(L, like))
        return -ENOMEM;
    rt->cur.tmpl = like->tmpl;
    /* an id a member takes that a scope has already: a corrupt file (ids are drawn from
     * one counter), looked for only when one can be */
    uint32_t last_id = g->scope_id + (uint32_t)n;
    for (uint32_t id = g->scope_id + 1; id <= last_id && id <= L->max_id && !t->scope_dups; id++)
        t->scope_dups = gmt_trace_scope_index(t, id) >= 0;
    if (last_id > L->max_id)
        L->max_id = last_id;
    struct gmt_rep_note *note = gmt_array_push((void **)&t->reps, &t->n_reps, &L->cap_reps,
                                               sizeof *note);
    if (!note || gmt_u64map_put_new(&t->rep_at, e->offset, t->n_reps))
        return -ENOMEM;
    *note = (struct gmt_rep_note){
        .first_scope = t->n_scopes, .stored_before = t->n_stored, .origin_at = like->tmpl - 1,
        .offset = e->offset, .time = e->time_ns, .count = (uint32_t)n, .group_id = g->scope_id,
        .tid = e->tid, .device = (int16_t)L->cur_device};
    t->n_scopes += (size_t)n;
    if (rep_by_id_add(L, (uint32_t)(t->n_reps - 1)))
        return -ENOMEM;
    /* its members' begins and ends: events at the thread's time (the reader's CLOCK_NOW),
     * the first of which may start a run */
    int x = note_event(L, e);
    t->n_events += 2 * (uint64_t)n - 1;
    return x;
}

static int on_record(struct loader *L, const struct gmt_event *e, char *err, size_t errlen)
{
    struct gmt_trace *t = L->t;
    const struct gmt_rec *r = e->rec;

    /* Allocations and frees, most of the records, are decoded again when iterated
     * (trace_iter.c's cursor_fill): here they only count and mark runs (see also load_records). */
    if (is_plain_event(r->type))
        return note_event(L, e);
    switch (r->type) {
    case GMT_REC_PROCESS: return gmt_meta_process(t, r);
    case GMT_REC_ENV: return gmt_meta_env(t, &L->cap_env, r);
    case GMT_REC_VERSION:
        if (r->aux < 4)
            t->version[r->aux] = ((const struct gmt_rec_version *)(const void *)r)->version;
        return 0;
    case GMT_REC_MODULE_LOAD: return gmt_meta_module(t, &L->cap_mod, e);
    case GMT_REC_MODULE_UNLOAD: return gmt_meta_module_unload(t, r);
    case GMT_REC_THREAD:
        if (L->repeats) { /* the thread's records start afresh */
            struct gmt_rep_thread *rt = rep_thread(L, e->tid);
            if (!rt)
                return -ENOMEM;
            gmt_rep_restart(rt);
        }
        return gmt_meta_thread(t, &L->cap_thr, r);
    case GMT_REC_STACK: return gmt_meta_stack(t, r, err, errlen, e->offset);
    case GMT_REC_PYCODE: return gmt_meta_pycode(t, r);
    case GMT_REC_CUCTX: return on_cuctx(L, e);
    case GMT_REC_CHUNK: return on_chunk(L, e);
    case GMT_REC_COMM: return gmt_load_comm(L, e);
    case GMT_REC_SCOPE_BEGIN: return on_scope_begin(L, e);
    case GMT_REC_SCOPE_END: return on_scope_end(L, e);
    case GMT_REC_MEMINFO: return on_meminfo(L, e, err, errlen);
    case GMT_REC_GRAPHMEM: return gmt_load_graphmem(L, e, err, errlen);
    case GMT_REC_DEVLIMITS: return gmt_load_devlimits(L, e);
    case GMT_REC_NCCL_MEMSTATS: return gmt_load_memstats(t, r);
    case GMT_REC_MODLOAD: return gmt_load_modload(t, r);
    case GMT_REC_NCCL_COLL_INFO: return gmt_load_nccl_coll_info(L, e);
    case GMT_REC_NVTX_STRING:
    case GMT_REC_NVTX_RANGE: return gmt_load_nvtx(L, e);
    case GMT_REC_BLOCK: return gmt_load_block(L, e, err, errlen);
    case GMT_REC_END:
        t->complete = true;
        t->records_dropped = ((const struct gmt_rec_end *)(const void *)r)->records_dropped;
        return 0;
    case GMT_REC_GROUP_REPEAT:
        return L->repeats ? on_repeat(L, e) : LOAD_REPEATS;
    case GMT_REC_SCOPE_OPEN:
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
        return rep_note(L, e) ? -ENOMEM : on_scope_begin(L, e);
    if (e->rec->type == GMT_REC_SCOPE_END) {
        if (e->rec->size < GMT_SCOPE_CALL_MIN && rep_note(L, e))
            return -ENOMEM;
        return on_scope_end(L, e);
    }
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

/* Scopes are as many as collective calls, tens of megabytes in a long run: grown by
 * doubling, the array would be copied again and again, each copy faulting its pages in.
 * So the space for as many as the file has room for (one SCOPE_BEGIN record each) is
 * reserved up front and filled in place; only what is used takes memory. When that
 * space cannot be had, the array grows by doubling. */
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
     * grows in place instead of being copied and zeroed at each doubling. */
    if (bound > (SIZE_MAX / sizeof *t->scope_dense - 1024 - 2 * 65536) / 8)
        return;
    size_t dense = (2 * (4 * bound + 65536) + 1024) * sizeof *t->scope_dense;
    if ((t->scope_dense = gmt_reserve(dense)))
        t->scope_dense_reserved = dense;
}

/* Loads from the file, or from `image` (malloc'd, taken over) when not NULL, following
 * the repeated groups when `repeats`. Returns 0, LOAD_EXPAND (the file has call forms or
 * SCOPE_OPEN), LOAD_REPEATS (it has GROUP_REPEAT, not followed), or -1 with a message
 * in err. */
static int load(struct gmt_trace *t, const char *path, uint8_t *image, size_t image_len,
                bool repeats, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    struct loader L = {.t = t, .cur_device = -1, .repeats = repeats};
    gmt_repeats_init(&L.reps);
    gmt_u64map_init(&t->rep_at);
    gmt_u64map_init(&t->member_comm);
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
    int x = gmt_trace_open_image(t, path, image, image_len, err, errlen);
    if (x == -ENOMEM)
        goto nomem;
    if (x)
        goto out;
    struct gmt_reader *r = t->reader;
    L.r = r;
    reserve_scopes(&L);
    uint64_t first = gmt_reader_offset(r);
    if (stream_for(&L, 0, first) < 0) /* records before the first CHUNK: no thread */
        goto nomem;
    int n = load_records(&L, err, errlen);
    if (n == -ENOMEM)
        goto nomem;
    if (n < 0)
        goto out;
    if (n == LOAD_EXPAND || n == LOAD_REPEATS) {
        rc = n; /* the caller keeps t (its image) to load it again */
        goto keep;
    }
    if (t->t_last > GMT_TIME_MAX) { /* t_last is the latest of every time read */
        gmt_trace_time_beyond(t, path, err, errlen);
        goto out;
    }
    uint64_t last = gmt_reader_offset(r);
    t->streams[L.cur].segs[t->streams[L.cur].n_segs - 1].end = last;
    t->records = gmt_reader_records(r);
    t->cut = gmt_reader_cut(r, &t->cut_offset);
    if (t->scope_dups && gmt_trace_map_scope_records(t, first, last))
        goto nomem;
    if (gmt_trace_finish_scopes(t, L.mi, L.n_mi))
        goto nomem;
    t->records_dropped += L.rep_lost;
    if (L.samples_unsorted)
        gmt_trace_sort_samples(t);
    if (gmt_trace_tie_choices(t, L.choices_unsorted))
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
    gmt_repeats_free(&L.reps);
    free(L.mi);
    return rc;
}

/* A trace is read once in the common case. One with repeated groups is read again,
 * following them (which every scope record then pays for); one with call forms or
 * SCOPE_OPEN is read from an image with those replaced, following the repeats. */
int gmt_trace_load(struct gmt_trace *t, const char *path, char *err, size_t errlen)
{
    int rc = load(t, path, NULL, 0, false, err, errlen);
    if (rc == LOAD_REPEATS) {
        gmt_trace_free(t);
        rc = load(t, path, NULL, 0, true, err, errlen);
    }
    if (rc != LOAD_EXPAND)
        return rc;
    uint8_t *img = NULL;
    size_t len = 0;
    uint64_t records = 0, lost = 0, cut_offset = UINT64_MAX;
    int x = gmt_trace_expand_calls(t->image, t->image_len, path, &img, &len, &records,
                                   &cut_offset, &lost, err, errlen);
    gmt_trace_free(t);
    if (x == -ENOMEM)
        snprintf(err, errlen, "%s: out of memory", path);
    if (x)
        return -1;
    rc = load(t, path, img, len, true, err, errlen);
    if (rc == LOAD_EXPAND || rc == LOAD_REPEATS) { /* cannot be: none is left */
        gmt_trace_free(t);
        snprintf(err, errlen, "%s: SCOPE_END's call form or SCOPE_OPEN left after expanding",
                 path);
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
    for (size_t i = 0; i < t->n_pycodes; i++) {
        free(t->pycodes[i].name);
        free(t->pycodes[i].qualname);
        free(t->pycodes[i].file);
    }
    free(t->pycodes);
    free(t->threads);
    free(t->comms);
    if (t->scopes_reserved)
        gmt_unreserve(t->scopes, t->scopes_reserved);
    else
        free(t->scopes);
    free(t->scope_mem);
    gmt_u64map_free(&t->scope_mem_of);
    free(t->proc_samples);
    free(t->limits);
    free(t->graph_samples);
    free(t->choices);
    free(t->nvtx);
    free(t->blocks);
    gmt_u64map_free(&t->rep_at);
    gmt_u64map_free(&t->member_comm);
    free(t->reps);
    free(t->rep_by_id);
    free(t->rep_origin);
    free(t->rep_tmpl);
    free(t->memstats);
    free(t->modloads);
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
