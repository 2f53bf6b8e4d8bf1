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
    /* a --step of the user's that names no range: an error that lists the ranges */
    cr_expect_eq(sh("$G summary --no-symbols --step '^nothing$' t"), 2);
    char out[16384], err[1024];
    slurp("err", err, sizeof err);
    cr_expect(strstr(err, "--step ^nothing$ matches no NVTX range in the trace read (ranges there: "),
              "%s", err);
    cr_expect(strstr(err, "train_step"), "%s", err);
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

/* ---- the phase figures on a hand-built trace (no NVTX client needed) ---- */
#include "phases.h"
#include "trace.h"
#include "golden/tracebuild.h"

#define PH_MIB (1ull << 20)

struct phtrace {
    struct tb b;
    uint64_t now;      /* the thread's clock: its last event's time */
    uint64_t next;     /* the next address */
};

static void ph_event_alloc(struct phtrace *p, uint64_t bytes, uint64_t addr)
{
    struct gmt_rec_alloc r = { .address = addr, .bytes = bytes, .dt = 100, .stack_id = 1,
                               .kind = GMT_KIND_DEVICE, .device = 0 };
    tb_rec(&p->b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &r, sizeof r, NULL, 0);
    p->now += 100;
}

static uint64_t ph_alloc(struct phtrace *p, uint64_t bytes)
{
    uint64_t a = p->next;
    p->next += 1ull << 32;
    ph_event_alloc(p, bytes, a);
    return a;
}

static void ph_free(struct phtrace *p, uint64_t addr)
{
    struct gmt_rec_free r = { .address = addr, .dt = 100 };
    tb_rec(&p->b, GMT_REC_FREE, GMT_API_cudaFree, &r, sizeof r, NULL, 0);
    p->now += 100;
}

/* A push or pop of "step" in the default domain, between two events of the thread. */
static void ph_range(struct phtrace *p, unsigned op)
{
    struct gmt_rec_nvtx_range r = { .time_ns = p->now + 50, .name = 1 };
    tb_rec(&p->b, GMT_REC_NVTX_RANGE, (uint16_t)op, &r, sizeof r, NULL, 0);
}

static void ph_begin(struct phtrace *p)
{
    memset(p, 0, sizeof *p);
    p->now = TB_T0 + 1000;
    p->next = 0x7e0000000000ull;
    tb_header_current(&p->b);
    struct gmt_rec_process pr = { .pid = 5, .ppid = 1, .world_size = 1, .local_world_size = 1,
                                  .monotonic_ns = TB_T0 };
    tb_rec(&p->b, GMT_REC_PROCESS, 0, &pr, sizeof pr, NULL, 0);
    uint64_t ip[1] = { 0x401100ull };
    struct gmt_rec_stack s = { .stack_id = 1, .depth = 1 };
    tb_rec(&p->b, GMT_REC_STACK, 0, &s, sizeof s, ip, sizeof ip);
    static const char name[] = "step";
    struct gmt_rec_nvtx_string n = { .id = 1, .len = sizeof name };
    tb_rec(&p->b, GMT_REC_NVTX_STRING, GMT_NVTX_STR_NAME, &n, sizeof n, name, sizeof name);
    tb_chunk(&p->b, 100);
    tb_thread_at(&p->b, 100, p->now);
    struct gmt_rec_cuctx x = { .context = 0xc0, .device = 0 };
    tb_rec(&p->b, GMT_REC_CUCTX, 0, &x, sizeof x, NULL, 0);
}

/* Four steps: the first takes 10 MiB and gives it back (its peak is the highest of any
 * step); steps 2 to 4 keep 1, 3 and 2 MiB (6 MiB live at the last one's end). */
static void ph_compute(struct gmt_phases *ph)
{
    struct phtrace p;
    ph_begin(&p);
    ph_range(&p, GMT_NVTX_PUSH);
    uint64_t big = ph_alloc(&p, 10 * PH_MIB);
    ph_free(&p, big);
    ph_range(&p, GMT_NVTX_POP);
    const uint64_t kept[] = { 1, 3, 2 };
    for (int i = 0; i < 3; i++) {
        ph_range(&p, GMT_NVTX_PUSH);
        ph_alloc(&p, kept[i] * PH_MIB);
        ph_range(&p, GMT_NVTX_POP);
    }
    struct gmt_rec_end e = { .time_ns = p.now + 1000 };
    tb_rec(&p.b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
    char path[] = "/tmp/gmt-test-phases-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, p.b.p, p.b.len), (ssize_t)p.b.len);
    close(fd);
    struct gmt_trace t;
    char err[256];
    cr_assert_eq(gmt_trace_load(&t, path, err, sizeof err), 0, "%s", err);
    unlink(path);
    cr_assert_eq(gmt_phases_compute(&t, NULL, -1, ph, err, sizeof err), 0, "%s", err);
    gmt_trace_free(&t);
    tb_free(&p.b);
}

Test(phases_model, a_phase_s_peak_is_its_highest_occurrence_not_its_last)
{
    struct gmt_phases ph;
    ph_compute(&ph);
    cr_assert_eq(ph.n_rows, 1);
    cr_expect_str_eq(ph.rows[0].name, "step");
    cr_expect_eq(ph.rows[0].count, 4);
    cr_expect_eq(ph.rows[0].peak, 10 * PH_MIB, "peak %llu MiB: the last step's, not the highest",
                 (unsigned long long)(ph.rows[0].peak / PH_MIB));
    gmt_phases_free(&ph);
}

Test(phases_model, the_later_steps_least_growth_is_their_minimum)
{
    struct gmt_phases ph;
    ph_compute(&ph);
    cr_expect_eq(ph.steps, 4);
    cr_expect_eq(ph.first_step_growth, 0);
    cr_expect_eq(ph.later_growth, (int64_t)(6 * PH_MIB));
    cr_expect_eq(ph.later_min, (int64_t)PH_MIB, "later_min %lld MiB, not the least (1 MiB)",
                 (long long)(ph.later_min / (int64_t)PH_MIB));
    cr_expect(ph.grows_every_step);
    gmt_phases_free(&ph);
}
