/* render.h: the summary's renderers: each turns the same model, one struct gmt_analysis per trace, into one output format. */
#ifndef GMT_RENDER_H
#define GMT_RENDER_H

#include <stddef.h>
#include <stdio.h>

#include "report.h"

struct gmt_job;

/*
 * One output format. A renderer reads the model and the options that select its rows
 * (gmt_report_dev_selected, gmt_report_coll_selected) and computes nothing of its own:
 * a new format (an HTML page, a Chrome trace, an SQLite file, folded stacks) is one more
 * of these. begin and end frame the document around the traces (NULL: nothing to
 * write); trace writes the i-th trace written (0-based: those that could not be read
 * are not counted, so the first one written has no separator before it). begin gets
 * the overview of several traces as one job (job.h), which it writes where its format
 * has a place for it; NULL for one trace.
 *
 * What a format shows that takes computing (sites grouped and sorted, what is held at
 * the end, untracked memory's parts and what-ifs, growth per step, the report's
 * timeline) is a field of struct gmt_analysis that gmt_analyze fills once (report.c and
 * the files it calls); a job's (its groups' order, who stands out and why)
 * gmt_job_finish fills, a diff's and a watch view's their makers. A figure a format
 * lacks is added there, so that every format shows the same one. The exports of events (export.h) stream the trace through the export walk
 * (export_walk.c, export_track.c), their engine, and format what it hands them.
 */
struct gmt_renderer {
    void (*begin)(FILE *out, const struct gmt_job *j, const struct gmt_report_opts *o);
    void (*trace)(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o,
                  size_t i);
    void (*end)(FILE *out);
};

extern const struct gmt_renderer gmt_render_text;
extern const struct gmt_renderer gmt_render_json;

/*
 * The summary as CSV tables (render_csv.c; docs/summary-json.md, "CSV"), one renderer
 * per table so that each goes to a file of its own: begin writes the table's one header
 * line (and the job's tables their rows), trace a trace's rows. X(name, what a row is).
 */
#define GMT_CSV_TABLES(X)                                                                   \
    X(traces, "a trace: its process, versions, span, whether it is complete")              \
    X(devices, "a device of a trace: peak, end, device used, untracked, graph, peers")     \
    X(categories, "a category on a device: its bytes at the device's peak and at the end") \
    X(collectives, "an NCCL collective: calls, first-call and later deltas, host time")    \
    X(nccl_memory, "an NCCL communicator's device memory for one purpose")                 \
    X(phases, "an NVTX range: count, peak while open, growth, allocations")                \
    X(phase_stacks, "the ranges open on a thread: the allocations made under them")        \
    X(steps, "a trace's training steps: their count, growth, whether every step grew")     \
    X(sites, "an allocation site (the top --top by bytes live at the peak)")               \
    X(leaks, "a site still holding device memory at the end that nothing holds for reuse") \
    X(held, "a cache or communicator holding device memory at the end, for reuse")         \
    X(failures, "a failed allocation")                                                     \
    X(open_at_end, "an NCCL call the trace ends inside")                                   \
    X(pytorch_devices, "a device's PyTorch blocks: counts, allocated and reserved")       \
    X(pytorch_sites, "a PyTorch block site (the top --top by bytes allocated at the peak)") \
    X(pytorch_leaks, "a PyTorch block site with blocks still allocated at the end")        \
    X(pytorch_ooms, "an OOM PyTorch's allocator reported: the request, totals, fragments")  \
    X(job_ranks, "a trace of a job of several: its figures, group, what stands out")       \
    X(job_collectives, "a collective across the job's ranks: median, farthest rank")

enum gmt_csv_table {
#define GMT_X(name, what) GMT_CSV_##name,
    GMT_CSV_TABLES(GMT_X)
#undef GMT_X
    GMT_CSV_COUNT
};

extern const struct gmt_renderer gmt_render_csv[GMT_CSV_COUNT];
extern const char *const gmt_csv_names[GMT_CSV_COUNT];
/* The table of that name, or -1. */
int gmt_csv_find(const char *name);

#endif
