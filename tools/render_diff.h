/* render_diff.h: what changed between two runs rendered: as text for a person, as JSON (gpumemtrace.diff/1). */
#ifndef GMT_RENDER_DIFF_H
#define GMT_RENDER_DIFF_H

#include <stdbool.h>
#include <stdio.h>

#include "diff.h"

/* The answer first (the largest change of a peak, the largest growth and shrink, with the
 * ranks they are in), then each pair's changes: once per group of pairs alike, every pair
 * with every_rank. top: changes shown per pair (0 all); all: the unchanged ones too. */
void gmt_render_diff_text(FILE *o, const struct gmt_diff *d, long top, bool all, bool every_rank);
void gmt_render_diff_json(FILE *o, const struct gmt_diff *d);

#endif
