/* test_usage.c: the CLI at the edges of its use: operands (globs, empty directories), selections that match nothing, narrow widths. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"

static struct result res;

TestSuite(usage, .fini = cli_tmpdirs_remove);

#define RUN(res, ...) CLI_RUN((res), &(struct cli_io){.timeout_s = 60}, __VA_ARGS__)

/* The stored traces of `make demo`'s two ranks (tests/golden), copied into a new
 * directory; its path. */
static const char *demo_dir(void)
{
    const char *d = cli_tmpdir();
    char cmd[PATH_MAX * 2];
    snprintf(cmd, sizeof cmd, "cp tests/golden/demo-r0.gmt tests/golden/demo-r1.gmt '%s'/", d);
    cr_assert_eq(system(cmd), 0);
    return d;
}

/* ---- operands ---- */

/* A glob the shell left alone (quoted, or from a script) is matched as the shell would
 * have: the same traces, the same output; one that matches nothing is an error. */
Test(usage, a_quoted_glob_reads_what_the_shell_would_have)
{
    const char *d = demo_dir();
    char all[PATH_MAX], one[PATH_MAX], none[PATH_MAX], first[PATH_MAX];
    snprintf(all, sizeof all, "%s/*.gmt", d);
    snprintf(one, sizeof one, "%s/demo-r[0].gmt", d);
    snprintf(none, sizeof none, "%s/*.nope", d);
    snprintf(first, sizeof first, "%s/demo-r0.gmt", d);
    RUN(&res, "summary", "--no-symbols", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    static char want[sizeof res.out];
    strcpy(want, res.out);
    RUN(&res, "summary", "--no-symbols", all);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect_str_eq(res.out, want, "the glob read other traces than the directory");
    RUN(&res, "summary", "--no-symbols", first);
    strcpy(want, res.out);
    RUN(&res, "summary", "--no-symbols", one);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect_str_eq(res.out, want);
    RUN(&res, "merge", "--no-symbols", all);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "merge: 2 trace(s)"), "%s", res.out);
    RUN(&res, "summary", none);
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "*.nope: no file matches\n"), "%s", res.err);
    cr_expect_eq(lines(res.err), 1, "%s", res.err);
    /* a file whose name holds a '*' is that file, not a pattern */
    char odd[PATH_MAX], cmd[PATH_MAX * 2];
    snprintf(odd, sizeof odd, "%s/odd*.gmt", d);
    snprintf(cmd, sizeof cmd, "cp tests/golden/demo-r0.gmt '%s'", odd);
    cr_assert_eq(system(cmd), 0);
    RUN(&res, "summary", "--no-symbols", odd);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "summary of ") && !strstr(res.out, "of a job"), "%s", res.out);
}

/* Nothing to merge: the reason, and no table. */
Test(usage, merge_of_nothing_prints_only_why)
{
    const char *d = cli_tmpdir();
    RUN(&res, "merge", d);
    cr_expect_eq(res.status, 2);
    cr_expect_str_eq(res.out, "");
    cr_expect(strstr(res.err, "no traces (*.gmt) in this directory"), "%s", res.err);
    cr_expect_eq(lines(res.err), 1, "%s", res.err);
    char bad[PATH_MAX], cmd[PATH_MAX + 32];
    snprintf(bad, sizeof bad, "%s/bad.gmt", d);
    snprintf(cmd, sizeof cmd, "echo junk > '%s'", bad);
    cr_assert_eq(system(cmd), 0);
    RUN(&res, "merge", "--json", d);
    cr_expect_eq(res.status, 2);
    cr_expect_str_eq(res.out, "");
    cr_expect(strstr(res.err, "bad magic"), "%s", res.err);
}
