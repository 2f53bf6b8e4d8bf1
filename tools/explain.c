/* explain.c: `explain`'s predictions: each --what-if applied to each communicator of a trace's NCCL model. */
#include "explain.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int whatif_fill(struct gmt_explain_whatif *w, const struct gmt_nccl_model *m, const char *spec)
{
    char err[400];
    w->spec = spec;
    /* each what-if starts from the run's own settings */
    w->to = m->set;
    (void)gmt_nccl_settings_parse(&w->to, spec, err, sizeof err);
    w->confidence = "exact";
    w->per_comm = calloc(m->n_c ? m->n_c : 1, sizeof *w->per_comm);
    w->comm_change = calloc(m->n_c ? m->n_c : 1, sizeof *w->comm_change);
    if (!w->per_comm || !w->comm_change)
        return -ENOMEM;
    for (size_t i = 0; i < m->n_c; i++) {
        struct gmt_nccl_prediction *p = &w->per_comm[i];
        gmt_nccl_predict(m, &m->c[i], &w->to, p);
        w->comm_change[i] = (int64_t)p->dev_bytes - (int64_t)m->c[i].dev_bytes;
        w->dev_bytes += p->dev_bytes;
        w->host_bytes += p->host_bytes;
        if (strcmp(p->confidence, "exact"))
            w->confidence = p->confidence;
    }
    w->dev_change = (int64_t)w->dev_bytes - (int64_t)m->dev_bytes;
    return 0;
}

int gmt_explain_fill(struct gmt_explain *x, const struct gmt_analysis *a, const char *const *specs,
                     int n)
{
    memset(x, 0, sizeof *x);
    x->a = a;
    x->m = &a->nccl;
    for (int k = 0; k < n && k < GMT_EXPLAIN_MAX_WHATIF; k++, x->n++)
        if (whatif_fill(&x->w[k], x->m, specs[k])) {
            gmt_explain_free(x);
            return -ENOMEM;
        }
    return 0;
}

void gmt_explain_free(struct gmt_explain *x)
{
    for (int k = 0; k < GMT_EXPLAIN_MAX_WHATIF; k++) {
        free(x->w[k].per_comm);
        free(x->w[k].comm_change);
    }
    memset(x, 0, sizeof *x);
}

void gmt_explain_why(const struct gmt_nccl_model *m, const struct gmt_nccl_comm *c,
                     struct gmt_nccl_why *w)
{
    const struct gmt_nccl_p2p_sizes z = m->p2p;
    memset(w, 0, sizeof *w);
    if (c->recv_each && c->recv_each == z.recv)
        w->waste += (z.recv - z.recv_need) * (uint64_t)c->coll_channels;
    if (c->send_each && c->send_each == z.send)
        w->waste += (z.send - z.send_need) * (uint64_t)c->coll_channels;
    for (size_t i = 0; i < c->n_g; i++)
        if (!c->g[i].host && (c->g[i].purpose == GMT_NCCL_CHANNEL || c->g[i].purpose == GMT_NCCL_DEVCOMM)) {
            w->small_bytes += c->g[i].bytes;
            w->small_allocs += c->g[i].count;
        }
}
