/* trace_image.h: a trace's bytes in memory for loading, and the message for a time beyond what a trace may span (trace_image.c), for the loader. */
#ifndef GMT_TRACE_IMAGE_H
#define GMT_TRACE_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/* The trace's bytes in memory behind t->reader and t->image: `image` when given (taken
 * over), else the file (mapped when regular, else read whole). Returns 0, -ENOMEM, or -1
 * with a one-line message in err. */
int gmt_trace_open_image(struct gmt_trace *t, const char *path, uint8_t *image,
                         size_t image_len, char *err, size_t errlen);
/* A trace whose latest time is beyond GMT_TIME_MAX: the message naming the first record
 * with such a time, at its offset in the file, into err. */
void gmt_trace_time_beyond(const struct gmt_trace *t, const char *path, char *err,
                           size_t errlen);

#endif
