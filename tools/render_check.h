/* render_check.h: check's verdicts rendered: the aligned table, GitHub annotations, JUnit XML. */
#ifndef GMT_RENDER_CHECK_H
#define GMT_RENDER_CHECK_H

#include <stdbool.h>
#include <stdio.h>

#include "growth.h"
#include "job.h"

#define GMT_GITHUB_MAX_ERRORS 10 /* GitHub shows at most 10 error annotations per step */

/* The failures (every verdict with `verbose`) as an aligned table, then a one-line
 * verdict; with `github`, the failures again as GitHub ::error annotations, at most
 * GMT_GITHUB_MAX_ERRORS (the last one then counts the rest). */
/* fold (NULL: none): of --aggregate, gmt_verdicts_fold's, one row for a check's min,
 * median and max that agree. */
void gmt_render_check_text(FILE *o, const struct gmt_verdicts *vs, bool verbose, bool github,
                           const unsigned char *fold);
/* --aggregate: the traces' groups of ranks that behave alike (job.h), on one line. */
void gmt_render_check_groups(FILE *o, const struct gmt_job *j);
/* Each rank's untracked memory (job.h), shown, never gated: with `verbose` its parts (a row
 * per rank, or with `aggregate` or more than GMT_CHECK_UNTRACKED_ROWS ranks each part's
 * min, median and max); always a NOTE line per rank whose part stands out, with its cause
 * (gmt_job_rank.cause), and with `github` a ::notice annotation of it. Nothing
 * when no trace sampled its device. */
#define GMT_CHECK_UNTRACKED_ROWS 16
void gmt_render_check_untracked(FILE *o, const struct gmt_job *j, bool verbose, bool aggregate, bool github);
/* The verdict and the failures as a Markdown table, appended to a GitHub step summary. */
void gmt_render_check_step_summary(FILE *o, const struct gmt_verdicts *vs);
/* The verdicts as JUnit XML, one test case each, into a new file at path: `seconds` the
 * check took, the time it ran and this host. 0 or -errno. */
int gmt_render_check_junit(const char *path, const struct gmt_verdicts *vs, double seconds);

#endif
