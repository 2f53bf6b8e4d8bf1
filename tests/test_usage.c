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

/* ---- selections ---- */

/* A selection that matches nothing in any trace read is exit 2 with what there is to
 * select, and no report; one that matches in some trace of a job is a report. */
Test(usage, a_selection_that_matches_nothing_is_an_error_listing_what_exists)
{
    const char *d = demo_dir();
    char r0[PATH_MAX];
    snprintf(r0, sizeof r0, "%s/demo-r0.gmt", d);
    static const struct {
        const char *opt, *val, *cmd, *want;
        bool job;
    } cases[] = {
        {"--device", "7", "summary", "--device 7 matches no device in the 2 traces read "
                                     "(devices there: 0, 1)\n", true},
        {"--device", "1", "summary", "--device 1 matches no device in the trace read "
                                     "(devices there: 0)\n", false},
        {"--op", "Nope", "summary", "--op Nope matches no NCCL call in the trace read (calls "
                                    "there: CommInitRank, Group(AllReduce), AllReduce, AllGather, "
                                    "CommDestroy)\n", false},
        {"--step", "nope", "summary", "--step nope matches no NVTX range in the 2 traces read "
                                      "(ranges there: none)\n", true},
        {"--device", "7", "export", "--device 7 matches no device in the 2 traces read "
                                    "(devices there: 0, 1)\n", true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *what = cases[i].job ? d : r0;
        if (!strcmp(cases[i].cmd, "export"))
            RUN(&res, "export", "--no-symbols", "--format", "folded", cases[i].opt, cases[i].val, what);
        else
            RUN(&res, "summary", "--no-symbols", cases[i].opt, cases[i].val, what);
        cr_expect_eq(res.status, 2, "case %zu: %d %s", i, res.status, res.err);
        cr_expect_str_eq(res.out, "", "case %zu: a report of nothing", i);
        cr_expect(strstr(res.err, cases[i].want), "case %zu: %s", i, res.err);
        cr_expect_eq(lines(res.err), 1, "case %zu: %s", i, res.err);
    }
    /* the JSON document too: none rather than an empty one */
    RUN(&res, "summary", "--json", "--device", "7", r0);
    cr_expect_eq(res.status, 2);
    cr_expect_str_eq(res.out, "");
    /* matched somewhere: a report; an op matches groups that hold it, in any case */
    RUN(&res, "summary", "--no-symbols", "--device", "1", d);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "gpumemtrace summary of a job"), "%s", res.out);
    RUN(&res, "summary", "--no-symbols", "--op", "allreduce", r0);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "Group(AllReduce)") && !strstr(res.out, "  AllGather "), "%s", res.out);
    RUN(&res, "export", "--no-symbols", "--format", "folded", "--device", "1", d);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "demo-r1.gmt;") && !strstr(res.out, "demo-r0.gmt;"), "%s", res.out);
    /* the NVTX ranges a --step could name */
    RUN(&res, "summary", "--no-symbols", "--step", "nope", "tests/golden/nvtx.gmt");
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "(ranges there: epoch, lib::forward, train_step)\n"), "%s", res.err);
    RUN(&res, "summary", "--no-symbols", "--step", "^epoch$", "tests/golden/nvtx.gmt");
    cr_expect_eq(res.status, 0, "%s", res.err);
}
