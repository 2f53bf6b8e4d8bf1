/* test_cli.c: runs the built gpumemtrace binary: help for every command, exit codes, dump's messages, the shared formatting functions. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <libgen.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.h"
#include "cli.h"
#include "json.h"
#include "util.h"
#include "golden/tracebuild.h"

/* Runs the CLI with args (NULL-terminated); stdout goes to `out_path` when given,
 * stdin comes from `in_path` when given. A hang ends as SIGALRM (status 142), not as a
 * stuck test run. */
static void run_io(struct result *res, const char *out_path, const char *in_path,
                   const char *const *args)
{
    const char *argv[32] = { "gpumemtrace" };
    size_t n = 1;
    for (; args[n - 1] && n < 31; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    cli_exec(res, &(struct cli_io){ .out = out_path, .in = in_path, .timeout_s = 30 }, argv);
}

#define RUN(res, ...) run_io((res), NULL, NULL, (const char *const[]){ __VA_ARGS__, NULL })

/* Writes the first len bytes of b to a temp file named in path (PATH_MAX). */
static void trace_file(char *path, const struct tb *b, size_t len)
{
    strcpy(path, "/tmp/gmt-test-cli-XXXXXX.gmt");
    int fd = mkstemps(path, 4);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, b->p, len), (ssize_t)len);
    close(fd);
}

static struct result res;

Test(cli, lists_every_command_in_help)
{
    RUN(&res, "--help");
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strncmp(res.out, "usage: gpumemtrace", 18) == 0, "%s", res.out);
#define GMT_X(name, summary) \
    cr_expect(strstr(res.out, "   " #name " ") != NULL, "--help lacks " #name);
    GMT_COMMANDS(GMT_X)
#undef GMT_X
    RUN(&res, "help");
    cr_expect_eq(res.status, 0);
    cr_expect(strstr(res.out, "Commands:") != NULL);
}

Test(cli, has_help_for_every_command)
{
    static const char *const names[] = {
#define GMT_X(name, summary) #name,
        GMT_COMMANDS(GMT_X)
#undef GMT_X
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "usage: gpumemtrace %s", names[i]);
        RUN(&res, names[i], "--help");
        cr_expect_eq(res.status, 0, "%s --help: %d %s", names[i], res.status, res.err);
        cr_expect(strncmp(res.out, want, strlen(want)) == 0, "%s --help: %s", names[i], res.out);
        char first[sizeof res.out];
        strcpy(first, res.out);
        RUN(&res, "help", names[i]);
        cr_expect_eq(res.status, 0, "help %s: %d", names[i], res.status);
        cr_expect_str_eq(res.out, first, "help %s differs from %s --help", names[i], names[i]);
        RUN(&res, names[i], "-h");
        cr_expect_str_eq(res.out, first, "%s -h differs", names[i]);
    }
}

Test(cli, prints_version)
{
    RUN(&res, "--version");
    cr_assert_eq(res.status, 0);
    char want[64];
    snprintf(want, sizeof want, "gpumemtrace %s (trace format %u.%u)\n", GMT_CLI_VERSION,
             GMT_VERSION_MAJOR, GMT_VERSION_MINOR);
    cr_expect_str_eq(res.out, want);
}

Test(cli, rejects_bad_usage_with_one_line_and_status_2)
{
    static const char *const cases[][3] = {
        { "frobnicate", NULL, "unknown command 'frobnicate'" },
        { "--frobnicate", NULL, "unknown option '--frobnicate'" },
        { "help", "frobnicate", "unknown command 'frobnicate'" },
        { "dump", "--frobnicate", "gpumemtrace dump: unknown option '--frobnicate'" },
        { "dump", NULL, "gpumemtrace dump: no trace file given" },
        { "summary", "--top=", "--top wants a count, not ''" },
        { "summary", "--width=39", "--width wants 40..1000, not '39'" },
        { "diff", "--frames=0", "--frames wants 1..64, not '0'" },
        { "summary", "--from=nan", "--from wants seconds, not 'nan'" },
        { "summary", "--to=inf", "--to wants seconds, not 'inf'" },
        { "summary", "--from=0x1p3", "--from wants seconds, not '0x1p3'" },
        { "summary", "--op=", "--op wants an op name, not ''" },
        { "summary", "--top=-1", "--top wants a count, not '-1'" },
        { "summary", "--top= 5", "--top wants a count, not ' 5'" },
        { "summary", "--width=abc", "--width wants 40..1000, not 'abc'" },
        { "diff", "--top=x", "--top wants a count, not 'x'" },
        /* an option that takes a value, given none: said so, not "unknown" */
        { "summary", "-o", "gpumemtrace summary: option '-o' needs a value" },
        { "report", "--output", "gpumemtrace report: option '--output' needs a value" },
        { "check", "--baseline", "gpumemtrace check: option '--baseline' needs a value" },
        { "run", "-o", "gpumemtrace run: option '-o' needs a value" },
        { "explain", "-o", "gpumemtrace explain: unknown option '-o'" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (cases[i][1])
            RUN(&res, cases[i][0], cases[i][1]);
        else
            RUN(&res, cases[i][0]);
        cr_expect_eq(res.status, 2, "case %zu: status %d", i, res.status);
        cr_expect(strstr(res.err, cases[i][2]) != NULL, "case %zu: %s", i, res.err);
        cr_expect_eq(lines(res.err), 1, "case %zu: %s", i, res.err);
        cr_expect_str_eq(res.out, "", "case %zu", i);
    }
    RUN(&res, "summary", "--from=5", "--to=1", "x.gmt");
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "--from wants a time before --to's") != NULL, "%s", res.err);
    /* -o that is not a directory it can make or write: traces would go nowhere */
    RUN(&res, "run", "-o", "/dev/null", "--", "true");
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "-o /dev/null: not a directory") != NULL, "%s", res.err);
    cr_expect_eq(lines(res.err), 1, "%s", res.err);
    RUN(&res, "--help", "x");  /* help wins, like --version */
    cr_expect_eq(res.status, 0);
}

Test(cli, dumps_every_record_of_a_trace)
{
    struct tb b = { 0 };
    tb_sample(&b);
    char path[PATH_MAX];
    trace_file(path, &b, b.len);
    RUN(&res, "dump", path);
    unlink(path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect_str_eq(res.err, "");
    cr_expect_eq(lines(res.out), (int)b.nrec + 1, "one header line plus one per record");
    cr_expect(strstr(res.out, "ALLOC         api=cuMemMap kind=MAPPING address=0x7d0000000000 "
                              "bytes=10485760") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, " 4250     0.000010020 ALLOC") != NULL, "tid and time: %s",
              res.out);
    tb_free(&b);
}

Test(cli, dump_escapes_untrusted_strings)
{
    struct tb b = { 0 };
    tb_header(&b);
    static const char host[] = "evil\n\x1b[2J\x01\"";
    struct gmt_rec_process p = { .host_len = sizeof host, .monotonic_ns = 1 };
    tb_rec(&b, GMT_REC_PROCESS, 0, &p, sizeof p, host, sizeof host);
    char path[PATH_MAX];
    trace_file(path, &b, b.len);
    RUN(&res, "dump", path);
    unlink(path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "host=\"evil\\n\\x1b[2J\\x01\\\"\"") != NULL, "%s", res.out);
    cr_expect_eq(lines(res.out), 2);
    tb_free(&b);
}

Test(cli, dump_of_a_cut_trace_says_where_and_exits_0)
{
    struct tb b = { 0 };
    tb_sample(&b);
    size_t cut = b.off[10] + 5;
    char path[PATH_MAX], want[PATH_MAX + 64];
    trace_file(path, &b, cut);
    RUN(&res, "dump", path);
    unlink(path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    snprintf(want, sizeof want, "%s: trace cut at offset %zu after 10 records\n", path, b.off[10]);
    cr_expect_str_eq(res.err, want);
    cr_expect_eq(lines(res.out), 11);
    /* Cut on a record boundary: no END record, also said. */
    trace_file(path, &b, b.off[10]);
    RUN(&res, "dump", path);
    unlink(path);
    cr_expect_eq(res.status, 0);
    cr_expect(strstr(res.err, "after 10 records (no END record)") != NULL, "%s", res.err);
    tb_free(&b);
}

/* Repeated groups are read in place: memory follows the file, not the calls its
 * GROUP_REPEATs stand for. 20,000 groups of 64 members repeated (2.1 MB, 1.28 M member
 * calls, whose records would take 104 MB written out) under a 36 MB bound on the
 * address space: the commands need about 20 MB so, no memory kept per member; 16 bytes
 * per member would take 20 MB more, a scope stored per member 82 MB more. (Not under
 * ASan, which reserves terabytes of shadow.) */
Test(cli, reads_repeated_groups_within_a_bound_on_memory, .timeout = 120)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("ASan reserves more address space than the bound");
#endif
    struct tb b = {0};
    tb_header_current(&b);
    struct gmt_rec_process p = {.pid = 1, .ppid = 1, .rank = 0, .monotonic_ns = TB_T0};
    tb_rec(&b, GMT_REC_PROCESS, 0, &p, sizeof p, NULL, 0);
    tb_chunk(&b, 7);
    tb_thread_at(&b, 7, TB_T0 + 100);
    uint32_t id = 10;
    tb_scope_begin(&b, GMT_OP_Group, id, 0, 0, 0, 10);
    for (uint32_t m = 0; m < 64; m++) {
        tb_scope_begin(&b, GMT_OP_AllReduce, id + 1 + m, id, 0xa, 256 * (uint64_t)(m + 1), 5);
        tb_scope_end(&b, GMT_OP_AllReduce, id + 1 + m, 0, 5);
    }
    tb_scope_end(&b, GMT_OP_Group, id, 0, 100);
    for (int g = 0; g < 20000; g++) {
        uint32_t like = id;
        id += 65;
        tb_scope_begin(&b, GMT_OP_Group, id, 0, 0, 0, 1000);
        tb_group_repeat(&b, id, 64, like);
        /* an allocation in ncclGroupEnd after its members (docs/trace-format.md): the
         * group's, its members being over */
        struct gmt_rec_alloc a = {.address = 0x7e0000000000ull,
                                  .bytes = g == 9984 ? 1 << 20 : 4096, .dt = 4,
                                  .kind = GMT_KIND_DEVICE};
        struct gmt_rec_free f = {.address = a.address, .dt = 1};
        if (g % 1000 == 0 || g == 9984)
            tb_rec(&b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &a, sizeof a, NULL, 0);
        tb_scope_end(&b, GMT_OP_Group, id, 0, 100);
        if (g % 1000 == 0 || g == 9984)
            tb_rec(&b, GMT_REC_FREE, GMT_API_cudaFree, &f, sizeof f, NULL, 0);
    }
    struct gmt_rec_end e = {.time_ns = TB_T0 + 1000000000};
    tb_rec(&b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
    char path[PATH_MAX], cli[PATH_MAX + 16], html[PATH_MAX + 16];
    trace_file(path, &b, b.len);
    tb_free(&b);
    snprintf(cli, sizeof cli, "%s/gpumemtrace", cli_build_dir());
    snprintf(html, sizeof html, "%s/r.html", cli_tmpdir());
    static const char *const cmds[][4] = {
        {"summary", "--json"}, {"explain"}, {"report", "-o", "HTML"}, {"export", "--format", "folded"},
        {"merge"},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        const char *argv[12] = {"sh", "-c", "ulimit -v 36000 && exec \"$@\"", "sh", cli};
        size_t n = 5;
        for (size_t k = 0; k < 4 && cmds[i][k]; k++)
            argv[n++] = strcmp(cmds[i][k], "HTML") ? cmds[i][k] : html;
        argv[n++] = "--no-symbols";
        argv[n++] = path;
        cli_exec(&res, NULL, argv);
        cr_expect_eq(res.status, 0, "%s under ulimit -v: %s", cmds[i][0], res.err);
    }
    RUN(&res, "summary", "--json", "--no-symbols", path);
    cr_expect(strstr(res.out, "\"calls\": 20001") != NULL, "every group's members counted");
    /* the group's row and each member's own (its size), each repeat's member in it */
    int rows = 0;
    for (const char *q = res.out; (q = strstr(q, "\"calls\": 20001,")); q++)
        rows++;
    cr_expect_eq(rows, 65, "the group's row and its 64 members' rows of 20,001 calls each");
    cr_expect(strstr(res.out, "\"open_at_end\": []") != NULL, "every member replayed to its end");
    /* (a group itself is no call allocations are charged to) */
    cr_expect(strstr(res.out, "\"allocs\": 21, \"alloc_bytes\"") == NULL,
              "the allocations after the members are none of the members'");
    cr_expect(strstr(res.out, "\"allocs\": 21, \"frees\": 21") != NULL, "the device's");
    /* the peak, the 9,985th repeat's allocation: in flight its group (65 ids a group, from
     * 10), none of its members, which the replay's walk opened and closed before it */
    cr_expect(strstr(res.out, "\"peak_scope\": 649035,") != NULL, "%.200s",
              strstr(res.out, "\"peak_scope\"") ? strstr(res.out, "\"peak_scope\"") : "");
    unlink(path);
}

/* An allocation that names a repeated group's member (an odd file: the members are over
 * before it) is charged to that member, which is made on demand: the later call's
 * tracked bytes of the row of the member it stands for, as in the trace written out. */
Test(cli, an_allocation_naming_a_repeated_member_is_that_members)
{
    struct tb b = {0};
    tb_header_current(&b);
    struct gmt_rec_process p = {.pid = 1, .ppid = 1, .rank = 0, .monotonic_ns = TB_T0};
    tb_rec(&b, GMT_REC_PROCESS, 0, &p, sizeof p, NULL, 0);
    tb_chunk(&b, 7);
    tb_thread_at(&b, 7, TB_T0 + 100);
    tb_scope_begin(&b, GMT_OP_Group, 10, 0, 0, 0, 10);
    tb_scope_begin(&b, GMT_OP_AllReduce, 11, 10, 0xa, 256, 5);
    tb_scope_end(&b, GMT_OP_AllReduce, 11, 0, 5);
    tb_scope_begin(&b, GMT_OP_Broadcast, 12, 10, 0xa, 64, 5);
    tb_scope_end(&b, GMT_OP_Broadcast, 12, 0, 5);
    tb_scope_end(&b, GMT_OP_Group, 10, 0, 100);
    tb_scope_begin(&b, GMT_OP_Group, 13, 0, 0, 0, 1000);
    tb_group_repeat(&b, 13, 2, 10);
    struct gmt_rec_alloc a = {.address = 0x7e0000000000ull, .bytes = 1 << 20, .dt = 4,
                              .kind = GMT_KIND_DEVICE, .scope_id = 15};
    tb_rec(&b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &a, sizeof a, NULL, 0);
    tb_scope_end(&b, GMT_OP_Group, 13, 0, 100);
    struct gmt_rec_end e = {.time_ns = TB_T0 + 1000000};
    tb_rec(&b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
    char path[PATH_MAX];
    trace_file(path, &b, b.len);
    tb_free(&b);
    RUN(&res, "summary", "--json", "--no-symbols", path);
    unlink(path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    /* the second member's row, not the first's */
    const char *row = strstr(res.out, "{\"op\": \"Broadcast\"");
    cr_assert_not_null(row, "%s", res.out);
    const char *end = strchr(row, '}'), *bytes = strstr(row, "\"later_tracked_max_bytes\": 1048576,");
    cr_expect(bytes && bytes < end, "%.400s", row);
    const char *allocs = strstr(row, "\"allocs\": 1,");
    cr_expect(allocs && allocs < end, "%.400s", row);
    cr_expect(strstr(res.out, "\"peak_scope\": 15,") != NULL, "the member's id");
}

/* --expand: the members GROUP_REPEAT stands for, lost ones said; a cut note with the
 * file's own offset and records, not the expanded image's. */
Test(cli, dump_expand_restores_members_and_notes_the_files_cut)
{
    struct tb b = { 0 };
    tb_repeats(&b);
    char path[PATH_MAX], want[PATH_MAX + 64];
    trace_file(path, &b, b.len);
    RUN(&res, "dump", "--expand", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "GROUP_REPEAT") == NULL, "%s", res.out);
    cr_expect(strstr(res.out, "op=AllReduce scope=17 parent=16 dt=0 stack=0 comm=0xa") != NULL,
              "the second repeat's first member");
    snprintf(want, sizeof want,
             "%s: 18 records of repeated groups and calls could not be restored\n", path);
    cr_expect_str_eq(res.err, want);
    size_t cut = b.off[b.nrec - 3] + 4; /* inside the last group, after the restored ones */
    trace_file(path, &b, cut);
    RUN(&res, "dump", "--expand", path);
    unlink(path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    snprintf(want, sizeof want, "%s: trace cut at offset %zu after %zu records\n",
             path, b.off[b.nrec - 3], b.nrec - 3);
    cr_expect(strstr(res.err, want) != NULL, "%s", res.err);
    tb_free(&b);
}

/* (2.5) dump shows a call form's duration and the fields it holds, and SCOPE_OPEN's;
 * --expand shows what they stand for: a trace of call forms dumps as the same trace
 * written with SCOPE_BEGIN + SCOPE_END does. */
Test(cli, dump_shows_call_forms_and_scope_open_and_expands_them)
{
    struct tb call = { 0 }, plain = { 0 }, open = { 0 };
    tb_calls(&call, 1);
    tb_calls(&plain, 0);
    tb_opens(&open, 1);
    char path[PATH_MAX];
    trace_file(path, &call, call.len);
    RUN(&res, "dump", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "SCOPE_END     op=AllReduce scope=1 dt=1000 result=0 duration=300 "
                              "has=0xf comm=0xa count=256 stream=0x77 datatype=7 peer=-1\n"),
              "%s", res.out);
    cr_expect(strstr(res.out, "SCOPE_END     op=AllReduce scope=2 dt=500 result=0 duration=100 "
                              "has=0x2 count=512\n"), "%s", res.out);
    cr_expect(strstr(res.out, "SCOPE_END     op=AllReduce scope=4 dt=10 result=0 duration=0 "
                              "has=0x0\n"), "%s", res.out);
    cr_expect(strstr(res.out, "has=0x8 datatype=3 peer=5\n"), "%s", res.out);
    cr_expect(!strstr(res.out, "SCOPE_BEGIN"));
    RUN(&res, "dump", "--expand", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    char *expanded = strdup(res.out);
    cr_assert_not_null(expanded);
    trace_file(path, &plain, plain.len);
    RUN(&res, "dump", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect_str_eq(expanded, res.out);
    free(expanded);

    trace_file(path, &open, open.len);
    RUN(&res, "dump", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "SCOPE_OPEN    op=AllGather time_ns=5000004000 tid=7 scope=3 comm=0xc "
                              "count=64 stream=0x77 datatype=7 peer=-1\n"), "%s", res.out);
    RUN(&res, "dump", "--expand", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(!strstr(res.out, "SCOPE_OPEN"), "%s", res.out);
    /* the restored begins, then END on its own thread again */
    cr_expect(strstr(res.out, "       7     0.000004000 SCOPE_BEGIN   op=AllGather scope=3 parent=0 "
                              "dt=0 stack=0 comm=0xc count=64"), "%s", res.out);
    cr_expect(strstr(res.out, "       8     0.000004500 SCOPE_BEGIN   op=AllGather scope=2 parent=0"),
              "%s", res.out);
    const char *end = strstr(res.out, " END ");
    cr_assert_not_null(end, "%s", res.out);
    cr_expect(strstr(res.out, "CHUNK         tid=9\n") && strncmp(end - 24, "       9", 8) == 0,
              "%s", res.out);
    cr_expect_eq(res.err[0], 0, "%s", res.err);
    unlink(path);
    tb_free(&call);
    tb_free(&plain);
    tb_free(&open);
}

Test(cli, dump_of_a_malformed_trace_exits_2)
{
    struct tb b = { 0 };
    tb_sample(&b);
    uint32_t zero = 0;
    memcpy(b.p + b.off[5] + 4, &zero, 4);
    char path[PATH_MAX], want[PATH_MAX + 64];
    trace_file(path, &b, b.len);
    RUN(&res, "dump", path);
    unlink(path);
    cr_expect_eq(res.status, 2);
    snprintf(want, sizeof want, "%s: offset %zu: record size 0", path, b.off[5]);
    cr_expect(strncmp(res.err, want, strlen(want)) == 0, "%s", res.err);
    cr_expect_eq(lines(res.err), 1);
    cr_expect_eq(lines(res.out), 6, "the 5 whole records before it are printed");
    tb_free(&b);
}

/* 8 zero bytes (type 0, size 0) among the records: what a file system can leave after a
 * crash. Every command that reads traces must stop there with exit 2, not spin. */
Test(cli, every_command_stops_at_a_zero_size_record)
{
    struct tb b = { 0 };
    tb_sample(&b);
    struct tb z = { 0 };
    tb_put(&z, b.p, b.off[3]);
    tb_put(&z, NULL, 8);
    tb_put(&z, b.p + b.off[3], b.len - b.off[3]);
    char path[PATH_MAX], want[PATH_MAX + 64];
    trace_file(path, &z, z.len);
    snprintf(want, sizeof want, "%s: offset %zu: record size 0", path, b.off[3]);
    static const char *const cmds[][4] = {
        { "summary", "--no-symbols", NULL }, { "summary", "--no-symbols", "--json" },
        { "merge", "--no-symbols", NULL }, { "diff", NULL }, { "check", "--write-baseline", "-" },
        { "dump", NULL },
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        const char *argv[6] = { 0 };
        size_t n = 0;
        for (size_t k = 0; k < 3 && cmds[i][k]; k++)
            argv[n++] = cmds[i][k];
        argv[n++] = path;
        if (!strcmp(cmds[i][0], "diff"))
            argv[n++] = path;
        run_io(&res, NULL, NULL, argv);
        cr_expect_eq(res.status, 2, "%s: status %d", cmds[i][0], res.status);
        cr_expect(strstr(res.err, want) != NULL, "%s: %s", cmds[i][0], res.err);
    }
    unlink(path);
    tb_free(&z);
    tb_free(&b);
}

/* Sizes no device has (2^63 - 1, 2^63, 2^56 + 1 bytes in one ALLOC; four of 2^56 live
 * at once): corrupt, exit 2 naming the file (and the record), never a signed overflow
 * (the sanitizer build traps on one) or "8 EiB". */
Test(cli, rejects_implausible_sizes)
{
    static const uint64_t huge[] = { 0x7fffffffffffffffull, 0x8000000000000000ull,
                                     (1ull << 56) + 1, 1ull << 56 };
    for (size_t k = 0; k < 4; k++) {
        struct tb b = { 0 };
        tb_sample(&b);
        size_t first = 0;
        for (size_t i = 0; i < b.nrec; i++) {
            struct gmt_rec *h = (void *)(b.p + b.off[i]);
            if (h->type != GMT_REC_ALLOC)
                continue;
            first = first ? first : b.off[i];
            if (k < 3 && first != b.off[i])
                continue;
            memcpy(b.p + b.off[i] + offsetof(struct gmt_rec_alloc, bytes), &huge[k], 8);
        }
        char path[PATH_MAX], want[PATH_MAX + 64];
        trace_file(path, &b, b.len);
        if (k < 3)
            snprintf(want, sizeof want, "%s: offset %zu: ALLOC of %llu bytes", path, first,
                     (unsigned long long)huge[k]);
        else
            snprintf(want, sizeof want, "%s: memory live on a device adds up", path);
        static const char *const cmds[][3] = { { "summary", "--no-symbols", "--json" },
            { "merge", "--no-symbols", NULL }, { "check", "--write-baseline", "-" },
            { "diff", NULL, NULL } };
        for (size_t c = 0; c < 4; c++) {
            const char *argv[6] = { cmds[c][0] };
            size_t n = 1;
            for (size_t j = 1; j < 3 && cmds[c][j]; j++)
                argv[n++] = cmds[c][j];
            argv[n++] = path;
            if (c == 3)
                argv[n++] = path;
            run_io(&res, NULL, NULL, argv);
            cr_expect_eq(res.status, 2, "case %zu %s: status %d", k, cmds[c][0], res.status);
            cr_expect(strstr(res.err, want) != NULL, "case %zu %s: %s", k, cmds[c][0], res.err);
        }
        unlink(path);
        tb_free(&b);
    }
}

Test(cli, dump_rejects_newer_and_foreign_files)
{
    struct tb b = { 0 };
    char path[PATH_MAX];
    tb_header_ex(&b, GMT_BYTE_ORDER_MARK, 3, 0, 32);
    trace_file(path, &b, b.len);
    RUN(&res, "dump", path);
    unlink(path);
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, ": trace format 3.0 is newer than this gpumemtrace "
                              "(reads 1.x and 2.x)\n"), "%s", res.err);
    tb_free(&b);
    tb_header_ex(&b, 0x04030201u, 1, 0, 32);
    trace_file(path, &b, b.len);
    RUN(&res, "dump", path);
    unlink(path);
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "big-endian") != NULL, "%s", res.err);
    tb_free(&b);
    RUN(&res, "dump", "/nonexistent/x.gmt");
    cr_expect_eq(res.status, 2);
    cr_expect_str_eq(res.err, "/nonexistent/x.gmt: No such file or directory\n");
}

Test(cli, dump_prints_alloc_small_with_the_fields_of_alloc)
{
    struct tb b = { 0 };
    tb_allocs(&b, 1);
    char path[PATH_MAX];
    trace_file(path, &b, b.len);
    RUN(&res, "dump", path);
    unlink(path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect_str_eq(res.err, "");
    cr_expect_eq(lines(res.out), (int)b.nrec + 1);
    cr_expect(strstr(res.out, "  100     0.000001750 ALLOC_SMALL   api=cudaMallocPitch "
                              "kind=DEVICE address=0x7e0010000000 bytes=3145728 dt=250 "
                              "stack=2 scope=0 flags=0x1 device=-1\n") != NULL, "%s", res.out);
    tb_free(&b);
}

/* Writes t to path, then runs `form... path` (form: up to 3 words) into *r. */
static void run_on_file(struct result *r, const char *const form[4], const char *path,
                        const struct tb *t)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(t->p, 1, t->len, f), t->len);
    fclose(f);
    const char *args[5];
    size_t n = 0;
    for (; n < 3 && form[n]; n++)
        args[n] = form[n];
    args[n++] = path;
    args[n] = NULL;
    run_io(r, NULL, NULL, args);
}

/* The same trace written with ALLOC or with ALLOC_SMALL records reads the same. */
Test(cli, summary_is_the_same_with_alloc_small)
{
    static const char *const forms[][4] = { { "summary" }, { "summary", "--json" },
                                            { "summary", "--csv", "--table=devices" },
                                            { "summary", "--csv", "--table=sites" },
                                            { "summary", "--no-symbols" } };
    struct tb big = { 0 }, small = { 0 };
    tb_allocs(&big, 0);
    tb_allocs(&small, 1);
    char path[PATH_MAX];
    trace_file(path, &big, big.len);
    static struct result a;
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        /* one path for both, since the outputs name it */
        run_on_file(&a, forms[i], path, &big);
        run_on_file(&res, forms[i], path, &small);
        cr_expect_eq(res.status, a.status, "%s %s", forms[i][0], forms[i][1] ? forms[i][1] : "");
        cr_expect_str_eq(res.out, a.out, "%s %s", forms[i][0], forms[i][1] ? forms[i][1] : "");
        cr_expect_str_eq(res.err, a.err);
    }
    cr_expect(strstr(a.out, "  1         259 MiB") != NULL, "%s", a.out);
    unlink(path);
    tb_free(&big);
    tb_free(&small);
}

Test(cli, dump_goes_on_after_a_bad_file_and_exits_2)
{
    struct tb b = { 0 };
    tb_sample(&b);
    char path[PATH_MAX];
    trace_file(path, &b, b.len);
    RUN(&res, "dump", "/nonexistent/x.gmt", path);
    unlink(path);
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.out, "==> /nonexistent/x.gmt <==") != NULL);
    cr_expect(strstr(res.out, " END ") != NULL, "the good file is dumped");
    tb_free(&b);
}

Test(cli, dump_reads_standard_input)
{
    struct tb b = { 0 };
    tb_sample(&b);
    char path[PATH_MAX];
    trace_file(path, &b, b.len);
    run_io(&res, NULL, path, (const char *const[]){ "dump", "-", NULL });
    unlink(path);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect_eq(lines(res.out), (int)b.nrec + 1);
    tb_free(&b);
}

Test(cli, reports_a_failed_write_with_status_2)
{
    struct tb b = { 0 };
    tb_sample(&b);
    char path[PATH_MAX];
    trace_file(path, &b, b.len);
    run_io(&res, "/dev/full", NULL, (const char *const[]){ "dump", path, NULL });
    unlink(path);
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "gpumemtrace: error writing output") != NULL, "%s", res.err);
    run_io(&res, "/dev/full", NULL, (const char *const[]){ "--help", NULL });
    cr_expect_eq(res.status, 2);
    tb_free(&b);
}

Test(util, formats_bytes_for_people)
{
    char buf[GMT_FMT_LEN];
    cr_expect_str_eq(gmt_fmt_bytes(buf, sizeof buf, 0), "0 B");
    cr_expect_str_eq(gmt_fmt_bytes(buf, sizeof buf, 1023), "1023 B");
    cr_expect_str_eq(gmt_fmt_bytes(buf, sizeof buf, 1536), "1.5 KiB");
    cr_expect_str_eq(gmt_fmt_bytes(buf, sizeof buf, 288ull << 20), "288 MiB");
    cr_expect_str_eq(gmt_fmt_bytes(buf, sizeof buf, 3ull << 29), "1.5 GiB");
    cr_expect_str_eq(gmt_fmt_bytes(buf, sizeof buf, (10ull << 30) + (3ull << 28)), "10.8 GiB");
    cr_expect_str_eq(gmt_fmt_bytes(buf, sizeof buf, (1ull << 20) - 1), "1 MiB");
    cr_expect_str_eq(gmt_fmt_bytes(buf, sizeof buf, UINT64_MAX), "16 EiB");
    cr_expect_str_eq(gmt_fmt_sbytes(buf, sizeof buf, -(3ll << 29)), "-1.5 GiB");
    cr_expect_str_eq(gmt_fmt_sbytes(buf, sizeof buf, 288ll << 20), "+288 MiB");
    cr_expect_str_eq(gmt_fmt_sbytes(buf, sizeof buf, INT64_MIN), "-8 EiB");
    cr_expect_str_eq(gmt_fmt_sbytes(buf, sizeof buf, 0), "0 B");
    /* halves round away from zero, as the report's page rounds them */
    cr_expect_str_eq(gmt_fmt_bytes(buf, sizeof buf, 13ull << 27), "1.63 GiB"); /* 1.625 */
    cr_expect_str_eq(gmt_fmt_bytes(buf, sizeof buf, 49ull << 18), "12.3 MiB"); /* 12.25 */
    cr_expect_str_eq(gmt_fmt_bytes(buf, sizeof buf, 201ull << 9), "101 KiB"); /* 100.5 */
    cr_expect_str_eq(gmt_fmt_bytes(buf, sizeof buf, 1023ull << 10 | 512), "1 MiB"); /* 1023.5 KiB */
    cr_expect_str_eq(gmt_fmt_bytes(buf, sizeof buf, 1041ull << 20), "1.02 GiB"); /* 1.0166 */
}

Test(util, formats_times)
{
    char buf[GMT_FMT_LEN];
    cr_expect_str_eq(gmt_fmt_duration(buf, sizeof buf, 850), "850 ns");
    cr_expect_str_eq(gmt_fmt_duration(buf, sizeof buf, 12300), "12.3 us");
    cr_expect_str_eq(gmt_fmt_duration(buf, sizeof buf, 1500000), "1.5 ms");
    cr_expect_str_eq(gmt_fmt_duration(buf, sizeof buf, 2350000000ull), "2.35 s");
    cr_expect_str_eq(gmt_fmt_duration(buf, sizeof buf, 1250000000000ull), "1250 s");
    cr_expect_str_eq(gmt_fmt_seconds(buf, sizeof buf, 123456), "0.000123456");
    cr_expect_str_eq(gmt_fmt_seconds(buf, sizeof buf, -1500000000ll), "-1.500000000");
    cr_expect_str_eq(gmt_fmt_since(buf, sizeof buf, 0, UINT64_MAX), "-18446744073.709551615");
    cr_expect_str_eq(gmt_fmt_since(buf, sizeof buf, 7000000005ull, 5ull), "7.000000000");
}

Test(util, grows_vectors)
{
    struct gmt_vec v = GMT_VEC_INIT(uint64_t);
    for (uint64_t i = 0; i < 1000; i++) {
        uint64_t *e = gmt_vec_push(&v);
        cr_assert_not_null(e);
        cr_assert_eq(*e, 0);
        *e = i * 3;
    }
    cr_expect_eq(v.len, 1000);
    cr_expect_eq(((uint64_t *)v.data)[999], 2997);
    gmt_vec_free(&v);
    cr_expect_null(v.data);
    struct gmt_vec huge = { NULL, 0, 0, SIZE_MAX / 4 };
    cr_expect_null(gmt_vec_push(&huge), "overflowing size must fail, not wrap");
}

/* The sample with bytes that are not UTF-8, and control characters, in its host name
 * and its command line, as a file named in path. */
static void hostile_strings_file(char *path)
{
    struct tb b = { 0 };
    tb_sample(&b);
    uint8_t *host = memmem(b.p, b.len, "node-01", 7), *arg = memmem(b.p, b.len, "train.py", 8);
    cr_assert(host && arg);
    memcpy(host, "n\xc3\x1b[2J\xff", 7);
    memcpy(arg, "\xe2\x82tr\xed\xa0\x80\x7f", 8);
    trace_file(path, &b, b.len);
    tb_free(&b);
}

static void expect_json(const char *what, const char *text)
{
    struct gmt_json *v = NULL;
    char err[256] = "";
    cr_expect_eq(gmt_json_parse(text, strlen(text), &v, err, sizeof err), 0, "%s: %s: %s", what,
                 err, text);
    gmt_json_free(v);
}

Test(cli, json_is_valid_for_strings_that_are_not_utf8)
{
    char path[PATH_MAX];
    hostile_strings_file(path);
    RUN(&res, "summary", "--no-symbols", "--json", path);
    cr_expect_eq(res.status, 0, "%s", res.err);
    expect_json("summary", res.out);
    cr_expect(strstr(res.out, "\"host\": \"n\\u00c3\\u001b[2J\\u00ff\"") != NULL, "%s", res.out);
    RUN(&res, "merge", "--no-symbols", "--json", path);
    expect_json("merge", res.out);
    RUN(&res, "diff", "--json", path, path);
    expect_json("diff", res.out);
    unlink(path);
}

Test(cli, summary_json_is_valid_when_the_first_trace_fails)
{
    struct tb b = { 0 };
    tb_sample(&b);
    char good[PATH_MAX], bad[PATH_MAX];
    trace_file(good, &b, b.len);
    trace_file(bad, &b, 20); /* cut inside its header */
    RUN(&res, "summary", "--no-symbols", "--json", bad, good, bad);
    cr_expect_eq(res.status, 2);
    expect_json("summary", res.out);
    cr_expect_eq(lines(res.err), 2, "%s", res.err);
    unlink(good);
    unlink(bad);
    tb_free(&b);
}

/* (2.5) host time per call from sampled call forms: a first call timed as two records
 * (1000 ns), one timed call form of weight 8 (100 ns) and seven untimed ones: the row's
 * 9 calls have host time 1000 + 8 x 100 over 9 calls, not (1000 + 100) over 2. */
Test(cli, host_time_weighs_a_timed_call_form_by_its_rate)
{
    struct tb b = { 0 };
    tb_header_current(&b);
    struct gmt_rec_process p = { .pid = 1, .ppid = 1, .rank = -1, .monotonic_ns = TB_T0 };
    tb_rec(&b, GMT_REC_PROCESS, 0, &p, sizeof p, NULL, 0);
    tb_chunk(&b, 7);
    tb_thread_at(&b, 7, TB_T0 + 100);
    tb_scope_begin(&b, GMT_OP_AllReduce, 1, 0, 0xa, 256, 10);
    tb_scope_end(&b, GMT_OP_AllReduce, 1, 0, 1000);
    struct gmt_rec_scope_begin f = { .comm = 0xa, .count = 256, .stream = 0x77, .datatype = 7,
                                     .peer = -1 };
    tb_scope_call_w(&b, GMT_OP_AllReduce, 2, 0, 500, 100, GMT_CALL_HAS_ALL, &f, 8);
    for (uint32_t id = 3; id < 10; id++)
        tb_scope_call(&b, GMT_OP_AllReduce, id, 0, 300, 0, 0, &f);
    struct gmt_rec_end e = { .time_ns = TB_T0 + 10000 };
    tb_rec(&b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
    char path[PATH_MAX];
    trace_file(path, &b, b.len);
    RUN(&res, "summary", "--json", "--no-symbols", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "\"host_ns_total\": 1800, \"host_calls\": 9"), "%s", res.out);
    RUN(&res, "dump", path);
    cr_expect(strstr(res.out, "duration=100 has=0xf weight=8 comm=0xa"), "%s", res.out);
    unlink(path);
    tb_free(&b);
}

/* A FIFO nobody writes to, where the trace names a module, as the trace itself and as
 * a baseline: the CLI must not block on it (a blocked open or read ends as SIGALRM). */
Test(cli, never_blocks_on_a_fifo)
{
    char fifo[32];
    snprintf(fifo, sizeof fifo, "/tmp/gmt-fifo-%07d", (int)(getpid() % 10000000));
    cr_assert_eq(strlen(fifo), strlen("/usr/lib/libnccl.so.2"));
    unlink(fifo);
    cr_assert_eq(mkfifo(fifo, 0600), 0);
    struct tb b = { 0 };
    tb_sample(&b);
    uint8_t *mod = memmem(b.p, b.len, "/usr/lib/libnccl.so.2", strlen(fifo));
    cr_assert_not_null(mod);
    memcpy(mod, fifo, strlen(fifo));
    char path[PATH_MAX];
    trace_file(path, &b, b.len);
    RUN(&res, "summary", path);
    cr_expect_eq(res.status, 0, "summary with symbols: status %d: %s", res.status, res.err);
    RUN(&res, "summary", "--json", path);
    cr_expect_eq(res.status, 0, "summary --json: status %d: %s", res.status, res.err);
    RUN(&res, "diff", path, path);
    cr_expect_eq(res.status, 0, "diff: status %d: %s", res.status, res.err);
    RUN(&res, "merge", path);
    cr_expect_eq(res.status, 0, "merge: status %d: %s", res.status, res.err);
    RUN(&res, "check", path, "--baseline", fifo);
    cr_expect_eq(res.status, 2, "check --baseline FIFO: status %d", res.status);
    cr_expect(strstr(res.err, "not a regular file") != NULL, "%s", res.err);
    cr_expect_eq(lines(res.err), 1, "%s", res.err);
    RUN(&res, "summary", "--no-symbols", fifo);
    cr_expect_eq(res.status, 2, "summary of a FIFO: status %d", res.status);
    cr_expect(strstr(res.err, "a pipe nobody opened to write to in 3 s") != NULL, "%s", res.err);
    cr_expect_eq(lines(res.err), 1, "%s", res.err);
    RUN(&res, "dump", fifo);
    cr_expect_eq(res.status, 2, "dump of a FIFO: status %d", res.status);
    RUN(&res, "summary", "--no-symbols", "/dev/zero");
    cr_expect_eq(res.status, 2, "summary of a device: status %d", res.status);
    cr_expect(strstr(res.err, "/dev/zero: not a regular file or a pipe") != NULL, "%s", res.err);
    unlink(fifo);
    unlink(path);
    tb_free(&b);
}

/* A hostile file name (a newline, an escape sequence, a C1 control, bytes that are not
 * UTF-8) in every command's error message: one line, no control byte, name escaped. */
Test(cli, escapes_file_names_in_messages)
{
    const char *name = "/tmp/gmt-test-cli-\n\x1b[31m\xc2\x9b\xff.gmt";
    FILE *f = fopen(name, "wb");
    cr_assert_not_null(f);
    fputs("not a trace", f);
    fclose(f);
    static const char *const cmds[][3] = { { "summary", "--no-symbols" }, { "merge", "--no-symbols" },
        { "check", "--write-baseline" }, { "diff", "--json" }, { "dump", NULL } };
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        const char *argv[6] = { cmds[c][0] };
        size_t n = 1;
        if (cmds[c][1])
            argv[n++] = cmds[c][1];
        if (c == 2)
            argv[n++] = "-";
        argv[n++] = name;
        if (c == 3)
            argv[n++] = name;
        run_io(&res, NULL, NULL, argv);
        cr_expect_eq(res.status, 2, "%s: status %d", cmds[c][0], res.status);
        cr_expect_eq(lines(res.err), c == 3 ? 2 : 1, "%s: %s", cmds[c][0], res.err);
        cr_expect(strstr(res.err, "/tmp/gmt-test-cli-\\x0a\\x1b[31m\\xc2\\x9b\\xff.gmt: ") != NULL,
                  "%s: %s", cmds[c][0], res.err);
        for (const char *p = res.err; *p; p++)
            cr_expect(*p == '\n' || ((unsigned char)*p >= 0x20 && (unsigned char)*p < 0x7f),
                      "%s: byte 0x%02x in %s", cmds[c][0], (unsigned char)*p, res.err);
    }
    RUN(&res, "summary", "--\x1b[2J");
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "'--\\x1b[2J'") != NULL, "%s", res.err);
    unlink(name);
}

Test(util, writes_json_strings_as_valid_utf8)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    /* valid 2-, 3- and 4-byte sequences pass; a lone continuation byte, a cut sequence,
     * an overlong form, a surrogate and bytes above U+10FFFF are each \u00XX; a C1
     * control (U+009B) is its \u escape, the character after it (U+00A0) itself */
    gmt_fput_json_string(f, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\x80|\xe2\x82|\xc0\xaf|"
                            "\xed\xa0\x80|\xf4\x90\x80\x80|\x1b\"\\|\xc2\x9b\xc2\xa0");
    fclose(f);
    cr_expect_str_eq(buf, "\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80|\\u0080|\\u00e2\\u0082|"
                          "\\u00c0\\u00af|\\u00ed\\u00a0\\u0080|\\u00f4\\u0090\\u0080\\u0080|"
                          "\\u001b\\\"\\\\|\\u009b\xc2\xa0\"");
    expect_json("string", buf);
    free(buf);
}

Test(util, quotes_strings_safely)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    cr_assert_not_null(f);
    gmt_fput_quoted(f, "a\"b\\c\td\xff", 8);
    fclose(f);
    cr_expect_str_eq(buf, "\"a\\\"b\\\\c\\td\\xff\"");
    free(buf);
}

/* ---- what the device said: samples, graph memory, failures, calls open at the end ---- */

Test(cli, summary_shows_what_the_device_said)
{
    struct tb b = { 0 };
    tb_forensics(&b);
    char path[PATH_MAX];
    trace_file(path, &b, b.len);
    RUN(&res, "summary", "--no-symbols", "--json", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    expect_json("summary --json", res.out);
    /* the captured allocation is address space: tracked is 64 + 8 MiB */
    cr_expect(strstr(res.out, "\"peak_bytes\": 75497472"), "%s", res.out);
    /* untracked at the largest sample (2 GiB used): 2 GiB - 64 MiB - 32 MiB of graph pool */
    cr_expect(strstr(res.out, "\"untracked_bytes\": 2046820352"), "%s", res.out);
    cr_expect(strstr(res.out, "\"graph_reserved_peak_bytes\": 33554432"));
    cr_expect(strstr(res.out, "\"process_used_max_bytes\": 1073741824"));
    cr_expect(strstr(res.out, "\"peer_mapped_peak_bytes\": 14680064"), "imported 10 MiB + 4 MiB mapped");
    cr_expect(strstr(res.out, "\"host_pinned_without_device_peak_bytes\": 2097152"));
    cr_expect(!strstr(res.out, "\"device\": -1"), "a device row of host memory only");
    cr_expect(strstr(res.out, "\"error_name\": \"cudaErrorMemoryAllocation\""));
    cr_expect(strstr(res.out, "\"device_free_bytes\": 149786984448, \"device_total_bytes\": 151397597184, "
                              "\"device_sampled\": \"after_failure\""), "%s", res.out);
    cr_expect(strstr(res.out, "\"open_at_end\": [{\"scope\": 1, \"op\": \"AllReduce\", \"comm_rank\": 3, "
                              "\"comm_size\": 8"), "%s", res.out);
    cr_expect(strstr(res.out, "\"tracked_bytes\": 8388608"));

    RUN(&res, "summary", "--no-symbols", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "graph memory (CUDA graphs' pool, not in tracked): peak 32 MiB"), "%s", res.out);
    cr_expect(strstr(res.out, "this process (NVML): at most 1 GiB"));
    cr_expect(strstr(res.out, "peer memory mapped (other processes' memory, not this device's): peak 14 MiB"));
    cr_expect(strstr(res.out, "pinned host memory with no device: peak 2 MiB"));
    cr_expect(strstr(res.out, "failed: cudaErrorMemoryAllocation"));
    cr_expect(strstr(res.out, "free of 141 GiB right after the failure"), "%s", res.out);
    cr_expect(strstr(res.out, "Open when the trace ends (the process stopped: hung, killed or crashed"));
    cr_expect(strstr(res.out, "AllReduce #1 at 0.000 s on comm 1 (rank 3 of 8), device 0, thread 100"),
              "%s", res.out);
    cr_expect(strstr(res.out, "allocated +8 MiB under it"));
    unlink(path);
    tb_free(&b);
}

/* A call the trace ends inside, known only from SCOPE_OPEN, is open at the end in the
 * summary, on the thread in the call; one that returned is not. */
Test(cli, summary_lists_a_call_known_from_scope_open_as_open_at_end)
{
    struct tb b = { 0 };
    tb_opens(&b, 0);
    char path[PATH_MAX];
    trace_file(path, &b, b.len);
    RUN(&res, "summary", "--no-symbols", "--json", path);
    unlink(path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    expect_json("summary --json", res.out);
    const char *open = strstr(res.out, "\"open_at_end\": [");
    cr_assert_not_null(open, "%s", res.out);
    cr_expect(strstr(open, "{\"scope\": 3, \"op\": \"AllGather\", \"comm_rank\": -1, "
                           "\"comm_size\": -1, \"device\": -1, \"tid\": 7, \"since_ns\": 4000"),
              "%s", open);
    cr_expect(strstr(open, "{\"scope\": 2, \"op\": \"Broadcast\""), "%s", open);
    cr_expect(!strstr(open, "{\"scope\": 1,"), "%s", open);
    tb_free(&b);
}

/* A failure with no sample after it takes the latest before it, and says so. */
Test(cli, a_failure_without_its_own_sample_takes_the_last_one)
{
    struct tb b = { 0 };
    tb_process_min(&b);
    tb_thread_on_device0(&b, 100, 1000);
    tb_meminfo(&b, GMT_MEMINFO_FIRST, GMT_MEMINFO_SRC_CUMEMGETINFO, 1 * TB_GIB, GMT_MEMINFO_UNKNOWN, 1000);
    struct gmt_rec_alloc_fail f = { .bytes = 200 * TB_GIB, .error = 2, .dt = 1000,
                                    .kind = GMT_KIND_DEVICE, .device = -1 };
    tb_rec(&b, GMT_REC_ALLOC_FAIL, GMT_API_cuMemAlloc, &f, sizeof f, NULL, 0);
    struct gmt_rec_end end = { .time_ns = TB_T0 + 9000 };
    tb_rec(&b, GMT_REC_END, 0, &end, sizeof end, NULL, 0);
    char path[PATH_MAX];
    trace_file(path, &b, b.len);
    RUN(&res, "summary", "--no-symbols", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "failed: CUDA_ERROR_OUT_OF_MEMORY"), "%s", res.out);
    cr_expect(strstr(res.out, "device: 140 GiB free of 141 GiB at the last sample before it"), "%s", res.out);
    cr_expect(!strstr(res.out, "Open when the trace ends"));
    unlink(path);
    tb_free(&b);
}

/* ---- export --format folded ---- */

/* The bytes of a folded output's lines (each "frame;frame bytes"), summed; -1 when a
 * line is not folded. */
static long long folded_sum(const char *out, int *nlines)
{
    long long sum = 0;
    *nlines = 0;
    for (const char *l = out; *l;) {
        const char *nl = strchr(l, '\n');
        if (!nl)
            return -1;
        const char *sp = nl;
        while (sp > l && sp[-1] != ' ')
            sp--;
        if (sp == l || sp == nl)
            return -1;
        char *end;
        long long v = strtoll(sp, &end, 10);
        if (end != nl || v <= 0)
            return -1;
        sum += v;
        (*nlines)++;
        l = nl + 1;
    }
    return sum;
}

/* A JSON field's integer, the first after `from` in text. */
static long long json_int(const char *text, const char *field)
{
    char key[64];
    snprintf(key, sizeof key, "\"%s\": ", field);
    const char *p = strstr(text, key);
    return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

Test(cli, folded_export_sums_to_the_summary)
{
    static const char *tr = "tests/golden/demo-r0.gmt";
    struct result sum;
    RUN(&sum, "summary", "--json", "--no-symbols", tr);
    cr_assert_eq(sum.status, 0);
    int n;
    RUN(&res, "export", "--format", "folded", "--no-symbols", tr);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect_eq(folded_sum(res.out, &n), json_int(sum.out, "peak_bytes"), "%s", res.out);
    cr_expect_gt(n, 3);
    cr_expect(strstr(res.out, "train_sim+0x1c60;"), "outermost frame first: %s", res.out);
    RUN(&res, "export", "--format", "folded", "--no-symbols", "--cost", "leaked", tr);
    cr_expect_eq(folded_sum(res.out, &n), json_int(sum.out, "end_bytes"), "%s", res.out);
    RUN(&res, "export", "--format", "folded", "--no-symbols", "--cost", "allocated", tr);
    long long allocated = folded_sum(res.out, &n);
    cr_expect_geq(allocated, json_int(sum.out, "peak_bytes"));
    RUN(&sum, "summary", "--json", "--no-symbols", "--to", "1.5", tr);
    RUN(&res, "export", "--format", "folded", "--no-symbols", "--cost", "at=1.5", tr);
    cr_expect_eq(folded_sum(res.out, &n), json_int(sum.out, "end_bytes"), "%s", res.out);
    /* two traces: a root frame names each */
    RUN(&res, "export", "--format", "folded", "--no-symbols", tr, "tests/golden/demo-r1.gmt");
    cr_expect(strstr(res.out, "\ndemo-r1.gmt;") && !strncmp(res.out, "demo-r0.gmt;", 12), "%s", res.out);
}

Test(cli, export_rejects_bad_usage_with_status_2)
{
    static const char *const bad[][6] = {
        { "export", "tests/golden/demo-r0.gmt" },
        { "export", "--format", "svg", "tests/golden/demo-r0.gmt" },
        { "export", "--format", "folded", "--cost", "at=0", "tests/golden/demo-r0.gmt" },
        { "export", "--format", "folded", "--cost", "most", "tests/golden/demo-r0.gmt" },
        { "export", "--format", "folded" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        run_io(&res, NULL, NULL, bad[i]);
        cr_expect_eq(res.status, 2, "case %zu", i);
        cr_expect_eq(lines(res.err), 1, "case %zu: %s", i, res.err);
        cr_expect_str_empty(res.out);
    }
}

/* ---- summary --csv: one table per file ---- */

static const char *const csv_tables[] = { "traces", "devices", "categories", "collectives",
                                          "nccl_memory", "phases", "phase_stacks", "steps",
                                          "sites", "leaks", "held", "failures", "open_at_end",
                                          "pytorch_devices", "pytorch_sites", "pytorch_leaks",
                                          "pytorch_ooms", "job_ranks", "job_collectives" };

/* tb_allocs' trace in a file named in path; a new directory for the outputs. */
static const char *csv_setup(struct tb *b, char *path)
{
    tb_allocs(b, 0);
    trace_file(path, b, b->len);
    return cli_tmpdir();
}

Test(cli, summary_csv_writes_each_table_to_its_file_with_one_header)
{
    struct tb b = { 0 };
    char path[PATH_MAX], dir[PATH_MAX + 16];
    const char *top = csv_setup(&b, path);
    snprintf(dir, sizeof dir, "%s/tables", top); /* made by summary */
    RUN(&res, "summary", "--no-symbols", "--csv", "-o", dir, path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect_str_empty(res.out);
    cr_expect_str_empty(res.err);
    for (size_t i = 0; i < sizeof csv_tables / sizeof csv_tables[0]; i++) {
        char file[PATH_MAX + 64];
        snprintf(file, sizeof file, "%s/%s.csv", dir, csv_tables[i]);
        static char text[1 << 20];
        snprintf(text, sizeof text, "%s", cli_read_file(file));
        cr_expect(!strncmp(text, "file,", 5) || !strncmp(text, "op,", 3), "%s: %.80s",
                  csv_tables[i], text);
        cr_expect_null(strstr(text, "section"), "%s", csv_tables[i]);
        /* a table without rows still has its header */
        if (!strcmp(csv_tables[i], "failures") || !strcmp(csv_tables[i], "job_ranks"))
            cr_expect_eq(lines(text), 1, "%s: %s", csv_tables[i], text);
        if (!strcmp(csv_tables[i], "devices"))
            cr_expect_eq(lines(text), 3, "a header and the trace's two devices: %s", text);
        /* --table prints what the file holds */
        char opt[64];
        snprintf(opt, sizeof opt, "--table=%s", csv_tables[i]);
        RUN(&res, "summary", "--no-symbols", "--csv", opt, path);
        cr_expect_eq(res.status, 0, "%s: %s", opt, res.err);
        cr_expect_str_eq(res.out, text, "%s", opt);
    }
    /* the directory may exist: the files are written again */
    RUN(&res, "summary", "--no-symbols", "--csv", "--output", dir, path);
    cr_expect_eq(res.status, 0, "%s", res.err);
    /* and -o without --csv writes the document there */
    char json[PATH_MAX + 16];
    snprintf(json, sizeof json, "%s/s.json", top);
    RUN(&res, "summary", "--no-symbols", "--json", "-o", json, path);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect_str_empty(res.out);
    cr_expect(strstr(cli_read_file(json), "\"schema\": \"gpumemtrace.summary/1\"") != NULL);
    unlink(path);
    cli_rmtree(top);
    tb_free(&b);
}

Test(cli, summary_csv_rejects_bad_usage_with_one_line_and_status_2)
{
    struct tb b = { 0 };
    char path[PATH_MAX], file[PATH_MAX + 16];
    const char *top = csv_setup(&b, path);
    snprintf(file, sizeof file, "%s/plain", top);
    cr_assert_eq(close(open(file, O_WRONLY | O_CREAT, 0644)), 0);
    const char *const cases[][5] = {
        { "--csv", NULL, NULL, NULL, "--csv wants -o DIR (every table as DIR/TABLE.csv) or "
                                     "--table NAME (one on stdout), NAME one of traces, " },
        { "--csv", "--table=frob", NULL, NULL, "--table wants one of traces, devices, " },
        { "--csv", "--table=sites", "-o", top, "--table writes one table on stdout, -o DIR" },
        { "--table=sites", NULL, NULL, NULL, "--table is for --csv" },
        { "--json", "--table=sites", NULL, NULL, "--table is for --csv" },
        { "--csv", "-o", "/nonexistent/a/b", NULL,
          "gpumemtrace: summary: cannot create /nonexistent/a/b: No such file or directory" },
        { "--csv", "-o", file, NULL, " is not a directory" },
        { "--json", "-o", "/nonexistent/a.json", NULL, "summary: cannot create /nonexistent/a.json" },
        { "--csv", "-o", "", NULL, "-o wants a path" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[8] = { "summary" };
        size_t n = 1;
        for (size_t k = 0; k < 4 && cases[i][k]; k++)
            args[n++] = cases[i][k];
        args[n++] = path;
        args[n] = NULL;
        run_io(&res, NULL, NULL, args);
        cr_expect_eq(res.status, 2, "case %zu: status %d", i, res.status);
        cr_expect(strstr(res.err, cases[i][4]) != NULL, "case %zu: %s", i, res.err);
        cr_expect_eq(lines(res.err), 1, "case %zu: %s", i, res.err);
        cr_expect_str_empty(res.out, "case %zu", i);
    }
    /* the message names every table */
    RUN(&res, "summary", "--csv", path);
    for (size_t i = 0; i < sizeof csv_tables / sizeof csv_tables[0]; i++)
        cr_expect(strstr(res.err, csv_tables[i]) != NULL, "%s: %s", csv_tables[i], res.err);
    unlink(path);
    cli_rmtree(top);
    tb_free(&b);
}

/* RFC 4180: the field with a comma is quoted, the one with quotes and a newline too,
 * each quote doubled; a plain field is not. */
Test(cli, summary_csv_quotes_commas_quotes_and_newlines)
{
    struct tb b = { 0 };
    char path[PATH_MAX];
    tb_sample(&b);
    uint8_t *host = memmem(b.p, b.len, "node-01", 7);
    cr_assert_not_null(host);
    memcpy(host, "node,01", 7);
    trace_file(path, &b, b.len);
    RUN(&res, "summary", "--no-symbols", "--csv", "--table=traces", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, ",4242,4200,\"node,01\",1,2,1,"
                              "\"python3 train.py --lr=0.1\n\"\"x\"\"\",13000,") != NULL,
              "%s", res.out);
    unlink(path);
    tb_free(&b);
}

/* --category: of two rules for one module the later wins; a name outside
 * [A-Za-z0-9_.-] is refused in one line, status 2. */
Test(cli, category_rules_later_wins_and_bad_names_are_refused)
{
    RUN(&res, "summary", "--no-symbols", "--category", "first=libnccl*", "--category",
        "second=libnccl*", "tests/golden/sample.gmt");
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "at the peak: second 64 MiB;") != NULL, "%s", res.out);
    static const char *const bad[] = { "a b=libnccl*", "a/b=libnccl*", "=libnccl*", "nccl=" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        RUN(&res, "summary", "--no-symbols", "--category", bad[i], "tests/golden/sample.gmt");
        cr_expect_eq(res.status, 2, "%s: status %d", bad[i], res.status);
        cr_expect(strstr(res.err, "bad --category") != NULL, "%s: %s", bad[i], res.err);
        cr_expect_eq(lines(res.err), 1, "%s: %s", bad[i], res.err);
        cr_expect_str_empty(res.out, "%s", bad[i]);
    }
}

/* A free of an address never allocated here is counted as unmatched, not taken off. */
Test(cli, a_free_of_an_unknown_address_is_counted_unmatched)
{
    struct tb b = { 0 };
    tb_process_min(&b);
    tb_thread_on_device0(&b, 1, 10);
    tb_alloc_at(&b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0, 0x7000000, 8u << 20, 0, 0, 10);
    struct gmt_rec_free f = { .address = 0x9000000, .dt = 10 };
    tb_rec(&b, GMT_REC_FREE, GMT_API_cudaFree, &f, sizeof f, NULL, 0);
    char path[PATH_MAX];
    trace_file(path, &b, b.len);
    RUN(&res, "summary", "--no-symbols", "--json", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "\"unmatched_frees\": 1") != NULL, "%s", res.out);
    unlink(path);
    tb_free(&b);
}

/* ---- caches are not leaks ---- */

static void held_module(struct tb *b, uint32_t id, const char *path, uint64_t start)
{
    struct gmt_rec_module_load r = { .time_ns = TB_T0 + 10, .module_id = id, .load_bias = start,
                                     .start = start, .end = start + 0x100000,
                                     .path_len = (uint32_t)strlen(path) + 1 };
    tb_rec(b, GMT_REC_MODULE_LOAD, 0, &r, sizeof r, path, strlen(path) + 1);
}

static void held_stack(struct tb *b, uint32_t id, uint64_t ip)
{
    struct gmt_rec_stack r = { .stack_id = id, .depth = 1 };
    tb_rec(b, GMT_REC_STACK, 0, &r, sizeof r, &ip, sizeof ip);
}

Test(cli, memory_held_by_a_cache_at_exit_is_not_a_leak)
{
    struct tb b = { 0 };
    tb_process_min(&b);
    held_module(&b, 1, "/site-packages/torch/lib/libc10_cuda.so", 0x7f0000000000ull);
    held_module(&b, 2, "/site-packages/nvidia/nccl/lib/libnccl.so.2", 0x7f1000000000ull);
    held_module(&b, 3, "/home/u/train", 0x400000ull);
    tb_chunk(&b, 100);
    tb_thread_at(&b, 100, TB_T0 + 1000);
    held_stack(&b, 1, 0x7f0000001000ull);
    held_stack(&b, 2, 0x7f1000001000ull);
    held_stack(&b, 3, 0x401000ull);
    struct gmt_rec_cuctx cx = { .context = 0xc1, .device = 0 };
    tb_rec(&b, GMT_REC_CUCTX, 0, &cx, sizeof cx, NULL, 0);
    const struct { uint32_t stack; uint64_t bytes; } a[] = {
        { 1, 512 * TB_MIB }, { 1, 20 * TB_MIB }, { 2, 10 * TB_MIB }, { 3, 6 * TB_MIB } };
    for (size_t i = 0; i < 4; i++) {
        struct gmt_rec_alloc r = { .address = 0x10000000 * (i + 1), .bytes = a[i].bytes, .dt = 100,
                                   .stack_id = a[i].stack, .kind = GMT_KIND_DEVICE, .device = -1 };
        tb_rec(&b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &r, sizeof r, NULL, 0);
    }
    struct gmt_rec_end end = { .time_ns = TB_T0 + 9000 };
    tb_rec(&b, GMT_REC_END, 0, &end, sizeof end, NULL, 0);
    char path[PATH_MAX];
    trace_file(path, &b, b.len);
    RUN(&res, "summary", "--no-symbols", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    const char *leaks = strstr(res.out, "\nLeaks ");
    const char *held = strstr(res.out, "\nHeld at the end for reuse");
    cr_assert(leaks && held, "%s", res.out);
    cr_expect(strstr(held, "532 MiB in 2 allocation(s)  PyTorch's caching allocator"), "%s", held);
    cr_expect(strstr(held, "10 MiB in 1 allocation(s)  NCCL's communicators (not destroyed)"), "%s", held);
    /* the leaks section holds the user's 6 MiB only */
    char section[2048];
    snprintf(section, sizeof section, "%.*s", (int)(held - leaks), leaks);
    cr_expect(strstr(section, "6 MiB in 1 allocation(s)  [user]"), "%s", section);
    cr_expect(!strstr(section, "libc10_cuda") && !strstr(section, "libnccl"), "%s", section);
    RUN(&res, "summary", "--no-symbols", "--json", path);
    expect_json("summary --json", res.out);
    cr_expect(strstr(res.out, "\"held_at_end\": [{\"holder\": \"PyTorch's caching allocator\", "
                              "\"bytes\": 557842432, \"allocations\": 2}"), "%s", res.out);
    cr_expect(strstr(res.out, "\"held_by\": null"));
    unlink(path);
    tb_free(&b);
}

/* ---- sites: where the user's code asked, one site per line shown ---- */

/* The stack lines of a summary's "Top allocation sites" section, into lines[]. */
static int site_lines(const char *out, char lines[][512], int max)
{
    const char *p = strstr(out, "Top allocation sites");
    const char *end = p ? strstr(p, "\nLeaks") : NULL;
    int n = 0;
    while (p && end && n < max && (p = strstr(p, "\n      ")) && p < end) {
        p += 7;
        const char *nl = strchr(p, '\n');
        snprintf(lines[n++], 512, "%.*s", (int)(nl - p), p);
    }
    return n;
}

Test(cli, sites_that_print_alike_are_one_site)
{
    RUN(&res, "summary", "--no-symbols", "tests/golden/demo-r0.gmt");
    cr_assert_eq(res.status, 0);
    char l[16][512];
    int n = site_lines(res.out, l, 16);
    cr_assert_geq(n, 8, "%s", res.out);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            cr_expect_str_neq(l[i], l[j], "sites %d and %d print alike", j, i);
    /* NCCL's receive and send buffers share the frames shown: one site of both */
    cr_expect(strstr(res.out, "      24 MiB at peak, 0 B at end, 4 allocs, 24 MiB in all, 2 stacks  [nccl]\n"
                              "      libnccl.so.2+0x3999 (calls cuMemCreate) < libnccl.so.2+0x3c9d\n"),
              "%s", res.out);
    /* the JSON names the stacks in it; --frames 3, every frame from the site, tells them apart */
    RUN(&res, "summary", "--no-symbols", "--json", "tests/golden/demo-r0.gmt");
    cr_expect(strstr(res.out, "\"line\": \"libnccl.so.2+0x3999 (calls cuMemCreate) < libnccl.so.2+0x3c9d\", "
                              "\"stack_ids\": [13, 16]}"), "%s", res.out);
    RUN(&res, "summary", "--no-symbols", "--frames", "3", "tests/golden/demo-r0.gmt");
    cr_expect(strstr(res.out, "libnccl.so.2+0x3999 (calls cuMemCreate) < libnccl.so.2+0x3c9d < libnccl.so.2+0x5eee\n"), "%s", res.out);
    cr_expect(strstr(res.out, "libnccl.so.2+0x3999 (calls cuMemCreate) < libnccl.so.2+0x3c9d < libnccl.so.2+0x5f93\n"), "%s", res.out);
}

Test(cli, frames_and_internal_rules_shape_the_sites)
{
    RUN(&res, "summary", "--no-symbols", "--frames", "1", "tests/golden/demo-r0.gmt");
    cr_assert_eq(res.status, 0, "%s", res.err);
    char l[16][512];
    int n = site_lines(res.out, l, 16);
    cr_assert_geq(n, 8);
    int one = 0;
    for (int i = 0; i < n; i++)
        one += !strstr(l[i], " < ");
    cr_expect_geq(one, n - 4, "--frames 1: one frame where that tells the sites apart");
    /* NCCL's frames as internals: the site of its init's allocations is the user's call */
    RUN(&res, "summary", "--no-symbols", "--internal", "libnccl*", "tests/golden/demo-r0.gmt");
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "\n      train_sim+0x1462 (calls cuMemCreate) < train_sim+0x1c60\n"), "%s", res.out);
    RUN(&res, "summary", "--frames", "0", "tests/golden/demo-r0.gmt");
    cr_expect_eq(res.status, 2);
    RUN(&res, "summary", "--internal", "", "tests/golden/demo-r0.gmt");
    cr_expect_eq(res.status, 2);
}

/* Rank `rank`'s trace: the user's site (stack 3) allocates `user` bytes, NCCL's (stack
 * 2) 10 MiB on every rank but rank 2; all live at the end. */
static void merge_rank(struct tb *b, int rank, uint64_t user)
{
    tb_header_current(b);
    struct gmt_rec_process p = { .pid = 9 + (uint32_t)rank, .ppid = 1, .rank = rank,
                                 .local_rank = rank, .world_size = 3, .local_world_size = 3,
                                 .monotonic_ns = TB_T0 };
    tb_rec(b, GMT_REC_PROCESS, 0, &p, sizeof p, NULL, 0);
    held_module(b, 2, "/site-packages/nvidia/nccl/lib/libnccl.so.2", 0x7f1000000000ull);
    held_module(b, 3, "/home/u/train", 0x400000ull);
    tb_chunk(b, 100);
    tb_thread_at(b, 100, TB_T0 + 1000);
    held_stack(b, 2, 0x7f1000001000ull);
    held_stack(b, 3, 0x401000ull);
    struct gmt_rec_cuctx cx = { .context = 0xc1, .device = 0 };
    tb_rec(b, GMT_REC_CUCTX, 0, &cx, sizeof cx, NULL, 0);
    struct gmt_rec_alloc r = { .address = 0x10000000, .bytes = user, .dt = 100, .stack_id = 3,
                               .kind = GMT_KIND_DEVICE, .device = -1 };
    tb_rec(b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &r, sizeof r, NULL, 0);
    if (rank != 2) {
        r = (struct gmt_rec_alloc){ .address = 0x20000000, .bytes = 10 * TB_MIB, .dt = 100,
                                    .stack_id = 2, .kind = GMT_KIND_DEVICE, .device = -1 };
        tb_rec(b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &r, sizeof r, NULL, 0);
    }
    struct gmt_rec_end end = { .time_ns = TB_T0 + 9000 };
    tb_rec(b, GMT_REC_END, 0, &end, sizeof end, NULL, 0);
}

Test(cli, merge_shows_the_sites_across_ranks)
{
    char path[3][PATH_MAX];
    const uint64_t user[3] = { 6 * TB_MIB, 30 * TB_MIB, 6 * TB_MIB };
    for (int i = 0; i < 3; i++) {
        struct tb b = { 0 };
        merge_rank(&b, i, user[i]);
        trace_file(path[i], &b, b.len);
        tb_free(&b);
    }
    RUN(&res, "merge", "--no-symbols", path[2], path[0], path[1]);
    cr_assert_eq(res.status, 0, "%s", res.err);
    const char *t = strstr(res.out, "Allocation sites across ranks");
    cr_assert(t, "%s", res.out);
    /* largest first; the rank with most and the one with least named */
    const char *u = strstr(t, "42 MiB      3      6 MiB     30 MiB  train+0xfff (calls cudaMalloc)  (rank 1 30 MiB, rank 0 6 MiB)");
    const char *n = strstr(t, "20 MiB      2        0 B     10 MiB  libnccl.so.2+0xfff (calls cudaMalloc)  (rank 0 10 MiB, rank 2 0 B)");
    cr_expect(u && n && u < n, "%s", t);
    RUN(&res, "merge", "--no-symbols", "--json", "--top", "1", path[0], path[1], path[2]);
    cr_assert_eq(res.status, 0, "%s", res.err);
    expect_json("merge --json", res.out);
    cr_expect(strstr(res.out, "\"sites\": [{\"site\": \"train+0xfff (calls cudaMalloc)\", \"ranks\": 3, "
                              "\"live_at_peak_bytes\": 44040192, \"min_bytes\": 6291456, "
                              "\"max_bytes\": 31457280, \"min_rank\": 0, \"max_rank\": 1}]}"),
              "%s", res.out);
    RUN(&res, "merge", "--frames", "0", path[0]);
    cr_expect_eq(res.status, 2);
    for (int i = 0; i < 3; i++)
        unlink(path[i]);
}

/* One unreadable trace among good ones: said once, on stderr, and exit 2; merge still
 * shows the others, diff (whose answer wants every trace of a side) shows nothing. */
Test(cli, merge_and_diff_say_an_unreadable_trace_once)
{
    char dir[] = "/tmp/gmt-test-cli-XXXXXX", path[4][PATH_MAX + 32];
    cr_assert(mkdtemp(dir));
    for (int i = 0; i < 4; i++) {
        snprintf(path[i], sizeof path[i], "%s/gpumemtrace.h.%d.r%d.gmt", dir, 10 + i, i);
        struct tb b = { 0 };
        if (i == 2)
            tb_put(&b, "not a trace at all", 18);
        else
            merge_rank(&b, i, 6 * TB_MIB);
        FILE *f = fopen(path[i], "wb");
        cr_assert(f && fwrite(b.p, 1, b.len, f) == b.len && !fclose(f));
        tb_free(&b);
    }
    RUN(&res, "merge", "--no-symbols", dir);
    cr_expect_eq(res.status, 2, "%s", res.err);
    cr_expect_eq(count_of(res.err, "gpumemtrace: "), 1, "%s", res.err);
    cr_expect_eq(count_of(res.err, path[2]), 1, "%s", res.err);
    cr_expect(strstr(res.out, "gpumemtrace merge: 3 trace(s)"), "%s", res.out);
    cr_expect(strstr(res.out, "r3.gmt") && strstr(res.out, "r0.gmt"), "%s", res.out);
    RUN(&res, "diff", dir, path[0]);
    cr_expect_eq(res.status, 2, "%s", res.err);
    cr_expect_eq(count_of(res.err, "gpumemtrace: "), 1, "%s", res.err);
    cr_expect_eq(count_of(res.err, path[2]), 1, "%s", res.err);
    cr_expect_eq(strlen(res.out), 0, "%s", res.out);
    for (int i = 0; i < 4; i++)
        unlink(path[i]);
    rmdir(dir);
}

/* The first pass of summary and explain over several traces (gmt_job_open): a trace it
 * cannot read is said once and the exit status is 2; the others make the job. */
Test(cli, summary_and_explain_of_a_job_say_an_unreadable_trace_once)
{
    char dir[] = "/tmp/gmt-test-cli-XXXXXX", path[3][PATH_MAX + 32];
    cr_assert(mkdtemp(dir));
    for (int i = 0; i < 3; i++) {
        snprintf(path[i], sizeof path[i], "%s/gpumemtrace.h.%d.r%d.gmt", dir, 10 + i, i);
        char src[64];
        snprintf(src, sizeof src, "tests/golden/demo-r%d.gmt", i);
        FILE *in = i < 2 ? fopen(src, "rb") : NULL, *out = fopen(path[i], "wb");
        cr_assert(out && (i == 2 || in));
        char buf[65536];
        size_t k;
        while (in && (k = fread(buf, 1, sizeof buf, in)) > 0)
            cr_assert_eq(fwrite(buf, 1, k, out), k);
        if (!in)
            fputs("not a trace", out);
        else
            fclose(in);
        cr_assert_eq(fclose(out), 0);
    }
    static const char *const cmds[][3] = { { "summary", "--no-symbols" },
                                           { "summary", "--no-symbols", "--json" },
                                           { "explain", "--no-symbols" },
                                           { "explain", "--no-symbols", "--json" } };
    for (size_t c = 0; c < sizeof cmds / sizeof cmds[0]; c++) {
        if (cmds[c][2])
            RUN(&res, cmds[c][0], cmds[c][1], cmds[c][2], dir);
        else
            RUN(&res, cmds[c][0], cmds[c][1], dir);
        cr_expect_eq(res.status, 2, "%s %s: %s", cmds[c][0], cmds[c][2] ? cmds[c][2] : "", res.err);
        cr_expect_eq(count_of(res.err, "gpumemtrace: "), 1, "%s: %s", cmds[c][0], res.err);
        cr_expect_eq(count_of(res.err, path[2]), 1, "%s: %s", cmds[c][0], res.err);
        cr_expect(strstr(res.out, cmds[c][2] ? "\"rank\": 1" : "2 rank") ||
                  strstr(res.out, "2 trace(s), 2 with a rank"), "%s: %s", cmds[c][0], res.out);
    }
    for (int i = 0; i < 3; i++)
        unlink(path[i]);
    rmdir(dir);
}

/* ---- options that do what they say ---- */

Test(cli, op_matches_case_insensitively_and_takes_the_groups_of_the_op)
{
    RUN(&res, "summary", "--no-symbols", "--op", "allreduce", "tests/golden/demo-r0.gmt");
    cr_assert_eq(res.status, 0, "%s", res.err);
    const char *t = strstr(res.out, "\nNCCL calls");
    cr_assert(t, "%s", res.out);
    cr_expect(strstr(t, "\n  Group(AllReduce) "), "the group of all_reduces is AllReduce's: %s", t);
    cr_expect(strstr(t, "\n  AllReduce "), "%s", t);
    cr_expect(!strstr(t, "\n  AllGather ") && !strstr(t, "\n  CommInitRank "), "%s", t);
    cr_expect_str_empty(res.err);
    RUN(&res, "summary", "--no-symbols", "--op", "Reduce", "tests/golden/demo-r0.gmt");
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "gpumemtrace summary: --op Reduce matches no NCCL call in the trace read "
                              "(calls there: CommInitRank, Group(AllReduce), AllReduce, AllGather, "
                              "CommDestroy)\n"), "%s", res.err);
    cr_expect_eq(lines(res.err), 1, "%s", res.err);
}

Test(cli, device_and_window_say_when_they_select_nothing)
{
    RUN(&res, "summary", "--no-symbols", "--device", "3", "tests/golden/demo-r0.gmt");
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "--device 3 matches no device in the trace read (devices there: 0)\n"),
              "%s", res.err);
    RUN(&res, "summary", "--no-symbols", "--from", "100", "tests/golden/demo-r0.gmt");
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "--from 100.000 s is past the trace's end (5.266 s)"), "%s", res.err);
    cr_expect_eq(lines(res.err), 1, "%s", res.err);
    /* the window applies to the NCCL calls too: none began after 5 s */
    RUN(&res, "summary", "--no-symbols", "--from", "5", "tests/golden/demo-r0.gmt");
    cr_assert_eq(res.status, 0, "%s", res.err);
    const char *t = strstr(res.out, "\nNCCL calls");
    cr_assert(t, "%s", res.out);
    cr_expect(!strstr(t, "\n  AllReduce ") && !strstr(t, "\n  CommInitRank "), "%s", t);
    RUN(&res, "summary", "--no-symbols", "--to", "1", "tests/golden/demo-r0.gmt");
    t = strstr(res.out, "\nNCCL calls");
    cr_assert(t, "%s", res.out);
    cr_expect(strstr(t, "\n  CommInitRank "), "the init began before 1 s: %s", t);
    cr_expect(!strstr(t, "\n  AllGather "), "%s", t);
}

/* --width narrows the tables: at 80 columns no line of the device and NCCL tables is
 * longer; the right-hand columns go first, op, rank, bytes/call and 1st track stay */
Test(cli, width_narrows_the_tables)
{
    RUN(&res, "summary", "--no-symbols", "--width", "80", "tests/golden/demo-r0.gmt");
    cr_assert_eq(res.status, 0, "%s", res.err);
    const char *p = strstr(res.out, "\nPeak device memory\n");
    const char *e = strstr(res.out, "\n  left out at width 80: ");
    cr_assert(p && e, "%s", res.out);
    int over = 0;
    for (const char *l = strchr(p + 1, '\n') + 1; l < e; l = strchr(l, '\n') + 1) {
        size_t n = strcspn(l, "\n");
        /* prose lines (titles, notes, stacks) are not table rows */
        bool row = !strncmp(l, "  ", 2) && strncmp(l, "    ", 4) && strncmp(l, "  untracked", 11) &&
                   strncmp(l, "  kernels", 9);
        if (row && n > 80)
            over++;
    }
    cr_expect_eq(over, 0, "%s", res.out);
    cr_expect(strstr(res.out, "  op               rank  calls bytes/call  1st track    1st dev  later max\n"),
              "%s", res.out);
    RUN(&res, "summary", "--no-symbols", "--width", "200", "tests/golden/demo-r0.gmt");
    cr_expect(strstr(res.out, "allocs(proxy) host time\n"), "every column at 200: %s", res.out);
}

Test(cli, directories_are_searched_below_and_dump_takes_them)
{
    char dir[] = "/tmp/gmt-test-cli-dir-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char sub[PATH_MAX], cmd[3 * PATH_MAX];
    snprintf(sub, sizeof sub, "%s/node-a/ranks", dir);
    snprintf(cmd, sizeof cmd, "mkdir -p '%s' && cp tests/golden/demo-r0.gmt '%s/' && cp tests/golden/demo-r1.gmt '%s/'",
             sub, sub, dir);
    cr_assert_eq(system(cmd), 0);
    RUN(&res, "summary", "--no-symbols", dir);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "gpumemtrace summary of a job: 2 trace(s)"), "%s", res.out);
    RUN(&res, "dump", dir);
    cr_expect_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "/node-a/ranks/demo-r0.gmt <==\n"), "%.300s", res.out);
    cr_expect(strstr(res.out, "/demo-r1.gmt <==\n"), "%.300s", res.out);
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

/* NVML's free is cuMemGetInfo's, its total counts the driver's reserve too: both
 * sources must say the same used memory. */
Test(cli, nvml_and_cumemgetinfo_samples_say_the_same_used_memory)
{
    struct tb b = { 0 };
    tb_process_min(&b);
    tb_thread_on_device0(&b, 100, 1000);
    tb_alloc_at(&b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0, 0x1000000, 64 * TB_MIB, 0, -1, 1000);
    /* cuMemGetInfo: 1 GiB used of 141 GiB */
    tb_meminfo(&b, GMT_MEMINFO_FIRST, GMT_MEMINFO_SRC_CUMEMGETINFO, 1 * TB_GIB, GMT_MEMINFO_UNKNOWN, 100);
    /* NVML later, 2 GiB used: the same free as cuMemGetInfo would say, a total 645 MiB larger */
    struct gmt_rec_meminfo_ext n = { .m = { .dt = 1000, .device = 0, .source = GMT_MEMINFO_SRC_NVML,
                                            .free_bytes = 141 * TB_GIB - 2 * TB_GIB,
                                            .total_bytes = 141 * TB_GIB + 645 * TB_MIB },
                                     .process_bytes = 1900 * TB_MIB };
    tb_rec(&b, GMT_REC_MEMINFO, GMT_MEMINFO_PERIODIC, &n, sizeof n, NULL, 0);
    char path[PATH_MAX];
    trace_file(path, &b, b.len);
    RUN(&res, "summary", "--no-symbols", "--json", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect_eq(json_int(res.out, "device_used_max_bytes"), (long long)(2 * TB_GIB), "%s", res.out);
    cr_expect_eq(json_int(res.out, "device_total_bytes"), (long long)(141 * TB_GIB));
    cr_expect_eq(json_int(res.out, "process_used_max_bytes"), (long long)(1900 * TB_MIB));
    unlink(path);
    tb_free(&b);
}
