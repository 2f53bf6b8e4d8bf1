/* trace_meta.h: a loaded trace's metadata tables from their records (trace_meta.c), for the loader. */
#ifndef GMT_TRACE_META_H
#define GMT_TRACE_META_H

#include <stddef.h>

#include "trace.h"

/* Each takes one whole record, validated by the reader, into t's tables; `cap` is the
 * capacity of the table it grows. 0, -ENOMEM, or (a stack) -1 with a one-line message. */
int gmt_meta_process(struct gmt_trace *t, const struct gmt_rec *r);
int gmt_meta_env(struct gmt_trace *t, size_t *cap, const struct gmt_rec *r);
int gmt_meta_module(struct gmt_trace *t, size_t *cap, const struct gmt_event *e);
int gmt_meta_module_unload(struct gmt_trace *t, const struct gmt_rec *r);
int gmt_meta_thread(struct gmt_trace *t, size_t *cap, const struct gmt_rec *r);
int gmt_meta_pycode(struct gmt_trace *t, const struct gmt_rec *r);
int gmt_meta_stack(struct gmt_trace *t, const struct gmt_rec *r, char *err, size_t errlen,
                   uint64_t off);

#endif
