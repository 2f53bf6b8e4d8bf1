/* test_nccl_profiler.c: the library as NCCL's profiler plugin: the fake NCCL loads it, NCCL_COLL_INFO carries what NCCL chose, run's NCCL_PROFILER_PLUGIN, the off switch, an NCCL without the interface. */
#include "shell_test.h"

TestSuite(nccl_profiler, .init = shell_setup, .fini = shell_teardown);

/* the simulated devices the fakes' programs use */
#define ENV "FAKECUDA_DEVICES=2 "

static int count_lines(const char *text, const char *needle)
{
    int n = 0;
    for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

static char out[1 << 20];

/* Dumps every trace under t/ into out. */
static void dump_all(void)
{
    cr_assert_eq(sh("for f in t/*.gmt; do $G dump \"$f\" || exit 1; done"), 0);
    slurp("out", out, sizeof out);
}

/* The fake's rule (fake_nccl_profiler.c): 1000000 floats are 4 MB, SIMPLE on every
 * channel (NCCL_MIN_NCHANNELS=4), 16 warps, RING on 2 ranks; 1000 floats are 4000 B, LL
 * on 1 channel, 8 warps. Each of the two ranks records its own launch. */
Test(nccl_profiler, records_what_the_fake_nccl_chose)
{
    cr_assert_eq(sh(ENV "NCCL_MIN_NCHANNELS=4 $G run -q -o t -- '%s/fakes/progs/fake_nccl_1proc' 1000000",
                    build_dir), 0);
    dump_all();
    cr_expect_eq(count_lines(out, "NCCL_COLL_INFO op=AllReduce "), 4, "two group launches x two ranks:\n%s", out);
    cr_expect(strstr(out, "op=AllReduce ") && strstr(out, "count=1000000 datatype=7 root=0 algo=RING proto=SIMPLE nchannels=4 nwarps=16"),
              "%s", out);
    cr_expect(strstr(out, "kind=coll") && strstr(out, "rank=1 seq=1 count=1000000"), "%s", out);
    /* broadcast from rank 1, int64: 8 MB */
    cr_expect(strstr(out, "op=Broadcast") && strstr(out, "datatype=4 root=1 algo=RING proto=SIMPLE"), "%s", out);
    /* send and receive: p2p, no algorithm, the p2p channels */
    cr_expect(strstr(out, "op=Send ") && strstr(out, "kind=p2p"), "%s", out);
    cr_expect(strstr(out, "peer=1 algo=none proto=none nchannels=4 nwarps=0"), "%s", out);

    cr_assert_eq(sh("rm -rf t && " ENV "$G run -q -o t -- '%s/fakes/progs/fake_nccl_1proc' 1000", build_dir), 0);
    dump_all();
    cr_expect(strstr(out, "count=1000 datatype=7 root=0 algo=RING proto=LL nchannels=1 nwarps=8"), "%s", out);
}

/* NCCL 2.27 looks up ncclProfiler_v4 only, and its descriptor's bytes after `type` are
 * not initialised (the fake fills them with 0xab): the same records. */
Test(nccl_profiler, the_v4_interface_gives_the_same_records)
{
    cr_assert_eq(sh(ENV "FAKENCCL_PROFILER_VERSION=4 $G run -q -o t -- '%s/fakes/progs/fake_nccl_1proc' 1000",
                    build_dir), 0);
    dump_all();
    cr_expect_eq(count_lines(out, "NCCL_COLL_INFO op=AllReduce "), 4, "%s", out);
    cr_expect(strstr(out, "count=1000 datatype=7 root=0 algo=RING proto=LL nchannels=1 nwarps=8"), "%s", out);
    cr_expect_eq(count_lines(out, "NCCL_COLL_INFO op=Send "), 1, "%s", out);
}

/* A bare collective launches on its calling thread: the record names the call's scope;
 * summary ties it to the communicator and shows the choice. */
Test(nccl_profiler, a_bare_call_records_its_scope_and_summary_shows_the_choice)
{
    cr_assert_eq(sh(ENV "$G run -q -o t -- '%s/fakes/progs/fake_nccl_2proc'", build_dir), 0);
    dump_all();
    /* two all_reduce of the same shape per rank: the second repeats the first's choice */
    cr_expect_eq(count_lines(out, "NCCL_COLL_INFO op=AllReduce "), 2, "one per rank:\n%s", out);
    cr_expect_eq(count_lines(out, "seq=0 count=1048576"), 2, "the first launch's:\n%s", out);
    cr_expect_eq(count_lines(out, "kind=coll scope=0 "), 0, "every launch inside its call's scope:\n%s", out);
    cr_assert_eq(sh("$G summary --no-symbols --per-rank t"), 0);
    slurp("out", out, sizeof out);
    cr_expect_eq(count_lines(out, "NCCL chose RING/SIMPLE, 2 channel(s), 16 warps\n"), 2, "%s", out);
    cr_assert_eq(sh("$G summary --json --no-symbols t"), 0);
    slurp("out", out, sizeof out);
    cr_expect_eq(count_lines(out, "\"nccl_choice\": {\"algo\": \"RING\", \"proto\": \"SIMPLE\", \"nchannels\": 2, "
                                  "\"nwarps\": 16, \"records\": 1, \"records_total\": 1, \"choices\": 1}"), 2, "%s", out);
}

/* Launches on another thread than the caller's (one thread driving two ranks: the fake
 * runs them on a thread each) carry no scope: summary ties them by their context. */
Test(nccl_profiler, launches_on_other_threads_are_tied_by_context)
{
    cr_assert_eq(sh(ENV "$G run -q -o t -- '%s/fakes/progs/fake_nccl_1proc' 1000", build_dir), 0);
    cr_assert_eq(sh("$G summary --no-symbols t"), 0);
    slurp("out", out, sizeof out);
    cr_expect_eq(count_lines(out, "NCCL chose RING/LL, 1 channel(s), 8 warps\n"), 8,
                 "AllReduce (2 rows), AllGather, ReduceScatter, Broadcast on each communicator:\n%s", out);
}

Test(nccl_profiler, run_leaves_a_plugin_the_user_set)
{
    cr_assert_eq(sh("NCCL_PROFILER_PLUGIN=/opt/other/libprof.so $G run -q -o t -- sh -c 'echo \"[$NCCL_PROFILER_PLUGIN]\"'"), 0);
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "[/opt/other/libprof.so]"), "%s", out);
    char err[4096];
    slurp("err", err, sizeof err);
    cr_expect_eq(count_lines(err, "NCCL_PROFILER_PLUGIN=/opt/other/libprof.so is set: left as it is"), 1, "%s", err);
    /* without one, run names the library it preloads */
    cr_assert_eq(sh("$G run -q -o t -- sh -c 'echo \"[$NCCL_PROFILER_PLUGIN]\"'"), 0);
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "/libgpumemtrace.so]") && out[1] == '/', "%s", out);
    slurp("err", err, sizeof err);
    cr_expect(!strstr(err, "NCCL_PROFILER_PLUGIN"), "%s", err);
    /* "none" (NCCL's own off switch) is the user's too: the fake loads nothing */
    cr_assert_eq(sh("rm -rf t && " ENV "NCCL_PROFILER_PLUGIN=none $G run -q -o t -- '%s/fakes/progs/fake_nccl_1proc' 1000",
                    build_dir), 0);
    dump_all();
    cr_expect_eq(count_lines(out, "NCCL_COLL_INFO"), 0, "%s", out);
    cr_expect_gt(count_lines(out, "SCOPE_BEGIN"), 0, "traced all the same:\n%s", out);
}

Test(nccl_profiler, off_switch_records_none)
{
    cr_assert_eq(sh("GPUMEMTRACE_NCCL_PROFILER=0 $G run -q -o t -- sh -c 'echo \"[${NCCL_PROFILER_PLUGIN-unset}]\"'"), 0);
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "[unset]"), "run sets nothing: %s", out);
    /* loaded as the plugin all the same (set by hand): it asks NCCL for no events */
    cr_assert_eq(sh(ENV "GPUMEMTRACE_NCCL_PROFILER=0 NCCL_PROFILER_PLUGIN=\"$B/libgpumemtrace.so\" "
                    "$G run -q -o t -- '%s/fakes/progs/fake_nccl_1proc' 1000", build_dir), 0);
    dump_all();
    cr_expect_eq(count_lines(out, "NCCL_COLL_INFO"), 0, "%s", out);
    cr_expect_gt(count_lines(out, "SCOPE_BEGIN"), 0, "%s", out);
}

/* An NCCL from before the interface ignores NCCL_PROFILER_PLUGIN: the program behaves and
 * prints as untraced, and its trace is as before, without NCCL_COLL_INFO. */
Test(nccl_profiler, an_nccl_without_the_interface_is_unaffected)
{
    cr_assert_eq(sh(ENV "FAKENCCL_NO_PROFILER=1 '%s/fakes/progs/fake_nccl_1proc' 1000 > plain.txt", build_dir), 0);
    cr_assert_eq(sh(ENV "FAKENCCL_NO_PROFILER=1 $G run -q -o t -- '%s/fakes/progs/fake_nccl_1proc' 1000 > traced.txt",
                    build_dir), 0);
    cr_expect_eq(sh("sed 's/first=[0-9]*//' plain.txt > a && sed 's/first=[0-9]*//' traced.txt > b && cmp a b"), 0);
    dump_all();
    cr_expect_eq(count_lines(out, "NCCL_COLL_INFO"), 0, "%s", out);
    cr_expect_gt(count_lines(out, "SCOPE_BEGIN   op=AllReduce"), 0, "%s", out);
    cr_assert_eq(sh("$G summary --no-symbols t"), 0);
    slurp("out", out, sizeof out);
    cr_expect(!strstr(out, "NCCL chose"), "%s", out);
}
