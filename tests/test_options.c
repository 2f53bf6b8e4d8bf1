/* test_options.c: the options table read from the environment, and the warning log. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmt.h"
#include "outfile.h"

extern char **environ;

static int saved_stderr = -1;
static FILE *captured;

static void clear_env(void)
{
    for (char **e = environ; *e;) {
        if (!strncmp(*e, "GPUMEMTRACE_", 12)) {
            char name[128];
            size_t n = strcspn(*e, "=");
            snprintf(name, sizeof name, "%.*s", (int)n, *e);
            unsetenv(name);
        } else {
            e++;
        }
    }
}

/* stderr goes to a temporary file until capture_end() returns what was written. */
static void capture_begin(void)
{
    fflush(stderr);
    captured = tmpfile();
    cr_assert_not_null(captured);
    saved_stderr = dup(2);
    dup2(fileno(captured), 2);
}

static const char *capture_end(void)
{
    static char buf[8192];
    dup2(saved_stderr, 2);
    close(saved_stderr);
    rewind(captured);
    size_t n = fread(buf, 1, sizeof buf - 1, captured);
    buf[n] = 0;
    fclose(captured);
    return buf;
}

static int count(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

TestSuite(options, .init = clear_env);
TestSuite(log, .init = clear_env);

Test(options, defaults)
{
    gmt_options_load();
    cr_expect_eq(gmt_opt.off, 0);
    cr_expect_null(gmt_opt.output);
    cr_expect_eq(gmt_opt.stack_depth, 48);
    cr_expect_eq(gmt_opt.flush_bytes, 65536);
    cr_expect_eq(gmt_opt.flush_ms, 100);
    cr_expect_null(gmt_opt.meminfo);
    cr_expect_eq(gmt_opt.tsc, 1);
    cr_expect_eq(gmt_opt.quiet, 0);
}

Test(options, good_values_are_taken)
{
    setenv("GPUMEMTRACE_OFF", "1", 1);
    setenv("GPUMEMTRACE_OUTPUT", "/tmp/x.%p.gmt", 1);
    setenv("GPUMEMTRACE_STACK_DEPTH", "0", 1);
    setenv("GPUMEMTRACE_FLUSH_BYTES", "16777216", 1);
    setenv("GPUMEMTRACE_FLUSH_MS", "1", 1);
    setenv("GPUMEMTRACE_MEMINFO", "first:3,every:10", 1);
    setenv("GPUMEMTRACE_QUIET", "yes", 1);
    setenv("GPUMEMTRACE_TSC", "0", 1);
    gmt_options_load();
    cr_expect_eq(gmt_opt.tsc, 0);
    cr_expect_eq(gmt_opt.off, 1);
    cr_expect_str_eq(gmt_opt.output, "/tmp/x.%p.gmt");
    cr_expect_eq(gmt_opt.stack_depth, 0);
    cr_expect_eq(gmt_opt.flush_bytes, 16777216);
    cr_expect_eq(gmt_opt.flush_ms, 1);
    cr_expect_str_eq(gmt_opt.meminfo, "first:3,every:10");
    cr_expect_eq(gmt_opt.quiet, 1);
}

Test(options, bad_values_warned_once_each_and_defaults_kept)
{
    setenv("GPUMEMTRACE_OFF", "maybe", 1);
    setenv("GPUMEMTRACE_STACK_DEPTH", "257", 1);
    setenv("GPUMEMTRACE_FLUSH_BYTES", "64k", 1);
    setenv("GPUMEMTRACE_FLUSH_MS", "-5", 1);
    setenv("GPUMEMTRACE_MEMINFO", "sometimes", 1);
    capture_begin();
    gmt_options_load();
    const char *err = capture_end();
    cr_expect_eq(gmt_opt.off, 0);
    cr_expect_eq(gmt_opt.stack_depth, 48);
    cr_expect_eq(gmt_opt.flush_bytes, 65536);
    cr_expect_eq(gmt_opt.flush_ms, 100);
    cr_expect_null(gmt_opt.meminfo);
    cr_expect_eq(count(err, "gpumemtrace: warning: "), 5, "stderr:\n%s", err);
    cr_expect_eq(count(err, "\n"), 5, "stderr:\n%s", err);
    cr_expect(strstr(err, "GPUMEMTRACE_STACK_DEPTH=257 is not an integer in 0..256; using 48"),
              "stderr:\n%s", err);
    cr_expect(strstr(err, "GPUMEMTRACE_FLUSH_BYTES=64k"), "stderr:\n%s", err);
    cr_expect(strstr(err, "GPUMEMTRACE_FLUSH_MS=-5 is not an integer in 1..60000"), "stderr:\n%s", err);
    cr_expect(strstr(err, "GPUMEMTRACE_OFF=maybe"), "stderr:\n%s", err);
    cr_expect(strstr(err, "GPUMEMTRACE_MEMINFO=sometimes"), "stderr:\n%s", err);
}

Test(options, meminfo_syntax)
{
    static const char *const good[] = { "never", "always", "first:1", "first:20,every:5" };
    static const char *const bad[] = { "first:", "first:0", "first:x", "first:2,every:",
                                       "first:2,every:0", "first:2;every:3", "Always", "first:-1",
                                       "first:2x", "first:2,every:3x" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        setenv("GPUMEMTRACE_MEMINFO", good[i], 1);
        gmt_options_load();
        cr_expect(gmt_opt.meminfo && !strcmp(gmt_opt.meminfo, good[i]), "%s refused", good[i]);
    }
    setenv("GPUMEMTRACE_QUIET", "1", 1);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        setenv("GPUMEMTRACE_MEMINFO", bad[i], 1);
        gmt_options_load();
        cr_expect_null(gmt_opt.meminfo, "%s accepted", bad[i]);
    }
}

Test(options, meminfo_policy_parsed_once_into_the_hot_line)
{
    static const struct {
        const char *v;
        int kind;
        uint32_t first, every;
    } cases[] = {
        { "never", GMT_POLICY_NEVER, 2, 0 },         { "always", GMT_POLICY_ALWAYS, 2, 0 },
        { "first:7", GMT_POLICY_FIRST, 7, 0 },       { "first:3,every:10", GMT_POLICY_FIRST, 3, 10 },
        { "first:0", GMT_POLICY_FIRST, 2, 0 },       { "first:2000000000", GMT_POLICY_FIRST, 2, 0 },
        { "sometimes", GMT_POLICY_FIRST, 2, 0 },
    };
    setenv("GPUMEMTRACE_QUIET", "1", 1);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("GPUMEMTRACE_MEMINFO", cases[i].v, 1);
        gmt_options_load();
        cr_expect_eq(gmt_hot.meminfo.kind, cases[i].kind, "%s", cases[i].v);
        if (cases[i].kind == GMT_POLICY_FIRST) {
            cr_expect_eq(gmt_hot.meminfo.first, cases[i].first, "%s", cases[i].v);
            cr_expect_eq(gmt_hot.meminfo.every, cases[i].every, "%s", cases[i].v);
        }
    }
    unsetenv("GPUMEMTRACE_MEMINFO");
    gmt_options_load();
    cr_expect_eq(gmt_hot.meminfo.kind, GMT_POLICY_FIRST);
    cr_expect_eq(gmt_hot.meminfo.first, 2);
}

Test(options, reload_reads_the_environment_again)
{
    setenv("GPUMEMTRACE_FLUSH_MS", "7", 1);
    gmt_options_load();
    cr_expect_eq(gmt_opt.flush_ms, 7);
    unsetenv("GPUMEMTRACE_FLUSH_MS");
    gmt_options_load();
    cr_expect_eq(gmt_opt.flush_ms, 100);
}

Test(options, output_is_copied)
{
    char value[] = "/tmp/copied.gmt";
    setenv("GPUMEMTRACE_OUTPUT", value, 1);
    gmt_options_load();
    setenv("GPUMEMTRACE_OUTPUT", "/tmp/changed.gmt", 1);
    cr_expect_str_eq(gmt_opt.output, "/tmp/copied.gmt");
}

Test(options, empty_value_means_unset)
{
    setenv("GPUMEMTRACE_FLUSH_MS", "", 1);
    capture_begin();
    gmt_options_load();
    const char *err = capture_end();
    cr_expect_eq(gmt_opt.flush_ms, 100);
    cr_expect_str_empty(err);
}

Test(options, unknown_option_is_warned)
{
    setenv("GPUMEMTRACE_FLUSHMS", "10", 1);
    /* run's job id is for the CLI, read from the trace's ENV: known, not warned about */
    setenv("GPUMEMTRACE_JOB_ID", "job-1", 1);
    setenv("GPUMEMTRACE_JOB_IDS", "1", 1);
    capture_begin();
    gmt_options_load();
    const char *err = capture_end();
    cr_expect(strstr(err, "gpumemtrace: warning: unknown option GPUMEMTRACE_FLUSHMS; ignored\n"),
              "stderr:\n%s", err);
    cr_expect(strstr(err, "unknown option GPUMEMTRACE_JOB_IDS; ignored\n"), "stderr:\n%s", err);
    cr_expect_null(strstr(err, "GPUMEMTRACE_JOB_ID;"), "stderr:\n%s", err);
}

/* The library's getenv, which answers NVTX's and NCCL's tool variables, finds every other
 * variable as glibc's does: by its whole name. */
Test(options, getenv_finds_a_variable_by_its_whole_name)
{
    setenv("GMT_TEST_VARIABLE_LONGER", "long", 1);
    cr_expect_null(getenv("GMT_TEST_VARIABLE"), "a longer variable's value: %s",
                   getenv("GMT_TEST_VARIABLE"));
    setenv("GMT_TEST_VARIABLE", "short", 1);
    cr_expect_str_eq(getenv("GMT_TEST_VARIABLE"), "short");
    cr_expect_str_eq(getenv("GMT_TEST_VARIABLE_LONGER"), "long");
    cr_expect_null(getenv("GMT_TEST_VARIABLE="));
    cr_expect_null(getenv(""));
}

Test(options, quiet_silences_warnings)
{
    setenv("GPUMEMTRACE_QUIET", "1", 1);
    setenv("GPUMEMTRACE_FLUSH_MS", "soon", 1);
    capture_begin();
    gmt_options_load();
    gmt_warn("not shown");
    const char *err = capture_end();
    cr_expect_str_empty(err);
    cr_expect_eq(gmt_opt.flush_ms, 100);
}

Test(log, formats_with_prefix_and_newline)
{
    gmt_options_load();
    capture_begin();
    gmt_warn("%s=%d %u %ld %lu %zu %x %c %% %.*s|%llu %p", "a", -12, 4000000000u, -3L, 7UL,
             (size_t)9, 255u, 'z', 2, "abc", 18446744073709551615ull, (void *)0x10);
    const char *err = capture_end();
    cr_expect_str_eq(err, "gpumemtrace: warning: a=-12 4000000000 -3 7 9 ff z % ab|"
                          "18446744073709551615 0x10\n");
}

Test(log, stops_after_eight_with_one_suppressed_line)
{
    gmt_options_load();
    capture_begin();
    for (int i = 0; i < 20; i++)
        gmt_warn("number %d", i);
    const char *err = capture_end();
    cr_expect_eq(count(err, "gpumemtrace: warning: number "), 8, "stderr:\n%s", err);
    cr_expect_eq(count(err, "gpumemtrace: warning: further warnings suppressed\n"), 1,
                 "stderr:\n%s", err);
    cr_expect(strstr(err, "number 7\n") && !strstr(err, "number 8\n"), "stderr:\n%s", err);
}

Test(log, long_message_is_cut_not_overflowed)
{
    gmt_options_load();
    char big[2000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    capture_begin();
    gmt_warn("%s", big);
    const char *err = capture_end();
    size_t len = strlen(err);
    cr_expect_leq(len, 512);
    cr_expect_eq(err[len - 1], '\n');
}

Test(log, errno_untouched)
{
    gmt_options_load();
    capture_begin();
    errno = 4321;
    gmt_warn("x");
    int e = errno;
    capture_end();
    cr_expect_eq(e, 4321);
}

/* A value can carry ESC sequences and newlines (an option's text, a path): shown as \xHH,
 * so one warning stays one line and the terminal is not driven by it. UTF-8 is kept. */
Test(log, values_are_escaped)
{
    gmt_options_load();
    capture_begin();
    gmt_warn("v=%s c=%c p=%.*s", "a\x1b[31mb\nc\x7f\xff\xc2\x85 \xc3\xa9", '\r', 3, "x\ty\nz");
    const char *err = capture_end();
    cr_expect_str_eq(err, "gpumemtrace: warning: v=a\\x1b[31mb\\x0ac\\x7f\\xff\\xc2\\x85 \xc3\xa9 "
                          "c=\\x0d p=x\\x09y\n");
}

/* The unknown-option warning prints the name as the environment has it. */
Test(log, an_unknown_options_name_is_escaped)
{
    setenv("GPUMEMTRACE_\x1b[2J", "1", 1);
    capture_begin();
    gmt_options_load();
    const char *err = capture_end();
    unsetenv("GPUMEMTRACE_\x1b[2J");
    cr_expect_str_eq(err, "gpumemtrace: warning: unknown option GPUMEMTRACE_\\x1b[2J; ignored\n");
}

/* %h is one file-name component whatever the host is called. */
static void created_for_host(const char *host, const char *want)
{
    char dir[] = "/tmp/gmt-host-XXXXXX", pattern[128], path[256], expect[256];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(pattern, sizeof pattern, "%s/t.%%h.gmt", dir);
    setenv("GPUMEMTRACE_OUTPUT", pattern, 1);
    gmt_options_load();
    const char *what = NULL;
    int fd = gmt_outfile_create(path, sizeof path, host, -1, &what);
    cr_assert_geq(fd, 3, "%s: %s", host, what ? what : "");
    close(fd);
    snprintf(expect, sizeof expect, "%s/%s", dir, want);
    cr_expect_str_eq(path, expect);
    unlink(path);
    rmdir(dir);
}

Test(options, host_names_become_one_safe_file_name)
{
    created_for_host("node1.cluster-a_b", "t.node1.cluster-a_b.gmt");
    created_for_host("../../etc/x", "t..._.._etc_x.gmt");
    created_for_host("..", "t.__.gmt");
    created_for_host("a b\x1b\n\xff", "t.a_b___.gmt");
}
