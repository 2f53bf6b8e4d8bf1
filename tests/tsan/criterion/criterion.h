/* tests/tsan/criterion/criterion.h: the part of Criterion's API the library's suites use, with a runner of its own, for the ThreadSanitizer build (mk/tsan.mk), where Criterion's runtime can't start. */
#ifndef GMT_TSAN_CRITERION_H
#define GMT_TSAN_CRITERION_H

/*
 * Why not Criterion itself: at start-up it maps its shared arena at a random address in
 * 0x2000'0000'0000-0x6000'0000'0000 after probing it with mincore, and ThreadSanitizer
 * reserves nearly all of that range for its shadow memory, so Criterion gives up
 * ("Could not initialize inheritable arena") or, when a probe lands in a gap, crashes
 * later. This header keeps the suites' source unchanged: the same Test/TestSuite
 * declarations and cr_assert and cr_expect macros, each test run in a process of its
 * own (as Criterion does; the suites count on fresh state), with the suite's and
 * the test's .init/.fini and .timeout, --filter SUITE/NAME (a glob), and Criterion's
 * closing "Synthesis" line. Other Criterion options are accepted and ignored.
 *
 * The runner, not the test, keeps the time: a test runs in a process group of its own,
 * and one still running at its .timeout (CR_DEFAULT_TIMEOUT where it gives none) has
 * its threads' stacks printed (by gdb, where there is one) and its whole group killed
 * with SIGKILL. An alarm in the test would not do: a signal mask or a handler the test
 * inherits, or one it sets, would keep it from ever firing, and the suite, and CI with
 * it, would wait forever without a word on which test hung.
 */
#include <fnmatch.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* s: a test's limit where neither it nor its suite gives one. */
#define CR_DEFAULT_TIMEOUT 300.0

struct cr_opts {
    void (*init)(void);
    void (*fini)(void);
    double timeout; /* s; 0: none */
};

struct cr_test {
    const char *suite, *name;
    void (*fn)(void);
    struct cr_opts opts;
    struct cr_test *next;
};

struct cr_suite {
    const char *name;
    struct cr_opts opts;
    struct cr_suite *next;
};

static struct cr_test *cr_tests, **cr_tests_tail = &cr_tests;
static struct cr_suite *cr_suites;
static bool cr_failed;
static sigjmp_buf cr_abort;

#define CR_ID_(suite, name, what) cr_##what##_##suite##_##name

#define Test(suite, name, ...)                                                               \
    static void CR_ID_(suite, name, fn)(void);                                               \
    static struct cr_test CR_ID_(suite, name, t) = { #suite, #name, CR_ID_(suite, name, fn), \
                                                     { __VA_ARGS__ }, NULL };                \
    __attribute__((constructor)) static void CR_ID_(suite, name, reg)(void)                 \
    {                                                                                        \
        *cr_tests_tail = &CR_ID_(suite, name, t);                                            \
        cr_tests_tail = &CR_ID_(suite, name, t).next;                                        \
    }                                                                                        \
    static void CR_ID_(suite, name, fn)(void)

#define TestSuite(suite, ...)                                                                \
    static struct cr_suite CR_ID_(suite, suite, s) = { #suite, { __VA_ARGS__ }, NULL };      \
    __attribute__((constructor)) static void CR_ID_(suite, suite, sreg)(void)               \
    {                                                                                        \
        CR_ID_(suite, suite, s).next = cr_suites;                                            \
        cr_suites = &CR_ID_(suite, suite, s);                                                \
    }                                                                                        \
    struct cr_suite

static void cr_print_(const char *file, int line, const char *expr, const char *fmt, va_list ap)
{
    fprintf(stderr, "[----] %s:%d: Assertion Failed\n[----]   %s\n", file, line, expr);
    if (fmt[0]) {
        fputs("[----]   ", stderr);
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
    }
    cr_failed = true;
}

/* No format attribute: an empty message is "" (the plain build checks the formats). */
static void cr_report(const char *file, int line, const char *expr, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cr_print_(file, line, expr, fmt, ap);
    va_end(ap);
}

/* A failed assert ends the test (its .fini still runs), as in Criterion. */
__attribute__((noreturn)) static void cr_report_fatal(const char *file, int line, const char *expr,
                                                      const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cr_print_(file, line, expr, fmt, ap);
    va_end(ap);
    siglongjmp(cr_abort, 1);
}

/* The message arguments are optional: "" joins a format literal or stands alone. */
#define cr_check_(fatal, cond, expr, ...)                                                    \
    ((cond) ? (void)0                                                                        \
            : (fatal) ? cr_report_fatal(__FILE__, __LINE__, expr, "" __VA_ARGS__)            \
                      : cr_report(__FILE__, __LINE__, expr, "" __VA_ARGS__))
#define cr_assert(c, ...) cr_check_(true, (c), #c, __VA_ARGS__)
#define cr_expect(c, ...) cr_check_(false, (c), #c, __VA_ARGS__)
#define cr_assert_not(c, ...) cr_check_(true, !(c), "!(" #c ")", __VA_ARGS__)
#define cr_expect_not(c, ...) cr_check_(false, !(c), "!(" #c ")", __VA_ARGS__)
#define cr_cmp_(fatal, a, op, b, ...) cr_check_(fatal, (a)op(b), #a " " #op " " #b, __VA_ARGS__)
#define cr_assert_eq(a, b, ...) cr_cmp_(true, a, ==, b, __VA_ARGS__)
#define cr_assert_neq(a, b, ...) cr_cmp_(true, a, !=, b, __VA_ARGS__)
#define cr_assert_lt(a, b, ...) cr_cmp_(true, a, <, b, __VA_ARGS__)
#define cr_assert_leq(a, b, ...) cr_cmp_(true, a, <=, b, __VA_ARGS__)
#define cr_assert_gt(a, b, ...) cr_cmp_(true, a, >, b, __VA_ARGS__)
#define cr_assert_geq(a, b, ...) cr_cmp_(true, a, >=, b, __VA_ARGS__)
#define cr_expect_eq(a, b, ...) cr_cmp_(false, a, ==, b, __VA_ARGS__)
#define cr_expect_neq(a, b, ...) cr_cmp_(false, a, !=, b, __VA_ARGS__)
#define cr_expect_lt(a, b, ...) cr_cmp_(false, a, <, b, __VA_ARGS__)
#define cr_expect_leq(a, b, ...) cr_cmp_(false, a, <=, b, __VA_ARGS__)
#define cr_expect_gt(a, b, ...) cr_cmp_(false, a, >, b, __VA_ARGS__)
#define cr_expect_geq(a, b, ...) cr_cmp_(false, a, >=, b, __VA_ARGS__)
#define cr_assert_null(p, ...) cr_check_(true, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_expect_null(p, ...) cr_check_(false, (p) == NULL, #p " == NULL", __VA_ARGS__)
#define cr_assert_not_null(p, ...) cr_check_(true, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_expect_not_null(p, ...) cr_check_(false, (p) != NULL, #p " != NULL", __VA_ARGS__)
#define cr_assert_str_eq(a, b, ...) cr_check_(true, !strcmp((a), (b)), #a " == " #b, __VA_ARGS__)
#define cr_expect_str_eq(a, b, ...) cr_check_(false, !strcmp((a), (b)), #a " == " #b, __VA_ARGS__)
#define cr_assert_fail(...) cr_report_fatal(__FILE__, __LINE__, "fail", "" __VA_ARGS__)
#define cr_expect_fail(...) cr_report(__FILE__, __LINE__, "fail", "" __VA_ARGS__)
#define cr_log_info(...) (fprintf(stderr, "[----] " __VA_ARGS__), fputc('\n', stderr))
/* A skipped test counts as passed, as in Criterion's synthesis. */
#define cr_skip_test(...)                                                                    \
    do {                                                                                     \
        fprintf(stderr, "[SKIP] " __VA_ARGS__);                                              \
        fputc('\n', stderr);                                                                 \
        fflush(NULL);                                                                        \
        _exit(0);                                                                            \
    } while (0)

static const struct cr_opts *cr_suite_opts(const char *suite)
{
    static const struct cr_opts none;
    for (struct cr_suite *s = cr_suites; s; s = s->next)
        if (!strcmp(s->name, suite))
            return &s->opts;
    return &none;
}

/* In the test's own process: suite init, test init, the body, test fini, suite fini. */
static const struct cr_opts *cr_s;

static void cr_child(const struct cr_test *t)
{
    const struct cr_opts *s = cr_s = cr_suite_opts(t->suite);
    if (s->init)
        s->init();
    if (t->opts.init)
        t->opts.init();
    if (!sigsetjmp(cr_abort, 0))
        t->fn();
    if (t->opts.fini)
        t->opts.fini();
    if (cr_s->fini)
        cr_s->fini();
    fflush(NULL);
    _exit(cr_failed ? 1 : 0);
}

static double cr_timeout(const struct cr_test *t)
{
    double s = t->opts.timeout > 0 ? t->opts.timeout : cr_suite_opts(t->suite)->timeout;
    return s > 0 ? s : CR_DEFAULT_TIMEOUT;
}

/* The stacks of every thread of a test that overran, on stderr, where gdb is installed. */
static void cr_dump_stacks(pid_t pid)
{
    char cmd[160];
    snprintf(cmd, sizeof cmd,
             "command -v gdb >/dev/null && timeout 60 gdb -q -batch -nx -p %d "
             "-ex 'thread apply all bt 40' </dev/null >&2 2>&1",
             (int)pid);
    fflush(NULL);
    if (system(cmd) != 0)
        fprintf(stderr, "[----] (no stacks: gdb is not installed or could not attach)\n");
}

/* Waits for the test `pid` until `limit` s have passed: false with its status in *st, or
 * true when it overran and its process group was killed (and reaped). main() has set
 * SIGCHLD back to its default, so the child stays ours to reap; should waitpid fail
 * anyway, the test counts as failed (exit 126), not as passed, and not waited on forever. */
static bool cr_wait(pid_t pid, double limit, int *st)
{
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        pid_t r = waitpid(pid, st, WNOHANG);
        if (r == pid)
            return false;
        if (r < 0 && errno != EINTR) {
            perror("waitpid");
            *st = 126 << 8;
            return false;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if ((double)(now.tv_sec - start.tv_sec) + (now.tv_nsec - start.tv_nsec) / 1e9 > limit)
            break;
        nanosleep(&(struct timespec){ .tv_nsec = 5 * 1000 * 1000 }, NULL);
    }
    cr_dump_stacks(pid);
    kill(-pid, SIGKILL);
    kill(pid, SIGKILL);
    while (waitpid(pid, st, 0) < 0 && errno == EINTR) {
    }
    return true;
}

/* Each test runs in a fresh image of this program (fork, then exec with --cr-run-one
 * SUITE/NAME), as Criterion's workers do: not a fork child of the runner, whose
 * atfork handlers and state it would inherit. */
int main(int argc, char **argv)
{
    const char *filter = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cr-run-one") && i + 1 < argc) {
            for (const struct cr_test *t = cr_tests; t; t = t->next) {
                char full[512];
                snprintf(full, sizeof full, "%s/%s", t->suite, t->name);
                if (!strcmp(full, argv[i + 1]))
                    cr_child(t);
            }
            return 3;
        }
        if (!strcmp(argv[i], "--filter") && i + 1 < argc)
            filter = argv[++i];
        else if (!strncmp(argv[i], "--filter=", 9))
            filter = argv[i] + 9;
    }
    /* Inherited dispositions and masks are the caller's, not the tests': an ignored
     * SIGCHLD would take the tests' statuses away, a blocked signal would change what
     * the signal tests see. */
    signal(SIGCHLD, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int tested = 0, passing = 0, failing = 0, crashing = 0;
    for (const struct cr_test *t = cr_tests; t; t = t->next) {
        char full[512];
        snprintf(full, sizeof full, "%s/%s", t->suite, t->name);
        if (filter && fnmatch(filter, full, 0))
            continue;
        tested++;
        fflush(NULL);
        pid_t pid = fork();
        if (pid < 0) {
            perror("fork");
            return 2;
        }
        if (pid == 0) {
            setpgid(0, 0);
            char *args[] = { argv[0], "--cr-run-one", full, NULL };
            execv("/proc/self/exe", args);
            perror("exec");
            _exit(127);
        }
        setpgid(pid, pid); /* both sides: whichever runs first, the group exists before a kill */
        int st = 0;
        bool timed_out = cr_wait(pid, cr_timeout(t), &st);
        if (timed_out) {
            crashing++;
            fprintf(stderr, "[FAIL] %s::%s: TIMEOUT (still running after %.0f s; killed)\n",
                    t->suite, t->name, cr_timeout(t));
            continue;
        }
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            passing++;
            continue;
        }
        if (WIFSIGNALED(st)) {
            crashing++;
            fprintf(stderr, "[FAIL] %s::%s: CRASH (signal %d)\n", t->suite, t->name, WTERMSIG(st));
        } else {
            failing++;
            fprintf(stderr, "[FAIL] %s::%s (exit %d)\n", t->suite, t->name, WEXITSTATUS(st));
        }
    }
    fprintf(stderr, "[====] Synthesis: Tested: %d | Passing: %d | Failing: %d | Crashing: %d \n",
            tested, passing, failing, crashing);
    return failing || crashing ? 1 : 0;
}

#endif
