/* diff.h: what changed between two runs, process by process: every quantity keyed by what it is, matched, biggest change first. */
#ifndef GMT_DIFF_H
#define GMT_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"
#include "util.h"

/* One side of the comparison: the traces one argument names. */
struct gmt_diff_side {
    const char *arg;
    char **paths;
    size_t n_paths;
    struct gmt_analysis *an;   /* n_paths, those that loaded */
    bool *ok;
    int32_t *rank, *process;   /* identity; process -1: used no GPU */
};

/* One quantity in either run: key is "kind TAB what" (never an address or a time). */
struct gmt_diff_change {
    const char *key;
    bool in_base, in_new;
    int64_t base, now, delta;  /* bytes */
};

/* Two processes of the same identity, one from each side, and what changed. */
struct gmt_diff_pair {
    char who[64];              /* "rank 0", "process 2" */
    const struct gmt_analysis *base, *now;
    struct gmt_diff_change *c; size_t n; /* biggest change first */
    size_t n_changed;          /* of them, those that changed (a delta, or on one side only) */
    struct gmt_vec rb, rn;     /* the two processes' rows, which own the keys */
    char nccl_changed[512];    /* NCCL version and settings that differ, "" none
                                * (gmt_nccl_settings_diff) */
    size_t group;              /* its group of pairs alike (gmt_diff.groups) */
};

/* Pairs alike: their base ranks alike on the base side and their new ranks alike on the
 * new side, as summary groups ranks (job.h). The first pair of a group stands for it. */
struct gmt_diff_group {
    char who[560];             /* "ranks 0-1 (2 alike)", "rank 3", "process 2" */
    size_t n;                  /* pairs in it */
    size_t first;              /* the pair that stands for it */
};

/* One change of one pair, for the headline; pair SIZE_MAX: none. */
struct gmt_diff_pick {
    size_t pair, change;
};

/* A process of one side that the other lacks. */
struct gmt_diff_only {
    int side;                  /* 0 base, 1 new */
    size_t index;              /* its trace on that side */
    char who[64];
};

struct gmt_diff {
    struct gmt_diff_side base, now;
    size_t n_base, n_new;      /* processes that used a GPU on each side */
    struct gmt_vec pairs;      /* struct gmt_diff_pair, in identity order */
    struct gmt_vec only;       /* struct gmt_diff_only, in identity order */
    bool cut_short;            /* out of memory while pairing: what came before is there */
    struct gmt_vec groups;     /* struct gmt_diff_group, in the order of their first pair */
    /* the answer: of every pair, the change that grew most, the one that shrank most, and
     * the peak tracked device memory's largest change */
    struct gmt_diff_pick grew, shrank, peak;
};

/* Loads both sides and pairs their processes, a site keyed by its first `frames` frames.
 * Returns 0 (cut_short tells whether all pairs are there), -EINVAL when a side could not
 * be read, or -ENOMEM before any pair; the last two with their messages in msgs, d then
 * empty but for gmt_diff_free. */
int gmt_diff_of(struct gmt_diff *d, const char *base, const char *now,
                const struct gmt_report_opts *ro, int frames, struct gmt_msgs *msgs);
void gmt_diff_free(struct gmt_diff *d);

#endif
