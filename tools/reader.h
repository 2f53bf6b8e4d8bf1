/* reader.h: reads a .gmt trace as untrusted input: validates, iterates, decodes thread and time. */
#ifndef GMT_READER_H
#define GMT_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

struct gmt_reader;

/* One record as read. `rec` points into the reader's buffer and stays valid until the
 * next gmt_reader_next(). Records shorter than their type's fixed part are errors;
 * longer ones are passed through (newer minor versions append fields). */
struct gmt_event {
    const struct gmt_rec *rec;
    uint64_t offset;       /* file offset of the record, bytes */
    uint64_t index;        /* 0-based count of records before it (header excluded) */
    uint64_t time_ns;      /* absolute CLOCK_MONOTONIC ns, decoded from dt; 0 if none */
    uint32_t tid;          /* thread from the enclosing CHUNK, 0 before the first CHUNK */
};

/* Opens and validates the header. Returns 0, or -1 with a one-line message in err
 * ("FILE: offset N: what is wrong"). */
int gmt_reader_open(struct gmt_reader **out, const char *path, char *err, size_t errlen);

/* Reads the next record. Returns 1 with *ev filled, 0 at the end of the file (also when
 * the file ends inside a record: see gmt_reader_cut), -1 on a malformed record, with a
 * one-line message in err. */
int gmt_reader_next(struct gmt_reader *r, struct gmt_event *ev, char *err, size_t errlen);

/* After gmt_reader_next() returned 0: true when the file ended inside a record
 * (a crash or kill cut it); *offset is where the partial record starts. */
bool gmt_reader_cut(const struct gmt_reader *r, uint64_t *offset);
/* True when an END record was read (clean shutdown). */
bool gmt_reader_complete(const struct gmt_reader *r);
uint64_t gmt_reader_records(const struct gmt_reader *r); /* records read so far */
const char *gmt_reader_path(const struct gmt_reader *r);
void gmt_reader_close(struct gmt_reader *r);

/* Names for the X-macro ids, "?" when unknown. */
const char *gmt_rec_type_name(unsigned type);
const char *gmt_api_name(unsigned api);
const char *gmt_kind_name(unsigned kind);
const char *gmt_op_name(unsigned op);

#endif
