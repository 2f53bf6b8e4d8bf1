/* merge.h: the traces of a job's ranks side by side: one row per rank, each collective across ranks. */
#ifndef GMT_MERGE_H
#define GMT_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"
#include "util.h"

/* One rank's trace and its totals over its devices, bytes. */
struct gmt_merge_rank {
    struct gmt_analysis a;
    int rank;                  /* PROCESS rank, else its first communicator's, else -1 */
    uint64_t peak, end, used_max, untracked;
    uint64_t init, first_calls; /* what communicator inits, and first calls, added */
    bool has_used;             /* used_max and untracked known (MEMINFO sampled) */
    char nccl_from_first[512]; /* NCCL's version and settings where they differ from the
                                * first rank's (nccl_print.h), "" same or the first */
};

/* One collective across ranks, matched as check and diff match them: op label, size,
 * bytes per call. */
struct gmt_merge_coll {
    char label[64];
    int32_t nranks;
    uint64_t bytes;
    int64_t min_first, max_first; /* what its first call added on the ranks, tracked */
    int min_rank, max_rank;       /* the ranks where it was least and most */
    int64_t min_dev, max_dev;     /* the same from device use, when has_dev */
    bool has_dev;
    uint64_t calls_min, calls_max;
    int ranks;                    /* ranks that made it */
    /* the rank that stands out: the largest absolute deviation of its first call's
     * tracked bytes from the median over the ranks (negative deviations too) */
    int64_t median_first;
    int out_rank;                 /* -1 when every rank added the same */
    int64_t out_first;            /* what it added */
    char nccl_out[512];           /* NCCL's differences from a median rank to it, "" none */
    struct { int rank; int64_t first; } *vals; size_t n_vals, cap_vals; /* per rank */
};

/* One allocation site across ranks, matched by its text (as diff matches sites): the
 * bytes it held live at each rank's peak. A rank without the site counts as 0. */
struct gmt_merge_site {
    char *line;                   /* the site as summary prints it (--frames) */
    uint64_t total;               /* summed over the ranks */
    uint64_t min, max;
    int min_rank, max_rank;
    int ranks;                    /* ranks where it held bytes at the peak */
    size_t next;                  /* scratch: index of the next rank expected */
};

struct gmt_merge {
    struct gmt_merge_rank *ranks; size_t n_ranks; /* sorted by rank, then file */
    struct gmt_merge_coll *colls; size_t n_colls, cap_colls; /* in order of first sight */
    struct gmt_merge_site *sites; size_t n_sites, cap_sites; /* by total, largest first */
};

/* Analyses the traces at paths[0..n) into m. Returns 0; -EINVAL when some trace could
 * not be read (its message in msgs; the others are in m) or a collective could not be
 * kept; -ENOMEM (m then holds nothing). */
int gmt_merge_of(struct gmt_merge *m, char *const *paths, size_t n,
                 const struct gmt_report_opts *ro, struct gmt_msgs *msgs);
/* Whether m's traces are one run of one job: no two traces of one rank (fork children
 * aside), one job id (GPUMEMTRACE_JOB_ID or the launcher's), and, where no trace names
 * a job, one command line. False with the reason in why. */
bool gmt_merge_one_run(const struct gmt_merge *m, char *why, size_t len);
void gmt_merge_free(struct gmt_merge *m);

#endif
