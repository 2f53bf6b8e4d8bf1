/* trace_load_records.c: the loader's handlers of the records that fill the trace's tables: communicators (COMM), graph memory, NCCL's choices, NVTX ranges, PyTorch's blocks, the context's limits. */
#include <errno.h>
#include <stdio.h>

#include "idnames.h"
#include "trace.h"
#include "trace_loader.h"
#include "util.h"

int gmt_load_comm(struct loader *L, const struct gmt_event *e)
{
    struct gmt_trace *t = L->t;
    const struct gmt_rec_comm *c = (const void *)e->rec;
    struct gmt_comm *slot = NULL;
    for (size_t i = 0; i < t->n_comms; i++)
        if (t->comms[i].comm == c->comm)
            slot = &t->comms[i];
    if (!slot && !(slot = gmt_array_push((void **)&t->comms, &t->n_comms, &L->cap_comm, sizeof *slot)))
        return -ENOMEM;
    slot->comm = c->comm;
    slot->parent = c->parent;
    slot->unique_id_hash = c->unique_id_hash;
    slot->rank = c->rank;
    slot->nranks = c->nranks;
    slot->device = gmt_device_ordinal(c->device);
    /* an init or split scope opens before its communicator exists: the COMM record
     * its thread writes on return names it */
    size_t i = t->n_stored;
    while (i > 0 && t->scopes[i - 1].tid != e->tid)
        i--;
    /* the thread's latest stored scope is t->scopes[i - 1] (i 0: none); a repeated
     * group's last member is later when its note comes after it */
    for (size_t k = t->n_reps; k-- > 0 && t->reps[k].stored_before >= i;) {
        const struct gmt_rep_note *n = &t->reps[k];
        if (n->tid != e->tid)
            continue;
        size_t last = n->first_scope + n->count - 1;
        struct gmt_scope tmp;
        const struct gmt_scope *m = gmt_trace_scope(t, last, &tmp);
        if (!m->comm && gmt_op_is_comm_init(m->op) &&
            gmt_u64map_put(&t->member_comm, last, c->comm))
            return -ENOMEM;
        return 0;
    }
    if (i) {
        struct gmt_scope *s = &t->scopes[i - 1];
        if (!s->comm && gmt_op_is_comm_init(s->op)) {
            s->comm = c->comm;
            if (slot->device >= 0)
                s->device = (int16_t)slot->device;
        }
    }
    return 0;
}

int gmt_load_graphmem(struct loader *L, const struct gmt_event *e, char *err, size_t errlen)
{
    const struct gmt_rec_graphmem *g = (const void *)e->rec;
    if ((g->used_current | g->used_high | g->reserved_current | g->reserved_high) > GMT_BYTES_MAX) {
        snprintf(err, errlen, "%s: offset %llu: GRAPHMEM beyond the 2^56 bytes a trace may hold: "
                 "the trace is corrupt", L->t->path, (unsigned long long)e->offset);
        return -EINVAL;
    }
    struct gmt_trace *t = L->t;
    struct gmt_graph_sample *p = gmt_array_push((void **)&t->graph_samples, &t->n_graph_samples,
                                                &L->cap_graph, sizeof *p);
    if (!p)
        return -ENOMEM;
    *p = (struct gmt_graph_sample){e->time_ns, g->used_high, g->reserved_current, (int16_t)gmt_device_ordinal(g->device)};
    if (t->n_graph_samples > 1 && p[-1].time > p->time)
        L->samples_unsorted = true;
    return 0;
}

int gmt_load_nccl_coll_info(struct loader *L, const struct gmt_event *e)
{
    const struct gmt_rec_nccl_coll_info *r = (const void *)e->rec;
    struct gmt_trace *t = L->t;
    struct gmt_nccl_choice *c = gmt_array_push((void **)&t->choices, &t->n_choices,
                                               &L->cap_choice, sizeof *c);
    if (!c)
        return -ENOMEM;
    *c = (struct gmt_nccl_choice){
        .time = e->time_ns, .comm_hash = r->comm_hash, .context = r->context, .seq = r->seq,
        .count = r->count, .scope_id = r->scope_id, .rank = r->rank, .root = r->root,
        .datatype = r->datatype, .op = e->rec->aux, .algo = r->algo, .proto = r->proto,
        .nchannels = r->nchannels, .nwarps = r->nwarps, .kind = r->kind,
    };
    if (t->n_choices > 1 && c[-1].time > c->time)
        L->choices_unsorted = true;
    return 0;
}

int gmt_load_nvtx(struct loader *L, const struct gmt_event *e)
{
    struct gmt_trace *t = L->t;
    struct gmt_nvtx_note *n = gmt_array_push((void **)&t->nvtx, &t->n_nvtx, &L->cap_nvtx, sizeof *n);
    if (!n)
        return -ENOMEM;
    uint64_t time = 0;
    if (e->rec->type == GMT_REC_NVTX_RANGE)
        time = ((const struct gmt_rec_nvtx_range *)(const void *)e->rec)->time_ns;
    *n = (struct gmt_nvtx_note){e->offset, time, e->tid};
    return 0;
}

int gmt_load_block(struct loader *L, const struct gmt_event *e, char *err, size_t errlen)
{
    const struct gmt_rec_block *r = (const void *)e->rec;
    if (r->device_type != 1)
        return 0; /* only CUDA blocks are written; another device's are not ours to count */
    uint64_t mag = r->size < 0 ? (uint64_t)0 - (uint64_t)r->size : (uint64_t)r->size;
    if (mag > GMT_BYTES_MAX || r->total_allocated > GMT_BYTES_MAX || r->total_reserved > GMT_BYTES_MAX) {
        snprintf(err, errlen, "%s: offset %llu: BLOCK of %lld bytes (allocated %llu, reserved %llu) "
                 "is beyond the 2^56 bytes a trace may hold: the trace is corrupt", L->t->path,
                 (unsigned long long)e->offset, (long long)r->size,
                 (unsigned long long)r->total_allocated, (unsigned long long)r->total_reserved);
        return -EINVAL;
    }
    struct gmt_trace *t = L->t;
    struct gmt_block_note *n = gmt_array_push((void **)&t->blocks, &t->n_blocks, &L->cap_blocks, sizeof *n);
    if (!n)
        return -ENOMEM;
    *n = (struct gmt_block_note){r->time_ns, r->address, r->size, r->total_allocated,
                                 r->total_reserved, r->stack_id, e->tid, r->device_index,
                                 (uint8_t)e->rec->aux};
    return 0;
}

/* DEVLIMITS: kept with the used figure of the cuMemGetInfo sample right before it on its
 * thread (the writer puts it there; one that follows anything else is kept unpaired). */
int gmt_load_devlimits(struct loader *L, const struct gmt_event *e)
{
    const struct gmt_rec_devlimits *r = (const void *)e->rec;
    struct gmt_trace *t = L->t;
    struct gmt_limits_sample *p = gmt_array_push((void **)&t->limits, &t->n_limits, &L->cap_limits, sizeof *p);
    if (!p)
        return -ENOMEM;
    /* it carries no time: its instant is its sample's */
    uint64_t used = 0, time = 0;
    if (L->n_mi) {
        const struct gmt_meminfo_note *n = &L->mi[L->n_mi - 1];
        if (n->tid == e->tid && n->off + n->size == e->offset && n->total_bytes >= n->free_bytes) {
            used = n->total_bytes - n->free_bytes;
            time = n->time;
        }
    }
    *p = (struct gmt_limits_sample){time, used, r->stack_bytes, r->printf_fifo_bytes,
                                    r->malloc_heap_bytes, r->sm_count, r->max_threads_per_sm,
                                    r->scope_id, (int16_t)gmt_device_ordinal(r->device), (uint8_t)e->rec->aux};
    return 0;
}
