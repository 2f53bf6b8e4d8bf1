/* job_read.h: the first pass of a summary of many traces: each trace read for its figures only, in worker processes on the machine's cores, into one job. */
#ifndef GMT_JOB_READ_H
#define GMT_JOB_READ_H

#include <stdbool.h>
#include <stddef.h>

#include "job.h"
#include "select.h"

struct gmt_job_read_result {
    bool progress;             /* in: a progress line on stderr after a second */
    bool *unread;              /* [n]: the trace could not be read ... */
    char **err;                /* [n]: ... and why (the reader's one-line message) */
    size_t idle;               /* traces of processes that used no GPU, left out */
    size_t workers;            /* worker processes used, 0: read here */
    struct gmt_seen seen;      /* what the options' selections found in the traces read */
};

/* Reads files[0..n) with options ro into j (gmt_job_add each; call gmt_job_finish
 * after). 0; -ENOMEM; -EIO when a worker died (the job then holds what came back). */
int gmt_job_read(struct gmt_job *j, char **files, size_t n, const struct gmt_report_opts *ro,
                 struct gmt_job_read_result *res);
void gmt_job_read_result_free(struct gmt_job_read_result *res, size_t n);

/* The first pass of a command over several traces, as summary and explain make it:
 * files[0..n) read with ro's options but no binary opened (and NCCL's memory modelled
 * only with nccl_model and ro's), a progress line when stderr is a terminal, each trace
 * that could not be read said on stderr (*status then GMT_EXIT_ERROR), and j finished.
 * 0; -1 when the job could not be made (said on stderr). Free j and res after, either
 * way. */
int gmt_job_open(struct gmt_job *j, char **files, size_t n, const struct gmt_report_opts *ro,
                 bool nccl_model, struct gmt_job_read_result *res, int *status);

#endif
