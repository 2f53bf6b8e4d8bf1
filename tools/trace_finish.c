/* trace_finish.c: what the loader does once every record is read: scopes' devices and device use, samples in time order, NCCL's choices tied to communicators. */
#include "trace_finish.h"

#include <errno.h>
#include <stdlib.h>

#include "reader.h"
#include "u64map.h"
#include "util.h"

static int cmp_choice(const void *a, const void *b)
{
    const struct gmt_nccl_choice *x = a, *y = b;
    return x->time < y->time ? -1 : x->time > y->time;
}

/* The communicator profiler's context slot lies in: NCCL keeps it inside its ncclComm, so
 * the COMM with the highest handle at or below it, within the largest ncclComm plausible. */
#define NCCL_COMM_SPAN ((uint64_t)64 << 20)
static uint64_t comm_holding(const struct gmt_trace *t, uint64_t context)
{
    uint64_t best = 0;
    for (size_t i = 0; i < t->n_comms; i++) {
        uint64_t c = t->comms[i].comm;
        if (c && c <= context && context - c < NCCL_COMM_SPAN && c > best)
            best = c;
    }
    return best;
}

/* Ties each NCCL_COLL_INFO to its communicator: the scope in flight on its thread, when
 * that names one; else the COMM whose ncclComm holds its context slot; else another
 * record's of the same context. */
int gmt_trace_tie_choices(struct gmt_trace *t, bool unsorted)
{
    if (unsorted)
        gmt_sort(t->choices, t->n_choices, sizeof *t->choices, cmp_choice);
    struct gmt_u64map by_context;
    gmt_u64map_init(&by_context);
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < t->n_choices; i++) {
            struct gmt_nccl_choice *c = &t->choices[i];
            if (pass == 0) {
                struct gmt_scope tmp;
                const struct gmt_scope *s = c->scope_id ? gmt_trace_scope_by_id(t, c->scope_id, &tmp) : NULL;
                c->comm = s && s->comm ? s->comm : comm_holding(t, c->context);
                if (c->comm && c->context && gmt_u64map_put(&by_context, c->context, c->comm)) {
                    gmt_u64map_free(&by_context);
                    return -ENOMEM;
                }
            } else if (!c->comm && c->context) {
                const uint64_t *v = gmt_u64map_get(&by_context, c->context);
                c->comm = v ? *v : 0;
            }
        }
    gmt_u64map_free(&by_context);
    return 0;
}

static int cmp_meminfo(const void *a, const void *b)
{
    const struct gmt_meminfo_note *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->off < y->off ? -1 : x->off > y->off;
}

static int cmp_proc_sample(const void *a, const void *b)
{
    const struct gmt_proc_sample *x = a, *y = b;
    return x->time < y->time ? -1 : x->time > y->time;
}

static int cmp_graph_sample(const void *a, const void *b)
{
    const struct gmt_graph_sample *x = a, *y = b;
    return x->time < y->time ? -1 : x->time > y->time;
}

/* Samples of several threads interleave by chunk: in time order for the report (qsort is
 * not stable; ties between two threads' samples have no order to keep). */
void gmt_trace_sort_samples(struct gmt_trace *t)
{
    gmt_sort(t->proc_samples, t->n_proc_samples, sizeof *t->proc_samples, cmp_proc_sample);
    gmt_sort(t->graph_samples, t->n_graph_samples, sizeof *t->graph_samples, cmp_graph_sample);
}

/* With duplicate scope ids, which scope a SCOPE_* record means depends on where it lies
 * in the file (the latest begin of that id before it): noted by offset for the
 * iteration, from a second walk of the records in file order. Only corrupt files. */
int gmt_trace_map_scope_records(struct gmt_trace *t, uint64_t from, uint64_t to)
{
    struct gmt_u64map latest;
    gmt_u64map_init(&latest);
    size_t k = 0;
    int rc = 0;
    for (uint64_t off = from; off < to && !rc;) {
        const struct gmt_rec *h = (const void *)(t->image + off);
        if (!gmt_rec_size_ok(h->size, to - off))
            break; /* the loader read these whole: only a file changed since stops here */
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
        } else if (h->type == GMT_REC_GROUP_REPEAT && gmt_u64map_get(&t->rep_at, off)) {
            /* its members' scopes, made here by the loader (their events name them by
             * index, trace_iter.c): ids that later records may name */
            const struct gmt_rec_group_repeat *g = (const void *)h;
            for (uint32_t j = 0; j < g->count && !rc; j++)
                rc = gmt_u64map_put(&latest, g->scope_id + 1 + j, k++);
        }
        off += h->size;
    }
    gmt_u64map_free(&latest);
    return rc ? -ENOMEM : 0;
}

/* Scope devices: the communicator's device when known; MEMINFO samples around a scope
 * give its before/after device memory (t->scope_mem). Returns 0 or -ENOMEM. */
int gmt_trace_finish_scopes(struct gmt_trace *t, struct gmt_meminfo_note *mi, size_t n_mi)
{
    size_t cap = 0;
    for (size_t i = 0; i < t->n_stored; i++) {
        const struct gmt_comm *c = gmt_trace_comm(t, t->scopes[i].comm);
        if (c && c->device >= 0)
            t->scopes[i].device = (int16_t)c->device;
    }
    /* a repeated group's parent, asked of each member */
    for (size_t k = 0; k < t->n_reps; k++)
        t->reps[k].group = (uint64_t)gmt_trace_scope_index(t, t->reps[k].group_id);
    /* (a repeated group's member's, from the member it stands for: gmt_trace_scope) */
    for (size_t i = 0; i < t->n_rep_origin; i++) {
        const struct gmt_comm *c = gmt_trace_comm(t, t->rep_tmpl[i].comm);
        if (c && c->device >= 0)
            t->rep_tmpl[i].device = (int16_t)c->device;
    }
    /* in time order, ties in file order, as the events are replayed: the last wins */
    if (n_mi > 1)
        gmt_sort(mi, n_mi, sizeof *mi, cmp_meminfo);
    for (size_t i = 0; i < n_mi; i++) {
        const struct gmt_meminfo_note *e = &mi[i];
        if (!e->scope)
            continue;
        long sx = gmt_trace_scope_index(t, e->scope);
        if (sx < 0 || e->total_bytes < e->free_bytes)
            continue;
        /* its samples, made at its first (scope index -> index in scope_mem + 1) */
        size_t si = (size_t)sx;
        const uint64_t *at = gmt_u64map_get(&t->scope_mem_of, si);
        size_t idx = at ? (size_t)*at - 1 : t->n_scope_mem;
        if (!at) {
            if (!gmt_array_push((void **)&t->scope_mem, &t->n_scope_mem, &cap, sizeof *t->scope_mem) ||
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
