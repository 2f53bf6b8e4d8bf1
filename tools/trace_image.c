/* trace_image.c: a trace's bytes in memory for loading (mapped, or read from a pipe), and the message for a time beyond what a trace may span. */
#include "trace_image.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "idnames.h"
#include "input.h"
#include "reader.h"
#include "util.h"

/* The whole stream of a pipe or device in memory, for the same in-place reading. */
static int slurp(FILE *f, uint8_t **out, size_t *len)
{
    size_t cap = 1 << 20, n = 0;
    uint8_t *b = malloc(cap);
    if (!b)
        return -ENOMEM;
    for (;;) {
        if (n == cap) {
            uint8_t *nb = cap < SIZE_MAX / 2 ? realloc(b, cap * 2) : NULL;
            if (!nb) {
                free(b);
                return -ENOMEM;
            }
            b = nb;
            cap *= 2;
        }
        size_t got = fread(b + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) {
                free(b);
                *len = n;
                return -EIO;
            }
            break;
        }
    }
    *out = b;
    *len = n;
    return 0;
}

/* The trace's bytes in memory behind t->reader and t->image: `image` when given (taken
 * over), else the file. Returns 0, -ENOMEM, or -1 with a message in err. */
int gmt_trace_open_image(struct gmt_trace *t, const char *path, uint8_t *image,
                         size_t image_len, char *err, size_t errlen)
{
    /* a regular file is mapped by the reader; anything else is read into memory first */
    struct stat st;
    if (image) {
        t->image_buf = image;
        t->image_len = image_len;
        if (gmt_reader_open_mem(&t->reader, t->image_buf, t->image_len, path, err, errlen))
            return -1;
    } else if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        FILE *f = gmt_fopen_input(path, 1, err, errlen);
        if (!f)
            return -1;
        int x = slurp(f, &t->image_buf, &t->image_len);
        int e = errno;
        fclose(f);
        if (x == -ENOMEM)
            return -ENOMEM;
        if (x) {
            snprintf(err, errlen, "%s: offset %zu: read error: %s", path, t->image_len,
                     strerror(e));
            return -1;
        }
        if (gmt_reader_open_mem(&t->reader, t->image_buf, t->image_len, path, err, errlen))
            return -1;
    } else if (gmt_reader_open(&t->reader, path, err, errlen)) {
        return -1;
    }
    if (!(t->image = gmt_reader_image(t->reader, &t->image_len))) {
        snprintf(err, errlen, "%s: cannot map the file", path);
        return -1;
    }
    return 0;
}

/* A trace whose latest time is beyond GMT_TIME_MAX: the message names the first record
 * with such a time, at its offset in the file (the image's when the file cannot be read
 * again), into err. */
void gmt_trace_time_beyond(const struct gmt_trace *t, const char *path, char *err,
                           size_t errlen)
{
    struct gmt_reader *r;
    char e2[256];
    struct stat st;
    int o = stat(path, &st) == 0 && S_ISREG(st.st_mode)
                ? gmt_reader_open(&r, path, e2, sizeof e2)
                : gmt_reader_open_mem(&r, t->image, t->image_len, path, e2, sizeof e2);
    struct gmt_event ev;
    while (!o && gmt_reader_next(r, &ev, e2, sizeof e2) > 0)
        if (ev.time_ns > GMT_TIME_MAX) {
            snprintf(err, errlen, "%s: offset %llu: %s at %llu ns is beyond the 2^62 ns a trace "
                     "may span: the trace is corrupt", path, (unsigned long long)ev.offset,
                     gmt_rec_type_name(ev.rec->type), (unsigned long long)ev.time_ns);
            gmt_reader_close(r);
            return;
        }
    if (!o)
        gmt_reader_close(r);
    snprintf(err, errlen, "%s: a record's time is beyond the 2^62 ns a trace may span: the "
             "trace is corrupt", path);
}
