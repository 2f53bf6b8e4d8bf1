/* watch_follow.c: one trace followed as it grows: reads on from the last whole record, notices a restarted rank, and hands each record to the fold. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "input.h"
#include "reader.h"
#include "util.h"
#include "watch.h"

#define LEND_FROM (256u << 10) /* bytes to read from which a trace's queue grows in S's array */

struct gmt_watch_trace *gmt_watch_trace_new(const char *path)
{
    struct gmt_watch_trace *w = calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) {
        free(w);
        return NULL;
    }
    gmt_watch_fold_reset(w);
    return w;
}

static void close_file(struct gmt_watch_trace *w)
{
    gmt_reader_close(w->r);
    if (w->f)
        fclose(w->f);
    w->r = NULL;
    w->f = NULL;
}

void gmt_watch_trace_free(struct gmt_watch_trace *w)
{
    if (!w)
        return;
    close_file(w);
    gmt_watch_fold_free(w);
    free(w->error);
    free(w->path);
    free(w);
}

/* FNV-1a of the file's first bytes (fewer when it has fewer), read at offset 0. */
static int first_bytes_digest(int fd, uint64_t *out)
{
    uint8_t b[GMT_WATCH_DIGEST_BYTES];
    ssize_t n = pread(fd, b, sizeof b, 0);
    if (n < 0)
        return -errno;
    uint64_t h = 0xcbf29ce484222325ull;
    for (ssize_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    *out = h;
    return 0;
}

static void set_error(struct gmt_watch_trace *w, const char *msg)
{
    char *m = strdup(msg);
    if (!m)
        return;
    free(w->error);
    w->error = m;
    w->error_said = false;
}

/* Opens the file and its reader: 1 open, 0 not yet a trace (shorter than its header,
 * as a file the writer is creating is), -1 failed (w->error says why). */
static int open_file(struct gmt_watch_trace *w, const struct stat *st)
{
    if ((uint64_t)st->st_size < sizeof(struct gmt_file_header))
        return 0;
    char err[512];
    w->f = gmt_fopen_input(w->path, 0, err, sizeof err);
    if (!w->f) {
        set_error(w, err);
        return -1;
    }
    if (gmt_reader_fopen(&w->r, w->f, w->path, err, sizeof err)) {
        set_error(w, err);
        close_file(w);
        return -1;
    }
    w->bytes_read += gmt_reader_offset(w->r); /* the header */
    if (first_bytes_digest(fileno(w->f), &w->digest)) {
        snprintf(err, sizeof err, "%s: cannot read: %s", w->path, strerror(errno));
        set_error(w, err);
        close_file(w);
        return -1;
    }
    return 1;
}

/* Another file now, or this one rewritten from its start: a restarted rank. */
static bool replaced(struct gmt_watch_trace *w, const struct stat *st)
{
    if (st->st_dev != w->st_dev || st->st_ino != w->st_ino)
        return true;
    if ((uint64_t)st->st_size < gmt_reader_offset(w->r))
        return true;
    uint64_t d;
    return (uint64_t)st->st_size != w->size && first_bytes_digest(fileno(w->f), &d) == 0 &&
           d != w->digest;
}

static void start_over(struct gmt_watch_trace *w)
{
    close_file(w);
    w->size = 0;
    gmt_watch_fold_free(w);
    gmt_watch_fold_reset(w);
    free(w->error);
    w->error = NULL;
    w->restarts++;
}

/* The records appended since the last call, each folded; the queue released every
 * C->batch records up to hold_ns before the latest time read. 0, -ENOMEM. */
static int read_on(const struct gmt_watch_ctx *C, struct gmt_watch_trace *w,
                   struct gmt_watch_scratch *S)
{
    uint64_t hold = w->hold_ns > C->hold_ns ? w->hold_ns : C->hold_ns;
    struct gmt_event ev[64];
    char err[512];
    uint64_t start = gmt_reader_offset(w->r);
    size_t n = 0, next_apply = C->batch;
    int rc = 1, x = 0;
    /* a block of the file at a time, its records a batch at a time: one fread per record
     * was a third of a catch-up */
    if (S && S->win)
        gmt_reader_window(w->r, S->win, GMT_WATCH_WINDOW);
    while (rc > 0 && !x) {
        size_t got = gmt_reader_next_batch(w->r, ev, sizeof ev / sizeof *ev, &rc, err,
                                           sizeof err);
        for (size_t i = 0; i < got && !x; i++) {
            w->records++;
            if (ev[i].time_ns > w->t_last)
                w->t_last = ev[i].time_ns;
            x = gmt_watch_fold(C, w, &ev[i]);
        }
        if (!x && (n += got) >= next_apply) {
            next_apply = n + C->batch;
            if (w->t_last > hold)
                x = gmt_watch_apply(w, w->t_last - hold, S);
        }
    }
    w->bytes_read += gmt_reader_offset(w->r) - start;
    if (x || rc < 0) /* S's window is another trace's next: the stream back at the next record */
        gmt_reader_window(w->r, NULL, 0);
    if (x)
        return x;
    if (rc < 0) {
        set_error(w, err);
        return 0;
    }
    int f = gmt_reader_follow(w->r);
    if (f) {
        snprintf(err, sizeof err, "%s: cannot read on: %s", w->path, strerror(-f));
        set_error(w, err);
    }
    return 0;
}

void gmt_watch_scratch_init(struct gmt_watch_scratch *S)
{
    *S = (struct gmt_watch_scratch){.win = malloc(GMT_WATCH_WINDOW)};
}

void gmt_watch_scratch_free(struct gmt_watch_scratch *S)
{
    free(S->win);
    free(S->q);
    free(S->tmp);
    *S = (struct gmt_watch_scratch){0};
}

/* The trace's queue moved into S's array, which it grows in while the trace is read;
 * its own array kept aside. Nothing moves when S's array cannot hold the queue. */
static void queue_borrow(struct gmt_watch_trace *w, struct gmt_watch_scratch *S)
{
    if (S->cap_q < w->n_q) {
        struct gmt_watch_ev *q = realloc(S->q, w->n_q * sizeof *q);
        if (!q)
            return;
        S->q = q;
        S->cap_q = w->n_q;
    }
    if (w->n_q)
        memcpy(S->q, w->q, w->n_q * sizeof *w->q);
    S->own_q = w->q;
    S->own_cap = w->cap_q;
    w->q = S->q;
    w->cap_q = S->cap_q;
    S->lent_to = w;
}

/* The events left in the queue back in the trace's own array, made to their measure (as
 * gmt_watch_apply shrinks an array a catch-up left large); S keeps its array, as large
 * as it grew. When the own array cannot be made, the trace keeps S's. */
static void queue_return(struct gmt_watch_trace *w, struct gmt_watch_scratch *S)
{
    struct gmt_watch_ev *own = S->own_q;
    size_t cap = S->own_cap;
    S->lent_to = NULL;
    if (cap < w->n_q || (cap > 1024 && w->n_q < cap / 8)) {
        size_t want = w->n_q * 2 > 64 ? w->n_q * 2 : 64;
        struct gmt_watch_ev *q = realloc(own, want * sizeof *q);
        if (!q && cap < w->n_q) { /* the trace keeps the array it grew */
            free(own);
            S->q = NULL;
            S->cap_q = 0;
            return;
        }
        if (q) {
            own = q;
            cap = want;
        }
    }
    S->q = w->q;
    S->cap_q = w->cap_q;
    if (w->n_q)
        memcpy(own, w->q, w->n_q * sizeof *own);
    w->q = own;
    w->cap_q = cap;
}

int gmt_watch_trace_refresh(const struct gmt_watch_ctx *C, struct gmt_watch_trace *w, bool final,
                            struct gmt_watch_scratch *S)
{
    struct stat st;
    if (stat(w->path, &st) != 0) {
        w->gone = errno == ENOENT || errno == ENOTDIR;
        if (!w->gone) {
            char err[512];
            snprintf(err, sizeof err, "%s: %s", w->path, strerror(errno));
            set_error(w, err);
        }
        return 0;
    }
    w->gone = false;
    if (!S_ISREG(st.st_mode)) {
        char err[512];
        snprintf(err, sizeof err, "%s: not a regular file", w->path);
        set_error(w, err);
        return 0;
    }
    bool changed = st.st_dev != w->st_dev || st.st_ino != w->st_ino ||
                   (uint64_t)st.st_size != w->size;
    if (w->r && replaced(w, &st)) {
        start_over(w);
    } else if (!w->r && w->error && changed) { /* not a trace then: perhaps one now */
        free(w->error);
        w->error = NULL;
    }
    w->grew = (uint64_t)st.st_size != w->size;
    w->size = (uint64_t)st.st_size;
    if (!w->r) {
        w->st_dev = st.st_dev;
        w->st_ino = st.st_ino;
    }
    if (!w->r && !w->error && open_file(w, &st) <= 0)
        return 0;
    int rc = 0;
    /* a catch-up grows the queue: S's array then, not one of its own (a steady refresh
     * reads a little and queues a little: moving its queue twice would cost more) */
    bool lent = S && w->r && !w->error && w->grew &&
                w->size - gmt_reader_offset(w->r) >= LEND_FROM;
    if (lent)
        queue_borrow(w, S);
    if (w->r && !w->error && w->grew)
        rc = read_on(C, w, S);
    /* what could still come before the queued events: nothing once the file ended, or
     * stopped growing for a refresh (every thread's buffer is flushed within the
     * writer's flush interval), else what is hold_ns older than the latest time read */
    uint64_t upto = UINT64_MAX, hold = w->hold_ns > C->hold_ns ? w->hold_ns : C->hold_ns;
    if (!final && !w->complete && !w->error && w->grew)
        upto = w->t_last > hold ? w->t_last - hold : 0;
    int x = rc ? 0 : gmt_watch_apply(w, upto, S); /* nothing more after an error */
    if (lent && S->lent_to == w)
        queue_return(w, S);
    if (rc == -EOVERFLOW || x == -EOVERFLOW) {
        char err[512];
        snprintf(err, sizeof err, "%s: an allocation, a device sample or the memory live on a "
                 "device is beyond the 2^56 bytes a trace may hold: the trace is corrupt", w->path);
        set_error(w, err);
        /* it stops where it is: the events queued after that one are never applied (a
         * later refresh would, and with them frees of what was never charged) */
        w->n_q = w->q_sorted = 0;
        return 0;
    }
    return rc ? rc : x;
}
