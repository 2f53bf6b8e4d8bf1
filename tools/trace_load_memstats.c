/* trace_load_memstats.c: the loader's handlers of NCCL's own memory counts (NCCL_MEMSTATS) and of explicit module loads (MODLOAD). */
#include <errno.h>

#include "trace.h"
#include "util.h"

/* A count as the CLI keeps it: one a valid trace can hold, else unknown. */
static uint64_t bytes_or_unknown(uint64_t v)
{
    return v <= GMT_BYTES_MAX ? v : GMT_MEMSTATS_UNKNOWN;
}

int gmt_load_memstats(struct gmt_trace *t, const struct gmt_rec *rec)
{
    const struct gmt_rec_nccl_memstats *r = (const void *)rec;
    struct gmt_memstats_note *n = gmt_array_push((void **)&t->memstats, &t->n_memstats, &t->cap_memstats,
                                                 sizeof *n);
    if (!n)
        return -ENOMEM;
    *n = (struct gmt_memstats_note){
        .time = r->time_ns, .comm = r->comm,
        .suspend = bytes_or_unknown(r->suspend_bytes),
        .suspended = r->suspended,
        .persist = bytes_or_unknown(r->persist_bytes),
        .total = bytes_or_unknown(r->total_bytes),
        .scope = r->scope_id,
        .device = (int16_t)gmt_device_ordinal(r->device),
        .phase = (uint8_t)rec->aux,
    };
    return 0;
}

int gmt_load_modload(struct gmt_trace *t, const struct gmt_rec *rec)
{
    const struct gmt_rec_modload *r = (const void *)rec;
    struct gmt_modload_note *n = gmt_array_push((void **)&t->modloads, &t->n_modloads, &t->cap_modloads,
                                                sizeof *n);
    if (!n)
        return -ENOMEM;
    /* a sample whose free is beyond its total, or a total beyond what a trace may hold,
     * says nothing of the load */
    bool sane = r->total_bytes <= GMT_BYTES_MAX && r->free_before <= r->total_bytes &&
                r->free_after <= r->total_bytes;
    *n = (struct gmt_modload_note){
        .time = r->time_ns,
        .used_before = sane ? r->total_bytes - r->free_before : 0,
        .used_after = sane ? r->total_bytes - r->free_after : 0,
        .duration = r->duration, .scope = r->scope_id, .result = r->result,
        .device = (int16_t)gmt_device_ordinal(r->device),
        .api = (uint8_t)rec->aux,
    };
    return 0;
}
