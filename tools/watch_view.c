/* watch_view.c: the view across a watch's traces: each rank's figures now, the calls that hang, the job's spreads and the ranks that stand out. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"
#include "watch_view.h"

#define QUIET_NS 30000000000ull /* a trace that did not grow for this long is "quiet" */

/* Whether the process that writes w is gone: only known on its own host. */
static bool process_gone(const struct gmt_watch_trace *w)
{
    static char here[256];
    if (!here[0] && gethostname(here, sizeof here - 1))
        return false;
    if (!w->has_proc || !w->host || strcmp(w->host, here) || !w->pid)
        return false;
    return kill((pid_t)w->pid, 0) != 0 && errno == ESRCH;
}

static const char *state_of(const struct gmt_watch_trace *w, uint64_t realtime_ns)
{
    if (w->complete)
        return "ended";
    if (process_gone(w))
        return "stopped";
    if (w->grew_realtime && realtime_ns > w->grew_realtime && realtime_ns - w->grew_realtime > QUIET_NS)
        return "quiet";
    return "running";
}

static void row_figures(struct gmt_watch_row *r, const struct gmt_watch_trace *w,
                        const struct gmt_watch_view *v)
{
    r->w = w;
    r->rank = gmt_watch_rank(w);
    r->now = gmt_watch_now(w, v->realtime_ns);
    for (size_t d = 0; d < w->n_dev; d++) {
        const struct gmt_watch_dev *dv = &w->dev[d];
        r->tracked += dv->tracked;
        r->peak += dv->peak;
        if (w->nccl_cat >= 0)
            r->nccl += dv->by_cat[w->nccl_cat];
        int64_t u;
        if (gmt_watch_untracked(dv, &u)) {
            r->has_untracked = true;
            r->untracked += u;
        }
    }
    r->state = state_of(w, v->realtime_ns);
    r->call = gmt_watch_longest_call(w);
    if (r->call) {
        r->call_ns = r->now > r->call->begin ? r->now - r->call->begin : 0;
        /* an ended or dead process waits for nothing: its call is where it stopped */
        bool alive = !strcmp(r->state, "running") || !strcmp(r->state, "quiet");
        r->hanging = alive && r->call_ns > v->hang_ns;
    }
    r->has_step_growth = gmt_watch_step_growth(w, &r->step_growth);
    r->has_min_growth = gmt_watch_minute_growth(w, &r->min_growth);
}

/* The order of the job's ranks (job.c's): known ranks first, by rank, then by path. */
static int cmp_row(const void *x, const void *y)
{
    const struct gmt_watch_row *a = x, *b = y;
    int ka = a->rank >= 0, kb = b->rank >= 0;
    if (ka != kb)
        return ka ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    return strcmp(a->w->path, b->w->path);
}

/* The row's figures as the job view takes a rank's. */
static int job_add(struct gmt_job *j, const struct gmt_watch_row *r)
{
    const struct gmt_watch_trace *w = r->w;
    struct gmt_job_rank jr = {.path = w->path, .rank = r->rank, .world_size = w->world_size,
                              .host = w->host, .job_id = w->job_id, .complete = w->complete,
                              .fails = w->n_fails, .n_dev = 0};
    for (size_t d = 0; d < w->n_dev; d++) {
        const struct gmt_watch_dev *dv = &w->dev[d];
        jr.n_dev += gmt_watch_dev_shown(dv);
        jr.peak += dv->peak;
        if (w->nccl_cat >= 0)
            jr.nccl += dv->peak_by_cat[w->nccl_cat];
        if (dv->has_used) {
            int64_t u = (int64_t)dv->used_max - (int64_t)dv->tracked_at_used_max -
                        (int64_t)dv->graph_at_used_max;
            jr.has_used = true;
            jr.untracked += u > 0 ? (uint64_t)u : 0;
        }
    }
    memcpy(jr.version, w->version, sizeof jr.version);
    return gmt_job_add_rank(j, &jr, w->env, w->n_env);
}

/* A failure's instant on the realtime clock, to order the ranks' failures together. */
static uint64_t fail_real(const struct gmt_watch_trace *w, const struct gmt_watch_fail *f)
{
    return f->time >= w->monotonic_ns ? w->realtime_ns + (f->time - w->monotonic_ns) : 0;
}

/* The latest failures over every rank, the latest first. */
static void latest_fails(struct gmt_watch_view *v)
{
    struct gmt_watch_latest_fail *top = v->latest;
    size_t n = 0;
    for (size_t i = 0; v->failures && i < v->n; i++) {
        const struct gmt_watch_fail *f;
        for (size_t k = 0; (f = gmt_watch_fail_at(v->rows[i].w, k)); k++) {
            uint64_t t = fail_real(v->rows[i].w, f);
            size_t at = n;
            while (at > 0 && top[at - 1].t < t)
                at--;
            if (at == GMT_WATCH_FAILS_SHOWN)
                continue;
            if (n < GMT_WATCH_FAILS_SHOWN)
                n++;
            memmove(&top[at + 1], &top[at], (n - 1 - at) * sizeof top[0]);
            top[at].r = &v->rows[i];
            top[at].f = f;
            top[at].t = t;
        }
    }
    v->n_latest = n;
}

int gmt_watch_view_make(const struct gmt_watch_set *s, uint64_t hang_ns, uint64_t realtime_ns,
                        struct gmt_watch_view *v)
{
    memset(v, 0, sizeof *v);
    v->set = s;
    v->hang_ns = hang_ns;
    v->realtime_ns = realtime_ns;
    v->n_traces = s->n;
    gmt_job_init(&v->job);
    if (!(v->rows = calloc(s->n ? s->n : 1, sizeof *v->rows)))
        return -ENOMEM;
    for (size_t i = 0; i < s->n; i++) {
        const struct gmt_watch_trace *w = s->t[i];
        if (!gmt_watch_uses_gpu(w)) {
            v->n_other++;
            continue;
        }
        struct gmt_watch_row *r = &v->rows[v->n++];
        row_figures(r, w, v);
        v->n_hanging += r->hanging;
        v->failures += w->n_fails;
    }
    gmt_sort(v->rows, v->n, sizeof *v->rows, cmp_row);
    for (size_t i = 0; i < v->n; i++)
        if (job_add(&v->job, &v->rows[i])) {
            gmt_watch_view_free(v);
            return -ENOMEM;
        }
    if (gmt_job_finish(&v->job)) {
        gmt_watch_view_free(v);
        return -ENOMEM;
    }
    for (size_t i = 0; i < v->n; i++) {
        v->rows[i].job_index = i; /* the same order, by cmp_row and job.c's cmp_rank */
        v->rows[i].stands_out = v->n > 1 && v->job.r[i].stands_out;
    }
    latest_fails(v);
    return 0;
}

void gmt_watch_view_free(struct gmt_watch_view *v)
{
    free(v->rows);
    gmt_job_free(&v->job);
    memset(v, 0, sizeof *v);
}
