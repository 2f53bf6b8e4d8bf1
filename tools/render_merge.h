/* render_merge.h: the ranks side by side rendered: as text for a person, as JSON (gpumemtrace.merge/1). */
#ifndef GMT_RENDER_MERGE_H
#define GMT_RENDER_MERGE_H

#include <stdio.h>

#include "merge.h"

/* top: allocation sites across ranks shown */
void gmt_render_merge_text(FILE *o, const struct gmt_merge *m, long top);
void gmt_render_merge_json(FILE *o, const struct gmt_merge *m, long top);

#endif
