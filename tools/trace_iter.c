/* trace_iter.c: a loaded trace's events in time order: each thread's runs walked in place and merged by a heap. */
#include "trace.h"

#include <stdlib.h>
#include <string.h>

#include "trace_runs.h"

_Static_assert(offsetof(struct gmt_rec_module_load, time_ns) == sizeof(struct gmt_rec) &&
                   offsetof(struct gmt_rec_module_unload, time_ns) == sizeof(struct gmt_rec) &&
                   offsetof(struct gmt_rec_thread, time_ns) == sizeof(struct gmt_rec) &&
                   offsetof(struct gmt_rec_time, time_ns) == sizeof(struct gmt_rec) &&
                   offsetof(struct gmt_rec_end, time_ns) == sizeof(struct gmt_rec),
               "walk_decode reads an absolute time right after the header");

/* A run being read: its position, the thread's clock and device there (a walk), and the
 * next event it yields (head), decoded. */
struct cursor {
    struct gmt_walk w;
    uint64_t head_off;
    struct gmt_timed_event head;
};

struct gmt_trace_iter {
    const struct gmt_trace *t;
    struct cursor *cur;
    struct cursor **heap;      /* by (head time, head offset) */
    size_t n;
};

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

/* The next event of the GROUP_REPEAT at `off` (pos already past it): its members'
 * begins and ends in turn, at the thread's time, from the note the loader made; none
 * (0) for one whose members could not be restored. Out of line: rare. */
static __attribute__((noinline)) int walk_repeat(const struct gmt_trace *t, struct gmt_walk *w,
                                                 uint64_t off, struct gmt_timed_event *e)
{
    if (!w->rep_k) {
        const uint64_t *v = gmt_u64map_get(&t->rep_at, off);
        if (!v)
            return 0;
        w->rep_first = t->reps[*v - 1].first_scope;
        w->rep_n = 2 * t->reps[*v - 1].count;
    }
    uint32_t k = w->rep_k++;
    e->time = gmt_walk_tick(w, 0);
    e->type = k & 1 ? GMT_EV_SCOPE_END : GMT_EV_SCOPE_BEGIN;
    e->addr = e->bytes = 0;
    e->api = e->kind = 0;
    e->stack = 0;
    e->scope = (uint32_t)(w->rep_first + k / 2);
    e->error = 0;
    e->device = w->device;
    e->tid = 0;
    if (w->rep_k < w->rep_n)
        w->pos = off; /* the record again, for the next member's event */
    else
        w->rep_k = 0;
    return 1;
}

/* The record at w->pos (pos < lim), of any type: see gmt_walk_decode. The records were
 * validated when loading; the size check only keeps a file changed since then from
 * taking the walk outside the segment or off the 8-byte grid the record structs need.
 * Inlined by force into cursor_fill, whose walk then stays in registers: with two
 * callers, GCC would call it instead. */
static inline __attribute__((always_inline)) int walk_decode(const struct gmt_trace *t,
                                                             struct gmt_walk *w,
                                                             struct gmt_timed_event *e)
{
    const struct gmt_rec *h = (const void *)(w->img + w->pos);
    uint64_t off = w->pos;
    if (!gmt_rec_size_ok(h->size, w->lim - off))
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
        e->device = (uint16_t)f->device <= GMT_DEVICE_MAX ? f->device : w->device;
        break;
    }
    case GMT_REC_MEMINFO: {
        const struct gmt_rec_meminfo *m = (const void *)h;
        e->time = gmt_walk_tick(w, m->dt);
        e->type = GMT_EV_MEMINFO;
        e->addr = m->free_bytes;
        e->bytes = m->total_bytes;
        e->api = (uint16_t)m->source;
        e->kind = (uint8_t)h->aux;
        e->stack = 0;
        e->scope = m->scope_id;
        e->error = 0;
        e->device = (int16_t)gmt_device_ordinal(m->device);
        break;
    }
    case GMT_REC_SCOPE_BEGIN:
        gmt_walk_scope_begin(t, w, (const void *)h, off, e);
        return 1;
    case GMT_REC_SCOPE_END:
        return gmt_walk_scope_end(t, w, (const void *)h, off, e);
    case GMT_REC_GROUP_REPEAT:
        return walk_repeat(t, w, off, e);
    case GMT_REC_COMM:
        gmt_walk_tick(w, ((const struct gmt_rec_comm *)(const void *)h)->dt);
        return 0;
    case GMT_REC_CUCTX: {
        /* as the loader keeps it */
        w->device = (int16_t)gmt_device_ordinal(((const struct gmt_rec_cuctx *)(const void *)h)->device);
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

int gmt_walk_decode(const struct gmt_trace *t, struct gmt_walk *w, struct gmt_timed_event *e)
{
    return walk_decode(t, w, e);
}

/* Decodes the cursor's next events into out[0..max): its head, or straight into the
 * caller's batch. Returns how many; fewer than max when the run is used up. */
static size_t cursor_fill(const struct gmt_trace *t, struct cursor *c, struct gmt_timed_event *out,
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

struct gmt_trace_iter *gmt_trace_iter_new(const struct gmt_trace *t)
{
    struct gmt_trace_iter *it = calloc(1, sizeof *it);
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

size_t gmt_trace_iter_merge(struct gmt_trace_iter *it, struct gmt_timed_event *out, size_t max)
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

bool gmt_trace_iter_walk(struct gmt_trace_iter *it, struct gmt_timed_event *head, struct gmt_walk *w)
{
    if (it->n != 1)
        return false;
    *head = it->heap[0]->head;
    *w = it->heap[0]->w;
    it->n = 0;
    return true;
}

size_t gmt_trace_iter_next(struct gmt_trace_iter *it, struct gmt_timed_event *out, size_t max)
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

void gmt_trace_iter_free(struct gmt_trace_iter *it)
{
    if (!it)
        return;
    free(it->cur);
    free(it->heap);
    free(it);
}
