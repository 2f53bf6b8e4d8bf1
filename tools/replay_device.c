/* replay_device.c: the replay's device slots and what each device said beside the events: its cuMemGetInfo and NVML samples, NVML's per-process figure, its graph memory. */
#include "replay_device.h"

#include <stdbool.h>
#include <stdint.h>

#include "reader.h"

/* Device slot for a device ordinal; the last slot collects everything beyond. */
int gmt_replay_dslot_find(struct state *S, int device)
{
    struct gmt_report *rep = S->rep;
    for (size_t i = 0; i < rep->n_dev; i++)
        if (S->dev_of_slot[i] == device)
            return (int)i;
    if (rep->n_dev == GMT_MAX_DEVS)
        return GMT_MAX_DEVS - 1;
    int i = (int)rep->n_dev++;
    S->dev_of_slot[i] = (int16_t)device;
    rep->dev[i].device = device;
    return i;
}

/* A FAIL sample belongs to the latest failure of its thread on its device (the library
 * writes it right after the failed call): the device as the failure left it. */
static void fail_sampled(struct state *S, const struct gmt_timed_event *e, uint64_t total)
{
    struct gmt_report *rep = S->rep;
    for (size_t i = rep->n_fails; i-- > 0;) {
        struct gmt_fail_row *f = &rep->fails[i];
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

/* A device sample. NVML's free is cuMemGetInfo's, but its total also counts what the
 * driver reserves for itself (645 MiB more on an H200 with driver 580): used is taken
 * against the device's cuMemGetInfo total where the trace has one, so that both sources
 * say the same used memory. */
void gmt_replay_meminfo(struct state *S, const struct gmt_timed_event *e)
{
    struct gmt_dev_report *d = &S->rep->dev[dslot(S, e->device)];
    int ds = (int)(d - S->rep->dev);
    uint64_t total = e->bytes;
    if (e->api != GMT_MEMINFO_SRC_NVML)
        S->cu_total[ds] = e->bytes;
    else if (S->cu_total[ds])
        total = S->cu_total[ds];
    if (total < e->addr)
        return;
    uint64_t used = total - e->addr;
    S->sampled[ds] = true;
    S->sample_free[ds] = e->addr;
    S->sample_total[ds] = total;
    if (e->kind == GMT_MEMINFO_FAIL)
        fail_sampled(S, e, total);
    d->total = total;
    d->used_last = used;
    d->tracked_at_used_last = S->tracked[ds];
    if (!d->has_first && e->api == GMT_MEMINFO_SRC_CUMEMGETINFO) {
        d->has_first = true;
        d->first_used = used;
        d->first_time = e->time;
        d->tracked_at_first = S->tracked[ds];
    }
    if (in_window(S, e->time) && (!d->has_used || used > d->used_max)) {
        d->used_max = used;
        d->used_max_time = e->time;
        d->tracked_at_used_max = S->tracked[ds];
    }
    d->has_used = true;
}

/* What the device said beside the events (gmt_trace's samples, in time order): NVML's
 * per-process figure, and the graph memory pool's, within the window. */
void gmt_replay_device_samples(struct state *S)
{
    const struct gmt_trace *t = S->t;
    const struct gmt_replay_opts *o = S->o;
    struct gmt_report *rep = S->rep;
    for (size_t i = 0; i < t->n_proc_samples; i++) {
        const struct gmt_proc_sample *p = &t->proc_samples[i];
        if ((o->device >= 0 && p->device != o->device) || !in_window(S, p->time))
            continue;
        struct gmt_dev_report *d = &rep->dev[dslot(S, p->device)];
        if (!d->has_proc || p->process_bytes > d->proc_max)
            d->proc_max = p->process_bytes;
        d->proc_last = p->process_bytes;
        d->has_proc = true;
    }
    for (size_t i = 0; i < t->n_graph_samples; i++) {
        const struct gmt_graph_sample *g = &t->graph_samples[i];
        if ((o->device >= 0 && g->device != o->device) || !in_window(S, g->time))
            continue;
        struct gmt_dev_report *d = &rep->dev[dslot(S, g->device)];
        if (!d->has_graph || g->reserved > d->graph_peak)
            d->graph_peak = g->reserved;
        if (g->used_high > d->graph_used_high)
            d->graph_used_high = g->used_high;
        d->graph_end = g->reserved;
        if (d->has_used && g->time <= d->used_max_time)
            d->graph_at_used_max = g->reserved;
        d->has_graph = true;
    }
}
