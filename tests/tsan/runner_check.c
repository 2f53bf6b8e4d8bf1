/* tests/tsan/runner_check.c: the TSan suites' runner (criterion/criterion.h) against tests
 * that hang where an alarm can't reach them. `make tsan-test` runs it first
 * (mk/tsan.mk, tsan-runner-check): it must come back within its limits, name each
 * overrun TIMEOUT, kill what the hung tests left behind, and count the rest as
 * Criterion would. */
#include "criterion/criterion.h"


TestSuite(runner, .timeout = 2);

Test(runner, passes) { cr_assert_eq(1 + 1, 2); }

Test(runner, fails) { cr_expect_eq(1 + 1, 3, "counted as failing"); }

/* Every signal blocked, then a wait with no end: only SIGKILL from outside ends it. */
Test(runner, hangs_with_every_signal_blocked)
{
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    for (;;)
        pause();
}

/* A child that outlives the test: the runner kills the test's whole process group. The
 * child's pid goes to $RUNNER_CHECK_PIDFILE, for the check that it is gone. */
Test(runner, hangs_with_a_child, .timeout = 1)
{
    pid_t pid = fork();
    if (pid == 0)
        for (;;)
            pause();
    const char *path = getenv("RUNNER_CHECK_PIDFILE");
    FILE *f = path ? fopen(path, "w") : NULL;
    if (f) {
        fprintf(f, "%d\n", (int)pid);
        fclose(f);
    }
    signal(SIGALRM, SIG_IGN);
    for (;;)
        pause();
}
