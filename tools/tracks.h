/* tracks.h: device memory over a trace's time, as the Chrome export and the HTML report draw it: downsampled counter tracks per device, and the bytes each stack holds (at the device's peak: the icicle). */
#ifndef GMT_TRACKS_H
#define GMT_TRACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export.h"
#include "report.h"

/* A device's tracks: its tracked bytes, its device use as sampled, each category's bytes. */
enum { GMT_TR_TRACKED, GMT_TR_USED, GMT_TR_CAT0 };
#define GMT_TR_PER_DEV (GMT_TR_CAT0 + GMT_MAX_CATS)

/* Where a track's points go: track k of device slot ds, at time t (trace ns), value v. */
typedef void gmt_tracks_point_fn(void *ctx, int ds, int k, uint64_t t, uint64_t v);

struct gmt_tracks {
    const struct gmt_analysis *a;
    struct gmt_xbuckets bk;
    struct gmt_xtrack tr[GMT_MAX_DEVS][GMT_TR_PER_DEV];
    uint64_t tracked[GMT_MAX_DEVS], by_cat[GMT_MAX_DEVS][GMT_MAX_CATS];
    gmt_tracks_point_fn *point;
    void *ctx;
    /* with by_stack: per device, per stack id, device bytes live now, and at the device's
     * peak (the first moment the tracked bytes reach it, as the replay finds it) */
    bool by_stack;
    uint64_t *live[GMT_MAX_DEVS], *at_peak[GMT_MAX_DEVS];
    size_t n_stacks;
    bool oom;
};

/* Tracks of analysis a with at most max_points points each (>= 3), their points to
 * point(ctx, ...) as they are decided. 0, or -ENOMEM. */
int gmt_tracks_init(struct gmt_tracks *T, const struct gmt_analysis *a, long max_points,
                    bool by_stack, gmt_tracks_point_fn *point, void *ctx);
/* The export walk's events (export.h, struct gmt_xwalk_ops): an allocation or a device
 * sample, and an allocation's end. 0, or -ENOMEM. */
int gmt_tracks_event(struct gmt_tracks *T, const struct gmt_timed_event *e, const struct gmt_xlive *l);
int gmt_tracks_done(struct gmt_tracks *T, const struct gmt_xlive *l, uint64_t freed_at);
/* Every track's last points, at the trace's end. */
void gmt_tracks_end(struct gmt_tracks *T);
void gmt_tracks_free(struct gmt_tracks *T);

/* The stacks holding device memory at device slot ds's peak, most bytes first (then by
 * stack id): *out malloc'd, *n of them. 0, or -ENOMEM. */
struct gmt_flame_site {
    uint32_t stack;
    uint64_t bytes;
};
int gmt_tracks_flame(const struct gmt_tracks *T, size_t ds, struct gmt_flame_site **out, size_t *n);

#endif
