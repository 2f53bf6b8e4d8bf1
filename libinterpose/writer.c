/* writer.c: per-thread record buffers, the emit paths that append to them, and the exit that seals them; writer_flush.c writes them as CHUNKs into the trace file, writer_file.c opens it. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "writer_flush.h"
#include "writer_api.h"

static uint32_t my_tid(void)
{
    if (!gmt_wr_self.tid)
        gmt_wr_self.tid = (uint32_t)syscall(SYS_gettid);
    return gmt_wr_self.tid;
}

/* ---- per-thread buffers ---- */

static void thread_exit(void *arg);

static void make_key(void)
{
    int st = atomic_load(&gmt_wr.key_state);
    if (st >= 2)
        return;
    int zero = 0;
    if (atomic_compare_exchange_strong(&gmt_wr.key_state, &zero, 1)) {
        atomic_store(&gmt_wr.key_state, pthread_key_create(&gmt_wr.key, thread_exit) ? 3 : 2);
        return;
    }
    while (atomic_load(&gmt_wr.key_state) == 1)
        gmt_wr_pause();
}

static struct buf *new_buf(void)
{
    uint64_t cap = (uint64_t)gmt_opt.flush_bytes & ~(uint64_t)(GMT_ALIGN - 1);
    if (cap < 4096)
        cap = 4096;
    /* A buffer left by an exited thread is reused as it is. */
    for (struct buf *b = atomic_load(&gmt_wr.bufs); b; b = b->next) {
        int free_ = 0;
        if (b->cap == cap && atomic_load(&b->in_use) == 0 &&
            atomic_compare_exchange_strong(&b->in_use, &free_, 1))
            return b;
    }
    long page = sysconf(_SC_PAGESIZE);
    size_t bytes = (sizeof(struct buf) + cap + (size_t)page - 1) & ~((size_t)page - 1);
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct buf *b = m;
    b->cap = cap;
    b->map_bytes = bytes;
    atomic_init(&b->in_use, 1);
    struct buf *top = atomic_load(&gmt_wr.bufs);
    do
        b->next = top;
    while (!atomic_compare_exchange_weak(&gmt_wr.bufs, &top, b));
    return b;
}

/* A record of at most 128 bytes (every event record), in 8-byte words: inline, where a
 * memcpy of a size unknown at compile time is a call into libc's dispatch. */
static inline __attribute__((always_inline)) void copy_small(unsigned char *d, const void *src,
                                                            uint32_t size)
{
    const unsigned char *s = src;
    uint32_t i = 0;
    for (; i + 16 <= size; i += 16) {
        uint64_t x, y;
        __builtin_memcpy(&x, s + i, 8);
        __builtin_memcpy(&y, s + i + 8, 8);
        __builtin_memcpy(d + i, &x, 8);
        __builtin_memcpy(d + i + 8, &y, 8);
    }
    if (i < size) {
        uint64_t x;
        __builtin_memcpy(&x, s + i, 8);
        __builtin_memcpy(d + i, &x, 8);
    }
}

/* Copies one record in; the caller has made room. */
static inline __attribute__((always_inline)) void put(struct buf *b, const void *rec, uint32_t size,
                                                     uint64_t now)
{
    uint64_t head = atomic_load_explicit(&b->head, memory_order_relaxed);
    if (head == atomic_load_explicit(&b->tail, memory_order_acquire))
        atomic_store_explicit(&b->oldest_ns, now, memory_order_relaxed);
    uint64_t at = b->at;
    uint64_t room = b->cap - at;
    if (GMT_LIKELY(size < room && size <= 128)) {
        copy_small(b->data + at, rec, size);
        b->at = at + size;
    } else {
        uint64_t first = size < room ? size : room;
        memcpy(b->data + at, rec, first);
        if (first < size)
            memcpy(b->data, (const char *)rec + first, size - first);
        b->at = (at + size) % b->cap;
    }
    atomic_store_explicit(&b->head, head + size, memory_order_release);
}

/* append() when the record does not fit: flushes (syscalls) first. */
static __attribute__((noinline)) bool append_slow(struct buf *b, const void *rec, uint32_t size, uint64_t now)
{
    atomic_fetch_add_explicit(&gmt_wr.owner_flushes, 1, memory_order_relaxed);
    for (;;) {
        uint64_t used = atomic_load_explicit(&b->head, memory_order_relaxed) -
                        atomic_load_explicit(&b->tail, memory_order_acquire);
        if (used + size <= b->cap) {
            put(b, rec, size, now);
            return true;
        }
        if (size > b->cap)
            return gmt_wr_flush_wait(b, rec, size, WAIT_FOREVER) == 0;
        if (gmt_wr_flush_wait(b, NULL, 0, WAIT_FOREVER) < 0)
            return false;
        /* another thread's exec: gmt_wr_flush_wait waits for it to end (or to replace us) */
        int st = atomic_load(&gmt_hot.writer.state);
        if (st != ST_OPEN && st != ST_EXEC)
            return false;
    }
}

/* Appends a record, flushing first when it does not fit. False: dropped. errno is kept:
 * only the flush can change it, so only that path saves it. */
static inline __attribute__((always_inline)) bool append(struct buf *b, const void *rec, uint32_t size, uint64_t now)
{
    uint64_t used = atomic_load_explicit(&b->head, memory_order_relaxed) -
                    atomic_load_explicit(&b->tail, memory_order_acquire);
    if (GMT_LIKELY(used + size <= b->cap)) {
        put(b, rec, size, now);
        return true;
    }
    int saved = errno;
    bool ok = append_slow(b, rec, size, now);
    errno = saved;
    return ok;
}

/* Gives the calling thread its buffer and writes its THREAD record; false: none. */
static bool attach_thread(uint64_t now)
{
    struct buf *b = new_buf();
    if (!b)
        return false;
    gmt_ts.writer.buf = b;
    make_key();
    if (atomic_load(&gmt_wr.key_state) == 2)
        pthread_setspecific(gmt_wr.key, b);
    atomic_store_explicit(&b->tid, my_tid(), memory_order_relaxed);
    /* THREAD starts the thread's records afresh for readers: nothing the client held back
     * may refer back past it */
    gmt_deferred_lost();
    struct gmt_rec_thread th = { { GMT_REC_THREAD, 0, sizeof th }, now, my_tid(), 0, { 0 } };
    char name[GMT_THREAD_NAME_LEN + 1] = { 0 };
    if (prctl(PR_GET_NAME, name, 0, 0, 0) == 0)
        memcpy(th.name, name, GMT_THREAD_NAME_LEN);
    th.name[GMT_THREAD_NAME_LEN - 1] = 0;
    gmt_ts.writer.clock = now;
    return append(b, &th, sizeof th, now);
}

static void thread_exit(void *arg)
{
    (void)arg;
    int saved = errno;
    struct buf *b = gmt_ts.writer.buf;
    if (b) {
        gmt_wr_write_deferred();
        gmt_ts.writer.buf = NULL;
        gmt_wr_flush_wait(b, NULL, 0, WAIT_FOREVER);
        /* Sealed (writer finished) or failed: the leftovers are dropped with the buffer. */
        atomic_store_explicit(&b->tail, atomic_load(&b->head), memory_order_release);
        atomic_store_explicit(&b->in_use, 0, memory_order_release);
    }
    errno = saved;
}

/* ---- emitting records ---- */

static bool abs_time_type(unsigned type)
{
    return type == GMT_REC_THREAD || type == GMT_REC_TIME || type == GMT_REC_MODULE_LOAD ||
           type == GMT_REC_MODULE_UNLOAD || type == GMT_REC_END;
}

/* A record of this thread was lost: so is what the client holds back (readers could not
 * place it), counted with it. */
static void dropped(void)
{
    atomic_fetch_add_explicit(&gmt_wr.dropped, 1 + (uint64_t)gmt_deferred_lost(),
                              memory_order_relaxed);
}

/* The part of gmt_emit after the file is known open; gmt_ts.writer.in_emit is held.
 * at: the record's time, 0 for now. */
static void emit_locked(struct gmt_rec *h, size_t dt_offset, uint64_t at)
{
    uint64_t now = at ? at : gmt_now_ns();
    if (GMT_UNLIKELY(!gmt_ts.writer.buf)) {
        int saved = errno; /* attach_thread makes syscalls */
        bool ok = attach_thread(now);
        errno = saved;
        if (!ok) {
            dropped();
            return;
        }
    }
    if (dt_offset) {
        uint64_t gap = now > gmt_ts.writer.clock ? now - gmt_ts.writer.clock : 0;
        if (gap > UINT32_MAX) {
            struct gmt_rec_time t = { { GMT_REC_TIME, 0, sizeof t }, now };
            if (!append(gmt_ts.writer.buf, &t, sizeof t, now)) {
                dropped();
                return;
            }
            gmt_ts.writer.clock = now;
            gap = 0;
        }
        uint32_t dt = (uint32_t)gap;
        memcpy((char *)h + dt_offset, &dt, sizeof dt);
        gmt_ts.writer.clock += gap;
    } else if (abs_time_type(h->type) && h->size >= 16) {
        memcpy(&gmt_ts.writer.clock, (char *)h + 8, sizeof gmt_ts.writer.clock);
    }
    if (!append(gmt_ts.writer.buf, h, h->size, now))
        dropped();
}

/* Preamble records (the module map at open) go straight to the file. */
static void emit_direct(struct gmt_rec *h)
{
    struct iovec iov = { h, h->size };
    int rc = gmt_wr_write_iov(&iov, 1);
    if (rc)
        gmt_wr_fail("cannot write trace file", -rc);
}

/* Everything gmt_emit does, for the records the fast path below leaves to it; at: the
 * record's time (gmt_emit_at), 0 for now. */
static __attribute__((noinline, cold)) void emit_slow_at(struct gmt_rec *h, size_t dt_offset,
                                                         uint64_t at)
{
    if (gmt_ts.writer.in_emit) {
        /* A signal handler interrupted this thread inside gmt_emit: the buffer is
         * mid-append, so this record cannot go in. */
        dropped();
        return;
    }
    /* What the client holds back goes first: records stay in order. */
    gmt_wr_write_deferred();
    /* errno is saved only around what can change it (gmt_wr_ensure_open, emit_direct, and
     * attach_thread and flushes inside emit_locked): the common path makes no call
     * that sets it. */
    if (GMT_UNLIKELY(atomic_load_explicit(&gmt_hot.writer.state, memory_order_acquire) != ST_OPEN)) {
        int saved = errno;
        bool ok = gmt_wr_ensure_open();
        errno = saved;
        if (!ok)
            return;
    }
    if (h->size < sizeof *h || h->size % GMT_ALIGN || h->size > GMT_REC_MAX ||
        (dt_offset && dt_offset + 4 > h->size)) {
        dropped();
        return;
    }
    gmt_ts.writer.in_emit = 1;
    atomic_signal_fence(memory_order_seq_cst);
    if (GMT_UNLIKELY(gmt_ts.writer.opening)) {
        int saved = errno;
        emit_direct(h);
        errno = saved;
    } else {
        emit_locked(h, dt_offset, at);
    }
    atomic_signal_fence(memory_order_seq_cst);
    gmt_ts.writer.in_emit = 0;
}

static void emit_slow(struct gmt_rec *h, size_t dt_offset)
{
    emit_slow_at(h, dt_offset, 0);
}

void gmt_emit_at(void *rec, size_t dt_offset, uint64_t at)
{
    emit_slow_at(rec, dt_offset, at);
}

/* in_emit | opening | (deferred & GMT_WRITER_DEFERRED), the three bytes side by side, in
 * one load */
static inline __attribute__((always_inline)) uint32_t emit_flags(void)
{
    _Static_assert(offsetof(struct gmt_writer_thread, opening) ==
                           offsetof(struct gmt_writer_thread, in_emit) + 1 &&
                       offsetof(struct gmt_writer_thread, deferred) ==
                           offsetof(struct gmt_writer_thread, in_emit) + 2 &&
                       sizeof(struct gmt_writer_thread) >=
                           offsetof(struct gmt_writer_thread, in_emit) + 4,
                   "the three flags and a byte after them in one word");
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint32_t w;
    __builtin_memcpy(&w, &gmt_ts.writer.in_emit, sizeof w);
    return w & (0xffffu | (uint32_t)GMT_WRITER_DEFERRED << 16);
#else
    return gmt_ts.writer.in_emit | gmt_ts.writer.opening |
           (gmt_ts.writer.deferred & GMT_WRITER_DEFERRED);
#endif
}

/* The fast path of every emit: `size` bytes of records (at most 128) from a thread that
 * has its buffer, with the file open and room before the ring's end. timed (a constant
 * at each call): the first record's dt at dt_offset is filled from the clock, which must
 * fit it; else the records keep their dt fields (0: the thread's previous time) and the
 * clock is not read. False: nothing was written, the caller takes the slow way.
 * For a span (span: a constant) its duration too: from the later of `begin` and the
 * thread's previous time, so that the begin it stands for is never before that record
 * (and the duration never more than dt); at least 1 ns (0 says "not timed") unless dt is
 * 0; and 0 when begin is 0 (its begin was not timed). */
static inline __attribute__((always_inline)) bool emit_fast(const void *rec, uint32_t size,
                                                           size_t dt_offset, bool timed,
                                                           bool span, uint64_t begin)
{
    /* The clock first, while little else is live: a signal handler's record after it
     * takes a later time, and ours then gets dt 0 (below). */
    uint64_t now = timed ? gmt_now_ns() : 0;
    struct buf *b = gmt_ts.writer.buf;
    if (GMT_UNLIKELY(!b || emit_flags() ||
                     atomic_load_explicit(&gmt_hot.writer.state, memory_order_acquire) != ST_OPEN ||
                     size - 8u > 120u || size % GMT_ALIGN ||
                     (timed && (!dt_offset || dt_offset + 4 > size))))
        return false;
    /* Marked before the buffer is looked at: a signal handler that emits from here on
     * drops its record instead of appending under our feet. */
    gmt_ts.writer.in_emit = 1;
    atomic_signal_fence(memory_order_seq_cst);
    uint64_t head = atomic_load_explicit(&b->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&b->tail, memory_order_acquire);
    uint64_t clock = gmt_ts.writer.clock;
    if (!timed)
        now = clock;
    uint64_t from = begin > clock ? begin : clock;
    /* a span is copied whole (GMT_SPAN_COPY bytes, a few moves), its record only `size` */
    uint32_t copy = span ? GMT_SPAN_COPY : size;
    if (GMT_UNLIKELY(head - tail + copy > b->cap || copy >= b->cap - b->at ||
                     (timed && now - clock > UINT32_MAX && now > clock))) {
        atomic_signal_fence(memory_order_seq_cst);
        gmt_ts.writer.in_emit = 0;
        return false;
    }
    unsigned char *dst = b->data + b->at;
    if (span)
        __builtin_memcpy(dst, rec, GMT_SPAN_COPY);
    else if (__builtin_constant_p(size))
        __builtin_memcpy(dst, rec, size); /* gmt_emit_rec's: a few moves */
    else
        copy_small(dst, rec, size);
    if (timed) {
        /* dt goes straight into the ring's copy: the copy's loads then don't wait for the
         * clock (the TSC read has tens of cycles of latency) through a store into *rec. */
        uint32_t dt = now > clock ? (uint32_t)(now - clock) : 0;
        memcpy(dst + dt_offset, &dt, sizeof dt);
        gmt_ts.writer.clock = clock + dt;
        if (span) {
            uint32_t duration = 0;
            if (begin) {
                duration = now > from ? (uint32_t)(now - from) : 0;
                duration += duration == 0 && dt > 0;
            }
            memcpy(dst + GMT_SPAN_DURATION, &duration, sizeof duration);
        }
    }
    if (head == tail)
        atomic_store_explicit(&b->oldest_ns, now, memory_order_relaxed);
    b->at += size;
    atomic_store_explicit(&b->head, head + size, memory_order_release);
    atomic_signal_fence(memory_order_seq_cst);
    gmt_ts.writer.in_emit = 0;
    return true;
}

/* Records as one piece, the dt at dt_offset from the clock: the fast path of gmt_emit
 * (one copy of it: a training loop's calls run through few lines of code). False when
 * that path can't take them. */
static __attribute__((noinline, hot)) bool emit_timed(void *recs, uint32_t size, size_t dt_offset)
{
    return emit_fast(recs, size, dt_offset, true, false, 0);
}

/*
 * The common case in a few dozen instructions: an event record (it has a dt) of at most
 * 128 bytes, from a thread that has its buffer, with the file open, room in the ring
 * before its end, and a gap since the thread's last record that fits dt. Anything else
 * (the first record of a thread, a full buffer, a TIME record due, the preamble, a
 * signal handler inside gmt_emit, a record of odd size) takes emit_slow, which does
 * all of it.
 */
__attribute__((hot)) void gmt_emit(void *rec, size_t dt_offset)
{
    struct gmt_rec *h = rec;
    if (GMT_UNLIKELY(!emit_timed(h, h->size, dt_offset)))
        emit_slow(h, dt_offset);
}

/*
 * Records that take the thread's previous time (their dt fields hold 0 already), appended
 * as one piece without reading the clock: the fast path of gmt_emit less the clock. When
 * that path can't take them, each goes the way of gmt_emit, timed at dt_offset.
 */
void gmt_emit_untimed(void *recs, uint32_t size, size_t dt_offset)
{
    if (GMT_LIKELY(emit_fast(recs, size, 0, false, false, 0)))
        return;
    for (uint32_t at = 0; at + sizeof(struct gmt_rec) <= size;) {
        struct gmt_rec *h = (struct gmt_rec *)(void *)((char *)recs + at);
        uint32_t n = h->size;
        if (n < sizeof *h)
            break;
        gmt_emit(h, dt_offset);
        at += n;
    }
}


/* gmt_emit_rec's functions: the fast path with the record's size and dt offset known
 * here (no size checks, a copy of fixed length), else emit_slow. */
#define GMT_X(name, dt_field)                                                                \
    __attribute__((hot)) void gmt_emit_rec_##name(struct gmt_rec_##name *r)                  \
    {                                                                                        \
        size_t off = offsetof(struct gmt_rec_##name, dt_field);                              \
        if (GMT_UNLIKELY(!emit_fast(r, sizeof *r, off, true, false, 0)))                     \
            emit_slow(&r->h, off);                                                           \
    }
GMT_EMIT_FIXED(GMT_X)
#undef GMT_X

__attribute__((hot)) bool gmt_emit_try_group_repeat(struct gmt_rec_group_repeat *r)
{
    return emit_fast(r, sizeof *r, 0, false, false, 0);
}

__attribute__((hot)) bool gmt_emit_span(void *rec, uint32_t size, uint64_t begin)
{
    return emit_fast(rec, size, GMT_SPAN_DT, true, true, begin);
}

/* ---- exit ---- */

/* Takes b for good. False when it was sealed already or this thread is inside its flush. */
static bool seal(struct buf *b)
{
    if (b == gmt_wr_self.flushing)
        return false;
    for (;;) {
        int idle = BUF_IDLE;
        if (atomic_compare_exchange_strong(&b->busy, &idle, BUF_SEALED))
            return true;
        if (idle == BUF_SEALED)
            return false;
        gmt_wr_pause();
    }
}

void gmt_writer_finish(void)
{
    int saved = errno;
    gmt_wr_write_deferred(); /* while the file still takes records */
    if (atomic_load(&gmt_hot.writer.state) == ST_OPEN)
        gmt_wr_note_open_calls(0); /* the calls other threads are in at exit */
    for (int i = 0; i < 100000 && atomic_load(&gmt_hot.writer.state) == ST_OPENING && !gmt_ts.writer.opening; i++)
        gmt_wr_pause();
    /* Another thread's exec either replaces the image or fails and hands the file back. */
    while (atomic_load(&gmt_hot.writer.state) == ST_EXEC && !gmt_wr_self.exec)
        gmt_wr_pause();
    int st = ST_OPEN;
    if (!atomic_compare_exchange_strong(&gmt_hot.writer.state, &st, ST_FINISHING)) {
        /* Never opened, failed or finished: later events are dropped silently. */
        if (st != ST_OPENING && st != ST_FINISHING)
            atomic_store(&gmt_hot.writer.state, ST_FINISHED);
        errno = saved;
        return;
    }
    /* Every buffer is flushed once more and sealed, the caller's last so that END is
     * the file's last record. */
    struct buf *mine = gmt_ts.writer.buf;
    if (!mine) {
        /* The exiting thread never traced: it gets a buffer for END alone, before the
         * free ones are sealed. */
        int nested = gmt_ts.writer.in_emit;
        gmt_ts.writer.in_emit = 1;
        if (attach_thread(gmt_now_ns()))
            mine = gmt_ts.writer.buf;
        gmt_ts.writer.in_emit = nested;
    }
    for (struct buf *b = atomic_load(&gmt_wr.bufs); b; b = b->next)
        if (b != mine && seal(b))
            gmt_wr_flush_locked(b, NULL, 0);
    if (mine && seal(mine)) {
        struct gmt_rec_end end = { { GMT_REC_END, 0, sizeof end }, gmt_now_ns(),
                                   atomic_load(&gmt_wr.dropped) };
        gmt_wr_flush_locked(mine, &end, sizeof end);
    }
    atomic_store(&gmt_hot.writer.state, ST_FINISHED);
    /* Every buffer is sealed, so no other thread can be writing to the fd. */
    if (gmt_wr.fd >= 0)
        close(gmt_wr.fd);
    gmt_wr.fd = -1;
    errno = saved;
}
