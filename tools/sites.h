/* sites.h: a trace's allocation sites as a person reads them: the stacks whose lines print alike at the frames shown are one site, their figures summed. */
#ifndef GMT_SITES_H
#define GMT_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay.h"

struct gmt_analysis;
struct gmt_report_opts;

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
    const char *holder;        /* in gmt_sites' all and leaks: who holds what it has live at
                                * the end for reuse (holders.h), NULL nobody */
};

struct gmt_site_groups {
    struct gmt_site_group *g;  /* by live_at_peak, then live_at_end, bytes in all, stack;
                                * a view of leaks by live_at_end first */
    size_t n;
    int rc;                    /* in gmt_sites: -ENOMEM, they could not be made (then empty) */
};

/* A trace's sites as the renderers show them (gmt_analysis.sites), grouped once by
 * gmt_analyze when the options ask for them (gmt_report_opts.sites). */
struct gmt_sites {
    int frames, text_frames;   /* gmt_site_frames, gmt_site_text_frames */
    struct gmt_site_groups all, leaks; /* GMT_SITES_ALL and GMT_SITES_LEAKS at frames */
    struct gmt_site_groups live;       /* GMT_SITES_LIVE at text_frames: the text's top sites */
    struct gmt_site_groups text_leaks; /* GMT_SITES_LEAKS at text_frames, made only where
                                        * they differ from frames (gmt_sites_text_leaks) */
    struct gmt_site_groups blocks, block_leaks; /* PyTorch's block sites at frames */
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
/* The frames the summary's text groups and shows sites at: --frames, else 5 at a --width
 * of 140 or more, else 3. */
int gmt_site_text_frames(const struct gmt_report_opts *o);

/* Groups a's sites into s (each set's rc says whether it could be made). */
void gmt_sites_fill(const struct gmt_analysis *a, struct gmt_sites *s);
void gmt_sites_free(struct gmt_sites *s);
/* The text's leaks: leaks, or text_leaks where the text shows other frames. */
static inline const struct gmt_site_groups *gmt_sites_text_leaks(const struct gmt_sites *s)
{
    return s->text_frames == s->frames ? &s->leaks : &s->text_leaks;
}

#endif
