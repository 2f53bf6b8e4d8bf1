/* fuzz_common.h: what the libFuzzer targets share: an input as a file the CLI can open, output sinks, JSON that must parse. */
#ifndef GMT_FUZZ_COMMON_H
#define GMT_FUZZ_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "json.h"

/* The bytes as a file named in path (/proc/self/fd/N of a memfd, a regular file that
 * the reader maps as it maps a trace on disk); the fd to close after, or -1. */
static inline int fuzz_file(const uint8_t *data, size_t size, char *path, size_t len)
{
    int fd = memfd_create("gmt-fuzz", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    size_t done = 0;
    while (done < size) {
        ssize_t k = write(fd, data + done, size - done);
        if (k <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)k;
    }
    snprintf(path, len, "/proc/self/fd/%d", fd);
    return fd;
}

/* A stream for a renderer; fuzz_json_check() then parses what it holds when it must be
 * JSON (a renderer's JSON must be valid whatever the trace held). */
struct fuzz_out {
    char *buf;
    size_t len;
    FILE *f;
};

static inline FILE *fuzz_out_open(struct fuzz_out *o)
{
    o->buf = NULL;
    o->len = 0;
    o->f = open_memstream(&o->buf, &o->len);
    if (!o->f)
        abort();
    return o->f;
}

/* Closes o; aborts when `json` and what was written does not parse. */
static inline void fuzz_out_close(struct fuzz_out *o, int json)
{
    fclose(o->f);
    if (json) {
        struct gmt_json *v = NULL;
        char err[256];
        if (gmt_json_parse(o->buf, o->len, &v, err, sizeof err) != 0) {
            fprintf(stderr, "invalid JSON (%s):\n%.*s\n", err, (int)(o->len < 4000 ? o->len : 4000),
                    o->buf);
            abort();
        }
        gmt_json_free(v);
    }
    free(o->buf);
}

#endif
