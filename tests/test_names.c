/* test_names.c: names files (made from a trace of the test objects, read back first, checked, never trusted), debug directories by build-id, and packs. */
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
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "module_range.h"
#include "args.h"
#include "golden/tracebuild.h"
#include "input.h"
#include "names.h"
#include "pack.h"
#include "symbolize.h"
#include "util.h"

struct loaded {
    void *handle;
    char path[4096];
    uint64_t bias, start, end;
    uint8_t build_id[64];
    size_t build_id_len;
};

static char work[4096];

static void setup(void)
{
    snprintf(work, sizeof work, "/tmp/gmt-names-XXXXXX");
    cr_assert_not_null(mkdtemp(work));
}

static void teardown(void)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    cr_expect_eq(system(cmd), 0);
    unsetenv("GPUMEMTRACE_NO_LOCAL_MODULES");
}

TestSuite(names, .init = setup, .fini = teardown);

static void stack_dir(char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    cr_assert(n > 0);
    buf[n] = '\0';
    *strrchr(buf, '/') = '\0';
    strncat(buf, "/stack", len - strlen(buf) - 1);
}

static void load(struct loaded *l, const char *name)
{
    memset(l, 0, sizeof *l);
    stack_dir(l->path, sizeof l->path);
    strncat(l->path, "/", sizeof l->path - strlen(l->path) - 1);
    strncat(l->path, name, sizeof l->path - strlen(l->path) - 1);
    l->handle = dlopen(l->path, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(l->handle, "dlopen %s: %s", l->path, dlerror());
    cr_assert_eq(module_range(l->path, &l->bias, &l->start, &l->end), 1);
    elf_version(EV_CURRENT);
    int fd = open(l->path, O_RDONLY);
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    const void *bits;
    ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
    cr_assert(n > 0 && n <= 64);
    memcpy(l->build_id, bits, (size_t)n);
    l->build_id_len = (size_t)n;
    elf_end(elf);
    close(fd);
}

static uint64_t addr_of(struct loaded *l, const char *fn)
{
    void *p = dlsym(l->handle, fn);
    cr_assert_not_null(p, "%s", fn);
    return (uintptr_t)p;
}

/* A trace of one process (pid) that loaded l (recorded at module_path) and holds one
 * stack of the return addresses ip[0..n). */
static void write_trace(const char *path, uint32_t pid, struct loaded *l, const char *module_path,
                        const uint64_t *ip, uint32_t n)
{
    struct tb b = {0};
    tb_header_current(&b);
    static const char var[] = "node-07\0prog\0";
    struct gmt_rec_process pr = {.pid = pid, .ppid = 1, .rank = -1, .local_rank = -1,
                                 .world_size = -1, .local_world_size = -1,
                                 .monotonic_ns = TB_T0, .host_len = 8, .cmdline_len = 5};
    tb_rec(&b, GMT_REC_PROCESS, 0, &pr, sizeof pr, var, sizeof var);
    char mvar[4200];
    size_t pl = strlen(module_path) + 1;
    memcpy(mvar, l->build_id, l->build_id_len);
    memcpy(mvar + l->build_id_len, module_path, pl);
    struct gmt_rec_module_load ml = {.time_ns = TB_T0, .module_id = 1,
                                     .build_id_len = (uint32_t)l->build_id_len,
                                     .load_bias = l->bias, .start = l->start, .end = l->end,
                                     .path_len = (uint32_t)pl};
    tb_rec(&b, GMT_REC_MODULE_LOAD, 0, &ml, sizeof ml, mvar, l->build_id_len + pl);
    struct gmt_rec_stack st = {.stack_id = 1, .depth = n};
    tb_rec(&b, GMT_REC_STACK, 0, &st, sizeof st, ip, n * sizeof *ip);
    cr_assert_eq(tb_write(&b, path), 0);
    tb_free(&b);
}

static void at(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", work, name);
}

/* What a symbolizer of the trace says of return address ip: "function file:line" of
 * each frame, '|' between. */
static void describe(struct gmt_symbolizer *s, uint64_t ip, char *out, size_t len)
{
    const struct gmt_frame *f;
    size_t n;
    cr_assert_eq(gmt_sym_resolve(s, ip, &f, &n), 0);
    out[0] = 0;
    for (size_t i = 0; i < n; i++) {
        size_t at_ = strlen(out);
        const char *file = f[i].file ? strrchr(f[i].file, '/') : NULL;
        snprintf(out + at_, len - at_, "%s%s %s:%u%s", i ? "|" : "",
                 f[i].function ? f[i].function : "-", file ? file + 1 : f[i].file ? f[i].file : "-",
                 f[i].line, f[i].inlined ? " inl" : "");
    }
}

static struct gmt_symbolizer *sym_for(struct loaded *l, const char *module_path, const char *trace,
                                      const char *const *dirs)
{
    struct gmt_symbolizer *s = gmt_sym_new(dirs);
    cr_assert_not_null(s);
    cr_assert_eq(gmt_sym_add_module(s, 1, module_path, l->build_id, l->build_id_len, l->bias,
                                    l->start, l->end), 0);
    if (trace)
        gmt_sym_use_names(s, trace);
    return s;
}

Test(names, frames_read_from_the_names_file_as_the_binary_gives_them)
{
    struct loaded l;
    load(&l, "libsymtest.so");
    void *(*outer)(int) = (void *(*)(int))dlsym(l.handle, "symtest_outer");
    uint64_t ip[3] = {(uintptr_t)outer(1), addr_of(&l, "symtest_probe") + 1,
                      addr_of(&l, "symtest_leaf") + 1};
    char trace[4200], gone[4200];
    at(trace, sizeof trace, "t.gmt");
    write_trace(trace, 100, &l, l.path, ip, 3);
    struct gmt_names_made made;
    char err[512];
    cr_assert_eq(gmt_names_make(trace, NULL, false, &made, err, sizeof err), 0, "%s", err);
    cr_expect_eq(made.addresses, 3);
    cr_expect_eq(made.frames, 4, "the inlined call is two frames: %llu", (unsigned long long)made.frames);
    cr_expect_eq(made.modules, 1);
    cr_expect_eq(made.unnamed, 0, "%s", made.unnamed_list);
    /* the same module, recorded where no file is: named from the names file only */
    at(gone, sizeof gone, "gone/libsymtest.so");
    for (int i = 0; i < 3; i++) {
        struct gmt_symbolizer *host = sym_for(&l, l.path, NULL, NULL);
        struct gmt_symbolizer *away = sym_for(&l, gone, trace, NULL);
        struct gmt_symbolizer *bare = sym_for(&l, gone, NULL, NULL);
        char a[1024], b[1024], c[1024];
        describe(host, ip[i], a, sizeof a);
        describe(away, ip[i], b, sizeof b);
        describe(bare, ip[i], c, sizeof c);
        cr_expect_str_eq(a, b, "address %d", i);
        cr_expect(strstr(a, "symtest_") != NULL, "%s", a);
        cr_expect(strstr(c, "symtest_") == NULL, "nothing names it without the names: %s", c);
        cr_expect_null(gmt_sym_unnamed_why(away, ip[i]));
        cr_expect_str_eq(gmt_sym_unnamed_why(bare, ip[i]), "not found");
        gmt_sym_free(host);
        gmt_sym_free(away);
        gmt_sym_free(bare);
    }
    char inl[1024];
    struct gmt_symbolizer *away = sym_for(&l, gone, trace, NULL);
    describe(away, ip[0], inl, sizeof inl);
    cr_expect_str_eq(inl, "symtest_inner symtest.c:202 inl|symtest_outer symtest.c:302");
    gmt_sym_free(away);
}

Test(names, kept_when_up_to_date_and_made_again_when_the_trace_grew)
{
    struct loaded l;
    load(&l, "libsymtest.so");
    uint64_t ip[1] = {addr_of(&l, "symtest_probe") + 1};
    char trace[4200];
    at(trace, sizeof trace, "t.gmt");
    write_trace(trace, 100, &l, l.path, ip, 1);
    struct gmt_names_made made;
    char err[512];
    cr_assert_eq(gmt_names_make(trace, NULL, false, &made, err, sizeof err), 0, "%s", err);
    cr_expect(!made.fresh);
    cr_assert_eq(gmt_names_make(trace, NULL, false, &made, err, sizeof err), 0, "%s", err);
    cr_expect(made.fresh);
    cr_assert_eq(gmt_names_make(trace, NULL, true, &made, err, sizeof err), 0, "%s", err);
    cr_expect(!made.fresh, "--force names again");
    uint64_t two[2] = {ip[0], addr_of(&l, "symtest_leaf") + 1};
    write_trace(trace, 100, &l, l.path, two, 2); /* the same process, further on */
    cr_assert_eq(gmt_names_make(trace, NULL, false, &made, err, sizeof err), 0, "%s", err);
    cr_expect(!made.fresh, "a trace that grew is named again");
}

Test(names, another_traces_names_are_not_used)
{
    struct loaded l;
    load(&l, "libsymtest.so");
    uint64_t ip[1] = {addr_of(&l, "symtest_probe") + 1};
    char a[4200], b[4200], an[4300], bn[4300];
    at(a, sizeof a, "a.gmt");
    at(b, sizeof b, "b.gmt");
    write_trace(a, 100, &l, l.path, ip, 1);
    write_trace(b, 101, &l, l.path, ip, 1);
    struct gmt_names_made made;
    char err[512];
    cr_assert_eq(gmt_names_make(a, NULL, false, &made, err, sizeof err), 0, "%s", err);
    snprintf(an, sizeof an, "%s.names", a);
    snprintf(bn, sizeof bn, "%s.names", b);
    cr_assert_eq(rename(an, bn), 0);
    struct gmt_names *n = NULL;
    cr_expect_eq(gmt_names_load(&n, bn, b, err, sizeof err), -EINVAL);
    cr_expect(strstr(err, "made for another trace") != NULL, "%s", err);
    cr_expect_null(n);
    cr_expect_eq(gmt_names_load(&n, an, a, err, sizeof err), -ENOENT);
    cr_expect_str_eq(err, "");
}

Test(names, a_file_of_another_build_is_never_used_and_says_why)
{
    struct loaded l;
    load(&l, "libsymtest.so");
    char other[4096];
    stack_dir(other, sizeof other);
    strncat(other, "/libsymtest-other.so", sizeof other - strlen(other) - 1);
    uint64_t ip[1] = {addr_of(&l, "symtest_probe") + 1};
    char trace[4200];
    at(trace, sizeof trace, "t.gmt");
    /* the trace says libsymtest-other.so was loaded with libsymtest.so's build-id */
    write_trace(trace, 100, &l, other, ip, 1);
    struct gmt_names_made made;
    char err[512];
    cr_assert_eq(gmt_names_make(trace, NULL, false, &made, err, sizeof err), 0, "%s", err);
    cr_expect_eq(made.unnamed, 1);
    cr_expect_eq(made.addresses, 0);
    cr_expect(strstr(made.unnamed_list, "libsymtest-other.so (another build at its path") != NULL,
              "%s", made.unnamed_list);
    /* the names file says so anywhere, and names nothing */
    char names[4300];
    snprintf(names, sizeof names, "%s.names", trace);
    struct gmt_names *nm = NULL;
    cr_assert_eq(gmt_names_load(&nm, names, trace, err, sizeof err), 0, "%s", err);
    long m = gmt_names_find_module(nm, l.build_id, l.build_id_len, other);
    cr_assert_eq(m, 0);
    cr_expect_str_eq(gmt_names_module_why(nm, m), "another build at its path (build-id differs)");
    gmt_names_free(nm);
    char gone[4200];
    at(gone, sizeof gone, "gone/libsymtest-other.so");
    struct gmt_symbolizer *s = sym_for(&l, gone, trace, NULL);
    char d[1024];
    describe(s, ip[0], d, sizeof d);
    cr_expect_str_eq(d, "- -:0");
    cr_expect_str_eq(gmt_sym_unnamed_why(s, ip[0]), "another build at its path (build-id differs)");
    gmt_sym_free(s);
}

/* Copies file src to dst, making dst's directories. */
static void copy(const char *src, const char *dst)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\" && cp '%s' '%s'", dst, src, dst);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

Test(names, a_debug_dir_names_by_build_id_and_no_local_modules_hides_the_files)
{
    struct loaded l;
    load(&l, "libsymtest.so");
    uint64_t ip = addr_of(&l, "symtest_probe") + 1;
    char hex[129] = "", dbg[4500], dir[4200];
    for (size_t i = 0; i < l.build_id_len; i++)
        snprintf(hex + 2 * i, 3, "%02x", l.build_id[i]);
    at(dir, sizeof dir, "debug");
    snprintf(dbg, sizeof dbg, "%s/.build-id/%.2s/%s.debug", dir, hex, hex + 2);
    copy(l.path, dbg);
    char gone[4200], d[1024];
    at(gone, sizeof gone, "elsewhere/libsymtest.so");
    const char *dirs[] = {dir, NULL};
    struct gmt_symbolizer *s = sym_for(&l, gone, NULL, dirs);
    describe(s, ip, d, sizeof d);
    cr_expect_str_eq(d, "symtest_probe symtest.c:101", "by .build-id/xx/rest.debug: %s", d);
    gmt_sym_free(s);
    s = sym_for(&l, gone, NULL, NULL);
    describe(s, ip, d, sizeof d);
    cr_expect_str_eq(d, "- -:0");
    gmt_sym_free(s);
    /* the file is where the trace says, but must not be read */
    setenv("GPUMEMTRACE_NO_LOCAL_MODULES", "1", 1);
    s = sym_for(&l, l.path, NULL, NULL);
    describe(s, ip, d, sizeof d);
    cr_expect_str_eq(d, "- -:0", "GPUMEMTRACE_NO_LOCAL_MODULES: %s", d);
    cr_expect(strstr(gmt_sym_unnamed_why(s, ip), "GPUMEMTRACE_NO_LOCAL_MODULES") != NULL);
    gmt_sym_free(s);
    s = sym_for(&l, l.path, NULL, dirs);
    describe(s, ip, d, sizeof d);
    cr_expect_str_eq(d, "symtest_probe symtest.c:101", "a debug dir still counts: %s", d);
    gmt_sym_free(s);
}

/* ---- names files that are not what they should be ---- */

struct hdr {
    char magic[8];
    uint16_t major, minor;
    uint32_t header_size;
    uint64_t digest, trace_size, body_len, stored_len;
    uint32_t n_modules, reserved;
    uint64_t n_addresses, n_frames, blob_len;
};

static uint8_t *slurp_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "%s", path);
    fseek(f, 0, SEEK_END);
    *len = (size_t)ftell(f);
    rewind(f);
    uint8_t *b = malloc(*len);
    cr_assert_eq(fread(b, 1, *len, f), *len);
    fclose(f);
    return b;
}

static void spit(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(d, 1, n, f), n);
    fclose(f);
}

/* The names file at names with its tables replaced by body (n bytes), deflated, the
 * header's counts as given: the loader must check each. */
static int load_with_body(const char *names, const char *trace, const struct hdr *h0,
                          const void *body, size_t n, char *err, size_t errlen)
{
    struct hdr h = *h0;
    uLongf zl = compressBound(n);
    uint8_t *z = malloc(sizeof h + zl);
    cr_assert_eq(compress2(z + sizeof h, &zl, body, n, 6), Z_OK);
    h.body_len = n;
    h.stored_len = zl;
    memcpy(z, &h, sizeof h);
    spit(names, z, sizeof h + zl);
    free(z);
    struct gmt_names *nm = NULL;
    int r = gmt_names_load(&nm, names, trace, err, errlen);
    gmt_names_free(nm);
    return r;
}

Test(names, malformed_names_files_are_refused_never_trusted)
{
    struct loaded l;
    load(&l, "libsymtest.so");
    uint64_t ip[2] = {addr_of(&l, "symtest_probe") + 1, addr_of(&l, "symtest_leaf") + 1};
    char trace[4200], names[4300], err[512];
    at(trace, sizeof trace, "t.gmt");
    write_trace(trace, 100, &l, l.path, ip, 2);
    struct gmt_names_made made;
    cr_assert_eq(gmt_names_make(trace, NULL, false, &made, err, sizeof err), 0, "%s", err);
    snprintf(names, sizeof names, "%s.names", trace);
    size_t len;
    uint8_t *good = slurp_file(names, &len);
    struct gmt_names *n = NULL;
    cr_assert_eq(gmt_names_load(&n, names, trace, err, sizeof err), 0, "%s", err);
    gmt_names_free(n);
    /* every cut and every flipped byte: refused or read, never a crash (ASan in CI) */
    uint8_t *b = malloc(len);
    for (size_t cut = 0; cut < len; cut++) {
        spit(names, good, cut);
        n = NULL;
        cr_expect_eq(gmt_names_load(&n, names, trace, err, sizeof err), -EINVAL, "cut at %zu", cut);
        cr_expect(strstr(err, names) != NULL, "%s", err);
        gmt_names_free(n);
    }
    for (size_t i = 0; i < len; i++) {
        memcpy(b, good, len);
        b[i] ^= 0x5a;
        spit(names, b, len);
        n = NULL;
        int r = gmt_names_load(&n, names, trace, err, sizeof err);
        cr_expect(r == 0 || r == -EINVAL, "byte %zu: %d", i, r);
        gmt_names_free(n);
    }
    free(b);
    /* tables that inflate well but do not hold together */
    struct hdr h;
    memcpy(&h, good, sizeof h);
    cr_assert_eq(h.header_size, sizeof h);
    struct {
        uint32_t path, why, bid, bid_len;
        uint64_t offset;
        uint32_t module, first, n, reserved;
        uint32_t function, file, line, flags;
        char blob[8];
    } __attribute__((packed)) t = {1, 0, 0, 0, 0x40, 0, 0, 1, 0, 1, 0, 7, 0, "\0m\0\0\0\0\0"};
    h.n_modules = 1;
    h.n_addresses = 1;
    h.n_frames = 1;
    h.blob_len = 8;
    cr_expect_eq(load_with_body(names, trace, &h, &t, sizeof t, err, sizeof err), 0, "%s", err);
    t.module = 1;
    cr_expect_eq(load_with_body(names, trace, &h, &t, sizeof t, err, sizeof err), -EINVAL);
    t.module = 0;
    t.first = 1;
    cr_expect_eq(load_with_body(names, trace, &h, &t, sizeof t, err, sizeof err), -EINVAL);
    t.first = 0;
    t.function = 8;
    cr_expect_eq(load_with_body(names, trace, &h, &t, sizeof t, err, sizeof err), -EINVAL);
    t.function = 1;
    t.bid = 4;
    t.bid_len = 5;
    cr_expect_eq(load_with_body(names, trace, &h, &t, sizeof t, err, sizeof err), -EINVAL);
    t.bid_len = 0;
    t.blob[7] = 'x';
    cr_expect_eq(load_with_body(names, trace, &h, &t, sizeof t, err, sizeof err), -EINVAL);
    t.blob[7] = 0;
    h.n_frames = 2; /* the counts no longer add up to the body */
    cr_expect_eq(load_with_body(names, trace, &h, &t, sizeof t, err, sizeof err), -EINVAL);
    h.n_frames = 1;
    h.major = 2;
    cr_expect_eq(load_with_body(names, trace, &h, &t, sizeof t, err, sizeof err), -EINVAL);
    cr_expect(strstr(err, "version 2.") != NULL, "%s", err);
    free(good);
}

/* ---- packs ---- */

static int sh(const char *fmt, const char *a, const char *b)
{
    char cmd[16384];
    snprintf(cmd, sizeof cmd, fmt, a, b, a, b);
    return system(cmd);
}

Test(names, a_pack_reads_like_its_directory_and_tar_reads_it)
{
    struct loaded l;
    load(&l, "libsymtest.so");
    uint64_t ip[1] = {addr_of(&l, "symtest_probe") + 1};
    char dir[4200], deep[4600], trace[4800], pack[4300], err[512];
    at(dir, sizeof dir, "job");
    /* a path past ustar's 100 + 155 bytes: a pax header holds it */
    snprintf(deep, sizeof deep, "%s/%0120d/%0150d", dir, 1, 2);
    char cmd[5000];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", deep);
    cr_assert_eq(system(cmd), 0);
    snprintf(trace, sizeof trace, "%s/gpumemtrace.node-07.100.gmt", deep);
    write_trace(trace, 100, &l, l.path, ip, 1);
    char top[4300];
    snprintf(top, sizeof top, "%s/a.gmt", dir);
    write_trace(top, 101, &l, l.path, ip, 1);
    struct gmt_names_made made;
    cr_assert_eq(gmt_names_make(trace, NULL, false, &made, err, sizeof err), 0, "%s", err);
    at(pack, sizeof pack, "job.gmtpack");
    struct gmt_pack_made pm;
    cr_assert_eq(gmt_pack_write(dir, pack, &pm, err, sizeof err), 0, "%s", err);
    cr_expect_eq(pm.traces, 2);
    cr_expect_eq(pm.named, 1);
    cr_expect(gmt_pack_is(pack));
    cr_expect(!gmt_pack_is(trace));
    char **list;
    size_t n;
    cr_assert_eq(gmt_pack_list(pack, &list, &n, err, sizeof err), 0, "%s", err);
    cr_assert_eq(n, 2);
    char want[9200];
    snprintf(want, sizeof want, "%s/%s", pack, trace + strlen(dir) + 1);
    cr_expect_str_eq(list[0], want);
    /* a member reads as the file it was, and its names beside it */
    for (int names = 0; names < 2; names++) {
        char member[9300], src[4900];
        snprintf(member, sizeof member, "%s%s", list[0], names ? ".names" : "");
        snprintf(src, sizeof src, "%s%s", trace, names ? ".names" : "");
        int fd = gmt_open_input(member, 0, err, sizeof err);
        cr_assert(fd >= 0, "%s", err);
        size_t len;
        uint8_t *a = slurp_file(src, &len);
        uint8_t *b = malloc(len + 1);
        cr_expect_eq(read(fd, b, len + 1), (ssize_t)len);
        cr_expect_eq(memcmp(a, b, len), 0);
        close(fd);
        free(a);
        free(b);
    }
    /* the symbolizer finds the names inside the pack */
    char gone[4200], d[1024];
    at(gone, sizeof gone, "gone/libsymtest.so");
    struct gmt_symbolizer *s = sym_for(&l, gone, list[0], NULL);
    describe(s, ip[0], d, sizeof d);
    cr_expect_str_eq(d, "symtest_probe symtest.c:101");
    gmt_sym_free(s);
    char nothere[4500];
    snprintf(nothere, sizeof nothere, "%s/no-such.gmt", pack);
    cr_expect_lt(gmt_open_input(nothere, 0, err, sizeof err), 0);
    cr_expect(strstr(err, "No such file") != NULL, "%s", err);
    gmt_free_paths(list, n);
    /* tar reads ours, and we read tar's (GNU long names), where tar is installed */
    if (system("tar --version >/dev/null 2>&1") == 0) {
        cr_expect_eq(sh("tar tf '%s' | grep -q '/gpumemtrace.node-07.100.gmt.names$'", pack, ""), 0);
        char gnu[4300];
        at(gnu, sizeof gnu, "gnu.tar");
        cr_assert_eq(sh("tar --format=gnu -C '%s' -cf '%s' .", dir, gnu), 0);
        cr_assert_eq(gmt_pack_list(gnu, &list, &n, err, sizeof err), 0, "%s", err);
        cr_expect_eq(n, 2);
        int fd = n == 2 ? gmt_open_input(list[0], 0, err, sizeof err) : -1;
        cr_expect(fd >= 0, "%s", err);
        if (fd >= 0)
            close(fd);
        gmt_free_paths(list, n);
    }
    /* a pack cut short, or with a broken header, is refused with its name */
    size_t len;
    uint8_t *p = slurp_file(pack, &len);
    for (size_t cut = 512; cut + 2 * 512 < len; cut += 509) { /* not in the end blocks */
        spit(pack, p, cut);
        int r = gmt_pack_list(pack, &list, &n, err, sizeof err);
        cr_expect_eq(r, -EINVAL, "cut at %zu", cut);
        cr_expect(strstr(err, pack) != NULL, "%s", err);
        if (!r)
            gmt_free_paths(list, n);
    }
    p[1030] ^= 1; /* inside the second header or data: a header's checksum fails or not */
    p[600] ^= 1;
    spit(pack, p, len);
    int r = gmt_pack_list(pack, &list, &n, err, sizeof err);
    if (!r)
        gmt_free_paths(list, n);
    free(p);
}

/* `gpumemtrace symbolize` of this build, run by the shell: its exit status, stderr in
 * WORK/err. */
static int symbolize_cli(const char *args)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert(n > 0);
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    *strrchr(exe, '/') = '\0';
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s/gpumemtrace' symbolize %s >'%s/out' 2>'%s/err'", exe, args,
             work, work);
    int st = system(cmd);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The command's workers (one per core) name every trace of a directory between them; a
 * trace that cannot be named fails the command, not the others; a pack is refused. */
Test(names, symbolize_names_every_trace_and_fails_for_one_it_cannot)
{
    struct loaded l;
    load(&l, "libsymtest.so");
    uint64_t ip[1] = {addr_of(&l, "symtest_probe") + 1};
    char dir[4200], trace[4300], args[8600], err[512];
    at(dir, sizeof dir, "job");
    cr_assert_eq(mkdir(dir, 0700), 0);
    enum { TRACES = 7 };
    for (int i = 0; i < TRACES; i++) {
        snprintf(trace, sizeof trace, "%s/t%d.gmt", dir, i);
        write_trace(trace, 100 + (uint32_t)i, &l, l.path, ip, 1);
    }
    snprintf(args, sizeof args, "'%s'", dir);
    cr_expect_eq(symbolize_cli(args), 0);
    for (int i = 0; i < TRACES; i++) {
        snprintf(trace, sizeof trace, "%s/t%d.gmt" GMT_NAMES_SUFFIX, dir, i);
        cr_expect_eq(access(trace, R_OK), 0, "%s not written", trace);
    }
    /* where t3's names cannot go (a directory has their name), the others are still named */
    snprintf(trace, sizeof trace, "%s/t3.gmt" GMT_NAMES_SUFFIX, dir);
    cr_assert_eq(unlink(trace), 0);
    cr_assert_eq(mkdir(trace, 0700), 0);
    snprintf(args, sizeof args, "--force '%s'", dir);
    cr_expect_eq(symbolize_cli(args), 2);
    char path[4400];
    at(path, sizeof path, "err");
    size_t len;
    uint8_t *e = slurp_file(path, &len);
    cr_expect(len && memmem(e, len, "t3.gmt" GMT_NAMES_SUFFIX, strlen("t3.gmt" GMT_NAMES_SUFFIX)),
              "%.*s", (int)len, (const char *)e);
    free(e);
    /* a pack is read, never written */
    char pack[4300];
    at(pack, sizeof pack, "job.gmtpack");
    cr_assert_eq(rmdir(trace), 0);
    struct gmt_pack_made pm;
    cr_assert_eq(gmt_pack_write(dir, pack, &pm, err, sizeof err), 0, "%s", err);
    snprintf(args, sizeof args, "'%s'", pack);
    cr_expect_eq(symbolize_cli(args), 2);
    e = slurp_file(path, &len);
    cr_expect(len && memmem(e, len, "is a pack", 9), "%.*s", (int)len, (const char *)e);
    free(e);
}
