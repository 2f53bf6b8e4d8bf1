/* test_run.c: `gpumemtrace run` (status passed through, children traced, LD_PRELOAD kept) and `summary DIR`. */
#include "shell_test.h"

TestSuite(run, .init = shell_setup, .fini = shell_teardown);

Test(run, passes_the_exit_status_through)
{
    cr_expect_eq(sh("$G run -q -o t -- sh -c 'exit 3'"), 3);
    cr_expect_eq(count_traces("t"), 0, "a process that never touched CUDA leaves no trace");
}

Test(run, missing_command_is_127_like_a_shell)
{
    cr_expect_eq(sh("$G run -q -o t -- ./no-such-program"), 127);
    char err[4096];
    slurp("err", err, sizeof err);
    cr_expect(strstr(err, "no-such-program"), "stderr: %s", err);
}

Test(run, killed_command_is_128_plus_signal)
{
    cr_expect_eq(sh("$G run -q -o t -- sh -c 'kill -TERM $$'"), 128 + 15);
    char err[4096];
    slurp("err", err, sizeof err);
    cr_expect(strstr(err, "signal 15"), "stderr: %s", err);
}

Test(run, bad_usage_is_2)
{
    cr_expect_eq(sh("$G run"), 2);
    cr_expect_eq(sh("$G run --bogus -- true"), 2);
    cr_expect_eq(sh("$G run -q --lib /no/such/lib.so -- true"), 2);
}

Test(run, keeps_an_existing_ld_preload_after_the_tracer)
{
    /* an ASan-built CLI refuses to start with a preload ahead of its runtime unless told */
    cr_expect_eq(sh("ASAN_OPTIONS=verify_asan_link_order=0 LD_PRELOAD=libm.so.6 "
                    "$G run -q -o t -- sh -c 'echo \"$LD_PRELOAD\"'"), 0);
    char out[4096], want[PATH_MAX + 64];
    slurp("out", out, sizeof out);
    snprintf(want, sizeof want, "libgpumemtrace.so:libm.so.6\n");
    cr_expect(strstr(out, want), "LD_PRELOAD in the child: %s", out);
    cr_expect(strncmp(out, "/", 1) == 0, "the tracer is given by absolute path: %s", out);
}

Test(run, traces_the_command_and_summarises)
{
    cr_assert_eq(access(build_dir, F_OK), 0);
    cr_expect_eq(sh("$G run -o t -- '%s/fakes/progs/fake_cudart'", build_dir), 0);
    cr_expect_eq(count_traces("t"), 1);
    char err[8192];
    slurp("err", err, sizeof err);
    cr_expect(strstr(err, "1 trace(s) in t/"), "run's closing summary: %s", err);
    cr_expect(strstr(err, "peak"), "run's closing summary: %s", err);
    /* fake_cudart's cudaMalloc of twice the device fails: the closing lines say so */
    cr_expect(strstr(err, "1 allocation(s) failed; the first at "), "%s", err);
    cr_expect(strstr(err, "cudaMalloc of 8 GiB on device 0, cudaErrorMemoryAllocation, at main (fake_cudart.c:"),
              "%s", err);
    /* summary takes the directory */
    cr_expect_eq(sh("$G summary --no-symbols t"), 0);
    char out[65536];
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "Peak device memory"), "%s", out);
    cr_expect(strstr(out, "complete"), "the traced program exited cleanly: %s", out);
}

Test(run, traces_every_process_the_command_starts)
{
    cr_expect_eq(sh("$G run -q -o t -- sh -c \"'%s/fakes/progs/fake_cudart' && '%s/fakes/progs/fake_cudart'\"",
                    build_dir, build_dir), 0);
    cr_expect_eq(count_traces("t"), 2);
}

Test(run, summary_of_an_empty_directory_is_an_error)
{
    cr_expect_eq(sh("mkdir e && $G summary e"), 2);
    char err[4096];
    slurp("err", err, sizeof err);
    cr_expect(strstr(err, "no traces"), "%s", err);
}

/* A program that links the runtime statically: its site is main, not the runtime's
 * cudaMalloc that the stack holds first. */
Test(run, the_site_of_a_static_runtime_program_is_its_own_code)
{
    cr_expect_eq(sh("$G run -q -o t -- '%s/fakes/progs/fake_cudart_static'", build_dir), 0);
    cr_expect_eq(sh("$G summary t"), 0);
    char out[65536];
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "\n      main (fake_cudart.c:39) < "), "%s", out);
    cr_expect(!strstr(out, "\n      cudaMalloc ("), "%s", out);
    /* no shared runtime answers: the program's own cudaRuntimeGetVersion did */
    cr_expect(strstr(out, "versions  CUDA driver 13.0, runtime 13.0"), "%s", out);
}
