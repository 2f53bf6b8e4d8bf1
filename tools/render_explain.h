/* render_explain.h: the renderers of `explain` and of its short form in summary: each reads a trace's NCCL model (gmt_analysis.nccl) and its what-ifs, and computes nothing. */
#ifndef GMT_RENDER_EXPLAIN_H
#define GMT_RENDER_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "explain.h"
#include "report.h"

/* One trace of `explain`, as text (i_trace: how many came before it) and as one object of
 * its JSON's "traces" (first: no separator before it), between the JSON document's
 * begin and end; x NULL: no what-if. */
void gmt_render_explain_text(FILE *out, const struct gmt_analysis *a, const struct gmt_explain *x,
                             size_t i_trace);
void gmt_render_explain_json_begin(FILE *out);
void gmt_render_explain_json_end(FILE *out);
void gmt_render_explain_json(FILE *out, const struct gmt_analysis *a, const struct gmt_explain *x,
                             bool first);

/* explain's short form inside summary: a few lines per trace with NCCL memory, nothing
 * without; JSON: an object (null without NCCL memory). */
void gmt_render_explain_brief_text(FILE *out, const struct gmt_analysis *a);
void gmt_render_explain_brief_json(FILE *out, const struct gmt_analysis *a);

#endif
