/* test_hostile.c: the CLI on traces made to hurt it: values beyond what a trace can hold are stopped where the trace is read, so no command's arithmetic sees them. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "cli_run.h"
#include "golden/tracebuild.h"
#include "trace.h"

static struct result res;

TestSuite(hostile, .fini = cli_tmpdirs_remove);

#define RUN(res, ...) CLI_RUN((res), &(struct cli_io){.timeout_s = 60}, __VA_ARGS__)

static const char *beyond(uint64_t anchor, uint64_t t, int32_t device)
{
    struct tb b = {0};
    tb_beyond(&b, anchor, t, device);
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/t.gmt", cli_tmpdir());
    cr_assert_eq(tb_write(&b, path), 0);
    tb_free(&b);
    return path;
}

/* Every command that reads a trace, on `path`: the exit status each must give and a
 * line its stderr must hold (NULL: empty). Under SAN=1 an overflow anywhere is a crash. */
static void every_command(const char *path, int status, const char *says)
{
    const char *d = cli_tmpdir();
    char out[PATH_MAX], bl[PATH_MAX];
    snprintf(bl, sizeof bl, "%s/b.json", d);
    static const char *const cmds[][6] = {
        {"summary", "--no-symbols"},
        {"summary", "--no-symbols", "--json"},
        {"report", "--no-symbols", "-o", "OUT/r.html"},
        {"export", "--no-symbols", "--format", "chrome", "-o", "OUT/c.json"},
        {"export", "--no-symbols", "--format", "sqlite", "-o", "OUT/s.db"},
        {"export", "--no-symbols", "--format", "csv", "-o", "OUT/csv"},
        {"export", "--no-symbols", "--format", "folded"},
        {"explain", "--no-symbols"},
        {"merge", "--no-symbols"},
        {"check", "--write-baseline", "OUT/b.json"},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        const char *argv[10] = {"gpumemtrace"};
        size_t n = 1;
        for (size_t k = 0; k < 6 && cmds[i][k]; k++) {
            if (!strncmp(cmds[i][k], "OUT/", 4)) {
                snprintf(out, sizeof out, "%s/%s", d, cmds[i][k] + 4);
                argv[n++] = out;
            } else {
                argv[n++] = cmds[i][k];
            }
        }
        argv[n++] = path;
        argv[n] = NULL;
        cli_exec(&res, &(struct cli_io){.timeout_s = 60}, argv);
        cr_expect_eq(res.status, status, "%s %s: %d %s", cmds[i][0], cmds[i][1], res.status, res.err);
        if (says)
            cr_expect(strstr(res.err, says), "%s %s: %s", cmds[i][0], cmds[i][1], res.err);
        else
            cr_expect_str_eq(res.err, "", "%s %s", cmds[i][0], cmds[i][1]);
    }
    (void)bl;
}

/* A PROCESS anchor past 2^63 ns: the anchor every relative time is measured from. */
Test(hostile, an_anchor_past_2_to_the_63_is_a_corrupt_trace, .timeout = 120)
{
    every_command(beyond((1ull << 63) + 5, 1000, 0), 2,
                  ": offset 32: PROCESS at 9223372036854775813 ns is beyond the 2^62 ns a trace "
                  "may span: the trace is corrupt\n");
    /* the stored regression input: the same */
    every_command("tests/fuzz/regress/summary/process-anchor-past-2p63.gmt", 2,
                  ": offset 32: PROCESS at 9223372036854775813 ns is beyond");
}

/* A record time near 2^63 (a THREAD record's absolute time; an ALLOC's dt past it). */
Test(hostile, a_time_near_2_to_the_63_is_a_corrupt_trace, .timeout = 120)
{
    every_command(beyond(1000, (1ull << 63) - 100, 0), 2,
                  ": offset 112: THREAD at 9223372036854775708 ns is beyond");
    every_command("tests/fuzz/regress/summary/thread-time-near-2p63.gmt", 2,
                  ": offset 112: THREAD at 9223372036854775708 ns is beyond");
    /* at the bound: read as it is */
    every_command(beyond(1000, GMT_TIME_MAX - 2000, 0), 0, NULL);
}

/* A CUCTX device ordinal of 0x7fffffff, or any beyond GMT_DEVICE_MAX: read as unknown. */
Test(hostile, a_device_ordinal_beyond_any_machine_is_unknown, .timeout = 120)
{
    every_command(beyond(1000, 2000, 0x7fffffff), 0, NULL);
    every_command("tests/fuzz/regress/summary/cuctx-device-int32-max.gmt", 0, NULL);
    RUN(&res, "summary", "--no-symbols", beyond(1000, 2000, 5000));
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "\n  ?          64 MiB "), "device 5000 is unknown: %s", res.out);
    RUN(&res, "summary", "--no-symbols", beyond(1000, 2000, GMT_DEVICE_MAX));
    cr_expect(strstr(res.out, "\n  4095       64 MiB "), "device 4095 is one: %s", res.out);
}
