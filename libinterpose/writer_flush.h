/* writer_flush.h: the writer's private layout and state (writer_flush.c defines it) and its way to the file, shared by the writer's three files: writer.c (buffers, the emit paths, exit), writer_flush.c (writing, flushing, the worker's ticks, a crash), writer_file.c (opening the file, exec, fork). */
#ifndef GMT_WRITER_FLUSH_H
#define GMT_WRITER_FLUSH_H

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "gmt.h"
#include "writer_api.h"

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
/* The writer's state of the process. */
struct gmt_wr {
    int fd;                             /* the trace file; -1 none */
    int forked;                         /* this process is a fork child of a traced one */
    pid_t pid;                          /* the process that opened fd (a vfork child is not it) */
    _Atomic(struct buf *) bufs;         /* registry of every buffer ever made */
    _Atomic uint64_t dropped;
    /* Times a thread found its buffer full and flushed it itself: the flusher then wakes
     * at its shortest period (worker.c). */
    _Atomic unsigned long owner_flushes;
    char path[PATH_MAX];
    _Atomic int key_state;              /* 0 none, 1 being made, 2 made, 3 failed */
    pthread_key_t key;
};
GMT_HIDDEN extern struct gmt_wr gmt_wr;

/* This thread's part of it (the buffer and the flags of the hot path are gmt_ts.writer). */
struct gmt_wr_thread {
    uint32_t tid;                       /* the kernel's thread id, once asked */
    struct buf *flushing;               /* the buffer whose busy flag this thread holds */
    int exec;                           /* this thread is between exec_begin and exec_end */
};
GMT_HIDDEN extern GMT_TLS struct gmt_wr_thread gmt_wr_self;

/* A bounded wait for another thread (a crash handler or exec must not hang on a holder
 * that never returns). Bounded by time, not by a count of yields: on a busy machine the
 * holder of a flush (one write of a chunk) may be preempted for a long while. */
#define WAIT_FOREVER 0
#define WAIT_BOUNDED_NS 1000000000ull

struct wait {
    uint64_t max_ns;   /* WAIT_FOREVER or a bound */
    uint64_t deadline; /* set at the first pause */
};

/* ---- writer_flush.c ---- */

GMT_HIDDEN void gmt_wr_pause(void);
/* Pauses, or false once the wait's bound is past. */
GMT_HIDDEN bool gmt_wr_wait_more(struct wait *w);
/* One warning, then the process carries on untraced. */
GMT_HIDDEN void gmt_wr_fail(const char *what, int err);
/* Writes all of iov to the file: 0, or a negative errno. */
GMT_HIDDEN int gmt_wr_write_iov(struct iovec *iov, int n);
/* Writes b's [tail, head) as one CHUNK, and `extra` after it; the caller holds b->busy.
 * False: another thread is in exec and alone writes the file; the bytes stay. */
GMT_HIDDEN bool gmt_wr_flush_locked(struct buf *b, const void *extra, size_t extra_len);
/* Takes b->busy (1) or finds it taken (0); gmt_wr_unlock gives it back. */
GMT_HIDDEN int gmt_wr_try_lock(struct buf *b);
GMT_HIDDEN void gmt_wr_unlock(struct buf *b);
/* Flushes b, waiting while someone else flushes it: 0 once done, -1 when the buffer is
 * sealed or the wait ran out. */
GMT_HIDDEN int gmt_wr_flush_wait(struct buf *b, const void *extra, size_t extra_len,
                                 uint64_t max_ns);
/* Hands the slots of the other threads that hold something to their client's hook: the
 * number of records it wrote. */
GMT_HIDDEN int gmt_wr_note_open_calls(uint64_t min_age_ns);

/* Deferred records (gmt.h): what the thread's client holds back goes in before anything
 * that follows it. Not from inside gmt_emit (a signal handler's call: the buffer is
 * mid-append) nor while the preamble is written (its records belong to no thread). */
static inline void gmt_wr_write_deferred(void)
{
    if (GMT_UNLIKELY(gmt_ts.writer.deferred & GMT_WRITER_DEFERRED) && !gmt_ts.writer.in_emit &&
        !gmt_ts.writer.opening)
        gmt_deferred_write();
}

/* ---- writer_file.c ---- */

/* Opens the file once (other threads wait for the one that opens it): false when it
 * is not open and will not be. */
GMT_HIDDEN bool gmt_wr_ensure_open(void);

#endif
