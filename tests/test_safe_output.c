/* test_safe_output.c: what a user reads is safe: trace strings holding control bytes reach no text output raw, JSON stays valid and faithful, CSV cells run no formula. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_run.h"
#include "golden/tracebuild.h"
#include "util.h"

#define MiB (1ull << 20)

TestSuite(safe_output, .fini = cli_tmpdirs_remove);

/* the runs' set-up: none, but a bound on their time */
static struct cli_io io = {.timeout_s = 60};

/* What a hostile trace puts in each of its strings: ESC [31m, CR, NL, BEL, DEL and the C1
 * control CSI (U+009B, as UTF-8); and a benign twin of the same length. */
static const char BAD[] = "\x1b[31m\r\n\a\x7f\xc2\x9b";
static const char GOOD[] = "_[31m______";

/* s with every '@' replaced by the mark (BAD or GOOD), into buf; returns its length with
 * the NUL. */
static size_t marked(char *buf, size_t len, const char *s, const char *mark)
{
    size_t n = 0, m = strlen(mark);
    for (; *s; s++) {
        cr_assert_lt(n + m + 1, len);
        if (*s == '@') {
            memcpy(buf + n, mark, m);
            n += m;
        } else {
            buf[n++] = *s;
        }
    }
    buf[n++] = 0;
    return n;
}

/* One rank of a two-rank job whose every string holds `mark`: host, command, NCCL setting,
 * thread name, module path, Python function, qualified name and file, NVTX range name;
 * a stack through the module and the Python frame allocates in an NVTX range, in an
 * AllReduce whose first call maps NCCL's buffer, and fails once. */
static void hostile_write(const char *path, const char *mark, int rank, uint64_t buf_bytes)
{
    struct tb b = {0};
    char s1[128], s2[128], var[512];
    tb_header_current(&b);
    size_t h = marked(s1, sizeof s1, "node@", mark), c = marked(s2, sizeof s2, "python3 train@.py", mark);
    memcpy(var, s1, h);
    memcpy(var + h, s2, c);
    struct gmt_rec_process p = {.pid = 4242u + (uint32_t)rank, .ppid = 1, .rank = rank, .local_rank = rank,
        .world_size = 2, .local_world_size = 2, .realtime_ns = 1767225600000000000ull, .monotonic_ns = TB_T0,
        .host_len = (uint32_t)h, .cmdline_len = (uint32_t)c};
    tb_rec(&b, GMT_REC_PROCESS, 0, &p, sizeof p, var, h + c);
    size_t e = marked(var, sizeof var, "NCCL_ALGO=Ring@", mark);
    struct gmt_rec_env env = {.count = 1, .bytes = (uint32_t)e};
    tb_rec(&b, GMT_REC_ENV, 0, &env, sizeof env, var, e);
    size_t m = marked(var, sizeof var, "/opt/@/libtrain@.so", mark);
    struct gmt_rec_module_load ml = {.time_ns = TB_T0 + 10, .module_id = 1, .load_bias = 0x7f0000000000ull,
        .start = 0x7f0000000000ull, .end = 0x7f0000400000ull, .path_len = (uint32_t)m};
    tb_rec(&b, GMT_REC_MODULE_LOAD, 0, &ml, sizeof ml, var, m);
    size_t n1 = marked(var, sizeof var, "step@", mark);
    size_t n2 = marked(var + n1, sizeof var - n1, "Model@.step", mark);
    size_t n3 = marked(var + n1 + n2, sizeof var - n1 - n2, "/src/@/model@.py", mark);
    struct gmt_rec_pycode pc = {.code_id = 1, .firstlineno = 10, .name_len = (uint32_t)n1,
                                .qualname_len = (uint32_t)n2, .filename_len = (uint32_t)n3};
    tb_rec(&b, GMT_REC_PYCODE, 0, &pc, sizeof pc, var, n1 + n2 + n3);
    size_t nv = marked(var, sizeof var, "phase@", mark);
    struct gmt_rec_nvtx_string ns = {.id = 1, .len = (uint32_t)nv};
    tb_rec(&b, GMT_REC_NVTX_STRING, GMT_NVTX_STR_NAME, &ns, sizeof ns, var, nv);
    struct gmt_rec_version vn = {.version = 22809};
    tb_rec(&b, GMT_REC_VERSION, GMT_COMP_NCCL, &vn, sizeof vn, NULL, 0);
    const uint64_t ip[] = {0x7f0000001234ull, GMT_PYFRAME(1, 12), 0x7f0000005678ull};
    struct gmt_rec_stack st = {.stack_id = 1, .depth = 3};
    tb_rec(&b, GMT_REC_STACK, 0, &st, sizeof st, ip, sizeof ip);
    tb_chunk(&b, 100);
    struct gmt_rec_thread th = {.time_ns = TB_T0 + 1000, .tid = 100};
    marked(s1, sizeof s1, "m@", mark);
    memcpy(th.name, s1, strlen(s1));
    tb_rec(&b, GMT_REC_THREAD, 0, &th, sizeof th, NULL, 0);
    struct gmt_rec_cuctx cx = {.context = 0xc0, .device = 0};
    tb_rec(&b, GMT_REC_CUCTX, 0, &cx, sizeof cx, NULL, 0);
    struct gmt_rec_nvtx_range push = {.time_ns = TB_T0 + 1500, .name = 1};
    tb_rec(&b, GMT_REC_NVTX_RANGE, GMT_NVTX_PUSH, &push, sizeof push, NULL, 0);
    tb_alloc_at(&b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0, 0x7e0000000000ull, 64 * MiB, 0, -1, 1000);
    struct gmt_rec_alloc a1 = {.address = 0x7e0010000000ull, .bytes = 32 * MiB, .dt = 100, .stack_id = 1,
                               .kind = GMT_KIND_DEVICE, .device = -1};
    tb_rec(&b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &a1, sizeof a1, NULL, 0);
    struct gmt_rec_comm cm = {.comm = 0x5555, .unique_id_hash = 0x1234, .rank = rank, .nranks = 2, .device = 0,
                              .dt = 100};
    tb_rec(&b, GMT_REC_COMM, 0, &cm, sizeof cm, NULL, 0);
    for (uint32_t id = 1; id <= 2; id++) {
        struct gmt_rec_scope_begin sb = {.dt = 100, .scope_id = id, .stack_id = 1, .comm = 0x5555,
                                         .count = 1024, .datatype = 7, .peer = -1};
        tb_rec(&b, GMT_REC_SCOPE_BEGIN, GMT_OP_AllReduce, &sb, sizeof sb, NULL, 0);
        if (id == 1) {
            struct gmt_rec_alloc nb = {.address = 0x7e0020000000ull, .bytes = buf_bytes, .dt = 100,
                                       .stack_id = 1, .scope_id = 1, .kind = GMT_KIND_PHYSICAL, .device = 0};
            tb_rec(&b, GMT_REC_ALLOC, GMT_API_cuMemCreate, &nb, sizeof nb, NULL, 0);
        }
        tb_scope_end(&b, GMT_OP_AllReduce, id, 0, 200);
    }
    struct gmt_rec_alloc_fail f = {.bytes = 200ull << 30, .error = 2, .dt = 100, .stack_id = 1,
                                   .kind = GMT_KIND_DEVICE, .device = -1};
    tb_rec(&b, GMT_REC_ALLOC_FAIL, GMT_API_cudaMalloc, &f, sizeof f, NULL, 0);
    struct gmt_rec_nvtx_range pop = {.time_ns = TB_T0 + 9000, .name = 1};
    tb_rec(&b, GMT_REC_NVTX_RANGE, GMT_NVTX_POP, &pop, sizeof pop, NULL, 0);
    struct gmt_rec_end end = {.time_ns = TB_T0 + 10000};
    tb_rec(&b, GMT_REC_END, 0, &end, sizeof end, NULL, 0);
    cr_assert_eq(tb_write(&b, path), 0);
    tb_free(&b);
}

/* A job of two ranks in dir, the trace files named with the mark too (a name a directory
 * listing can give); paths[0..1] get their paths, *baseline a baseline whose ops hold it. */
static void job(const char *dir, const char *mark, char paths[2][PATH_MAX], char *baseline)
{
    for (int r = 0; r < 2; r++) {
        char name[128];
        snprintf(name, sizeof name, "rank%d@.gmt", r);
        char m[128];
        marked(m, sizeof m, name, mark);
        snprintf(paths[r], PATH_MAX, "%s/%s", dir, m);
        hostile_write(paths[r], mark, r, r ? 4 * MiB : 2 * MiB);
    }
    /* the baseline's op name holds the mark, as JSON writes it */
    const char *op = mark == BAD ? "All\\u001b[31m\\r\\n\\u0007\\u007f\\u009bReduce" : "All_[31m______Reduce";
    snprintf(baseline, PATH_MAX, "%s/base.json", dir);
    FILE *f = fopen(baseline, "w");
    cr_assert_not_null(f);
    fprintf(f, "{\"schema\": \"gpumemtrace.baseline/1\", \"category\": null, \"limits\": "
               "{\"max_bytes\": {\"default\": 0}, \"max_growth_percent\": {\"default\": 5}}, \"metrics\": ["
               "{\"bytes\": 1, \"bytes_per_call\": 4096, \"check\": \"first_call\", \"comm_rank\": 0, "
               "\"comm_size\": 2, \"op\": \"%s\", \"rank\": 0}]}\n", op);
    fclose(f);
}

/* Where s holds a byte that a terminal could take for a control: below 0x20 but the line
 * end, DEL, a C1 control as UTF-8 or as one byte, or a byte of no UTF-8 sequence. NULL
 * when it holds none. */
static const char *control_in(const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; p[i];) {
        size_t k = gmt_utf8_len(p + i, strlen(s + i));
        if (!k || (p[i] < 0x20 && p[i] != '\n') || p[i] == 0x7f || (k == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0))
            return s + i;
        i += k;
    }
    return NULL;
}

/* Each text command on the hostile job and on its benign twin: no control byte comes
 * through, and the lines are as many (no string breaks a line). */
Test(safe_output, text_outputs_escape_every_control_byte_of_trace_strings, .timeout = 120)
{
    const char *dh = cli_tmpdir(), *dg = cli_tmpdir();
    char th[2][PATH_MAX], tg[2][PATH_MAX], bh[PATH_MAX], bg[PATH_MAX];
    job(dh, BAD, th, bh);
    job(dg, GOOD, tg, bg);
    char fh[PATH_MAX + 16], fg[PATH_MAX + 16];
    snprintf(fh, sizeof fh, "%s/summary.txt", dh);
    snprintf(fg, sizeof fg, "%s/summary.txt", dg);
    struct cmd {
        const char *name;
        const char *argv[10]; /* "T0" "T1" "B" "O": the traces, the baseline, the output file */
    } cmds[] = {
        {"summary", {"summary", "--no-symbols", "T0"}},
        {"summary of the job", {"summary", "--no-symbols", "T0", "T1"}},
        {"summary --per-rank", {"summary", "--no-symbols", "--per-rank", "T0", "T1"}},
        {"summary -o", {"summary", "--no-symbols", "-o", "O", "T0"}},
        {"merge", {"merge", "--no-symbols", "T0", "T1"}},
        {"diff", {"diff", "T0", "T1"}},
        {"explain", {"explain", "--no-symbols", "T0", "T1"}},
        {"check --per-rank", {"check", "--per-rank", "--verbose", "--baseline", "B", "T0", "T1"}},
        {"check --aggregate", {"check", "--aggregate", "--verbose", "--baseline", "B", "T0", "T1"}},
        {"dump", {"dump", "T0", "T1"}},
        {"export --format folded", {"export", "--format", "folded", "--no-symbols", "T0"}},
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        int n_lines[2] = {0, 0};
        for (int k = 0; k < 2; k++) {
            const char *argv[12] = {"gpumemtrace"};
            size_t n = 1;
            bool to_file = false;
            for (size_t a = 0; a < 10 && cmds[i].argv[a]; a++) {
                const char *v = cmds[i].argv[a];
                if (!strcmp(v, "T0") || !strcmp(v, "T1"))
                    v = (k ? tg : th)[v[1] - '0'];
                else if (!strcmp(v, "B"))
                    v = k ? bg : bh;
                else if (!strcmp(v, "O"))
                    v = k ? fg : fh, to_file = true;
                argv[n++] = v;
            }
            struct result res;
            cli_exec(&res, &io, argv);
            cr_expect_lt(res.status, 2, "%s: status %d: %s", cmds[i].name, res.status, res.err);
            const char *out = to_file ? cli_read_file(k ? fg : fh) : res.out;
            const char *c = control_in(out);
            cr_expect_null(c, "%s: a control byte 0x%02x reaches the output at: %.40s", cmds[i].name,
                           c ? (unsigned char)*c : 0, c ? c : "");
            cr_expect_null(control_in(res.err), "%s: stderr: %s", cmds[i].name, res.err);
            n_lines[k] = lines(out);
            if (k == 0)
                cr_expect(strstr(out, "\\x1b") || !strcmp(cmds[i].argv[0], "export"),
                          "%s: the escape is shown: %s", cmds[i].name, out);
        }
        cr_expect_eq(n_lines[0], n_lines[1], "%s: %d lines from the hostile job, %d from its twin",
                     cmds[i].name, n_lines[0], n_lines[1]);
    }
}

/* The JSON of the same job parses, and holds the strings as they are (escaped as JSON
 * escapes them): the text's escaping is the text's alone. So is the report's page. */
Test(safe_output, json_and_the_report_stay_valid_and_keep_the_strings, .timeout = 120)
{
    const char *d = cli_tmpdir();
    char t[2][PATH_MAX], b[PATH_MAX], json[PATH_MAX + 16], page[PATH_MAX + 16];
    job(d, BAD, t, b);
    static const char *const cmds[][3] = {{"summary", "--json", "--no-symbols"}, {"merge", "--json", "--no-symbols"},
                                          {"diff", "--json", NULL}, {"explain", "--json", "--no-symbols"}};
    snprintf(json, sizeof json, "%s/out.json", d);
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        const char *argv[8] = {"gpumemtrace", cmds[i][0], cmds[i][1]};
        size_t n = 3;
        if (cmds[i][2])
            argv[n++] = cmds[i][2];
        argv[n++] = t[0];
        argv[n++] = t[1];
        struct result res;
        cli_exec(&res, &(struct cli_io){.out = json, .timeout_s = 60}, argv);
        cr_expect_lt(res.status, 2, "%s: %s", cmds[i][0], res.err);
        /* valid, and the host as the trace has it */
        char py[PATH_MAX + 256];
        snprintf(py, sizeof py,
                 "import json,sys; d=json.load(open(sys.argv[1], encoding='utf-8')); "
                 "want='node\\x1b[31m\\r\\n\\x07\\x7f\\u009b'; "
                 "sys.exit(0 if sys.argv[2] != 'summary' or d['traces'][0]['host'] == want else 3)");
        cli_exec(&res, &io, (const char *const[]){"python3", "-c", py, json, cmds[i][0], NULL});
        cr_expect_eq(res.status, 0, "%s --json: %s", cmds[i][0], res.err);
    }
    snprintf(page, sizeof page, "%s/page.html", d);
    struct result res;
    cli_exec(&res, &io, (const char *const[]){"gpumemtrace", "report", "--no-symbols", "-o", page, t[0], t[1], NULL});
    cr_assert_eq(res.status, 0, "report: %s", res.err);
    const char *html = cli_read_file(page), *c = control_in(html);
    cr_expect_null(c, "report: a control byte 0x%02x in the page at: %.40s", c ? (unsigned char)*c : 0,
                   c ? c : "");
}

/* Written byte by byte, a character of two bytes passes the stream whole; a C1 control,
 * an ESC and a cut sequence at the end do not. */
Test(safe_output, the_text_stream_keeps_split_characters_and_escapes_the_rest)
{
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    cr_assert_not_null(m);
    FILE *s = gmt_safe_stream(m);
    cr_assert_not_null(s);
    static const char in[] = "caf\xc3\xa9 \x1b[2J\xc2\x9b ok\n\t\xe2\x82";
    for (size_t i = 0; i < sizeof in - 1; i++) {
        fputc(in[i], s);
        fflush(s);
    }
    cr_assert_eq(fclose(s), 0);
    cr_expect_str_eq(text, "caf\xc3\xa9 \\x1b[2J\\xc2\\x9b ok\n\\x09\\xe2\\x82");
    free(text);
}

Test(safe_output, csv_cells_that_would_run_are_inert_and_numbers_stay_numbers)
{
    static const struct { const char *in, *out; } cases[] = {
        {"=1+2", "\"'=1+2\""},       {"+SUM(A1)", "\"'+SUM(A1)\""}, {"-2+3", "\"'-2+3\""},
        {"@cmd", "\"'@cmd\""},       {"\tx", "\"'\tx\""},           {"\rx", "\"'\rx\""},
        {"=\"a\",b", "\"'=\"\"a\"\",b\""},
        {"-5", "-5"},                {"+1.5e3", "+1.5e3"},          {"-0.25", "-0.25"},
        {"-", "\"'-\""},             {"-e5", "\"'-e5\""},           {"-1e", "\"'-1e\""},
        {"node-01", "node-01"},      {"a,b", "\"a,b\""},            {" x", "\" x\""},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char buf[64] = "";
        FILE *f = fmemopen(buf, sizeof buf, "w");
        cr_assert_not_null(f);
        gmt_fput_csv_cell(f, cases[i].in);
        fclose(f);
        cr_expect_str_eq(buf, cases[i].out, "case %zu", i);
    }
}

/* A trace whose host and module would run as formulas: no cell of the export's or the
 * summary's CSV files does (tests/export_check.py inert). */
Test(safe_output, csv_files_hold_no_formula, .timeout = 60)
{
    struct tb b = {0};
    tb_sample(&b);
    uint8_t *host = memmem(b.p, b.len, "node-01", 7);
    uint8_t *mod = memmem(b.p, b.len, "/libnccl.so.2", 13);
    cr_assert(host && mod);
    memcpy(host, "=1+2+3", 7);
    mod[1] = '@';
    const char *d = cli_tmpdir();
    char path[PATH_MAX + 16], ex[PATH_MAX + 16], sum[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/t.gmt", d);
    snprintf(ex, sizeof ex, "%s/export", d);
    snprintf(sum, sizeof sum, "%s/summary", d);
    cr_assert_eq(tb_write(&b, path), 0);
    tb_free(&b);
    struct result res;
    CLI_RUN(&res, &io, "export", "--format", "csv", "--no-symbols", "-o", ex, path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    CLI_RUN(&res, &io, "summary", "--csv", "--no-symbols", "-o", sum, path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    for (int k = 0; k < 2; k++) {
        cli_exec(&res, &io, (const char *const[]){"python3", "tests/export_check.py", "inert", k ? sum : ex,
                                                  "-", NULL});
        cr_expect_eq(res.status, 0, "%s: %s%s", k ? "summary --csv" : "export", res.out, res.err);
        cr_expect(strstr(res.out, "'=1+2+3") && strstr(res.out, "'@ibnccl"), "%s", res.out);
    }
}
