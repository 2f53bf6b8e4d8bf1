/* test_phases.c: NVTX phases end to end: `run` sets NVTX_INJECTION64_PATH, the PyPI nvtx package's ranges reach the trace, and `summary` reports each phase's bytes and the growth per step. */
#include "shell_test.h"

TestSuite(phases, .init = shell_setup, .fini = shell_teardown, .timeout = 120);

/* The real client needs python3 with the nvtx package (.ci/run installs it). */
static void need_nvtx(void)
{
    if (system("python3 -c 'import nvtx' >/dev/null 2>&1") != 0)
        cr_skip_test("python3 with the nvtx package is not installed (pip install nvtx)");
}

/* Runs the client in MODE under `gpumemtrace run`, its summary as JSON into s.json (and
 * as text into out); returns what the check says (0: the phases are as computed). */
static int client(const char *mode, const char *summary_args)
{
    cr_assert_eq(sh("$G run -q -o t -- python3 '" NVTX_SRC "/tests/phases_client.py' run "
                    "\"$B/fakes/libcudart.so.13\" expect.json %s", mode), 0, "the client failed");
    cr_assert_eq(sh("$G summary --no-symbols --json %s t > s.json", summary_args), 0);
    int rc = sh("python3 '" NVTX_SRC "/tests/phases_client.py' check expect.json s.json");
    char out[4096];
    slurp("out", out, sizeof out);
    cr_expect_eq(rc, 0, "%s: the summary differs from what the client did:\n%s", mode, out);
    cr_assert_eq(sh("$G summary --no-symbols %s t", summary_args), 0);
    return rc;
}

Test(phases, run_points_nvtx_at_the_preloaded_library)
{
    cr_expect_eq(sh("unset NVTX_INJECTION64_PATH; $G run -q -o t -- sh -c 'echo \"$NVTX_INJECTION64_PATH\"; "
                    "echo \"$LD_PRELOAD\"'"), 0);
    char out[4096], err[4096];
    slurp("out", out, sizeof out);
    char *nl = strchr(out, '\n');
    cr_assert_not_null(nl);
    *nl = 0;
    cr_expect(out[0] == '/' && strstr(out, "libgpumemtrace.so"), "NVTX_INJECTION64_PATH: %s", out);
    cr_expect(!strncmp(nl + 1, out, strlen(out)), "the same library as LD_PRELOAD's first: %s", nl + 1);
    slurp("err", err, sizeof err);
    cr_expect_null(strstr(err, "NVTX_INJECTION64_PATH"), "no note when unset: %s", err);
}

Test(phases, run_leaves_a_users_nvtx_tool_alone)
{
    cr_expect_eq(sh("NVTX_INJECTION64_PATH=/opt/other/libtool.so $G run -q -o t -- "
                    "sh -c 'echo \"$NVTX_INJECTION64_PATH\"'"), 0);
    char out[4096], err[4096];
    slurp("out", out, sizeof out);
    slurp("err", err, sizeof err);
    cr_expect_str_eq(out, "/opt/other/libtool.so\n");
    cr_expect(strstr(err, "NVTX_INJECTION64_PATH is set (/opt/other/libtool.so)"), "%s", err);
    cr_expect_eq(strchr(err, '\n') - err + 1, (long)strlen(err), "one line: %s", err);
}

Test(phases, the_nvtx_packages_ranges_become_phases_with_their_bytes)
{
    need_nvtx();
    client("phases", "");
    char out[16384];
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "Device memory by phase"), "%s", out);
    cr_expect(strstr(out, "mylib::forward"), "a domain's range is qualified: %s", out);
    cr_expect(strstr(out, "load > weights"), "the stack of ranges: %s", out);
}

Test(phases, a_loop_that_leaks_every_step_is_flagged)
{
    need_nvtx();
    client("leak", "");
    char out[16384];
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "grows every step: +3 MiB per step over 4 steps, from "), "%s", out);
}

/* What the steps kept is freed after the last one (a process's exit does that): the
 * growth and its site are what stood at the end of the last step. */
Test(phases, the_site_of_the_growth_is_named_when_the_exit_frees_it)
{
    need_nvtx();
    client("leak-freed", "");
    char out[16384];
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "grows every step: +3 MiB per step over 4 steps, from Model.malloc (phases_client.py:"),
              "%s", out);
}

Test(phases, a_loop_that_gives_back_what_it_takes_is_not)
{
    need_nvtx();
    client("steady", "");
    char out[16384];
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "steps: 5;"), "%s", out);
    cr_expect_null(strstr(out, "grows every step"), "%s", out);
}

Test(phases, step_takes_a_regex_of_the_users_own)
{
    need_nvtx();
    cr_assert_eq(sh("$G run -q -o t -- python3 '" NVTX_SRC "/tests/phases_client.py' run "
                    "\"$B/fakes/libcudart.so.13\" expect.json leak"), 0);
    cr_expect_eq(sh("$G summary --no-symbols --step '^nothing$' t"), 0);
    char out[16384], err[1024];
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "steps: no range matches --step"), "%s", out);
    cr_expect_eq(sh("$G summary --no-symbols --step 'TRAIN_st' t"), 0);
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "grows every step: +3 MiB per step over 4 steps"), "any case: %s", out);
    cr_expect_eq(sh("$G summary --step '(' t"), 2);
    slurp("err", err, sizeof err);
    cr_expect(strstr(err, "--step wants a regular expression"), "%s", err);
}

Test(phases, off_with_gpumemtrace_nvtx_0)
{
    need_nvtx();
    cr_assert_eq(sh("GPUMEMTRACE_NVTX=0 $G run -q -o t -- python3 '" NVTX_SRC "/tests/phases_client.py' "
                    "run \"$B/fakes/libcudart.so.13\" expect.json phases"), 0);
    cr_expect_eq(sh("$G dump t/*.gmt | grep -c NVTX_"), 1, "grep finds no NVTX record");
    cr_expect_eq(sh("$G dump t/*.gmt | grep -c ALLOC"), 0, "the allocations are traced");
}
