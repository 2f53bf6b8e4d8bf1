/* report_html.h: `gpumemtrace report`: a job's traces as one self-contained HTML page. */
#ifndef GMT_REPORT_HTML_H
#define GMT_REPORT_HTML_H

#include <stdbool.h>
#include <stddef.h>

#include "report.h"

#define GMT_HTML_POINTS_DEFAULT 2000  /* points per counter track */
#define GMT_HTML_FAILS_MAX 1000       /* failed allocations listed per trace */

/* The page of the readable traces into `out`; ranks alike (job.c's groups) drawn once,
 * or every rank with every_rank. GMT_EXIT_OK, or GMT_EXIT_ERROR (each trace that could
 * not be read, or the output that could not be written, said in one line; nothing is
 * written when no trace could be read). */
int gmt_report_html(char *const *files, size_t n, const struct gmt_report_opts *ro,
                    const char *out, long max_points, bool every_rank);

/* The page around the data (tools/report_page.html, built into the CLI by mk/report.mk):
 * its text before and after the line that holds the data. */
extern const char gmt_report_page[];

#endif
