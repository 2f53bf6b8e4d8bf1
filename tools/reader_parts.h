/* reader_parts.h: the records' variable parts: the check that they lie within their record (reader.c asks it of every record with such parts). */
#ifndef GMT_READER_PARTS_H
#define GMT_READER_PARTS_H

#include <stddef.h>
#include <stdint.h>

/* The parts of a known record at `off` in file `path` that its size field alone does not
 * cover (strings, their lengths, a stack's depth): 0, or -1 with a one-line message in
 * err. `rec` holds h.size bytes, at least the fixed part. */
int gmt_reader_check_payload(const char *path, const uint8_t *rec, uint64_t off, char *err,
                             size_t errlen);

/* Formats a one-line message into err (when err has room) and returns -1: every refusal
 * of the reader's goes through it. */
int gmt_reader_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
