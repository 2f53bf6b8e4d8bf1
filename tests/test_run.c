/* test_run.c: `gpumemtrace run` (status passed through, children traced, LD_PRELOAD kept, the records of a plain preload) and `summary DIR`. */
#include "shell_test.h"

TestSuite(run, .init = shell_setup, .fini = shell_teardown);

Test(run, passes_the_exit_status_through)
{
    cr_expect_eq(sh("$G run -q -o t -- sh -c 'exit 3'"), 3);
    cr_expect_eq(count_traces("t"), -1, "a process that never touched CUDA leaves no trace, "
                 "and no directory");
}

/* A run that started nothing, or whose command touched no GPU, leaves no directory it
 * made; what the user had stays, files and empty directories alike. */
Test(run, a_failed_run_leaves_nothing_behind)
{
    for (int i = 0; i < 2; i++) /* each time: not one directory per try */
        cr_expect_eq(sh("$G run -- ./no-such-program"), 127);
    cr_expect_eq(sh("$G run -o t -- ./no-such-program"), 127);
    cr_expect_eq(sh("$G run -q -o u -- true"), 0);
    cr_expect_eq(sh("$G run -o v -- true"), 0);
    char err[4096];
    slurp("err", err, sizeof err);
    cr_expect(strstr(err, "gpumemtrace: no traces (no process touched CUDA or NCCL): v not kept\n"),
              "%s", err);
    cr_expect_eq(sh("ls -A | grep -v '^out$' | grep -v '^err$' | wc -l"), 0);
    char out[256];
    slurp("out", out, sizeof out);
    cr_expect_eq(atoi(out), 0, "left behind: %s", out);
    /* the user's directories: kept, with what they hold */
    cr_expect_eq(sh("mkdir e h && touch h/mine && $G run -o e -- ./no-such-program; "
                    "$G run -o h -- ./no-such-program; $G run -q -o e -- true; "
                    "test -d e && test -f h/mine"), 0);
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

/* A trace in the directory that cannot be read: the closing summary says it once, in its
 * place among the traces' lines, and goes on with the others. */
Test(run, the_closing_summary_says_an_unreadable_trace_once)
{
    cr_expect_eq(sh("$G run -o t -- sh -c \"'%s/fakes/progs/fake_cudart' && printf junk > "
                    "t/gpumemtrace.bad.gmt\"", build_dir), 0);
    char err[8192];
    slurp("err", err, sizeof err);
    const char *head = strstr(err, "gpumemtrace: 2 trace(s) in t/\n");
    cr_assert(head, "%s", err);
    const char *bad = strstr(head, "\n  t/gpumemtrace.bad.gmt: offset 0: not a gpumemtrace trace");
    const char *good = strstr(head, "\n  gpumemtrace.");
    const char *fail = strstr(head, "\n    1 allocation(s) failed; the first at ");
    cr_expect(bad && good && fail && bad < good && good < fail, "%s", head);
    cr_expect(bad && !strstr(strstr(bad, "bad magic") + 1, "bad magic"), "said twice: %s", head);
    cr_expect(strstr(head, "\ngpumemtrace: details: gpumemtrace summary t\n"), "%s", head);
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
    cr_expect(strstr(out, "\n      main (fake_cudart.c:39)"), "%s", out);
    cr_expect(!strstr(out, "\n      cudaMalloc ("), "%s", out);
    /* no shared runtime answers: the program's own cudaRuntimeGetVersion did */
    cr_expect(strstr(out, "versions  CUDA driver 13.0, runtime 13.0"), "%s", out);
}

/* ---- runs never mix ---- */

Test(run, a_directory_that_holds_traces_is_refused_unless_appending)
{
    cr_expect_eq(sh("$G run -q -o t -- '%s/fakes/progs/fake_cudart'", build_dir), 0);
    cr_expect_eq(sh("$G run -q -o t -- '%s/fakes/progs/fake_cudart'", build_dir), 2);
    char err[4096];
    slurp("err", err, sizeof err);
    cr_expect(strstr(err, "gpumemtrace run: -o t holds 1 trace(s) of an earlier run: give a new "
                          "directory, or --append to add this run's\n"), "%s", err);
    cr_expect_eq(count_traces("t"), 1, "nothing was run");
    cr_expect_eq(sh("$G run -q -o t --append -- '%s/fakes/progs/fake_cudart'", build_dir), 0);
    cr_expect_eq(count_traces("t"), 2);
    /* --append keeps the directory's job id: the two traces are one job */
    cr_expect_eq(sh("for f in t/*.gmt; do $G dump \"$f\" | grep -o 'GPUMEMTRACE_JOB_ID=[^ \"]*'; done | sort -u | wc -l"), 0);
    char out[256];
    slurp("out", out, sizeof out);
    cr_expect_eq(atoi(out), 1, "one job id in both traces: %s", out);
    /* an empty directory is fine; --append without -o is not */
    cr_expect_eq(sh("mkdir empty && $G run -q -o empty -- true"), 0);
    cr_expect_eq(sh("$G run -q --append -- true"), 2);
}

Test(run, two_runs_in_one_second_get_two_directories_and_two_job_ids)
{
    cr_expect_eq(sh("$G run -q -- '%s/fakes/progs/fake_cudart' && $G run -q -- '%s/fakes/progs/fake_cudart'",
                    build_dir, build_dir), 0);
    cr_expect_eq(sh("ls -d gpumemtrace-* | wc -l"), 0);
    char out[256];
    slurp("out", out, sizeof out);
    cr_expect_eq(atoi(out), 2, "%s", out);
    cr_expect_eq(sh("for f in gpumemtrace-*/*.gmt; do $G dump \"$f\" | grep -o 'GPUMEMTRACE_JOB_ID=[^ \"]*'; done | sort -u | wc -l"), 0);
    slurp("out", out, sizeof out);
    cr_expect_eq(atoi(out), 2, "two job ids: %s", out);
    /* a job id the user gives is kept */
    cr_expect_eq(sh("GPUMEMTRACE_JOB_ID=mine $G run -q -o u -- '%s/fakes/progs/fake_cudart' && $G dump u/*.gmt | grep -c 'GPUMEMTRACE_JOB_ID=mine'", build_dir), 0);
}

/* run is a convenience: a plain LD_PRELOAD of the same library records the same kinds of
 * records, NCCL's profiler choices included; only the job id is run's own. */
Test(run, records_what_a_plain_preload_records)
{
    const char *kinds = "$G dump \"$d\"/*.gmt | awk '$4 ~ /^[A-Z_]+$/ {print $4}' | sort -u | "
                        "grep -v -e '^CHUNK$' -e '^TIME$'";
    cr_assert_eq(sh("export FAKECUDA_DEVICES=2; unset NCCL_PROFILER_PLUGIN NVTX_INJECTION64_PATH; "
                    "$G run -q -o r -- '%s/fakes/progs/fake_nccl_1proc' 1000 >/dev/null && mkdir p && "
                    "LD_PRELOAD=\"$B/libgpumemtrace.so\" GPUMEMTRACE_OUTPUT=\"$W/p/t.%%p.gmt\" "
                    "'%s/fakes/progs/fake_nccl_1proc' 1000 >/dev/null && "
                    "d=r; %s > run.txt; d=p; %s > plain.txt; cat run.txt; diff run.txt plain.txt",
                    build_dir, build_dir, kinds, kinds), 0, "the records differ");
    char out[4096];
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "NCCL_COLL_INFO\n") && strstr(out, "SCOPE_"), "%s", out);
    cr_expect_eq(sh("$G dump r/*.gmt | grep -c GPUMEMTRACE_JOB_ID; $G dump p/*.gmt | grep -c GPUMEMTRACE_JOB_ID"), 1);
    slurp("out", out, sizeof out);
    cr_expect_str_eq(out, "1\n0\n", "the job id is run's");
}
