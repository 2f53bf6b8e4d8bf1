/* check_ranks.c: the ranks two sets of metrics cover, and the job's metrics across its ranks (min, median, max), for `check`. */
#include "check_ranks.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"

static int cmp_who(const void *x, const void *y)
{
    const struct gmt_who *a = x, *b = y;
    int ka = a->rank >= 0, kb = b->rank >= 0;
    if (ka != kb)
        return ka ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return (a->process > b->process) - (a->process < b->process);
}

int gmt_whos_of(struct gmt_whos *w, const struct gmt_metrics *m)
{
    w->n = 0;
    w->v = malloc((m->n ? m->n : 1) * sizeof *w->v);
    if (!w->v)
        return -ENOMEM;
    for (size_t i = 0; i < m->n; i++)
        w->v[w->n++] = (struct gmt_who){m->v[i].rank, m->v[i].process};
    if (w->n)
        gmt_sort(w->v, w->n, sizeof *w->v, cmp_who);
    size_t out = 0;
    for (size_t i = 0; i < w->n; i++)
        if (!out || cmp_who(&w->v[out - 1], &w->v[i]))
            w->v[out++] = w->v[i];
    w->n = out;
    return 0;
}

void gmt_whos_free(struct gmt_whos *w)
{
    free(w->v);
    w->v = NULL;
    w->n = 0;
}

bool gmt_whos_equal(const struct gmt_whos *a, const struct gmt_whos *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (cmp_who(&a->v[i], &b->v[i]))
            return false;
    return true;
}

static bool has(const struct gmt_whos *w, const struct gmt_who *x)
{
    return w->n && bsearch(x, w->v, w->n, sizeof *w->v, cmp_who);
}

/* The processes of w not in minus (NULL: none left out) as text: distinct known ranks
 * as runs "0-3, 5", then the count of unknown-rank processes. */
static const char *text_of(const struct gmt_whos *w, const struct gmt_whos *minus, char *buf,
                           size_t len)
{
    size_t ranks = 0, unknown = 0, ll = 0;
    char list[512] = "";
    int32_t run_start = 0, run_end = -2;
    for (size_t i = 0; i <= w->n; i++) {
        const struct gmt_who *x = i < w->n ? &w->v[i] : NULL;
        if (x && minus && has(minus, x))
            continue;
        if (x && x->rank < 0) {
            unknown++;
            continue;
        }
        if (x && x->rank == run_end)
            continue; /* a second trace of one rank */
        if (x && x->rank == run_end + 1 && run_end >= 0) {
            run_end = x->rank;
            ranks++;
            continue;
        }
        if (run_end >= 0 && ll < sizeof list - 32) {
            ll += (size_t)snprintf(list + ll, sizeof list - ll, "%s%d", ll ? ", " : "", run_start);
            if (run_end != run_start)
                ll += (size_t)snprintf(list + ll, sizeof list - ll, "-%d", run_end);
        }
        if (x) {
            run_start = run_end = x->rank;
            ranks++;
        }
    }
    size_t at = 0;
    buf[0] = 0;
    if (ranks)
        at = (size_t)snprintf(buf, len, "%zu rank%s (%s)", ranks, ranks == 1 ? "" : "s", list);
    if (unknown && at < len)
        snprintf(buf + at, len - at, "%s%zu process%s of unknown rank", ranks ? " and " : "",
                 unknown, unknown == 1 ? "" : "es");
    if (!ranks && !unknown)
        snprintf(buf, len, "no process");
    return buf;
}

const char *gmt_whos_text(const struct gmt_whos *w, char *buf, size_t len)
{
    return text_of(w, NULL, buf, len);
}

const char *gmt_whos_minus(const struct gmt_whos *a, const struct gmt_whos *b, char *buf, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < a->n; i++)
        n += !has(b, &a->v[i]);
    if (!n) {
        buf[0] = 0;
        return buf;
    }
    return text_of(a, b, buf, len);
}

void gmt_whos_intersect(struct gmt_whos *a, const struct gmt_whos *b)
{
    size_t out = 0;
    for (size_t i = 0; i < a->n; i++)
        if (has(b, &a->v[i]))
            a->v[out++] = a->v[i];
    a->n = out;
}

void gmt_metrics_keep(struct gmt_metrics *m, const struct gmt_whos *keep)
{
    size_t out = 0;
    for (size_t i = 0; i < m->n; i++) {
        struct gmt_who x = {m->v[i].rank, m->v[i].process};
        if (has(keep, &x))
            m->v[out++] = m->v[i];
    }
    m->n = out;
}

/* The quantity a metric is across ranks: its identity without rank, device and rank in
 * the communicator. */
static struct gmt_metric job_key(const struct gmt_metric *m)
{
    struct gmt_metric k = *m;
    k.rank = GMT_RANK_JOB;
    k.process = 0;
    k.comm_rank = -1;
    k.device = -1;
    k.value = 0;
    k.calls = 0;
    return k;
}

static int cmp_key_value(const void *x, const void *y)
{
    const struct gmt_metric *a = x, *b = y;
    int r = gmt_metric_cmp(a, b);
    if (r)
        return r;
    return (a->value > b->value) - (a->value < b->value);
}

int gmt_metrics_across_ranks(struct gmt_metrics *out, const struct gmt_metrics *m)
{
    memset(out, 0, sizeof *out);
    struct gmt_metric *keys = malloc((m->n ? m->n : 1) * sizeof *keys);
    if (!keys)
        return -ENOMEM;
    for (size_t i = 0; i < m->n; i++) {
        keys[i] = job_key(&m->v[i]);
        keys[i].value = m->v[i].value;
        keys[i].calls = m->v[i].calls;
        /* the rank's device rides along, outside the identity, to be shown */
        keys[i].dev_lo = keys[i].dev_hi = m->v[i].device;
    }
    if (m->n)
        gmt_sort(keys, m->n, sizeof *keys, cmp_key_value);
    int r = 0;
    for (size_t i = 0; i < m->n && !r;) {
        size_t j = i;
        while (j < m->n && !gmt_metric_cmp(&keys[i], &keys[j]))
            j++;
        /* keys[i..j) are one quantity's values over the ranks, ascending */
        const int64_t stat[3] = {keys[i].value, keys[i + (j - i - 1) / 2].value, keys[j - 1].value};
        int32_t lo = -1, hi = -1;
        for (size_t k = i; k < j; k++)
            if (keys[k].dev_lo >= 0) {
                lo = lo < 0 || keys[k].dev_lo < lo ? keys[k].dev_lo : lo;
                hi = keys[k].dev_hi > hi ? keys[k].dev_hi : hi;
            }
        for (int s = 0; s < 3; s++) {
            struct gmt_metric *o = gmt_metrics_push(out);
            if (!o) {
                r = -ENOMEM;
                break;
            }
            *o = keys[i];
            o->process = GMT_JOB_MIN + s;
            o->value = stat[s];
            o->calls = keys[j - 1].calls;
            o->dev_lo = lo;
            o->dev_hi = hi;
        }
        i = j;
    }
    free(keys);
    if (r) {
        gmt_metrics_free(out);
        return r;
    }
    gmt_metrics_sort(out);
    return 0;
}

/* Whether two verdicts are of one quantity of the job and say the same of it. */
static bool same_stat(const struct gmt_verdict *a, const struct gmt_verdict *b)
{
    const struct gmt_metric *ma = a->now ? a->now : a->base, *mb = b->now ? b->now : b->base;
    struct gmt_metric ka = *ma, kb = *mb;
    ka.process = kb.process = 0;
    return a->kind == b->kind && !gmt_metric_cmp(&ka, &kb) && !a->base == !b->base &&
           !a->now == !b->now && (!a->base || a->base->value == b->base->value) &&
           (!a->now || a->now->value == b->now->value);
}

void gmt_verdicts_fold(const struct gmt_verdicts *vs, unsigned char *fold)
{
    memset(fold, 0, vs->n);
    for (size_t i = 0; i < vs->n; i++) {
        const struct gmt_metric *m = vs->v[i].now ? vs->v[i].now : vs->v[i].base;
        if (m->rank != GMT_RANK_JOB || m->process != GMT_JOB_MIN)
            continue;
        size_t other[2] = {SIZE_MAX, SIZE_MAX};
        for (size_t k = 0; k < vs->n; k++) {
            const struct gmt_metric *o = vs->v[k].now ? vs->v[k].now : vs->v[k].base;
            if (k == i || o->rank != GMT_RANK_JOB || o->process == GMT_JOB_MIN)
                continue;
            struct gmt_metric a = *m, b = *o;
            a.process = b.process = 0;
            if (!gmt_metric_cmp(&a, &b))
                other[o->process == GMT_JOB_MEDIAN ? 0 : 1] = k;
        }
        if (other[0] == SIZE_MAX || other[1] == SIZE_MAX || !same_stat(&vs->v[i], &vs->v[other[0]]) ||
            !same_stat(&vs->v[i], &vs->v[other[1]]))
            continue;
        fold[i] = 1;
        fold[other[0]] = fold[other[1]] = 2;
    }
}
