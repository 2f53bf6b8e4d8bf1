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
    if (!w->per_comm)
        return -ENOMEM;
    for (size_t i = 0; i < m->n_c; i++) {
        struct gmt_nccl_prediction *p = &w->per_comm[i];
        gmt_nccl_predict(m, &m->c[i], &w->to, p);
        w->dev_bytes += p->dev_bytes;
        w->host_bytes += p->host_bytes;
        if (strcmp(p->confidence, "exact"))
            w->confidence = p->confidence;
    }
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
    for (int k = 0; k < GMT_EXPLAIN_MAX_WHATIF; k++)
        free(x->w[k].per_comm);
    memset(x, 0, sizeof *x);
}
