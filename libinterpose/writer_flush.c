/* writer_flush.c: the writer's state and its way to the file: writes, flushes of the buffers, the worker's ticks, and the crash path. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "outfile.h"
#include "writer_flush.h"
#include "writer_api.h"

struct gmt_wr gmt_wr = { .fd = -1 };
GMT_TLS struct gmt_wr_thread gmt_wr_self;

/* ---- waits ---- */

void gmt_wr_pause(void)
{
    sched_yield();
}

bool gmt_wr_wait_more(struct wait *w)
{
    if (w->max_ns != WAIT_FOREVER) {
        uint64_t now = gmt_now_ns();
        if (!w->deadline)
            w->deadline = now + w->max_ns;
        else if (now > w->deadline)
            return false;
    }
    gmt_wr_pause();
    return true;
}

/* ---- failure: one warning, then the process carries on untraced ---- */

void gmt_wr_fail(const char *what, int err)
{
    int st = atomic_load(&gmt_hot.writer.state);
    while (st == ST_OPEN || st == ST_OPENING || st == ST_CLOSED || st == ST_FINISHING ||
           st == ST_EXEC) {
        if (atomic_compare_exchange_weak(&gmt_hot.writer.state, &st, ST_FAILED)) {
            const char *reason = strerrordesc_np(err);
            gmt_warn("%s %s: %s; tracing stops, the program continues", what,
                     gmt_wr.path[0] ? gmt_wr.path : "(no path)", reason ? reason : "unknown error");
            return;
        }
    }
}

/* Writes all of iov or fails. O_APPEND makes each writev land at the end in one piece;
 * the loop only finishes a write the kernel cut short (signal, nearly full disk). */
int gmt_wr_write_iov(struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t w = gmt_writev_nosigxfsz(gmt_wr.fd, iov, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        if (w == 0)
            return -EIO;
        size_t left = (size_t)w;
        while (n > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return 0;
}

/* ---- flushing ---- */

/* Writes [tail, head) as one CHUNK, plus `extra` (a record too big for the ring) in the
 * same write. The caller holds b->busy. False: another thread is in exec and alone writes
 * the file now; nothing was done, the bytes stay for later. */
bool gmt_wr_flush_locked(struct buf *b, const void *extra, size_t extra_len)
{
    uint64_t head = atomic_load_explicit(&b->head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&b->tail, memory_order_relaxed);
    if (head == tail && !extra_len)
        return true;
    int st = atomic_load_explicit(&gmt_hot.writer.state, memory_order_acquire);
    if (st == ST_EXEC && !gmt_wr_self.exec)
        return false;
    if (st == ST_OPEN || st == ST_FINISHING || st == ST_EXEC) {
        struct gmt_rec_chunk chunk = { { GMT_REC_CHUNK, 0, sizeof chunk },
                                       atomic_load_explicit(&b->tid, memory_order_relaxed), 0 };
        struct iovec iov[4];
        int n = 0;
        iov[n++] = (struct iovec){ &chunk, sizeof chunk };
        uint64_t from = tail % b->cap, len = head - tail;
        uint64_t first = len < b->cap - from ? len : b->cap - from;
        if (first)
            iov[n++] = (struct iovec){ b->data + from, first };
        if (len > first)
            iov[n++] = (struct iovec){ b->data, len - first };
        if (extra_len)
            iov[n++] = (struct iovec){ (void *)extra, extra_len };
        /* A cancelled thread must not die holding busy with half a chunk written. */
        int cancel;
        pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
        int rc = gmt_wr_write_iov(iov, n);
        pthread_setcancelstate(cancel, NULL);
        if (rc)
            gmt_wr_fail("cannot write trace file", -rc);
    }
    /* Whatever happened, these bytes are done: a failed file drops them. */
    atomic_store_explicit(&b->tail, head, memory_order_release);
    return true;
}

int gmt_wr_try_lock(struct buf *b)
{
    int idle = BUF_IDLE;
    if (!atomic_compare_exchange_strong(&b->busy, &idle, BUF_FLUSHING))
        return 0;
    gmt_wr_self.flushing = b;
    return 1;
}

void gmt_wr_unlock(struct buf *b)
{
    gmt_wr_self.flushing = NULL;
    atomic_store_explicit(&b->busy, BUF_IDLE, memory_order_release);
}

/* Flushes b, waiting while someone else flushes it. Returns 0 once done, -1 when the
 * buffer is sealed (the writer finished) or the wait budget ran out. */
int gmt_wr_flush_wait(struct buf *b, const void *extra, size_t extra_len, uint64_t max_ns)
{
    struct wait w = { max_ns, 0 };
    for (;;) {
        if (gmt_wr_try_lock(b)) {
            bool done = gmt_wr_flush_locked(b, extra, extra_len);
            gmt_wr_unlock(b);
            if (done)
                return 0;
        }
        if (atomic_load(&b->busy) == BUF_SEALED)
            return -1;
        if (!gmt_wr_wait_more(&w))
            return -1;
    }
}

/* ---- the slots: what other threads are in (gmt.h) ---- */

/* b's slot whole in word[]: false when it holds nothing or its owner is rewriting it (a
 * reading taken between the owner's stores of `seq`, or after it let go, is refused by
 * the second look). */
static bool slot_read(struct buf *b, uint64_t word[GMT_SLOT_WORDS], uint32_t *seq)
{
    struct gmt_writer_slot *sl = &b->slot;
    uint32_t s1 = *seq = atomic_load_explicit(&sl->seq, memory_order_acquire);
    uint64_t w0 = atomic_load_explicit(&sl->word[0], memory_order_relaxed);
    if ((s1 & 1) || !w0)
        return false;
    for (int i = 0; i < GMT_SLOT_WORDS; i++)
        word[i] = atomic_load_explicit(&sl->word[i], memory_order_relaxed);
    atomic_thread_fence(memory_order_acquire);
    return atomic_load_explicit(&sl->seq, memory_order_relaxed) == s1 &&
           atomic_load_explicit(&sl->word[0], memory_order_relaxed) == w0 && word[0] == w0;
}

/* The slot clients' entries (GMT_SLOT_CLIENT), placed by the linker; weak: a program
 * built without one has none. */
extern const struct gmt_slot_client __start_gmt_slot_clients[] __attribute__((weak, visibility("hidden")));
extern const struct gmt_slot_client __stop_gmt_slot_clients[] __attribute__((weak, visibility("hidden")));

/* Hands every other thread's slot that holds something to its client's hook, which
 * writes (on the calling thread) what is open: the flusher's, with min_age_ns a tick (a
 * call that runs long: a hang shows in the file), and a crash's, exit's or exec's
 * (min_age_ns 0), for what the process dies in. The calling thread's own slot is its
 * deferred record (gmt_wr_write_deferred). Returns how many records the hook wrote. */
int gmt_wr_note_open_calls(uint64_t min_age_ns)
{
    int n = 0;
    uint64_t now = gmt_now_ns();
    for (struct buf *b = atomic_load(&gmt_wr.bufs); b; b = b->next) {
        uint64_t word[GMT_SLOT_WORDS];
        uint32_t seq;
        if (b == gmt_ts.writer.buf || !slot_read(b, word, &seq))
            continue;
        uint32_t tid = atomic_load_explicit(&b->tid, memory_order_relaxed);
        for (const struct gmt_slot_client *c = __start_gmt_slot_clients; c < __stop_gmt_slot_clients; c++)
            n += c->note_open(word, seq, tid, b->slot.note, now, min_age_ns);
    }
    return n;
}

void gmt_writer_flush_all(void)
{
    int saved = errno;
    /* a crash or exit on a thread that holds records back: they go in first, and the
     * calls other threads are in */
    if (atomic_load(&gmt_hot.writer.state) == ST_OPEN) {
        gmt_wr_write_deferred();
        gmt_wr_note_open_calls(0);
    }
    if (atomic_load(&gmt_hot.writer.state) == ST_OPEN) {
        for (struct buf *b = atomic_load(&gmt_wr.bufs); b; b = b->next) {
            /* A crash inside our own flush of b: its state is half-written, leave it. */
            if (b == gmt_wr_self.flushing)
                continue;
            if (atomic_load_explicit(&b->head, memory_order_acquire) ==
                atomic_load_explicit(&b->tail, memory_order_acquire))
                continue;
            /* Bounded: a crash handler must not hang on a holder that will never return. */
            gmt_wr_flush_wait(b, NULL, 0, WAIT_BOUNDED_NS);
        }
    }
    errno = saved;
}

/* ---- the worker's ticks (worker.c) ---- */

int gmt_writer_phase(void)
{
    int st = atomic_load(&gmt_hot.writer.state);
    if (st == ST_FAILED || st == ST_FINISHED)
        return GMT_WRITER_DONE;
    return st == ST_OPEN ? GMT_WRITER_TAKING : GMT_WRITER_WAITING;
}

unsigned long gmt_writer_owner_flushes(void)
{
    return atomic_load_explicit(&gmt_wr.owner_flushes, memory_order_relaxed);
}

unsigned gmt_writer_tick(uint64_t now, uint64_t age_ns)
{
    uint64_t fullest = 0; /* in 1/16ths of a buffer, at this tick */
    for (struct buf *b = atomic_load(&gmt_wr.bufs); b; b = b->next) {
        uint64_t head = atomic_load_explicit(&b->head, memory_order_acquire);
        uint64_t used = head - atomic_load_explicit(&b->tail, memory_order_acquire);
        if (used == 0)
            continue;
        uint64_t sixteenths = used * 16 / b->cap;
        if (sixteenths > fullest)
            fullest = sixteenths;
        uint64_t oldest = atomic_load_explicit(&b->oldest_ns, memory_order_relaxed);
        uint64_t age = now > oldest ? now - oldest : 0;
        /* 1 ms early rather than a whole period late when the tick jitters. */
        if (age + 1000000 < age_ns && sixteenths < 2)
            continue;
        /* The owner is flushing it already: its records are on their way. */
        if (gmt_wr_try_lock(b)) {
            gmt_wr_flush_locked(b, NULL, 0);
            gmt_wr_unlock(b);
        }
    }
    /* what has been open since before the last tick: its begin goes in the file */
    if (gmt_wr_note_open_calls(age_ns)) {
        struct buf *mine = gmt_ts.writer.buf;
        if (mine && gmt_wr_try_lock(mine)) {
            gmt_wr_flush_locked(mine, NULL, 0);
            gmt_wr_unlock(mine);
        }
    }
    return (unsigned)fullest;
}
