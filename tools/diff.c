/* diff.c: what changed between two runs: each process's quantities keyed by what they are, matched across the runs. */
#include "diff.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "job.h"
#include "jobs.h"
#include "metrics.h"
#include "nccl_print.h"
#include "stacks.h"
#include "util.h"

struct row {
    char *key;                 /* kind, TAB, what: the matching key */
    int64_t value;
};

static int add_row(struct gmt_vec *rows, const char *kind, const char *what, int64_t v)
{
    struct row *r = gmt_vec_push(rows);
    if (!r)
        return -ENOMEM;
    size_t n = strlen(kind) + strlen(what) + 2;
    if (!(r->key = malloc(n))) {
        rows->len--;
        return -ENOMEM;
    }
    snprintf(r->key, n, "%s\t%s", kind, what);
    r->value = v;
    return 0;
}

static int cmp_row(const void *a, const void *b)
{
    return strcmp(((const struct row *)a)->key, ((const struct row *)b)->key);
}

static int64_t clamp64(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* Every quantity of one process, keyed by what it is (never by address or time). */
static int rows_of(const struct gmt_analysis *a, int frames, struct gmt_vec *rows)
{
    struct gmt_metrics m = {0};
    int r = gmt_metrics_add(&m, a, 0, 0, NULL);
    for (size_t i = 0; !r && i < m.n; i++) {
        char what[300], full[300];
        gmt_metric_what(&m.v[i], full, sizeof full);
        /* the kind is its own column: drop it from the text */
        const char *sp = strchr(full, ' ');
        snprintf(what, sizeof what, "%s", sp ? sp + 1 : full);
        r = add_row(rows, gmt_check_name(m.v[i].check), what, m.v[i].value);
    }
    gmt_metrics_free(&m);
    const struct gmt_report *rep = &a->rep;
    for (size_t d = 0; !r && d < rep->n_dev; d++) {
        const struct gmt_dev_report *dr = &rep->dev[d];
        char what[128];
        if (dr->has_used) {
            snprintf(what, sizeof what, "device %d device used (cuMemGetInfo)", dr->device);
            if ((r = add_row(rows, "peak", what, clamp64(dr->used_max))))
                break;
        }
        for (size_t c = 0; c < a->n_cats && c < GMT_MAX_CATS; c++) {
            if (!dr->peak_by_cat[c])
                continue;
            snprintf(what, sizeof what, "device %d %s at the peak", dr->device, a->cat_names[c]);
            if ((r = add_row(rows, "category", what, clamp64(dr->peak_by_cat[c]))))
                break;
        }
    }
    for (size_t s = 0; !r && s < rep->n_sites; s++) {
        const struct gmt_site_row *sr = &rep->sites[s];
        if (!sr->allocs)
            continue;
        char line[2048];
        gmt_site_line(a, sr->stack, sr->api, frames, line, sizeof line);
        if (sr->live_at_peak || !sr->live_at_end)
            r = add_row(rows, "site", line, clamp64(sr->live_at_peak));
        if (!r && sr->live_at_end)
            r = add_row(rows, "leak", line, clamp64(sr->live_at_end));
    }
    if (r)
        return r;
    /* sites that print alike are one site to a person: sum them */
    if (rows->len)
        gmt_sort(rows->data, rows->len, sizeof(struct row), cmp_row);
    struct row *v = rows->data;
    size_t out = 0;
    for (size_t i = 0; i < rows->len; i++) {
        if (out && !strcmp(v[out - 1].key, v[i].key)) {
            v[out - 1].value += v[i].value;
            free(v[i].key);
            continue;
        }
        v[out++] = v[i];
    }
    rows->len = out;
    return 0;
}

static void free_rows(struct gmt_vec *rows)
{
    for (size_t i = 0; i < rows->len; i++)
        free(((struct row *)rows->data)[i].key);
    gmt_vec_free(rows);
}

static uint64_t mag(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

static int cmp_change(const void *a, const void *b)
{
    const struct gmt_diff_change *x = a, *y = b;
    if (mag(x->delta) != mag(y->delta))
        return mag(x->delta) > mag(y->delta) ? -1 : 1;
    if (x->delta != y->delta)
        return x->delta > y->delta ? -1 : 1;
    return strcmp(x->key, y->key);
}

/* Merges two sorted row lists into changes sorted biggest first. */
static struct gmt_diff_change *changes_of(const struct gmt_vec *rb, const struct gmt_vec *rn, size_t *n)
{
    const struct row *b = rb->data, *w = rn->data;
    struct gmt_diff_change *c = calloc(rb->len + rn->len + 1, sizeof *c);
    if (!c)
        return NULL;
    size_t i = 0, j = 0, k = 0;
    while (i < rb->len || j < rn->len) {
        int cmp = i >= rb->len ? 1 : j >= rn->len ? -1 : strcmp(b[i].key, w[j].key);
        struct gmt_diff_change *x = &c[k++];
        if (cmp <= 0) {
            x->key = b[i].key;
            x->in_base = true;
            x->base = b[i++].value;
        }
        if (cmp >= 0) {
            x->key = w[j].key;
            x->in_new = true;
            x->now = w[j++].value;
        }
        x->delta = gmt_sat_sub(x->now, x->base);
        /* device used compares only when both runs sampled it: one sampled is no change */
        if (x->in_base != x->in_new && strstr(x->key, "(cuMemGetInfo)"))
            k--;
    }
    gmt_sort(c, k, sizeof *c, cmp_change);
    *n = k;
    return c;
}

static void free_side(struct gmt_diff_side *s)
{
    for (size_t i = 0; i < s->n_paths; i++)
        if (s->ok && s->ok[i])
            gmt_analysis_free(&s->an[i]);
    free(s->an);
    free(s->ok);
    free(s->rank);
    free(s->process);
    gmt_free_paths(s->paths, s->n_paths);
}

struct reading {
    struct gmt_diff_side *s;
    struct gmt_idents ids;
    struct gmt_msgs *msgs;
};

/* Each trace of a side read (the job driver, serially: jobs.h) is kept with its identity;
 * -ENOMEM stops the side. */
static int take_trace(void *ctx, size_t i, const struct gmt_analysis *a, FILE *out, char *err,
                      size_t errlen)
{
    struct reading *R = ctx;
    struct gmt_diff_side *s = R->s;
    if (gmt_analysis_used_gpu(a)) {
        gmt_idents_next(&R->ids, a, &s->rank[i], &s->process[i]);
        if (gmt_idents_take(&R->ids, s->rank[i])) {
            s->process[i] = -1;
            return -ENOMEM;
        }
    }
    s->an[i] = *a;
    s->ok[i] = true;
    return 0;
}

static void unreadable(void *ctx, size_t i, const char *why)
{
    struct reading *R = ctx;
    gmt_msgs_add(R->msgs, "%s", why);
}

static int load_side(struct gmt_diff_side *s, const struct gmt_report_opts *ro,
                     struct gmt_msgs *msgs)
{
    int status = 0;
    char *arg = (char *)s->arg;
    if (gmt_expand_paths(&arg, 1, &s->paths, &s->n_paths, msgs))
        status = -EINVAL;
    size_t n = s->n_paths ? s->n_paths : 1;
    s->an = calloc(n, sizeof *s->an);
    s->ok = calloc(n, sizeof *s->ok);
    s->rank = calloc(n, sizeof *s->rank);
    s->process = calloc(n, sizeof *s->process);
    if (!s->an || !s->ok || !s->rank || !s->process) {
        gmt_msgs_add(msgs, "out of memory");
        return -ENOMEM;
    }
    for (size_t i = 0; i < s->n_paths; i++)
        s->process[i] = -1;
    struct reading R = {.s = s, .msgs = msgs};
    gmt_idents_init(&R.ids);
    const struct gmt_jobs J = {.files = s->paths, .n = s->n_paths, .ro = ro, .trace = take_trace,
                               .ctx = &R, .keep = true, .skipped = unreadable};
    struct gmt_jobs_result res;
    int r = gmt_jobs_run(&J, &res);
    gmt_idents_free(&R.ids);
    return r ? r : res.skipped ? -EINVAL : status;
}

static int cmp_ident(int32_t ra, int32_t pa, int32_t rb, int32_t pb)
{
    struct gmt_metric a = {.rank = ra, .process = pa}, b = {.rank = rb, .process = pb};
    return gmt_metric_cmp(&a, &b);
}

/* Indices of a side's GPU-using traces sorted by identity. */
static size_t *order_of(const struct gmt_diff_side *s, size_t *n)
{
    size_t *o = malloc((s->n_paths ? s->n_paths : 1) * sizeof *o);
    if (!o)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < s->n_paths; i++)
        if (s->ok[i] && s->process[i] >= 0)
            o[k++] = i;
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && cmp_ident(s->rank[o[j - 1]], s->process[o[j - 1]],
                                              s->rank[o[j]], s->process[o[j]]) > 0; j--) {
            size_t t = o[j]; o[j] = o[j - 1]; o[j - 1] = t;
        }
    *n = k;
    return o;
}

/* Two processes' rows and their changes into p. 0 or -ENOMEM. */
static int pair_of(struct gmt_diff_pair *p, const struct gmt_analysis *ab,
                   const struct gmt_analysis *an, int frames)
{
    p->base = ab;
    p->now = an;
    p->n_changed = 0;
    gmt_nccl_settings_diff(&ab->t, &an->t, p->nccl_changed, sizeof p->nccl_changed);
    p->rb = (struct gmt_vec)GMT_VEC_INIT(struct row);
    p->rn = (struct gmt_vec)GMT_VEC_INIT(struct row);
    int r = rows_of(ab, frames, &p->rb);
    if (!r)
        r = rows_of(an, frames, &p->rn);
    if (!r && !(p->c = changes_of(&p->rb, &p->rn, &p->n)))
        r = -ENOMEM;
    for (size_t i = 0; !r && i < p->n; i++)
        p->n_changed += p->c[i].delta != 0 || p->c[i].in_base != p->c[i].in_new;
    return r;
}

static void pair_free(struct gmt_diff_pair *p)
{
    free(p->c);
    free_rows(&p->rb);
    free_rows(&p->rn);
}

static void who_of(const struct gmt_diff_side *s, size_t i, char *buf, size_t len)
{
    struct gmt_metric id = {.rank = s->rank[i], .process = s->process[i]};
    gmt_metric_who(&id, buf, len);
}

/* The processes of both sides in identity order: pairs where both have one, else the
 * one side's alone. Returns 0 or -ENOMEM (d->pairs then stops there). */
static int pair_up(struct gmt_diff *d, const size_t *ob, size_t nb, const size_t *on, size_t nn,
                   int frames)
{
    const struct gmt_diff_side *sb = &d->base, *sn = &d->now;
    size_t i = 0, j = 0;
    while (i < nb || j < nn) {
        int cmp = i >= nb ? 1 : j >= nn ? -1
                  : cmp_ident(sb->rank[ob[i]], sb->process[ob[i]], sn->rank[on[j]], sn->process[on[j]]);
        if (cmp != 0) {
            struct gmt_diff_only *x = gmt_vec_push(&d->only);
            if (x) {
                x->side = cmp < 0 ? 0 : 1;
                x->index = cmp < 0 ? ob[i] : on[j];
                who_of(x->side ? sn : sb, x->index, x->who, sizeof x->who);
            }
            if (cmp < 0)
                i++;
            else
                j++;
            continue;
        }
        struct gmt_diff_pair *p = gmt_vec_push(&d->pairs);
        if (!p)
            return -ENOMEM;
        who_of(sb, ob[i], p->who, sizeof p->who);
        if (pair_of(p, &sb->an[ob[i]], &sn->an[on[j]], frames)) {
            pair_free(p);
            d->pairs.len--;
            return -ENOMEM;
        }
        i++;
        j++;
    }
    return 0;
}

/* ---- pairs alike, and the answer ---- */

/* Each paired trace of side s into job j, and the job's group of each such trace into
 * group[i] (SIZE_MAX: not paired). 0 or -ENOMEM. */
static int side_groups(const struct gmt_diff *d, int side, struct gmt_job *j, size_t *group)
{
    const struct gmt_diff_pair *p = d->pairs.data;
    for (size_t i = 0; i < d->pairs.len; i++)
        if (gmt_job_add(j, side ? p[i].now : p[i].base))
            return -ENOMEM;
    if (gmt_job_finish(j))
        return -ENOMEM;
    /* the job sorts its ranks: find each pair's again by its file */
    for (size_t i = 0; i < d->pairs.len; i++) {
        const char *path = (side ? p[i].now : p[i].base)->t.path;
        group[i] = SIZE_MAX;
        for (size_t k = 0; k < j->n && group[i] == SIZE_MAX; k++)
            if (!strcmp(j->r[k].path, path))
                group[i] = j->r[k].group;
    }
    return 0;
}

/* A pair's rank when its name is a plain "rank N", else -1. */
static int32_t plain_rank(const struct gmt_diff_pair *p)
{
    int r, used = 0;
    if (sscanf(p->who, "rank %d%n", &r, &used) == 1 && !p->who[used] && r >= 0)
        return r;
    return -1;
}

/* Group g's name: "ranks 0-1, 4 (3 alike)" (runs of consecutive ranks as a-b, pairs being
 * in identity order), or the one pair's ("rank 2", "process 3"). */
static void group_who(const struct gmt_diff *d, size_t g, struct gmt_diff_group *G)
{
    const struct gmt_diff_pair *p = d->pairs.data;
    char *buf = G->who;
    size_t len = sizeof G->who;
    if (G->n == 1) {
        snprintf(buf, len, "%s", p[G->first].who);
        return;
    }
    size_t at = (size_t)snprintf(buf, len, "ranks ");
    bool first = true;
    for (size_t i = 0; i < d->pairs.len && at < len; i++) {
        if (p[i].group != g)
            continue;
        int32_t r = plain_rank(&p[i]);
        size_t e = i;
        while (r >= 0 && e + 1 < d->pairs.len && p[e + 1].group == g &&
               plain_rank(&p[e + 1]) == r + (int32_t)(e + 1 - i))
            e++;
        const char *sep = first ? "" : ", ";
        first = false;
        if (r < 0)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", sep, p[i].who);
        else if (e > i)
            at += (size_t)snprintf(buf + at, len - at, "%s%d-%d", sep, r, r + (int32_t)(e - i));
        else
            at += (size_t)snprintf(buf + at, len - at, "%s%d", sep, r);
        i = e;
    }
    if (at < len)
        snprintf(buf + at, len - at, " (%zu alike)", G->n);
}

/* The pairs' groups: pairs whose base traces are alike and whose new traces are alike
 * (job.h's groups of each side). 0 or -ENOMEM. */
static int group_pairs(struct gmt_diff *d)
{
    size_t n = d->pairs.len;
    struct gmt_job jb, jn;
    gmt_job_init(&jb);
    gmt_job_init(&jn);
    size_t *gb = malloc((n ? n : 1) * sizeof *gb), *gn = malloc((n ? n : 1) * sizeof *gn);
    int r = !gb || !gn ? -ENOMEM : 0;
    if (!r)
        r = side_groups(d, 0, &jb, gb);
    if (!r)
        r = side_groups(d, 1, &jn, gn);
    struct gmt_diff_pair *p = d->pairs.data;
    for (size_t i = 0; !r && i < n; i++) {
        size_t k = 0;
        while (k < i && !(gb[k] == gb[i] && gn[k] == gn[i]))
            k++;
        if (k < i) {
            p[i].group = p[k].group;
            ((struct gmt_diff_group *)d->groups.data)[p[i].group].n++;
            continue;
        }
        struct gmt_diff_group *G = gmt_vec_push(&d->groups);
        if (!G) {
            r = -ENOMEM;
            break;
        }
        memset(G, 0, sizeof *G);
        G->n = 1;
        G->first = i;
        p[i].group = d->groups.len - 1;
    }
    for (size_t g = 0; !r && g < d->groups.len; g++)
        group_who(d, g, &((struct gmt_diff_group *)d->groups.data)[g]);
    free(gb);
    free(gn);
    gmt_job_free(&jb);
    gmt_job_free(&jn);
    return r;
}

/* The answer: over every pair, the largest growth, the largest shrink, and the largest
 * change of a peak of tracked device memory. */
static void headline(struct gmt_diff *d)
{
    const struct gmt_diff_pair *p = d->pairs.data;
    d->grew = d->shrank = d->peak = (struct gmt_diff_pick){SIZE_MAX, 0};
    int64_t up = 0, down = 0;
    uint64_t pk = 0;
    for (size_t i = 0; i < d->pairs.len; i++)
        for (size_t k = 0; k < p[i].n; k++) {
            const struct gmt_diff_change *c = &p[i].c[k];
            if (c->delta > up) {
                up = c->delta;
                d->grew = (struct gmt_diff_pick){i, k};
            }
            if (c->delta < down) {
                down = c->delta;
                d->shrank = (struct gmt_diff_pick){i, k};
            }
            if (!strncmp(c->key, "peak\t", 5) && !strstr(c->key, "(cuMemGetInfo)") &&
                c->in_base && c->in_new && mag(c->delta) > pk) {
                pk = mag(c->delta);
                d->peak = (struct gmt_diff_pick){i, k};
            }
        }
}

int gmt_diff_of(struct gmt_diff *d, const char *base, const char *now,
                const struct gmt_report_opts *ro, int frames, struct gmt_msgs *msgs)
{
    memset(d, 0, sizeof *d);
    d->pairs = (struct gmt_vec)GMT_VEC_INIT(struct gmt_diff_pair);
    d->groups = (struct gmt_vec)GMT_VEC_INIT(struct gmt_diff_group);
    d->only = (struct gmt_vec)GMT_VEC_INIT(struct gmt_diff_only);
    d->base.arg = base;
    d->now.arg = now;
    if (load_side(&d->base, ro, msgs) | load_side(&d->now, ro, msgs))
        return -EINVAL;
    size_t *ob = order_of(&d->base, &d->n_base), *on = order_of(&d->now, &d->n_new);
    if (!ob || !on) {
        gmt_msgs_add(msgs, "out of memory");
        free(ob);
        free(on);
        return -ENOMEM;
    }
    d->cut_short = pair_up(d, ob, d->n_base, on, d->n_new, frames) != 0;
    free(ob);
    free(on);
    if (!d->cut_short && group_pairs(d))
        d->cut_short = true;
    headline(d);
    return 0;
}

void gmt_diff_free(struct gmt_diff *d)
{
    for (size_t i = 0; i < d->pairs.len; i++)
        pair_free(&((struct gmt_diff_pair *)d->pairs.data)[i]);
    gmt_vec_free(&d->pairs);
    gmt_vec_free(&d->groups);
    gmt_vec_free(&d->only);
    free_side(&d->base);
    free_side(&d->now);
}
