/* replay.c: replays a trace's allocations in time order and attributes them to sites and NCCL calls (the devices' slots and samples: replay_device.c). */
#include "replay.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collectives.h"
#include "kind_class.h"
#include "live_map.h"
#include "nccl_types.h"
#include "reader.h"
#include "replay_device.h"
#include "util.h"

/*
 * A site's live bytes on one device, and what they were at that device's peak. The peak
 * snapshot is copy-on-write: a new peak only bumps the device's epoch, and a cell saves
 * its value the first time it changes after that. So one pass gives each site's bytes
 * at the final peak, with no second replay that stops there.
 */
struct site_dev {
    uint64_t live, at_peak;
    uint32_t epoch;            /* at_peak holds the value at this epoch's peak */
};

/* The site of a stack not in site_by_stack: in the map, or new. */
static __attribute__((noinline)) int site_of_slow(struct state *S, uint32_t stack)
{
    const struct gmt_trace *t = S->t;
    if (stack >= t->n_stacks) {
        uint64_t *v = gmt_u64map_get(&S->site_by_big_stack, stack);
        if (v)
            return (int)*v;
    }
    struct gmt_report *rep = S->rep;
    size_t n = rep->n_sites, cap = S->cap_sites;
    if (gmt_grow((void **)&rep->sites, &S->cap_sites, n + 1, sizeof *rep->sites))
        return -ENOMEM;
    for (size_t d = 0; d < GMT_MAX_DEVS && S->cap_sites > cap; d++) {
        if (!S->sdl[d])
            continue;
        struct site_dev *p = realloc(S->sdl[d], S->cap_sites * sizeof *p);
        if (!p)
            return -ENOMEM;
        memset(p + cap, 0, (S->cap_sites - cap) * sizeof *p);
        S->sdl[d] = p;
    }
    memset(&rep->sites[n], 0, sizeof rep->sites[n]);
    rep->sites[n].stack = stack;
    rep->sites[n].cat = S->o->stack_cat && stack < t->n_stacks ? S->o->stack_cat[stack] : 0;
    if (rep->sites[n].cat >= GMT_MAX_CATS)
        rep->sites[n].cat = 0;
    rep->n_sites++;
    if (stack < t->n_stacks)
        S->site_by_stack[stack] = (uint32_t)n + 1;
    else if (gmt_u64map_put(&S->site_by_big_stack, stack, n))
        return -ENOMEM;
    return (int)n;
}

/* The site index of a stack id (made at its first allocation), or -ENOMEM. */
static inline int site_of(struct state *S, uint32_t stack)
{
    if (stack < S->t->n_stacks && S->site_by_stack[stack])
        return (int)S->site_by_stack[stack] - 1;
    return site_of_slow(S, stack);
}

static bool is_attributable(uint16_t op)
{
    return op != GMT_OP_MemAlloc && op != GMT_OP_MemFree;
}

/* The scope an event belongs to: its own thread's (recorded), or for an allocation made
 * on a thread with none (NCCL's proxy thread), the most recently begun scope still open
 * on another thread of the same device. The event's fields one by one, not the event:
 * its address taken here would keep the replay's walk (run_walk) from holding the
 * event it decodes in registers. */
static int32_t attribute_slow(struct state *S, uint32_t scope, uint32_t tid, int device)
{
    const struct gmt_trace *t = S->t;
    if (scope) {
        long idx = gmt_trace_scope_index(t, scope);
        if (idx >= 0)
            return gmt_colls_top(S->map, (size_t)idx);
    }
    int32_t best = -1;
    uint64_t best_begin = 0;
    struct gmt_scope tmp;
    for (size_t i = 0; i < S->n_open; i++) {
        const struct gmt_scope *s = gmt_trace_scope(t, (size_t)S->open[i], &tmp);
        if (s->tid == tid || !is_attributable(s->op))
            continue;
        if (s->device >= 0 && device >= 0 && s->device != device)
            continue;
        if (best < 0 || s->t_begin >= best_begin) {
            best = S->open[i];
            best_begin = s->t_begin;
        }
    }
    return best < 0 ? best : gmt_colls_top(S->map, (size_t)best);
}

/* attribute() without a call for the common events: a scope of its own that the trace's
 * dense array holds, or none and none open. Whether an event has a scope follows no
 * pattern, so both read the same table (id 0 is never in the dense array: it reads 0,
 * whose entry is -1), and only the rare rest branches off. */
static inline int32_t attribute(struct state *S, const struct gmt_timed_event *e)
{
    const struct gmt_trace *t = S->t;
    uint32_t id = e->scope;
    int32_t sc = S->top_by_dense[id < t->n_scope_dense ? t->scope_dense[id] : 0];
    if (sc < 0 && (id || S->n_open))
        return attribute_slow(S, id, e->tid, e->device);
    return sc;
}

static uint32_t innermost_open_id(const struct state *S)
{
    const struct gmt_trace *t = S->t;
    int32_t best = -1;
    uint64_t best_begin = 0;
    uint32_t id = 0;
    struct gmt_scope tmp;
    for (size_t i = 0; i < S->n_open; i++) {
        const struct gmt_scope *s = gmt_trace_scope(t, (size_t)S->open[i], &tmp);
        if (best < 0 || s->t_begin >= best_begin) {
            best = S->open[i];
            best_begin = s->t_begin;
            id = s->id;
        }
    }
    return id;
}

static void sdl_add(struct state *S, uint32_t site, int ds, uint64_t delta)
{
    struct site_dev *c = &S->sdl[ds][site];
    if (c->epoch != S->peak_epoch[ds]) {
        c->at_peak = c->live;
        c->epoch = S->peak_epoch[ds];
    }
    c->live += delta;
}

/* The tracked bytes of a repeated group's member moved: none but in an odd file (an
 * allocation naming a member, whose record lies before it). 0 or -ENOMEM. */
static __attribute__((noinline)) int member_tracked_add(struct state *S, int32_t i, uint64_t delta)
{
    uint64_t *v = gmt_u64map_get(&S->rep->member_tracked, (uint64_t)i);
    if (v) {
        *v = (uint64_t)gmt_wrap_add((int64_t)*v, delta);
        return 0;
    }
    return gmt_u64map_put_new(&S->rep->member_tracked, (uint64_t)i,
                              (uint64_t)gmt_wrap_add(0, delta));
}

/* The tracked bytes of scope i (an index) moved by delta, mod 2^64. 0 or -ENOMEM. */
static inline int tracked_add(struct state *S, int32_t i, uint64_t delta)
{
    uint32_t j;
    long k = gmt_scope_slot(S->t, (size_t)i, &j);
    if (__builtin_expect(k < 0, 0))
        return member_tracked_add(S, i, delta);
    int64_t *v = &S->rep->scope_tracked[k];
    *v = gmt_wrap_add(*v, delta);
    return 0;
}

static uint32_t scope_id_of(const struct state *S, int32_t i)
{
    struct gmt_scope tmp;
    return gmt_trace_scope(S->t, (size_t)i, &tmp)->id;
}

/* A device allocation's bytes and thread for its scope's collective row; sc >= 0 (a top
 * scope: each has its row). The caller counts it in n when it is inside --to. */
static inline struct gmt_row_count *count_scope_alloc(struct state *S, int32_t sc,
                                                  const struct gmt_timed_event *e)
{
    int32_t row = gmt_colls_row(S->map, (size_t)sc);
    /* -1: a scope gmt_colls_top_scopes left inside a parent chain it gave up on (a corrupt file's
     * cycle): its allocations go to no row */
    struct gmt_row_count *c = __builtin_expect(row >= 0, 1) ? &S->rc[row] : &S->no_row;
    c->bytes += e->bytes;
    struct gmt_scope tmp;
    c->other += e->tid != gmt_trace_scope(S->t, (size_t)sc, &tmp)->tid;
    return c;
}

/* Imported handles (a peer's memory), by digest: few in a process (one per peer buffer),
 * looked up only for mappings. */
static bool imported(const struct state *S, int32_t digest)
{
    for (size_t i = 0; i < S->n_imported; i++)
        if (S->imported[i] == digest)
            return true;
    return false;
}

static int imported_add(struct state *S, int32_t digest)
{
    if (imported(S, digest))
        return 0;
    if (gmt_grow((void **)&S->imported, &S->cap_imported, S->n_imported + 1, sizeof *S->imported))
        return -ENOMEM;
    S->imported[S->n_imported++] = digest;
    return 0;
}

/* An allocation of local device memory: its site's, its category's and its call's bytes,
 * and the device's peak. */
static inline __attribute__((always_inline)) int charge_device(struct state *S, struct gmt_live *l,
                                                               int ds, int site,
                                                               const struct gmt_timed_event *e)
{
    struct gmt_report *rep = S->rep;
    struct gmt_site_row *sr = &rep->sites[site];
    rep->dev[ds].device_allocs++;
    if (l->scope >= 0) {
        count_scope_alloc(S, l->scope, e)->n++;
        if (tracked_add(S, l->scope, e->bytes))
            return -ENOMEM;
    }
    /* a size beyond GMT_BYTES_MAX, or what is live on a device adding up past it, is
     * corrupt (gmt_analyze then finds the record): one test for both, as neither
     * alone can wrap the sum. The sums below and their differences then fit. */
    uint64_t live = S->tracked[ds] + e->bytes;
    if ((live | e->bytes) > GMT_BYTES_MAX)
        return -EOVERFLOW;
    S->tracked[ds] = live;
    S->by_cat[ds][l->cat] += e->bytes;
    sdl_add(S, (uint32_t)site, ds, e->bytes);
    if (!sr->allocs++)
        sr->api = e->api;
    sr->bytes_total += e->bytes;
    sr->ever_live |= e->bytes != 0;
    struct gmt_dev_report *d = &rep->dev[ds];
    if (S->by_cat[ds][l->cat] > d->cat_peak[l->cat] && in_window(S, e->time))
        d->cat_peak[l->cat] = S->by_cat[ds][l->cat];
    if (S->tracked[ds] > d->peak && in_window(S, e->time)) {
        d->peak = S->tracked[ds];
        d->peak_time = e->time;
        d->peak_scope = l->scope >= 0 ? scope_id_of(S, l->scope) : innermost_open_id(S);
        memcpy(d->peak_by_cat, S->by_cat[ds], sizeof d->peak_by_cat);
        S->peak_epoch[ds]++;
    }
    return 0;
}

/* An allocation of pinned host memory, address space or a peer's memory mapped here. */
static inline __attribute__((always_inline)) int charge_other(struct state *S, struct gmt_live *l,
                                                              int ds, const struct gmt_timed_event *e)
{
    struct gmt_report *rep = S->rep;
    if (gmt_kind_host(e->kind)) {
        uint64_t live = S->host[ds] + e->bytes;
        if ((live | e->bytes) > GMT_BYTES_MAX)
            return -EOVERFLOW;
        S->host[ds] = live;
        if (S->host[ds] > rep->dev[ds].host_peak)
            rep->dev[ds].host_peak = S->host[ds];
    } else if (e->kind == GMT_KIND_VIRTUAL) {
        uint64_t live = S->virt[ds] + e->bytes;
        if ((live | e->bytes) > GMT_BYTES_MAX)
            return -EOVERFLOW;
        S->virt[ds] = live;
        if (S->virt[ds] > rep->dev[ds].virtual_peak)
            rep->dev[ds].virtual_peak = S->virt[ds];
    } else if (gmt_kind_peer(e->kind) || (e->kind == GMT_KIND_MAPPING && e->error && imported(S, e->error))) {
        if (e->kind == GMT_KIND_IMPORTED && imported_add(S, gmt_handle_digest(e->addr)))
            return -ENOMEM;
        l->kind = GMT_KIND_IMPORTED; /* a peer's memory mapped here: freed as such */
        uint64_t live = S->peer[ds] + e->bytes;
        if ((live | e->bytes) > GMT_BYTES_MAX)
            return -EOVERFLOW;
        S->peer[ds] = live;
        if (S->peer[ds] > rep->dev[ds].peer_peak)
            rep->dev[ds].peer_peak = S->peer[ds];
    }
    return 0;
}

/* Inlined by force, as on_free: the walk's copies then read the event from registers. */
static inline __attribute__((always_inline)) int on_alloc(struct state *S, const struct gmt_timed_event *e)
{
    struct gmt_report *rep = S->rep;
    int ns = gmt_ns_of_kind(e->kind);
    uint64_t key = gmt_live_key(ns, e->addr);
    if (e->kind == GMT_KIND_RETAINED) {
        struct gmt_live *v = gmt_live_get(&S->live_by_key, key);
        if (v)
            v->refs++;
        return 0;
    }
    int ds = dslot(S, e->device);
    int site = site_of(S, e->stack);
    if (site < 0)
        return site;
    if (!S->sdl[ds] && !(S->sdl[ds] = calloc(S->cap_sites, sizeof *S->sdl[ds])))
        return -ENOMEM;
    struct gmt_live *l = gmt_live_find_or_slot(&S->live_by_key, key);
    if (!l)
        return -ENOMEM;
    if (l->refs) {
        /* an address reused without a free we saw: the old entry is gone, its slot
         * (same key) takes the new one */
        if (gmt_kind_device(l->kind)) {
            S->tracked[l->dslot] -= l->bytes;
            S->by_cat[l->dslot][l->cat] -= l->bytes;
            sdl_add(S, l->site, l->dslot, -l->bytes);
        }
    } else {
        S->live_by_key.n++;
    }
    *l = (struct gmt_live){.key = key};
    struct gmt_site_row *sr = &rep->sites[site];
    l->bytes = e->bytes;
    l->site = (uint32_t)site;
    l->refs = 1;
    l->dslot = (int16_t)ds;
    l->kind = e->kind;
    l->cat = sr->cat;
    l->scope = attribute(S, e);

    rep->dev[ds].allocs++;
    if (gmt_kind_device(e->kind))
        return charge_device(S, l, ds, site, e);
    return charge_other(S, l, ds, e);
}

static inline __attribute__((always_inline)) int on_free(struct state *S, const struct gmt_timed_event *e)
{
    struct gmt_report *rep = S->rep;
    uint64_t key = gmt_live_key(gmt_ns_of_free_api(e->api), e->addr);
    struct gmt_live *l = gmt_live_get(&S->live_by_key, key);
    if (!l) {
        if (e->addr)
            rep->unmatched_frees++;
        return 0;
    }
    if (l->refs > 1) { /* a retained handle: released once per reference */
        l->refs--;
        return 0;
    }
    int ds = l->dslot;
    rep->dev[ds].frees++;
    if (gmt_kind_device(l->kind)) {
        int32_t sc = attribute(S, e);
        if (sc >= 0 && tracked_add(S, sc, -l->bytes))
            return -ENOMEM;
        S->tracked[ds] -= l->bytes;
        S->by_cat[ds][l->cat] -= l->bytes;
        sdl_add(S, l->site, ds, -l->bytes);
    } else if (gmt_kind_host(l->kind)) {
        S->host[ds] -= l->bytes;
    } else if (l->kind == GMT_KIND_VIRTUAL) {
        S->virt[ds] -= l->bytes;
    } else if (gmt_kind_peer(l->kind)) {
        S->peer[ds] -= l->bytes;
    }
    gmt_live_del_at(&S->live_by_key, l);
    return 0;
}

static int on_fail(struct state *S, const struct gmt_timed_event *e)
{
    struct gmt_report *rep = S->rep;
    if (!in_window(S, e->time))
        return 0;
    if (e->bytes > GMT_BYTES_MAX)
        return -EOVERFLOW;
    int ds = dslot(S, e->device);
    rep->dev[ds].failures++;
    if (gmt_grow((void **)&rep->fails, &S->cap_fails, rep->n_fails + 1, sizeof *rep->fails))
        return -ENOMEM;
    struct gmt_fail_row *f = &rep->fails[rep->n_fails++];
    memset(f, 0, sizeof *f);
    f->time = e->time;
    f->bytes = e->bytes;
    f->api = e->api;
    f->kind = e->kind;
    f->error = e->error;
    f->device = e->device;
    f->stack = e->stack;
    f->tid = e->tid;
    int32_t sc = attribute(S, e);
    f->scope = sc >= 0 ? scope_id_of(S, sc) : 0;
    f->tracked = S->tracked[ds];
    memcpy(f->by_cat, S->by_cat[ds], sizeof f->by_cat);
    if (S->sampled[ds]) {
        f->has_dev = true;
        f->dev_free = S->sample_free[ds];
        f->dev_total = S->sample_total[ds];
    }
    return 0;
}

static int open_scope(struct state *S, uint32_t scope)
{
    if (gmt_grow((void **)&S->open, &S->cap_open, S->n_open + 1, sizeof *S->open))
        return -ENOMEM;
    S->open[S->n_open++] = (int32_t)scope;
    return 0;
}

static void close_scope(struct state *S, uint32_t scope)
{
    for (size_t k = 0; k < S->n_open; k++)
        if (S->open[k] == (int32_t)scope) {
            S->open[k] = S->open[--S->n_open];
            break;
        }
}

/*
 * The live-set slot an event will look up, fetched a few events ahead: the table spans
 * hundreds of kilobytes, its slots are hit at random, and the trace streams through the
 * same caches, so a lookup not fetched ahead waits for memory. The key is guessed as a pointer
 * (GMT_NS_PTR), which most are; for a handle or a non-allocation event it is a wasted fetch,
 * never a wrong answer. Branch-free: which events are allocations follows no pattern.
 * (run_walk fetches as far ahead in records, and SCOPES_AHEAD calls ahead the scopes'
 * entries.)
 */
#define PREFETCH_AHEAD 8
#define SCOPES_AHEAD 4

static inline const struct gmt_live *live_home(const struct gmt_live_map *m, uint64_t addr)
{
    return &m->s[gmt_live_home(m, gmt_live_key(GMT_NS_PTR, addr))];
}

/* An allocation or a free in time order, `stopped` once past --to: then only the scopes
 * and the device allocations' attribution go on (the collective rows count all of a
 * call's allocations). */
static inline __attribute__((always_inline)) int replay_alloc(struct state *S,
                                                              const struct gmt_timed_event *e,
                                                              bool stopped)
{
    if (!stopped)
        return on_alloc(S, e);
    if (gmt_kind_device(e->kind)) {
        int32_t sc = attribute(S, e);
        if (sc >= 0)
            count_scope_alloc(S, sc, e);
    }
    return 0;
}

static inline __attribute__((always_inline)) int replay_free(struct state *S,
                                                             const struct gmt_timed_event *e,
                                                             bool stopped)
{
    return stopped ? 0 : on_free(S, e);
}

/* An event of any type, as replay_alloc. */
static inline __attribute__((always_inline)) int replay_event(struct state *S,
                                                              const struct gmt_timed_event *e,
                                                              bool stopped)
{
    /* the two common types first, each with a conditional branch: as a jump table their
     * mix (no pattern) would be an indirect mispredict per event */
    if (e->type == GMT_EV_ALLOC)
        return replay_alloc(S, e, stopped);
    if (e->type == GMT_EV_FREE)
        return replay_free(S, e, stopped);
    switch (e->type) {
    case GMT_EV_FAIL:
        return stopped ? 0 : on_fail(S, e);
    case GMT_EV_MEMINFO:
        if (!stopped)
            gmt_replay_meminfo(S, e);
        return 0;
    case GMT_EV_SCOPE_BEGIN:
        return open_scope(S, e->scope);
    case GMT_EV_SCOPE_END:
        close_scope(S, e->scope);
        return 0;
    }
    return 0;
}

/* A record of the walk that run_walk leaves to the iteration's decoding: a type whose
 * event (if any) is a failure or a device-use sample, since run_walk replays the
 * allocations, frees and scopes itself. 1 when it ends the run, else what replaying its
 * event returned (0, or -ENOMEM). Out of line: the walk's address is taken here, not in
 * run_walk's loop; and it calls only the rare handlers, so the allocation and free
 * handlers are inlined once in run_walk and once in the merge's loop, not here too. */
static __attribute__((noinline)) int replay_record(struct state *S, struct gmt_walk *w,
                                                   uint64_t stop_after, bool *stopped)
{
    struct gmt_timed_event e;
    do { /* a GROUP_REPEAT: each of its members' events, its record handed out again */
        int x = gmt_walk_decode(S->t, w, &e);
        if (x <= 0)
            return x < 0;
        *stopped |= e.time > stop_after;
        if (e.type == GMT_EV_SCOPE_BEGIN || e.type == GMT_EV_SCOPE_END) {
            int r = replay_event(S, &e, *stopped);
            if (r)
                return r;
            continue;
        }
        if (*stopped)
            return 0;
        if (e.type == GMT_EV_FAIL)
            return on_fail(S, &e);
        if (e.type == GMT_EV_MEMINFO)
            gmt_replay_meminfo(S, &e);
    } while (w->rep_k);
    return 0;
}

/* Up to n whole records from `at` in [at, lim): their offsets into pos[0..k) and where
 * the next one starts into pos[k], with the live-set slot that the address at each one's
 * offset 8 would take fetched (where ALLOC, ALLOC_SMALL and FREE keep it). Returns k,
 * fewer than n at lim or at a record not whole there. A loop of its own: the walk from
 * record to record is a chain of loads, which a short loop runs ahead. Inlined by
 * force: GCC takes a function that only prefetches for a pure one, and drops the calls
 * whose results go unused. */
static inline __attribute__((always_inline)) size_t
prefetch_records(const struct gmt_live_map *m, const uint8_t *img, uint64_t at, uint64_t lim,
                 size_t n, uint64_t *pos)
{
    const struct gmt_live *slots = m->s; /* in locals: the stores to pos[] could alias them */
    const unsigned shift = m->shift;
    size_t k = 0;
    /* at and lim are record boundaries, multiples of 8: a header lies whole before lim */
    for (; k < n && at < lim; k++) {
        const struct gmt_rec *h = (const void *)(img + at);
        uint32_t size = h->size;
        if (size < sizeof *h || size % GMT_ALIGN || size > lim - at)
            break; /* (the file changed since loading: as the iteration, see trace.h) */
        pos[k] = at;
        /* and the image a few lines on: the records stream from memory, and a load that
         * waits for one stops the walk */
        __builtin_prefetch(img + at + 512);
        if (size >= 16) { /* else too short for an address: an unknown type */
            uint64_t addr;
            memcpy(&addr, img + at + 8, sizeof addr);
            const struct gmt_live *x = &slots[gmt_fib_slot(gmt_live_key(GMT_NS_PTR, addr), shift)];
            __builtin_prefetch(x);
            /* and the slot after, which a free's deletion reads: in the next cache line
             * for every other slot (a prefetch past the table's end is harmless) */
            __builtin_prefetch(x + 1);
        }
        at += size;
    }
    pos[k] = at;
    return k;
}

/*
 * The last run's records (all of a single-threaded trace), read in place in file order,
 * which is its time order: allocations, frees and scopes are decoded here, by the
 * iteration's own decoders, into an event that stays in registers, and replayed with one
 * test of the record's type: decoding into a batch and replaying it would take two
 * dispatches and a store and load of every field. Everything else goes through
 * replay_record. The records come PREFETCH_AHEAD at a time, found (and their live-set
 * slots fetched) while the batch before them is replayed. The walk is held in a local
 * for the same reason as the event, written back around replay_record. Returns what
 * replaying returned, 0 at the run's end.
 */
static __attribute__((noinline)) int run_walk(struct state *S, struct gmt_walk *wp,
                                              uint64_t stop_after, bool *stopped_p)
{
    const struct gmt_live_map *m = &S->live_by_key;
    struct gmt_walk w = *wp;
    bool stopped = *stopped_p;
    int r = 0;
    uint64_t pos[2][PREFETCH_AHEAD + 1];
    for (;;) {
        unsigned cur = 0;
        size_t n = prefetch_records(m, w.img, w.pos, w.lim, PREFETCH_AHEAD, pos[0]);
        while (n) {
            const uint64_t *p = pos[cur];
            size_t n_next = prefetch_records(m, w.img, p[n], w.lim, PREFETCH_AHEAD,
                                             pos[cur ^ 1]);
            for (size_t i = 0; i < n; i++) {
                const struct gmt_rec *h = (const void *)(w.img + p[i]);
                unsigned type = h->type;
                struct gmt_timed_event e;
                w.pos = p[i + 1];
                /* one call of each handler, so that each is inlined once */
                if (type == GMT_REC_FREE) {
                    gmt_walk_free(&w, (const void *)h, &e);
                    stopped |= e.time > stop_after;
                    r = replay_free(S, &e, stopped);
                } else if (type == GMT_REC_ALLOC_SMALL || type == GMT_REC_ALLOC) {
                    if (type == GMT_REC_ALLOC_SMALL)
                        gmt_walk_alloc_small(&w, (const void *)h, &e);
                    else
                        gmt_walk_alloc(&w, (const void *)h, &e);
                    stopped |= e.time > stop_after;
                    r = replay_alloc(S, &e, stopped);
                } else if (type == GMT_REC_SCOPE_BEGIN) {
                    gmt_walk_scope_begin(S->t, &w, (const void *)h, p[i], &e);
                    stopped |= e.time > stop_after;
                    r = open_scope(S, e.scope);
                    /* the entries of the scope a few calls on, which calls begin in turn
                     * (on one thread): each is first read far from the one before */
                    size_t next = (size_t)e.scope + SCOPES_AHEAD;
                    if (next < S->t->n_scopes && !S->t->n_reps) {
                        __builtin_prefetch(&S->t->scopes[next]);
                        __builtin_prefetch(&S->map->row[next]);
                        __builtin_prefetch(&S->rep->scope_tracked[next]);
                    }
                } else if (type == GMT_REC_SCOPE_END) {
                    if (gmt_walk_scope_end(S->t, &w, (const void *)h, p[i], &e)) {
                        stopped |= e.time > stop_after;
                        close_scope(S, e.scope);
                    }
                } else {
                    w.pos = p[i];
                    *wp = w;
                    r = replay_record(S, wp, stop_after, &stopped);
                    w = *wp;
                }
                if (r)
                    goto out;
            }
            cur ^= 1;
            n = n_next;
        }
        /* where the records stopped: the segment's end, or a record not whole in it,
         * which ends the run as it ends the iteration */
        w.pos = pos[cur][0];
        if (w.pos < w.lim)
            break;
        *wp = w;
        if (!gmt_walk_next_seg(wp))
            break;
        w = *wp;
    }
out:
    *wp = w;
    *stopped_p = stopped;
    return r > 0 ? 0 : r; /* a record that ends the run ends the replay: no error */
}

/* One pass over the events in time order: merged from the threads' runs while more than
 * one is left, then the last run walked in place. */
static int run_pass(struct state *S)
{
    /* the table made up front and the batch padded: the prefetch below needs no test
     * (a stale event past the batch's end only fetches a line in vain) */
    if (!S->live_by_key.cap && gmt_live_grow(&S->live_by_key))
        return -ENOMEM;
    struct gmt_trace_iter *it = gmt_trace_iter_new(S->t);
    if (!it)
        return -ENOMEM;
    struct gmt_timed_event buf[256 + PREFETCH_AHEAD];
    memset(buf, 0, sizeof buf);
    const size_t max = 256;
    size_t n;
    bool stopped = false;
    /* the first event past --to stops the replay; without --to, none */
    const uint64_t stop_after = S->o->t_to ? S->o->t_to : UINT64_MAX;
    int r = 0;
    while (!r && (n = gmt_trace_iter_merge(it, buf, max)) > 0) {
        for (size_t i = 0; i < n && !r; i++) {
            const struct gmt_timed_event *e = &buf[i];
            /* here, not in a function of its own: GCC takes a void function that only
             * prefetches for a pure one and drops the call */
            const struct gmt_live *h = live_home(&S->live_by_key, buf[i + PREFETCH_AHEAD].addr);
            __builtin_prefetch(h);
            __builtin_prefetch(h + 1);
            stopped |= e->time > stop_after;
            r = replay_event(S, e, stopped);
        }
    }
    struct gmt_timed_event head;
    struct gmt_walk w;
    if (!r && gmt_trace_iter_walk(it, &head, &w)) {
        stopped |= head.time > stop_after;
        if (!(r = replay_event(S, &head, stopped)))
            r = run_walk(S, &w, stop_after, &stopped);
    }
    gmt_trace_iter_free(it);
    if (r)
        return r;
    /* what each site still holds on the device, bytes and allocations: the live set at
     * the end (or at --to) knows, where counters would move at every allocation and free
     * (a sum mod 2^64 either way, so the same on a corrupt trace too) */
    for (size_t j = 0; j < S->live_by_key.cap; j++) {
        const struct gmt_live *l = &S->live_by_key.s[j];
        if (l->refs && gmt_kind_device(l->kind)) {
            S->rep->sites[l->site].live_at_end += l->bytes;
            S->rep->sites[l->site].count_at_end++;
        }
    }
    /* each site's bytes at the peaks of the devices reported */
    for (size_t d = 0; d < S->rep->n_dev; d++) {
        if (!S->rep->dev[d].peak || (S->o->device >= 0 && S->dev_of_slot[d] != S->o->device))
            continue;
        for (size_t s = 0; s < S->rep->n_sites; s++) {
            if (!S->sdl[d])
                break;
            const struct site_dev *c = &S->sdl[d][s];
            S->rep->sites[s].live_at_peak += c->epoch == S->peak_epoch[d] ? c->at_peak : c->live;
        }
    }
    return 0;
}

static int cmp_site(const void *a, const void *b)
{
    const struct gmt_site_row *x = a, *y = b;
    if (x->live_at_peak != y->live_at_peak)
        return x->live_at_peak > y->live_at_peak ? -1 : 1;
    if (x->live_at_end != y->live_at_end)
        return x->live_at_end > y->live_at_end ? -1 : 1;
    if (x->bytes_total != y->bytes_total)
        return x->bytes_total > y->bytes_total ? -1 : 1;
    return x->stack < y->stack ? -1 : x->stack > y->stack;
}

int gmt_replay(const struct gmt_trace *t, const struct gmt_replay_opts *o, struct gmt_report *rep)
{
    memset(rep, 0, sizeof *rep);
    struct state S = {.t = t, .o = o, .rep = rep, .last_device = INT_MIN, .last_dslot = 0};
    gmt_u64map_init(&S.site_by_big_stack);
    int r = -ENOMEM;
    size_t ns = t->n_stored ? t->n_stored : 1;
    uint32_t *order = NULL;
    struct gmt_colls_map map;
    S.map = &map;
    rep->scope_tracked = calloc(ns, sizeof *rep->scope_tracked);
    S.site_by_stack = calloc(t->n_stacks ? t->n_stacks : 1, sizeof *S.site_by_stack);
    if (gmt_colls_map_init(&map, t)) {
        S.map = NULL;
        goto out;
    }
    S.top_by_dense = map.top_raw;
    if (!rep->scope_tracked || !S.site_by_stack)
        goto out;
    gmt_hint_huge(rep->scope_tracked, ns * sizeof *rep->scope_tracked);
    if ((r = gmt_colls_build(t, rep, &map, &order, o->t_from, o->t_to)))
        goto out;
    r = -ENOMEM;
    if (!(S.rc = calloc(rep->n_colls ? rep->n_colls : 1, sizeof *S.rc)))
        goto out;
    if ((r = run_pass(&S)))
        goto out;
    for (size_t d = 0; d < rep->n_dev; d++) {
        rep->dev[d].end = S.tracked[d];
        memcpy(rep->dev[d].end_by_cat, S.by_cat[d], sizeof rep->dev[d].end_by_cat);
        rep->dev[d].host_end = S.host[d];
        rep->dev[d].peer_end = S.peer[d];
    }
    if ((r = gmt_colls_finish(t, rep, &map, order, S.rc)))
        goto out;
    if ((r = gmt_colls_open_at_end(t, rep, S.open, S.n_open, &map)))
        goto out;
    gmt_replay_device_samples(&S);
    if (rep->n_sites > 1)
        gmt_sort(rep->sites, rep->n_sites, sizeof *rep->sites, cmp_site);
    r = 0;
out:
    if (S.map)
        gmt_colls_map_free(S.map);
    free(S.rc);
    free(order);
    for (size_t d = 0; d < GMT_MAX_DEVS; d++)
        free(S.sdl[d]);
    free(S.open);
    free(S.imported);
    free(S.live_by_key.s);
    free(S.site_by_stack);
    gmt_u64map_free(&S.site_by_big_stack);
    if (r)
        gmt_report_free(rep);
    return r;
}

void gmt_report_free(struct gmt_report *rep)
{
    free(rep->colls);
    free(rep->sites);
    free(rep->fails);
    free(rep->open);
    free(rep->scope_tracked);
    gmt_u64map_free(&rep->member_tracked);
    memset(rep, 0, sizeof *rep);
}
