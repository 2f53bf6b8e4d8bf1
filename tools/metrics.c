/* metrics.c: takes the NCCL memory metrics from analysed traces and gives each process its identity. */
#include "metrics.h"
#include "job.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "jobs.h"
#include "idnames.h"
#include "reader.h"
#include "util.h"

static const char *const check_names[] = {
#define GMT_X(name, what) #name,
    GMT_CHECKS(GMT_X)
#undef GMT_X
};

const char *gmt_check_name(enum gmt_check c)
{
    return (unsigned)c < GMT_CHECK_N ? check_names[c] : "?";
}

int gmt_check_by_name(const char *name, size_t len)
{
    for (int i = 0; i < GMT_CHECK_N; i++)
        if (strlen(check_names[i]) == len && !memcmp(check_names[i], name, len))
            return i;
    return -1;
}

/* ---- identity ---- */

static int cmp_i64(int64_t a, int64_t b)
{
    return a < b ? -1 : a > b;
}

int gmt_metric_cmp(const struct gmt_metric *a, const struct gmt_metric *b)
{
    /* known ranks first, in rank order; then unknown-rank processes in file order */
    int ka = a->rank >= 0, kb = b->rank >= 0;
    int r;
    if (ka != kb)
        return ka ? -1 : 1;
    if ((r = cmp_i64(a->rank, b->rank)) || (r = cmp_i64(a->process, b->process)) ||
        (r = cmp_i64(a->check, b->check)) || (r = strcmp(a->op, b->op)) ||
        (r = cmp_i64(a->comm_size, b->comm_size)) || (r = cmp_i64(a->comm_rank, b->comm_rank)))
        return r;
    if (a->bytes_per_call != b->bytes_per_call)
        return a->bytes_per_call < b->bytes_per_call ? -1 : 1;
    if ((r = cmp_i64(a->device, b->device)) || (r = strcmp(a->category, b->category)))
        return r;
    return cmp_i64(a->occurrence, b->occurrence);
}

const char *gmt_metric_who(const struct gmt_metric *m, char *buf, size_t len)
{
    static const char *const stat[] = {"?", "min", "median", "max"};
    if (m->rank == -2) /* check_ranks.h: GMT_RANK_JOB, the job's min/median/max */
        snprintf(buf, len, "ranks %s", stat[m->process >= 1 && m->process <= 3 ? m->process : 0]);
    else if (m->rank >= 0 && m->process > 1)
        snprintf(buf, len, "rank %d #%d", m->rank, m->process);
    else if (m->rank >= 0)
        snprintf(buf, len, "rank %d", m->rank);
    else
        snprintf(buf, len, "process %d", m->process);
    return buf;
}

/* Exact when a unit divides it ("1 MiB", "12 KiB"), else plain bytes: two sizes that
 * differ must not print alike, since they are different collectives. */
static const char *exact_bytes(char *buf, size_t len, uint64_t b)
{
    static const char *const units[] = {"TiB", "GiB", "MiB", "KiB"};
    for (int i = 0; i < 4; i++) {
        uint64_t u = 1ull << (10 * (4 - i));
        if (b >= u && b % u == 0) {
            snprintf(buf, len, "%" PRIu64 " %s", b / u, units[i]);
            return buf;
        }
    }
    snprintf(buf, len, "%" PRIu64 " B", b);
    return buf;
}

const char *gmt_metric_what(const struct gmt_metric *m, char *buf, size_t len)
{
    char size[48] = "", bpc[48] = "", occ[16] = "";
    if (m->comm_size >= 0)
        snprintf(size, sizeof size, " %d rank%s", m->comm_size, m->comm_size == 1 ? "" : "s");
    if (m->occurrence > 1)
        snprintf(occ, sizeof occ, " #%u", m->occurrence);
    switch (m->check) {
    case GMT_CHECK_init:
        snprintf(buf, len, "init %s%s%s", gmt_one_line(m->op), size, occ);
        break;
    case GMT_CHECK_first_call:
    case GMT_CHECK_steady: {
        char b[GMT_FMT_LEN];
        snprintf(bpc, sizeof bpc, " %s/call", exact_bytes(b, sizeof b, m->bytes_per_call));
        snprintf(buf, len, "%s %s%s%s%s", gmt_check_name(m->check), gmt_one_line(m->op), size, bpc, occ);
        break;
    }
    default:
        if (m->device >= 0)
            snprintf(buf, len, "%s device %d%s%s%s", gmt_check_name(m->check), m->device,
                     m->category[0] ? " " : "", gmt_one_line(m->category), occ);
        else if (m->dev_lo >= 0 && m->dev_lo == m->dev_hi)
            snprintf(buf, len, "%s device %d%s%s%s", gmt_check_name(m->check), m->dev_lo,
                     m->category[0] ? " " : "", gmt_one_line(m->category), occ);
        else if (m->dev_lo >= 0)
            snprintf(buf, len, "%s devices %d-%d%s%s%s", gmt_check_name(m->check), m->dev_lo,
                     m->dev_hi, m->category[0] ? " " : "", gmt_one_line(m->category), occ);
        else
            snprintf(buf, len, "%s device ?%s%s%s", gmt_check_name(m->check),
                     m->category[0] ? " " : "", gmt_one_line(m->category), occ);
        break;
    }
    return buf;
}

void gmt_metrics_free(struct gmt_metrics *m)
{
    free(m->v);
    memset(m, 0, sizeof *m);
}

static int cmp_metric_q(const void *a, const void *b)
{
    return gmt_metric_cmp(a, b);
}

void gmt_metrics_sort(struct gmt_metrics *m)
{
    if (m->n)
        gmt_sort(m->v, m->n, sizeof *m->v, cmp_metric_q);
}

struct gmt_metric *gmt_metrics_push(struct gmt_metrics *m)
{
    if (m->n == m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 32;
        struct gmt_metric *v = realloc(m->v, ncap * sizeof *v);
        if (!v)
            return NULL;
        m->v = v;
        m->cap = ncap;
    }
    struct gmt_metric *e = &m->v[m->n++];
    memset(e, 0, sizeof *e);
    e->comm_size = e->comm_rank = e->device = e->dev_lo = e->dev_hi = -1;
    return e;
}

/* ---- extraction ---- */

static bool is_collective_op(unsigned op)
{
    return (op >= GMT_OP_AllReduce && op <= GMT_OP_Recv) || op == GMT_OP_Group;
}

static int cmp_scope_time(const void *a, const void *b, void *ctx)
{
    const struct gmt_trace *t = ctx;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    struct gmt_scope tx, ty;
    uint64_t bx = gmt_trace_scope(t, x, &tx)->t_begin, by = gmt_trace_scope(t, y, &ty)->t_begin;
    if (bx != by)
        return bx < by ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Numbers equal identities in order of appearance; m->v[from..] are this process's. */
static void number_occurrences(struct gmt_metrics *m, size_t from)
{
    for (size_t i = from; i < m->n; i++) {
        uint32_t k = 1;
        m->v[i].occurrence = 0;
        for (size_t j = from; j < i; j++) {
            struct gmt_metric x = m->v[j];
            x.occurrence = 0;
            if (!gmt_metric_cmp(&x, &m->v[i]))
                k++;
        }
        m->v[i].occurrence = k;
    }
}

static int cat_of(const struct gmt_analysis *a, const char *category)
{
    for (size_t c = 0; c < a->n_cats && c < GMT_MAX_CATS; c++)
        if (!strcmp(a->cat_names[c], category))
            return (int)c;
    return -1;
}

static bool analysis_empty(const struct gmt_analysis *a)
{
    for (size_t d = 0; d < a->rep.n_dev; d++)
        if (a->rep.dev[d].allocs || a->rep.dev[d].failures)
            return false;
    return a->t.n_scopes == 0;
}

static int add_inits(struct gmt_metrics *m, const struct gmt_analysis *a, int32_t rank,
                     int32_t process)
{
    const struct gmt_trace *t = &a->t;
    /* the inits alone, in begin order (ties in file order) */
    size_t *order = NULL, n = 0, cap = 0;
    struct gmt_scope tmp, tp;
    for (size_t i = 0; i < t->n_scopes; i++) {
        if (!gmt_op_is_comm_init(gmt_trace_scope(t, i, &tmp)->op))
            continue;
        size_t *o = gmt_array_push((void **)&order, &n, &cap, sizeof *o);
        if (!o) {
            free(order);
            return -ENOMEM;
        }
        *o = i;
    }
    gmt_sort_r(order, n, sizeof *order, cmp_scope_time, (void *)t);
    for (size_t k = 0; k < n; k++) {
        const struct gmt_scope *s = gmt_trace_scope(t, order[k], &tmp);
        struct gmt_metric *e = gmt_metrics_push(m);
        if (!e) {
            free(order);
            return -ENOMEM;
        }
        e->rank = rank;
        e->process = process;
        e->check = GMT_CHECK_init;
        snprintf(e->op, sizeof e->op, "%s", gmt_op_name(s->op));
        e->value = gmt_scope_tracked(t, &a->rep, order[k]);
        e->calls = 1;
        if (s->op == GMT_OP_CommSplit || s->op == GMT_OP_CommShrink) {
            /* the child is the n-th communicator naming this parent, for the n-th split */
            size_t nth = 0, seen = 0;
            for (size_t j = 0; j < k; j++) {
                const struct gmt_scope *p = gmt_trace_scope(t, order[j], &tp);
                if ((p->op == GMT_OP_CommSplit || p->op == GMT_OP_CommShrink) && p->comm == s->comm)
                    nth++;
            }
            for (size_t c = 0; s->comm && c < t->n_comms; c++)
                if (t->comms[c].parent == s->comm && seen++ == nth) {
                    e->comm_size = t->comms[c].nranks;
                    e->comm_rank = t->comms[c].rank;
                    break;
                }
        } else {
            /* the hooks record nranks (devices for InitAll) as count, the rank as peer */
            if (s->count > 0 && s->count <= INT32_MAX)
                e->comm_size = (int32_t)s->count;
            int32_t peer = gmt_trace_scope_peer(t, s);
            if (s->op != GMT_OP_CommInitAll && peer >= 0)
                e->comm_rank = peer;
        }
    }
    free(order);
    return 0;
}

int gmt_metrics_add(struct gmt_metrics *m, const struct gmt_analysis *a, int32_t rank,
                    int32_t process, const char *category)
{
    if (analysis_empty(a))
        return 0;
    size_t from = m->n;
    int r = add_inits(m, a, rank, process);
    if (r)
        return r;
    const struct gmt_report *rep = &a->rep;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < rep->n_colls; i++) {
            const struct gmt_coll_row *c = &rep->colls[i];
            if (!is_collective_op(c->op))
                continue;
            struct gmt_metric *e = gmt_metrics_push(m);
            if (!e)
                return -ENOMEM;
            e->rank = rank;
            e->process = process;
            e->check = pass == 0 ? GMT_CHECK_first_call : GMT_CHECK_steady;
            snprintf(e->op, sizeof e->op, "%s", c->label);
            e->comm_size = c->nranks >= 0 ? c->nranks : -1;
            e->comm_rank = c->rank >= 0 ? c->rank : -1;
            e->bytes_per_call = c->bytes_per_call;
            e->calls = c->calls;
            if (pass == 0)
                e->value = c->first_tracked;
            else
                e->value = c->calls > 1 && c->later_tracked_max > 0 ? c->later_tracked_max : 0;
        }
    const char *cat = category && *category ? category : NULL;
    int ci = cat ? cat_of(a, cat) : -1;
    for (int pass = 0; pass < 2; pass++)
        for (size_t d = 0; d < rep->n_dev; d++) {
            const struct gmt_dev_report *dr = &rep->dev[d];
            /* a slot that only saw address space or host memory has nothing to gate */
            if (!dr->peak && !dr->failures)
                continue;
            struct gmt_metric *e = gmt_metrics_push(m);
            if (!e)
                return -ENOMEM;
            e->rank = rank;
            e->process = process;
            e->check = pass == 0 ? GMT_CHECK_peak : GMT_CHECK_leak;
            e->device = dr->device >= 0 ? dr->device : -1;
            if (cat)
                snprintf(e->category, sizeof e->category, "%s", cat);
            uint64_t v;
            if (pass == 0)
                v = !cat ? dr->peak : ci >= 0 ? dr->cat_peak[ci] : 0;
            else
                v = !cat ? dr->end : ci >= 0 ? dr->end_by_cat[ci] : 0;
            e->value = v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
        }
    number_occurrences(m, from);
    return 0;
}

/* ---- traces from paths ---- */

struct rank_count {
    int32_t rank;
    int32_t count;
};

void gmt_idents_init(struct gmt_idents *s)
{
    memset(s, 0, sizeof *s);
    s->seen.esize = sizeof(struct rank_count);
}

void gmt_idents_free(struct gmt_idents *s)
{
    gmt_vec_free(&s->seen);
}

static struct rank_count *rank_slot(const struct gmt_idents *s, int32_t rank)
{
    for (size_t k = 0; k < s->seen.len; k++)
        if (((struct rank_count *)s->seen.data)[k].rank == rank)
            return &((struct rank_count *)s->seen.data)[k];
    return NULL;
}

void gmt_idents_next(const struct gmt_idents *s, const struct gmt_analysis *a, int32_t *rank,
                     int32_t *process)
{
    *rank = a->t.has_proc && a->t.proc.rank >= 0 ? a->t.proc.rank : -1;
    /* no RANK in its environment (a launcher that passes ranks as arguments): its rank
     * in the first communicator it made is what a person means by its rank */
    for (size_t i = 0; *rank < 0 && i < a->t.n_comms; i++)
        if (!a->t.comms[i].parent && a->t.comms[i].rank >= 0)
            *rank = a->t.comms[i].rank;
    if (*rank >= 0) {
        const struct rank_count *rc = rank_slot(s, *rank);
        *process = rc ? rc->count + 1 : 0;
    } else {
        *process = s->unknown + 1;
    }
}

int gmt_idents_take(struct gmt_idents *s, int32_t rank)
{
    if (rank < 0) {
        s->unknown++;
        return 0;
    }
    struct rank_count *rc = rank_slot(s, rank);
    if (!rc) {
        if (!(rc = gmt_vec_push(&s->seen)))
            return -ENOMEM;
        rc->rank = rank;
    }
    rc->count++;
    return 0;
}

bool gmt_analysis_used_gpu(const struct gmt_analysis *a)
{
    return !analysis_empty(a);
}

struct from_paths {
    struct gmt_metrics *m;
    struct gmt_idents ids;
    const char *category;
    struct gmt_msgs *msgs;
    struct gmt_job *job;       /* NULL, or the traces that used a GPU, kept as ranks */
};

static int metrics_one(void *ctx, size_t i, const struct gmt_analysis *a, FILE *out, char *err,
                       size_t errlen)
{
    struct from_paths *P = ctx;
    int32_t rank, process;
    gmt_idents_next(&P->ids, a, &rank, &process);
    size_t before = P->m->n;
    int r = gmt_metrics_add(P->m, a, rank, process, P->category);
    /* a process that used no GPU (a launcher) takes no identity */
    if (!r && P->m->n > before)
        r = gmt_idents_take(&P->ids, rank);
    if (!r && P->job && gmt_analysis_used_gpu(a))
        r = gmt_job_add(P->job, a);
    if (r)
        gmt_msgs_add(P->msgs, "%s: out of memory", a->t.path);
    return r;
}

static void metrics_skipped(void *ctx, size_t i, const char *why)
{
    struct from_paths *P = ctx;
    gmt_msgs_add(P->msgs, "%s", why);
}

int gmt_metrics_from_paths(struct gmt_metrics *m, char *const *paths, size_t n,
                           const struct gmt_report_opts *ro, const char *category,
                           struct gmt_msgs *msgs)
{
    return gmt_metrics_from_paths_job(m, paths, n, ro, category, msgs, NULL);
}

int gmt_metrics_from_paths_job(struct gmt_metrics *m, char *const *paths, size_t n,
                               const struct gmt_report_opts *ro, const char *category,
                               struct gmt_msgs *msgs, struct gmt_job *job)
{
    struct from_paths P = {.m = m, .category = category, .msgs = msgs, .job = job};
    gmt_idents_init(&P.ids);
    const struct gmt_jobs J = {.files = paths, .n = n, .ro = ro, .trace = metrics_one,
                               .ctx = &P, .skipped = metrics_skipped};
    struct gmt_jobs_result res;
    int status = gmt_jobs_run(&J, &res);
    if (!status && res.skipped)
        status = -EINVAL;
    gmt_idents_free(&P.ids);
    return status;
}

bool gmt_category_name_ok(const char *s, size_t len)
{
    if (len == 0 || len > GMT_CAT_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}
