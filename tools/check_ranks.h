/* check_ranks.h: the ranks two sets of metrics cover, and the job's metrics across its ranks (min, median, max), for `check`. */
#ifndef GMT_CHECK_RANKS_H
#define GMT_CHECK_RANKS_H

#include <stdbool.h>
#include <stddef.h>

#include "growth.h"
#include "metrics.h"

/* An aggregate metric's rank: its process field then says which statistic it is. */
#define GMT_RANK_JOB (-2)
enum gmt_job_stat { GMT_JOB_MIN = 1, GMT_JOB_MEDIAN = 2, GMT_JOB_MAX = 3 };

/* The processes (rank, or unknown-rank process) that metrics cover, sorted. */
struct gmt_who { int32_t rank, process; };
struct gmt_whos { struct gmt_who *v; size_t n; };
int gmt_whos_of(struct gmt_whos *w, const struct gmt_metrics *m); /* 0 or -ENOMEM */
void gmt_whos_free(struct gmt_whos *w);
bool gmt_whos_equal(const struct gmt_whos *a, const struct gmt_whos *b);
/* "2 ranks (0-1)", "8 ranks (0-3, 5-7) and 1 process of unknown rank". */
const char *gmt_whos_text(const struct gmt_whos *w, char *buf, size_t len);
/* Those of a that b lacks, as gmt_whos_text says them ("" when none). */
const char *gmt_whos_minus(const struct gmt_whos *a, const struct gmt_whos *b, char *buf, size_t len);

/* Keeps in a only the processes b has too. */
void gmt_whos_intersect(struct gmt_whos *a, const struct gmt_whos *b);
/* Keeps only the metrics of processes in `keep`. */
void gmt_metrics_keep(struct gmt_metrics *m, const struct gmt_whos *keep);
/* The job's metrics: for each quantity with its rank, device and rank in the
 * communicator left out, its min, median and max over the processes that have it
 * (rank GMT_RANK_JOB). Sorted by identity. 0 or -ENOMEM. */
int gmt_metrics_across_ranks(struct gmt_metrics *out, const struct gmt_metrics *m);

/* Of the verdicts of the job's metrics (gmt_metrics_across_ranks): the min, median and
 * max of one check that agree on both sides (same verdict, same base, same new value:
 * every rank has the figure) are one row. fold[i] (vs->n of them) is 1 where verdict i is
 * such a min and stands for the three, 2 where it is such a median or max, else 0. */
void gmt_verdicts_fold(const struct gmt_verdicts *vs, unsigned char *fold);

#endif
