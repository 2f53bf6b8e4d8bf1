/* clock.c: the one clock of the trace (CLOCK_MONOTONIC, ns), read through the TSC where the kernel trusts it, with a skew tests can set. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

#include "clock.h"
#include "gmt.h"

/*
 * Every record carries a CLOCK_MONOTONIC time. clock_gettime costs 30-35 ns through the
 * vDSO on the machines measured (docs/performance.md), two readings per allocation pair
 * and per NCCL call: a tenth of the tracer's cost. Where the kernel's own clocksource is
 * the TSC (invariant, synchronised across CPUs: the kernel checked it), the clock is read
 * as the TSC (~13 ns) and mapped to CLOCK_MONOTONIC by a line
 *
 *     ns = base_ns + (tsc - base_tsc) * mult / 2^32
 *
 * that the flusher thread steers at each of its ticks (gmt_clock_tick), as NTP steers
 * the kernel's clock: the line stays continuous and increasing while it is steered
 * (each new line starts where the old one is at the tick's reading) and its slope is the TSC's rate measured since
 * the start, corrected so that the remaining offset from CLOCK_MONOTONIC vanishes over
 * the next second (or four ticks, when they come slower). It agrees with
 * CLOCK_MONOTONIC within a few microseconds; an offset over a millisecond (suspend, a
 * VM moved, the kernel leaving the TSC) is a step to the kernel's value. Until the
 * first tick, and where the TSC is not the kernel's clock, clock_gettime is read every
 * time. GPUMEMTRACE_TSC=0 keeps it that way.
 *
 * The line is kept twice and published with a sequence count whose low bit says which
 * copy readers read (publish): the flusher rewrites the other one, so a reader never
 * waits for a flusher that is preempted halfway, and never has to ask the kernel then.
 * The kernel's clock is some way from the line (the steering's error: hundreds of ns
 * where NTP slews the kernel's rate, up to STEP_NS by design), so a thread whose readings
 * went from the line to the kernel and back would see its clock go back by that much.
 */

#define SHIFT 32
#define STEP_NS 1000000          /* an offset larger than this is stepped, not steered */
#define HORIZON_NS 1000000000    /* an offset is steered away over this long, or over 4 ticks */
#define MAX_CORRECTION_PPM 500   /* steering changes the rate by at most this */
#define MIN_CALIBRATION_NS 20000000
#define BACK_NS 1000000          /* a line holds this long before its base */
#define RECHECK_TICKS 100        /* the kernel's clocksource is read again this often */
#define SLOWER_AHEAD_NS 10000000 /* a line slower than the last starts this far ahead */

/* Lets tests make a thread's clock jump (a gap longer than dt can hold) without
 * sleeping for seconds; always 0 in a traced process. */

/* The line (gmt.h reads it inline, gmt_now_ns): use_tsc says it is valid; the low bit of
 * seq says which copy readers read (publish). */
struct gmt_clock_line gmt_clock_line;
/* Calibration, the flusher's alone: the first (tsc, ns) pair and the TSC's rate. */
static int tsc_usable;                 /* decided at init */
static uint64_t origin_tsc, origin_ns;
static uint64_t last_tick_tsc;         /* the TSC at the previous tick */
static uint64_t horizon_ns = HORIZON_NS; /* offsets are steered away over this long */
static unsigned ticks;

static uint64_t kernel_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#if defined(__x86_64__)

/* The TSC's ticks in `ns` nanoseconds at this line's rate. */
static uint64_t ticks_in(uint64_t ns, uint64_t mult)
{
    return (uint64_t)(((unsigned __int128)ns << SHIFT) / mult);
}

static void copy_put(struct gmt_clock_copy *c, uint64_t base_tsc, uint64_t base_ns,
                     uint64_t mult, uint64_t lo, uint64_t width)
{
    atomic_store_explicit(&c->base_tsc, base_tsc, memory_order_relaxed);
    atomic_store_explicit(&c->base_ns, base_ns, memory_order_relaxed);
    atomic_store_explicit(&c->mult, mult, memory_order_relaxed);
    atomic_store_explicit(&c->lo_tsc, lo, memory_order_relaxed);
    atomic_store_explicit(&c->width, width, memory_order_relaxed);
}

static void copy_get(const struct gmt_clock_copy *c, uint64_t *base_tsc, uint64_t *base_ns,
                     uint64_t *mult)
{
    *base_tsc = atomic_load_explicit(&c->base_tsc, memory_order_relaxed);
    *base_ns = atomic_load_explicit(&c->base_ns, memory_order_relaxed);
    *mult = atomic_load_explicit(&c->mult, memory_order_relaxed);
}

/* copy[1] = copy[0], while readers read copy[0]. */
static void spare_refresh(void)
{
    struct gmt_clock_copy *c = &gmt_clock_line.copy[0];
    copy_put(&gmt_clock_line.copy[1], atomic_load_explicit(&c->base_tsc, memory_order_relaxed),
             atomic_load_explicit(&c->base_ns, memory_order_relaxed),
             atomic_load_explicit(&c->mult, memory_order_relaxed),
             atomic_load_explicit(&c->lo_tsc, memory_order_relaxed),
             atomic_load_explicit(&c->width, memory_order_relaxed));
}

/* A new line. It holds from 1 ms of TSC before the flusher's reading here (another CPU's
 * reading a hair behind) to `horizon` after its base: a reading outside (the flusher
 * late by more than its steering horizon, a suspend that stopped CLOCK_MONOTONIC but not
 * the TSC, a TSC that went back) asks the kernel until the next tick publishes a line
 * that fits.
 *
 * Between publishes copy[0] and copy[1] are the same line and the count is even: readers
 * read copy[0]. A publish makes the count odd (readers move to copy[1], the line as it
 * was), writes the new line into copy[0], makes the count even (readers move to it) and
 * copies it into copy[1]. A reader checks the count after its TSC read and reads again
 * when it changed, so a reading of the old line is at a TSC before the second step, one
 * of the new line after the first: the two overlap while the flusher runs (or is
 * preempted) between them.
 *
 * continued: the new line goes on from where the current one is (base_tsc, base_ns are
 * ignored), so that no thread's clock goes back across the switch, however long the
 * overlap:
 * - as fast or faster: from the TSC read here, T0 (readings of the old line before T0
 *   are below it there; after T0 the new line is the higher), and 1 ns up, which the
 *   old line's rounding down may be ahead of it by;
 * - slower: from SLOWER_AHEAD_NS past T0, where both lines meet; before that the new
 *   line is the higher. A flusher preempted between its two steps for longer than that
 *   could leave a reading of the old line above the next of the new one by (the excess)
 *   x (the slopes' difference, parts per million at most): under a nanosecond for the
 *   first hundreds of milliseconds of such a stall. The step forward this costs is as
 *   small: 10 ms x that difference. */
static void publish(uint64_t base_tsc, uint64_t base_ns, uint64_t mult, bool continued)
{
    uint32_t s = atomic_load_explicit(&gmt_clock_line.seq, memory_order_relaxed);
    atomic_store_explicit(&gmt_clock_line.seq, s + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_seq_cst);
    struct gmt_clock_copy *cur = &gmt_clock_line.copy[0];
    _mm_lfence();
    uint64_t t0 = __rdtsc();
    if (continued) {
        uint64_t bt, bn, m;
        copy_get(cur, &bt, &bn, &m);
        if (mult >= m) {
            base_tsc = t0;
            base_ns = gmt_clock_line_at(t0, bt, bn, m) + 1;
        } else {
            base_tsc = t0 + ticks_in(SLOWER_AHEAD_NS, m);
            base_ns = gmt_clock_line_at(base_tsc, bt, bn, m);
        }
    }
    uint64_t back = ticks_in(BACK_NS, mult);
    uint64_t from = (continued || base_tsc > t0 ? t0 : base_tsc) - back;
    copy_put(cur, base_tsc, base_ns, mult, from,
             (base_tsc - from) + ticks_in(horizon_ns, mult));
    atomic_store_explicit(&gmt_clock_line.seq, s + 2, memory_order_release);
    atomic_thread_fence(memory_order_seq_cst);
    spare_refresh();
}

/* A (tsc, CLOCK_MONOTONIC) pair read as close together as this CPU allows: the best of
 * three by the TSC time the kernel read took. */
static void pair(uint64_t *tsc, uint64_t *ns)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        _mm_lfence();
        uint64_t a = __rdtsc();
        uint64_t n = kernel_ns();
        _mm_lfence();
        uint64_t b = __rdtsc();
        if (b - a < best) {
            best = b - a;
            *tsc = a + (b - a) / 2;
            *ns = n;
        }
    }
}

/* The kernel keeps time with the TSC and the CPU says it is invariant. */
static bool tsc_trusted(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return false;
    __cpuid(0x80000007u, a, b, c, d);
    if (!(d & (1u << 8))) /* invariant TSC */
        return false;
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
                  O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[16] = { 0 };
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    return n >= 3 && !strcmp(buf, "tsc\n");
}
#endif

uint64_t gmt_clock_kernel_ns(void)
{
    return kernel_ns() + (uint64_t)gmt_clock_line.skew_ns;
}

#if defined(__x86_64__)
/* gmt_now_ns's first try failed: 63 more, as long as publishes go by, then the kernel. */
uint64_t gmt_clock_now_slow(bool out_line)
{
    for (int tries = 1; tries < 64 && !out_line; tries++) {
        uint64_t ns;
        if (gmt_clock_line_read(&ns, &out_line))
            return ns;
    }
    return gmt_clock_kernel_ns();
}
#endif

bool gmt_clock_uses_tsc(void)
{
    return atomic_load_explicit(&gmt_clock_line.use_tsc, memory_order_relaxed) != 0;
}

/* A fork child whose parent was inside publish() (another thread) has one copy half
 * written: the count says which copy is whole; both become that one, the count even. */
static void fork_child(void)
{
    uint32_t s = atomic_load_explicit(&gmt_clock_line.seq, memory_order_relaxed);
    if (s & 1) {
        struct gmt_clock_copy *w = &gmt_clock_line.copy[1];
        copy_put(&gmt_clock_line.copy[0], atomic_load_explicit(&w->base_tsc, memory_order_relaxed),
                 atomic_load_explicit(&w->base_ns, memory_order_relaxed),
                 atomic_load_explicit(&w->mult, memory_order_relaxed),
                 atomic_load_explicit(&w->lo_tsc, memory_order_relaxed),
                 atomic_load_explicit(&w->width, memory_order_relaxed));
        atomic_store_explicit(&gmt_clock_line.seq, s + 1, memory_order_relaxed);
    }
    spare_refresh();
}

void gmt_clock_init(void)
{
    static _Atomic int registered;
    if (!atomic_exchange(&registered, 1))
        pthread_atfork(NULL, NULL, fork_child);
    atomic_store_explicit(&gmt_clock_line.use_tsc, 0, memory_order_relaxed);
    tsc_usable = 0;
#if defined(__x86_64__)
    if (!gmt_opt.tsc || !tsc_trusted())
        return;
    pair(&origin_tsc, &origin_ns);
    last_tick_tsc = origin_tsc;
    /* the flusher ticks every flush_ms / 2: steer over four ticks when that is longer */
    uint64_t four_ticks = (uint64_t)(gmt_opt.flush_ms > 0 ? gmt_opt.flush_ms : 1) * 2000000u;
    horizon_ns = four_ticks > HORIZON_NS ? four_ticks : HORIZON_NS;
    tsc_usable = 1;
#endif
}

/* Tests only: moves the current line by `ns` (as a clock error would). */
void gmt_clock_test_offset(int64_t ns)
{
#if defined(__x86_64__)
    if (atomic_load_explicit(&gmt_clock_line.use_tsc, memory_order_relaxed)) {
        uint64_t bt, bn, m;
        copy_get(&gmt_clock_line.copy[0], &bt, &bn, &m);
        publish(bt, bn + (uint64_t)ns, m, false);
    }
#else
    (void)ns;
#endif
}

void gmt_clock_tick(void)
{
#if defined(__x86_64__)
    if (!tsc_usable)
        return;
    if (++ticks % RECHECK_TICKS == 0 && !tsc_trusted()) {
        /* the kernel left the TSC (its watchdog found it unstable): so do we */
        atomic_store_explicit(&gmt_clock_line.use_tsc, 0, memory_order_relaxed);
        tsc_usable = 0;
        return;
    }
    uint64_t tsc, ns;
    pair(&tsc, &ns);
    bool went_back = tsc < last_tick_tsc;
    last_tick_tsc = tsc;
    bool on = atomic_load_explicit(&gmt_clock_line.use_tsc, memory_order_relaxed);
    uint64_t cur_tsc, cur_ns, cur;
    copy_get(&gmt_clock_line.copy[0], &cur_tsc, &cur_ns, &cur);
    if (went_back) {
        /* a restored checkpoint, another host's TSC: calibrate from here on */
        origin_tsc = tsc;
        origin_ns = ns;
        if (on)
            publish(tsc, ns, cur, false);
        return;
    }
    if (ns - origin_ns < MIN_CALIBRATION_NS || tsc <= origin_tsc)
        return;
    /* ns per TSC tick × 2^32, measured over everything since the origin. */
    uint64_t rate = (uint64_t)(((unsigned __int128)(ns - origin_ns) << SHIFT) / (tsc - origin_tsc));
    if (!rate)
        return;
    if (!on) {
        publish(tsc, ns, rate, false);
        atomic_store_explicit(&gmt_clock_line.use_tsc, 1, memory_order_release);
        return;
    }
    uint64_t at = gmt_clock_line_at(tsc, cur_tsc, cur_ns, cur);
    int64_t off = (int64_t)(ns - at); /* > 0: the line is behind the kernel */
    if (off > STEP_NS || off < -STEP_NS) {
        /* A step (suspend, a VM moved): the rate since the origin spans the jump, so
         * calibrate again from here, at the line's rate meanwhile. */
        origin_tsc = tsc;
        origin_ns = ns;
        publish(tsc, ns, cur, false);
        return;
    }
    /* Steer: a rate that closes the offset over the horizon (1 s, or four ticks when they
     * come slower), at most MAX_CORRECTION_PPM. A late tick can't make it overshoot: the
     * line ends at the horizon, and readers then ask the kernel. */
    __int128 corr = (__int128)rate * off / (__int128)horizon_ns;
    __int128 lim = (__int128)rate * MAX_CORRECTION_PPM / 1000000;
    if (corr > lim)
        corr = lim;
    if (corr < -lim)
        corr = -lim;
    publish(0, 0, (uint64_t)((__int128)rate + corr), true);
#endif
}
