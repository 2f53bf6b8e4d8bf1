/* render_explain.h: the renderers of `explain` and of its short form in summary: each reads a trace's NCCL model (gmt_analysis.nccl) and its what-ifs, and computes nothing. */
#ifndef GMT_RENDER_EXPLAIN_H
#define GMT_RENDER_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "explain.h"
#include "job.h"
#include "report.h"

/* `explain`'s text opens with the answer: of one trace, its title and
 * gmt_render_explain_answer_text with who NULL; of a job, gmt_render_explain_job_title
 * (what: the job's operands as given) and an answer per group of ranks alike (who: "ranks
 * 0-1 (2 alike)", n: the ranks it stands for; or per rank with --every-rank). The detail
 * follows: of a job, each group's heading (rep_rank: the rank whose explanation stands
 * for the group) and its trace's gmt_render_explain_text (named: the trace's path first).
 * x NULL: no what-if. */
void gmt_render_explain_answer_text(FILE *out, const struct gmt_analysis *a,
                                    const struct gmt_explain *x, const char *who, size_t n);
void gmt_render_explain_job_title(FILE *out, const char *what, size_t n_ranks, size_t n_groups,
                                  bool every_rank);
void gmt_render_explain_group_heading(FILE *out, const char *who, size_t n, int32_t rep_rank);
void gmt_render_explain_text(FILE *out, const struct gmt_analysis *a, const struct gmt_explain *x,
                             bool named);
/* One trace as one object of the JSON's "traces" (first: no separator before it), between
 * the document's begin and end; the end adds the job's "groups" of ranks alike (j NULL:
 * one trace, no "groups"). */
void gmt_render_explain_json_begin(FILE *out);
void gmt_render_explain_json_end(FILE *out, const struct gmt_job *j);
void gmt_render_explain_json(FILE *out, const struct gmt_analysis *a, const struct gmt_explain *x,
                             bool first);

/* explain's short form inside summary: a few lines per trace with NCCL memory, nothing
 * without; JSON: an object (null without NCCL memory). */
void gmt_render_explain_brief_text(FILE *out, const struct gmt_analysis *a);
void gmt_render_explain_brief_json(FILE *out, const struct gmt_analysis *a);

#endif
