/* clock.h: the clock (clock.c): CLOCK_MONOTONIC in ns, read inline through the TSC where it could calibrate it. */
#ifndef GMT_CLOCK_H
#define GMT_CLOCK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gmt.h"

/* ---- clock.c ---- */
/* CLOCK_MONOTONIC in ns, read through the TSC where clock.c could calibrate it (inline:
 * it is read for every record), else clock_gettime. */
struct gmt_clock_copy {
    _Atomic uint64_t base_tsc, base_ns, mult; /* ns = base_ns + (tsc - base_tsc) * mult / 2^32 */
    _Atomic uint64_t lo_tsc, width;           /* it holds for tsc - lo_tsc <= width */
};
struct gmt_clock_line {
    _Atomic int use_tsc;           /* the line is valid */
    _Atomic uint32_t seq;          /* its low bit: the copy readers read (clock.c, publish) */
    int64_t skew_ns;               /* tests only: added to every reading, ns */
    struct gmt_clock_copy copy[2]; /* copy[0] shares the first cache line with seq */
} __attribute__((aligned(64)));
GMT_HIDDEN extern struct gmt_clock_line gmt_clock_line;
GMT_HIDDEN uint64_t gmt_clock_kernel_ns(void); /* clock_gettime, with the tests' skew */
static inline uint64_t gmt_clock_line_at(uint64_t tsc, uint64_t base_tsc, uint64_t base_ns,
                                         uint64_t mult)
{
    /* Signed: a reading on a CPU whose TSC is a few cycles behind the flusher's is
     * before the line's base. 128-bit product: no overflow however long since the base. */
    int64_t d = (int64_t)(tsc - base_tsc);
    if (GMT_LIKELY(d >= 0))
        return base_ns + (uint64_t)(((unsigned __int128)(uint64_t)d * mult) >> 32);
    return base_ns - (uint64_t)(((unsigned __int128)(uint64_t)-d * mult) >> 32);
}
#if defined(__x86_64__)
/* One reading of the line: false when a publish went by during it (read again), or the
 * TSC is outside the copy it read (then *out_line is true: ask the kernel). */
static inline bool gmt_clock_line_read(uint64_t *ns, bool *out_line)
{
    uint32_t s = atomic_load_explicit(&gmt_clock_line.seq, memory_order_acquire);
    const struct gmt_clock_copy *c = &gmt_clock_line.copy[s & 1];
    uint64_t bt = atomic_load_explicit(&c->base_tsc, memory_order_relaxed);
    uint64_t bn = atomic_load_explicit(&c->base_ns, memory_order_relaxed);
    uint64_t m = atomic_load_explicit(&c->mult, memory_order_relaxed);
    uint64_t lo = atomic_load_explicit(&c->lo_tsc, memory_order_relaxed);
    uint64_t w = atomic_load_explicit(&c->width, memory_order_relaxed);
    uint64_t tsc = __builtin_ia32_rdtsc();
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&gmt_clock_line.seq, memory_order_relaxed) != s)
        return false;
    if (GMT_UNLIKELY(tsc - lo > w)) {
        *out_line = true; /* outside the line: the flusher is late, or the TSC jumped */
        return false;
    }
    *ns = gmt_clock_line_at(tsc, bt, bn, m) + (uint64_t)gmt_clock_line.skew_ns;
    return true;
}
/* A reading that the first try could not take from the line: the tries after it, then
 * the kernel (clock.c). Out of line, so that the inline reading keeps no loop counter
 * and few registers in each record's emit. */
GMT_HIDDEN uint64_t gmt_clock_now_slow(bool out_line);
#endif
static inline uint64_t gmt_now_ns(void)
{
#if defined(__x86_64__)
    /* The TSC is read inside the sequence window: a reading is of the copy that was
     * the line while the TSC was read (clock.c, publish). The flusher rewrites the
     * other copy, so a reader never waits for it; it reads again only when a publish
     * went by during its read. */
    if (GMT_LIKELY(atomic_load_explicit(&gmt_clock_line.use_tsc, memory_order_acquire))) {
        uint64_t ns;
        bool out_line = false;
        if (GMT_LIKELY(gmt_clock_line_read(&ns, &out_line)))
            return ns;
        return gmt_clock_now_slow(out_line);
    }
#endif
    return gmt_clock_kernel_ns();
}
GMT_HIDDEN void gmt_clock_init(void);  /* at init, after the options */
GMT_HIDDEN void gmt_clock_tick(void);  /* the flusher, each tick: calibrates and steers */
GMT_HIDDEN bool gmt_clock_uses_tsc(void);
GMT_HIDDEN void gmt_clock_test_offset(int64_t ns); /* tests: moves the line by ns */

#endif
