/* report.h: the summary's model: one trace analysed (loaded, categorised, replayed, symbolised), and its options. */
#ifndef GMT_REPORT_H
#define GMT_REPORT_H

#include <stdbool.h>
#include <stdint.h>

#include "nccl_model.h"
#include "blocks.h"
#include "phases.h"
#include "replay.h"
#include "sites.h"
#include "trace.h"

#define GMT_MAX_DEBUG_PATHS 16
#define GMT_MAX_CAT_RULES 32
#define GMT_MAX_INTERNAL_RULES 32

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
    int frames;                /* frames shown per stack from its site; 0: each place's default */
    const char *internal[GMT_MAX_INTERNAL_RULES]; /* --internal globs (stacks.c) */
    int n_internal;
    bool no_symbols;           /* module+offset only, no binary is opened */
    const char *step;          /* --step: the NVTX range that marks a step (phases.h), NULL default */
    bool nccl_model;           /* fill gmt_analysis.nccl: on unless a command needs none of it */
    bool sites;                /* fill gmt_analysis.sites: on unless a command shows no site */
    long timeline;             /* fill gmt_analysis.timeline with at most this many points a
                                * track (the report's page); 0: none */
};

void gmt_report_opts_init(struct gmt_report_opts *o);
int gmt_report_opts_add_debug_path(struct gmt_report_opts *o, const char *dir);
int gmt_report_opts_add_category(struct gmt_report_opts *o, const char *spec);
int gmt_report_opts_add_internal(struct gmt_report_opts *o, const char *glob);

struct gmt_symbolizer;
struct gmt_categories;
struct gmt_untracked;
struct gmt_untracked_call;
struct gmt_timeline;
struct gmt_nccl_own;
struct gmt_nccl_why;

/* Holders there can be (holders.c: the rules' distinct names). */
#define GMT_MAX_HOLDERS 8

/* What one holder (a cache, a communicator) keeps at the end, for reuse. */
struct gmt_held {
    const char *holder;
    uint64_t bytes, count;
};

struct gmt_analysis {
    struct gmt_trace t;
    struct gmt_report rep;
    struct gmt_symbolizer *sym;
    struct gmt_categories *cats;
    uint8_t *stack_cat;                  /* per stack id */
    const char *cat_names[GMT_MAX_CATS]; /* by category index */
    size_t n_cats;
    const struct gmt_report_opts *opts;  /* as given to gmt_analyze: outlives the analysis */
    struct gmt_phases phases;            /* device memory by NVTX range (phases.c) */
    /* NCCL's memory by communicator and purpose (nccl_model.h), when the options asked for
     * it; nccl_rc -ENOMEM: it could not be made (the rest of the analysis stands) */
    struct gmt_nccl_model nccl;
    int nccl_rc;
    /* per communicator of nccl: NCCL's own count beside the trace's (nccl_own.c), and
     * what explain's "why that size" sums (explain.c) */
    struct gmt_nccl_own *nccl_own;
    struct gmt_nccl_why *nccl_why;
    struct gmt_blocks blocks;            /* PyTorch's caching allocator (blocks.c) */
    /* what is still allocated at the end and held for reuse, by holder, in order of first
     * appearance among the sites (holders.c) */
    struct gmt_held held[GMT_MAX_HOLDERS];
    size_t n_held;
    /* the pinned host memory's peaks of the devices the options select that have nothing of
     * their own (gmt_dev_shown false), summed */
    uint64_t host_only_peak;
    /* untracked memory (untracked.c): the parts of each device of rep.dev, by its index;
     * each NCCL call row's first-call jump beyond tracked, by the index in rep.colls;
     * whether the process loaded its modules eagerly (CUDA_MODULE_LOADING=EAGER) */
    struct gmt_untracked *untracked;
    struct gmt_untracked_call *untracked_calls;
    bool eager_loading;
    struct gmt_sites sites;              /* grouped as a person reads them (sites.c), when the
                                          * options asked for them */
    /* device memory over time, the icicles and the lanes of NCCL calls and NVTX ranges
     * (timeline.h), when the options asked for them; timeline_rc: why it could not be
     * made (the rest of the analysis stands) */
    struct gmt_timeline *timeline;
    int timeline_rc;
};

/* Loads, categorises and replays one trace, and models its NCCL memory. Returns 0, or -1
 * with a one-line message. */
int gmt_analyze(struct gmt_analysis *a, const char *path, const struct gmt_report_opts *o,
                char *err, size_t errlen);
void gmt_analysis_free(struct gmt_analysis *a);

/* The rows the options select: a device (--device), a collective row (--op). */
bool gmt_report_dev_selected(const struct gmt_report_opts *o, int device);
bool gmt_report_coll_selected(const struct gmt_report_opts *o, const struct gmt_coll_row *c);

/* The NCCL settings a summary shows, with what NCCL takes when one is unset. */
struct gmt_nccl_setting {
    const char *name, *unset;
};
#define GMT_N_NCCL_SETTINGS 18
extern const struct gmt_nccl_setting gmt_nccl_settings[GMT_N_NCCL_SETTINGS];

#endif
