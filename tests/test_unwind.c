/* test_unwind.c: the fast walk (unwind.c) gives the frames libunwind's tracer gives, for stacks of every common shape, on several threads at once, and gives way where it should. */
#include <alloca.h>
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gmt.h"

#define MAXF 256
#define FP __attribute__((noinline, optimize("no-omit-frame-pointer")))
#define NOFP __attribute__((noinline, optimize("omit-frame-pointer")))

struct walks {
    int fast, slow;
    uint64_t f[MAXF], s[MAXF];
};

static __thread volatile int sink; /* keeps the frames; per thread: the threads test shares nothing */

static void setup(void)
{
    cr_assert(gmt_unwind_setup());
}
TestSuite(unwind, .init = setup);

/* The leaf: a frame record of its own, as a hook has; both walks from it. */
FP static void leaf(struct walks *w, int max)
{
    const void *frame = __builtin_frame_address(0);
    w->fast = gmt_unwind_walk(frame, w->f, max);
    w->slow = gmt_stack_walk_libunwind(frame, w->s, max);
    sink++;
}

static void expect_same(const struct walks *w, const char *what)
{
    cr_assert_geq(w->fast, 0, "%s: the fast walk gave up", what);
    cr_assert_geq(w->slow, 0, "%s: libunwind's tracer gave up", what);
    cr_expect_eq(w->fast, w->slow, "%s: %d frames fast, %d by libunwind", what, w->fast, w->slow);
    for (int i = 0; i < w->fast && i < w->slow; i++)
        cr_expect_eq(w->f[i], w->s[i], "%s: frame %d: %#lx vs %#lx", what, i,
                     (unsigned long)w->f[i], (unsigned long)w->s[i]);
}

/* Frames of four shapes, chosen by the bits of `shape` level by level: CFA from rsp,
 * from rbp, a dynamic stack (alloca: rbp), and a large frame (a CFA offset past 4 KiB). */
static void mixed(int depth, unsigned shape, struct walks *w, int max);

NOFP static void via_rsp(int depth, unsigned shape, struct walks *w, int max)
{
    mixed(depth, shape, w, max);
    sink++;
}

FP static void via_rbp(int depth, unsigned shape, struct walks *w, int max)
{
    mixed(depth, shape, w, max);
    sink++;
}

NOFP static void via_alloca(int depth, unsigned shape, struct walks *w, int max)
{
    volatile char *p = alloca(16 + (size_t)(depth & 7) * 24);
    p[0] = 1;
    mixed(depth, shape, w, max);
    sink += p[0];
}

NOFP static void via_big(int depth, unsigned shape, struct walks *w, int max)
{
    volatile char big[6000];
    big[depth % 6000] = 2;
    mixed(depth, shape, w, max);
    sink += big[depth % 6000];
}

static void mixed(int depth, unsigned shape, struct walks *w, int max)
{
    if (depth == 0) {
        leaf(w, max);
        return;
    }
    switch (shape & 3) {
    case 0: via_rsp(depth - 1, shape >> 2 | shape << 30, w, max); break;
    case 1: via_rbp(depth - 1, shape >> 2 | shape << 30, w, max); break;
    case 2: via_alloca(depth - 1, shape >> 2 | shape << 30, w, max); break;
    default: via_big(depth - 1, shape >> 2 | shape << 30, w, max); break;
    }
}

Test(unwind, same_frames_as_libunwind_for_mixed_shapes)
{
    static struct walks w;
    unsigned long dec0, gu0, dec1, gu1;
    gmt_unwind_counts(&dec0, &gu0);
    unsigned shapes[] = { 0, 0x55555555u, 0xaaaaaaaau, 0xffffffffu, 0x1b1b1b1bu, 0xe4e4e4e4u, 0x9c3a51f7u };
    for (size_t k = 0; k < sizeof shapes / sizeof *shapes; k++)
        for (int depth = 0; depth <= 70; depth += 7) {
            char what[64];
            snprintf(what, sizeof what, "shape %#x depth %d", shapes[k], depth);
            mixed(depth, shapes[k], &w, MAXF);
            expect_same(&w, what);
            cr_expect_geq(w.fast, depth + 2, "%s: too few frames (%d)", what, w.fast);
        }
    gmt_unwind_counts(&dec1, &gu1);
    cr_expect_gt(dec1, dec0, "the rules were decoded here");
    cr_expect_eq(gu1, gu0, "no frame of these shapes sent the walk to libunwind");
}

Test(unwind, depth_limit_is_the_same_cut)
{
    static struct walks w;
    for (int max = 2; max <= 32; max++) { /* (at 1 libunwind's tracer has no room: stack.c cuts the slow walk) */
        char what[32];
        snprintf(what, sizeof what, "max %d", max);
        mixed(30, 0x1b1b1b1bu, &w, max);
        expect_same(&w, what);
        cr_expect_eq(w.fast, max, "%s: cut at the limit", what);
    }
}

/* through libc: qsort calling back into us */
static struct walks *qsort_w;
static int cmp(const void *a, const void *b)
{
    if (!qsort_w->fast && !qsort_w->slow)
        mixed(3, 0x1b, qsort_w, MAXF);
    return *(const int *)a - *(const int *)b;
}

Test(unwind, through_libc_callbacks)
{
    static struct walks w;
    memset(&w, 0, sizeof w);
    qsort_w = &w;
    int v[64];
    for (int i = 0; i < 64; i++)
        v[i] = (i * 37) % 64;
    qsort(v, 64, sizeof *v, cmp);
    expect_same(&w, "inside qsort");
    cr_expect_gt(w.fast, 6);
}

/* A handler on an alternate stack: the signal trampoline's rule is one the fast walk
 * does not follow, so it gives way (and libunwind, which does follow it, walks). */
static struct walks sig_w;
static void handler(int sig)
{
    (void)sig;
    mixed(2, 0, &sig_w, MAXF);
}

Test(unwind, gives_way_at_a_signal_frame)
{
#ifdef __SANITIZE_THREAD__
    cr_skip_test("ThreadSanitizer calls handlers from its own runtime, not the kernel's trampoline");
#endif
    static char altstack[1 << 16];
    stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
    cr_assert_eq(sigaltstack(&ss, NULL), 0);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sa.sa_flags = SA_ONSTACK;
    cr_assert_eq(sigaction(SIGUSR1, &sa, NULL), 0);
    raise(SIGUSR1);
    cr_expect_eq(sig_w.fast, -1, "the fast walk gives way at the trampoline (%d)", sig_w.fast);
    cr_expect_gt(sig_w.slow, 4, "libunwind walks through it");
}

/* Several threads decoding and reading the same rules at once. */
struct job {
    int id, bad;
};
static void *walker(void *arg)
{
    struct job *j = arg;
    struct walks *w = malloc(sizeof *w);
    for (int r = 0; r < 300; r++) {
        mixed(5 + (r + j->id) % 40, 0x9c3a51f7u * (unsigned)(r % 5 + 1), w, MAXF);
        if (w->fast < 0 || w->fast != w->slow || memcmp(w->f, w->s, (size_t)w->fast * 8))
            j->bad++;
    }
    free(w);
    return NULL;
}

Test(unwind, threads_agree_with_libunwind)
{
    pthread_t t[6];
    struct job j[6];
    for (int i = 0; i < 6; i++) {
        j[i] = (struct job){ i, 0 };
        cr_assert_eq(pthread_create(&t[i], NULL, walker, &j[i]), 0);
    }
    for (int i = 0; i < 6; i++) {
        pthread_join(t[i], NULL);
        cr_expect_eq(j[i].bad, 0, "thread %d: %d walks differed", i, j[i].bad);
    }
}
