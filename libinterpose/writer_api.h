/* writer_api.h: the writer's interface to the rest of the library (writer.c, writer_flush.c, writer_file.c); writer_flush.h is what those files share among themselves. */
#ifndef GMT_WRITER_API_H
#define GMT_WRITER_API_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gmt.h"

/* ---- the writer (writer.c, writer_flush.c, writer_file.c): per-thread buffers, one file
 * per process ---- */
/* Opens the trace file if not open yet (lazily, at the first event) and writes the
 * header, PROCESS, ENV and module records. Returns false when tracing is off or failed. */
GMT_HIDDEN bool gmt_writer_ready_slow(void);
#define GMT_WRITER_OPEN 2
static inline bool gmt_writer_ready(void)
{
    /* The file is open: one load, and errno is untouched. */
    if (GMT_LIKELY(atomic_load_explicit(&gmt_hot.writer.state, memory_order_acquire) == GMT_WRITER_OPEN))
        return true;
    return gmt_writer_ready_slow();
}
/* Appends one record (h.size bytes, already padded) to the calling thread's buffer.
 * For records with a `dt` field pass the offset of that field (or 0 if none): the
 * writer fills it from the thread's clock. Async-signal-safe against itself: a
 * record made while the thread is already inside gmt_emit is counted as dropped. */
GMT_HIDDEN void gmt_emit(void *rec, size_t dt_offset);
/* Appends records whose dt fields are 0 (they take the thread's previous time), `size`
 * bytes in all, at most 128, in one piece without reading the clock. When the fast path
 * can't (no buffer yet, no room, inside gmt_emit) each goes through gmt_emit with
 * `dt_offset` (where each of them has its dt field; 0: they have none). */
GMT_HIDDEN void gmt_emit_untimed(void *recs, uint32_t size, size_t dt_offset);
/* gmt_emit at a time already past, `at` (ns, CLOCK_MONOTONIC): the record's dt is
 * measured to it, or 0 when the thread's clock is past it already. The slow way only. */
GMT_HIDDEN void gmt_emit_at(void *rec, size_t dt_offset, uint64_t at);
/* Spans: a record written at the end of what it stands for, with its dt and its duration
 * filled here. A span record has its dt (uint32, ns) at GMT_SPAN_DT and its duration
 * (uint32, ns) at GMT_SPAN_DURATION, `size` bytes of at most GMT_SPAN_COPY, and the
 * caller's buffer holds GMT_SPAN_COPY bytes (copied whole: a few fixed moves). The span
 * began at `begin` ns, or at the thread's previous time if that is later; `begin` 0: its
 * begin was not timed, duration 0. The fast path alone: false when it can't take the
 * record, and nothing was written. */
#define GMT_SPAN_DT 8
#define GMT_SPAN_DURATION 20
#define GMT_SPAN_COPY 64
GMT_HIDDEN bool gmt_emit_span(void *rec, uint32_t size, uint64_t begin);
/* gmt_emit_rec(&rec): one call for the fixed-size timed records of the hot paths
 * (SCOPE_BEGIN, SCOPE_END, ALLOC_SMALL, a FREE without its extension). The record's type
 * picks its size and dt field at compile time: the fast path copies a fixed length with
 * no size checks, and a record it can't take goes the way of gmt_emit. */
#define GMT_EMIT_FIXED(X)                                                                    \
    X(scope_begin, dt)                                                                       \
    X(scope_end, dt)                                                                         \
    X(alloc_small, dt)                                                                       \
    X(free, dt)
#define GMT_X(name, dt_field) GMT_HIDDEN void gmt_emit_rec_##name(struct gmt_rec_##name *r);
GMT_EMIT_FIXED(GMT_X)
#undef GMT_X
#define gmt_emit_rec(r)                                                                      \
    _Generic((r), struct gmt_rec_scope_begin *: gmt_emit_rec_scope_begin,                    \
             struct gmt_rec_scope_end *: gmt_emit_rec_scope_end,                             \
             struct gmt_rec_alloc_small *: gmt_emit_rec_alloc_small,                         \
             struct gmt_rec_free *: gmt_emit_rec_free)(r)
/* The fast path alone for a GROUP_REPEAT (no dt: it takes the thread's previous time):
 * false when it can't take it, and the caller writes what the record stands for. */
GMT_HIDDEN bool gmt_emit_try_group_repeat(struct gmt_rec_group_repeat *r);
/*
 * Deferred records. A client of the writer may hold records of the calling thread back, to
 * write them later or as one record that stands for them. While it holds any, it keeps
 * GMT_WRITER_DEFERRED set in gmt_ts.writer.deferred; the byte is the client's (deferred.c
 * owns it for its two clients, deferred.h), the writer only tests that bit. The writer
 * keeps the thread's records in order by calling the client's two hooks:
 *   gmt_deferred_write()  write what you hold back now (through gmt_emit and its kin).
 *       Called before any other record of the thread is appended (the fast path refuses
 *       while the bit is set; the slow path calls it first), and before the thread's
 *       buffer is flushed at a crash, at exit and at the thread's exit. Never from inside
 *       gmt_emit, nor while the preamble is being written.
 *   gmt_deferred_lost()   a record of this thread was lost, or a THREAD record starts a
 *       new stretch of it: nothing written later may refer back past it. Returns how many
 *       records the client held back and loses with it (counted as dropped).
 * Both may run in a signal handler that interrupted the client: the client makes its
 * state changes safe against that (group.c: "Signals"). deferred.c defines both.
 */
#define GMT_WRITER_DEFERRED 1
GMT_HIDDEN void gmt_deferred_write(void);
GMT_HIDDEN unsigned gmt_deferred_lost(void);
/*
 * A slot per thread that other threads can read: at the head of the thread's buffer
 * (gmt_writer_slot), which outlives the thread. Its client (scope.c: a loop call held
 * back) writes its words between gmt_slot_write_begin and _end, word[0] last: word[0] != 0
 * names what the slot holds, and the client stores 0 there when it holds nothing. The
 * writer reads other threads' slots whole (the sequence count unchanged, and word[0]
 * too) and, for each that holds something, calls its client's hook
 *   note_open(word, seq, tid, note, now, min_age_ns)
 *       "note what is open": write (on the calling thread, with gmt_emit) what the slot's
 *       thread tid is in, and say whether it did. `note` is the noting side's words of
 *       that slot (what it saw, what it wrote). min_age_ns: a tick, from the background
 *       thread (what has been open that long); 0 at a crash, exit or exec (all of it).
 * The client places its hook (GMT_SLOT_CLIENT) in a section the writer reads, as
 * deferred.h's clients do: there from the library's load on, with nothing to register.
 * A client answers false for words that are not its own. The writer clears word[0] of
 * every slot in a fork child.
 */
#define GMT_SLOT_WORDS 6
#define GMT_SLOT_NOTE_WORDS 4
struct gmt_writer_slot {
    _Atomic uint32_t seq;                        /* odd while the owner writes */
    uint32_t reserved;
    _Atomic uint64_t word[GMT_SLOT_WORDS];       /* the owner's */
    _Atomic uint64_t note[GMT_SLOT_NOTE_WORDS];  /* the noting side's */
};
static inline uint32_t gmt_slot_write_begin(struct gmt_writer_slot *s)
{
    uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    return seq;
}
static inline void gmt_slot_write_end(struct gmt_writer_slot *s, uint32_t seq)
{
    atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
}
struct gmt_slot_client {
    bool (*note_open)(const uint64_t word[GMT_SLOT_WORDS], uint32_t seq, uint32_t tid,
                      _Atomic uint64_t note[GMT_SLOT_NOTE_WORDS], uint64_t now,
                      uint64_t min_age_ns);
};
#define GMT_SLOT_CLIENT(name, note_fn)                                                            \
    static const struct gmt_slot_client name                                                     \
        __attribute__((used, section("gmt_slot_clients"), aligned(sizeof(void *)))) = {          \
            .note_open = (note_fn)}
/* What the writer runs before it first opens the file, placed (GMT_WRITER_BEFORE_OPEN) in a
 * section the writer reads: the library's init (init.c), for a record made before the
 * constructor ran (another library's constructor that allocates). It runs on every way
 * to the open, and returns at once when it has run before. */
#define GMT_WRITER_BEFORE_OPEN(name, fn)                                                          \
    static void (*const name)(void)                                                              \
        __attribute__((used, section("gmt_writer_before_open"), aligned(sizeof(void *)))) = (fn)
/* Runs fn when the file opens (registered at init, each once, at most 4 of each kind):
 * preamble ones first, whose records go straight to the file before any chunk and belong
 * to no thread (the module map), then the others (the worker's start). */
GMT_HIDDEN void gmt_writer_on_open(void (*fn)(void), bool preamble);
/* The worker's (worker.c): whether the file takes records (TAKING), may yet (WAITING: not
 * open yet, or in exec) or never will again (DONE). */
enum { GMT_WRITER_WAITING, GMT_WRITER_TAKING, GMT_WRITER_DONE };
GMT_HIDDEN int gmt_writer_phase(void);
/* The worker's tick, while the file takes records: flushes each buffer whose oldest record
 * is about age_ns old or that is an eighth full, and notes what other threads are in
 * (the slots, min_age_ns = age_ns). Returns how full the fullest buffer was, in 16ths. */
GMT_HIDDEN unsigned gmt_writer_tick(uint64_t now, uint64_t age_ns);
/* Times a thread found its buffer full and flushed it itself (the worker then wakes at its
 * shortest period). */
GMT_HIDDEN unsigned long gmt_writer_owner_flushes(void);
/* Flushes every thread's buffer to the file (crash handlers, exit). */
GMT_HIDDEN void gmt_writer_flush_all(void);
/* Writes END and closes. */
GMT_HIDDEN void gmt_writer_finish(void);
/* exec: before the real call, every buffer is flushed and END written, with the file
 * held so that no other thread writes after it; returns what gmt_writer_exec_end needs.
 * exec_end (only reached when exec failed) cuts END off again and hands the file back:
 * tracing goes on as before. Async-signal-safe; errno is kept by both. */
GMT_HIDDEN int gmt_writer_exec_begin(void);
GMT_HIDDEN void gmt_writer_exec_end(int token);
/* In a fork child: drops the parent's buffers and file without writing; the child
 * opens its own file (flagged FORKED) at its first event. Called by init.c's atfork. */
GMT_HIDDEN void gmt_writer_fork_child(void);

#endif
