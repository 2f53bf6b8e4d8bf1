/* test_symbolize.c: the symbolizer on test shared objects (debug info, none, wrong build-id) and the category rules. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "module_range.h"
#include "category.h"
#include "stacks.h"
#include "symbolize.h"

struct loaded {
    void *handle;
    char path[4096];
    uint64_t bias, start, end;
    uint8_t build_id[64];
    size_t build_id_len;
};

static void test_dir(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    cr_assert(n > 0);
    buf[n] = '\0';
    *strrchr(buf, '/') = '\0';
    strncat(buf, "/stack", len - strlen(buf) - 1);
}

static size_t file_build_id(const char *path, uint8_t *out)
{
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0, "open %s", path);
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    cr_assert_not_null(elf);
    const void *bits;
    ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
    cr_assert(n > 0 && n <= 64);
    memcpy(out, bits, (size_t)n);
    elf_end(elf);
    close(fd);
    return (size_t)n;
}

static void load(struct loaded *l, const char *name)
{
    memset(l, 0, sizeof *l);
    test_dir(l->path, sizeof l->path);
    strncat(l->path, "/", sizeof l->path - strlen(l->path) - 1);
    strncat(l->path, name, sizeof l->path - strlen(l->path) - 1);
    l->handle = dlopen(l->path, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(l->handle, "dlopen %s: %s", l->path, dlerror());
    cr_assert_eq(module_range(l->path, &l->bias, &l->start, &l->end), 1);
    l->build_id_len = file_build_id(l->path, l->build_id);
}

static void *sym(struct loaded *l, const char *name)
{
    void *p = dlsym(l->handle, name);
    cr_assert_not_null(p, "%s", name);
    return p;
}

static struct gmt_symbolizer *with_module(struct loaded *l, const char *path, const char *const *dirs)
{
    struct gmt_symbolizer *s = gmt_sym_new(dirs);
    cr_assert_not_null(s);
    cr_assert_eq(gmt_sym_add_module(s, 7, path ? path : l->path, l->build_id, l->build_id_len,
                                    l->bias, l->start, l->end), 0);
    return s;
}

static bool ends_with(const char *s, const char *tail)
{
    size_t a = s ? strlen(s) : 0, b = strlen(tail);
    return s && a >= b && strcmp(s + a - b, tail) == 0;
}

Test(symbolize, function_and_file_with_debug_info)
{
    struct loaded l;
    load(&l, "libsymtest.so");
    struct gmt_symbolizer *s = with_module(&l, NULL, NULL);
    const struct gmt_frame *f;
    size_t n;
    cr_assert_eq(gmt_sym_resolve_pc(s, (uintptr_t)sym(&l, "symtest_probe"), &f, &n), 0);
    cr_assert_eq(n, 1);
    cr_expect_str_eq(f[0].function, "symtest_probe");
    cr_expect(ends_with(f[0].file, "symtest.c"), "file %s", f[0].file ? f[0].file : "(null)");
    cr_expect(f[0].line == 100 || f[0].line == 101, "line %u", f[0].line);
    cr_expect_str_eq(f[0].module, l.path);
    cr_expect_eq(f[0].offset, (uintptr_t)sym(&l, "symtest_probe") - l.bias);
    gmt_sym_free(s);
}

Test(symbolize, inlined_frames_expanded_innermost_first)
{
    struct loaded l;
    load(&l, "libsymtest.so");
    void *(*outer)(int) = (void *(*)(int))sym(&l, "symtest_outer");
    uint64_t ret = (uintptr_t)outer(1); /* the return address inside the inlined call */
    struct gmt_symbolizer *s = with_module(&l, NULL, NULL);
    const struct gmt_frame *f;
    size_t n;
    cr_assert_eq(gmt_sym_resolve(s, ret, &f, &n), 0);
    cr_assert_eq(n, 2, "frames: %zu", n);
    cr_expect_str_eq(f[0].function, "symtest_inner");
    cr_expect_eq(f[0].line, 202);
    cr_expect(f[0].inlined);
    cr_expect_str_eq(f[1].function, "symtest_outer");
    cr_expect(ends_with(f[1].file, "symtest.c"));
    cr_expect_eq(f[1].line, 302);
    cr_expect(!f[1].inlined);
    char buf[512];
    cr_expect(strstr(gmt_frame_format(&f[0], buf, sizeof buf), "[inlined]") != NULL, "%s", buf);
    gmt_sym_free(s);
}

Test(symbolize, results_are_cached_per_address)
{
    struct loaded l;
    load(&l, "libsymtest.so");
    struct gmt_symbolizer *s = with_module(&l, NULL, NULL);
    const struct gmt_frame *a, *b;
    size_t na, nb;
    uint64_t pc = (uintptr_t)sym(&l, "symtest_leaf");
    cr_assert_eq(gmt_sym_resolve_pc(s, pc, &a, &na), 0);
    cr_assert_eq(gmt_sym_resolve(s, pc + 1, &b, &nb), 0); /* a return address one past */
    cr_expect_eq(a, b);
    cr_expect_eq(na, nb);
    gmt_sym_free(s);
}

Test(symbolize, no_debug_info_gives_module_and_offset)
{
    struct loaded l;
    load(&l, "libsymtest-nodebug.so");
    struct gmt_symbolizer *s = with_module(&l, NULL, NULL);
    uintptr_t (*hidden)(void) = (uintptr_t (*)(void))sym(&l, "symtest_hidden_address");
    uint64_t pc = hidden() + 2;
    const struct gmt_frame *f;
    size_t n;
    cr_assert_eq(gmt_sym_resolve_pc(s, pc, &f, &n), 0);
    cr_assert_eq(n, 1);
    cr_expect_null(f[0].file);
    cr_expect_eq(f[0].line, 0);
    cr_expect_eq(f[0].offset, pc - l.bias);
    char buf[512], want[128];
    snprintf(want, sizeof want, "libsymtest-nodebug.so+0x%llx", (unsigned long long)(pc - l.bias));
    /* A static function of a stripped object has no name anywhere: module+offset. */
    cr_expect_null(f[0].function, "%s", f[0].function ? f[0].function : "");
    cr_expect_str_eq(gmt_frame_format(&f[0], buf, sizeof buf), want);
    /* Exported functions keep their .dynsym name, still without file and line. */
    cr_assert_eq(gmt_sym_resolve_pc(s, (uintptr_t)sym(&l, "symtest_leaf"), &f, &n), 0);
    cr_expect_str_eq(f[0].function, "symtest_leaf");
    cr_expect_null(f[0].file);
    gmt_sym_free(s);
}

Test(symbolize, wrong_build_id_falls_back_to_module_offset)
{
    struct loaded l;
    load(&l, "libsymtest.so");
    char other[4096];
    test_dir(other, sizeof other);
    strncat(other, "/libsymtest-other.so", sizeof other - strlen(other) - 1);
    /* The trace says "libsymtest-other.so with libsymtest.so's build-id": the file on
     * disk is not what was loaded, its symbols must not be used. */
    struct gmt_symbolizer *s = with_module(&l, other, NULL);
    uint64_t pc = (uintptr_t)sym(&l, "symtest_leaf");
    const struct gmt_frame *f;
    size_t n;
    cr_assert_eq(gmt_sym_resolve_pc(s, pc, &f, &n), 0);
    cr_assert_eq(n, 1);
    cr_expect_null(f[0].function);
    cr_expect_null(f[0].file);
    cr_expect_str_eq(f[0].module, other);
    cr_expect_eq(f[0].offset, pc - l.bias);
    cr_expect(!gmt_sym_module_trusted(s, pc));
    gmt_sym_free(s);
}

Test(symbolize, debug_dir_finds_a_moved_module)
{
    struct loaded l;
    load(&l, "libsymtest.so");
    char dir[4096];
    test_dir(dir, sizeof dir);
    const char *dirs[] = { dir, NULL };
    const char *gone = "/nonexistent/elsewhere/libsymtest.so";
    uint64_t pc = (uintptr_t)sym(&l, "symtest_leaf");
    const struct gmt_frame *f;
    size_t n;

    struct gmt_symbolizer *s = with_module(&l, gone, NULL);
    cr_assert_eq(gmt_sym_resolve_pc(s, pc, &f, &n), 0);
    cr_expect_null(f[0].function, "without the directory nothing is known");
    gmt_sym_free(s);

    s = with_module(&l, gone, dirs);
    cr_assert_eq(gmt_sym_resolve_pc(s, pc, &f, &n), 0);
    cr_expect_str_eq(f[0].function, "symtest_leaf");
    cr_expect_str_eq(f[0].module, gone);
    gmt_sym_free(s);
}

Test(symbolize, address_outside_every_module)
{
    struct gmt_symbolizer *s = gmt_sym_new(NULL);
    cr_assert_not_null(s);
    cr_assert_eq(gmt_sym_add_module(s, 1, "/x/liba.so", NULL, 0, 0x1000, 0x1000, 0x2000), 0);
    const struct gmt_frame *f;
    size_t n;
    cr_assert_eq(gmt_sym_resolve_pc(s, 0x5000, &f, &n), 0);
    cr_assert_eq(n, 1);
    cr_expect_null(f[0].module);
    char buf[64];
    cr_expect_str_eq(gmt_frame_format(&f[0], buf, sizeof buf), "0x5000");
    /* a module whose file does not exist: module+offset */
    cr_assert_eq(gmt_sym_resolve_pc(s, 0x1234, &f, &n), 0);
    cr_expect_str_eq(gmt_frame_format(&f[0], buf, sizeof buf), "liba.so+0x234");
    cr_expect_eq(gmt_sym_add_module(s, 2, "/x/b", NULL, 0, 0, 0x3000, 0x3000), -EINVAL);
    cr_assert_eq(gmt_sym_add_module(s, 3, "/x/\x1b[2Jevil.so", NULL, 0, 0x8000, 0x8000, 0x9000), 0);
    cr_assert_eq(gmt_sym_resolve_pc(s, 0x8010, &f, &n), 0);
    cr_expect_str_eq(gmt_frame_format(&f[0], buf, sizeof buf), "?[2Jevil.so+0x10");
    gmt_sym_free(s);
}

Test(symbolize, module_records_are_checked)
{
    union {
        struct gmt_rec_module_load m;
        unsigned char b[256];
    } r;
    memset(&r, 0, sizeof r);
    r.m.h.type = GMT_REC_MODULE_LOAD;
    r.m.build_id_len = 4;
    memcpy(r.b + sizeof r.m, "\x01\x02\x03\x04/lib/x.so", 14);
    r.m.path_len = 10;
    r.m.h.size = gmt_rec_padded(sizeof r.m + 14);
    r.m.start = 0x1000;
    r.m.end = 0x2000;
    struct gmt_symbolizer *s = gmt_sym_new(NULL);
    cr_assert_not_null(s);
    cr_expect_eq(gmt_sym_add_module_rec(s, &r.m.h), 0);
    cr_expect_str_eq(gmt_sym_module_of(s, 0x1800, NULL), "/lib/x.so");
    r.m.path_len = 200; /* past the record */
    cr_expect_eq(gmt_sym_add_module_rec(s, &r.m.h), -EINVAL);
    r.m.path_len = 4; /* no NUL inside */
    cr_expect_eq(gmt_sym_add_module_rec(s, &r.m.h), -EINVAL);
    r.m.path_len = 10;
    r.m.build_id_len = 0xffffffffu;
    cr_expect_eq(gmt_sym_add_module_rec(s, &r.m.h), -EINVAL);
    r.m.build_id_len = 4;
    r.m.h.size = 16; /* shorter than the fixed part */
    cr_expect_eq(gmt_sym_add_module_rec(s, &r.m.h), -EINVAL);
    gmt_sym_free(s);
}

Test(category, builtin_rules_by_base_name)
{
    struct gmt_categories *c = gmt_cat_new();
    cr_assert_not_null(c);
    bool t;
    cr_expect_str_eq(gmt_cat_of_module(c, "/site/nvidia/nccl/lib/libnccl.so.2", &t), "nccl");
    cr_expect(!t);
    cr_expect_str_eq(gmt_cat_of_module(c, "/site/torch/lib/libtorch_cuda.so", NULL), "pytorch");
    cr_expect_str_eq(gmt_cat_of_module(c, "/site/torch/lib/libc10_cuda.so", NULL), "pytorch");
    cr_expect_str_eq(gmt_cat_of_module(c, "/cu13/lib/libcublasLt.so.13", NULL), "cublas");
    cr_expect_str_eq(gmt_cat_of_module(c, "/cu13/lib/libcudnn_ops.so.9", NULL), "cudnn");
    cr_expect_str_eq(gmt_cat_of_module(c, "/jax_plugins/xla_cuda_plugin.so", NULL), "jax");
    cr_expect_str_eq(gmt_cat_of_module(c, "/usr/lib/libpython3.12.so.1.0", NULL), "python");
    cr_expect_str_eq(gmt_cat_of_module(c, "/usr/bin/python3.12", NULL), "python");
    cr_expect_str_eq(gmt_cat_of_module(c, "/home/u/train", NULL), "user");
    cr_expect_str_eq(gmt_cat_of_module(c, "/cu13/lib/libcudart.so.13", &t), "cuda-runtime");
    cr_expect(t);
    cr_expect_str_eq(gmt_cat_of_module(c, "/lib/x86_64-linux-gnu/libc.so.6", &t), "system");
    cr_expect(t);
    cr_expect_str_eq(gmt_cat_of_module(c, "[vdso]", &t), "system");
    cr_expect(t);
    cr_expect_str_eq(gmt_cat_of_module(c, NULL, NULL), "unknown");
    gmt_cat_free(c);
}

Test(category, innermost_frame_that_is_not_a_pass_through_layer)
{
    struct gmt_categories *c = gmt_cat_new();
    cr_assert_not_null(c);
    const char *torch[] = { "/l/libcudart.so.13", "/l/libc10_cuda.so", "/l/libtorch_python.so",
                            "/usr/lib/libpython3.12.so" };
    cr_expect_str_eq(gmt_cat_of_modules(c, torch, 4), "pytorch");
    const char *proxy[] = { "/l/libnccl.so.2", "/lib/libc.so.6" };
    cr_expect_str_eq(gmt_cat_of_modules(c, proxy, 2), "nccl");
    const char *app[] = { "/l/libcudart.so.13", "/home/u/app", "/lib/libc.so.6" };
    cr_expect_str_eq(gmt_cat_of_modules(c, app, 3), "user");
    const char *rt[] = { "/l/libcudart.so.13", "/lib/libc.so.6" };
    cr_expect_str_eq(gmt_cat_of_modules(c, rt, 2), "cuda-runtime");
    const char *unknown_frame[] = { NULL, "/l/libnccl.so.2" };
    cr_expect_str_eq(gmt_cat_of_modules(c, unknown_frame, 2), "user");
    cr_expect_str_eq(gmt_cat_of_modules(c, NULL, 0), "unknown");
    gmt_cat_free(c);
}

Test(category, user_rules_come_first)
{
    struct gmt_categories *c = gmt_cat_new();
    cr_assert_not_null(c);
    cr_expect_eq(gmt_cat_add_rule(c, "myalloc=libmyalloc*.so*"), 0);
    cr_expect_str_eq(gmt_cat_of_module(c, "/opt/libmyalloc.so.1", NULL), "myalloc");
    cr_expect_eq(gmt_cat_add_rule(c, "comm=libnccl*"), 0);
    cr_expect_str_eq(gmt_cat_of_module(c, "/l/libnccl.so.2", NULL), "comm");
    cr_expect_eq(gmt_cat_add_rule(c, "-=libwrap*"), 0);
    const char *wrapped[] = { "/l/libwrap.so", "/opt/libmyalloc.so.1" };
    cr_expect_str_eq(gmt_cat_of_modules(c, wrapped, 2), "myalloc");
    const char *names[32];
    size_t k = gmt_cat_names(c, names, 32);
    cr_assert(k > 3 && k <= 32);
    cr_expect_str_eq(names[0], "comm", "newest user rule first");
    cr_expect_str_eq(names[k - 1], "user");
    const char *bad[] = { "", "=x", "a b=x", "x=", "noequals", "waytoolongnamewaytoolongnamewaytoolong=x" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_expect_eq(gmt_cat_add_rule(c, bad[i]), -EINVAL, "%s", bad[i]);
    gmt_cat_free(c);
}

Test(category, stack_through_the_module_map)
{
    struct gmt_symbolizer *s = gmt_sym_new(NULL);
    struct gmt_categories *c = gmt_cat_new();
    cr_assert(s && c);
    cr_assert_eq(gmt_sym_add_module(s, 1, "/l/libcudart.so.13", NULL, 0, 0x10000, 0x10000, 0x20000), 0);
    cr_assert_eq(gmt_sym_add_module(s, 2, "/l/libcublas.so.13", NULL, 0, 0x30000, 0x30000, 0x40000), 0);
    uint64_t ips[] = { 0x10010, 0x30020, 0x99999 };
    cr_expect_str_eq(gmt_cat_of_stack(c, s, ips, 3), "cublas");
    uint64_t outside[] = { 0x10010, 0x99999 };
    cr_expect_str_eq(gmt_cat_of_stack(c, s, outside, 2), "user");
    gmt_cat_free(c);
    gmt_sym_free(s);
}

/* NCCL's allocation helpers are function templates: their demangled names begin with the
 * return type, which the site rules (ncclCudaCalloc*) must not see */
Test(symbolize, a_template_s_return_type_is_not_its_name)
{
    cr_expect_str_eq(gmt_without_return_type("ncclResult_t ncclCudaCallocAsyncDebug<int>(int**, unsigned long, "
                                             "CUstream_st*, char const*, int)"),
                     "ncclCudaCallocAsyncDebug<int>(int**, unsigned long, CUstream_st*, char const*, int)");
    cr_expect_str_eq(gmt_without_return_type("ncclProxyConnect(ncclComm*, int, int, int, ncclProxyConnector*)"),
                     "ncclProxyConnect(ncclComm*, int, int, int, ncclProxyConnector*)");
    cr_expect_str_eq(gmt_without_return_type("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)"),
                     "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)");
    cr_expect_str_eq(gmt_without_return_type("main"), "main");
    cr_expect_str_eq(gmt_without_return_type("operator new(unsigned long)"), "operator new(unsigned long)");
    cr_expect_null(gmt_without_return_type(NULL));
}

/* DIR/.build-id/xx/REST.debug for the build-id of `l` pointing at `target`; returns
 * its path in `out` (DIR made here). */
static void debug_link(const struct loaded *l, char *dir, const char *target, char *out,
                       size_t len)
{
    char hex[2 * 64 + 1] = "";
    for (size_t i = 0; i < l->build_id_len; i++)
        snprintf(hex + 2 * i, 3, "%02x", l->build_id[i]);
    char sub[256];
    snprintf(sub, sizeof sub, "%s/.build-id", dir);
    mkdir(sub, 0700);
    snprintf(sub, sizeof sub, "%s/.build-id/%.2s", dir, hex);
    mkdir(sub, 0700);
    cr_assert_lt(snprintf(out, len, "%s/%s.debug", sub, hex + 2), (int)len);
    unlink(out);
    char to[4096];
    test_dir(to, sizeof to);
    strncat(to, target, sizeof to - strlen(to) - 1);
    cr_assert_eq(symlink(to, out), 0, "symlink %s", out);
}

/* A stripped module whose static function is named only in its separate debug file,
 * found by build-id below a debug directory: that file is used when its build-id is the
 * module's, and a file of another build at the same name is not. */
Test(symbolize, a_debug_file_is_used_only_with_the_module_s_build_id)
{
    struct loaded l;
    load(&l, "libsymtest-stripped.so");
    uintptr_t (*hidden)(void) = (uintptr_t (*)(void))sym(&l, "symtest_hidden_address");
    uint64_t pc = hidden() + 2;
    char dir[] = "/tmp/gmt-debugdir-XXXXXX", link_path[4096];
    cr_assert_not_null(mkdtemp(dir));
    const char *dirs[] = { dir, NULL };
    const struct gmt_frame *f;
    size_t n;

    debug_link(&l, dir, "/libsymtest.debug", link_path, sizeof link_path);
    struct gmt_symbolizer *s = with_module(&l, NULL, dirs);
    cr_assert_eq(gmt_sym_resolve_pc(s, pc, &f, &n), 0);
    cr_expect_str_eq(f[0].function ? f[0].function : "(none)", "symtest_hidden");
    cr_expect(ends_with(f[0].file, "symtest.c"), "file %s", f[0].file ? f[0].file : "(null)");
    gmt_sym_free(s);

    debug_link(&l, dir, "/libsymtest-other.so", link_path, sizeof link_path);
    s = with_module(&l, NULL, dirs);
    cr_assert_eq(gmt_sym_resolve_pc(s, pc, &f, &n), 0);
    cr_expect_null(f[0].function, "named %s from another build's debug file", f[0].function);
    cr_expect_null(f[0].file);
    cr_expect_eq(f[0].offset, pc - l.bias);
    gmt_sym_free(s);

    unlink(link_path);
    char sub[256];
    *strrchr(link_path, '/') = 0;
    rmdir(link_path);
    snprintf(sub, sizeof sub, "%s/.build-id", dir);
    rmdir(sub);
    rmdir(dir);
}
