/* render.h: the summary's renderers: each turns the same model, one struct gmt_analysis per trace, into one output format. */
#ifndef GMT_RENDER_H
#define GMT_RENDER_H

#include <stddef.h>
#include <stdio.h>

#include "report.h"

struct gmt_job;

/*
 * One output format. A renderer reads the model and the options that select its rows
 * (gmt_report_dev_selected, gmt_report_coll_selected) and computes nothing of its own:
 * a new format (an HTML page, a Chrome trace, an SQLite file, folded stacks) is one more
 * of these. begin and end frame the document around the traces (NULL: nothing to
 * write); trace writes the i-th trace written (0-based: those that could not be read
 * are not counted, so the first one written has no separator before it). begin gets
 * the overview of several traces as one job (job.h), which it writes where its format
 * has a place for it; NULL for one trace.
 */
struct gmt_renderer {
    void (*begin)(FILE *out, const struct gmt_job *j, const struct gmt_report_opts *o);
    void (*trace)(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o,
                  size_t i);
    void (*end)(FILE *out);
};

extern const struct gmt_renderer gmt_render_text;
extern const struct gmt_renderer gmt_render_json;
extern const struct gmt_renderer gmt_render_csv;

#endif
