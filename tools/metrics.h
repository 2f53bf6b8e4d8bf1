/* metrics.h: the NCCL memory metrics `check` and `diff` compare, taken from analysed traces, with their identities. */
#ifndef GMT_METRICS_H
#define GMT_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"
#include "util.h"

/* The checks, X(name, what it measures), in the order they are printed. The names are
 * those of the baseline's "check" field and of per-check limits (peak=10%). */
#define GMT_CHECKS(X)                                                                 \
    X(init, "tracked device bytes a communicator init/split added")                   \
    X(first_call, "tracked device bytes a collective's first call added")             \
    X(steady, "largest tracked device bytes one later call of a collective added")    \
    X(peak, "peak tracked device memory")                                             \
    X(leak, "tracked device memory still live at the end of the process")

enum gmt_check {
#define GMT_X(name, what) GMT_CHECK_##name,
    GMT_CHECKS(GMT_X)
#undef GMT_X
    GMT_CHECK_N
};

const char *gmt_check_name(enum gmt_check c);
/* The check called `name`, or -1. */
int gmt_check_by_name(const char *name, size_t len);

#define GMT_CAT_NAME_MAX 32
/* A category's name as categories are named (nccl, pytorch, user, ...): 1 to
 * GMT_CAT_NAME_MAX letters, digits, '_', '.' or '-' (len bytes at s). */
bool gmt_category_name_ok(const char *s, size_t len);
#define GMT_OP_LABEL_MAX 64

/* One measured quantity of one process. Everything but `value` (and `calls`) is its
 * identity: two runs' metrics are compared when all of it is equal. No address, time,
 * pid or host takes part, so identities are stable from run to run. */
struct gmt_metric {
    int32_t rank;              /* the PROCESS rank; -1 unknown: then `process` says which */
    int32_t process;           /* 1-based position among the side's unknown-rank traces, in
                                * file-name order; 0 when rank is known. A second trace of
                                * the same known rank counts on from 2 */
    enum gmt_check check;
    char op[GMT_OP_LABEL_MAX]; /* init/first_call/steady: op label ("AllReduce",
                                * "Group(AllReduce+AllGather)", "CommInitRank") */
    int32_t comm_size;         /* communicator size, -1 unknown (or none) */
    int32_t comm_rank;         /* rank in the communicator, -1 unknown */
    uint64_t bytes_per_call;   /* first_call/steady: the call's buffer bytes */
    int32_t device;            /* peak/leak: device ordinal; -1 otherwise */
    int32_t dev_lo, dev_hi;    /* a job's peak/leak across ranks (device -1): the lowest and
                                * highest device of the ranks' metrics; -1 none. Shown, not
                                * compared: each rank's own device is one quantity */
    char category[GMT_CAT_NAME_MAX + 1]; /* peak/leak: restricted to this category, "" all */
    uint32_t occurrence;       /* 1, 2, ...: among metrics of one process with equal identity,
                                * in order of first appearance (two communicators of one size) */
    int64_t value;             /* bytes */
    uint64_t calls;            /* first_call/steady: calls in the trace (shown, not compared) */
};

/* Identity order: rank, process, check, op, comm size, comm rank, bytes, device, category,
 * occurrence. 0 when two metrics are the same quantity. */
int gmt_metric_cmp(const struct gmt_metric *a, const struct gmt_metric *b);
/* "rank 0", "process 2", "rank 0 #2"; "ranks max" for the job's (check_ranks.h). */
const char *gmt_metric_who(const struct gmt_metric *m, char *buf, size_t len);
/* "first_call AllReduce 2 ranks 1 MiB/call", "peak device 0 nccl". */
const char *gmt_metric_what(const struct gmt_metric *m, char *buf, size_t len);

struct gmt_metrics {
    struct gmt_metric *v;
    size_t n, cap;
};
void gmt_metrics_free(struct gmt_metrics *m);
/* Appends a metric with no identity yet (sizes, ranks and device -1) and returns it;
 * NULL when out of memory. */
struct gmt_metric *gmt_metrics_push(struct gmt_metrics *m);
/* Sorts by identity (gmt_metric_cmp). */
void gmt_metrics_sort(struct gmt_metrics *m);

/* Appends the metrics of one analysed trace. rank/process: its identity (see struct
 * gmt_metric). category: restrict peak and leak to it, NULL or "" for all. A trace that
 * used no device and made no NCCL call adds nothing (a launcher). Returns 0 or -ENOMEM. */
int gmt_metrics_add(struct gmt_metrics *m, const struct gmt_analysis *a, int32_t rank,
                    int32_t process, const char *category);

/* Identities, handed out in file order: the PROCESS rank (a second trace of the same
 * rank gets process 2, ...), else the next "process N" among unknown-rank traces. */
struct gmt_idents {
    struct gmt_vec seen;       /* (rank, traces of it so far) */
    int32_t unknown;           /* unknown-rank traces so far */
};
void gmt_idents_init(struct gmt_idents *s);
void gmt_idents_free(struct gmt_idents *s);
/* The identity the next trace gets, if it is taken. */
void gmt_idents_next(const struct gmt_idents *s, const struct gmt_analysis *a, int32_t *rank,
                     int32_t *process);
/* Takes it (only traces that used a GPU do, so a launcher shifts no numbers). 0 or -ENOMEM. */
int gmt_idents_take(struct gmt_idents *s, int32_t rank);
/* False for a trace with no device allocation, failure or NCCL call. */
bool gmt_analysis_used_gpu(const struct gmt_analysis *a);

/* Loads and analyses the traces (files; a directory stands for its *.gmt), gives each
 * its identity (PROCESS rank, else file-name order) and appends their metrics. On a bad
 * trace adds "FILE: ..." to msgs and returns -EINVAL after the rest. */
int gmt_metrics_from_paths(struct gmt_metrics *m, char *const *paths, size_t n,
                           const struct gmt_report_opts *ro, const char *category,
                           struct gmt_msgs *msgs);
/* The same, each trace that used a GPU also kept in job (gmt_job_add; the caller
 * finishes it). */
struct gmt_job;
int gmt_metrics_from_paths_job(struct gmt_metrics *m, char *const *paths, size_t n,
                               const struct gmt_report_opts *ro, const char *category,
                               struct gmt_msgs *msgs, struct gmt_job *job);

#endif
