/* reader.h: reads a .gmt trace as untrusted input: validates, iterates, decodes thread and time. */
#ifndef GMT_READER_H
#define GMT_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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


/* ---- additions: stream input, position, PROCESS, variable parts ---- */

/* Like gmt_reader_open on a stream the caller opened (fmemopen, a pipe); `name` is used
 * in messages. The reader reads it sequentially and never closes it. */
int gmt_reader_fopen(struct gmt_reader **out, FILE *f, const char *name, char *err,
                     size_t errlen);
/* Offset just past the last whole record read: where the readable trace stops. */
uint64_t gmt_reader_offset(const struct gmt_reader *r);
/* The fixed part of the PROCESS record once read (its monotonic_ns anchors relative
 * times), NULL before. */
const struct gmt_rec_process *gmt_reader_process(const struct gmt_reader *r);

/* For a trace that is still being written: after gmt_reader_next() returned 0 (the end, or
 * a record not yet whole), the next call reads on from the end of the last whole record,
 * with every thread's clock as it was. Only for a stream reader (gmt_reader_fopen) on a
 * seekable file. 0; -EINVAL for another reader or one that failed; -errno when the stream
 * cannot seek. A reader that read END stays at the end. */
int gmt_reader_follow(struct gmt_reader *r);
/* For a stream reader standing where it stopped (after gmt_reader_fopen,
 * gmt_reader_follow, or this call with NULL): reads the stream in blocks of up to cap
 * bytes (at least GMT_REC_MAX) into buf, the caller's, and hands the records out from it
 * in place, instead of one fread per record. Until gmt_reader_follow or this call with
 * buf NULL, which puts the stream back just past the last whole record read; the reader
 * never frees buf. 0; -EINVAL for a reader of an image or a cap too small; -errno when
 * the stream cannot seek back. */
int gmt_reader_window(struct gmt_reader *r, uint8_t *buf, size_t cap);

/* Variable parts of records that gmt_reader_next() returned (already validated to fit
 * their record and be NUL-terminated). Valid as long as the record is. */
const char *gmt_process_host(const struct gmt_rec_process *p);        /* "" when none */
const char *gmt_process_cmdline(const struct gmt_rec_process *p, uint32_t *len); /* args, each NUL-terminated */
const char *gmt_env_strings(const struct gmt_rec_env *e);             /* e->count strings */
const uint8_t *gmt_module_build_id(const struct gmt_rec_module_load *m); /* build_id_len bytes */
const char *gmt_module_path(const struct gmt_rec_module_load *m);
/* The optional trailing fields, NULL when the record is too short to hold all of them. */
const struct gmt_rec_alloc_ext *gmt_alloc_ext(const struct gmt_rec_alloc *a);
const struct gmt_rec_free_ext *gmt_free_ext(const struct gmt_rec_free *f);

/* The size rules of docs/trace-format.md 4.1 that every walk over records applies before
 * it moves on: at least a header (a size of 0 would never move), a whole number of
 * 8-byte words, at most GMT_REC_MAX, and within the `room` bytes left. */
static inline bool gmt_rec_size_ok(uint32_t size, uint64_t room)
{
    /* the first three rules in one test: rotated right by 3 bits, a size off the 8-byte
     * grid is a large number, and 0 wraps to the largest one after the - 1 */
    uint32_t words = size >> 3 | size << 29;
    return words - 1 < GMT_REC_MAX / GMT_ALIGN && size <= room;
}

/* Fixed-part size of a known record type, 0 for unknown types. */
uint32_t gmt_rec_fixed_size(unsigned type);

/* ---- additions: in-memory traces ---- */

/* Like gmt_reader_open on a trace already in memory (`len` bytes at `data`, 8-byte
 * aligned); the caller keeps it alive until gmt_reader_close. Records are handed out in
 * place. gmt_reader_open maps a regular file the same way, read-only and private. */
int gmt_reader_open_mem(struct gmt_reader **out, const void *data, size_t len,
                        const char *name, char *err, size_t errlen);
/* The trace's bytes when the reader has them all in memory (a mapped file, or
 * gmt_reader_open_mem), else NULL. Valid until gmt_reader_close. */
const uint8_t *gmt_reader_image(const struct gmt_reader *r, size_t *len);
/* Up to max records at once, in ev[]: what calling gmt_reader_next() max times would
 * give, at a fraction of the cost per record. Returns how many; *rc is then 1 when more
 * may follow, else what gmt_reader_next() returned after the last (0 at the end, -1 on a
 * malformed record with its message in err). The records stay valid together while the
 * reader has the whole image (gmt_reader_image() is not NULL), or until the next call
 * with a window (gmt_reader_window), whose batches end where its bytes do; a stream
 * reader without one returns one record per call. */
size_t gmt_reader_next_batch(struct gmt_reader *r, struct gmt_event *ev, size_t max, int *rc,
                             char *err, size_t errlen);
/* What gmt_reader_skim() read past without handing out: how many records, the times of
 * the first and the last (ns; 0 when the thread's clock is not set). */
struct gmt_skim {
    uint64_t n, first, last;
};
/* For a reader that only counts the common records: like gmt_reader_next_batch() on a
 * mapped image, but the records whose types are in `mask` (bit per type; types with a dt
 * and no variable parts) are only counted in *sk, and the records' times never go below
 * min_time or back. It stops, returning fewer than max, before anything it leaves to
 * gmt_reader_next_batch(): a record that breaks that rule, is not whole, has variable
 * parts or changes the reader's state (CHUNK, PROCESS, END), or the end. The records
 * handed out are in ev, in file order; the skimmed ones lie among them, all in the
 * current CHUNK's thread, with times between those of their neighbours. */
size_t gmt_reader_skim(struct gmt_reader *r, uint32_t mask, uint64_t min_time,
                       struct gmt_event *ev, size_t max, struct gmt_skim *sk);
/* The clock of the thread of the record last returned, after that record; false when
 * no THREAD/TIME/absolute record has set it yet. */
bool gmt_reader_thread_clock(const struct gmt_reader *r, uint64_t *ns);

#endif
