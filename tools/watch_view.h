/* watch_view.h: the traces one watch follows (its operands listed again at each refresh) and the view across them that the renderers print. */
#ifndef GMT_WATCH_VIEW_H
#define GMT_WATCH_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "job.h"
#include "watch.h"

struct gmt_watch_set {
    struct gmt_watch_ctx ctx;
    char **roots; size_t n_roots; /* directories (searched below) and trace files */
    struct gmt_watch_trace **t; size_t n; /* by path */
    /* the latest refresh */
    uint64_t refreshes;
    uint64_t refresh_ns;       /* wall time it took */
    uint64_t bytes;            /* bytes of trace it read */
    uint64_t bytes_total;      /* over every refresh */
};

/* roots[0..n) as given; step: the NVTX step regex (NULL the default); cat_rules: --category
 * specs. 0, or -1 with a one-line message in err (a bad regex or rule, out of memory). */
int gmt_watch_set_init(struct gmt_watch_set *s, char *const *roots, size_t n, const char *step,
                       const char *const *cat_rules, size_t n_rules, char *err, size_t errlen);
void gmt_watch_set_free(struct gmt_watch_set *s);
/* Lists the roots again (new traces join, traces gone leave) and refreshes every trace:
 * `final` applies everything read (nothing more is expected). 0 or -ENOMEM. */
int gmt_watch_set_refresh(struct gmt_watch_set *s, bool final);

/* One trace that used a GPU, as a row of the view. */
struct gmt_watch_row {
    const struct gmt_watch_trace *w;
    int32_t rank;
    uint64_t now;              /* the trace's clock now (gmt_watch_now) */
    uint64_t tracked, nccl, peak; /* over its devices; nccl: the nccl category now */
    bool has_untracked;
    int64_t untracked;         /* at the latest samples, over its devices */
    const struct gmt_watch_call *call; /* the call it has been in longest, NULL none */
    uint64_t call_ns;          /* for how long */
    bool hanging;              /* longer than the view's hang_ns, and the trace not ended */
    bool has_step_growth, has_min_growth;
    int64_t step_growth, min_growth;
    bool stands_out;           /* as the job view says (gmt_job_rank.stands_out) */
    size_t job_index;          /* its rank in view.job */
    const char *state;         /* "running", "ended" (END read), "stopped" (its process is
                                * gone without an END), "quiet" (no growth for a while) */
};

#define GMT_WATCH_FAILS_SHOWN 8 /* failed allocations listed, the latest first, over all ranks */

/* One of the latest failures over every rank: its row, the failure, its realtime instant. */
struct gmt_watch_latest_fail {
    const struct gmt_watch_row *r;
    const struct gmt_watch_fail *f;
    uint64_t t;
};

struct gmt_watch_view {
    const struct gmt_watch_set *set;
    uint64_t realtime_ns, hang_ns;
    struct gmt_watch_row *rows; size_t n; /* in the job's order: ranks, then paths */
    size_t n_traces;           /* followed */
    size_t n_other;            /* traces without GPU use (a launcher's) */
    size_t n_hanging;
    uint64_t failures;         /* over every row */
    struct gmt_job job;        /* the rows as one job: spreads, groups, what stands out */
    struct gmt_watch_latest_fail latest[GMT_WATCH_FAILS_SHOWN]; /* the latest first */
    size_t n_latest;
};

/* The view now (realtime_ns, CLOCK_REALTIME); a call longer than hang_ns hangs. 0 or -ENOMEM. */
int gmt_watch_view_make(const struct gmt_watch_set *s, uint64_t hang_ns, uint64_t realtime_ns,
                        struct gmt_watch_view *v);
void gmt_watch_view_free(struct gmt_watch_view *v);

/* ---- render_watch.c ---- */

/* The view as lines of text for a person; with max_rows (0: no limit) more ranks than that
 * are shown as their groups of alike ranks, but for those that hang, fail or stand out. */
void gmt_watch_render_text(FILE *out, const struct gmt_watch_view *v, int max_rows);
/* The view as one line of JSON (schema gpumemtrace.watch/1, docs/live.md). */
void gmt_watch_render_json(FILE *out, const struct gmt_watch_view *v);
/* An NCCL call as the view names it: "AllReduce", "Group(AllReduce)", into buf. */
const char *gmt_watch_call_name(const struct gmt_watch_call *c, char *buf, size_t len);

/* ---- watch_prom.c ---- */

/* The view as Prometheus metrics, text exposition format 0.0.4. */
void gmt_watch_render_prom(FILE *out, const struct gmt_watch_view *v);

#endif
