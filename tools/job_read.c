/* job_read.c: the first pass of a summary of many traces: each trace read for its figures only, through the job driver (jobs.h), into one job. */
#include "job_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "jobs.h"
#include "metrics.h"

/* A trace's figures travel from the driver's workers (jobs.h) as one message: a header,
 * then the strings and collectives of struct gmt_job_rank, then what the selections
 * found in it (select.h). The parent keeps only the figures: memory is a few traces
 * (one per worker) plus the job. */

enum { MSG_RANK = 1, MSG_IDLE = 2 };

struct msg {
    uint32_t kind;
    int32_t rank, world_size;
    uint64_t peak, nccl, untracked, fails, n_dev;
    uint64_t u_context, u_reserv, u_other;
    uint32_t u_other_count, u_other_pid;
    uint8_t has_used, complete, has_context, has_reserv, has_other;
    int32_t version[4];
    uint32_t n_env, n_colls;
    uint32_t len_path, len_host, len_job, len_err; /* 0: NULL */
};

static void put_str(FILE *b, const char *s)
{
    uint32_t n = s ? (uint32_t)strlen(s) + 1 : 0;
    fwrite(&n, sizeof n, 1, b);
    if (n)
        fwrite(s, n, 1, b);
}

/* One trace's figures, serialised into b. */
static int read_one(void *ctx, size_t index, const struct gmt_analysis *a, FILE *b, char *err,
                    size_t errlen)
{
    struct msg m = {.kind = MSG_IDLE};
    if (!gmt_analysis_used_gpu(a)) {
        fwrite(&m, sizeof m, 1, b);
        return 0;
    }
    struct gmt_job one;
    gmt_job_init(&one);
    if (gmt_job_add(&one, a)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    const struct gmt_job_rank *r = &one.r[0];
    m.kind = MSG_RANK;
    m.rank = r->rank;
    m.world_size = r->world_size;
    m.peak = r->peak;
    m.nccl = r->nccl;
    m.untracked = r->untracked;
    m.u_context = r->u_context;
    m.u_reserv = r->u_reserv;
    m.u_other = r->u_other;
    m.u_other_count = r->u_other_count;
    m.u_other_pid = r->u_other_pid;
    m.has_context = r->has_context;
    m.has_reserv = r->has_reserv;
    m.has_other = r->has_other;
    m.fails = r->fails;
    m.n_dev = r->n_dev;
    m.has_used = r->has_used;
    m.complete = r->complete;
    memcpy(m.version, r->version, sizeof m.version);
    m.n_env = (uint32_t)r->n_env;
    m.n_colls = (uint32_t)r->n_colls;
    fwrite(&m, sizeof m, 1, b);
    put_str(b, r->path);
    put_str(b, r->host);
    put_str(b, r->job_id);
    for (size_t e = 0; e < r->n_env; e++)
        put_str(b, r->env[e]);
    fwrite(r->colls, sizeof *r->colls, r->n_colls, b);
    gmt_job_free(&one);
    struct gmt_seen seen;
    gmt_seen_init(&seen);
    int rc = gmt_seen_add(&seen, a, a->opts);
    rc = rc ? rc : gmt_seen_put(b, &seen);
    gmt_seen_free(&seen);
    if (rc)
        snprintf(err, errlen, "out of memory");
    return rc ? -1 : 0;
}

/* ---- the parent's side: messages back into the job ---- */

struct rbuf {
    char *p;
    size_t len;
};

/* A string at *at of b (bounds-checked); NULL for an absent one. -1: malformed. */
static int get_str(const struct rbuf *b, size_t *at, char **out)
{
    uint32_t n;
    *out = NULL;
    if (*at + sizeof n > b->len)
        return -1;
    memcpy(&n, b->p + *at, sizeof n);
    *at += sizeof n;
    if (!n)
        return 0;
    if (*at + n > b->len || b->p[*at + n - 1])
        return -1;
    *out = strdup(b->p + *at);
    *at += n;
    return *out ? 0 : -1;
}

struct take_ctx {
    struct gmt_job *j;
    struct gmt_job_read_result *res;
};

/* One trace's message, whole (the driver framed it), into the job or the idle count;
 * -ENOMEM on a malformed message or out of memory. */
static int take(void *ctx, size_t index, const char *p, size_t len)
{
    struct take_ctx *T = ctx;
    struct gmt_job *j = T->j;
    const struct rbuf rb = {(char *)p, len}, *b = &rb;
    struct msg m;
    if (b->len < sizeof m)
        return -ENOMEM;
    memcpy(&m, b->p, sizeof m);
    size_t at = sizeof m;
    if (m.kind == MSG_IDLE) {
        T->res->idle++;
        return 0;
    }
    if (m.kind != MSG_RANK)
        return -ENOMEM;
    if (j->n == j->cap) {
        size_t nc = j->cap ? j->cap * 2 : 64;
        void *q = realloc(j->r, nc * sizeof *j->r);
        if (!q)
            return -ENOMEM;
        j->r = q;
        j->cap = nc;
    }
    struct gmt_job_rank *r = &j->r[j->n];
    memset(r, 0, sizeof *r);
    r->rank = m.rank;
    r->world_size = m.world_size;
    r->peak = m.peak;
    r->nccl = m.nccl;
    r->untracked = m.untracked;
    r->u_context = m.u_context;
    r->u_reserv = m.u_reserv;
    r->u_other = m.u_other;
    r->u_other_count = m.u_other_count;
    r->u_other_pid = m.u_other_pid;
    r->has_context = m.has_context;
    r->has_reserv = m.has_reserv;
    r->has_other = m.has_other;
    r->fails = m.fails;
    r->n_dev = (size_t)m.n_dev;
    r->has_used = m.has_used;
    r->complete = m.complete;
    memcpy(r->version, m.version, sizeof r->version);
    r->env = calloc(m.n_env ? m.n_env : 1, sizeof *r->env);
    r->colls = malloc((m.n_colls ? m.n_colls : 1) * sizeof *r->colls);
    bool bad = !r->env || !r->colls || get_str(b, &at, &r->path) || !r->path ||
               get_str(b, &at, &r->host) || get_str(b, &at, &r->job_id);
    for (uint32_t e = 0; !bad && e < m.n_env; e++) {
        bad = get_str(b, &at, &r->env[e]) || !r->env[e];
        r->n_env += !bad;
    }
    if (!bad && at + (size_t)m.n_colls * sizeof *r->colls > b->len)
        bad = true;
    if (!bad) {
        memcpy(r->colls, b->p + at, (size_t)m.n_colls * sizeof *r->colls);
        r->n_colls = m.n_colls;
        at += (size_t)m.n_colls * sizeof *r->colls;
    }
    size_t used;
    bad = bad || gmt_seen_take(&T->res->seen, b->p + at, b->len - at, &used);
    j->n++; /* freed with the job, whole or not */
    return bad ? -ENOMEM : 0;
}

static void keep_err(void *ctx, size_t i, const char *why)
{
    struct take_ctx *T = ctx;
    T->res->err[i] = strdup(why); /* NULL out of memory: the trace is still marked unread */
}

int gmt_job_read(struct gmt_job *j, char **files, size_t n, const struct gmt_report_opts *ro,
                 struct gmt_job_read_result *res)
{
    memset(res, 0, sizeof *res);
    res->unread = calloc(n ? n : 1, sizeof *res->unread);
    res->err = calloc(n ? n : 1, sizeof *res->err);
    if (!res->unread || !res->err)
        return -ENOMEM;
    struct take_ctx T = {j, res};
    const struct gmt_jobs J = {.files = files, .n = n, .ro = ro, .trace = read_one, .take = take,
                               .ctx = &T, .progress = res->progress, .unread = res->unread,
                               .skipped = keep_err};
    struct gmt_jobs_result jr;
    int rc = gmt_jobs_run(&J, &jr);
    res->workers = jr.workers;
    return rc;
}

void gmt_job_read_result_free(struct gmt_job_read_result *res, size_t n)
{
    for (size_t i = 0; res->err && i < n; i++)
        free(res->err[i]);
    free(res->err);
    free(res->unread);
    gmt_seen_free(&res->seen);
    memset(res, 0, sizeof *res);
}

int gmt_job_open(struct gmt_job *j, char **files, size_t n, const struct gmt_report_opts *ro,
                 bool nccl_model, struct gmt_job_read_result *res, int *status)
{
    struct gmt_report_opts quick = *ro;
    quick.no_symbols = true;
    quick.nccl_model = ro->nccl_model && nccl_model;
    quick.sites = false; /* a rank's figures take none of its sites */
    gmt_job_init(j);
    *res = (struct gmt_job_read_result){.progress = isatty(STDERR_FILENO)};
    int rr = gmt_job_read(j, files, n, &quick, res);
    for (size_t i = 0; res->err && i < n; i++)
        if (res->unread[i]) {
            gmt_err("gpumemtrace: %s", res->err[i]);
            *status = GMT_EXIT_ERROR;
        }
    if (rr || gmt_job_finish(j)) {
        gmt_err("gpumemtrace: %s", rr == -EIO ? "a process reading the traces died" : "out of memory");
        return -1;
    }
    return 0;
}
