/* job.h: many traces as one job: each rank's figures, their spread (min, median, max), the ranks and collectives that stand out, the recorded differences that explain them, and the groups of ranks that behave alike. */
#ifndef GMT_JOB_H
#define GMT_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"

/* One collective of one rank: its identity and what its first call added. */
struct gmt_job_coll {
    char label[64];
    int32_t nranks;
    uint64_t bytes;
    int64_t first;
};

/* One trace's figures, kept after its analysis is freed. */
struct gmt_job_rank {
    char *path;
    int32_t rank, world_size;
    char *host;
    char *job_id;              /* NULL none */
    uint64_t peak, nccl, untracked; /* over its devices; nccl: the nccl category at the peaks */
    bool has_used, complete;
    /* untracked parts over its devices (docs/untracked.md): the CUDA context, the
     * local-memory reservation, other processes on its GPUs */
    uint64_t u_context, u_reserv, u_other;
    uint32_t u_other_count;    /* other processes NVML listed, over its devices */
    uint32_t u_other_pid;      /* the pid of the one using the most on the device where others
                                * use the most; 0 unknown */
    bool has_context, has_reserv, has_other;
    uint64_t fails;
    size_t n_dev;
    int32_t version[4];
    char **env; size_t n_env;  /* the NCCL_* and CUDA_* settings, sorted */
    struct gmt_job_coll *colls; size_t n_colls;
    size_t group;              /* index of its group of alike ranks */
    /* what gmt_job_finish finds of it beside the others: why its untracked memory stands
     * out (other processes on its GPU, a larger CUDA context or local-memory reservation,
     * each by gmt_job_untracked_above), in words, "" none; what its recorded context has
     * that most ranks' does not (settings, versions, world size, device count), "" none */
    char cause[512];
    char diff[1024];
    bool stands_out;           /* its peak (or NCCL bytes) is more than 10% and 1 MiB from the
                                * median, its untracked memory has a cause, it is a
                                * collective's outlier, or its recorded context differs from
                                * most ranks' (gmt_job_finish) */
};

/* A group of alike ranks: how many, and the one at its median peak, which stands for it
 * (an index into the job's r). */
struct gmt_job_group {
    size_t n, rep;
    size_t place;              /* its index in the job's order */
};

/* A spread over the ranks: min and max with the rank that has them, median. */
struct gmt_job_spread {
    bool known;                /* some rank has the figure */
    uint64_t min, median, max;
    int32_t min_rank, max_rank;
};

/* A collective across ranks: the rank farthest from the median (-1 none). */
struct gmt_job_coll_spread {
    struct gmt_job_coll c;     /* first: the median */
    int ranks;
    int32_t out_rank;
    int64_t out_first;
};

struct gmt_job {
    struct gmt_job_rank *r; size_t n, cap; /* sorted by rank by gmt_job_finish */
    struct gmt_job_spread peak, nccl, untracked;
    struct gmt_job_spread u_context, u_reserv, u_other; /* untracked parts per rank */
    struct gmt_job_coll_spread *colls; size_t n_colls;
    size_t n_hosts, n_groups, n_ranked;
    int32_t world_size;        /* the ranks' common world size, -1 unknown or mixed */
    bool world_mixed;
    bool all_there;            /* ranks 0..world_size-1 each once */
    size_t n_missing;
    /* what most ranks have (gmt_job_finish): each setting any rank has, by name, with
     * the value most ranks have (NULL: most have it unset); versions, world size and
     * device count */
    struct { char *name; const char *value; } *usual; size_t n_usual;
    int32_t usual_version[4], usual_world;
    size_t usual_dev;
    /* the groups (gmt_job_finish): each by its index, and their order, largest first
     * (ties: by their first rank) */
    struct gmt_job_group *groups;
    size_t *order;
};

void gmt_job_init(struct gmt_job *j);
/* Keeps an analysed trace's figures (category `nccl` by name). 0 or -ENOMEM. */
int gmt_job_add(struct gmt_job *j, const struct gmt_analysis *a);
/* Keeps one rank's figures as the caller made them (watch: of traces still being
 * written): src's strings are copied, its env and colls are not read; the settings among
 * env[0..n_env) ("NAME=value") are taken, as gmt_job_add takes a trace's. 0 or -ENOMEM. */
int gmt_job_add_rank(struct gmt_job *j, const struct gmt_job_rank *src, char *const *env,
                     size_t n_env);
/* Sorts the ranks and computes the spreads, outliers and groups: everything a view of
 * the job reads. 0 or -ENOMEM. */
int gmt_job_finish(struct gmt_job *j);
void gmt_job_free(struct gmt_job *j);

/* The outlier rule of the untracked parts: a rank's part x stands out when it is above
 * the job's median by more than 10 % of the median and more than 1 MiB. */
bool gmt_job_untracked_above(uint64_t x, uint64_t median);
/* The ranks of group g as "0-4, 6-7", its count (groups[g].n) in *n, the rank at its
 * median peak (groups[g].rep) in *rep. */
const char *gmt_job_group_ranks(const struct gmt_job *j, size_t g, char *buf, size_t len,
                                size_t *n, size_t *rep);

#define GMT_JOB_MAX_REPORTS 8 /* reports a summary of a job shows without --per-rank */

#endif
