/* test_check.c: `check` and `diff` on synthesised traces and on real runs of the fake NCCL: limits, baselines, verdicts, JUnit. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.h"
#include "args.h"
#include "baseline.h"
#include "json.h"
#include "golden/tracebuild.h"

#define MiB (1ull << 20)

/* ---- running the CLI and programs ---- */

#define RUN(res, e, ...) CLI_RUN((res), &(struct cli_io){.env = (e)}, __VA_ARGS__)

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* ---- synthesised traces ---- */

struct synth {
    int rank;                  /* PROCESS rank, -1 unknown */
    uint32_t pid;
    const char *host;
    uint64_t buffsize;         /* the first AllReduce allocates 2 x this */
    int calls;                 /* AllReduce calls */
    uint64_t leak;             /* bytes leaked per call, outside NCCL */
    uint64_t steady_growth;    /* bytes each later call allocates inside the call */
    bool allgather;            /* one more collective */
    const char *job;           /* GPUMEMTRACE_JOB_ID in an ENV record, NULL none */
    const char *env;           /* one more NAME=value in the ENV record, NULL none */
    int world;                 /* world size; 0: 2 */
};

static void synth_write(const char *path, const struct synth *s)
{
    struct tb b = {0};
    tb_header(&b);
    char var[128];
    size_t hl = strlen(s->host) + 1;
    memcpy(var, s->host, hl);
    memcpy(var + hl, "train\0", 6);
    struct gmt_rec_process p = {.pid = s->pid, .ppid = 1, .rank = s->rank, .local_rank = s->rank,
        .world_size = s->world ? s->world : 2, .local_world_size = 2, .realtime_ns = 1700000000000000000ull + s->pid,
        .monotonic_ns = TB_T0, .host_len = (uint32_t)hl, .cmdline_len = 6};
    tb_rec(&b, GMT_REC_PROCESS, 0, &p, sizeof p, var, hl + 6);
    if (s->job || s->env) {
        char ev[256];
        int el = 0;
        uint32_t count = 0;
        if (s->job) {
            el += snprintf(ev, sizeof ev, "GPUMEMTRACE_JOB_ID=%s", s->job) + 1;
            count++;
        }
        if (s->env) {
            el += snprintf(ev + el, sizeof ev - (size_t)el, "%s", s->env) + 1;
            count++;
        }
        struct gmt_rec_env e = {.count = count, .bytes = (uint32_t)el};
        tb_rec(&b, GMT_REC_ENV, 0, &e, sizeof e, ev, (size_t)el);
    }
    struct gmt_rec_chunk ch = {.tid = s->pid};
    tb_rec(&b, GMT_REC_CHUNK, 0, &ch, sizeof ch, NULL, 0);
    struct gmt_rec_thread th = {.time_ns = TB_T0 + s->pid, .tid = s->pid, .name = "train"};
    tb_rec(&b, GMT_REC_THREAD, 0, &th, sizeof th, NULL, 0);
    struct gmt_rec_cuctx cx = {.context = 0xc0ffee00ull + s->pid, .device = 0};
    tb_rec(&b, GMT_REC_CUCTX, 0, &cx, sizeof cx, NULL, 0);
    uint64_t comm = 0x5500000000ull + s->pid * 16ull, addr = 0x7e0000000000ull + s->pid * 0x10000000ull;
    uint32_t sid = 1;
    struct gmt_rec_scope_begin ib = {.dt = 10, .scope_id = sid, .count = 2, .datatype = -1,
                                     .peer = s->rank < 0 ? 0 : s->rank};
    tb_rec(&b, GMT_REC_SCOPE_BEGIN, GMT_OP_CommInitRank, &ib, sizeof ib, NULL, 0);
    struct gmt_rec_alloc a = {.address = addr++, .bytes = 2 * MiB, .dt = 10, .scope_id = sid,
                              .kind = GMT_KIND_PHYSICAL, .device = 0};
    tb_rec(&b, GMT_REC_ALLOC, GMT_API_cuMemCreate, &a, sizeof a, NULL, 0);
    struct gmt_rec_comm cm = {.comm = comm, .unique_id_hash = 0x1234, .rank = s->rank < 0 ? 0 : s->rank,
                              .nranks = 2, .device = 0, .dt = 10};
    tb_rec(&b, GMT_REC_COMM, 0, &cm, sizeof cm, NULL, 0);
    struct gmt_rec_scope_end ie = {.dt = 10, .scope_id = sid};
    tb_rec(&b, GMT_REC_SCOPE_END, GMT_OP_CommInitRank, &ie, sizeof ie, NULL, 0);
    struct gmt_rec_alloc ua = {.address = addr++, .bytes = 4 * MiB, .dt = 10, .kind = GMT_KIND_DEVICE,
                               .device = -1};
    tb_rec(&b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &ua, sizeof ua, NULL, 0);
    for (int k = 0; k < s->calls; k++) {
        sid++;
        struct gmt_rec_scope_begin cb = {.dt = 10, .scope_id = sid, .comm = comm, .count = MiB / 4,
                                         .datatype = 7, .peer = -1};
        tb_rec(&b, GMT_REC_SCOPE_BEGIN, GMT_OP_AllReduce, &cb, sizeof cb, NULL, 0);
        uint64_t bytes = k == 0 ? 2 * s->buffsize : s->steady_growth;
        if (bytes) {
            struct gmt_rec_alloc ca = {.address = addr++, .bytes = bytes, .dt = 10, .scope_id = sid,
                                       .kind = GMT_KIND_PHYSICAL, .device = 0};
            tb_rec(&b, GMT_REC_ALLOC, GMT_API_cuMemCreate, &ca, sizeof ca, NULL, 0);
        }
        struct gmt_rec_scope_end ce = {.dt = 10, .scope_id = sid};
        tb_rec(&b, GMT_REC_SCOPE_END, GMT_OP_AllReduce, &ce, sizeof ce, NULL, 0);
        if (s->leak) {
            struct gmt_rec_alloc la = {.address = addr++, .bytes = s->leak, .dt = 10,
                                       .kind = GMT_KIND_DEVICE, .device = -1};
            tb_rec(&b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &la, sizeof la, NULL, 0);
        }
    }
    if (s->allgather) {
        sid++;
        struct gmt_rec_scope_begin gb = {.dt = 10, .scope_id = sid, .comm = comm, .count = 1024,
                                         .datatype = 7, .peer = -1};
        tb_rec(&b, GMT_REC_SCOPE_BEGIN, GMT_OP_AllGather, &gb, sizeof gb, NULL, 0);
        struct gmt_rec_alloc ga = {.address = addr++, .bytes = 2 * MiB, .dt = 10, .scope_id = sid,
                                   .kind = GMT_KIND_PHYSICAL, .device = 0};
        tb_rec(&b, GMT_REC_ALLOC, GMT_API_cuMemCreate, &ga, sizeof ga, NULL, 0);
        struct gmt_rec_scope_end ge = {.dt = 10, .scope_id = sid};
        tb_rec(&b, GMT_REC_SCOPE_END, GMT_OP_AllGather, &ge, sizeof ge, NULL, 0);
    }
    struct gmt_rec_end end = {.time_ns = TB_T0 + s->pid + 1000000};
    tb_rec(&b, GMT_REC_END, 0, &end, sizeof end, NULL, 0);
    cr_assert_eq(tb_write(&b, path), 0);
    tb_free(&b);
}

/* Two ranks of one run into dir, with per-run pids and host. */
static void synth_run(const char *dir, struct synth s, uint32_t pid0)
{
    for (int r = 0; r < 2; r++) {
        char path[PATH_MAX];
        s.rank = r;
        s.pid = pid0 + (uint32_t)r;
        snprintf(path, sizeof path, "%s/gpumemtrace.%s.%u.gmt", dir, s.host, s.pid);
        synth_write(path, &s);
    }
}

static const struct synth normal = {.host = "node-a", .buffsize = MiB, .calls = 3};

/* A baseline written from a normal run in its own directory; returns its path. */
static const char *baseline_of(struct synth s, const char *extra)
{
    char *d = cli_tmpdir();
    synth_run(d, s, 41000);
    static char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/nccl-baseline.json", d);
    struct result res;
    if (extra)
        RUN(&res, NULL, "check", d, "--write-baseline", path, extra);
    else
        RUN(&res, NULL, "check", d, "--write-baseline", path);
    cr_assert_eq(res.status, 0, "write-baseline: %s", res.err);
    return path;
}

static const char *new_run(struct synth s)
{
    char *d = cli_tmpdir();
    synth_run(d, s, 52000);
    return d;
}

Test(check, unchanged_rerun_passes)
{
    const char *bl = baseline_of(normal, NULL);
    struct synth s = normal;
    s.host = "node-b";
    struct result res;
    RUN(&res, NULL, "check", new_run(s), "--baseline", bl, "--verbose");
    cr_expect_eq(res.status, 0, "out:\n%s\nerr:\n%s", res.out, res.err);
    cr_expect(strstr(res.out, "PASS  rank 0  first_call AllReduce 2 ranks 1 MiB/call") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "PASS  rank 1  init CommInitRank 2 ranks") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "ok: 10 checks within their limits") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "FAIL") == NULL);
}

Test(check, doubled_buffer_fails_and_names_the_collective)
{
    const char *bl = baseline_of(normal, NULL);
    struct synth s = normal;
    s.buffsize = 2 * MiB;
    struct result res;
    RUN(&res, NULL, "check", new_run(s), "--baseline", bl, "--verbose");
    cr_expect_eq(res.status, 1, "out:\n%s\nerr:\n%s", res.out, res.err);
    cr_expect(strstr(res.out, "FAIL  rank 0  first_call AllReduce 2 ranks 1 MiB/call  2 MiB ->  4 MiB  +2 MiB (limit +102 KiB)") != NULL,
              "%s", res.out);
    cr_expect(strstr(res.out, "PASS  rank 0  steady AllReduce") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "FAILED: 6 of 10 checks") != NULL, "%s", res.out);
}

Test(check, steady_state_growth_fails_from_a_zero_baseline)
{
    const char *bl = baseline_of(normal, NULL);
    struct synth s = normal;
    s.steady_growth = 4096;
    struct result res;
    RUN(&res, NULL, "check", new_run(s), "--baseline", bl, "--max-growth", "100%,steady=5%");
    cr_expect_eq(res.status, 1, "%s", res.out);
    cr_expect(strstr(res.out, "FAIL  rank 1  steady AllReduce 2 ranks 1 MiB/call") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "FAILED: 2 of 10") != NULL, "only the steady checks: %s", res.out);
}

Test(check, leak_per_step_is_caught)
{
    const char *bl = baseline_of(normal, NULL);
    struct synth s = normal;
    s.leak = MiB;
    struct result res;
    RUN(&res, NULL, "check", new_run(s), "--baseline", bl, "--verbose", "--max-growth", "peak=100%");
    cr_expect_eq(res.status, 1, "%s", res.out);
    cr_expect(strstr(res.out, "FAIL  rank 0  leak device 0") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "+3 MiB") != NULL, "three steps, one MiB each: %s", res.out);
    cr_expect(strstr(res.out, "PASS  rank 0  peak device 0") != NULL, "%s", res.out);
}

Test(check, per_check_limits_and_bytes_floor)
{
    const char *bl = baseline_of(normal, NULL);
    struct synth s = normal;
    s.buffsize = 2 * MiB;
    const char *d = new_run(s);
    struct result res;
    RUN(&res, NULL, "check", d, "--baseline", bl, "--max-growth", "100%");
    cr_expect_eq(res.status, 0, "%s", res.out);
    RUN(&res, NULL, "check", d, "--baseline", bl, "--max-growth", "100%,first_call=0%");
    cr_expect_eq(res.status, 1, "%s", res.out);
    cr_expect(strstr(res.out, "FAILED: 2 of 10") != NULL, "%s", res.out);
    RUN(&res, NULL, "check", d, "--baseline", bl, "--max-bytes", "2MiB");
    cr_expect_eq(res.status, 0, "growth equal to the limit passes: %s", res.out);
    RUN(&res, NULL, "check", d, "--baseline", bl, "--max-bytes", "2097151");
    cr_expect_eq(res.status, 1, "%s", res.out);
}

Test(check, baseline_limits_apply_and_the_command_line_overrides)
{
    struct synth s = normal;
    const char *bl = baseline_of(s, "--max-growth=100%");
    cr_expect(strstr(cli_read_file(bl), "\"max_growth_percent\": {\"default\": 100}") != NULL, "%s", cli_read_file(bl));
    s.buffsize = 2 * MiB;
    const char *d = new_run(s);
    struct result res;
    RUN(&res, NULL, "check", d, "--baseline", bl);
    cr_expect_eq(res.status, 0, "the baseline's 100%% applies: %s", res.out);
    RUN(&res, NULL, "check", d, "--baseline", bl, "--max-growth", "first_call=10%");
    cr_expect_eq(res.status, 1, "%s", res.out);
    cr_expect(strstr(res.out, "FAILED: 2 of 10") != NULL, "only first_call overridden: %s", res.out);
    RUN(&res, NULL, "check", d, "--baseline", bl, "--max-growth", "5%");
    cr_expect_eq(res.status, 1, "a default given here overrides the baseline's: %s", res.out);
    cr_expect(strstr(res.out, "FAILED: 6 of 10") != NULL, "%s", res.out);
}

Test(check, new_collective_is_growth_from_zero_and_gone_is_reported)
{
    const char *bl = baseline_of(normal, NULL);
    struct synth s = normal;
    s.allgather = true;
    struct result res;
    RUN(&res, NULL, "check", new_run(s), "--baseline", bl, "--verbose", "--max-growth", "100%");
    cr_expect_eq(res.status, 1, "%s", res.out);
    cr_expect(strstr(res.out, "FAIL  rank 0  first_call AllGather 2 ranks 4 KiB/call") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "new ->  2 MiB") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "PASS  rank 0  steady AllGather") != NULL, "%s", res.out);

    const char *bl2 = baseline_of(s, NULL);
    RUN(&res, NULL, "check", new_run(normal), "--baseline", bl2, "--verbose");
    cr_expect_eq(res.status, 0, "a collective that went away fails nothing: %s", res.out);
    cr_expect(strstr(res.out, "GONE  rank 1  first_call AllGather 2 ranks 4 KiB/call") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "4 gone") != NULL, "%s", res.out);
}

Test(check, baseline_is_stable_and_names_no_address_time_pid_or_host)
{
    char *d1 = cli_tmpdir(), *d2 = cli_tmpdir(), p1[PATH_MAX], p2[PATH_MAX];
    struct synth s = normal;
    s.host = "gpu-node-17";
    synth_run(d1, s, 48213);
    s.host = "gpu-node-99";
    synth_run(d2, s, 61007);
    snprintf(p1, sizeof p1, "%s/b.json", d1);
    snprintf(p2, sizeof p2, "%s/b.json", d2);
    struct result res;
    RUN(&res, NULL, "check", d1, "--write-baseline", p1);
    cr_assert_eq(res.status, 0, "%s", res.err);
    RUN(&res, NULL, "check", d2, "--write-baseline", p2);
    cr_assert_eq(res.status, 0, "%s", res.err);
    char *a = strdup(cli_read_file(p1));
    cr_assert_not_null(a);
    cr_expect_str_eq(a, cli_read_file(p2), "two runs on other hosts and pids: the same baseline");
    static const char *const banned[] = {"48213", "48214", "gpu-node", "0x", "time", "pid", "host",
                                         "train", "\"comm\"", "1700000000"};
    for (size_t i = 0; i < sizeof banned / sizeof banned[0]; i++)
        cr_expect(strstr(a, banned[i]) == NULL, "baseline contains '%s':\n%s", banned[i], a);
    /* one metric per line, keys sorted within each line */
    int lines = 0;
    for (char *l = strtok(a, "\n"); l; l = strtok(NULL, "\n")) {
        if (!strstr(l, "\"check\""))
            continue;
        lines++;
        const char *bytes = strstr(l, "\"bytes\""), *check = strstr(l, "\"check\""), *rank = strstr(l, "\"rank\"");
        cr_expect(bytes && check && rank && bytes < check && check < rank, "keys not sorted: %s", l);
    }
    cr_expect_eq(lines, 10);
    free(a);
    cli_rmtree(d1);
    cli_rmtree(d2);
}

Test(check, baseline_round_trips_through_the_parser)
{
    struct gmt_baseline b = {0}, c;
    struct gmt_metric m[2] = {
        {.rank = 1, .check = GMT_CHECK_first_call, .op = "Group(AllReduce+AllGather)", .comm_size = 8,
         .comm_rank = 3, .bytes_per_call = 12345, .device = -1, .occurrence = 2, .value = -7},
        {.rank = -1, .process = 2, .check = GMT_CHECK_peak, .comm_size = -1, .comm_rank = -1,
         .device = 3, .category = "nccl", .occurrence = 1, .value = 1ll << 56},
    };
    b.metrics.v = m;
    b.metrics.n = 2;
    snprintf(b.category, sizeof b.category, "nccl");
    cr_assert_eq(gmt_limits_parse_growth(&b.limits, "2.5%,peak=0.0001%", NULL, 0), 0);
    cr_assert_eq(gmt_limits_parse_bytes(&b.limits, "1MiB,leak=0", NULL, 0), 0);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(gmt_baseline_write(f, &b), 0);
    fclose(f);
    char err[256];
    cr_assert_eq(gmt_baseline_parse(&c, text, len, err, sizeof err), 0, "%s\n%s", err, text);
    cr_assert_eq(c.metrics.n, 2);
    for (size_t i = 0; i < 2; i++) {
        cr_expect_eq(gmt_metric_cmp(&c.metrics.v[i], &m[i]), 0, "metric %zu", i);
        cr_expect_eq(c.metrics.v[i].value, m[i].value);
    }
    cr_expect_str_eq(c.category, "nccl");
    cr_expect_eq(memcmp(&c.limits, &b.limits, sizeof b.limits), 0);
    gmt_baseline_free(&c);
    free(text);
}

Test(check, malformed_baseline_exits_2_with_file_line_col)
{
    char *d = cli_tmpdir(), bl[PATH_MAX];
    synth_run(d, normal, 41000);
    snprintf(bl, sizeof bl, "%s/bad.json", d);
    static const struct { const char *text, *where; } cases[] = {
        {"{\n  \"schema\": \"gpumemtrace.baseline/1\",\n  \"metrics\": [1,]\n}\n", ":3:17: "},
        {"{\n  \"schema\": \"gpumemtrace.baseline/1\",\n  \"metrics\": [{\"bytes\": 1, \"rank\": 0}]\n}\n", ":3:15: "},
        {"{\"schema\": \"gpumemtrace.baseline/1\", \"limits\": {\"max_growth_percent\": {\"peek\": 5}}}", ":1:80: "},
        {"{\"schema\": \"gpumemtrace.baseline/1\", \"limits\": {\"max_growth_percent\": {\"default\": 1e2}}}", ":1:83: "},
        {"{\"schema\": \"other/1\"}", ":1:12: "},
        {"[\"\\q\"]", ":1:4: "},
        {"{\"schema\": \"gpumemtrace.baseline/1\", \"metrics\": [{\"bytes\": 99999999999999999999, \"check\": \"peak\", \"rank\": 0}]}", ":1:60: "},
        /* the schema of docs/ci-gate.md: a negative peak, a baseline without metrics,
         * keys of another check, a size beyond 2^56 */
        {"{\"schema\": \"gpumemtrace.baseline/1\", \"metrics\": [{\"bytes\": -5, \"check\": \"peak\", \"device\": 0, \"rank\": 0}]}", ":1:60: \"bytes\" of a peak metric wants 0..2^56, not -5"},
        {"{\"schema\": \"gpumemtrace.baseline/1\", \"limits\": {}}", ":1:1: a baseline needs \"metrics\""},
        {"{\"schema\": \"gpumemtrace.baseline/1\", \"metrics\": [{\"bytes\": 5, \"check\": \"leak\", \"op\": \"AllReduce\", \"rank\": 0}]}", ":1:86: a leak metric has no \"op\""},
        {"{\"schema\": \"gpumemtrace.baseline/1\", \"metrics\": [{\"bytes\": 5, \"check\": \"init\", \"device\": 0, \"op\": \"CommInitRank\", \"rank\": 0}]}", ":1:90: a init metric has no \"device\""},
        {"{\"schema\": \"gpumemtrace.baseline/1\", \"metrics\": [{\"bytes\": 72057594037927937, \"check\": \"peak\", \"rank\": 0}]}", ":1:60: \"bytes\" is out of range"},
        {"{\"metrics\": []}", ":1:1: not a gpumemtrace baseline"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_text(bl, cases[i].text);
        struct result res;
        RUN(&res, NULL, "check", d, "--baseline", bl);
        cr_expect_eq(res.status, 2, "case %zu: %s", i, res.out);
        char want[PATH_MAX + 16];
        snprintf(want, sizeof want, "%s%s", bl, cases[i].where);
        cr_expect(strstr(res.err, want) != NULL, "case %zu: want '%s' in: %s", i, want, res.err);
        cr_expect(strchr(res.err, '\n') == res.err + strlen(res.err) - 1, "one line: %s", res.err);
    }
    struct result res;
    RUN(&res, NULL, "check", d, "--baseline", "/nonexistent/b.json");
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "/nonexistent/b.json") != NULL, "%s", res.err);
    cli_rmtree(d);
}

Test(check, junit_and_github_annotations)
{
    const char *bl = baseline_of(normal, NULL);
    struct synth s = normal;
    s.buffsize = 2 * MiB;
    const char *d = new_run(s);
    char junit[PATH_MAX];
    snprintf(junit, sizeof junit, "%s/report.xml", d);
    struct result res;
    static const char *const gh[] = {"GITHUB_ACTIONS=true", NULL};
    RUN(&res, gh, "check", d, "--baseline", bl,
        "--junit", junit);
    cr_expect_eq(res.status, 1);
    cr_expect(strstr(res.out, "::error title=gpumemtrace::rank 0 first_call AllReduce 2 ranks 1 MiB/call "
                              "grew beyond its limit: 2 MiB -> 4 MiB: +2 MiB") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "max(5%25 of the base") != NULL, "%% is escaped: %s", res.out);
    const char *x = cli_read_file(junit);
    cr_expect(strstr(x, "<testsuite name=\"gpumemtrace check\" tests=\"10\" failures=\"6\"") != NULL, "%s", x);
    /* only the failures, and the verdict, without --verbose */
    cr_expect(strstr(res.out, "PASS") == NULL, "%s", res.out);
    cr_expect(strstr(res.out, "FAILED: 6 of 10 checks") != NULL, "%s", res.out);
    cr_expect(strstr(x, "<testcase classname=\"gpumemtrace.rank 0\" name=\"first_call AllReduce 2 ranks 1 MiB/call\" time=\"0\">\n"
                        "      <failure message=\"2 MiB -&gt; 4 MiB: +2 MiB (2097152 B)") != NULL, "%s", x);
    cr_expect(strstr(x, "name=\"steady AllReduce 2 ranks 1 MiB/call\" time=\"0\"/>") != NULL, "%s", x);
    /* the suite says when, where and how long */
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    char want[400];
    snprintf(want, sizeof want, "errors=\"0\" time=\"");
    cr_expect(strstr(x, want) != NULL, "%s", x);
    snprintf(want, sizeof want, "hostname=\"%s\">", host);
    cr_expect(strstr(x, want) != NULL, "%s", x);
    cr_expect(strstr(x, " timestamp=\"20") != NULL, "%s", x);
    RUN(&res, NULL, "check", d, "--baseline", bl);
    cr_expect(strstr(res.out, "::error") == NULL, "no annotations outside Actions");
}

Test(check, bad_usage_exits_2)
{
    const char *bl = baseline_of(normal, NULL);
    const char *d = new_run(normal);
    struct result res;
    RUN(&res, NULL, "check", d);
    cr_expect_eq(res.status, 2);
    RUN(&res, NULL, "check", d, "--baseline", bl, "--max-growth", "5");
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "'5' is not a percentage") != NULL, "%s", res.err);
    RUN(&res, NULL, "check", d, "--baseline", bl, "--max-growth", "peek=5%");
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "unknown check 'peek'") != NULL, "%s", res.err);
    RUN(&res, NULL, "check", d, "--baseline", bl, "--max-bytes", "12XB");
    cr_expect_eq(res.status, 2);
    RUN(&res, NULL, "check", d, "--baseline", bl, "--write-baseline", "x.json");
    cr_expect_eq(res.status, 2);
    RUN(&res, NULL, "check", "--baseline", bl);
    cr_expect_eq(res.status, 2);
    RUN(&res, NULL, "check", "/nonexistent.gmt", "--baseline", bl);
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "/nonexistent.gmt") != NULL, "%s", res.err);
    RUN(&res, NULL, "check", d, "--baseline", bl, "--category", "nccl");
    cr_expect_eq(res.status, 2, "a baseline written without a category: %s", res.err);
}

Test(check, limits_parse_resolve_and_allow)
{
    struct gmt_limits cli = {0}, base = {0};
    char err[256];
    cr_assert_eq(gmt_limits_parse_growth(&cli, "peak=10%,first_call=0%", err, sizeof err), 0, "%s", err);
    cr_assert_eq(gmt_limits_parse_growth(&base, "1.5%,steady=200%", err, sizeof err), 0, "%s", err);
    cr_assert_eq(gmt_limits_parse_bytes(&base, "4KiB", err, sizeof err), 0, "%s", err);
    uint64_t ppm, bytes;
    gmt_limits_resolve(&cli, &base, GMT_CHECK_peak, &ppm, &bytes);
    cr_expect_eq(ppm, 100000);
    cr_expect_eq(bytes, 4096);
    gmt_limits_resolve(&cli, &base, GMT_CHECK_steady, &ppm, &bytes);
    cr_expect_eq(ppm, 2000000);
    gmt_limits_resolve(&cli, &base, GMT_CHECK_leak, &ppm, &bytes);
    cr_expect_eq(ppm, 15000);
    gmt_limits_resolve(NULL, NULL, GMT_CHECK_leak, &ppm, &bytes);
    cr_expect_eq(ppm, GMT_DEFAULT_GROWTH_PPM);
    cr_expect_eq(bytes, 0);
    cr_expect_eq(gmt_limit_allowed(100 * MiB, 50000, 0), 5 * MiB);
    cr_expect_eq(gmt_limit_allowed(0, 50000, 0), 0, "with a zero base any growth fails");
    cr_expect_eq(gmt_limit_allowed(-5, 50000, 7), 7);
    cr_expect_eq(gmt_limit_allowed(INT64_MAX, 1000000000, 0), UINT64_MAX, "saturates");
    uint64_t v;
    cr_expect_eq(gmt_parse_size("64MiB", 5, &v), 0);
    cr_expect_eq(v, 64 * MiB);
    cr_expect_eq(gmt_parse_size("1.5G", 4, &v), 0);
    cr_expect_eq(v, 3ull << 29);
    cr_expect_eq(gmt_parse_size("2MB", 3, &v), 0);
    cr_expect_eq(v, 2000000);
    cr_expect_neq(gmt_parse_size("", 0, &v), 0);
    cr_expect_neq(gmt_parse_size("99999999999999999999", 20, &v), 0);
    cr_expect_neq(gmt_parse_size("20000000TiB", 11, &v), 0);
    cr_expect_neq(gmt_limits_parse_growth(&cli, "5.12345%", err, sizeof err), 0);
    cr_expect_neq(gmt_limits_parse_growth(&cli, "peak=", err, sizeof err), 0);
    cr_expect_neq(gmt_limits_parse_growth(&cli, "5%,", err, sizeof err), 0);
    char b[32];
    cr_expect_str_eq(gmt_fmt_ppm(b, sizeof b, 25000), "2.5%");
    cr_expect_str_eq(gmt_fmt_ppm(b, sizeof b, 1), "0.0001%");
}

Test(check, diff_puts_the_biggest_change_first)
{
    struct synth s = normal;
    const char *a = new_run(s);
    s.buffsize = 4 * MiB;
    s.allgather = true;
    const char *b = new_run(s);
    struct result res;
    RUN(&res, NULL, "diff", a, b);
    cr_expect_eq(res.status, 0, "%s", res.err);
    const char *r0 = strstr(res.out, "rank 0: ");
    cr_assert_not_null(r0, "%s", res.out);
    const char *first = strstr(r0, "\n      change");
    cr_assert_not_null(first, "%s", res.out);
    first = strchr(first + 1, '\n') + 1;
    cr_expect(strncmp(first, "      +8 MiB", 12) == 0, "peak grew most (6 + 2 MiB): %s", res.out);
    cr_expect(strstr(res.out, "     +6 MiB       2 MiB ->      8 MiB  first_call  AllReduce 2 ranks 1 MiB/call") != NULL,
              "%s", res.out);
    cr_expect(strstr(res.out, "2 MiB  first_call  AllGather 2 ranks 4 KiB/call  (new)") != NULL, "%s", res.out);
    RUN(&res, NULL, "diff", "--json", a, b);
    cr_expect_eq(res.status, 0);
    struct gmt_json *j;
    char err[256];
    cr_assert_eq(gmt_json_parse(res.out, strlen(res.out), &j, err, sizeof err), 0, "%s: %s", err, res.out);
    const struct gmt_json *pairs = gmt_json_get(j, "pairs");
    cr_assert(pairs && pairs->type == GMT_JSON_ARRAY && pairs->n == 2);
    const struct gmt_json *ch = gmt_json_get(&pairs->items[0], "changes");
    cr_assert(ch && ch->n > 0);
    int64_t delta;
    cr_expect_eq(gmt_json_int64(gmt_json_get(&ch->items[0], "delta"), &delta), 0);
    cr_expect_eq(delta, (int64_t)(8 * MiB));
    gmt_json_free(j);
    RUN(&res, NULL, "diff", a);
    cr_expect_eq(res.status, 2);
}

/* The other way round every change is a shrink: the largest first still, not the
 * smallest (a signed order would put -2 MiB before -8 MiB). */
Test(check, diff_puts_the_biggest_shrink_first)
{
    struct synth s = normal;
    const char *a = new_run(s);
    s.buffsize = 4 * MiB;
    s.allgather = true;
    const char *b = new_run(s);
    struct result res;
    RUN(&res, NULL, "diff", b, a);
    cr_expect_eq(res.status, 0, "%s", res.err);
    const char *r0 = strstr(res.out, "rank 0: ");
    cr_assert_not_null(r0, "%s", res.out);
    const char *first = strstr(r0, "\n      change");
    cr_assert_not_null(first, "%s", res.out);
    first = strchr(first + 1, '\n') + 1;
    cr_expect(strncmp(first, "      -8 MiB", 12) == 0, "peak shrank most: %s", res.out);
}

/* ---- the real pipeline: gpumemtrace run + libgpumemtrace.so + the fake NCCL ---- */

static const char *traced(const char *const *env, const char *prog, const char *a1, const char *a2)
{
    char *d = cli_tmpdir();
    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", cli_build_dir(), prog);
    cr_assert_eq(access(path, X_OK), 0, "%s not built (make test-extras)", path);
    struct result res;
    if (a1)
        RUN(&res, env, "run", "-q", "-o", d, "--", path, a1, a2);
    else
        RUN(&res, env, "run", "-q", "-o", d, "--", path);
    cr_assert_eq(res.status, 0, "%s: %s%s", prog, res.out, res.err);
    return d;
}

#define FAKE_2PROC "fakes/progs/fake_nccl_2proc"

Test(fakes, doubled_nccl_buffsize_fails_naming_the_collective, .timeout = 60)
{
    static const char *const dflt[] = {"NCCL_BUFFSIZE", NULL};
    static const char *const twice[] = {"NCCL_BUFFSIZE=8388608", NULL};
    const char *base = traced(dflt, FAKE_2PROC, NULL, NULL);
    const char *big = traced(twice, FAKE_2PROC, NULL, NULL);
    char bl[PATH_MAX];
    snprintf(bl, sizeof bl, "%s/nccl-baseline.json", base);
    struct result res;
    RUN(&res, NULL, "check", base, "--write-baseline", bl);
    cr_assert_eq(res.status, 0, "%s", res.err);
    RUN(&res, NULL, "check", big, "--baseline", bl, "--verbose");
    cr_expect_eq(res.status, 1, "out:\n%s\nerr:\n%s", res.out, res.err);
    for (int r = 0; r < 2; r++) {
        char want[128];
        snprintf(want, sizeof want, "FAIL  rank %d  first_call AllReduce 2 ranks 4 MiB/call", r);
        cr_expect(strstr(res.out, want) != NULL, "want '%s' in:\n%s", want, res.out);
    }
    /* per channel the receive buffer grows by the 4 MiB more of NCCL_BUFFSIZE */
    cr_expect(strstr(res.out, "+8 MiB (limit +1.2 MiB)") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "PASS  rank 0  steady AllReduce") != NULL, "%s", res.out);
}

Test(fakes, unchanged_rerun_passes_and_the_baseline_is_clean, .timeout = 60)
{
    const char *one = traced(NULL, FAKE_2PROC, NULL, NULL);
    const char *two = traced(NULL, FAKE_2PROC, NULL, NULL);
    char bl[PATH_MAX];
    snprintf(bl, sizeof bl, "%s/nccl-baseline.json", one);
    struct result res;
    RUN(&res, NULL, "check", one, "--write-baseline", bl, "--max-growth", "5%,steady=0%");
    cr_assert_eq(res.status, 0, "%s", res.err);
    RUN(&res, NULL, "check", two, "--baseline", bl, "--verbose");
    cr_expect_eq(res.status, 0, "out:\n%s\nerr:\n%s", res.out, res.err);
    cr_expect(strstr(res.out, "PASS  rank 1  init CommInitRank 2 ranks") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "(0 new, 0 gone;") != NULL, "%s", res.out);
    const char *text = cli_read_file(bl);
    char host[256] = "";
    gethostname(host, sizeof host - 1);
    cr_expect(!host[0] || strstr(text, host) == NULL, "host name in the baseline:\n%s", text);
    cr_expect(strstr(text, "0x") == NULL && strstr(text, "time") == NULL && strstr(text, "pid") == NULL,
              "%s", text);
    /* no pid of the traced processes: the trace files are named after them */
    char **files;
    size_t n;
    cr_assert_eq(gmt_list_traces(one, &files, &n), 0);
    cr_expect_eq(n, 2);
    for (size_t i = 0; i < n; i++) {
        struct gmt_trace t;
        char err[256];
        cr_assert_eq(gmt_trace_load(&t, files[i], err, sizeof err), 0, "%s", err);
        char pid[32];
        snprintf(pid, sizeof pid, "%u", t.proc.pid);
        cr_expect(strstr(text, pid) == NULL, "pid %s in the baseline:\n%s", pid, text);
        gmt_trace_free(&t);
        free(files[i]);
    }
    free(files);
}

Test(fakes, leak_of_one_buffer_per_step_is_caught, .timeout = 60)
{
    const char *good = traced(NULL, "check/nccl_steps", "4", "0");
    const char *leaky = traced(NULL, "check/nccl_steps", "4", "1048576");
    char bl[PATH_MAX];
    snprintf(bl, sizeof bl, "%s/nccl-baseline.json", good);
    struct result res;
    RUN(&res, NULL, "check", good, "--write-baseline", bl);
    cr_assert_eq(res.status, 0, "%s", res.err);
    RUN(&res, NULL, "check", good, "--baseline", bl);
    cr_expect_eq(res.status, 0, "the run it was written from passes: %s", res.out);
    RUN(&res, NULL, "check", leaky, "--baseline", bl, "--max-growth", "peak=50%");
    cr_expect_eq(res.status, 1, "out:\n%s\nerr:\n%s", res.out, res.err);
    cr_expect(strstr(res.out, "FAIL  rank 0  leak device 0") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "FAIL  rank 1  leak device 1") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "0 B -> 4 MiB  +4 MiB (limit +0 B)") != NULL, "four steps, 1 MiB each: %s", res.out);
    cr_expect(strstr(res.out, "FAILED: 2 of 10") != NULL, "only the leaks: %s", res.out);
}

Test(fakes, category_restricts_peak_and_leak, .timeout = 60)
{
    const char *d = traced(NULL, FAKE_2PROC, NULL, NULL);
    char bl[PATH_MAX];
    snprintf(bl, sizeof bl, "%s/nccl-baseline.json", d);
    struct result res;
    RUN(&res, NULL, "check", d, "--write-baseline", bl, "--category", "nccl");
    cr_assert_eq(res.status, 0, "%s", res.err);
    const char *text = cli_read_file(bl);
    cr_expect(strstr(text, "\"category\": \"nccl\"") != NULL, "%s", text);
    /* the 4 MiB user buffer is not NCCL's: the nccl peak is init + first call */
    cr_expect(strstr(text, "{\"bytes\": 31457280, \"category\": \"nccl\", \"check\": \"peak\", \"device\": 0, \"rank\": 0}") != NULL,
              "%s", text);
    RUN(&res, NULL, "check", d, "--baseline", bl, "--verbose");
    cr_expect_eq(res.status, 0, "%s", res.out);
    cr_expect(strstr(res.out, "peak device 0 nccl") != NULL, "%s", res.out);
    RUN(&res, NULL, "check", d, "--baseline", bl, "--category", "user");
    cr_expect_eq(res.status, 2, "%s", res.err);
}

/* ---- a job of many ranks ---- */

/* n ranks of one run into a new directory; rank `odd` (-1 none) with buffsize `odd_buf`. */
static const char *job_of(int n, int odd, uint64_t odd_buf)
{
    char *d = cli_tmpdir();
    for (int r = 0; r < n; r++) {
        struct synth s = normal;
        s.rank = r;
        s.pid = 60000 + (uint32_t)r;
        s.world = n;
        if (r == odd) {
            s.buffsize = odd_buf;
            static char env[64];
            snprintf(env, sizeof env, "NCCL_BUFFSIZE=%llu", (unsigned long long)(2 * odd_buf));
            s.env = env;
        }
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/gpumemtrace.%s.%u.gmt", d, s.host, s.pid);
        synth_write(path, &s);
    }
    return d;
}

Test(check, a_rank_set_change_is_one_message_until_told_how_to_compare)
{
    const char *bl = baseline_of(normal, NULL); /* 2 ranks */
    const char *eight = job_of(8, -1, 0);
    struct result res;
    static const char *const gh[] = {"GITHUB_ACTIONS=true", NULL};
    RUN(&res, gh, "check", eight, "--baseline", bl);
    cr_expect_eq(res.status, 1, "%s", res.out);
    cr_expect_eq(count_of(res.out, "\n"), 2, "one message and one annotation: %s", res.out);
    cr_expect(strstr(res.out, "FAILED: the baseline has 2 ranks (0-1), the traces have 8 ranks "
                              "(0-7): compare with --per-rank") == res.out, "%s", res.out);
    cr_expect_eq(count_of(res.out, "::error"), 1, "%s", res.out);
    RUN(&res, NULL, "check", eight, "--baseline", bl, "--per-rank");
    cr_expect_eq(res.status, 0, "%s", res.out);
    cr_expect(strstr(res.out, "not in the baseline, not checked: 6 ranks (2-7)\n"), "%s", res.out);
    cr_expect(strstr(res.out, "ok: 10 checks within their limits"), "the two ranks both have: %s", res.out);
    RUN(&res, NULL, "check", eight, "--baseline", bl, "--aggregate");
    cr_expect_eq(res.status, 0, "%s", res.out);
    cr_expect(strstr(res.out, "the job across ranks: the baseline has 2 ranks (0-1), the traces have 8 ranks (0-7)\n"),
              "%s", res.out);
    /* 5 quantities (init, first_call, steady, peak, leak) x min/median/max */
    cr_expect(strstr(res.out, "ok: 15 checks within their limits"), "%s", res.out);
    RUN(&res, NULL, "check", eight, "--baseline", bl, "--aggregate", "--per-rank");
    cr_expect_eq(res.status, 2);
}

Test(check, aggregate_names_the_statistic_an_outlier_moves)
{
    const char *base = job_of(8, -1, 0);
    char bl[PATH_MAX];
    snprintf(bl, sizeof bl, "%s/nccl-baseline.json", base);
    struct result res;
    RUN(&res, NULL, "check", base, "--write-baseline", bl);
    cr_assert_eq(res.status, 0, "%s", res.err);
    const char *odd = job_of(8, 5, 4 * MiB); /* rank 5's first AllReduce: 8 MiB, not 2 */
    RUN(&res, NULL, "check", odd, "--baseline", bl, "--aggregate", "--verbose");
    cr_expect_eq(res.status, 1, "%s", res.out);
    cr_expect(strstr(res.out, "FAIL  ranks max     first_call AllReduce 2 ranks 1 MiB/call"), "%s", res.out);
    cr_expect(strstr(res.out, "PASS  ranks median  first_call AllReduce 2 ranks 1 MiB/call"), "%s", res.out);
    cr_expect(strstr(res.out, "PASS  ranks min     first_call AllReduce 2 ranks 1 MiB/call"), "%s", res.out);
    /* per rank, the same run fails rank 5 only */
    RUN(&res, NULL, "check", odd, "--baseline", bl);
    cr_expect_eq(res.status, 1, "%s", res.out);
    cr_expect(strstr(res.out, "FAIL  rank 5  first_call AllReduce"), "%s", res.out);
    cr_expect(!strstr(res.out, "rank 4 "), "%s", res.out);
}

Test(check, aggregate_groups_ranks_alike_and_folds_agreeing_statistics)
{
    const char *base = job_of(8, -1, 0);
    char bl[PATH_MAX];
    snprintf(bl, sizeof bl, "%s/nccl-baseline.json", base);
    struct result res;
    RUN(&res, NULL, "check", base, "--write-baseline", bl);
    cr_assert_eq(res.status, 0, "%s", res.err);
    /* the same run: every check's min, median and max agree, one row each */
    RUN(&res, NULL, "check", base, "--baseline", bl, "--aggregate", "--verbose");
    cr_expect_eq(res.status, 0, "%s", res.out);
    cr_expect(strstr(res.out, "the traces: 8 ranks in 1 group of ranks alike: ranks 0-7 (8 alike)\n") == res.out,
              "%s", res.out);
    cr_expect_eq(count_of(res.out, "\nPASS  all ranks  "), 5, "%s", res.out);
    cr_expect(!strstr(res.out, "ranks min") && !strstr(res.out, "ranks max"), "%s", res.out);
    cr_expect(strstr(res.out, "ok: 15 checks within their limits"), "the tally counts each: %s", res.out);
    cr_expect(strstr(res.out, "5 rows for 15 checks"), "%s", res.out);
    /* rank 5 apart: its group named, and the statistics it moves not folded */
    const char *odd = job_of(8, 5, 4 * MiB);
    RUN(&res, NULL, "check", odd, "--baseline", bl, "--aggregate", "--verbose");
    cr_expect_eq(res.status, 1, "%s", res.out);
    cr_expect(strstr(res.out, "the traces: 8 ranks in 2 groups of ranks alike: ranks 0-4, 6-7 (7 alike); rank 5\n"),
              "%s", res.out);
    cr_expect(strstr(res.out, "FAIL  ranks max     first_call AllReduce 2 ranks 1 MiB/call"), "%s", res.out);
    cr_expect(!strstr(res.out, "all ranks  first_call AllReduce"), "%s", res.out);
    cr_expect(strstr(res.out, "PASS  all ranks     init "), "%s", res.out);
    /* within its limit, the max that rank 5 moves is still its own row */
    RUN(&res, NULL, "check", odd, "--baseline", bl, "--aggregate", "--verbose", "--max-bytes", "64MiB");
    cr_expect_eq(res.status, 0, "%s", res.out);
    cr_expect(strstr(res.out, "PASS  ranks max     first_call AllReduce 2 ranks 1 MiB/call"), "%s", res.out);
    cr_expect(!strstr(res.out, "all ranks  first_call AllReduce"), "%s", res.out);
    /* without --verbose, the failures only: the max of first_call, peak and leak */
    RUN(&res, NULL, "check", odd, "--baseline", bl, "--aggregate");
    cr_expect_eq(count_of(res.out, "FAIL  ranks max  "), 3, "%s", res.out);
    cr_expect_eq(count_of(res.out, "FAIL  "), 3, "%s", res.out);
    /* every rank grew alike: each failure is one row */
    struct synth big = normal;
    big.buffsize = 2 * MiB;
    RUN(&res, NULL, "check", new_run(big), "--baseline", bl, "--aggregate");
    cr_expect_eq(res.status, 1, "%s", res.out);
    cr_expect(strstr(res.out, "FAIL  all ranks  first_call AllReduce 2 ranks 1 MiB/call"), "%s", res.out);
    cr_expect(!strstr(res.out, "FAIL  ranks "), "%s", res.out);
    /* per rank, nothing is folded or grouped */
    RUN(&res, NULL, "check", base, "--baseline", bl, "--verbose");
    cr_expect(!strstr(res.out, "all ranks") && !strstr(res.out, "alike"), "%s", res.out);
}

Test(check, github_gets_at_most_ten_errors_and_a_step_summary)
{
    const char *base = job_of(8, -1, 0);
    char bl[PATH_MAX], sum[PATH_MAX], env_sum[PATH_MAX + 32];
    snprintf(bl, sizeof bl, "%s/nccl-baseline.json", base);
    snprintf(sum, sizeof sum, "%s/step-summary.md", base);
    snprintf(env_sum, sizeof env_sum, "GITHUB_STEP_SUMMARY=%s", sum);
    struct result res;
    RUN(&res, NULL, "check", base, "--write-baseline", bl);
    cr_assert_eq(res.status, 0, "%s", res.err);
    /* every rank's buffers doubled: 3 failures per rank, 24 in all */
    char *d = cli_tmpdir();
    for (int r = 0; r < 8; r++) {
        struct synth s = normal;
        s.rank = r;
        s.pid = 61000 + (uint32_t)r;
        s.buffsize = 2 * MiB;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/t.%u.gmt", d, s.pid);
        synth_write(path, &s);
    }
    const char *const gh[] = {"GITHUB_ACTIONS=true", env_sum, NULL};
    RUN(&res, gh, "check", d, "--baseline", bl);
    cr_expect_eq(res.status, 1, "%s", res.out);
    cr_expect(strstr(res.out, "FAILED: 24 of 40 checks"), "%s", res.out);
    cr_expect_eq(count_of(res.out, "::error"), 10, "%s", res.out);
    cr_expect(strstr(res.out, "::error title=gpumemtrace::15 more checks grew beyond their limits (24 in all)"),
              "%s", res.out);
    const char *md = cli_read_file(sum);
    cr_expect(strstr(md, "### gpumemtrace check: FAILED\n\n24 of 40 checks grew beyond their limits.\n"), "%s", md);
    cr_expect(strstr(md, "| rank 5 | first_call AllReduce 2 ranks 1 MiB/call | 2 MiB | 4 MiB | +2 MiB | +102 KiB |\n"),
              "%s", md);
    cr_expect_eq(count_of(md, "\n| rank "), 24, "%s", md);
}

/* ---- merge: the rank that stands out, and runs that must not mix ---- */

Test(merge, the_rank_that_stands_out_is_the_farthest_from_the_median)
{
    struct result res;
    /* rank 3's first AllReduce adds 1 MiB where the others add 2 MiB: below, not above */
    RUN(&res, NULL, "merge", "--no-symbols", job_of(8, 3, MiB / 2));
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "rank 3 stands out: +1 MiB (median +2 MiB)"), "%s", res.out);
    RUN(&res, NULL, "merge", "--no-symbols", "--json", job_of(8, 6, 8 * MiB));
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "\"first_tracked_median_bytes\": 2097152, \"outlier_rank\": 6, "
                              "\"outlier_first_tracked_bytes\": 16777216}"), "%s", res.out);
    RUN(&res, NULL, "merge", "--no-symbols", job_of(4, -1, 0));
    cr_expect(!strstr(res.out, "stands out"), "all alike: %s", res.out);
}

Test(merge, refuses_duplicate_ranks_and_other_jobs_unless_allowed)
{
    struct result res;
    const char *a = job_of(2, -1, 0), *b = job_of(2, -1, 0);
    RUN(&res, NULL, "merge", "--no-symbols", a, b);
    cr_expect_eq(res.status, 2, "%s", res.out);
    cr_expect(strstr(res.err, "gpumemtrace merge: two traces of rank 0: "), "%s", res.err);
    cr_expect(strstr(res.err, "(--allow-mixed merges them anyway)\n"), "%s", res.err);
    cr_expect_str_empty(res.out);
    RUN(&res, NULL, "merge", "--no-symbols", "--allow-mixed", a, b);
    cr_expect_eq(res.status, 0, "%s", res.err);
    /* rank 0 of job x beside rank 1 of job y */
    char *d = cli_tmpdir();
    const char *jobs[2] = {"x", "y"};
    for (int r = 0; r < 2; r++) {
        struct synth s = normal;
        s.rank = r;
        s.pid = 62000 + (uint32_t)r;
        s.job = jobs[r];
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/t%d.gmt", d, r);
        synth_write(path, &s);
    }
    RUN(&res, NULL, "merge", "--no-symbols", d);
    cr_expect_eq(res.status, 2, "%s", res.out);
    cr_expect(strstr(res.err, "traces of different jobs: ") && strstr(res.err, " is job run:x, ") &&
              strstr(res.err, " is job run:y "), "%s", res.err);
}

/* ---- summary of a job ---- */

Test(job, the_overview_names_the_outlier_and_its_setting)
{
    struct result res;
    const char *d = job_of(8, 5, 4 * MiB); /* rank 5: NCCL_BUFFSIZE=8 MiB, its AllReduce adds 8 MiB */
    RUN(&res, NULL, "summary", "--no-symbols", "--width", "200", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "gpumemtrace summary of a job: 8 trace(s), 8 with a rank, on 1 host(s)\n"
                              "  world size 8, every rank here\n"
                              "  peak per rank      min 8 MiB (rank 0)  median 8 MiB  max 14 MiB (rank 5)\n") == res.out,
              "%s", res.out);
    cr_expect(strstr(res.out, "    rank 5: peak 14 MiB, NCCL 0 B; recorded differences: NCCL_BUFFSIZE=8388608 "
                              "(most ranks: unset)\n"), "%s", res.out);
    cr_expect(strstr(res.out, "    AllReduce 2 ranks 1 MiB/call on 8 rank(s): median +2 MiB, rank 5 +8 MiB\n"),
              "%s", res.out);
    cr_expect(strstr(res.out, "    ranks 0-4, 6-7 (7): report of rank 0 below\n    ranks 5 (1): report of rank 5 below\n"),
              "%s", res.out);
    /* two reports, not eight: short enough to read */
    cr_expect_eq(count_of(res.out, "gpumemtrace summary of /"), 2, "%s", res.out);
    cr_expect(strstr(res.out, "== ranks 0-4, 6-7: 7 ranks alike; the report of rank 0 stands for them =="), "%s", res.out);
    cr_expect_lt(count_of(res.out, "\n"), 150, "%s", res.out);
    /* the settings block lists what is set */
    cr_expect(strstr(res.out, "  NCCL env  NCCL_BUFFSIZE=8388608; the rest unset (NCCL's defaults)\n"), "%s", res.out);
    cr_expect(strstr(res.out, "  NCCL env  none set (NCCL's defaults)\n"), "%s", res.out);
    RUN(&res, NULL, "summary", "--no-symbols", "--per-rank", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect_eq(count_of(res.out, "gpumemtrace summary of /"), 8, "%s", res.out);
    /* the spelling of report, explain and diff */
    RUN(&res, NULL, "summary", "--no-symbols", "--every-rank", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect_eq(count_of(res.out, "gpumemtrace summary of /"), 8, "%s", res.out);
    RUN(&res, NULL, "summary", "--no-symbols", "--json", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "\"world_size\": 8, \"missing_ranks\": 0, \"peak\": {\"min_bytes\": 8388608, "
                              "\"min_rank\": 0, \"median_bytes\": 8388608, \"max_bytes\": 14680064, \"max_rank\": 5}"),
              "%s", res.out);
    cr_expect(strstr(res.out, "\"peak_bytes\": 14680064, \"nccl_bytes\": 0, \"differences\": "
                              "\"NCCL_BUFFSIZE=8388608 (most ranks: unset)\", \"untracked_bytes\": null"), "%s", res.out);
    cr_expect_eq(count_of(res.out, "\"file\": "), 9, "every trace in JSON, and the outlier: %s", res.out);
}

/* A rank stands out by its peak only when it is more than 10 % and more than 1 MiB from
 * the median: rank 2's extra 0.88 MiB is 11 % of 8 MiB and under 1 MiB, so no rank does
 * (its calls are the others'); 1.5 MiB more, and it does. */
static const char *job_with_leak(int n, int odd, uint64_t leak)
{
    char *d = cli_tmpdir();
    for (int r = 0; r < n; r++) {
        struct synth s = normal;
        s.rank = r;
        s.pid = 61000 + (uint32_t)r;
        s.world = n;
        if (r == odd)
            s.leak = leak;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/gpumemtrace.%s.%u.gmt", d, s.host, s.pid);
        synth_write(path, &s);
    }
    return d;
}

Test(job, a_rank_stands_out_by_its_peak_past_10_percent_and_1_mib)
{
    struct result res;
    RUN(&res, NULL, "summary", "--no-symbols", "--width", "200", job_with_leak(4, 2, 300 * 1024));
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "max 8.88 MiB (rank 2)") != NULL, "%s", res.out);
    cr_expect(!strstr(res.out, "    rank 2: peak"), "0.9 MiB is under 1 MiB: %s", res.out);
    RUN(&res, NULL, "summary", "--no-symbols", "--width", "200", job_with_leak(4, 2, 512 * 1024));
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "    rank 2: peak 9.5 MiB") != NULL, "%s", res.out);
    /* of an even count the median is the lower middle one: a peak some rank has */
    RUN(&res, NULL, "summary", "--no-symbols", "--width", "200", job_with_leak(2, 1, 512 * 1024));
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "min 8 MiB (rank 0)  median 8 MiB  max 9.5 MiB (rank 1)") != NULL, "%s",
              res.out);
}

Test(job, a_missing_rank_is_said)
{
    const char *d = job_of(8, -1, 0);
    char cmd[PATH_MAX + 32];
    snprintf(cmd, sizeof cmd, "%s/gpumemtrace.node-a.60003.gmt", d);
    cr_assert_eq(unlink(cmd), 0);
    struct result res;
    RUN(&res, NULL, "summary", "--no-symbols", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "  world size 8, 1 rank(s) MISSING\n"), "%s", res.out);
    cr_expect(strstr(res.out, "    ranks 0-2, 4-7 (7): report of rank 0 below\n"), "%s", res.out);
}

/* 40 traces: read by worker processes (2 or more cores), the same answer as one by one */
Test(job, many_traces_read_in_parallel_give_the_same_job)
{
    const char *d = job_of(40, 17, 2 * MiB);
    char bad[PATH_MAX];
    snprintf(bad, sizeof bad, "%s/zz-cut.gmt", d);
    write_text(bad, "GMTRACE-cut");
    struct result res;
    RUN(&res, NULL, "summary", "--no-symbols", "--json", d);
    cr_expect_eq(res.status, 2, "one trace is unreadable: %s", res.err);
    cr_expect_eq(count_of(res.err, "\n"), 1, "said once: %s", res.err);
    cr_expect(strstr(res.err, "zz-cut.gmt"), "%s", res.err);
    cr_expect(strstr(res.out, "\"job\": {\"traces\": 40, \"ranked\": 40, \"hosts\": 1, \"job_id\": null, "
                              "\"world_size\": 40, \"missing_ranks\": 0, \"peak\": {\"min_bytes\": 8388608, "
                              "\"min_rank\": 0, \"median_bytes\": 8388608, \"max_bytes\": 10485760, \"max_rank\": 17}"),
              "%s", res.out);
    cr_expect(strstr(res.out, "\"rank\": 17, \"file\": "), "%s", res.out);
    unlink(bad);
    RUN(&res, NULL, "summary", "--no-symbols", d);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "    ranks 0-16, 18-39 (39): report of rank 0 below\n    ranks 17 (1): report of rank 17 below\n"),
              "%s", res.out);
}

Test(job, ranks_are_grouped_by_host)
{
    char *d = cli_tmpdir();
    for (int r = 0; r < 8; r++) {
        struct synth s = normal;
        s.rank = r;
        s.pid = 63000 + (uint32_t)r;
        s.world = 8;
        s.host = r < 3 || r == 7 ? "node-a" : "node-b";
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/t%d.gmt", d, r);
        synth_write(path, &s);
    }
    struct result res;
    RUN(&res, NULL, "summary", "--no-symbols", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "on 2 host(s)\n"), "%s", res.out);
    cr_expect(strstr(res.out, "\n  hosts  node-a: ranks 0-2,7; node-b: ranks 3-6\n"), "%s", res.out);
}
