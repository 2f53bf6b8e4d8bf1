/* job.c: many traces as one job: each rank's figures, their spread (min, median, max), the ranks and collectives that stand out, the recorded differences that explain them, and the groups of ranks that behave alike. */
#include "job.h"
#include "untracked.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "reader.h"
#include "util.h"

void gmt_job_init(struct gmt_job *j)
{
    memset(j, 0, sizeof *j);
    j->world_size = -1;
}

static void rank_free(struct gmt_job_rank *r)
{
    free(r->path);
    free(r->host);
    free(r->job_id);
    for (size_t i = 0; i < r->n_env; i++)
        free(r->env[i]);
    free(r->env);
    free(r->colls);
}

void gmt_job_free(struct gmt_job *j)
{
    for (size_t i = 0; i < j->n; i++)
        rank_free(&j->r[i]);
    free(j->r);
    free(j->colls);
    for (size_t i = 0; i < j->n_usual; i++)
        free(j->usual[i].name);
    free(j->usual);
    free(j->groups);
    free(j->order);
    gmt_job_init(j);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* The settings that decide what a rank allocates: NCCL_* and CUDA_* but the device
 * list, which differs from rank to rank by design. */
static bool setting(const char *e)
{
    return (!strncmp(e, "NCCL_", 5) || !strncmp(e, "CUDA_", 5)) &&
           strncmp(e, "CUDA_VISIBLE_DEVICES=", 21);
}

static char *dup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

int gmt_job_add(struct gmt_job *j, const struct gmt_analysis *a)
{
    if (j->n == j->cap) {
        size_t nc = j->cap ? j->cap * 2 : 16;
        void *p = realloc(j->r, nc * sizeof *j->r);
        if (!p)
            return -ENOMEM;
        j->r = p;
        j->cap = nc;
    }
    struct gmt_job_rank *r = &j->r[j->n];
    memset(r, 0, sizeof *r);
    const struct gmt_trace *t = &a->t;
    const struct gmt_report *rep = &a->rep;
    char id[160];
    r->path = strdup(t->path);
    r->host = dup_or_null(t->host);
    r->job_id = dup_or_null(gmt_trace_job_id(t, id, sizeof id));
    r->rank = t->has_proc ? t->proc.rank : -1;
    for (size_t k = 0; r->rank < 0 && k < t->n_comms; k++)
        r->rank = t->comms[k].rank;
    r->world_size = t->has_proc ? t->proc.world_size : -1;
    r->complete = t->complete;
    r->fails = rep->n_fails;
    r->n_dev = rep->n_dev;
    memcpy(r->version, t->version, sizeof r->version);
    int nccl = -1;
    for (size_t c = 0; c < a->n_cats && c < GMT_MAX_CATS; c++)
        if (a->cat_names[c] && !strcmp(a->cat_names[c], "nccl"))
            nccl = (int)c;
    uint64_t most_other = 0;
    for (size_t d = 0; d < rep->n_dev; d++) {
        r->peak += rep->dev[d].peak;
        if (nccl >= 0)
            r->nccl += rep->dev[d].peak_by_cat[nccl];
        if (rep->dev[d].has_used) {
            r->has_used = true;
            int64_t u = gmt_dev_untracked(&rep->dev[d]);
            r->untracked += u > 0 ? (uint64_t)u : 0;
            const struct gmt_untracked parts = a->untracked[d];
            if (parts.has_context) {
                r->has_context = true;
                r->u_context += parts.context > 0 ? (uint64_t)parts.context : 0;
            }
            if (parts.lim.known) {
                r->has_reserv = true;
                r->u_reserv += parts.lim.reservation;
            }
            if (parts.has_other) {
                r->has_other = true;
                r->u_other += parts.other;
                r->u_other_count += parts.other_count;
                if (parts.other_pid && parts.other >= most_other) {
                    most_other = parts.other;
                    r->u_other_pid = parts.other_pid;
                }
            }
        }
    }
    r->env = calloc(t->n_env ? t->n_env : 1, sizeof *r->env);
    r->colls = calloc(rep->n_colls ? rep->n_colls : 1, sizeof *r->colls);
    bool bad = !r->path || !r->env || !r->colls || (t->host && !r->host);
    for (size_t i = 0; !bad && i < t->n_env; i++)
        if (setting(t->env[i]) && !(r->env[r->n_env++] = strdup(t->env[i])))
            bad = true;
    if (!bad && r->n_env)
        gmt_sort(r->env, r->n_env, sizeof *r->env, cmp_str);
    for (size_t k = 0; !bad && k < rep->n_colls; k++) {
        const struct gmt_coll_row *cr = &rep->colls[k];
        struct gmt_job_coll *c = &r->colls[r->n_colls++];
        snprintf(c->label, sizeof c->label, "%s", cr->label);
        c->nranks = cr->nranks;
        c->bytes = cr->bytes_per_call;
        c->first = cr->first_tracked;
    }
    if (bad) {
        rank_free(r);
        return -ENOMEM;
    }
    j->n++;
    return 0;
}

int gmt_job_add_rank(struct gmt_job *j, const struct gmt_job_rank *src, char *const *env,
                     size_t n_env)
{
    if (j->n == j->cap) {
        size_t nc = j->cap ? j->cap * 2 : 16;
        void *p = realloc(j->r, nc * sizeof *j->r);
        if (!p)
            return -ENOMEM;
        j->r = p;
        j->cap = nc;
    }
    struct gmt_job_rank *r = &j->r[j->n];
    *r = *src;
    r->path = strdup(src->path);
    r->host = dup_or_null(src->host);
    r->job_id = dup_or_null(src->job_id);
    r->env = calloc(n_env ? n_env : 1, sizeof *r->env);
    r->n_env = 0;
    r->colls = NULL;
    r->n_colls = 0;
    bool bad = !r->path || !r->env || (src->host && !r->host) || (src->job_id && !r->job_id);
    for (size_t i = 0; !bad && i < n_env; i++)
        if (setting(env[i]) && !(r->env[r->n_env++] = strdup(env[i])))
            bad = true;
    if (bad) {
        rank_free(r);
        return -ENOMEM;
    }
    if (r->n_env)
        gmt_sort(r->env, r->n_env, sizeof *r->env, cmp_str);
    j->n++;
    return 0;
}

static int usual_context(struct gmt_job *j);

/* ---- spreads ---- */

static int cmp_rank(const void *x, const void *y)
{
    const struct gmt_job_rank *a = x, *b = y;
    int ka = a->rank >= 0, kb = b->rank >= 0;
    if (ka != kb)
        return ka ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return strcmp(a->path, b->path);
}

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* The spread of the figure at byte offset `off` of each rank (a uint64_t), over the
 * ranks where `known` (offset of a bool, or SIZE_MAX: all). */
static int spread_of(const struct gmt_job *j, size_t off, size_t known, struct gmt_job_spread *s)
{
    memset(s, 0, sizeof *s);
    uint64_t *v = malloc((j->n ? j->n : 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < j->n; i++) {
        const char *base = (const char *)&j->r[i];
        if (known != SIZE_MAX && !*(const bool *)(base + known))
            continue;
        uint64_t x;
        memcpy(&x, base + off, sizeof x);
        if (!n || x < s->min) {
            s->min = x;
            s->min_rank = j->r[i].rank;
        }
        if (!n || x > s->max) {
            s->max = x;
            s->max_rank = j->r[i].rank;
        }
        v[n++] = x;
    }
    if (n) {
        gmt_sort(v, n, sizeof *v, cmp_u64);
        s->median = v[(n - 1) / 2];
        s->known = true;
    }
    free(v);
    return 0;
}

static bool same_coll(const struct gmt_job_coll *a, const struct gmt_job_coll *b)
{
    return !strcmp(a->label, b->label) && a->nranks == b->nranks && a->bytes == b->bytes;
}

static int cmp_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* Each collective across the ranks that made it: median, and the rank farthest. */
static int coll_spreads(struct gmt_job *j)
{
    size_t cap = 0;
    for (size_t i = 0; i < j->n; i++)
        cap += j->r[i].n_colls;
    j->colls = calloc(cap ? cap : 1, sizeof *j->colls);
    int64_t *v = malloc((j->n ? j->n : 1) * sizeof *v);
    if (!j->colls || !v) {
        free(v);
        return -ENOMEM;
    }
    for (size_t i = 0; i < j->n; i++)
        for (size_t k = 0; k < j->r[i].n_colls; k++) {
            const struct gmt_job_coll *c = &j->r[i].colls[k];
            size_t m = 0;
            while (m < j->n_colls && !same_coll(&j->colls[m].c, c))
                m++;
            if (m < j->n_colls)
                continue;
            struct gmt_job_coll_spread *s = &j->colls[j->n_colls++];
            s->c = *c;
            size_t n = 0;
            for (size_t i2 = 0; i2 < j->n; i2++)
                for (size_t k2 = 0; k2 < j->r[i2].n_colls; k2++)
                    if (same_coll(&j->r[i2].colls[k2], c)) {
                        v[n++] = j->r[i2].colls[k2].first;
                        break;
                    }
            gmt_sort(v, n, sizeof *v, cmp_i64);
            s->c.first = v[(n - 1) / 2];
            s->ranks = (int)n;
            s->out_rank = -1;
            uint64_t best = 0;
            for (size_t i2 = 0; i2 < j->n; i2++)
                for (size_t k2 = 0; k2 < j->r[i2].n_colls; k2++)
                    if (same_coll(&j->r[i2].colls[k2], c)) {
                        int64_t d = j->r[i2].colls[k2].first - s->c.first;
                        uint64_t ad = d < 0 ? (uint64_t)0 - (uint64_t)d : (uint64_t)d;
                        if (ad > best) {
                            best = ad;
                            s->out_rank = j->r[i2].rank;
                            s->out_first = j->r[i2].colls[k2].first;
                        }
                        break;
                    }
        }
    free(v);
    return 0;
}

/* ---- ranks that behave alike ---- */

static bool near(uint64_t a, uint64_t b)
{
    uint64_t d = a > b ? a - b : b - a, m = a > b ? a : b;
    return d <= m / 20 || d <= (1u << 20); /* within 5%, or 1 MiB */
}

/* Whether two ranks' untracked part agrees: both unmeasured, or both measured and near. */
static bool part_alike(bool ha, uint64_t a, bool hb, uint64_t b)
{
    return ha == hb && (!ha || near(a, b));
}

/* Two ranks alike: the same settings, versions, world size and device count, the same
 * collectives adding the same bytes, peaks, NCCL bytes and the untracked parts (context,
 * local-memory reservation, other processes) near each other. */
static bool alike(const struct gmt_job_rank *a, const struct gmt_job_rank *b)
{
    if (a->n_env != b->n_env || a->n_colls != b->n_colls || a->world_size != b->world_size ||
        a->n_dev != b->n_dev || memcmp(a->version, b->version, sizeof a->version) ||
        !near(a->peak, b->peak) || !near(a->nccl, b->nccl) || a->complete != b->complete ||
        (a->fails != 0) != (b->fails != 0) ||
        !part_alike(a->has_context, a->u_context, b->has_context, b->u_context) ||
        !part_alike(a->has_reserv, a->u_reserv, b->has_reserv, b->u_reserv) ||
        !part_alike(a->has_other, a->u_other, b->has_other, b->u_other))
        return false;
    for (size_t i = 0; i < a->n_env; i++)
        if (strcmp(a->env[i], b->env[i]))
            return false;
    for (size_t k = 0; k < a->n_colls; k++)
        if (!same_coll(&a->colls[k], &b->colls[k]) || a->colls[k].first != b->colls[k].first)
            return false;
    return true;
}

static int groups_finish(struct gmt_job *j);

int gmt_job_finish(struct gmt_job *j)
{
    if (j->n)
        gmt_sort(j->r, j->n, sizeof *j->r, cmp_rank);
    int r = spread_of(j, offsetof(struct gmt_job_rank, peak), SIZE_MAX, &j->peak);
    if (!r)
        r = spread_of(j, offsetof(struct gmt_job_rank, nccl), SIZE_MAX, &j->nccl);
    if (!r)
        r = spread_of(j, offsetof(struct gmt_job_rank, untracked),
                      offsetof(struct gmt_job_rank, has_used), &j->untracked);
    if (!r)
        r = spread_of(j, offsetof(struct gmt_job_rank, u_context),
                      offsetof(struct gmt_job_rank, has_context), &j->u_context);
    if (!r)
        r = spread_of(j, offsetof(struct gmt_job_rank, u_reserv),
                      offsetof(struct gmt_job_rank, has_reserv), &j->u_reserv);
    if (!r)
        r = spread_of(j, offsetof(struct gmt_job_rank, u_other),
                      offsetof(struct gmt_job_rank, has_other), &j->u_other);
    if (!r)
        r = coll_spreads(j);
    if (!r)
        r = usual_context(j);
    if (r)
        return r;
    /* groups: each rank joins the first group whose first rank it is alike */
    size_t *first = malloc((j->n ? j->n : 1) * sizeof *first);
    if (!first)
        return -ENOMEM;
    j->n_groups = 0;
    for (size_t i = 0; i < j->n; i++) {
        size_t g = 0;
        while (g < j->n_groups && !alike(&j->r[first[g]], &j->r[i]))
            g++;
        if (g == j->n_groups)
            first[j->n_groups++] = i;
        j->r[i].group = g;
    }
    free(first);
    /* hosts, world size, whether every rank is there */
    j->n_hosts = 0;
    j->world_mixed = false;
    j->world_size = -1;
    j->n_ranked = 0;
    for (size_t i = 0; i < j->n; i++) {
        bool seen = false;
        for (size_t k = 0; k < i && !seen; k++)
            seen = j->r[k].host && j->r[i].host && !strcmp(j->r[k].host, j->r[i].host);
        j->n_hosts += !seen;
        if (j->r[i].world_size >= 0) {
            if (j->world_size >= 0 && j->world_size != j->r[i].world_size)
                j->world_mixed = true;
            if (j->world_size < 0 || j->r[i].world_size > j->world_size)
                j->world_size = j->r[i].world_size;
        }
        j->n_ranked += j->r[i].rank >= 0;
    }
    j->all_there = false;
    j->n_missing = 0;
    if (j->world_size > 0 && !j->world_mixed) {
        size_t have = 0;
        int32_t prev = -1;
        for (size_t i = 0; i < j->n; i++) /* sorted: known ranks first, ascending */
            if (j->r[i].rank >= 0 && j->r[i].rank < j->world_size && j->r[i].rank != prev) {
                have++;
                prev = j->r[i].rank;
            }
        j->n_missing = (size_t)j->world_size - have;
        j->all_there = !j->n_missing;
    }
    return groups_finish(j);
}

static bool far_from(uint64_t x, uint64_t median)
{
    uint64_t d = x > median ? x - median : median - x;
    return d > median / 10 && d > (1u << 20);
}

/* ---- what stands out ---- */

static const char *differences(const struct gmt_job *j, size_t i, char *buf, size_t len);

bool gmt_job_untracked_above(uint64_t x, uint64_t median)
{
    return x > median && x - median > median / 10 && x - median > (1u << 20);
}

/* Why rank i's untracked memory stands out, in words, into buf; its length, 0: none. buf
 * NULL: nonzero when there is a cause. */
static size_t untracked_cause(const struct gmt_job *j, size_t i, char *buf, size_t len)
{
    const struct gmt_job_rank *r = &j->r[i];
    char b1[GMT_FMT_LEN], b2[GMT_FMT_LEN];
    size_t n = 0;
    if (buf && len)
        buf[0] = 0;
    /* one rule for every part: well above the job's median (10 % and 1 MiB), as a peak
     * stands out; other processes too, so that one daemon on every GPU is nobody's cause */
    if (r->has_other && j->u_other.known && gmt_job_untracked_above(r->u_other, j->u_other.median)) {
        if (!buf)
            return 1;
        gmt_fmt_bytes(b1, sizeof b1, r->u_other);
        if (r->u_other_count > 1)
            n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%" PRIu32 " other processes hold %s on its GPU",
                                  r->u_other_count, b1);
        else
            n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "another process holds %s on its GPU", b1);
        if (r->u_other_pid)
            n += (size_t)snprintf(buf + n, n < len ? len - n : 0, " (%spid %" PRIu32 ")",
                                  r->u_other_count > 1 ? "the largest: " : "", r->u_other_pid);
        if (j->u_other.median)
            n += (size_t)snprintf(buf + n, n < len ? len - n : 0, ", median %s",
                                  gmt_fmt_bytes(b2, sizeof b2, j->u_other.median));
    }
    if (r->has_context && j->u_context.known && gmt_job_untracked_above(r->u_context, j->u_context.median)) {
        if (!buf)
            return 1;
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0, "%sits CUDA context is %s, median %s",
                              n ? "; " : "", gmt_fmt_bytes(b1, sizeof b1, r->u_context),
                              gmt_fmt_bytes(b2, sizeof b2, j->u_context.median));
    }
    if (r->has_reserv && j->u_reserv.known && gmt_job_untracked_above(r->u_reserv, j->u_reserv.median)) {
        if (!buf)
            return 1;
        n += (size_t)snprintf(buf + n, n < len ? len - n : 0,
                              "%sits local-memory reservation is %s, median %s (a larger stack limit)",
                              n ? "; " : "", gmt_fmt_bytes(b1, sizeof b1, r->u_reserv),
                              gmt_fmt_bytes(b2, sizeof b2, j->u_reserv.median));
    }
    return n < len ? n : (len ? len - 1 : 0);
}

static bool stands_out(const struct gmt_job *j, size_t i)
{
    const struct gmt_job_rank *r = &j->r[i];
    if (far_from(r->peak, j->peak.median) || far_from(r->nccl, j->nccl.median))
        return true;
    if (r->cause[0])
        return true;
    for (size_t k = 0; k < j->n_colls; k++)
        if (j->colls[k].out_rank == r->rank && r->rank >= 0)
            return true;
    return r->diff[0] != 0;
}

/* The value rank r has for setting `name` (NAME=), NULL unset. */
static const char *env_of(const struct gmt_job_rank *r, const char *name, size_t nl)
{
    for (size_t i = 0; i < r->n_env; i++)
        if (!strncmp(r->env[i], name, nl) && r->env[i][nl] == '=')
            return r->env[i] + nl + 1;
    return NULL;
}

static bool same_value(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

/* The value most ranks have for setting name (ties: the first rank's), NULL unset: by
 * counting each distinct value once. */
static const char *usual_env(const struct gmt_job *j, const char *name, size_t nl)
{
    const char *best = NULL;
    size_t best_n = 0, unset = 0;
    for (size_t i = 0; i < j->n; i++) {
        const char *v = env_of(&j->r[i], name, nl);
        if (!v) {
            unset++;
            continue;
        }
        bool counted = false;
        for (size_t k = 0; k < i && !counted; k++)
            counted = same_value(env_of(&j->r[k], name, nl), v);
        if (counted)
            continue;
        size_t n = 0;
        for (size_t k = i; k < j->n; k++)
            n += same_value(env_of(&j->r[k], name, nl), v);
        if (n > best_n) {
            best_n = n;
            best = v;
        }
    }
    return unset >= best_n ? NULL : best;
}

/* The most common of n values (ties: the smallest). */
static int64_t usual_of(int64_t *v, size_t n)
{
    if (!n)
        return -1;
    gmt_sort(v, n, sizeof *v, cmp_i64);
    int64_t best = v[0];
    size_t best_n = 0;
    for (size_t i = 0; i < n;) {
        size_t k = i;
        while (k < n && v[k] == v[i])
            k++;
        if (k - i > best_n) {
            best_n = k - i;
            best = v[i];
        }
        i = k;
    }
    return best;
}

/* What most ranks have, into j->usual and the usual_* fields. 0 or -ENOMEM. */
static int usual_context(struct gmt_job *j)
{
    int64_t *v = malloc((j->n ? j->n : 1) * sizeof *v);
    if (!v)
        return -ENOMEM;
    for (int c = 0; c < 4; c++) {
        for (size_t i = 0; i < j->n; i++)
            v[i] = j->r[i].version[c];
        j->usual_version[c] = (int32_t)usual_of(v, j->n);
    }
    for (size_t i = 0; i < j->n; i++)
        v[i] = j->r[i].world_size;
    j->usual_world = (int32_t)usual_of(v, j->n);
    for (size_t i = 0; i < j->n; i++)
        v[i] = (int64_t)j->r[i].n_dev;
    j->usual_dev = (size_t)usual_of(v, j->n);
    free(v);
    for (size_t i = 0; i < j->n; i++)
        for (size_t e = 0; e < j->r[i].n_env; e++) {
            const char *name = j->r[i].env[e];
            size_t nl = strcspn(name, "=");
            bool seen = false;
            for (size_t u = 0; u < j->n_usual && !seen; u++)
                seen = strlen(j->usual[u].name) == nl && !strncmp(j->usual[u].name, name, nl);
            if (seen)
                continue;
            void *p = realloc(j->usual, (j->n_usual + 1) * sizeof *j->usual);
            if (!p)
                return -ENOMEM;
            j->usual = p;
            char *nm = strndup(name, nl);
            if (!nm)
                return -ENOMEM;
            j->usual[j->n_usual].name = nm;
            j->usual[j->n_usual++].value = usual_env(j, nm, nl);
        }
    return 0;
}

#define APPEND(...)                                                                      \
    do {                                                                                 \
        if (at < len)                                                                    \
            at += (size_t)snprintf(buf + at, len - at, __VA_ARGS__);                     \
    } while (0)

static const char *differences(const struct gmt_job *j, size_t i, char *buf, size_t len)
{
    const struct gmt_job_rank *r = &j->r[i];
    size_t at = 0;
    buf[0] = 0;
    for (size_t u = 0; u < j->n_usual; u++) {
        const char *name = j->usual[u].name, *usual = j->usual[u].value;
        const char *mine = env_of(r, name, strlen(name));
        if (!same_value(mine, usual))
            APPEND("%s%s=%s (most ranks: %s)", at ? "; " : "", name, mine ? mine : "unset",
                   usual ? usual : "unset");
    }
    static const char *const comp[] = {"CUDA driver", "CUDA runtime", "NCCL", "?"};
    for (int c = 0; c < 4; c++)
        if (r->version[c] != j->usual_version[c])
            APPEND("%s%s version %" PRId32 " (most ranks: %" PRId32 ")", at ? "; " : "", comp[c],
                   r->version[c], j->usual_version[c]);
    if (r->world_size != j->usual_world)
        APPEND("%sworld size %" PRId32 " (most ranks: %" PRId32 ")", at ? "; " : "", r->world_size,
               j->usual_world);
    if (r->n_dev != j->usual_dev)
        APPEND("%s%zu device(s) (most ranks: %zu)", at ? "; " : "", r->n_dev, j->usual_dev);
    return buf;
}

const char *gmt_job_group_ranks(const struct gmt_job *j, size_t g, char *buf, size_t len,
                                size_t *n, size_t *rep)
{
    size_t at = 0;
    buf[0] = 0;
    for (size_t i = 0; i < j->n; i++) {
        if (j->r[i].group != g)
            continue;
        if (j->r[i].rank < 0) {
            APPEND("%s?", at ? ", " : "");
            continue;
        }
        /* a run of consecutive ranks of the group as a-b */
        size_t e = i;
        while (e + 1 < j->n && j->r[e + 1].group == g && j->r[e + 1].rank == j->r[e].rank + 1)
            e++;
        if (e > i) {
            APPEND("%s%" PRId32 "-%" PRId32, at ? ", " : "", j->r[i].rank, j->r[e].rank);
            i = e;
        } else {
            APPEND("%s%" PRId32, at ? ", " : "", j->r[i].rank);
        }
    }
    *n = g < j->n_groups ? j->groups[g].n : 0;
    *rep = g < j->n_groups ? j->groups[g].rep : 0;
    return buf;
}

/* Group g's count and the member at its median peak, which stands for it. */
static int group_rep(const struct gmt_job *j, size_t g, struct gmt_job_group *out)
{
    size_t count = 0;
    uint64_t *peaks = malloc((j->n ? j->n : 1) * sizeof *peaks);
    if (!peaks)
        return -ENOMEM;
    for (size_t i = 0; i < j->n; i++)
        if (j->r[i].group == g)
            peaks[count++] = j->r[i].peak;
    out->n = count;
    out->rep = 0;
    if (count) {
        gmt_sort(peaks, count, sizeof *peaks, cmp_u64);
        uint64_t med = peaks[(count - 1) / 2];
        for (size_t i = 0; i < j->n; i++)
            if (j->r[i].group == g && j->r[i].peak == med) {
                out->rep = i;
                break;
            }
    }
    free(peaks);
    return 0;
}

/* The groups, largest first (ties: by their first rank), into order[0..n_groups). */
static void group_order(const struct gmt_job *j, size_t *order)
{
    for (size_t g = 0; g < j->n_groups; g++)
        order[g] = g;
    /* insertion sort: groups are few next to ranks, and it keeps ties in order */
    for (size_t a = 1; a < j->n_groups; a++) {
        size_t g = order[a], b = a;
        while (b > 0 && j->groups[order[b - 1]].n < j->groups[g].n) {
            order[b] = order[b - 1];
            b--;
        }
        order[b] = g;
    }
}

/* What the views read of the groups and ranks: each group's count and representative,
 * the groups' order, each rank's untracked cause, differences and whether it stands out. */
static int groups_finish(struct gmt_job *j)
{
    free(j->groups);
    free(j->order);
    j->groups = calloc(j->n_groups ? j->n_groups : 1, sizeof *j->groups);
    j->order = calloc(j->n_groups ? j->n_groups : 1, sizeof *j->order);
    if (!j->groups || !j->order)
        return -ENOMEM;
    for (size_t g = 0; g < j->n_groups; g++)
        if (group_rep(j, g, &j->groups[g]))
            return -ENOMEM;
    group_order(j, j->order);
    for (size_t k = 0; k < j->n_groups; k++)
        j->groups[j->order[k]].place = k;
    for (size_t i = 0; i < j->n; i++) {
        struct gmt_job_rank *r = &j->r[i];
        untracked_cause(j, i, r->cause, sizeof r->cause);
        differences(j, i, r->diff, sizeof r->diff);
        r->stands_out = stands_out(j, i);
    }
    return 0;
}
