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
 */
#include <fnmatch.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
    double timeout = t->opts.timeout > 0 ? t->opts.timeout : s->timeout;
    if (timeout > 0)
        alarm((unsigned)timeout + 1);
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
            char *args[] = { argv[0], "--cr-run-one", full, NULL };
            execv("/proc/self/exe", args);
            perror("exec");
            _exit(127);
        }
        int st = 0;
        while (waitpid(pid, &st, 0) < 0) {
        }
        if (WIFEXITED(st) && WEXITSTATUS(st) == 0) {
            passing++;
            continue;
        }
        if (WIFSIGNALED(st)) {
            crashing++;
            fprintf(stderr, "[FAIL] %s::%s: CRASH (signal %d%s)\n", t->suite, t->name,
                    WTERMSIG(st), WTERMSIG(st) == SIGALRM ? ": timed out" : "");
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
