/* holders.h: who holds memory still allocated at exit for reuse (a caching allocator, a communicator), told from its stack. */
#ifndef GMT_HOLDERS_H
#define GMT_HOLDERS_H

#include <stddef.h>
#include <stdint.h>

#include "report.h"

/* The holder of a site's memory, or NULL: nothing holds it for reuse (a leak). */
const char *gmt_site_holder(const struct gmt_analysis *a, const struct gmt_site_row *s);

/* What is still allocated at the end and held for reuse, by holder, into out (up to
 * max, in order of first appearance among the sites). Returns the number filled.
 * gmt_analyze fills gmt_analysis.held with it. */
size_t gmt_held_at_end(const struct gmt_analysis *a, struct gmt_held *out, size_t max);

#endif
