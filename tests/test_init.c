/* test_init.c: options hold from the very first hook, also one reached before the tracer's constructor ran. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char build_dir[PATH_MAX], work[PATH_MAX];

static void setup(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert_gt(n, 0);
    exe[n] = 0;
    snprintf(build_dir, sizeof build_dir, "%s", dirname(dirname(exe)));
    snprintf(work, sizeof work, "/tmp/gmt-test-init-XXXXXX");
    cr_assert_not_null(mkdtemp(work));
}

static void teardown(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(init, .init = setup, .fini = teardown);

static int run_prog(const char *env)
{
    char cmd[4 * PATH_MAX];
    snprintf(cmd, sizeof cmd,
             "cd '%s' && %s LD_PRELOAD='%s/libgpumemtrace.so' '%s/initprogs/early_ctor_main' >out 2>err",
             work, env, build_dir, build_dir);
    int st = system(cmd);
    cr_assert(WIFEXITED(st));
    return WEXITSTATUS(st);
}

static int files_in(const char *dir)
{
    DIR *d = opendir(dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strstr(e->d_name, ".gmt") != NULL;
    closedir(d);
    return n;
}

Test(init, off_holds_for_a_hook_before_our_constructor)
{
    cr_expect_eq(run_prog("GPUMEMTRACE_OFF=1"), 0);
    cr_expect_eq(files_in(work), 0, "GPUMEMTRACE_OFF=1 must leave no trace file");
}

Test(init, output_pattern_holds_for_a_hook_before_our_constructor)
{
    char env[PATH_MAX + 64];
    snprintf(env, sizeof env, "mkdir -p sub && GPUMEMTRACE_OUTPUT='%s/sub/early.%%p.gmt'", work);
    cr_expect_eq(run_prog(env), 0);
    char sub[PATH_MAX + 8];
    snprintf(sub, sizeof sub, "%s/sub", work);
    cr_expect_eq(files_in(sub), 1, "the trace goes where GPUMEMTRACE_OUTPUT says");
    cr_expect_eq(files_in(work), 0, "and not to the default name");
}
