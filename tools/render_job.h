/* render_job.h: the job overview that opens a summary of several traces: as text for a person, as the "job" object of the JSON document. */
#ifndef GMT_RENDER_JOB_H
#define GMT_RENDER_JOB_H

#include <stdio.h>

#include "job.h"

void gmt_render_job_text(FILE *o, const struct gmt_job *j, const struct gmt_report_opts *ro);
/* `"job": {...}, ` (or `"job": null, ` when j is NULL), inside the summary's document. */
void gmt_render_job_json(FILE *o, const struct gmt_job *j);

#endif
