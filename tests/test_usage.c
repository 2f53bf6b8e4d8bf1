/* test_usage.c: the CLI at the edges of its use: operands (globs, empty directories), selections that match nothing, narrow widths, figures taken at other moments or over other ranks. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"
#include "golden/tracebuild.h"

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

/* ---- widths ---- */

/* The NCCL calls table at any width: the footnote explains the columns shown, no other,
 * and names those a narrow width left out, with the width that shows them all. */
Test(usage, a_narrow_table_explains_only_the_columns_it_shows)
{
    static const char *const cols[] = {"later dev", "allocs(proxy)", "host time"};
    int full = 0;
    for (int w = 40; w <= 200; w += 4) {
        char width[16];
        snprintf(width, sizeof width, "%d", w);
        RUN(&res, "summary", "--no-symbols", "--width", width, "tests/golden/demo-r0.gmt");
        cr_assert_eq(res.status, 0, "%s", res.err);
        const char *t = strstr(res.out, "\nNCCL calls");
        cr_assert(t, "%s", res.out);
        const char *head = strchr(t + 1, '\n') + 1, *end = strstr(head, "\n\n");
        cr_assert(end, "%s", t);
        size_t hl = strcspn(head, "\n");
        char table[8192];
        snprintf(table, sizeof table, "%.*s", (int)(end - head), head);
        char left[512] = "";
        const char *lo = strstr(table, "  left out at width ");
        if (lo)
            snprintf(left, sizeof left, "%.*s", (int)strcspn(lo, "\n"), lo);
        bool any_gone = false;
        for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
            bool shown = memmem(head, hl, cols[c], strlen(cols[c])) != NULL;
            any_gone |= !shown;
            cr_expect(!shown == !!strstr(left, cols[c]), "width %d: %s %s, left out: '%s'", w,
                      cols[c], shown ? "shown" : "not shown", left);
        }
        cr_expect(!!strstr(table, "host time = mean") == !!memmem(head, hl, "host time", 9),
                  "width %d: host time explained iff shown:\n%s", w, table);
        cr_expect(!!strstr(table, "(proxy) = allocations") == !!memmem(head, hl, "(proxy)", 7),
                  "width %d: (proxy) explained iff shown:\n%s", w, table);
        cr_expect(any_gone == (lo != NULL), "width %d:\n%s", w, table);
        if (lo) {
            int want = 0;
            cr_expect_eq(sscanf(strstr(lo, "(--width ") + 9, "%d", &want), 1, "%s", lo);
            cr_expect(full == 0 || want == full, "width %d: %d, not %d", w, want, full);
            full = want;
            cr_expect_gt(want, w, "width %d: %s", w, lo);
        } else if (full) {
            cr_expect_geq(w, full, "every column at width %d, below %d", w, full);
        }
    }
    cr_expect_gt(full, 0, "no width left a column out");
}

/* ---- figures of two moments ---- */

/* A trace on device 0: 100 MiB allocated (the peak), then a sample `later` ns after it
 * that says 300 MiB in use; a path to it in a new directory. */
static const char *two_moments(uint32_t later)
{
    struct tb b = {0};
    tb_process_min(&b);
    tb_thread_on_device0(&b, 100, 1000);
    tb_alloc_at(&b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0, 0x1000000, 100 * TB_MIB, 0, -1, 1000);
    tb_meminfo(&b, GMT_MEMINFO_FIRST, GMT_MEMINFO_SRC_CUMEMGETINFO, 300 * TB_MIB, GMT_MEMINFO_UNKNOWN,
               later);
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/t.gmt", cli_tmpdir());
    cr_assert_eq(tb_write(&b, path), 0);
    tb_free(&b);
    return path;
}

/* The peak row's untracked and dev used come from the largest sample: when that is not
 * the peak's instant, the row says when it was and what was tracked then, so that its
 * figures add up; a sample at the peak needs no such line. */
Test(usage, a_row_of_figures_from_another_moment_says_when)
{
    RUN(&res, "summary", "--no-symbols", two_moments(2500000));
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "+200 MiB    300 MiB"), "%s", res.out);
    cr_expect(strstr(res.out, "\n         untracked, dev used: largest sample at 0.003 s, 2.5 ms "
                              "after the peak; tracked then 100 MiB\n"), "%s", res.out);
    RUN(&res, "summary", "--no-symbols", two_moments(0));
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "+200 MiB    300 MiB"), "%s", res.out);
    cr_expect(!strstr(res.out, "largest sample at"), "%s", res.out);
    RUN(&res, "merge", "--no-symbols", two_moments(2500000));
    cr_expect(strstr(res.out, "\n  dev used, untracked: at each rank's largest device-used sample, "
                              "not at its peak\n"), "%s", res.out);
}

/* check --aggregate's peak and leak are over each rank's own device: it names them
 * (one device, or the lowest and highest), not "device ?". */
Test(usage, an_aggregate_names_the_ranks_devices)
{
    const char *d = demo_dir(); /* rank 0 on device 0, rank 1 on device 1 */
    char bl[PATH_MAX];
    snprintf(bl, sizeof bl, "%s/b.json", d);
    RUN(&res, "check", "--write-baseline", bl, d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    RUN(&res, "check", "--baseline", bl, "--aggregate", "--verbose", d);
    cr_expect_eq(res.status, 0, "%s%s", res.out, res.err);
    cr_expect(!strstr(res.out, "device ?"), "%s", res.out);
    /* the two ranks alike: each check's min, median and max agree, one row */
    cr_expect_eq(count_of(res.out, "all ranks  peak devices 0-1 "), 1, "%s", res.out);
    cr_expect_eq(count_of(res.out, "all ranks  leak devices 0-1 "), 1, "%s", res.out);
    /* one rank: its device */
    char r0[PATH_MAX];
    snprintf(r0, sizeof r0, "%s/demo-r0.gmt", d);
    snprintf(bl, sizeof bl, "%s/b0.json", d);
    RUN(&res, "check", "--write-baseline", bl, r0);
    RUN(&res, "check", "--baseline", bl, "--aggregate", "--verbose", r0);
    cr_expect(strstr(res.out, "all ranks  peak device 0 "), "%s", res.out);
}
