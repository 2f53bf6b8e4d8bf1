/* nccl_own.c: NCCL's own count of each communicator's device memory (NCCL_MEMSTATS, ncclCommMemStats) set beside what the trace attributed to it. */
#include "nccl_own.h"

#include <string.h>

/* A figure of the record that NCCL answered, else none. */
static bool known(uint64_t v)
{
    return v != GMT_MEMSTATS_UNKNOWN;
}

/* What the trace attributed to the communicator by the end of its init: its groups whose
 * cause is an init (nccl_model.c names them "init (OP)"). */
static uint64_t init_bytes(const struct gmt_nccl_comm *c)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < c->n_g; i++)
        if (!c->g[i].host && !strncmp(c->g[i].cause, "init", 4))
            sum += c->g[i].bytes;
    return sum;
}

static void take(struct gmt_nccl_own_count *n, const struct gmt_memstats_note *s, uint64_t trace)
{
    n->known = true;
    n->phase = s->phase;
    n->time = s->time;
    n->suspend = s->suspend;
    n->persist = s->persist;
    n->suspended = known(s->suspended) && s->suspended != 0;
    /* the total NCCL gives, else the sum of its two kinds where it gave both */
    n->total = known(s->total) ? s->total
               : known(s->suspend) && known(s->persist) ? s->suspend + s->persist : GMT_MEMSTATS_UNKNOWN;
    n->trace = trace;
    n->diff = known(n->total) ? (int64_t)n->total - (int64_t)trace : 0;
}

void gmt_nccl_own(const struct gmt_trace *t, const struct gmt_nccl_comm *c, struct gmt_nccl_own *o)
{
    memset(o, 0, sizeof *o);
    if (!c->comm)
        return;
    /* a communicator's address may be reused by a later one: its records are those after
     * its own init's and up to its end */
    const struct gmt_memstats_note *init = NULL, *end = NULL;
    for (size_t i = 0; i < t->n_memstats; i++) {
        const struct gmt_memstats_note *s = &t->memstats[i];
        if (s->comm != c->comm)
            continue;
        if (s->phase == GMT_MEMSTATS_INIT) {
            if (!init)
                init = s;
        } else if (!end || s->time >= end->time) {
            end = s;
        }
    }
    if (init)
        take(&o->init, init, init_bytes(c));
    if (end)
        take(&o->end, end, c->dev_bytes);
}
