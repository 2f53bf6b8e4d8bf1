/* writer_file.c: the trace file's life: opening it (preamble, what runs at open), exec (the old image's END, taken back when exec fails) and fork. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "clock.h"
#include "outfile.h"
#include "writer_flush.h"
#include "writer_api.h"

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

/* ---- opening the file ---- */

/* GMT_WRITER_BEFORE_OPEN's entries, placed by the linker; weak: none in a program built
 * without one. */
extern void (*const __start_gmt_writer_before_open[])(void) __attribute__((weak, visibility("hidden")));
extern void (*const __stop_gmt_writer_before_open[])(void) __attribute__((weak, visibility("hidden")));

static void before_open(void)
{
    for (void (*const *f)(void) = __start_gmt_writer_before_open; f < __stop_gmt_writer_before_open; f++)
        (*f)();
}

/* Header, PROCESS and ENV (outfile.c builds them), in one write at the start of the file. */
static int write_preamble(const char *host, int rank)
{
    unsigned char *m = mmap(NULL, GMT_PREAMBLE_SCRATCH, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return -errno;
    struct iovec iov = { m, gmt_outfile_preamble(m, host, rank, gmt_wr.forked) };
    int rc = gmt_wr_write_iov(&iov, 1);
    munmap(m, GMT_PREAMBLE_SCRATCH);
    return rc;
}

static void open_file(void)
{
    char host[256];
    gmt_outfile_host(host, sizeof host);
    int rank = gmt_outfile_rank();
    const char *what;
    int fd = gmt_outfile_create(gmt_wr.path, sizeof gmt_wr.path, host, rank, &what);
    if (fd < 0) {
        gmt_wr_fail(what, -fd);
        return;
    }
    gmt_wr.fd = fd;
    int rc = write_preamble(host, rank);
    if (rc) {
        gmt_wr_fail("cannot write trace file", -rc);
        return;
    }
    /* Records written now (the module map) are the file's preamble: they belong to no
     * thread. */
    gmt_ts.writer.opening = 1;
    run_on_open(true);
    gmt_ts.writer.opening = 0;
    gmt_wr.pid = getpid();
    run_on_open(false);
    int opening = ST_OPENING;
    atomic_compare_exchange_strong(&gmt_hot.writer.state, &opening, ST_OPEN);
}

/* Opens the file once; other threads wait for the one that opens it. */
bool gmt_wr_ensure_open(void)
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
            if (st == ST_EXEC && gmt_wr_self.exec)
                return false;
            gmt_wr_pause();
            continue;
        }
        before_open(); /* the options decide */
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
    bool ok = gmt_wr_ensure_open();
    errno = saved;
    return ok;
}

/* ---- exec: the old image's records and END, taken back when exec fails ---- */

/* What gmt_writer_exec_begin holds for exec_end: the buffers it took (gmt_wr.bufs from
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
        if (idle == BUF_SEALED || !gmt_wr_wait_more(&w))
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
    if (getpid() != gmt_wr.pid) {
        errno = saved;
        return 0;
    }
    /* Another thread's exec: it replaces the image (and this thread with it) or fails
     * and hands the file back. A handler of the thread in exec goes straight through. */
    while (atomic_load(&gmt_hot.writer.state) == ST_EXEC && !gmt_wr_self.exec)
        gmt_wr_pause();
    /* Not open (off, failed, finished, a fork child that traced nothing): nothing to
     * write. */
    if (atomic_load(&gmt_hot.writer.state) != ST_OPEN) {
        errno = saved;
        return 0;
    }
    /* A signal handler inside this thread's own flush: that chunk is half-written and
     * END can't follow it; the other buffers still go out. */
    if (gmt_wr_self.flushing) {
        gmt_writer_flush_all();
        errno = saved;
        return 0;
    }
    gmt_wr_write_deferred();
    gmt_wr_note_open_calls(0); /* the calls other threads are in: they vanish with the image */
    int st = ST_OPEN;
    if (!atomic_compare_exchange_strong(&gmt_hot.writer.state, &st, ST_EXEC)) {
        errno = saved;
        return 0;
    }
    gmt_wr_self.exec = 1;
    /* Every buffer is taken, so no thread writes after END: a flush under way finishes
     * first; one that starts now finds ST_EXEC and leaves its bytes where they are. */
    struct buf *first = atomic_load(&gmt_wr.bufs), *b;
    for (b = first; b; b = b->next)
        if (!take(b))
            break;
    if (b) {
        /* A holder that does not let go (bounded, as in a crash handler): flush what
         * can be flushed, without END. */
        give_back(first, b);
        int ex = ST_EXEC;
        atomic_compare_exchange_strong(&gmt_hot.writer.state, &ex, ST_OPEN);
        gmt_wr_self.exec = 0;
        gmt_writer_flush_all();
        errno = saved;
        return 0;
    }
    for (b = first; b; b = b->next) {
        gmt_wr_self.flushing = b;
        gmt_wr_flush_locked(b, NULL, 0);
        gmt_wr_self.flushing = NULL;
    }
    /* END on its own, after every chunk (it belongs to the last chunk's thread and means
     * the same in any); when exec fails, the file is cut back to where END began. */
    g_exec_first = first;
    g_exec_end_at = lseek(gmt_wr.fd, 0, SEEK_END);
    if (g_exec_end_at >= 0 && atomic_load(&gmt_hot.writer.state) == ST_EXEC) {
        struct gmt_rec_end end = { { GMT_REC_END, 0, sizeof end }, gmt_now_ns(),
                                   atomic_load(&gmt_wr.dropped) };
        struct iovec iov = { &end, sizeof end };
        int rc = gmt_wr_write_iov(&iov, 1);
        if (rc)
            gmt_wr_fail("cannot write trace file", -rc);
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
        while (ftruncate(gmt_wr.fd, g_exec_end_at) && errno == EINTR) {
        }
    give_back(g_exec_first, NULL);
    int ex = ST_EXEC;
    atomic_compare_exchange_strong(&gmt_hot.writer.state, &ex, ST_OPEN);
    gmt_wr_self.exec = 0;
    errno = saved;
}

/* ---- fork ---- */

void gmt_writer_fork_child(void)
{
    /* Only this thread exists now: plain resets are safe. The parent still owns and
     * flushes the records these buffers hold. */
    int fd = gmt_wr.fd;
    gmt_wr.fd = -1;
    if (fd >= 0)
        close(fd);
    for (struct buf *b = atomic_load(&gmt_wr.bufs); b; b = b->next) {
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
    gmt_wr_self.tid = 0;
    gmt_ts.writer.in_emit = 0;
    gmt_ts.writer.opening = 0;
    gmt_wr_self.flushing = NULL;
    gmt_wr_self.exec = 0;
    gmt_wr.path[0] = 0;
    /* a thread of the parent was making the key when we forked: nobody will finish it
     * here, and waiting for it would spin forever; make it again (a key may leak) */
    if (atomic_load(&gmt_wr.key_state) == 1)
        atomic_store(&gmt_wr.key_state, 0);
    int st = atomic_load(&gmt_hot.writer.state);
    if (st == ST_OPEN || st == ST_OPENING || st == ST_EXEC) {
        gmt_wr.forked = 1;
        atomic_store(&gmt_hot.writer.state, ST_CLOSED);
    } else if (st == ST_CLOSED) {
        gmt_wr.forked = 1;
    }
}
