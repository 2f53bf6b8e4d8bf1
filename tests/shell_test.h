/* shell_test.h: for suites that run commands: the build directory, a scratch directory, a shell runner, traces counted. */
#ifndef GMT_SHELL_TEST_H
#define GMT_SHELL_TEST_H

#include <criterion/criterion.h>
#include <dirent.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* build_dir: BUILD/tests/test_x -> BUILD. work: a fresh directory per test. */
static char build_dir[PATH_MAX];
static char work[PATH_MAX];

static inline void shell_setup(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert_gt(n, 0);
    exe[n] = 0;
    snprintf(build_dir, sizeof build_dir, "%s", dirname(dirname(exe)));
    snprintf(work, sizeof work, "/tmp/gmt-test-sh-XXXXXX");
    cr_assert_not_null(mkdtemp(work));
}

static inline void shell_teardown(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    cr_expect_eq(system(cmd), 0);
}

/* Runs a shell command line in the work directory, with the CLI as $G and the build
 * directory as $B; returns its exit status (or 128+signal),
 * stdout and stderr into files under work. */
static inline int sh(const char *fmt, ...)
{
    char line[4096], cmd[4096 + 2 * PATH_MAX + 128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    snprintf(cmd, sizeof cmd, "B='%s'; G=\"$B/gpumemtrace\"; W='%s'; cd \"$W\" && { %s ; } >\"$W/out\" 2>\"$W/err\"",
             build_dir, work, line);
    int st = system(cmd);
    cr_assert(WIFEXITED(st), "the shell died");
    return WEXITSTATUS(st);
}

static inline void slurp(const char *name, char *buf, size_t cap)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", work, name);
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = 0;
    if (f)
        fclose(f);
}

static inline int count_traces(const char *dir)
{
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", work, dir);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name); /* traces, not the names beside them (x.gmt.names) */
        n += l > 4 && !strcmp(e->d_name + l - 4, ".gmt");
    }
    closedir(d);
    return n;
}

#endif
