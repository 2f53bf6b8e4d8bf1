/* sites.h: a trace's allocation sites as a person reads them: the stacks whose lines print alike at the frames shown are one site, their figures summed. */
#ifndef GMT_SITES_H
#define GMT_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"

/* Which of the replay's site rows a view takes. */
enum gmt_site_view {
    GMT_SITES_ALL,             /* every site that allocated (JSON, CSV) */
    GMT_SITES_LIVE,            /* device bytes live at some time (summary's top sites) */
    GMT_SITES_LEAKS,           /* live at the end, held by no cache or communicator */
};

/* One site: the rows whose lines (and categories) are alike. */
struct gmt_site_group {
    struct gmt_site_row sum;   /* the rows' figures summed; stack, api, cat: its largest's */
    char *line;                /* as gmt_site_line prints it */
    uint32_t *stacks;          /* every stack in it, the largest first */
    size_t n_stacks;
};

struct gmt_site_groups {
    struct gmt_site_group *g;  /* by live_at_peak, then live_at_end, bytes in all, stack;
                                * a view of leaks by live_at_end first */
    size_t n;
};

/* The sites of a's report in `view`, grouped by their lines at `frames`. 0, or -ENOMEM
 * (out then empty). */
int gmt_report_site_groups(const struct gmt_analysis *a, enum gmt_site_view view, int frames,
                           struct gmt_site_groups *out);
/* PyTorch's block sites (blocks.h) alike: those with bytes allocated at the peak or
 * blocks at all, or with `leaks` those with blocks still allocated at the end; cat and
 * api 0. */
int gmt_block_site_groups(const struct gmt_analysis *a, bool leaks, int frames,
                          struct gmt_site_groups *out);
void gmt_site_groups_free(struct gmt_site_groups *s);

/* The frames a site line shows where the command has no default of its own: --frames,
 * else 3. */
int gmt_site_frames(const struct gmt_report_opts *o);

#endif
