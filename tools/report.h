/* report.h: one trace analysed (loaded, categorised, replayed, symbolised) and printed as text, JSON or CSV. */
#ifndef GMT_REPORT_H
#define GMT_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "replay.h"
#include "trace.h"

#define GMT_MAX_DEBUG_PATHS 16
#define GMT_MAX_CAT_RULES 32

struct gmt_report_opts {
    long top;                  /* sites and leaks shown */
    int device;                /* -1 all */
    uint64_t from_ns, to_ns;   /* relative to the trace's start; 0 open */
    const char *op;            /* only collectives of this op name, NULL all */
    const char *debug_paths[GMT_MAX_DEBUG_PATHS + 1];
    int n_debug_paths;
    const char *cat_rules[GMT_MAX_CAT_RULES];
    int n_cat_rules;
    int width;                 /* text output width */
    bool no_symbols;           /* module+offset only, no binary is opened */
};

void gmt_report_opts_init(struct gmt_report_opts *o);
int gmt_report_opts_add_debug_path(struct gmt_report_opts *o, const char *dir);
int gmt_report_opts_add_category(struct gmt_report_opts *o, const char *spec);

struct gmt_symbolizer;
struct gmt_categories;

struct gmt_analysis {
    struct gmt_trace t;
    struct gmt_report rep;
    struct gmt_symbolizer *sym;
    struct gmt_categories *cats;
    uint8_t *stack_cat;                  /* per stack id */
    const char *cat_names[GMT_MAX_CATS]; /* by category index */
    size_t n_cats;
};

/* Loads, categorises and replays one trace. Returns 0, or -1 with a one-line message. */
int gmt_analyze(struct gmt_analysis *a, const char *path, const struct gmt_report_opts *o,
                char *err, size_t errlen);
void gmt_analysis_free(struct gmt_analysis *a);

/* Frames of a stack that matter to a person, as one line "f1 < f2 < f3" (innermost
 * first, the CUDA runtime/driver and gpumemtrace left out), into buf. */
const char *gmt_stack_line(const struct gmt_analysis *a, uint32_t stack, int max_frames,
                           char *buf, size_t len);

/* The traces (*.gmt) in dir, sorted by name; *out and each path are malloc'd.
 * Returns 0 or -errno. */
int gmt_list_traces(const char *dir, char ***out, size_t *n);

/* The same without folding: every frame, for machines (JSON) and for matching. */
const char *gmt_stack_full(const struct gmt_analysis *a, uint32_t stack, int max_frames,
                           char *buf, size_t len);

/* Trace arguments with each directory replaced by the traces in it (what `run -o DIR`
 * writes), in order; *out and each path are malloc'd (gmt_free_paths). A directory
 * without traces is reported on stderr. Returns 0, -ENOENT (such a directory; the
 * rest is still listed) or -ENOMEM. */
int gmt_expand_paths(char *const *args, size_t n, char ***out, size_t *nout);
void gmt_free_paths(char **p, size_t n);

void gmt_report_text(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o);
void gmt_report_json(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o);
void gmt_report_csv(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o);

#endif
