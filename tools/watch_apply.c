/* watch_apply.c: a followed trace's queued allocations, frees, failures and samples applied in time order, as summary's replay counts them, and what the figures say now. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "category.h"
#include "trace.h"
#include "util.h"
#include "watch.h"

/* The device's row; the last one collects the devices beyond GMT_MAX_DEVS, as the
 * replay's do. */
static int dslot(struct gmt_watch_trace *w, int device)
{
    for (size_t i = 0; i < w->n_dev; i++)
        if (w->dev[i].device == device)
            return (int)i;
    if (w->n_dev == GMT_MAX_DEVS)
        return GMT_MAX_DEVS - 1;
    struct gmt_watch_dev *d = &w->dev[w->n_dev];
    memset(d, 0, sizeof *d);
    d->device = device;
    return (int)w->n_dev++;
}

/* A stack's category index; *pending when the stack is not defined yet (another thread's
 * chunk may define it later): counted as unknown until it is. */
static uint8_t cat_of(struct gmt_watch_trace *w, uint32_t stack, bool *pending)
{
    *pending = false;
    if (stack) {
        const uint64_t *c = gmt_u64map_get(&w->stack_cat, stack);
        if (c)
            return (uint8_t)*c;
        *pending = true;
    }
    return (uint8_t)gmt_watch_cat_index(w, GMT_CAT_UNKNOWN);
}

static int charge(struct gmt_watch_trace *w, struct gmt_watch_dev *d, uint8_t cat, uint64_t bytes)
{
    uint64_t live = d->tracked + bytes;
    /* what summary calls corrupt (trace.h): one test, as neither alone can wrap the sum */
    if ((live | bytes) > GMT_BYTES_MAX)
        return -EOVERFLOW;
    d->tracked = live;
    d->by_cat[cat] += bytes;
    w->tracked_all += bytes;
    if (d->tracked > d->peak) {
        d->peak = d->tracked;
        memcpy(d->peak_by_cat, d->by_cat, sizeof d->peak_by_cat);
    }
    return 0;
}

static void uncharge(struct gmt_watch_trace *w, const struct gmt_live *l)
{
    struct gmt_watch_dev *d = &w->dev[l->dslot];
    if (l->scope)
        w->n_pending_cat--;
    if (!gmt_kind_is_device(l->kind))
        return;
    d->tracked -= l->bytes;
    d->by_cat[l->cat] -= l->bytes;
    w->tracked_all -= l->bytes;
}

static int on_alloc(struct gmt_watch_trace *w, const struct gmt_watch_ev *e)
{
    uint64_t key = gmt_replay_alloc_key(e->kind, e->addr);
    if (e->kind == GMT_KIND_RETAINED) {
        struct gmt_live *v = gmt_live_get(&w->live, key);
        if (v)
            v->refs++;
        return 0;
    }
    int ds = dslot(w, e->device);
    struct gmt_live *l = gmt_live_find_or_slot(&w->live, key);
    if (!l)
        return -ENOMEM;
    /* a size summary calls corrupt is refused before anything changes: an entry left in
     * the live set without its bytes charged would take them off at its free */
    struct gmt_watch_dev *d = &w->dev[ds];
    if (gmt_kind_is_device(e->kind)) {
        uint64_t old = l->refs && l->dslot == ds && gmt_kind_is_device(l->kind) ? l->bytes : 0;
        if (e->bytes > GMT_BYTES_MAX || d->tracked - old + e->bytes > GMT_BYTES_MAX)
            return -EOVERFLOW;
    }
    if (l->refs)
        uncharge(w, l); /* an address reused without a free read: the old entry is gone */
    else
        w->live.n++;
    bool pending;
    uint8_t cat = cat_of(w, e->stack, &pending);
    *l = (struct gmt_live){.key = key, .bytes = e->bytes, .site = e->stack, .refs = 1,
                           .scope = pending, .dslot = (int16_t)ds, .kind = e->kind, .cat = cat};
    w->n_pending_cat += pending;
    d->allocs++;
    if (!gmt_kind_is_device(e->kind))
        return 0;
    d->device_allocs++;
    return charge(w, d, cat, e->bytes);
}

static void on_free(struct gmt_watch_trace *w, const struct gmt_watch_ev *e)
{
    struct gmt_live *l = gmt_live_get(&w->live, gmt_replay_free_key(e->api, e->addr));
    if (!l) {
        w->unmatched_frees += e->addr != 0;
        return;
    }
    if (l->refs > 1) { /* a retained handle: released once per reference */
        l->refs--;
        return;
    }
    w->dev[l->dslot].frees++;
    uncharge(w, l);
    gmt_live_del_at(&w->live, l);
}

static int on_fail(struct gmt_watch_trace *w, const struct gmt_watch_ev *e)
{
    if (e->bytes > GMT_BYTES_MAX)
        return -EOVERFLOW;
    struct gmt_watch_dev *d = &w->dev[dslot(w, e->device)];
    d->failures++;
    struct gmt_watch_fail *f = &w->fails[w->n_fails++ % GMT_WATCH_FAILS];
    *f = (struct gmt_watch_fail){.time = e->time, .bytes = e->bytes, .tracked = d->tracked,
                                 .error = e->error, .tid = e->tid, .device = e->device,
                                 .api = e->api, .kind = e->kind};
    if (d->has_used) {
        f->has_dev = true;
        f->dev_total = d->total;
        f->dev_free = d->total - d->used_last;
    }
    return 0;
}

/* A FAIL sample is the device as the latest failure of its thread left it. */
static void fail_sampled(struct gmt_watch_trace *w, const struct gmt_watch_ev *e, uint64_t total)
{
    size_t kept = w->n_fails < GMT_WATCH_FAILS ? (size_t)w->n_fails : GMT_WATCH_FAILS;
    for (size_t i = 0; i < kept; i++) {
        struct gmt_watch_fail *f = &w->fails[(w->n_fails - 1 - i) % GMT_WATCH_FAILS];
        if (f->tid != e->tid)
            continue;
        if (f->device == e->device && !f->dev_at_fail) {
            f->has_dev = f->dev_at_fail = true;
            f->dev_free = e->addr;
            f->dev_total = total;
        }
        return;
    }
}

/* As the replay's on_meminfo: an NVML sample's used is taken against the cuMemGetInfo
 * total when there is one. A figure beyond GMT_BYTES_MAX is corrupt, as summary's loader
 * says: so what is derived from it (untracked, used - tracked) cannot wrap. */
static int on_meminfo(struct gmt_watch_trace *w, const struct gmt_watch_ev *e)
{
    if ((e->bytes | e->addr) > GMT_BYTES_MAX)
        return -EOVERFLOW;
    struct gmt_watch_dev *d = &w->dev[dslot(w, e->device)];
    uint64_t total = e->bytes;
    if (e->api != GMT_MEMINFO_SRC_NVML)
        d->cu_total = e->bytes;
    else if (d->cu_total)
        total = d->cu_total;
    if (total < e->addr)
        return 0;
    uint64_t used = total - e->addr;
    if (e->kind == GMT_MEMINFO_FAIL)
        fail_sampled(w, e, total);
    uint64_t graph = d->has_graph ? d->graph_reserved : 0;
    d->total = total;
    d->used_last = used;
    d->tracked_at_last = d->tracked;
    d->graph_at_last = graph;
    d->time_last = e->time;
    if (!d->has_used || used > d->used_max) {
        d->used_max = used;
        d->tracked_at_used_max = d->tracked;
        d->graph_at_used_max = graph;
    }
    d->has_used = true;
    return 0;
}

static void on_step(struct gmt_watch_trace *w)
{
    if (++w->steps == 1) {
        w->first_step_tracked = w->tracked_all;
        for (size_t i = 0; i < w->n_dev; i++) {
            struct gmt_watch_dev *d = &w->dev[i];
            d->has_first_step = true;
            d->nccl_first_step = w->nccl_cat >= 0 ? d->by_cat[w->nccl_cat] : 0;
        }
    }
    w->last_step_tracked = w->tracked_all;
}

static int apply_one(struct gmt_watch_trace *w, const struct gmt_watch_ev *e)
{
    if (e->time >= w->next_mark) {
        w->marks[w->n_marks++ % GMT_WATCH_MARKS].time = e->time;
        w->marks[(w->n_marks - 1) % GMT_WATCH_MARKS].tracked = w->tracked_all;
        w->next_mark = e->time + GMT_WATCH_MARK_NS;
    }
    if (e->time > w->t_applied)
        w->t_applied = e->time;
    switch (e->type) {
    case GMT_WEV_ALLOC:
        return on_alloc(w, e);
    case GMT_WEV_FREE:
        on_free(w, e);
        return 0;
    case GMT_WEV_FAIL:
        return on_fail(w, e);
    case GMT_WEV_MEMINFO:
        return on_meminfo(w, e);
    case GMT_WEV_GRAPH: {
        if (e->bytes > GMT_BYTES_MAX)
            return -EOVERFLOW;
        struct gmt_watch_dev *d = &w->dev[dslot(w, e->device)];
        d->has_graph = true;
        d->graph_reserved = e->bytes;
        return 0;
    }
    case GMT_WEV_STEP:
        on_step(w);
        return 0;
    }
    return 0;
}

/* Allocations whose stack a later chunk defined: their bytes move to its category. */
static void resolve_categories(struct gmt_watch_trace *w)
{
    for (size_t i = 0; w->n_pending_cat && i < w->live.cap; i++) {
        struct gmt_live *l = &w->live.s[i];
        const uint64_t *c;
        if (!l->refs || !l->scope || !(c = gmt_u64map_get(&w->stack_cat, l->site)))
            continue;
        if (gmt_kind_is_device(l->kind)) {
            struct gmt_watch_dev *d = &w->dev[l->dslot];
            d->by_cat[l->cat] -= l->bytes;
            d->by_cat[*c] += l->bytes;
        }
        l->cat = (uint8_t)*c;
        l->scope = 0;
        w->n_pending_cat--;
    }
}

static int cmp_ev(const void *x, const void *y)
{
    const struct gmt_watch_ev *a = x, *b = y;
    if (a->time != b->time)
        return a->time < b->time ? -1 : 1;
    return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static inline bool ev_before(const struct gmt_watch_ev *a, const struct gmt_watch_ev *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

/* The end of the ascending run that starts at i. */
static size_t run_end(const struct gmt_watch_ev *q, size_t i, size_t n)
{
    for (i++; i < n && !ev_before(&q[i], &q[i - 1]); i++)
        ;
    return i;
}

static void merge(const struct gmt_watch_ev *a, size_t na, const struct gmt_watch_ev *b,
                  size_t nb, struct gmt_watch_ev *out)
{
    size_t i = 0, j = 0;
    while (i < na && j < nb)
        *out++ = ev_before(&b[j], &a[i]) ? b[j++] : a[i++];
    memcpy(out, a + i, (na - i) * sizeof *a);
    memcpy(out + (na - i), b + j, (nb - j) * sizeof *b);
}

#define MERGE_WAYS 8 /* runs merged in one pass, each event then a scan of their heads */

/* The runs of q[0..n) (n_runs of them, run k from at[k] to at[k + 1]) merged into out in
 * one pass. */
static void merge_ways(const struct gmt_watch_ev *q, const size_t *at, size_t n_runs,
                       struct gmt_watch_ev *out)
{
    size_t head[MERGE_WAYS], end[MERGE_WAYS], k = n_runs;
    for (size_t i = 0; i < k; i++) {
        head[i] = at[i];
        end[i] = at[i + 1];
    }
    while (k > 1) {
        size_t best = 0;
        for (size_t i = 1; i < k; i++)
            if (ev_before(&q[head[i]], &q[head[best]]))
                best = i;
        *out++ = q[head[best]++];
        if (head[best] == end[best]) { /* that run is used up: the last takes its place */
            head[best] = head[k - 1];
            end[best] = end[k - 1];
            k--;
        }
    }
    memcpy(out, q + head[0], (end[0] - head[0]) * sizeof *q);
}

/* q[0..n) in time order (seq breaking ties). Each thread's events come in time order, so
 * the stretch is a few long ascending runs, one per chunk read: merged pairwise through
 * tmp (room for n) until MERGE_WAYS are left, then those in one pass, where a general
 * sort of the first refresh of a long job spent a tenth of its time. */
static void sort_runs(struct gmt_watch_ev *q, size_t n, struct gmt_watch_ev *tmp)
{
    struct gmt_watch_ev *src = q, *dst = tmp;
    for (;;) {
        size_t at[MERGE_WAYS + 1], n_runs = 0, i = 0;
        for (at[0] = 0; n_runs < MERGE_WAYS && i < n; at[++n_runs] = i)
            i = run_end(src, i, n);
        if (i == n) { /* few enough */
            if (n_runs > 1)
                merge_ways(src, at, n_runs, dst);
            if ((n_runs > 1) != (src != q))
                memcpy(q, n_runs > 1 ? dst : src, n * sizeof *q);
            return;
        }
        for (i = 0; i < n;) { /* a pairwise pass */
            size_t m = run_end(src, i, n), e = m < n ? run_end(src, m, n) : n;
            merge(src + i, m - i, src + m, e - m, dst + i);
            i = e;
        }
        struct gmt_watch_ev *t = src;
        src = dst;
        dst = t;
    }
}

/* Sorts q[0..n) with S's room (grown to n), or room of its own; a general sort when
 * there is none. */
static void sort_queue(struct gmt_watch_ev *q, size_t n, struct gmt_watch_scratch *S)
{
    struct gmt_watch_ev *tmp = NULL;
    if (S && S->cap_tmp >= n) {
        tmp = S->tmp;
    } else if (S) {
        size_t cap = n > 2 * S->cap_tmp ? n : 2 * S->cap_tmp;
        if ((tmp = realloc(S->tmp, cap * sizeof *tmp))) {
            S->tmp = tmp;
            S->cap_tmp = cap;
        }
    } else {
        tmp = malloc(n * sizeof *tmp);
    }
    if (tmp)
        sort_runs(q, n, tmp);
    else
        gmt_sort(q, n, sizeof *q, cmp_ev);
    if (!S)
        free(tmp);
}

/* The queue in time order again. Its first q_sorted events are (the last apply left them
 * so), and each thread's events come in time order, so only the stretch where the new
 * events overlap the old ones in time, and the new ones among themselves, need a sort. */
static void queue_sort(struct gmt_watch_trace *w, struct gmt_watch_scratch *S)
{
    struct gmt_watch_ev *q = w->q;
    size_t u = w->q_sorted, n = w->n_q;
    bool in_order = true;
    uint64_t least = UINT64_MAX;
    for (size_t i = u; i < n; i++) {
        if (i > 0 && q[i].time < q[i - 1].time)
            in_order = false;
        if (q[i].time < least)
            least = q[i].time;
    }
    if (!in_order) {
        size_t lo = 0, hi = u; /* the first old event later than every new one's least */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (q[mid].time <= least)
                lo = mid + 1;
            else
                hi = mid;
        }
        sort_queue(q + lo, n - lo, S);
    }
    w->q_sorted = n;
}

int gmt_watch_apply(struct gmt_watch_trace *w, uint64_t upto, struct gmt_watch_scratch *S)
{
    queue_sort(w, S);
    size_t i = 0;
    int rc = 0;
    for (; i < w->n_q && w->q[i].time <= upto; i++)
        if ((rc = apply_one(w, &w->q[i])))
            break;
    if (rc)
        i++;
    if (i && w->n_q > i)
        memmove(w->q, w->q + i, (w->n_q - i) * sizeof *w->q);
    w->n_q -= i;
    w->q_sorted = w->n_q;
    /* a catch-up's batch leaves a large array behind: a thousand traces would keep one each
     * (an array lent by S is made to measure when it goes back) */
    if ((!S || S->lent_to != w) && w->cap_q > 1024 && w->n_q < w->cap_q / 8) {
        size_t cap = w->n_q * 2 > 64 ? w->n_q * 2 : 64;
        struct gmt_watch_ev *q = realloc(w->q, cap * sizeof *q);
        if (q) {
            w->q = q;
            w->cap_q = cap;
        }
    }
    resolve_categories(w);
    return rc;
}

/* ---- what the figures say ---- */

uint64_t gmt_watch_now(const struct gmt_watch_trace *w, uint64_t realtime_ns)
{
    if (w->complete)
        return w->t_end > w->t_last ? w->t_end : w->t_last;
    uint64_t now = w->t_last;
    if (w->has_proc && realtime_ns >= w->realtime_ns) {
        uint64_t t = w->monotonic_ns + (realtime_ns - w->realtime_ns);
        if (t > now)
            now = t;
    }
    return now;
}

const struct gmt_watch_call *gmt_watch_longest_call(const struct gmt_watch_trace *w)
{
    const struct gmt_watch_call *best = NULL;
    for (size_t i = 0; i < w->n_open; i++)
        if (!best || w->open[i].begin < best->begin)
            best = &w->open[i];
    return best;
}

bool gmt_watch_dev_shown(const struct gmt_watch_dev *d)
{
    return d->device_allocs || d->has_used || d->failures || d->has_graph;
}

bool gmt_watch_uses_gpu(const struct gmt_watch_trace *w)
{
    for (size_t i = 0; i < w->n_dev; i++)
        if (gmt_watch_dev_shown(&w->dev[i]))
            return true;
    return w->n_comms || w->n_open;
}

int32_t gmt_watch_rank(const struct gmt_watch_trace *w)
{
    if (w->rank >= 0 || !w->n_comms)
        return w->rank;
    return w->comms[0].rank;
}

bool gmt_watch_step_growth(const struct gmt_watch_trace *w, int64_t *per_step)
{
    if (w->steps < 2)
        return false;
    int64_t d = gmt_sat_sub((int64_t)w->last_step_tracked, (int64_t)w->first_step_tracked);
    *per_step = d / (int64_t)(w->steps - 1);
    return true;
}

bool gmt_watch_minute_growth(const struct gmt_watch_trace *w, int64_t *per_min)
{
    const uint64_t minute = 60000000000ull, least = 10000000000ull;
    size_t kept = w->n_marks < GMT_WATCH_MARKS ? w->n_marks : GMT_WATCH_MARKS;
    uint64_t now = w->t_applied;
    bool found = false;
    uint64_t t0 = 0, b0 = 0;
    for (size_t i = 0; i < kept; i++) {
        uint64_t t = w->marks[i].time;
        if (t > now || now - t < least || now - t > minute)
            continue;
        if (!found || t < t0) {
            t0 = t;
            b0 = w->marks[i].tracked;
            found = true;
        }
    }
    if (!found)
        return false;
    double rate = ((double)w->tracked_all - (double)b0) * (double)minute / (double)(now - t0);
    *per_min = (int64_t)rate;
    return true;
}

bool gmt_watch_untracked(const struct gmt_watch_dev *d, int64_t *bytes)
{
    if (!d->has_used)
        return false;
    *bytes = (int64_t)d->used_last - (int64_t)d->tracked_at_last - (int64_t)d->graph_at_last;
    return true;
}

const struct gmt_watch_fail *gmt_watch_fail_at(const struct gmt_watch_trace *w, size_t i)
{
    if (i >= w->n_fails || i >= GMT_WATCH_FAILS)
        return NULL;
    return &w->fails[(w->n_fails - 1 - i) % GMT_WATCH_FAILS];
}
