/* test_sites.c: an allocation's site, the first frame outside allocators and runtimes, where a runtime's inline wrapper is inlined into the user's function. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "module_range.h"
#include "report.h"
#include "sites.h"
#include "stacks.h"
#include "golden/tracebuild.h"

/* libsitetest.so as this process loaded it: what its MODULE_LOAD record says. */
struct loaded {
    void *handle;
    char path[4096];
    uint64_t bias, start, end;
    uint8_t build_id[64];
    size_t build_id_len;
};

static void load_sitetest(struct loaded *l)
{
    memset(l, 0, sizeof *l);
    ssize_t n = readlink("/proc/self/exe", l->path, sizeof l->path - 64);
    cr_assert(n > 0);
    l->path[n] = '\0';
    strcpy(strrchr(l->path, '/'), "/stack/libsitetest.so");
    l->handle = dlopen(l->path, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(l->handle, "dlopen %s: %s", l->path, dlerror());
    cr_assert_eq(module_range(l->path, &l->bias, &l->start, &l->end), 1);
    elf_version(EV_CURRENT);
    int fd = open(l->path, O_RDONLY);
    cr_assert_geq(fd, 0);
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    cr_assert_not_null(elf);
    const void *bits;
    ssize_t k = dwelf_elf_gnu_build_id(elf, &bits);
    cr_assert(k > 0 && k <= 64);
    memcpy(l->build_id, bits, (size_t)k);
    l->build_id_len = (size_t)k;
    elf_end(elf);
    close(fd);
}

#define CUDART_BASE 0x7f1000000000ull
static const char cudart[] = "/usr/local/cuda/lib64/libcudart.so.13";

/* A trace whose one allocation has the stack [libcudart, user_ret]: the runtime's own
 * frame, then the return address in the user's function, where the runtime header's
 * wrapper is inlined. */
static char *trace_with_user_ret(const struct loaded *l, uint64_t user_ret)
{
    struct tb b = { 0 };
    tb_header_current(&b);
    struct gmt_rec_process p = { .pid = 9, .ppid = 1, .rank = -1, .local_rank = -1,
        .world_size = -1, .local_world_size = -1, .monotonic_ns = TB_T0 };
    tb_rec(&b, GMT_REC_PROCESS, 0, &p, sizeof p, NULL, 0);
    {
        size_t plen = strlen(l->path) + 1;
        uint8_t *var = malloc(l->build_id_len + plen);
        cr_assert_not_null(var);
        memcpy(var, l->build_id, l->build_id_len);
        memcpy(var + l->build_id_len, l->path, plen);
        struct gmt_rec_module_load m = { .time_ns = TB_T0 + 10, .module_id = 1,
            .build_id_len = (uint32_t)l->build_id_len, .load_bias = l->bias,
            .start = l->start, .end = l->end, .path_len = (uint32_t)plen };
        tb_rec(&b, GMT_REC_MODULE_LOAD, 0, &m, sizeof m, var, l->build_id_len + plen);
        free(var);
    }
    struct gmt_rec_module_load c = { .time_ns = TB_T0 + 20, .module_id = 2,
        .load_bias = CUDART_BASE, .start = CUDART_BASE, .end = CUDART_BASE + 0x100000,
        .path_len = sizeof cudart };
    tb_rec(&b, GMT_REC_MODULE_LOAD, 0, &c, sizeof c, cudart, sizeof cudart);
    uint64_t ip[2] = { CUDART_BASE + 0x1234, user_ret };
    struct gmt_rec_stack s = { .stack_id = 1, .depth = 2 };
    tb_rec(&b, GMT_REC_STACK, 0, &s, sizeof s, ip, sizeof ip);
    tb_chunk(&b, 100);
    tb_thread_at(&b, 100, TB_T0 + 1000);
    struct gmt_rec_cuctx x = { .context = 0xc0, .device = 0 };
    tb_rec(&b, GMT_REC_CUCTX, 0, &x, sizeof x, NULL, 0);
    struct gmt_rec_alloc a = { .address = 0x7e0000000000ull, .bytes = 1 << 20, .dt = 5,
        .stack_id = 1, .kind = GMT_KIND_DEVICE, .device = -1 };
    tb_rec(&b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &a, sizeof a, NULL, 0);
    struct gmt_rec_end e = { .time_ns = TB_T0 + 2000 };
    tb_rec(&b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
    static char path[64];
    strcpy(path, "/tmp/gmt-test-sites-XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, b.p, b.len), (ssize_t)b.len);
    close(fd);
    tb_free(&b);
    return path;
}

/* The runtime's inline wrapper is the innermost frame at the user's return address: the
 * site is the function it is inlined into, the next frame at that same address. */
Test(sites, an_inlined_runtime_wrapper_is_not_the_site)
{
    struct loaded l;
    load_sitetest(&l);
    void *(*user_alloc)(size_t) = (void *(*)(size_t))dlsym(l.handle, "sitetest_user_alloc");
    cr_assert_not_null(user_alloc);
    uint64_t ret = (uintptr_t)user_alloc(16);
    char *path = trace_with_user_ret(&l, ret);
    struct gmt_report_opts o;
    gmt_report_opts_init(&o);
    struct gmt_analysis a;
    char err[512];
    int rc = gmt_analyze(&a, path, &o, err, sizeof err);
    unlink(path);
    cr_assert_eq(rc, 0, "%s", err);

    static const char *frames[16];
    static char buf[8192];
    size_t site;
    size_t n = gmt_stack_frames(&a, 1, buf, sizeof buf, frames, 16, &site);
    cr_assert_eq(n, 3, "frames: %zu (libcudart, the wrapper inlined, the user's)", n);
    cr_assert(strstr(frames[1], "cudaMallocFloat") != NULL, "the inlined frame: %s", frames[1]);
    cr_assert(strstr(frames[2], "sitetest_user_alloc") != NULL, "its caller: %s", frames[2]);

    uint32_t i;
    size_t k;
    cr_assert(gmt_stack_site(&a, 1, &i, &k));
    cr_expect_eq(i, 1, "site at address %u, not the user's return address", i);
    cr_expect_eq(k, 1, "site at inlined frame %zu, not the user's function (1)", k);
    cr_expect_eq(site, 2, "gmt_stack_frames' site: %zu", site);
    char line[1024];
    gmt_stack_line(&a, 1, 2, line, sizeof line);
    cr_expect(strncmp(line, "sitetest_user_alloc", 19) == 0, "site line: %s", line);
    cr_expect_null(strstr(line, "cudaMallocFloat"), "the runtime's wrapper shown: %s", line);
    gmt_analysis_free(&a);
    dlclose(l.handle);
}

/* ---- how sites print: a framework's frames folded, alike lines one site, the API ---- */

#define PY_BASE 0x7f0000000000ull    /* libpython */
#define TORCH_BASE 0x7f2000000000ull /* libtorch_python.so */
#define EXE_BASE 0x400000ull         /* a program without debug info */

static void put_module(struct tb *b, uint32_t id, const char *path, uint64_t base)
{
    struct gmt_rec_module_load m = { .time_ns = TB_T0 + 10, .module_id = id, .load_bias = base,
        .start = base, .end = base + 0x100000, .path_len = (uint32_t)strlen(path) + 1 };
    tb_rec(b, GMT_REC_MODULE_LOAD, 0, &m, sizeof m, path, strlen(path) + 1);
}

static void put_pycode(struct tb *b, uint32_t id, const char *name, const char *qual, const char *file)
{
    char var[512];
    size_t n = strlen(name) + 1, q = strlen(qual) + 1, f = strlen(file) + 1;
    cr_assert_lt(n + q + f, sizeof var);
    memcpy(var, name, n);
    memcpy(var + n, qual, q);
    memcpy(var + n + q, file, f);
    struct gmt_rec_pycode r = { .code_id = id, .firstlineno = 1, .name_len = (uint32_t)n,
                                .qualname_len = (uint32_t)q, .filename_len = (uint32_t)f };
    tb_rec(b, GMT_REC_PYCODE, 0, &r, sizeof r, var, n + q + f);
}

enum { MAX_DEPTH = 16 };
struct site_stack {
    uint64_t ip[MAX_DEPTH];
    uint32_t depth;
    uint16_t api;
    uint64_t bytes;
};

/* A process whose stacks 1..n each allocate once, stack i+1 with st[i]'s bytes and API;
 * the allocations stay live. */
static char *trace_of_stacks(const struct site_stack *st, size_t n)
{
    struct tb b = { 0 };
    tb_header_current(&b);
    struct gmt_rec_process p = { .pid = 9, .ppid = 1, .rank = -1, .local_rank = -1,
        .world_size = -1, .local_world_size = -1, .monotonic_ns = TB_T0 };
    tb_rec(&b, GMT_REC_PROCESS, 0, &p, sizeof p, NULL, 0);
    put_module(&b, 1, "/usr/lib/libpython3.11.so.1.0", PY_BASE);
    put_module(&b, 2, "/venv/lib/python3.11/site-packages/torch/lib/libtorch_python.so", TORCH_BASE);
    put_module(&b, 3, "/home/me/alloc_paths", EXE_BASE);
    put_pycode(&b, 1, "_call_impl", "Module._call_impl",
               "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py");
    put_pycode(&b, 2, "_wrapped_call_impl", "Module._wrapped_call_impl",
               "/venv/lib/python3.11/site-packages/torch/nn/modules/module.py");
    put_pycode(&b, 3, "forward", "Net.forward", "/home/me/model.py");
    put_pycode(&b, 4, "train_step", "train_step", "/home/me/train.py");
    put_pycode(&b, 5, "<module>", "<module>", "/home/me/train.py");
    put_pycode(&b, 6, "_run_code", "_run_code", "<frozen runpy>");
    for (size_t i = 0; i < n; i++) {
        struct gmt_rec_stack s = { .stack_id = (uint32_t)i + 1, .depth = st[i].depth };
        tb_rec(&b, GMT_REC_STACK, 0, &s, sizeof s, st[i].ip, st[i].depth * sizeof *st[i].ip);
    }
    tb_chunk(&b, 100);
    tb_thread_at(&b, 100, TB_T0 + 1000);
    struct gmt_rec_cuctx x = { .context = 0xc0, .device = 0 };
    tb_rec(&b, GMT_REC_CUCTX, 0, &x, sizeof x, NULL, 0);
    for (size_t i = 0; i < n; i++) {
        struct gmt_rec_alloc a = { .address = 0x7e0000000000ull + (i << 30), .bytes = st[i].bytes,
            .dt = 5, .stack_id = (uint32_t)i + 1, .kind = GMT_KIND_DEVICE, .device = -1 };
        tb_rec(&b, GMT_REC_ALLOC, st[i].api, &a, sizeof a, NULL, 0);
    }
    struct gmt_rec_end e = { .time_ns = TB_T0 + 2000 };
    tb_rec(&b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
    static char path[64];
    strcpy(path, "/tmp/gmt-test-sites-XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, b.p, b.len), (ssize_t)b.len);
    close(fd);
    tb_free(&b);
    return path;
}

/* the user's forward called through PyTorch's module machinery from the user's step,
 * itself under `python -m`; `inner` the native frame the allocation came through */
static struct site_stack torch_stack(uint64_t inner, uint64_t bytes)
{
    return (struct site_stack){ .ip = {
        PY_BASE + inner,             /* the interpreter, calling into the allocator */
        GMT_PYFRAME(1, 1520),        /* Linear's module call: PyTorch's */
        GMT_PYFRAME(3, 12),          /* the user's forward: the site */
        GMT_PYFRAME(1, 1520),        /* PyTorch's module machinery ... */
        GMT_PYFRAME(2, 1511),
        TORCH_BASE + 0x2000,         /* ... and its native bindings */
        GMT_PYFRAME(4, 30),          /* the user's step */
        GMT_PYFRAME(5, 40),          /* the user's script */
        GMT_PYFRAME(6, 88),          /* runpy */
        PY_BASE + 0x9000,            /* the interpreter's main */
    }, .depth = 10, .api = GMT_API_cudaMalloc, .bytes = bytes };
}

static void analyze_at(struct gmt_analysis *a, struct gmt_report_opts *o, const char *path, int frames)
{
    gmt_report_opts_init(o);
    o->no_symbols = true;
    o->frames = frames;
    char err[512];
    int rc = gmt_analyze(a, path, o, err, sizeof err);
    cr_assert_eq(rc, 0, "%s", err);
}

Test(sites, framework_frames_between_the_users_fold)
{
    struct site_stack st[1] = { torch_stack(0x1000, 1 << 20) };
    char *path = trace_of_stacks(st, 1);
    struct gmt_analysis a;
    struct gmt_report_opts o;
    analyze_at(&a, &o, path, 0);
    char line[1024];
    gmt_stack_line(&a, 1, 3, line, sizeof line);
    cr_expect_str_eq(line, "Net.forward (model.py:12) < … < train_step (train.py:30) < <module> (train.py:40)");
    gmt_analysis_free(&a);
    /* --frames N: every frame from the site */
    analyze_at(&a, &o, path, 4);
    gmt_stack_line(&a, 1, 4, line, sizeof line);
    cr_expect_str_eq(line, "Net.forward (model.py:12) < Module._call_impl (module.py:1520) < "
                           "Module._wrapped_call_impl (module.py:1511) < libtorch_python.so+0x1fff");
    gmt_analysis_free(&a);
    unlink(path);
}

Test(sites, stacks_that_print_alike_are_one_site)
{
    /* two stacks differ only inside the interpreter, below the user's line; a third
     * prints alike but allocates through PyTorch's bindings (category pytorch, not
     * python); a fourth is a program's without debug info */
    struct site_stack st[4] = { torch_stack(0x1000, 1 << 20), torch_stack(0x1100, 3 << 20),
                                { .ip = { EXE_BASE + 0x1234, EXE_BASE + 0x2000 }, .depth = 2,
                                  .api = GMT_API_cudaMallocArray, .bytes = 2 << 20 },
                                torch_stack(0x1000, 5 << 20) };
    st[3].ip[0] = TORCH_BASE + 0x3000;
    char *path = trace_of_stacks(st, 4);
    struct gmt_analysis a;
    struct gmt_report_opts o;
    analyze_at(&a, &o, path, 0);
    struct gmt_site_groups G;
    cr_assert_eq(gmt_report_site_groups(&a, GMT_SITES_ALL, 3, &G), 0);
    cr_assert_eq(G.n, 3, "sites: %zu", G.n);
    cr_expect_str_eq(a.cat_names[G.g[0].sum.cat], "pytorch");
    cr_expect_eq(G.g[0].n_stacks, 1, "another category is another site");
    cr_expect_str_eq(G.g[0].line, G.g[1].line);
    const struct gmt_site_group *g = &G.g[1];
    cr_expect_eq(g->sum.live_at_peak, 4 << 20, "the two alike summed: %" PRIu64, g->sum.live_at_peak);
    cr_expect_eq(g->sum.allocs, 2);
    cr_expect(g->n_stacks == 2 && g->stacks[0] == 2 && g->stacks[1] == 1, "its stacks, largest first");
    cr_expect_eq(G.g[2].n_stacks, 1);
    /* a frame without file and line names the API its allocations called */
    cr_expect_str_eq(G.g[2].line, "alloc_paths+0x1233 (calls cudaMallocArray) < alloc_paths+0x1fff");
    cr_expect_null(strstr(g->line, "(calls"), "a Python line names no API: %s", g->line);
    gmt_site_groups_free(&G);
    gmt_analysis_free(&a);
    unlink(path);
}
