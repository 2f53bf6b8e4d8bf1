/* test_sites.c: an allocation's site, the first frame outside allocators and runtimes, where a runtime's inline wrapper is inlined into the user's function. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <libelf.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "module_range.h"
#include "report.h"
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
