/* render_check.h: check's verdicts rendered: the aligned table, GitHub annotations, JUnit XML. */
#ifndef GMT_RENDER_CHECK_H
#define GMT_RENDER_CHECK_H

#include <stdbool.h>
#include <stdio.h>

#include "growth.h"

/* The table of verdicts and the tally; with `github`, each failure again as a GitHub
 * workflow ::error annotation. */
void gmt_render_check_text(FILE *o, const struct gmt_verdicts *vs, bool github);
/* The verdicts as JUnit XML, one test case each, into a new file at path. 0 or -errno. */
int gmt_render_check_junit(const char *path, const struct gmt_verdicts *vs);

#endif
