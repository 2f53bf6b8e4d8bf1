/* test_report.c: `gpumemtrace report` on stored and generated traces: the page is self-contained, its data is summary --json's (tests/report_check.py), it loads in a headless browser (tests/report_browser.py), and bad input is one line and status 2. */
#include "shell_test.h"

static char root[PATH_MAX];

static void setup(void)
{
    shell_setup();
    cr_assert_not_null(getcwd(root, sizeof root));
}

TestSuite(report, .init = setup, .fini = shell_teardown);

static char out[1 << 16], err[1 << 16];

static int run(const char *fmt, const char *arg)
{
    char line[2048];
    snprintf(line, sizeof line, fmt, arg, arg, arg, arg);
    int st = sh("%s", line);
    slurp("out", out, sizeof out);
    slurp("err", err, sizeof err);
    return st;
}

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

Test(report, one_trace_and_a_job_agree_with_the_summary, .timeout = 60)
{
    cr_assert_eq(run("R=%s; $G report --no-symbols -o one.html $R/tests/golden/sample.gmt && "
                     "$G summary --json --no-symbols $R/tests/golden/sample.gmt >one.json && "
                     "python3 $R/tests/report_check.py one.html one.json", root), 0, "%s%s", out, err);
    cr_expect(strstr(out, "1 trace(s), 1 device(s)"), "%s", out);
    cr_assert_eq(run("R=%s; $G report --no-symbols -o job.html $R/tests/golden/demo-r0.gmt "
                     "$R/tests/golden/demo-r1.gmt && $G summary --json --no-symbols "
                     "$R/tests/golden/demo-r0.gmt $R/tests/golden/demo-r1.gmt >job.json && "
                     "python3 $R/tests/report_check.py job.html job.json", root), 0, "%s%s", out, err);
    cr_expect(strstr(out, "2 trace(s), 2 device(s)"), "%s", out);
    /* a page of fewer sites than summary shows is told apart */
    cr_expect_eq(run("R=%s; $G report --no-symbols --top 1 -o top.html $R/tests/golden/sample.gmt && "
                     "python3 $R/tests/report_check.py top.html one.json", root), 1, "%s%s", out, err);
    cr_expect(strstr(out, "sites"), "%s", out);
}

Test(report, the_check_finds_a_wrong_peak_and_a_fetch, .timeout = 60)
{
    cr_assert_eq(run("R=%s; $G report --no-symbols -o one.html $R/tests/golden/sample.gmt && "
                     "$G summary --json --no-symbols $R/tests/golden/sample.gmt >one.json", root), 0, "%s", err);
    /* the peak one byte lower in the data: the check must see it */
    cr_expect_eq(run("R=%s; p=$(python3 -c 'import json;print(json.load(open(\"one.json\"))"
                     "[\"traces\"][0][\"devices\"][0][\"peak_bytes\"])') && "
                     "sed \"s/\\\"peak_bytes\\\":$p,/\\\"peak_bytes\\\":$((p - 1)),/\" one.html >low.html && "
                     "! cmp -s one.html low.html && python3 $R/tests/report_check.py low.html one.json", root),
                 1, "%s%s", out, err);
    cr_expect(strstr(out, "peaks"), "%s", out);
    cr_expect_eq(run("R=%s; sed 's|<head>|<head><script src=\"https://cdn.example/x.js\"></script>|' one.html "
                     ">cdn.html && python3 $R/tests/report_check.py cdn.html one.json", root), 1, "%s%s", out, err);
    cr_expect(strstr(out, "fetches https://cdn.example/x.js"), "%s", out);
}

Test(report, a_big_trace_stays_small_and_keeps_its_peak, .timeout = 180)
{
    cr_assert_eq(run("R=%s; \"$B/bench/gen_trace\" 1000000 big.gmt && "
                     "$G report --no-symbols --max-points 500 -o big.html big.gmt && "
                     "$G summary --json --no-symbols big.gmt >big.json && "
                     "python3 $R/tests/report_check.py big.html big.json 500 && "
                     "test $(stat -c %%s big.html) -lt 2000000", root), 0, "%s%s", out, err);
    /* the limit was what bounded it: a tighter one is exceeded */
    cr_expect_eq(run("R=%s; python3 $R/tests/report_check.py big.html big.json 100", root), 1, "%s", out);
    cr_expect(strstr(out, "more than 100"), "%s", out);
}

Test(report, the_page_loads_in_a_headless_browser, .timeout = 240)
{
    int st = run("R=%s; $G report --no-symbols -o job.html $R/tests/golden/demo-r0.gmt "
                 "$R/tests/golden/demo-r1.gmt && python3 $R/tests/report_browser.py job.html shot.png 2", root);
    if (st == 77)
        cr_skip_test("no chromium installed: %s", out);
    cr_expect_eq(st, 0, "%s%s", out, err);
    /* a page whose script breaks is told apart */
    st = run("R=%s; sed 's|\"use strict\";|\"use strict\"; undefinedName();|' job.html >broken.html && "
             "python3 $R/tests/report_browser.py broken.html b.png 2", root);
    cr_expect_eq(st, 1, "%s%s", out, err);
}

Test(report, bad_input_is_one_line_and_status_2, .timeout = 60)
{
    static const char *const bad[] = {
        "$G report $R/tests/golden/sample.gmt",
        "$G report -o x.html",
        "$G report -o x.html /nonexistent.gmt",
        ": >empty.gmt; $G report -o x.html empty.gmt",
        "printf 'not a trace at all' >junk.gmt; $G report -o x.html junk.gmt",
        "$G report --max-points 2 -o x.html $R/tests/golden/sample.gmt",
        "$G report --bogus -o x.html $R/tests/golden/sample.gmt",
        "$G report -o /nonexistent/dir/x.html $R/tests/golden/sample.gmt",
        "mkdir -p empty; $G report -o x.html empty",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "R=%%s; rm -f x.html; %s", bad[i]);
        int st = run(cmd, root);
        cr_expect_eq(st, 2, "case %zu: %s", i, err);
        cr_expect_eq(lines(err), 1, "case %zu: %s", i, err);
        cr_expect_str_empty(out, "case %zu", i);
        cr_expect_neq(sh("test -e x.html"), 0, "case %zu: a page of nothing", i);
    }
}
