/* test_python.c: Python frames in stacks: PYCODE records read and checked, frames resolved, the site on the user's Python line. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report.h"
#include "stacks.h"
#include "symbolize.h"
#include "trace.h"
#include "golden/tracebuild.h"

static void put_pycode(struct tb *b, uint32_t id, int32_t first, const char *name,
                       const char *qual, const char *file)
{
    char var[512];
    size_t n = strlen(name) + 1, q = strlen(qual) + 1, f = strlen(file) + 1;
    cr_assert_lt(n + q + f, sizeof var);
    memcpy(var, name, n);
    memcpy(var + n, qual, q);
    memcpy(var + n + q, file, f);
    struct gmt_rec_pycode r = { .code_id = id, .firstlineno = first, .name_len = (uint32_t)n,
                                .qualname_len = (uint32_t)q, .filename_len = (uint32_t)f };
    tb_rec(b, GMT_REC_PYCODE, 0, &r, sizeof r, var, n + q + f);
}

/* A process whose one allocation has the stack `ip` (depth n) as stack 1. */
static void trace_with_stack(struct tb *b, const uint64_t *ip, uint32_t n)
{
    tb_header_current(b);
    static const char host[] = "node-py";
    static const char cmd[] = "python3\0train.py";
    char var[sizeof host + sizeof cmd];
    memcpy(var, host, sizeof host);
    memcpy(var + sizeof host, cmd, sizeof cmd);
    struct gmt_rec_process p = { .pid = 9, .ppid = 1, .rank = -1, .local_rank = -1,
        .world_size = -1, .local_world_size = -1, .realtime_ns = 1767225600000000000ull,
        .monotonic_ns = TB_T0, .host_len = sizeof host, .cmdline_len = sizeof cmd };
    tb_rec(b, GMT_REC_PROCESS, 0, &p, sizeof p, var, sizeof var);
    static const char path[] = "/usr/lib/libpython3.11.so.1.0";
    struct gmt_rec_module_load m = { .time_ns = TB_T0 + 10, .module_id = 1,
        .load_bias = 0x7f0000000000ull, .start = 0x7f0000000000ull,
        .end = 0x7f0000100000ull, .path_len = sizeof path };
    tb_rec(b, GMT_REC_MODULE_LOAD, 0, &m, sizeof m, path, sizeof path);
    put_pycode(b, 1, 1500, "_call_impl", "Module._call_impl",
               "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py");
    put_pycode(b, 2, 10, "forward", "Net.forward", "/home/me/model.py");
    put_pycode(b, 3, 1, "<module>", "<module>", "/home/me/train.py");
    struct gmt_rec_stack s = { .stack_id = 1, .depth = n };
    tb_rec(b, GMT_REC_STACK, 0, &s, sizeof s, ip, n * sizeof *ip);
    struct gmt_rec_chunk c = { .tid = 100 };
    tb_rec(b, GMT_REC_CHUNK, 0, &c, sizeof c, NULL, 0);
    struct gmt_rec_thread t = { .time_ns = TB_T0 + 1000, .tid = 100, .name = "main" };
    tb_rec(b, GMT_REC_THREAD, 0, &t, sizeof t, NULL, 0);
    struct gmt_rec_cuctx x = { .context = 0xc1, .device = 0 };
    tb_rec(b, GMT_REC_CUCTX, 0, &x, sizeof x, NULL, 0);
    struct gmt_rec_alloc a = { .address = 0x7e0000000000ull, .bytes = 1 << 20, .dt = 5,
        .stack_id = 1, .kind = GMT_KIND_DEVICE, .device = -1 };
    tb_rec(b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &a, sizeof a, NULL, 0);
    struct gmt_rec_end e = { .time_ns = TB_T0 + 2000 };
    tb_rec(b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
}

static char *write_tmp(const struct tb *b)
{
    static char path[64];
    strcpy(path, "/tmp/gmt-test-python-XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, b->p, b->len), (ssize_t)b->len);
    close(fd);
    return path;
}

static void analyze(struct gmt_analysis *a, struct gmt_report_opts *o, const struct tb *b)
{
    gmt_report_opts_init(o);
    o->no_symbols = true;
    char *path = write_tmp(b);
    char err[512];
    int rc = gmt_analyze(a, path, o, err, sizeof err);
    unlink(path);
    cr_assert_eq(rc, 0, "%s", err);
}

/* native frames of the interpreter between the Python ones, as the library merges them */
static const uint64_t merged[] = {
    0x7f0000001000ull,              /* libpython: the call into the allocator */
    GMT_PYFRAME(1, 1520),           /* torch's module machinery: a framework's own */
    GMT_PYFRAME(2, 12),             /* the user's line */
    0x7f0000002000ull,              /* the evaluation loop */
    GMT_PYFRAME(3, 40),
    0x7f0000003000ull,
};

Test(python, site_is_the_users_python_line)
{
    struct tb b = { 0 };
    trace_with_stack(&b, merged, 6);
    struct gmt_analysis a;
    struct gmt_report_opts o;
    analyze(&a, &o, &b);
    uint32_t i;
    size_t k;
    cr_assert(gmt_stack_site(&a, 1, &i, &k));
    cr_assert_eq(i, 2, "site at frame %u, not the user's forward", i);
    char line[1024];
    gmt_stack_line(&a, 1, 3, line, sizeof line);
    cr_assert(strncmp(line, "Net.forward (model.py:12) < <module> (train.py:40)", 50) == 0,
              "site line: %s", line);
    cr_assert_null(strstr(line, "libpython"), "interpreter frames beyond the site: %s", line);
    static const char *frames[64];
    static char buf[16384];
    size_t site;
    size_t n = gmt_stack_frames(&a, 1, buf, sizeof buf, frames, 64, &site);
    cr_assert_eq(n, 6);
    cr_assert_str_eq(frames[1], "Module._call_impl (module.py:1520)");
    cr_assert_eq(site, 2);
    char folded[4096];
    gmt_stack_folded(&a, 1, folded, sizeof folded);
    cr_assert_str_eq(folded, "<module> (train.py:40);Net.forward (model.py:12);"
                             "Module._call_impl (module.py:1520)",
                     "folded: %s", folded);
    gmt_analysis_free(&a);
    tb_free(&b);
}

Test(python, internal_glob_applies_to_python_files)
{
    struct tb b = { 0 };
    trace_with_stack(&b, merged, 6);
    struct gmt_analysis a;
    struct gmt_report_opts o;
    analyze(&a, &o, &b);
    gmt_analysis_free(&a);
    gmt_report_opts_init(&o);
    o.no_symbols = true;
    cr_assert_eq(gmt_report_opts_add_internal(&o, "*/model.py"), 0);
    char *path = write_tmp(&b);
    char err[512];
    cr_assert_eq(gmt_analyze(&a, path, &o, err, sizeof err), 0, "%s", err);
    unlink(path);
    uint32_t i;
    size_t k;
    cr_assert(gmt_stack_site(&a, 1, &i, &k));
    cr_assert_eq(i, 4, "with model.py internal the site is train.py's frame, not %u", i);
    gmt_analysis_free(&a);
    tb_free(&b);
}

Test(python, unknown_code_id_resolves_without_a_name)
{
    struct gmt_symbolizer *s = gmt_sym_new(NULL);
    cr_assert_not_null(s);
    cr_assert_eq(gmt_sym_add_pycode(s, 0, "x", "y.py", 1), -EINVAL);
    cr_assert_eq(gmt_sym_add_pycode(s, 7, "f", "/a/b.py", 3), 0);
    const struct gmt_frame *f;
    size_t n;
    cr_assert_eq(gmt_sym_resolve(s, GMT_PYFRAME(7, 9), &f, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert(f[0].python);
    cr_assert_str_eq(f[0].function, "f");
    cr_assert_str_eq(f[0].file, "/a/b.py");
    cr_assert_eq(f[0].line, 9);
    cr_assert_eq(gmt_sym_resolve(s, GMT_PYFRAME(8, 1), &f, &n), 0);
    cr_assert_eq(n, 1);
    cr_assert_null(f[0].file);
    cr_assert_str_eq(f[0].function, "[python code]");
    gmt_sym_free(s);
}

Test(python, pycode_strings_beyond_the_record_are_an_error)
{
    struct tb b = { 0 };
    trace_with_stack(&b, merged, 6);
    /* the first PYCODE: its qualname says more bytes than the record holds */
    size_t at = b.off[2];
    struct gmt_rec_pycode *r = (struct gmt_rec_pycode *)(void *)(b.p + at);
    cr_assert_eq(r->h.type, GMT_REC_PYCODE);
    r->qualname_len = 4000;
    char *path = write_tmp(&b);
    struct gmt_trace t;
    char err[512];
    int rc = gmt_trace_load(&t, path, err, sizeof err);
    unlink(path);
    cr_assert_neq(rc, 0);
    cr_assert(strstr(err, "PYCODE"), "error: %s", err);
    tb_free(&b);
}

Test(python, pycode_string_without_nul_is_an_error)
{
    struct tb b = { 0 };
    trace_with_stack(&b, merged, 6);
    struct gmt_rec_pycode *r = (struct gmt_rec_pycode *)(void *)(b.p + b.off[3]);
    cr_assert_eq(r->h.type, GMT_REC_PYCODE);
    ((char *)(r + 1))[r->name_len - 1] = 'x';
    char *path = write_tmp(&b);
    struct gmt_trace t;
    char err[512];
    int rc = gmt_trace_load(&t, path, err, sizeof err);
    unlink(path);
    cr_assert_neq(rc, 0);
    cr_assert(strstr(err, "NUL"), "error: %s", err);
    tb_free(&b);
}

Test(python, tagged_frames_are_no_user_address)
{
    uint64_t ip = GMT_PYFRAME(0xffffff, 0xffffff);
    cr_assert(GMT_PYFRAME_IS(ip));
    cr_assert_eq(GMT_PYFRAME_CODE(ip), 0xffffff);
    cr_assert_eq(GMT_PYFRAME_LINE(ip), 0xffffff);
    cr_assert_eq(GMT_PYFRAME_CODE(GMT_PYFRAME(5, 77)), 5);
    cr_assert_eq(GMT_PYFRAME_LINE(GMT_PYFRAME(5, 77)), 77);
    cr_assert(!GMT_PYFRAME_IS(0x00007fffffffffffull));
    cr_assert(!GMT_PYFRAME_IS(0xffffffffff600000ull), "the vsyscall page is not a Python frame");
}
