/* jobs.h: the one driver of every command that reads several traces: each analysed once, here or in worker processes, a failure reported and skipped. */
#ifndef GMT_JOBS_H
#define GMT_JOBS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "report.h"

/*
 * A command's work on each trace of files[0..n), analysed with options ro.
 *
 * trace() gets each analysis that could be made. With take set, trace() writes what the
 * command needs of it into `out` (a rendered part of the output, or figures), and the
 * driver may run it in worker processes on the machine's cores; take() then gets those
 * bytes here, in the order of the files, whoever made them. Without take, trace() runs
 * here, in order, with out NULL, and keeps what it needs in ctx; with keep set too, an
 * analysis for which trace() returns 0 becomes ctx's whole (trace() copied *a; the
 * caller frees it with gmt_analysis_free), for a command that compares the traces.
 *
 * A trace that cannot be analysed, or whose trace() returns -1 with a one-line message
 * in err, is skipped: marked in unread (when given) and told to skipped() (NULL: said on
 * stderr as "gpumemtrace: MESSAGE"), in the order of the files. Without take, trace()
 * may also stop the run: any other nonzero is returned at once (trace() said why).
 */
struct gmt_jobs {
    char *const *files;
    size_t n;
    const struct gmt_report_opts *ro;
    int (*trace)(void *ctx, size_t i, const struct gmt_analysis *a, FILE *out, char *err,
                 size_t errlen);
    int (*take)(void *ctx, size_t i, const char *p, size_t len); /* 0, or -ENOMEM */
    void *ctx;
    bool keep;                 /* without take: what trace() took is not freed here */
    bool progress;             /* a progress line on stderr after a second (workers only) */
    bool *unread;              /* out, optional: [n] the trace was skipped */
    void (*skipped)(void *ctx, size_t i, const char *why);
};

struct gmt_jobs_result {
    size_t done, skipped;      /* traces taken, traces reported and skipped */
    size_t workers;            /* worker processes used, 0: all here */
};

/* Runs J. 0 (see res->skipped for traces that failed); -ENOMEM; -EIO when a worker
 * died (what came back before was taken); what trace() stopped it with. */
int gmt_jobs_run(const struct gmt_jobs *J, struct gmt_jobs_result *res);

#endif
