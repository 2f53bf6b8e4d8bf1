/* test_export.c: `export --format chrome|sqlite|csv` on stored, generated and traced jobs, checked by tests/export_check.py against the trace-event format and `summary --json`. */
#include <criterion/criterion.h>
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
#include "golden/tracebuild.h"

#define MiB (1ull << 20)

#define RUN(res, ...) CLI_RUN((res), NULL, __VA_ARGS__)
#define CHECK(res, ...) cli_exec((res), NULL, (const char *const[]){"python3", "tests/export_check.py", __VA_ARGS__, NULL})

TestSuite(export, .fini = cli_tmpdirs_remove);

static const char *in(const char *dir, const char *name)
{
    static char bufs[16][PATH_MAX];
    static int k;
    char *b = bufs[k++ % 16];
    snprintf(b, PATH_MAX, "%s/%s", dir, name);
    return b;
}

/* ---- a job of ranks that differ in one thing (as tests/test_check.c builds them) ---- */

/* One rank: CommInitRank (2 MiB), a user buffer (4 MiB), `calls` AllReduces of which the
 * first allocates 2 x buffsize inside the call, on a thread with a name; then four loop
 * AllReduces in call form, two timed at a rate of 8 and two not, and a group whose one
 * member was written the short way (not timed). */
static void rank_write(const char *path, int rank, uint32_t pid, uint64_t buffsize, int calls)
{
    struct tb b = {0};
    tb_header_current(&b);
    /* a host name that CSV must quote */
    static const char host[] = "node \"a\",1";
    char var[64];
    memcpy(var, host, sizeof host);
    memcpy(var + sizeof host, "train", 6);
    struct gmt_rec_process p = {.pid = pid, .ppid = 1, .rank = rank, .local_rank = rank, .world_size = 4,
        .local_world_size = 4, .realtime_ns = 1700000000000000000ull + 1000ull * (uint64_t)rank,
        .monotonic_ns = TB_T0, .host_len = sizeof host, .cmdline_len = 6};
    tb_rec(&b, GMT_REC_PROCESS, 0, &p, sizeof p, var, sizeof host + 6);
    struct gmt_rec_chunk ch = {.tid = pid};
    tb_rec(&b, GMT_REC_CHUNK, 0, &ch, sizeof ch, NULL, 0);
    struct gmt_rec_thread th = {.time_ns = TB_T0 + 5, .tid = pid, .name = "train"};
    tb_rec(&b, GMT_REC_THREAD, 0, &th, sizeof th, NULL, 0);
    struct gmt_rec_cuctx cx = {.context = 0xc0ffee00ull + pid, .device = 0};
    tb_rec(&b, GMT_REC_CUCTX, 0, &cx, sizeof cx, NULL, 0);
    uint64_t comm = 0x5500000000ull + pid * 16ull, addr = 0x7e0000000000ull + pid * 0x10000000ull;
    uint32_t sid = 1;
    struct gmt_rec_scope_begin ib = {.dt = 10, .scope_id = sid, .count = 2, .datatype = -1, .peer = rank};
    tb_rec(&b, GMT_REC_SCOPE_BEGIN, GMT_OP_CommInitRank, &ib, sizeof ib, NULL, 0);
    struct gmt_rec_alloc a = {.address = addr++, .bytes = 2 * MiB, .dt = 10, .scope_id = sid,
                              .kind = GMT_KIND_PHYSICAL, .device = 0};
    tb_rec(&b, GMT_REC_ALLOC, GMT_API_cuMemCreate, &a, sizeof a, NULL, 0);
    struct gmt_rec_comm cm = {.comm = comm, .unique_id_hash = 0x1234, .rank = rank, .nranks = 4, .device = 0, .dt = 10};
    tb_rec(&b, GMT_REC_COMM, 0, &cm, sizeof cm, NULL, 0);
    struct gmt_rec_scope_end ie = {.dt = 10, .scope_id = sid};
    tb_rec(&b, GMT_REC_SCOPE_END, GMT_OP_CommInitRank, &ie, sizeof ie, NULL, 0);
    struct gmt_rec_alloc ua = {.address = addr++, .bytes = 4 * MiB, .dt = 10, .kind = GMT_KIND_DEVICE, .device = -1};
    tb_rec(&b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &ua, sizeof ua, NULL, 0);
    for (int k = 0; k < calls; k++) {
        sid++;
        struct gmt_rec_scope_begin cb = {.dt = 10, .scope_id = sid, .comm = comm, .count = MiB / 4,
                                         .datatype = 7, .peer = -1};
        tb_rec(&b, GMT_REC_SCOPE_BEGIN, GMT_OP_AllReduce, &cb, sizeof cb, NULL, 0);
        if (k == 0) {
            struct gmt_rec_alloc ca = {.address = addr++, .bytes = 2 * buffsize, .dt = 10, .scope_id = sid,
                                       .kind = GMT_KIND_PHYSICAL, .device = 0};
            tb_rec(&b, GMT_REC_ALLOC, GMT_API_cuMemCreate, &ca, sizeof ca, NULL, 0);
        }
        struct gmt_rec_scope_end ce = {.dt = 10, .scope_id = sid};
        tb_rec(&b, GMT_REC_SCOPE_END, GMT_OP_AllReduce, &ce, sizeof ce, NULL, 0);
    }
    struct gmt_rec_scope_begin f = {.comm = comm, .count = MiB / 4, .stream = 0, .datatype = 7, .peer = -1};
    for (uint32_t k = 0; k < 4; k++)
        tb_scope_call_w(&b, GMT_OP_AllReduce, ++sid, 0, 20000, k % 2 ? 3000 + 1000 * k + 10 * (uint32_t)rank : 0,
                        k ? 0 : GMT_CALL_HAS_ALL, &f, k % 2 ? 8 : 0);
    uint32_t group = ++sid;
    tb_scope_begin(&b, GMT_OP_Group, group, 0, 0, 0, 10);
    tb_scope_begin(&b, GMT_OP_AllGather, ++sid, group, comm, 1024, 0);
    tb_scope_end(&b, GMT_OP_AllGather, sid, 0, 0);
    tb_scope_end(&b, GMT_OP_Group, group, 0, 30);
    struct gmt_rec_free fr = {.address = 0x7e0000000000ull + pid * 0x10000000ull + 1, .dt = 10};
    tb_rec(&b, GMT_REC_FREE, GMT_API_cudaFree, &fr, sizeof fr, NULL, 0);
    struct gmt_rec_end end = {.time_ns = TB_T0 + 1000000};
    tb_rec(&b, GMT_REC_END, 0, &end, sizeof end, NULL, 0);
    cr_assert_eq(tb_write(&b, path), 0);
    tb_free(&b);
}

/* four ranks; rank 2's first AllReduce allocates 8 MiB, the others' 2 */
static const char *job_dir(void)
{
    char *d = cli_tmpdir();
    for (int r = 0; r < 4; r++) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/gpumemtrace.node-a.%u.gmt", d, 70000u + (unsigned)r);
        rank_write(path, r, 70000u + (unsigned)r, r == 2 ? 4 * MiB : MiB, 3);
    }
    return d;
}

static void summary_of(const char *json, const char *const *traces, size_t n)
{
    const char *argv[16] = {"gpumemtrace", "summary", "--json", "--no-symbols"};
    size_t k = 4;
    for (size_t i = 0; i < n; i++)
        argv[k++] = traces[i];
    argv[k] = NULL;
    struct result res;
    cli_exec(&res, &(struct cli_io){.out = json}, argv);
    cr_assert_eq(res.status, 0, "summary: %s", res.err);
}

static const char *const goldens[] = {"tests/golden/demo-r0.gmt", "tests/golden/demo-r1.gmt",
                                      "tests/golden/sample.gmt", "tests/golden/nvtx.gmt",
                                      "tests/golden/cut.gmt"};

Test(export, stored_traces_in_all_three_formats_agree_with_the_summary, .timeout = 60)
{
    const char *d = cli_tmpdir();
    const char *sum = in(d, "summary.json"), *json = in(d, "trace.json"), *db = in(d, "job.db"),
               *csv = in(d, "csv");
    summary_of(sum, goldens, 5);
    struct result res;
    RUN(&res, "export", "--format", "chrome", "--no-symbols", "-o", json, goldens[0], goldens[1], goldens[2],
        goldens[3], goldens[4]);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect_str_empty(res.out);
    CHECK(&res, "chrome", json, sum, "10000");
    cr_expect_eq(res.status, 0, "%s%s", res.out, res.err);
    RUN(&res, "export", "--format", "sqlite", "--no-symbols", "-o", db, goldens[0], goldens[1], goldens[2],
        goldens[3], goldens[4]);
    cr_assert_eq(res.status, 0, "%s", res.err);
    CHECK(&res, "sqlite", db, sum);
    cr_expect_eq(res.status, 0, "%s%s", res.out, res.err);
    RUN(&res, "export", "--format", "csv", "--no-symbols", "-o", csv, goldens[0], goldens[1], goldens[2],
        goldens[3], goldens[4]);
    cr_assert_eq(res.status, 0, "%s", res.err);
    CHECK(&res, "csv", csv, sum);
    cr_expect_eq(res.status, 0, "%s%s", res.out, res.err);
}

Test(export, two_ranks_are_two_processes_named_by_rank, .timeout = 60)
{
    const char *d = cli_tmpdir();
    const char *json = in(d, "trace.json");
    struct result res;
    RUN(&res, "export", "--format", "chrome", "--no-symbols", "-o", json, goldens[1], goldens[0]);
    cr_assert_eq(res.status, 0, "%s", res.err);
    FILE *f = fopen(json, "r");
    cr_assert_not_null(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    cr_expect(strstr(text, "{\"ph\":\"M\",\"pid\":0,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"rank 0 (vm pid 24186)\"}}"),
              "rank 0's process");
    cr_expect(strstr(text, "{\"ph\":\"M\",\"pid\":1,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"rank 1 (vm pid 24187)\"}}"),
              "rank 1's process");
    cr_expect(strstr(text, "\"name\":\"thread_name\",\"args\":{\"name\":\"NCCL Service 0\"}"), "NCCL's thread named");
}

Test(export, a_big_trace_keeps_its_peak_in_few_points, .timeout = 120)
{
    const char *d = cli_tmpdir();
    const char *tr = in(d, "big.gmt"), *sum = in(d, "summary.json"), *json = in(d, "trace.json");
    char gen[PATH_MAX + 32];
    snprintf(gen, sizeof gen, "%s/bench/gen_trace", cli_build_dir());
    struct result res;
    cli_exec(&res, NULL, (const char *const[]){gen, "200000", tr, NULL});
    cr_assert_eq(res.status, 0, "%s", res.err);
    summary_of(sum, &tr, 1);
    RUN(&res, "export", "--format", "chrome", "--max-points", "300", "--no-symbols", "-o", json, tr);
    cr_assert_eq(res.status, 0, "%s", res.err);
    CHECK(&res, "chrome", json, sum, "300");
    cr_expect_eq(res.status, 0, "%s%s", res.out, res.err);
    /* the check itself: 300 points were needed, fewer would not have held them */
    cr_expect(strstr(res.out, "most points: 2") != NULL, "%s", res.out);
    CHECK(&res, "chrome", json, sum, "150");
    cr_expect_eq(res.status, 1, "a track of up to 300 points passed a limit of 150: %s", res.out);
    const char *db = in(d, "big.db");
    RUN(&res, "export", "--format", "sqlite", "--no-symbols", "-o", db, tr);
    cr_assert_eq(res.status, 0, "%s", res.err);
    CHECK(&res, "sqlite", db, sum);
    cr_expect_eq(res.status, 0, "%s%s", res.out, res.err);
}

Test(export, the_documented_queries_answer_as_the_summary_does, .timeout = 60)
{
    const char *d = job_dir(), *o = cli_tmpdir();
    const char *sum = in(o, "summary.json"), *db = in(o, "job.db"), *json = in(o, "trace.json");
    const char *dir[] = {d};
    summary_of(sum, dir, 1);
    struct result res;
    RUN(&res, "export", "--format", "sqlite", "--no-symbols", "-o", db, d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    CHECK(&res, "sqlite", db, sum, "docs/export.md");
    cr_expect_eq(res.status, 0, "%s%s", res.out, res.err);
    cr_expect(strstr(res.out, "query \"which rank's first all_reduce added most\": [(2, 8388608)]"), "%s", res.out);
    RUN(&res, "export", "--format", "chrome", "--no-symbols", "-o", json, d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    CHECK(&res, "chrome", json, sum, "10000");
    cr_expect_eq(res.status, 0, "%s%s", res.out, res.err);
    /* the ranks as processes 0-3, by rank */
    const char *text = cli_read_file(json);
    for (int r = 0; r < 4; r++) {
        char want[128];
        snprintf(want, sizeof want, "\"pid\":%d,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":\"rank %d (", r, r);
        cr_expect(strstr(text, want) != NULL, "%s", want);
    }
    const char *csv = in(o, "csv");
    RUN(&res, "export", "--format", "csv", "--no-symbols", "-o", csv, d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    CHECK(&res, "csv", csv, sum);
    cr_expect_eq(res.status, 0, "%s%s", res.out, res.err);
    char tp[PATH_MAX + 16];
    snprintf(tp, sizeof tp, "%s/traces.csv", csv);
    cr_expect(strstr(cli_read_file(tp), ",\"node \"\"a\"\",1\","), "the host quoted");
}

Test(export, nccl_proxy_allocations_are_tied_to_their_call, .timeout = 60)
{
    const char *d = cli_tmpdir(), *o = cli_tmpdir();
    char prog[PATH_MAX + 32];
    snprintf(prog, sizeof prog, "%s/fakes/progs/fake_nccl_2proc", cli_build_dir());
    cr_assert_eq(access(prog, X_OK), 0, "%s not built (make test-extras)", prog);
    struct result res;
    RUN(&res, "run", "-q", "-o", d, "--", prog);
    cr_assert_eq(res.status, 0, "%s%s", res.out, res.err);
    const char *sum = in(o, "summary.json"), *json = in(o, "trace.json"), *csv = in(o, "csv");
    const char *dir[] = {d};
    summary_of(sum, dir, 1);
    RUN(&res, "export", "--format", "chrome", "--no-symbols", "-o", json, d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    CHECK(&res, "chrome", json, sum, "10000");
    cr_expect_eq(res.status, 0, "%s%s", res.out, res.err);
    FILE *f = fopen(json, "r");
    cr_assert_not_null(f);
    static char text[1 << 22];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    int proxy = 0, device = 0;
    for (const char *p = text; (p = strstr(p, "\"name\":\"NCCL proxy allocation\"")); p++) {
        proxy++;
        const char *end = strchr(p, '}');
        const char *m = strstr(p, "\"memory\":\"device\"");
        device += m && m < end;
    }
    /* of device memory, as many as the summary's allocs_other_thread (4 per rank); with
     * the reservations and mappings around them, more */
    const char *s = cli_read_file(sum);
    cr_expect_eq(count_of(s, "\"allocs_other_thread\": 4,"), 2, "%s", s);
    cr_expect_eq(device, 8, "%d proxy allocations of device memory", device);
    cr_expect_gt(proxy, device);
    cr_expect(strstr(text, "\"op\":\"AllReduce\""), "tied to AllReduce");
    RUN(&res, "export", "--format", "csv", "--no-symbols", "-o", csv, d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    CHECK(&res, "csv", csv, sum);
    cr_expect_eq(res.status, 0, "%s%s", res.out, res.err);
}

Test(export, the_check_finds_a_lost_peak)
{
    /* a counter whose highest point is not the summary's peak must fail the check */
    const char *d = cli_tmpdir();
    const char *sum = in(d, "summary.json"), *json = in(d, "trace.json");
    summary_of(sum, &goldens[0], 1);
    struct result res;
    RUN(&res, "export", "--format", "chrome", "--no-symbols", "-o", json, goldens[0]);
    cr_assert_eq(res.status, 0, "%s", res.err);
    FILE *f = fopen(json, "r+");
    cr_assert_not_null(f);
    static char text[1 << 20];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    /* the peak's point, 975178752 bytes, made one byte less (same length) */
    char *p = strstr(text, "\"bytes\":975178752}");
    cr_assert_not_null(p);
    p[16] = '1';
    rewind(f);
    fwrite(text, 1, n, f);
    fclose(f);
    CHECK(&res, "chrome", json, sum, "10000");
    cr_expect_eq(res.status, 1, "%s", res.out);
    cr_expect(strstr(res.out, "summary peak 975178752"), "%s", res.out);
}

Test(export, bad_usage_and_unwritable_output_are_one_line_and_status_2)
{
    unlink("/tmp/gmt-export-unused.db");
    static const char *const bad[][8] = {
        {"export", "--format", "chrome", "tests/golden/demo-r0.gmt"},
        {"export", "--format", "sqlite", "tests/golden/demo-r0.gmt"},
        {"export", "--format", "csv", "tests/golden/demo-r0.gmt"},
        {"export", "--format", "parquet", "-o", "/tmp/gmt-export-unused", "tests/golden/demo-r0.gmt"},
        {"export", "--format", "chrome", "-o", "/nonexistent/dir/t.json", "tests/golden/demo-r0.gmt"},
        {"export", "--format", "sqlite", "-o", "/nonexistent/dir/t.db", "tests/golden/demo-r0.gmt"},
        {"export", "--format", "csv", "-o", "/nonexistent/dir/csv", "tests/golden/demo-r0.gmt"},
        {"export", "--format", "csv", "-o", "/dev/null", "tests/golden/demo-r0.gmt"},
        {"export", "--format", "chrome", "--max-points", "2", "-o", "/tmp/gmt-export-unused", "tests/golden/demo-r0.gmt"},
        {"export", "--format", "chrome", "--cost", "leaked", "-o", "/tmp/gmt-export-unused", "tests/golden/demo-r0.gmt"},
        {"export", "--format", "sqlite", "-o", "/tmp/gmt-export-unused.db", "/nonexistent.gmt"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct result res;
        const char *argv[10] = {"gpumemtrace"};
        for (size_t k = 0; k < 8 && bad[i][k]; k++)
            argv[k + 1] = bad[i][k];
        cli_exec(&res, NULL, argv);
        cr_expect_eq(res.status, 2, "case %zu: %s", i, res.err);
        cr_expect_eq(lines(res.err), 1, "case %zu: %s", i, res.err);
        cr_expect_str_empty(res.out, "case %zu", i);
    }
    cr_expect_neq(access("/tmp/gmt-export-unused.db", F_OK), 0, "no database made of no trace");
}

/* A field with a comma and no quote is quoted all the same (RFC 4180); a plain one is not. */
Test(export, csv_quotes_a_field_that_holds_only_a_comma)
{
    struct tb b = {0};
    tb_sample(&b);
    uint8_t *host = memmem(b.p, b.len, "node-01", 7);
    cr_assert_not_null(host);
    memcpy(host, "node,01", 7);
    const char *dir = cli_tmpdir();
    const char *path = in(dir, "t.gmt");
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(b.p, 1, b.len, f), b.len);
    cr_assert_eq(fclose(f), 0);
    tb_free(&b);
    struct result res;
    const char *csv = in(dir, "csv");
    RUN(&res, "export", "--format", "csv", "--no-symbols", "-o", csv, path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    char tp[PATH_MAX + 16];
    snprintf(tp, sizeof tp, "%s/traces.csv", csv);
    const char *text = cli_read_file(tp);
    cr_expect(strstr(text, ",1,1,2,\"node,01\",4242,") != NULL, "%s", text);
}

/* A trace where two threads' calls share a scope id (a damaged or hand-made trace: the
 * library numbers scopes per process) exports both rows to SQLite, where a unique index
 * on (trace, scope) refused the whole database. */
Test(export, calls_sharing_a_scope_id_are_both_exported, .timeout = 60)
{
    const char *db = in(cli_tmpdir(), "t.db");
    struct result res;
    RUN(&res, "export", "--format", "sqlite", "--no-symbols", "-o", db, "tests/fuzz/corpus/scope-open.gmt");
    cr_assert_eq(res.status, 0, "%s", res.err);
    cli_exec(&res, NULL, (const char *const[]){"python3", "-c", "import sqlite3, sys; print(sqlite3.connect("
                                              "sys.argv[1]).execute('SELECT count(*) FROM nccl_calls WHERE scope = 2')"
                                              ".fetchall())", db, NULL});
    cr_expect_str_eq(res.out, "[(2,)]\n", "%s", res.err);
}

/* A group the trace ends inside is named after the members it had begun, in the summary's
 * open_at_end and collectives alike and in the export; it has a begin but no end, so no
 * duration, and its Chrome slice lasts to the end. */
Test(export, an_open_group_is_named_as_its_row, .timeout = 60)
{
    struct tb b = {0};
    tb_process_min(&b);
    tb_thread_on_device0(&b, 100, 1000);
    struct gmt_rec_comm c = {.comm = 0xc0, .rank = 0, .nranks = 2, .device = 0, .dt = 100};
    tb_rec(&b, GMT_REC_COMM, 0, &c, sizeof c, NULL, 0);
    tb_scope_begin(&b, GMT_OP_Group, 1, 0, 0, 0, 100);
    tb_scope_begin(&b, GMT_OP_AllReduce, 2, 1, 0xc0, 1024, 100);
    tb_scope_end(&b, GMT_OP_AllReduce, 2, 0, 0);
    tb_alloc_at(&b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0, 0x1000000, 4 * MiB, 0, -1, 100);
    const char *d = cli_tmpdir();
    const char *tr = in(d, "t.gmt"), *sum = in(d, "summary.json"), *db = in(d, "t.db"), *json = in(d, "t.json");
    cr_assert_eq(tb_write(&b, tr), 0);
    tb_free(&b);
    summary_of(sum, &tr, 1);
    const char *s = cli_read_file(sum);
    cr_expect(strstr(s, "\"open_at_end\": [{\"scope\": 1, \"op\": \"Group(AllReduce)\""), "%s", s);
    cr_expect(strstr(s, "\"op\": \"Group(AllReduce)\", \"comm_rank\""), "%s", s);
    struct result res;
    RUN(&res, "export", "--format", "sqlite", "--no-symbols", "-o", db, tr);
    cr_assert_eq(res.status, 0, "%s", res.err);
    CHECK(&res, "sqlite", db, sum);
    cr_expect_eq(res.status, 0, "%s%s", res.out, res.err);
    cli_exec(&res, NULL, (const char *const[]){"python3", "-c", "import sqlite3, sys; print(sqlite3.connect("
                                              "sys.argv[1]).execute('SELECT op, begin_ns IS NULL, end_ns IS NULL, "
                                              "duration_ns IS NULL, timed, weight FROM nccl_calls ORDER BY scope')"
                                              ".fetchall())", db, NULL});
    cr_expect_str_eq(res.out, "[('Group(AllReduce)', 0, 1, 1, 0, 0), ('AllReduce', 1, 0, 1, 0, 0)]\n", "%s", res.err);
    RUN(&res, "export", "--format", "chrome", "--no-symbols", "-o", json, tr);
    cr_assert_eq(res.status, 0, "%s", res.err);
    CHECK(&res, "chrome", json, sum, "10000");
    cr_expect_eq(res.status, 0, "%s%s", res.out, res.err);
    const char *text = cli_read_file(json);
    cr_expect(strstr(text, "\"ph\":\"X\",\"cat\":\"nccl\",\"pid\":0,\"tid\":100,\"name\":\"Group(AllReduce)\""), "%s", text);
    cr_expect(strstr(text, "\"timed\":false,\"weight\":0,\"open_at_end\":true"), "%s", text);
}

/* The whole file at path, malloc'd and NUL-ended; its length in *len. */
static char *slurp_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "%s", path);
    char *p = NULL;
    size_t cap = 0;
    *len = 0;
    for (;;) {
        p = realloc(p, cap = cap * 2 + 65536);
        size_t k = fread(p + *len, 1, cap - *len - 1, f);
        *len += k;
        if (k < cap - (*len - k) - 1)
            break;
    }
    fclose(f);
    p[*len] = 0;
    return p;
}

/* Each trace is read once: traces given as pipes export as the same files do. */
Test(export, chrome_reads_each_trace_once_so_a_pipe_will_do, .timeout = 60)
{
    const char *d = cli_tmpdir();
    const char *files = in(d, "files.json"), *pipes = in(d, "pipes.json");
    char f0[PATH_MAX], f1[PATH_MAX], cmd[8 * PATH_MAX];
    snprintf(f0, sizeof f0, "%s/r0.fifo", d);
    snprintf(f1, sizeof f1, "%s/r1.fifo", d);
    cr_assert_eq(mkfifo(f0, 0600), 0);
    cr_assert_eq(mkfifo(f1, 0600), 0);
    struct result res;
    RUN(&res, "export", "--format", "chrome", "--no-symbols", "-o", files, goldens[0], goldens[1]);
    cr_assert_eq(res.status, 0, "%s", res.err);
    snprintf(cmd, sizeof cmd, "cat %s >'%s' & cat %s >'%s' & '%s/gpumemtrace' export --format chrome "
             "--no-symbols -o '%s' '%s' '%s'; s=$?; wait; exit $s", goldens[0], f0, goldens[1], f1,
             cli_build_dir(), pipes, f0, f1);
    int st = system(cmd);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "status %d", st);
    size_t a, b;
    char *x = slurp_file(files, &a), *y = slurp_file(pipes, &b);
    /* the process names hold the file names: the same length here */
    cr_assert_gt(a, 1000);
    cr_expect(a == b && !memcmp(x, y, a), "from pipes, not what the files give");
    free(y);
    /* the writers come after the reader opened the pipes: it waits for them, it does not
     * read an empty trace */
    snprintf(cmd, sizeof cmd, "'%s/gpumemtrace' export --format chrome --no-symbols -o '%s' '%s' '%s' & "
             "sleep 0.5; timeout 10 dd status=none if=%s of='%s'; timeout 10 dd status=none if=%s of='%s'; "
             "wait $!", cli_build_dir(), pipes, f0, f1,
             goldens[0], f0, goldens[1], f1);
    st = system(cmd);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "late writers: status %d", st);
    y = slurp_file(pipes, &b);
    cr_expect(a == b && !memcmp(x, y, a), "from late pipes, not what the files give");
    free(y);
    /* a writer that opens the pipe at once and writes only after the reader's wait for
     * data: the reader sees a writer there and reads on */
    snprintf(cmd, sizeof cmd, "'%s/gpumemtrace' export --format chrome --no-symbols -o '%s' '%s' '%s' & "
             "timeout 20 sh -c \"exec 3>'%s'; sleep 3.5; cat %s >&3\"; "
             "timeout 10 dd status=none if=%s of='%s'; wait $!", cli_build_dir(), pipes, f0, f1,
             f0, goldens[0], goldens[1], f1);
    st = system(cmd);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "slow writer: status %d", st);
    y = slurp_file(pipes, &b);
    cr_expect(a == b && !memcmp(x, y, a), "from a slow pipe, not what the files give");
    /* the job's time line starts at its earliest anchor: the demo's ranks run for well
     * under a minute of it */
    double last = 0;
    for (const char *q = x; (q = strstr(q, "\"ts\":")); q++)
        if (strtod(q + 5, NULL) > last)
            last = strtod(q + 5, NULL);
    cr_expect(last > 0 && last < 60e6, "the last event at %.0f us", last);
    /* one trace alone is the job: its rank is its process, its anchor the start */
    RUN(&res, "export", "--format", "chrome", "--no-symbols", "-o", files, goldens[1]);
    cr_assert_eq(res.status, 0, "%s", res.err);
    free(y);
    y = slurp_file(files, &b);
    cr_expect(strstr(y, "\"sort_index\":1}}") && !strstr(y, "\"pid\":0,"), "%.300s", y);
    free(x);
    free(y);
}

/* Enough traces that workers render them: the processes and flow arrows are numbered
 * across the job, in the order of the traces, as one process would number them. */
Test(export, chrome_of_many_traces_numbers_processes_and_flows_across_the_job, .timeout = 60)
{
    const char *d = cli_tmpdir();
    const char *json = in(d, "many.json");
    enum { K = 20 };
    const char *argv[K + 8] = {"gpumemtrace", "export", "--format", "chrome", "--no-symbols", "-o", json};
    size_t n = 7;
    for (int i = 0; i < K; i++)
        argv[n++] = goldens[i % 2];
    struct result res;
    cli_exec(&res, NULL, argv);
    cr_assert_eq(res.status, 0, "%s", res.err);
    size_t len;
    char *p = slurp_file(json, &len);
    /* twice the same ranks: a process per trace, 0..K-1 */
    for (int i = 0; i < K; i++) {
        char want[64];
        snprintf(want, sizeof want, "\"sort_index\":%d}}", i);
        cr_expect(strstr(p, want), "no process %d", i);
    }
    /* every flow arrow a number of its own, 1..F, each once as a start and once as an end */
    int starts = 0;
    for (const char *q = p; (q = strstr(q, "{\"ph\":\"s\",\"cat\":\"nccl\",\"name\":\"proxy allocation\",\"id\":")); q++) {
        starts++;
        char want[128];
        snprintf(want, sizeof want, "\"ph\":\"s\",\"cat\":\"nccl\",\"name\":\"proxy allocation\",\"id\":%d,", starts);
        cr_expect(strstr(p, want), "flow %d", starts);
    }
    cr_expect_gt(starts, K, "flows: %d", starts);
    char last[96];
    snprintf(last, sizeof last, "\"id\":%d,", starts + 1);
    cr_expect_null(strstr(p, last));
    free(p);
}

/* A trace that cannot be read whole still has its PROCESS record: its rank and anchor
 * count, so the others keep the process ids and times they would have beside it. */
Test(export, chrome_keeps_the_anchor_of_a_trace_it_cannot_read, .timeout = 60)
{
    const char *d = cli_tmpdir();
    const char *json = in(d, "half.json"), *half = in(d, "half.gmt");
    size_t len;
    char *p = slurp_file(goldens[1], &len);
    cr_assert_gt(len, 1100);
    memset(p + 1000, 0, 64); /* rank 1's first records, then a record of size 0 */
    FILE *f = fopen(half, "wb");
    cr_assert(f && fwrite(p, 1, 1064, f) == 1064 && !fclose(f));
    free(p);
    struct result res;
    RUN(&res, "export", "--format", "chrome", "--no-symbols", "-o", json, half, goldens[0]);
    cr_expect_eq(res.status, 2, "%s", res.err);
    cr_expect(strstr(res.err, "record size 0"), "%s", res.err);
    p = slurp_file(json, &len);
    /* ranks 1 and 0, distinct: rank 0's process is 0, not its place (1) */
    cr_expect(strstr(p, "\"sort_index\":0}}") && !strstr(p, "\"pid\":1,"), "%.400s", p);
    free(p);
}
