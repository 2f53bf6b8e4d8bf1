/* test_report.c: `gpumemtrace report` on stored and generated traces: the page is self-contained, its data is summary --json's and explain --json's (tests/report_check.py), it loads in a headless browser (tests/report_browser.py), its mouse zoom and pan work there (tests/report_mouse.py), and bad input is one line and status 2. */
#include "shell_test.h"

#include <inttypes.h>

#include "util.h"

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
                     "$G explain --json --no-symbols $R/tests/golden/sample.gmt >one.x.json && "
                     "python3 $R/tests/report_check.py one.html one.json --explain one.x.json", root),
                 0, "%s%s", out, err);
    cr_expect(strstr(out, "1 trace(s), 1 device(s), most points: 3, explain checked"), "%s", out);
    cr_assert_eq(run("R=%s; J=\"$R/tests/golden/demo-r0.gmt $R/tests/golden/demo-r1.gmt\"; "
                     "$G report --no-symbols -o job.html $J && $G summary --json --no-symbols $J >job.json && "
                     "$G explain --json --no-symbols $J >job.x.json && "
                     "python3 $R/tests/report_check.py job.html job.json --explain job.x.json", root),
                 0, "%s%s", out, err);
    cr_expect(strstr(out, "2 trace(s), 2 device(s)"), "%s", out);
    /* NVTX ranges on their lane */
    cr_assert_eq(run("R=%s; $G report --no-symbols -o nv.html $R/tests/golden/nvtx.gmt && "
                     "$G summary --json --no-symbols $R/tests/golden/nvtx.gmt >nv.json && "
                     "python3 $R/tests/report_check.py nv.html nv.json && grep -c '\"occurrences\":9,' nv.html",
                     root), 0, "%s%s", out, err);
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

/* Each new table of the page is checked: a number of it changed is seen. */
Test(report, the_check_finds_wrong_tables, .timeout = 60)
{
    cr_assert_eq(run("R=%s; J=\"$R/tests/golden/demo-r0.gmt $R/tests/golden/demo-r1.gmt\"; "
                     "$G report --no-symbols -o job.html $J && $G summary --json --no-symbols $J >job.json && "
                     "$G explain --json --no-symbols $J >job.x.json && "
                     "$G report --no-symbols -o one.html $R/tests/golden/sample.gmt && "
                     "$G summary --json --no-symbols $R/tests/golden/sample.gmt >one.json", root), 0, "%s", err);
    static const struct { const char *page, *sed, *says; } bad[] = {
        /* a group of explain's table: 20 MiB of receive buffers made 10 MiB */
        {"job", "s/\\(\"bytes\": \\)20971520/\\110485760/", "NCCL table's communicators"},
        /* a rank's row: its NCCL bytes one byte more */
        {"job", "s/\\(\"nccl_bytes\":\\)31457280/\\131457281/", "rank 0: peak, NCCL"},
        /* the icicle: a site's bytes at the peak one byte more */
        {"one", "s/\\(\"stack\":1,\"bytes\":\\)67108864/\\167108865/", "icicle of"},
        /* a leak's bytes */
        {"one", "s/\\(\"leaks\":\\[{\"live_at_end_bytes\":\\)10485760/\\11/", "leaks"},
        /* a failure's size */
        {"one", "s/1099511627776,1,/1099511627775,1,/", "failures"},
        /* a first call's bytes */
        {"one", "s/\\(\"first_tracked_bytes\":\\)10485760/\\10/", "first calls"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cmd[2048];
        snprintf(cmd, sizeof cmd,
                 "R=%%s; sed '%s' %s.html >bad.html && ! cmp -s %s.html bad.html && "
                 "python3 $R/tests/report_check.py bad.html %s.json%s",
                 bad[i].sed, bad[i].page, bad[i].page, bad[i].page,
                 !strcmp(bad[i].page, "job") ? " --explain job.x.json" : "");
        cr_expect_eq(run(cmd, root), 1, "case %zu: %s%s", i, out, err);
        cr_expect(strstr(out, bad[i].says), "case %zu: %s", i, out);
    }
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
    int st = run("R=%s; $G report --no-symbols --every-rank -o job.html $R/tests/golden/demo-r0.gmt "
                 "$R/tests/golden/demo-r1.gmt && python3 $R/tests/report_browser.py job.html shot.png 2", root);
    if (st == 77)
        cr_skip_test("no chromium installed: %s", out);
    cr_expect_eq(st, 0, "%s%s", out, err);
    /* a page whose script breaks is told apart */
    st = run("R=%s; sed 's|\"use strict\";|\"use strict\"; undefinedName();|' job.html >broken.html && "
             "python3 $R/tests/report_browser.py broken.html b.png 2", root);
    cr_expect_eq(st, 1, "%s%s", out, err);
}

Test(report, mouse_zoom_and_pan_work_in_a_browser, .timeout = 240)
{
    int st = run("R=%s; $G report --no-symbols --every-rank -o job.html $R/tests/golden/demo-r0.gmt "
                 "$R/tests/golden/demo-r1.gmt && python3 $R/tests/report_mouse.py job.html 2", root);
    if (st == 77)
        cr_skip_test("no chromium, chromedriver or selenium: %s", out);
    cr_expect_eq(st, 0, "%s%s", out, err);
    cr_expect(strstr(out, "2 chart(s); drag"), "%s", out);
    cr_expect_eq(run("R=%s; $G report --no-symbols -o nv.html $R/tests/golden/nvtx.gmt && "
                     "python3 $R/tests/report_mouse.py nv.html 1", root), 0, "%s%s", out, err);
    /* a page whose shift-drag zooms instead of panning, one whose wheel zooms by another
     * factor, one that asks the network for an image: each is told apart */
    static const struct { const char *sed, *says; } bad[] = {
        {"s|pan: ev.shiftKey|pan: false|", "pan's start"},
        {"s|ev.deltaY > 0 ? 1.25 : 0.8|ev.deltaY > 0 ? 1.25 : 0.7|", "wheel zoom's start"},
        {"s|\"use strict\";|\"use strict\"; new Image().src = \"http://gmt.invalid/x.png\";|", "asked the network"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "R=%%s; sed '%s' job.html >bad.html && ! cmp -s job.html bad.html && "
                 "python3 $R/tests/report_mouse.py bad.html 2", bad[i].sed);
        cr_expect_eq(run(cmd, root), 1, "case %zu: %s%s", i, out, err);
        cr_expect(strstr(out, bad[i].says), "case %zu: %s", i, out);
    }
}

/* How the page looks, as layout facts the browser reads (tests/report_layout.py): round
 * ticks in one unit per axis, NCCL labels inside the plot and apart, untracked named in
 * the legend and the chart, no start code atop the icicle, the demo's two ranks alike
 * drawn once under their group's name (and both with --every-rank). Pages with each
 * of those broken are told apart. */
Test(report, the_page_draws_round_ticks_whole_labels_and_ranks_alike_once, .timeout = 300)
{
    int st = run("R=%s; $G report --no-symbols -o job.html $R/tests/golden/demo-r0.gmt $R/tests/golden/demo-r1.gmt "
                 "&& python3 $R/tests/report_layout.py job.html --sections 1 --alike 'ranks 0-1' --untracked", root);
    if (st == 77)
        cr_skip_test("no chromium, chromedriver or selenium: %s", out);
    cr_expect_eq(st, 0, "%s%s", out, err);
    cr_expect_eq(run("R=%s; $G report --no-symbols --every-rank -o all.html $R/tests/golden/demo-r0.gmt "
                     "$R/tests/golden/demo-r1.gmt && python3 $R/tests/report_layout.py all.html --sections 2", root),
                 0, "%s%s", out, err);
    static const struct { const char *sed, *says; } bad[] = {
        {"s/return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) \\* p;/return raw;/", "times a power of ten"},
        {"s/if (a < lo || b > hi || placed/if (a < lo || placed/", "outside the plot"},
        {"s/while (k < s.frames.length - 1 \\&\\& START.test/while (false \\&\\& START.test/", "start code"},
        {"s/if (R \\&\\& R.drawn === false) return;//", "section(s) drawn"},
        {"s/if (x1 - x0 > 120 \\&\\& gap > bestGap)/if (false)/", "untracked gap is not labelled"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char cmd[1024];
        snprintf(cmd, sizeof cmd, "R=%%s; sed '%s' job.html >bad.html && ! cmp -s job.html bad.html && "
                 "python3 $R/tests/report_layout.py bad.html --sections 1 --untracked", bad[i].sed);
        cr_expect_eq(run(cmd, root), 1, "case %zu: %s%s", i, out, err);
        cr_expect(strstr(out, bad[i].says), "case %zu: %s", i, out);
    }
}

/* The page's byte formatter (its JavaScript) prints each size as the CLI does: halves
 * (1.625 GiB), the edges of a unit (1023.5 KiB), negative sizes, sizes above 2^53. */
Test(report, the_page_prints_sizes_as_the_cli_does, .timeout = 120)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/sizes.tsv", work);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int u = 0; u < 6; u++)
        for (uint64_t j = 0; j < 8 * 1100; j += 1 + (j > 800) * 6) {
            uint64_t v = (j << (10 * u)) / 8; /* in eighths of the unit: every kind of half */
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            uint64_t r = x >> (x & 63);
            for (int k = 0; k < 2; k++) {
                uint64_t b = k ? r : v;
                char t[GMT_FMT_LEN], s[GMT_FMT_LEN];
                fprintf(f, "%" PRIu64 "\t%s\n", b, gmt_fmt_bytes(t, sizeof t, b));
                if (b && b <= INT64_MAX)
                    fprintf(f, "-%" PRIu64 "\t%s\n", b, gmt_fmt_sbytes(s, sizeof s, -(int64_t)b));
            }
        }
    cr_assert_eq(fclose(f), 0);
    int st = run("R=%s; $G report --no-symbols -o p.html $R/tests/golden/demo-r0.gmt && "
                 "python3 $R/tests/report_numbers.py p.html sizes.tsv", root);
    if (st == 77)
        cr_skip_test("neither node nor chromium: %s", out);
    cr_expect_eq(st, 0, "%s%s", out, err);
    cr_expect(strstr(out, "values print alike"), "%s", out);
    /* the pytest plugin's messages too */
    st = run("R=%s; PYTHONPATH=$R/python python3 -c 'import sys\n"
             "from gpumemtrace.pytest_plugin import human\n"
             "rows = [l.rstrip(\"\\n\").split(\"\\t\") for l in open(sys.argv[1])]\n"
             "bad = [(v, t, human(int(v))) for v, t in rows if human(int(v)) != t]\n"
             "print(len(rows), \"sizes,\", len(bad), \"differ\", bad[:5])\n"
             "sys.exit(1 if bad else 0)' sizes.tsv", root);
    cr_expect_eq(st, 0, "%s%s", out, err);
}

/* A '<' in the trace's strings (here its host name) can't end the page's <script>: in
 * the data it stands as \u003c. */
Test(report, a_host_name_with_a_tag_stays_inside_the_data, .timeout = 60)
{
    cr_assert_eq(run("R=%s; python3 -c \"import sys; d = open(sys.argv[1], 'rb').read(); "
                     "open('h.gmt', 'wb').write(d.replace(b'node-01', b'a</b>cd'))\" "
                     "$R/tests/golden/sample.gmt && $G report --no-symbols -o h.html h.gmt && "
                     "grep -c 'a</b>cd' h.html; grep -c 'a.u003c/b>cd' h.html", root),
                 0, "%s%s", out, err);
    cr_expect_str_eq(out, "0\n1\n", "%s", err);
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
