/* merge.c: the traces of a job's ranks side by side: each rank's totals and each collective across ranks. */
#include "merge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"

static int cmp_rank(const void *x, const void *y)
{
    const struct gmt_merge_rank *a = x, *b = y;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return strcmp(a->a.t.path, b->a.t.path);
}

/* A rank's totals from its analysis. */
static void rank_totals(struct gmt_merge_rank *r)
{
    const struct gmt_trace *t = &r->a.t;
    const struct gmt_report *rep = &r->a.rep;
    r->rank = t->has_proc ? t->proc.rank : -1;
    if (r->rank < 0)
        for (size_t k = 0; k < t->n_comms && r->rank < 0; k++)
            r->rank = t->comms[k].rank;
    for (size_t d = 0; d < rep->n_dev; d++) {
        r->peak += rep->dev[d].peak;
        r->end += rep->dev[d].end;
        if (rep->dev[d].has_used) {
            r->has_used = true;
            r->used_max += rep->dev[d].used_max;
            r->untracked += (uint64_t)gmt_dev_untracked(&rep->dev[d]);
        }
    }
    for (size_t k = 0; k < rep->n_colls; k++) {
        const struct gmt_coll_row *cr = &rep->colls[k];
        if (cr->first_tracked <= 0)
            continue;
        if (gmt_op_is_comm_init(cr->op))
            r->init += (uint64_t)cr->first_tracked;
        else
            r->first_calls += (uint64_t)cr->first_tracked;
    }
}

/* The collective that row cr of a rank is, made at its first sight; NULL out of memory. */
static struct gmt_merge_coll *coll_of(struct gmt_merge *m, const struct gmt_coll_row *cr, int rank)
{
    for (size_t j = 0; j < m->n_colls; j++)
        if (!strcmp(m->colls[j].label, cr->label) && m->colls[j].nranks == cr->nranks &&
            m->colls[j].bytes == cr->bytes_per_call)
            return &m->colls[j];
    if (m->n_colls == m->cap_colls) {
        size_t nc = m->cap_colls ? m->cap_colls * 2 : 16;
        struct gmt_merge_coll *p = realloc(m->colls, nc * sizeof *p);
        if (!p)
            return NULL;
        m->colls = p;
        m->cap_colls = nc;
    }
    struct gmt_merge_coll *key = &m->colls[m->n_colls++];
    memset(key, 0, sizeof *key);
    snprintf(key->label, sizeof key->label, "%s", cr->label);
    key->nranks = cr->nranks;
    key->bytes = cr->bytes_per_call;
    key->min_first = key->max_first = cr->first_tracked;
    key->min_rank = key->max_rank = rank;
    key->calls_min = key->calls_max = cr->calls;
    return key;
}

/* One rank's collective rows into the collectives across ranks; -ENOMEM stops at the
 * row that could not be kept. */
static int add_colls(struct gmt_merge *m, const struct gmt_merge_rank *r)
{
    const struct gmt_report *rep = &r->a.rep;
    for (size_t k = 0; k < rep->n_colls; k++) {
        const struct gmt_coll_row *cr = &rep->colls[k];
        struct gmt_merge_coll *key = coll_of(m, cr, r->rank);
        if (!key)
            return -ENOMEM;
        if (cr->first_tracked < key->min_first) {
            key->min_first = cr->first_tracked;
            key->min_rank = r->rank;
        }
        if (cr->first_tracked > key->max_first) {
            key->max_first = cr->first_tracked;
            key->max_rank = r->rank;
        }
        if (cr->first_has_dev) {
            if (!key->has_dev || cr->first_dev < key->min_dev)
                key->min_dev = cr->first_dev;
            if (!key->has_dev || cr->first_dev > key->max_dev)
                key->max_dev = cr->first_dev;
            key->has_dev = true;
        }
        if (cr->calls < key->calls_min)
            key->calls_min = cr->calls;
        if (cr->calls > key->calls_max)
            key->calls_max = cr->calls;
        key->ranks++;
    }
    return 0;
}

int gmt_merge_of(struct gmt_merge *m, char *const *paths, size_t n,
                 const struct gmt_report_opts *ro, struct gmt_msgs *msgs)
{
    memset(m, 0, sizeof *m);
    if (!(m->ranks = calloc(n ? n : 1, sizeof *m->ranks)))
        return -ENOMEM;
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        char err[512];
        struct gmt_merge_rank *r = &m->ranks[m->n_ranks];
        if (gmt_analyze(&r->a, paths[i], ro, err, sizeof err)) {
            gmt_msgs_add(msgs, "%s", err);
            status = -EINVAL;
            continue;
        }
        rank_totals(r);
        m->n_ranks++;
    }
    qsort(m->ranks, m->n_ranks, sizeof *m->ranks, cmp_rank);
    for (size_t i = 0; i < m->n_ranks; i++)
        if (add_colls(m, &m->ranks[i]))
            status = -EINVAL;
    return status;
}

void gmt_merge_free(struct gmt_merge *m)
{
    for (size_t i = 0; i < m->n_ranks; i++)
        gmt_analysis_free(&m->ranks[i].a);
    free(m->ranks);
    free(m->colls);
    memset(m, 0, sizeof *m);
}
