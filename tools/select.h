/* select.h: what the selecting options (--device, --op, --step) found in the traces read, so that a selection that matches nothing anywhere is an error that lists what there is. */
#ifndef GMT_SELECT_H
#define GMT_SELECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "report.h"

#define GMT_SEEN_MAX 64 /* distinct values kept of each kind, for the message */

/* Over one or more traces: whether each selection the options make matched something,
 * and the values there are to select (each kind at most GMT_SEEN_MAX, in the order
 * first seen; `more` counts the rest). */
struct gmt_seen {
    size_t traces;             /* traces noted */
    bool dev_match, op_match, step_match;
    int devices[GMT_SEEN_MAX]; size_t n_devices;
    char *ops[GMT_SEEN_MAX]; size_t n_ops;       /* collective labels: "AllReduce", "Group(...)" */
    char *ranges[GMT_SEEN_MAX]; size_t n_ranges; /* NVTX range names */
    size_t more_devices, more_ops, more_ranges;
};

void gmt_seen_init(struct gmt_seen *s);
void gmt_seen_free(struct gmt_seen *s);
/* Notes what the analysis has and whether ro's selections match it. 0 or -ENOMEM. */
int gmt_seen_add(struct gmt_seen *s, const struct gmt_analysis *a, const struct gmt_report_opts *ro);
/* Merges another's (of other traces) into s. 0 or -ENOMEM. */
int gmt_seen_merge(struct gmt_seen *s, const struct gmt_seen *o);

/* For worker processes (jobs.h): s as bytes into b, and back from p[0..len) (merged into
 * s; *used: the bytes it took). put: 0 or -EIO; take: 0, -ENOMEM or -EINVAL (malformed). */
int gmt_seen_put(FILE *b, const struct gmt_seen *s);
int gmt_seen_take(struct gmt_seen *s, const char *p, size_t len, size_t *used);

/* GMT_EXIT_OK when each selection ro makes matched in some trace, else GMT_EXIT_ERROR after
 * saying on stderr, one line per selection, "gpumemtrace CMD: --device 7 matches no device
 * in the 2 traces read (devices there: 0, 1)". */
int gmt_seen_check(const struct gmt_seen *s, const struct gmt_report_opts *ro, const char *cmd);

#endif
