/* export.h: `gpumemtrace export`'s formats beyond folded: Chrome trace events, and the job's
 * tables (traces, allocations, nccl_calls, sites, device_samples, failures) as SQLite or CSV. */
#ifndef GMT_EXPORT_H
#define GMT_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"

/* A table's column types: integers (NULL where a row has none) and texts. */
enum gmt_xtype { GMT_XINT, GMT_XTEXT };

struct gmt_xcol {
    const char *name;
    enum gmt_xtype type;
};

enum gmt_xtable { GMT_XT_TRACES, GMT_XT_ALLOCATIONS, GMT_XT_NCCL_CALLS, GMT_XT_SITES,
                  GMT_XT_DEVICE_SAMPLES, GMT_XT_FAILURES, GMT_XT_BLOCKS, GMT_XT_BLOCK_SITES,
                  GMT_XT_COUNT };

struct gmt_xtable_def {
    const char *name;
    const struct gmt_xcol *cols;
    size_t n_cols;
    const char *indices;       /* SQL run after the rows are in, or NULL */
};
extern const struct gmt_xtable_def gmt_xtables[GMT_XT_COUNT];

/* One value of a row: an integer, a text (s; NULL: an SQL NULL), or null. */
struct gmt_xval {
    int null;
    int64_t i;
    const char *s;
};

/* Where rows go: SQLite (export_sqlite.c) or CSV files (export_csv.c). row() returns 0
 * or a negative errno; err says why in one line. */
struct gmt_xsink {
    int (*row)(void *ctx, enum gmt_xtable t, const struct gmt_xval *v);
    void *ctx;
};

/* Every trace's rows, one trace analysed at a time (the job is never held whole).
 * 0; GMT_EXIT_ERROR when some trace could not be read (one line each; the others'
 * rows are in); a negative errno when the sink failed (it said why) or memory ran out. */
int gmt_export_rows(char *const *files, size_t n, const struct gmt_report_opts *ro,
                    const struct gmt_xsink *sink);

int gmt_export_sqlite(char *const *files, size_t n, const struct gmt_report_opts *ro,
                      const char *out);
int gmt_export_csv(char *const *files, size_t n, const struct gmt_report_opts *ro,
                   const char *dir);

#define GMT_CHROME_POINTS_DEFAULT 10000
int gmt_export_chrome(char *const *files, size_t n, const struct gmt_report_opts *ro,
                      const char *out, long max_points);

/* The trace's events in time order, as the exporters need them: each allocation with the
 * NCCL call it belongs to (its own thread's, or for one made on a thread with no call of
 * its own, as NCCL's proxy thread does, the call most recently begun on another thread
 * of its device) and, at its free, when it was freed. Bounded memory: what is live. */
struct gmt_xlive {
    uint64_t id;               /* allocation number in the trace, from 1 */
    uint64_t time, bytes;
    uint32_t stack, tid;
    int32_t scope;             /* scope index, -1 none */
    int16_t device;
    uint16_t api;
    uint8_t kind, cat, refs;
};

struct gmt_xwalk_ops {
    /* an allocation freed (freed_at = the free's time) or live at the end (freed_at 0) */
    int (*alloc_done)(void *ctx, const struct gmt_xlive *l, uint64_t freed_at);
    /* every event, after the walk's own bookkeeping (l: the allocation it made or freed,
     * else NULL; for a free, it is gone after the call) */
    int (*event)(void *ctx, const struct gmt_timed_event *e, const struct gmt_xlive *l);
    void *ctx;
};
int gmt_export_walk(const struct gmt_analysis *a, const struct gmt_xwalk_ops *ops);

/* What the replay charges an allocation of `kind` to: "device" (tracked device memory),
 * "host" (pinned host), "virtual" (address space), "other" (mappings, peers' memory). */
const char *gmt_export_memory(unsigned kind);

/*
 * A counter track downsampled as it streams (export_track.c): the trace's span is cut
 * into n equal buckets, and of the values a bucket sees only its lowest and highest are
 * written, in time order, then the last value at the trace's end (gmt_xtrack_end). So a
 * track has at most 2n + 1 points, and no peak is lost: the highest value of all is its
 * bucket's highest. A point equal to the one before it changes nothing on a step chart
 * and is left out.
 */
struct gmt_xtrack {
    uint64_t b;                /* the bucket being filled */
    bool has, emitted;
    uint64_t min_t, max_t, min_v, max_v;
    uint64_t last_v, out_v;    /* the latest value, the latest written */
};
struct gmt_xbuckets {
    uint64_t t0, span, n;      /* the trace's first time and span (ns), the bucket count */
};
struct gmt_xtrack_out {        /* where a track's points go */
    void (*point)(void *ctx, uint64_t t, uint64_t v);
    void *ctx;
};
void gmt_xtrack_sample(struct gmt_xtrack *x, const struct gmt_xbuckets *b, uint64_t t, uint64_t v,
                       const struct gmt_xtrack_out *o);
void gmt_xtrack_point(struct gmt_xtrack *x, uint64_t t, uint64_t v, const struct gmt_xtrack_out *o);
void gmt_xtrack_flush(struct gmt_xtrack *x, const struct gmt_xtrack_out *o);
void gmt_xtrack_end(struct gmt_xtrack *x, uint64_t t_last, const struct gmt_xtrack_out *o);

/* The device list of an analysis, as the replay numbers them. */
int gmt_export_dslot(const struct gmt_analysis *a, int device);

#endif
