/* merge.c: the traces of a job's ranks side by side: each rank's totals and each collective across ranks. */
#include "merge.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idnames.h"
#include "jobs.h"
#include "nccl_print.h"
#include "reader.h"
#include "sites.h"
#include "stacks.h"
#include "util.h"

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
        if (key->n_vals == key->cap_vals) {
            size_t nc = key->cap_vals ? key->cap_vals * 2 : 8;
            void *p = realloc(key->vals, nc * sizeof *key->vals);
            if (!p)
                return -ENOMEM;
            key->vals = p;
            key->cap_vals = nc;
        }
        key->vals[key->n_vals].rank = r->rank;
        key->vals[key->n_vals++].first = cr->first_tracked;
        if (cr->calls < key->calls_min)
            key->calls_min = cr->calls;
        if (cr->calls > key->calls_max)
            key->calls_max = cr->calls;
        key->ranks++;
    }
    return 0;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* The median of a collective's first calls over its ranks and the rank farthest from
 * it (the first such rank on a tie); -ENOMEM. */
static int outlier_of(struct gmt_merge_coll *k)
{
    k->out_rank = -1;
    if (!k->n_vals)
        return 0;
    int64_t *v = malloc(k->n_vals * sizeof *v);
    if (!v)
        return -ENOMEM;
    for (size_t i = 0; i < k->n_vals; i++)
        v[i] = k->vals[i].first;
    gmt_sort(v, k->n_vals, sizeof *v, cmp_i64);
    /* the lower median: a value some rank really has */
    k->median_first = v[(k->n_vals - 1) / 2];
    free(v);
    uint64_t best = 0;
    for (size_t i = 0; i < k->n_vals; i++) {
        int64_t d = k->vals[i].first - k->median_first;
        uint64_t ad = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
        if (ad > best) {
            best = ad;
            k->out_rank = k->vals[i].rank;
            k->out_first = k->vals[i].first;
        }
    }
    return 0;
}

/* The trace of rank `rank`, NULL when none has it. */
static const struct gmt_trace *rank_trace(const struct gmt_merge *m, int rank)
{
    for (size_t i = 0; i < m->n_ranks; i++)
        if (m->ranks[i].rank == rank)
            return &m->ranks[i].a.t;
    return NULL;
}

/* The trace of a rank whose first call of k added the median, NULL none. */
static const struct gmt_trace *median_trace(const struct gmt_merge *m, const struct gmt_merge_coll *k)
{
    for (size_t i = 0; i < k->n_vals; i++)
        if (k->vals[i].first == k->median_first)
            return rank_trace(m, k->vals[i].rank);
    return NULL;
}

/* What differs of NCCL: each rank from the first, and each collective's outlier from a
 * rank of its median. */
static void nccl_differences(struct gmt_merge *m)
{
    for (size_t i = 1; i < m->n_ranks; i++)
        gmt_nccl_settings_diff(&m->ranks[0].a.t, &m->ranks[i].a.t, m->ranks[i].nccl_from_first,
                               sizeof m->ranks[i].nccl_from_first);
    for (size_t j = 0; j < m->n_colls; j++) {
        struct gmt_merge_coll *k = &m->colls[j];
        if (k->out_rank < 0)
            continue;
        const struct gmt_trace *tmed = median_trace(m, k), *tout = rank_trace(m, k->out_rank);
        if (tmed && tout)
            gmt_nccl_settings_diff(tmed, tout, k->nccl_out, sizeof k->nccl_out);
    }
}

bool gmt_merge_one_run(const struct gmt_merge *m, char *why, size_t len)
{
    const char *job0 = NULL, *cmd0 = NULL;
    char id0[160] = "", id[160];
    size_t i0 = 0;
    for (size_t i = 0; i < m->n_ranks; i++) {
        const struct gmt_trace *t = &m->ranks[i].a.t;
        bool forked = t->has_proc && (t->proc.flags & GMT_PROC_FORKED);
        /* ranks are sorted: a duplicate is next to its twin */
        if (i && !forked && m->ranks[i].rank >= 0 && m->ranks[i].rank == m->ranks[i - 1].rank) {
            snprintf(why, len, "two traces of rank %d: %s and %s", m->ranks[i].rank,
                     m->ranks[i - 1].a.t.path, t->path);
            return false;
        }
        const char *j = gmt_trace_job_id(t, id, sizeof id);
        if (j && !job0) {
            snprintf(id0, sizeof id0, "%s", j);
            job0 = id0;
            i0 = i;
        } else if (j && strcmp(j, job0)) {
            snprintf(why, len, "traces of different jobs: %s is job %s, %s is job %s",
                     m->ranks[i0].a.t.path, job0, t->path, j);
            return false;
        }
    }
    if (job0)
        return true;
    for (size_t i = 0; i < m->n_ranks; i++) {
        const char *c = m->ranks[i].a.t.cmdline;
        if (!c)
            continue;
        if (!cmd0) {
            cmd0 = c;
            i0 = i;
        } else if (strcmp(c, cmd0)) {
            snprintf(why, len, "traces of different commands and no job id: %s ran '%.60s', "
                     "%s ran '%.60s'", m->ranks[i0].a.t.path, cmd0, m->ranks[i].a.t.path, c);
            return false;
        }
    }
    return true;
}

/* The site with this text, made at its first sight (the ranks before rank index i did
 * not have it: its minimum is 0 there); NULL out of memory. */
static struct gmt_merge_site *site_of(struct gmt_merge *m, const char *line)
{
    for (size_t j = 0; j < m->n_sites; j++)
        if (!strcmp(m->sites[j].line, line))
            return &m->sites[j];
    if (m->n_sites == m->cap_sites) {
        size_t nc = m->cap_sites ? m->cap_sites * 2 : 32;
        struct gmt_merge_site *p = realloc(m->sites, nc * sizeof *p);
        if (!p)
            return NULL;
        m->sites = p;
        m->cap_sites = nc;
    }
    char *copy = strdup(line);
    if (!copy)
        return NULL;
    struct gmt_merge_site *s = &m->sites[m->n_sites++];
    memset(s, 0, sizeof *s);
    s->line = copy;
    s->min = UINT64_MAX;
    return s;
}

/* A value of site s on rank index i (ranks in order); ranks skipped since its last value
 * had none of it. */
static void site_value(struct gmt_merge *m, struct gmt_merge_site *s, size_t i, uint64_t v)
{
    if (s->next < i && s->min > 0) {
        s->min = 0;
        s->min_rank = m->ranks[s->next].rank;
    }
    if (v < s->min) {
        s->min = v;
        s->min_rank = m->ranks[i].rank;
    }
    if (v > s->max || !s->ranks) {
        s->max = v;
        s->max_rank = m->ranks[i].rank;
    }
    s->total += v;
    s->ranks++;
    s->next = i + 1;
}

/* Rank index i's sites, printed and grouped as its summary prints them (sites.h), into
 * the sites across ranks: a line is one value of the rank. -ENOMEM when one could not
 * be kept. */
static int add_sites(struct gmt_merge *m, size_t i, int frames)
{
    struct gmt_site_groups G;
    if (gmt_report_site_groups(&m->ranks[i].a, GMT_SITES_ALL, frames, &G))
        return -ENOMEM;
    int r = 0;
    for (size_t k = 0; !r && k < G.n; k++) {
        if (!G.g[k].sum.live_at_peak)
            continue;
        struct gmt_merge_site *s = site_of(m, G.g[k].line);
        if (!s)
            r = -ENOMEM;
        else
            site_value(m, s, i, G.g[k].sum.live_at_peak);
    }
    gmt_site_groups_free(&G);
    return r;
}

static int cmp_site(const void *x, const void *y)
{
    const struct gmt_merge_site *a = x, *b = y;
    if (a->total != b->total)
        return a->total > b->total ? -1 : 1;
    return strcmp(a->line, b->line);
}

struct reading {
    struct gmt_merge *m;
    struct gmt_msgs *msgs;
};

/* Each trace read (the job driver, serially: jobs.h) is a rank, its analysis kept. */
static int take_rank(void *ctx, size_t i, const struct gmt_analysis *a, FILE *out, char *err,
                     size_t errlen)
{
    struct reading *R = ctx;
    struct gmt_merge_rank *r = &R->m->ranks[R->m->n_ranks++];
    r->a = *a;
    rank_totals(r);
    return 0;
}

static void unreadable(void *ctx, size_t i, const char *why)
{
    struct reading *R = ctx;
    gmt_msgs_add(R->msgs, "%s", why);
}

int gmt_merge_of(struct gmt_merge *m, char *const *paths, size_t n,
                 const struct gmt_report_opts *ro, struct gmt_msgs *msgs)
{
    memset(m, 0, sizeof *m);
    if (!(m->ranks = calloc(n ? n : 1, sizeof *m->ranks)))
        return -ENOMEM;
    struct reading R = {m, msgs};
    const struct gmt_jobs J = {.files = paths, .n = n, .ro = ro, .trace = take_rank, .ctx = &R,
                               .keep = true, .skipped = unreadable};
    struct gmt_jobs_result res;
    (void)gmt_jobs_run(&J, &res); /* serial, and take_rank never stops it */
    int status = res.skipped ? -EINVAL : 0;
    gmt_sort(m->ranks, m->n_ranks, sizeof *m->ranks, cmp_rank);
    for (size_t i = 0; i < m->n_ranks; i++)
        if (add_colls(m, &m->ranks[i]))
            status = -EINVAL;
    for (size_t j = 0; j < m->n_colls; j++)
        if (outlier_of(&m->colls[j]))
            status = -EINVAL;
    nccl_differences(m);
    int frames = ro->frames ? ro->frames : 3;
    for (size_t i = 0; i < m->n_ranks; i++)
        if (add_sites(m, i, frames))
            status = -EINVAL;
    for (size_t j = 0; j < m->n_sites; j++) {
        struct gmt_merge_site *s = &m->sites[j];
        if (s->next < m->n_ranks && s->min > 0) {
            s->min = 0;
            s->min_rank = m->ranks[s->next].rank;
        }
    }
    if (m->n_sites)
        gmt_sort(m->sites, m->n_sites, sizeof *m->sites, cmp_site);
    return status;
}

void gmt_merge_free(struct gmt_merge *m)
{
    for (size_t i = 0; i < m->n_ranks; i++)
        gmt_analysis_free(&m->ranks[i].a);
    free(m->ranks);
    for (size_t j = 0; j < m->n_colls; j++)
        free(m->colls[j].vals);
    free(m->colls);
    for (size_t j = 0; j < m->n_sites; j++)
        free(m->sites[j].line);
    free(m->sites);
    memset(m, 0, sizeof *m);
}
