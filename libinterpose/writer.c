/* writer.c: per-thread record buffers, flushed as CHUNKs into one append-only trace file per process. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "gmt.h"

GMT_TLS struct gmt_thread_state gmt_ts __attribute__((aligned(64)));


/* FINISHING: exit is sealing the buffers; events are dropped but flushes still write.
 * EXEC: a thread is in exec (gmt_writer_exec_begin): it holds every buffer and alone
 * writes; other threads' events wait for the call to fail (or vanish with the image). */
enum state { ST_CLOSED, ST_OPENING, ST_OPEN, ST_FINISHING, ST_FAILED, ST_FINISHED, ST_EXEC };

/* busy: who may write this buffer's records to the file. */
enum { BUF_IDLE, BUF_FLUSHING, BUF_SEALED };

/*
 * One thread's records: a single-producer ring. Only the owner advances `head` (after
 * copying a record in, release store); only the holder of `busy` advances `tail` (after
 * the bytes reached the file). Positions count bytes ever appended, so head - tail is
 * the unflushed amount and neither wraps in practice.
 */
struct buf {
    struct gmt_writer_slot slot;  /* the owner's slot (gmt.h): first, so that
                                   * gmt_writer_slot finds it at the buffer's address */
    struct buf *next;             /* registry: push-only, never unlinked */
    _Atomic int in_use;           /* owned by a live thread */
    _Atomic int busy;             /* BUF_*: taken by CAS before writing to the file */
    _Atomic uint32_t tid;         /* owner's kernel thread id, for CHUNK */
    _Atomic uint64_t head;        /* bytes appended */
    uint64_t at;                  /* head % cap: the owner's write offset (no division per
                                   * record); the owner stores it just before head, and a
                                   * fork child sets it from head again */
    _Atomic uint64_t tail;        /* bytes flushed */
    _Atomic uint64_t oldest_ns;   /* time of the oldest unflushed record (an upper bound on its age) */
    uint64_t cap;                 /* bytes of data[], a multiple of GMT_ALIGN */
    size_t map_bytes;
    unsigned char data[] __attribute__((aligned(8)));
};

_Static_assert(offsetof(struct buf, slot) == 0, "gmt_writer_slot: the slot heads the buffer");

/* gmt_hot.writer.state (gmt.h's hot line, ST_CLOSED at start): gmt.h reads it inline
 * (gmt_writer_ready), GMT_WRITER_OPEN being ST_OPEN. */
_Static_assert(ST_OPEN == GMT_WRITER_OPEN && ST_CLOSED == 0, "gmt.h's states");
static int g_fd = -1;
static int g_forked;                    /* this process is a fork child of a traced one */
static pid_t g_pid;                     /* the process that opened g_fd (a vfork child is not it) */
static _Atomic(struct buf *) g_bufs;    /* registry of every buffer ever made */
static _Atomic uint64_t g_dropped;
/* Times a thread found its buffer full and flushed it itself: the flusher then wakes at
 * its shortest period (worker.c). */
static _Atomic unsigned long g_owner_flushes;
static char g_path[PATH_MAX];

static _Atomic int g_key_state;         /* 0 none, 1 being made, 2 made, 3 failed */
static pthread_key_t g_key;

static GMT_TLS uint32_t t_tid;
static GMT_TLS struct buf *t_flushing;  /* the buffer whose busy flag this thread holds */
static GMT_TLS int t_exec;              /* this thread is between exec_begin and exec_end */

static uint32_t my_tid(void)
{
    if (!t_tid)
        t_tid = (uint32_t)syscall(SYS_gettid);
    return t_tid;
}

static void pause_briefly(void)
{
    sched_yield();
}

/* A bounded wait for another thread (a crash handler or exec must not hang on a holder
 * that never returns). Bounded by time, not by a count of yields: on a busy machine the
 * holder of a flush (one write of a chunk) may be preempted for a long while. */
#define WAIT_FOREVER 0
#define WAIT_BOUNDED_NS 1000000000ull

struct wait {
    uint64_t max_ns;   /* WAIT_FOREVER or a bound */
    uint64_t deadline; /* set at the first pause */
};

static bool wait_more(struct wait *w)
{
    if (w->max_ns != WAIT_FOREVER) {
        uint64_t now = gmt_now_ns();
        if (!w->deadline)
            w->deadline = now + w->max_ns;
        else if (now > w->deadline)
            return false;
    }
    pause_briefly();
    return true;
}

/* ---- failure: one warning, then the process carries on untraced ---- */

static void fail(const char *what, int err)
{
    int st = atomic_load(&gmt_hot.writer.state);
    while (st == ST_OPEN || st == ST_OPENING || st == ST_CLOSED || st == ST_FINISHING ||
           st == ST_EXEC) {
        if (atomic_compare_exchange_weak(&gmt_hot.writer.state, &st, ST_FAILED)) {
            const char *reason = strerrordesc_np(err);
            gmt_warn("%s %s: %s; tracing stops, the program continues", what,
                     g_path[0] ? g_path : "(no path)", reason ? reason : "unknown error");
            return;
        }
    }
}

/* Writes all of iov or fails. O_APPEND makes each writev land at the end in one piece;
 * the loop only finishes a write the kernel cut short (signal, nearly full disk). */
static int write_iov(struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t w = gmt_outfile_writev(g_fd, iov, n);
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
static bool flush_locked(struct buf *b, const void *extra, size_t extra_len)
{
    uint64_t head = atomic_load_explicit(&b->head, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&b->tail, memory_order_relaxed);
    if (head == tail && !extra_len)
        return true;
    int st = atomic_load_explicit(&gmt_hot.writer.state, memory_order_acquire);
    if (st == ST_EXEC && !t_exec)
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
        int rc = write_iov(iov, n);
        pthread_setcancelstate(cancel, NULL);
        if (rc)
            fail("cannot write trace file", -rc);
    }
    /* Whatever happened, these bytes are done: a failed file drops them. */
    atomic_store_explicit(&b->tail, head, memory_order_release);
    return true;
}

static int try_lock(struct buf *b)
{
    int idle = BUF_IDLE;
    if (!atomic_compare_exchange_strong(&b->busy, &idle, BUF_FLUSHING))
        return 0;
    t_flushing = b;
    return 1;
}

static void unlock(struct buf *b)
{
    t_flushing = NULL;
    atomic_store_explicit(&b->busy, BUF_IDLE, memory_order_release);
}

/* Flushes b, waiting while someone else flushes it. Returns 0 once done, -1 when the
 * buffer is sealed (the writer finished) or the wait budget ran out. */
static int flush_wait(struct buf *b, const void *extra, size_t extra_len, uint64_t max_ns)
{
    struct wait w = { max_ns, 0 };
    for (;;) {
        if (try_lock(b)) {
            bool done = flush_locked(b, extra, extra_len);
            unlock(b);
            if (done)
                return 0;
        }
        if (atomic_load(&b->busy) == BUF_SEALED)
            return -1;
        if (!wait_more(&w))
            return -1;
    }
}

/* Deferred records (gmt.h): what the thread's client holds back goes in before anything
 * that follows it. Not from inside gmt_emit (a signal handler's call: the buffer is
 * mid-append) nor while the preamble is written (its records belong to no thread). */
static void write_deferred(void)
{
    if (GMT_UNLIKELY(gmt_ts.writer.deferred & GMT_WRITER_DEFERRED) && !gmt_ts.writer.in_emit &&
        !gmt_ts.writer.opening)
        gmt_deferred_write();
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

/* Hands every other thread's slot that holds something to its client's hook, which
 * writes (on the calling thread) what is open: the flusher's, with min_age_ns a tick (a
 * call that runs long: a hang shows in the file), and a crash's, exit's or exec's
 * (min_age_ns 0), for what the process dies in. The calling thread's own slot is its
 * deferred record (write_deferred). Returns how many records the hook wrote. */
static int note_open_calls(uint64_t min_age_ns)
{
    int n = 0;
    uint64_t now = gmt_now_ns();
    for (struct buf *b = atomic_load(&g_bufs); b; b = b->next) {
        uint64_t word[GMT_SLOT_WORDS];
        uint32_t seq;
        if (b == gmt_ts.writer.buf || !slot_read(b, word, &seq))
            continue;
        n += gmt_slot_note_open(word, seq, atomic_load_explicit(&b->tid, memory_order_relaxed),
                                b->slot.note, now, min_age_ns);
    }
    return n;
}

void gmt_writer_flush_all(void)
{
    int saved = errno;
    /* a crash or exit on a thread that holds records back: they go in first, and the
     * calls other threads are in */
    if (atomic_load(&gmt_hot.writer.state) == ST_OPEN) {
        write_deferred();
        note_open_calls(0);
    }
    if (atomic_load(&gmt_hot.writer.state) == ST_OPEN) {
        for (struct buf *b = atomic_load(&g_bufs); b; b = b->next) {
            /* A crash inside our own flush of b: its state is half-written, leave it. */
            if (b == t_flushing)
                continue;
            if (atomic_load_explicit(&b->head, memory_order_acquire) ==
                atomic_load_explicit(&b->tail, memory_order_acquire))
                continue;
            /* Bounded: a crash handler must not hang on a holder that will never return. */
            flush_wait(b, NULL, 0, WAIT_BOUNDED_NS);
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
    return atomic_load_explicit(&g_owner_flushes, memory_order_relaxed);
}

unsigned gmt_writer_tick(uint64_t now, uint64_t age_ns)
{
    uint64_t fullest = 0; /* in 1/16ths of a buffer, at this tick */
    for (struct buf *b = atomic_load(&g_bufs); b; b = b->next) {
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
        if (try_lock(b)) {
            flush_locked(b, NULL, 0);
            unlock(b);
        }
    }
    /* what has been open since before the last tick: its begin goes in the file */
    if (note_open_calls(age_ns)) {
        struct buf *mine = gmt_ts.writer.buf;
        if (mine && try_lock(mine)) {
            flush_locked(mine, NULL, 0);
            unlock(mine);
        }
    }
    return (unsigned)fullest;
}

/* ---- what runs when the file opens (gmt_writer_on_open) ---- */

#define ON_OPEN_MAX 4
static void (*g_on_open[2][ON_OPEN_MAX])(void); /* [0] preamble, [1] after */

void gmt_writer_on_open(void (*fn)(void), bool preamble)
{
    void (**list)(void) = g_on_open[preamble ? 0 : 1];
    for (int i = 0; i < ON_OPEN_MAX; i++) {
        if (list[i] == fn)
            return;
        if (!list[i]) {
            list[i] = fn;
            return;
        }
    }
}

static void run_on_open(bool preamble)
{
    void (**list)(void) = g_on_open[preamble ? 0 : 1];
    for (int i = 0; i < ON_OPEN_MAX && list[i]; i++)
        list[i]();
}

/* ---- per-thread buffers ---- */

static void thread_exit(void *arg);

static void make_key(void)
{
    int st = atomic_load(&g_key_state);
    if (st >= 2)
        return;
    int zero = 0;
    if (atomic_compare_exchange_strong(&g_key_state, &zero, 1)) {
        atomic_store(&g_key_state, pthread_key_create(&g_key, thread_exit) ? 3 : 2);
        return;
    }
    while (atomic_load(&g_key_state) == 1)
        pause_briefly();
}

static struct buf *new_buf(void)
{
    uint64_t cap = (uint64_t)gmt_opt.flush_bytes & ~(uint64_t)(GMT_ALIGN - 1);
    if (cap < 4096)
        cap = 4096;
    /* A buffer left by an exited thread is reused as it is. */
    for (struct buf *b = atomic_load(&g_bufs); b; b = b->next) {
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
    struct buf *top = atomic_load(&g_bufs);
    do
        b->next = top;
    while (!atomic_compare_exchange_weak(&g_bufs, &top, b));
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
    atomic_fetch_add_explicit(&g_owner_flushes, 1, memory_order_relaxed);
    for (;;) {
        uint64_t used = atomic_load_explicit(&b->head, memory_order_relaxed) -
                        atomic_load_explicit(&b->tail, memory_order_acquire);
        if (used + size <= b->cap) {
            put(b, rec, size, now);
            return true;
        }
        if (size > b->cap)
            return flush_wait(b, rec, size, WAIT_FOREVER) == 0;
        if (flush_wait(b, NULL, 0, WAIT_FOREVER) < 0)
            return false;
        /* another thread's exec: flush_wait waits for it to end (or to replace us) */
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

static bool attach_thread(uint64_t now)
{
    struct buf *b = new_buf();
    if (!b)
        return false;
    gmt_ts.writer.buf = b;
    make_key();
    if (atomic_load(&g_key_state) == 2)
        pthread_setspecific(g_key, b);
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
        write_deferred();
        gmt_ts.writer.buf = NULL;
        flush_wait(b, NULL, 0, WAIT_FOREVER);
        /* Sealed (writer finished) or failed: the leftovers are dropped with the buffer. */
        atomic_store_explicit(&b->tail, atomic_load(&b->head), memory_order_release);
        atomic_store_explicit(&b->in_use, 0, memory_order_release);
    }
    errno = saved;
}

/* ---- the file ---- */

/* Header, PROCESS and ENV (outfile.c builds them), in one write at the start of the file. */
static int write_preamble(const char *host, int rank)
{
    unsigned char *m = mmap(NULL, GMT_PREAMBLE_SCRATCH, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -errno;
    struct iovec iov = { m, gmt_outfile_preamble(m, host, rank, g_forked) };
    int rc = write_iov(&iov, 1);
    munmap(m, GMT_PREAMBLE_SCRATCH);
    return rc;
}

static void open_file(void)
{
    char host[256];
    gmt_outfile_host(host, sizeof host);
    int rank = gmt_outfile_rank();
    const char *what;
    int fd = gmt_outfile_create(g_path, sizeof g_path, host, rank, &what);
    if (fd < 0) {
        fail(what, -fd);
        return;
    }
    g_fd = fd;
    int rc = write_preamble(host, rank);
    if (rc) {
        fail("cannot write trace file", -rc);
        return;
    }
    /* Records written now (the module map) are the file's preamble: they belong to no
     * thread. */
    gmt_ts.writer.opening = 1;
    run_on_open(true);
    gmt_ts.writer.opening = 0;
    g_pid = getpid();
    run_on_open(false);
    int opening = ST_OPENING;
    atomic_compare_exchange_strong(&gmt_hot.writer.state, &opening, ST_OPEN);
}

/* Opens the file once; other threads wait for the one that opens it. */
static bool ensure_open(void)
{
    for (;;) {
        int st = atomic_load_explicit(&gmt_hot.writer.state, memory_order_acquire);
        if (st == ST_OPEN)
            return true;
        if (st != ST_CLOSED && st != ST_OPENING && st != ST_EXEC)
            return false;
        if (st == ST_OPENING || st == ST_EXEC) {
            if (st == ST_OPENING && gmt_ts.writer.opening)
                return true;
            /* a signal handler of the thread in exec: its record can't wait for itself */
            if (st == ST_EXEC && t_exec)
                return false;
            pause_briefly();
            continue;
        }
        gmt_init_once();
        if (gmt_opt.off)
            return false;
        if (atomic_compare_exchange_strong(&gmt_hot.writer.state, &st, ST_OPENING))
            open_file();
    }
}

bool gmt_writer_ready_slow(void)
{
    if (GMT_LIKELY(atomic_load_explicit(&gmt_hot.writer.state, memory_order_acquire) == ST_OPEN))
        return true;
    int saved = errno;
    bool ok = ensure_open();
    errno = saved;
    return ok;
}

static bool abs_time_type(unsigned type)
{
    return type == GMT_REC_THREAD || type == GMT_REC_TIME || type == GMT_REC_MODULE_LOAD ||
           type == GMT_REC_MODULE_UNLOAD || type == GMT_REC_END;
}

/* A record of this thread was lost: so is what the client holds back (readers could not
 * place it), counted with it. */
static void dropped(void)
{
    atomic_fetch_add_explicit(&g_dropped, 1 + (uint64_t)gmt_deferred_lost(),
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
    int rc = write_iov(&iov, 1);
    if (rc)
        fail("cannot write trace file", -rc);
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
    write_deferred();
    /* errno is saved only around what can change it (ensure_open, emit_direct, and
     * attach_thread and flushes inside emit_locked): the common path makes no call
     * that sets it. */
    if (GMT_UNLIKELY(atomic_load_explicit(&gmt_hot.writer.state, memory_order_acquire) != ST_OPEN)) {
        int saved = errno;
        bool ok = ensure_open();
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

/* Takes b for good. False when it was sealed already or this thread is inside its flush. */
static bool seal(struct buf *b)
{
    if (b == t_flushing)
        return false;
    for (;;) {
        int idle = BUF_IDLE;
        if (atomic_compare_exchange_strong(&b->busy, &idle, BUF_SEALED))
            return true;
        if (idle == BUF_SEALED)
            return false;
        pause_briefly();
    }
}

void gmt_writer_finish(void)
{
    int saved = errno;
    write_deferred(); /* while the file still takes records */
    if (atomic_load(&gmt_hot.writer.state) == ST_OPEN)
        note_open_calls(0); /* the calls other threads are in at exit */
    for (int i = 0; i < 100000 && atomic_load(&gmt_hot.writer.state) == ST_OPENING && !gmt_ts.writer.opening; i++)
        pause_briefly();
    /* Another thread's exec either replaces the image or fails and hands the file back. */
    while (atomic_load(&gmt_hot.writer.state) == ST_EXEC && !t_exec)
        pause_briefly();
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
    for (struct buf *b = atomic_load(&g_bufs); b; b = b->next)
        if (b != mine && seal(b))
            flush_locked(b, NULL, 0);
    if (mine && seal(mine)) {
        struct gmt_rec_end end = { { GMT_REC_END, 0, sizeof end }, gmt_now_ns(),
                                   atomic_load(&g_dropped) };
        flush_locked(mine, &end, sizeof end);
    }
    atomic_store(&gmt_hot.writer.state, ST_FINISHED);
    /* Every buffer is sealed, so no other thread can be writing to the fd. */
    if (g_fd >= 0)
        close(g_fd);
    g_fd = -1;
    errno = saved;
}

/* ---- exec: the old image's records and END, taken back when exec fails ---- */

/* What gmt_writer_exec_begin holds for exec_end: the buffers it took (g_bufs from
 * `first` on: any made later were made after it) and the file's size before END. */
static struct buf *g_exec_first;
static off_t g_exec_end_at;

static bool take(struct buf *b)
{
    struct wait w = { WAIT_BOUNDED_NS, 0 };
    for (;;) {
        int idle = BUF_IDLE;
        if (atomic_compare_exchange_strong(&b->busy, &idle, BUF_FLUSHING))
            return true;
        if (idle == BUF_SEALED || !wait_more(&w))
            return false;
    }
}

static void give_back(struct buf *from, struct buf *to)
{
    for (struct buf *b = from; b != to; b = b->next)
        atomic_store_explicit(&b->busy, BUF_IDLE, memory_order_release);
}

int gmt_writer_exec_begin(void)
{
    int saved = errno;
    /* Another pid: a vfork child, whose memory and buffers are the parent's (it must not
     * wait below either: an exec of the parent leaves it the old memory for good). */
    if (getpid() != g_pid) {
        errno = saved;
        return 0;
    }
    /* Another thread's exec: it replaces the image (and this thread with it) or fails
     * and hands the file back. A handler of the thread in exec goes straight through. */
    while (atomic_load(&gmt_hot.writer.state) == ST_EXEC && !t_exec)
        pause_briefly();
    /* Not open (off, failed, finished, a fork child that traced nothing): nothing to
     * write. */
    if (atomic_load(&gmt_hot.writer.state) != ST_OPEN) {
        errno = saved;
        return 0;
    }
    /* A signal handler inside this thread's own flush: that chunk is half-written and
     * END can't follow it; the other buffers still go out. */
    if (t_flushing) {
        gmt_writer_flush_all();
        errno = saved;
        return 0;
    }
    write_deferred();
    note_open_calls(0); /* the calls other threads are in: they vanish with the image */
    int st = ST_OPEN;
    if (!atomic_compare_exchange_strong(&gmt_hot.writer.state, &st, ST_EXEC)) {
        errno = saved;
        return 0;
    }
    t_exec = 1;
    /* Every buffer is taken, so no thread writes after END: a flush under way finishes
     * first; one that starts now finds ST_EXEC and leaves its bytes where they are. */
    struct buf *first = atomic_load(&g_bufs), *b;
    for (b = first; b; b = b->next)
        if (!take(b))
            break;
    if (b) {
        /* A holder that does not let go (bounded, as in a crash handler): flush what
         * can be flushed, without END. */
        give_back(first, b);
        int ex = ST_EXEC;
        atomic_compare_exchange_strong(&gmt_hot.writer.state, &ex, ST_OPEN);
        t_exec = 0;
        gmt_writer_flush_all();
        errno = saved;
        return 0;
    }
    for (b = first; b; b = b->next) {
        t_flushing = b;
        flush_locked(b, NULL, 0);
        t_flushing = NULL;
    }
    /* END on its own, after every chunk (it belongs to the last chunk's thread and means
     * the same in any); when exec fails, the file is cut back to where END began. */
    g_exec_first = first;
    g_exec_end_at = lseek(g_fd, 0, SEEK_END);
    if (g_exec_end_at >= 0 && atomic_load(&gmt_hot.writer.state) == ST_EXEC) {
        struct gmt_rec_end end = { { GMT_REC_END, 0, sizeof end }, gmt_now_ns(),
                                   atomic_load(&g_dropped) };
        struct iovec iov = { &end, sizeof end };
        int rc = write_iov(&iov, 1);
        if (rc)
            fail("cannot write trace file", -rc);
    }
    errno = saved;
    return 1;
}

void gmt_writer_exec_end(int token)
{
    if (!token)
        return;
    int saved = errno;
    if (g_exec_end_at >= 0)
        while (ftruncate(g_fd, g_exec_end_at) && errno == EINTR) {
        }
    give_back(g_exec_first, NULL);
    int ex = ST_EXEC;
    atomic_compare_exchange_strong(&gmt_hot.writer.state, &ex, ST_OPEN);
    t_exec = 0;
    errno = saved;
}

void gmt_writer_fork_child(void)
{
    /* Only this thread exists now: plain resets are safe. The parent still owns and
     * flushes the records these buffers hold. */
    int fd = g_fd;
    g_fd = -1;
    if (fd >= 0)
        close(fd);
    for (struct buf *b = atomic_load(&g_bufs); b; b = b->next) {
        uint64_t head = atomic_load(&b->head);
        atomic_store(&b->tail, head);
        /* fork may have caught a thread between its stores of `at` and `head` */
        b->at = head % b->cap;
        atomic_store(&b->busy, BUF_IDLE);
        atomic_store(&b->in_use, 0);
        /* what the parent's threads were in is not in the child's file */
        atomic_store(&b->slot.word[0], 0);
    }
    gmt_ts.writer.buf = NULL;
    t_tid = 0;
    gmt_ts.writer.in_emit = 0;
    gmt_ts.writer.opening = 0;
    t_flushing = NULL;
    t_exec = 0;
    g_path[0] = 0;
    /* a thread of the parent was making the key when we forked: nobody will finish it
     * here, and waiting for it would spin forever; make it again (a key may leak) */
    if (atomic_load(&g_key_state) == 1)
        atomic_store(&g_key_state, 0);
    int st = atomic_load(&gmt_hot.writer.state);
    if (st == ST_OPEN || st == ST_OPENING || st == ST_EXEC) {
        g_forked = 1;
        atomic_store(&gmt_hot.writer.state, ST_CLOSED);
    } else if (st == ST_CLOSED) {
        g_forked = 1;
    }
}
