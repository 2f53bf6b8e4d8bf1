/* test_clock.c: the trace clock read through the TSC: it switches on only where the kernel keeps time with the TSC, agrees with CLOCK_MONOTONIC, and never goes back on a thread while the flusher re-steers it. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "gmt.h"

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };
    while (nanosleep(&ts, &ts))
        ;
}

/* What the library should decide here, found independently of it. */
static bool kernel_uses_tsc(void)
{
#if defined(__x86_64__)
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (!f)
        return false;
    char src[32] = { 0 };
    bool tsc = fgets(src, sizeof src, f) && !strcmp(src, "tsc\n");
    fclose(f);
    if (!tsc)
        return false;
    f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return false;
    char line[4096];
    bool invariant = false;
    while (!invariant && fgets(line, sizeof line, f))
        invariant = !strncmp(line, "flags", 5) && strstr(line, " nonstop_tsc");
    fclose(f);
    return invariant;
#else
    return false;
#endif
}

/* The flusher's part: a tick every `ms` until told to stop. */
static _Atomic int ticking;
static long tick_ms;
static void *ticker(void *arg)
{
    (void)arg;
    while (atomic_load(&ticking)) {
        gmt_clock_tick();
        sleep_ms(tick_ms);
    }
    return NULL;
}

static pthread_t start_ticker(long ms)
{
    tick_ms = ms;
    atomic_store(&ticking, 1);
    pthread_t t;
    cr_assert_eq(pthread_create(&t, NULL, ticker, NULL), 0);
    return t;
}

static void stop_ticker(pthread_t t)
{
    atomic_store(&ticking, 0);
    pthread_join(t, NULL);
}

Test(clock, tsc_only_where_the_kernel_trusts_it_and_close_to_clock_monotonic)
{
    gmt_opt.tsc = 1;
    gmt_clock_init();
    cr_expect(!gmt_clock_uses_tsc(), "no TSC line before the first calibration");
    /* the first tick past the calibration time (20 ms) decides, whenever it comes */
    sleep_ms(30);
    gmt_clock_tick();
    bool want = kernel_uses_tsc();
    pthread_t t = start_ticker(5);
    cr_expect_eq(gmt_clock_uses_tsc(), want, "TSC clock: %d, kernel's clocksource tsc: %d",
                 gmt_clock_uses_tsc(), want);
    /* Sampled against the kernel for half a second while the line is re-steered every
     * 5 ms: each reading lies between two kernel readings taken around it, give or take
     * the steering's error. */
    int64_t worst = 0;
    for (int i = 0; i < 500; i++) {
        uint64_t a = mono_ns();
        uint64_t x = gmt_now_ns();
        uint64_t b = mono_ns();
        int64_t off = x < a ? (int64_t)(a - x) : x > b ? (int64_t)(x - b) : 0;
        if (off > worst)
            worst = off;
        sleep_ms(1);
    }
    stop_ticker(t);
    cr_expect_lt(worst, 20000, "worst distance from CLOCK_MONOTONIC: %ld ns", (long)worst);
}

/* An error of the line (here put in by hand: 400 µs ahead) is steered away, without
 * a step and without overshooting, also when ticks come slower than the 1 s horizon
 * would assume (the flusher ticks every flush_ms/2, up to 30 s; 300 ms here). */
static int64_t offset_now(void)
{
    uint64_t a = mono_ns(), x = gmt_now_ns(), b = mono_ns();
    return x < a ? -(int64_t)(a - x) : x > b ? (int64_t)(x - b) : 0;
}

/* A TSC line in use (flusher ticks every 50 ms: a 1 s horizon), moved by `ns`; the test
 * is skipped where the kernel does not keep time with the TSC. */
static void moved_line(int64_t ns)
{
    gmt_opt.tsc = 1;
    gmt_opt.flush_ms = 100;
    gmt_clock_init();
    if (!kernel_uses_tsc())
        cr_skip_test("the kernel's clocksource is not an invariant TSC here");
    sleep_ms(30);
    gmt_clock_tick();
    cr_assert(gmt_clock_uses_tsc());
    gmt_clock_test_offset(ns);
}

Test(clock, an_offset_is_steered_away_without_overshoot)
{
    moved_line(400000);
    int64_t first = offset_now(), last = first, lowest = first;
    cr_assert_gt(first, 350000, "the line was moved: %ld ns", (long)first);
    for (int i = 0; i < 8; i++) {
        gmt_clock_tick();
        sleep_ms(300);
        last = offset_now();
        if (last < lowest)
            lowest = last;
        /* steered, not stepped: a part of it goes at each tick (a quarter here) */
        if (i == 0)
            cr_expect(last > first / 10 && last < first * 95 / 100,
                      "after one tick %ld ns, from %ld", (long)last, (long)first);
    }
    cr_expect_lt(last, first / 2, "offset %ld ns after 2.4 s, from %ld", (long)last, (long)first);
    cr_expect_gt(lowest, -20000, "overshot to %ld ns", (long)lowest);
}

/* A line holds only to its horizon (1 s here): when the flusher is late by more (or a
 * suspend stopped CLOCK_MONOTONIC but not the TSC), readers ask the kernel instead of
 * running on with an old line. */
Test(clock, an_old_line_gives_way_to_the_kernel)
{
    moved_line(500000);
    int64_t fresh = offset_now();
    cr_expect_gt(fresh, 450000, "the moved line is read while it holds: %ld ns", (long)fresh);
    sleep_ms(1100); /* no tick: past the line's horizon */
    int64_t old = offset_now();
    cr_expect(old > -20000 && old < 20000, "past its horizon: %ld ns from the kernel",
              (long)old);
}

/* A reader thread that checks its clock never goes back, however the line moves. */
static _Atomic int reading;
static _Atomic long backwards, reads;
static void *reader(void *arg)
{
    (void)arg;
    uint64_t last = gmt_now_ns();
    long n = 0, back = 0;
    while (atomic_load(&reading)) {
        uint64_t now = gmt_now_ns();
        back += now < last;
        last = now;
        n++;
    }
    atomic_fetch_add(&backwards, back);
    atomic_fetch_add(&reads, n);
    return NULL;
}

Test(clock, never_backwards_on_a_thread_while_steered)
{
    gmt_opt.tsc = 1;
    gmt_clock_init();
    if (!kernel_uses_tsc())
        cr_skip_test("the kernel's clocksource is not an invariant TSC here");
    /* from the first line on (before it the clock is the kernel's, and the first line
     * starts within a read of clock_gettime of it): ticked by hand up to it, however
     * late a thread would have been scheduled */
    sleep_ms(30);
    gmt_clock_tick();
    cr_assert(gmt_clock_uses_tsc());
    /* ticks every millisecond: the line is replaced hundreds of times under the readers */
    pthread_t t = start_ticker(1);
    atomic_store(&reading, 1);
    pthread_t r[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&r[i], NULL, reader, NULL), 0);
    sleep_ms(400);
    atomic_store(&reading, 0);
    for (int i = 0; i < 2; i++)
        pthread_join(r[i], NULL);
    stop_ticker(t);
    cr_expect_gt(atomic_load(&reads), 1000);
    cr_expect_eq(atomic_load(&backwards), 0, "%ld of %ld readings went back",
                 atomic_load(&backwards), atomic_load(&reads));
}

/* The flusher preempted halfway through a publish, held there by hand: the count says a
 * publish is under way and the copy it rewrites is half written. Readers must stay on the
 * line, not ask the kernel, whose clock is some way from it (400 us here, as a line
 * steered while NTP slews the kernel's rate can be): a thread's clock would go back by
 * that much, and forward again once the publish is done. */
Test(clock, a_publish_held_halfway_keeps_readers_on_the_line)
{
    moved_line(400000);
    uint64_t last = gmt_now_ns();
    struct gmt_clock_copy *c = &gmt_clock_line.copy[0];
    uint64_t bt = atomic_load(&c->base_tsc), bn = atomic_load(&c->base_ns),
             m = atomic_load(&c->mult);
    atomic_fetch_add(&gmt_clock_line.seq, 1);
    atomic_store(&c->base_ns, 0);
    atomic_store(&c->mult, 1);
    long back = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t now = gmt_now_ns();
        back += now < last;
        last = now;
    }
    int64_t off = offset_now();
    cr_expect_gt(off, 350000, "while the publish is held: %ld ns from the kernel", (long)off);
    atomic_store(&c->base_tsc, bt);
    atomic_store(&c->base_ns, bn);
    atomic_store(&c->mult, m);
    atomic_fetch_add(&gmt_clock_line.seq, 1);
    for (int i = 0; i < 1000; i++) {
        uint64_t now = gmt_now_ns();
        back += now < last;
        last = now;
    }
    cr_expect_eq(back, 0, "%ld readings went back", back);
}

#if defined(__x86_64__)
/* gmt_now_ns reads the line once inline; when that try fails it hands over to
 * gmt_clock_now_slow. A publish that went by during the read: the line is read again,
 * not the kernel's clock (400 us from it here). A TSC outside the copy read: the kernel. */
Test(clock, a_failed_first_try_reads_the_line_again_unless_outside_it)
{
    moved_line(400000);
    uint64_t b = mono_ns();
    uint64_t again = gmt_clock_now_slow(false);
    cr_expect_gt(again, b + 350000, "after a publish went by: %ld ns from the kernel",
                 (long)(again - b));
    uint64_t a = mono_ns(), x = gmt_clock_now_slow(true);
    b = mono_ns();
    cr_expect(x >= a && x <= b, "outside the line: %lu not within [%lu, %lu]",
              (unsigned long)x, (unsigned long)a, (unsigned long)b);
}
#endif

Test(clock, off_reads_the_kernel_each_time)
{
    gmt_opt.tsc = 0;
    gmt_clock_init();
    pthread_t t = start_ticker(5);
    sleep_ms(60);
    cr_expect(!gmt_clock_uses_tsc(), "GPUMEMTRACE_TSC=0 keeps clock_gettime");
    uint64_t a = mono_ns(), x = gmt_now_ns(), b = mono_ns();
    stop_ticker(t);
    cr_expect(x >= a && x <= b, "%lu not within [%lu, %lu]", (unsigned long)x,
              (unsigned long)a, (unsigned long)b);
    gmt_opt.tsc = 1;
}
