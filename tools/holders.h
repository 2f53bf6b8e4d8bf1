/* holders.h: who holds memory still allocated at exit for reuse (a caching allocator, a communicator), told from its stack. */
#ifndef GMT_HOLDERS_H
#define GMT_HOLDERS_H

#include <stdint.h>

#include "report.h"

/* The holder of a site's memory, or NULL: nothing holds it for reuse (a leak). */
const char *gmt_site_holder(const struct gmt_analysis *a, const struct gmt_site_row *s);

#endif
