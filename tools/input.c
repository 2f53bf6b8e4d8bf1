/* input.c: what the CLI reads, opened by path: files, pipes waited on for their writer, and pack members. */
#include "input.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#include "pack.h"
#include "util.h"

/* gmt_open_input's work, except that a FIFO is left non-blocking (*fifo says so), for
 * gmt_fopen_input to wait for its writer. */
static int open_input(const char *path, int streams, char *err, size_t errlen, bool *fifo)
{
    return gmt_open_file(path, streams, gmt_pack_open_member, err, errlen, fifo);
}

static int set_blocking(int fd)
{
    int fl = fcntl(fd, F_GETFL);
    return fl < 0 ? -1 : fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
}

int gmt_open_input(const char *path, int streams, char *err, size_t errlen)
{
    bool fifo;
    int fd = open_input(path, streams, err, errlen, &fifo);
    if (fd >= 0 && fifo && set_blocking(fd) < 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

/* A FIFO opened without blocking reads as empty until its writer has opened it, and a
 * writer started beside the reader (`cat r0.gmt > fifo &`) may open it a moment after.
 * So the reader waits up to PIPE_WAIT_S seconds for data. Then one byte is asked for,
 * without blocking: none, with no writer, is a pipe nobody is writing to (refused, not
 * waited on for ever); EAGAIN is a writer that has not written yet (then read blocking);
 * a byte that came meanwhile is pushed back. 0: ready; -1: no writer; else an errno. */
enum { PIPE_WAIT_S = 3 };
static int wait_for_writer(FILE *f)
{
    struct pollfd p = { .fd = fileno(f), .events = POLLIN };
    int n;
    do
        n = poll(&p, 1, PIPE_WAIT_S * 1000);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno;
    if (n == 0) {
        unsigned char c;
        ssize_t got = read(fileno(f), &c, 1);
        if (got == 0)
            return -1;
        if (got == 1 && ungetc(c, f) == EOF)
            return errno ? errno : EIO;
        if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return errno;
    }
    return set_blocking(fileno(f)) < 0 ? errno : 0;
}

FILE *gmt_fopen_input(const char *path, int streams, char *err, size_t errlen)
{
    bool fifo;
    int fd = open_input(path, streams, err, errlen, &fifo);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    int e = f ? 0 : errno;
    if (f && fifo)
        e = wait_for_writer(f);
    if (!e)
        return f;
    if (err && errlen && e < 0)
        snprintf(err, errlen, "%s: a pipe nobody opened to write to in %d s", path, PIPE_WAIT_S);
    else if (err && errlen)
        snprintf(err, errlen, "%s: %s", path, strerror(e));
    if (f)
        fclose(f);
    else
        close(fd);
    errno = e > 0 ? e : ENXIO;
    return NULL;
}
