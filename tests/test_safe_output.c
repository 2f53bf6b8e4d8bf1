/* test_safe_output.c: what a user reads is safe: CSV cells run no formula. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "golden/tracebuild.h"
#include "util.h"

#define MiB (1ull << 20)

TestSuite(safe_output, .fini = cli_tmpdirs_remove);

/* the runs' set-up: none, but a bound on their time */
static struct cli_io io = {.timeout_s = 60};

Test(safe_output, csv_cells_that_would_run_are_inert_and_numbers_stay_numbers)
{
    static const struct { const char *in, *out; } cases[] = {
        {"=1+2", "\"'=1+2\""},       {"+SUM(A1)", "\"'+SUM(A1)\""}, {"-2+3", "\"'-2+3\""},
        {"@cmd", "\"'@cmd\""},       {"\tx", "\"'\tx\""},           {"\rx", "\"'\rx\""},
        {"=\"a\",b", "\"'=\"\"a\"\",b\""},
        {"-5", "-5"},                {"+1.5e3", "+1.5e3"},          {"-0.25", "-0.25"},
        {"-", "\"'-\""},             {"-e5", "\"'-e5\""},           {"-1e", "\"'-1e\""},
        {"node-01", "node-01"},      {"a,b", "\"a,b\""},            {" x", "\" x\""},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64] = "";
        FILE *f = fmemopen(buf, sizeof buf, "w");
        cr_assert_not_null(f);
        gmt_fput_csv_cell(f, cases[i].in);
        fclose(f);
        cr_expect_str_eq(buf, cases[i].out, "case %zu", i);
    }
}

/* A trace whose host and module would run as formulas: no cell of the export's or the
 * summary's CSV files does (tests/export_check.py inert). */
Test(safe_output, csv_files_hold_no_formula, .timeout = 60)
{
    struct tb b = {0};
    tb_sample(&b);
    uint8_t *host = memmem(b.p, b.len, "node-01", 7);
    uint8_t *mod = memmem(b.p, b.len, "/libnccl.so.2", 13);
    cr_assert(host && mod);
    memcpy(host, "=1+2+3", 7);
    mod[1] = '@';
    const char *d = cli_tmpdir();
    char path[PATH_MAX + 16], ex[PATH_MAX + 16], sum[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/t.gmt", d);
    snprintf(ex, sizeof ex, "%s/export", d);
    snprintf(sum, sizeof sum, "%s/summary", d);
    cr_assert_eq(tb_write(&b, path), 0);
    tb_free(&b);
    struct result res;
    CLI_RUN(&res, &io, "export", "--format", "csv", "--no-symbols", "-o", ex, path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    CLI_RUN(&res, &io, "summary", "--csv", "--no-symbols", "-o", sum, path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    for (int k = 0; k < 2; k++) {
        cli_exec(&res, &io, (const char *const[]){"python3", "tests/export_check.py", "inert", k ? sum : ex,
                                                  "-", NULL});
        cr_expect_eq(res.status, 0, "%s: %s%s", k ? "summary --csv" : "export", res.out, res.err);
        cr_expect(strstr(res.out, "'=1+2+3") && strstr(res.out, "'@ibnccl"), "%s", res.out);
    }
}
