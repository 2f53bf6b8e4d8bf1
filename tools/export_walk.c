/* export_walk.c: a trace's events in time order with each allocation's call, and its free: what the exporters' rows and counters need. */
#include "export.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "u64map.h"
#include "util.h"

int gmt_export_dslot(const struct gmt_analysis *a, int device)
{
    for (size_t i = 0; i < a->rep.n_dev; i++)
        if (a->rep.dev[i].device == device)
            return (int)i;
    return -1;
}

const char *gmt_export_memory(unsigned kind)
{
    if (gmt_kind_is_device(kind))
        return "device";
    if (gmt_kind_is_host(kind))
        return "host";
    if (kind == GMT_KIND_VIRTUAL)
        return "virtual";
    return "other";
}

struct walk {
    const struct gmt_analysis *a;
    const struct gmt_xwalk_ops *ops;
    struct gmt_u64map by_key;   /* replay key -> index in live[] */
    struct gmt_xlive *live;
    size_t n_live, cap_live;
    uint32_t *free_slots;
    size_t n_free, cap_free;
    uint32_t *open;             /* scope indices of the calls in flight */
    size_t n_open, cap_open;
    uint64_t next_id;
};

static bool attributable(uint16_t op)
{
    return op != GMT_OP_MemAlloc && op != GMT_OP_MemFree;
}

/* As the replay attributes: the event's own call, else the call most recently begun on
 * another thread of the same device (NCCL's proxy thread allocates for it). */
static int32_t scope_of(const struct walk *W, const struct gmt_timed_event *e)
{
    const struct gmt_trace *t = &W->a->t;
    if (e->scope) {
        long i = gmt_trace_scope_index(t, e->scope);
        if (i >= 0)
            return (int32_t)i;
    }
    int32_t best = -1;
    uint64_t best_begin = 0;
    struct gmt_scope tmp;
    for (size_t k = 0; k < W->n_open; k++) {
        const struct gmt_scope *s = gmt_trace_scope(t, W->open[k], &tmp);
        if (s->tid == e->tid || !attributable(s->op))
            continue;
        if (s->device >= 0 && e->device >= 0 && s->device != e->device)
            continue;
        if (best < 0 || s->t_begin >= best_begin) {
            best = (int32_t)W->open[k];
            best_begin = s->t_begin;
        }
    }
    return best;
}

static void release(struct walk *W, uint64_t *slot_val)
{
    uint32_t idx = (uint32_t)*slot_val;
    gmt_u64map_del_at(&W->by_key, slot_val);
    W->live[idx].id = 0;        /* not live */
    W->free_slots[W->n_free++] = idx;
}

static int on_alloc(struct walk *W, const struct gmt_timed_event *e, const struct gmt_xlive **out)
{
    const struct gmt_analysis *a = W->a;
    uint64_t key = gmt_replay_alloc_key(e->kind, e->addr);
    uint64_t *v = gmt_u64map_get(&W->by_key, key);
    if (e->kind == GMT_KIND_RETAINED) {
        if (v && W->live[*v].refs < 255)
            W->live[*v].refs++;
        return 0;
    }
    if (v) {
        /* an address reused without a free the trace shows: the old one ends here */
        struct gmt_xlive *old = &W->live[*v];
        int r = W->ops->alloc_done ? W->ops->alloc_done(W->ops->ctx, old, e->time) : 0;
        if (r)
            return r;
        release(W, v);
    }
    uint32_t idx;
    if (W->n_free) {
        idx = W->free_slots[--W->n_free];
    } else {
        if (gmt_grow((void **)&W->live, &W->cap_live, W->n_live + 1, sizeof *W->live) ||
            gmt_grow((void **)&W->free_slots, &W->cap_free, W->n_live + 1, sizeof *W->free_slots))
            return -ENOMEM;
        idx = (uint32_t)W->n_live++;
    }
    struct gmt_xlive *l = &W->live[idx];
    *l = (struct gmt_xlive){.id = ++W->next_id, .time = e->time, .bytes = e->bytes,
                            .stack = e->stack, .tid = e->tid, .scope = scope_of(W, e),
                            .device = e->device, .api = e->api, .kind = e->kind, .refs = 1};
    l->cat = a->stack_cat && e->stack < a->t.n_stacks ? a->stack_cat[e->stack] : 0;
    if (gmt_u64map_put(&W->by_key, key, idx))
        return -ENOMEM;
    *out = l;
    return 0;
}

int gmt_export_walk(const struct gmt_analysis *a, const struct gmt_xwalk_ops *ops)
{
    struct walk W = {.a = a, .ops = ops};
    gmt_u64map_init(&W.by_key);
    struct gmt_trace_iter *it = gmt_trace_iter_new(&a->t);
    enum { BATCH = 4096 };
    struct gmt_timed_event *ev = malloc(BATCH * sizeof *ev);
    int r = it && ev ? 0 : -ENOMEM;
    size_t n;
    while (!r && (n = gmt_trace_iter_next(it, ev, BATCH))) {
        for (size_t i = 0; i < n && !r; i++) {
            const struct gmt_timed_event *e = &ev[i];
            const struct gmt_xlive *l = NULL;
            struct gmt_xlive gone;
            switch (e->type) {
            case GMT_EV_ALLOC:
                r = on_alloc(&W, e, &l);
                break;
            case GMT_EV_FREE: {
                uint64_t *v = gmt_u64map_get(&W.by_key, gmt_replay_free_key(e->api, e->addr));
                if (!v)
                    break;
                struct gmt_xlive *x = &W.live[*v];
                if (x->refs > 1) { /* a retained handle: released once per reference */
                    x->refs--;
                    break;
                }
                gone = *x;
                l = &gone;
                release(&W, v);
                if (ops->alloc_done)
                    r = ops->alloc_done(ops->ctx, &gone, e->time);
                break;
            }
            case GMT_EV_SCOPE_BEGIN:
                if (e->scope >= a->t.n_scopes) /* a begin the loader did not take */
                    break;
                if (gmt_grow((void **)&W.open, &W.cap_open, W.n_open + 1, sizeof *W.open))
                    r = -ENOMEM;
                else
                    W.open[W.n_open++] = e->scope;
                break;
            case GMT_EV_SCOPE_END:
                for (size_t k = W.n_open; k-- > 0;)
                    if (W.open[k] == e->scope) {
                        W.open[k] = W.open[--W.n_open];
                        break;
                    }
                break;
            }
            if (!r && ops->event)
                r = ops->event(ops->ctx, e, l);
        }
    }
    /* what is still live at the end, by allocation number */
    if (!r && ops->alloc_done) {
        for (size_t i = 0; i < W.n_live && !r; i++)
            if (W.live[i].id)
                r = ops->alloc_done(ops->ctx, &W.live[i], 0);
    }
    free(ev);
    gmt_trace_iter_free(it);
    gmt_u64map_free(&W.by_key);
    free(W.live);
    free(W.free_slots);
    free(W.open);
    return r;
}
