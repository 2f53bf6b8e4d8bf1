/* test_modules.c: the module map: program, libc and vdso at open, dlopen/dlclose seen by rescans, build-ids right. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gnu/libc-version.h>
#include <libelf.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "elfsym.h"
#include "gmt.h"
#include "modules.h"
#include "reader.h"
#include "versions.h"
#include "writer_api.h"

#define MAX_MODS 256

struct modrec {
    int type;            /* GMT_REC_MODULE_LOAD or _UNLOAD */
    bool preamble;       /* before the first CHUNK */
    uint32_t id;
    char path[512];
    uint8_t build_id[64];
    uint32_t build_id_len;
    uint64_t bias, start, end;
};

struct mods {
    size_t n;
    struct modrec m[MAX_MODS];
};

static char dir[64];
static char path[128];

static void start_trace(void)
{
    strcpy(dir, "/tmp/gmt-test-mod-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.gmt", dir);
    gmt_opt.output = path;
    gmt_opt.quiet = 1;
    cr_assert(gmt_writer_ready());
}

static void finish_and_read(struct mods *out)
{
    gmt_writer_finish();
    memset(out, 0, sizeof *out);
    struct gmt_reader *r;
    char err[256];
    cr_assert_eq(gmt_reader_open(&r, path, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    bool chunk_seen = false;
    int rc;
    while ((rc = gmt_reader_next(r, &ev, err, sizeof err)) == 1) {
        unsigned t = ev.rec->type;
        if (t == GMT_REC_CHUNK)
            chunk_seen = true;
        if (t != GMT_REC_MODULE_LOAD && t != GMT_REC_MODULE_UNLOAD)
            continue;
        cr_assert_lt(out->n, MAX_MODS);
        struct modrec *m = &out->m[out->n++];
        m->type = (int)t;
        m->preamble = !chunk_seen;
        if (t == GMT_REC_MODULE_UNLOAD) {
            m->id = ((const struct gmt_rec_module_unload *)ev.rec)->module_id;
            continue;
        }
        const struct gmt_rec_module_load *ml = (const struct gmt_rec_module_load *)ev.rec;
        const char *tail = (const char *)(ml + 1);
        cr_assert_leq(sizeof *ml + ml->build_id_len + ml->path_len, ml->h.size);
        cr_assert_leq(ml->build_id_len, 64);
        cr_assert_leq(ml->path_len, sizeof m->path);
        cr_assert_eq(tail[ml->build_id_len + ml->path_len - 1], '\0', "path ends in NUL");
        m->id = ml->module_id;
        m->build_id_len = ml->build_id_len;
        memcpy(m->build_id, tail, ml->build_id_len);
        memcpy(m->path, tail + ml->build_id_len, ml->path_len);
        m->bias = ml->load_bias;
        m->start = ml->start;
        m->end = ml->end;
    }
    cr_assert_eq(rc, 0, "%s", err);
    gmt_reader_close(r);
    unlink(path);
    rmdir(dir);
}

static size_t file_build_id(const char *file, uint8_t *out)
{
    elf_version(EV_CURRENT);
    int fd = open(file, O_RDONLY);
    cr_assert(fd >= 0, "open %s", file);
    Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
    cr_assert_not_null(elf);
    const void *bits;
    ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
    cr_assert(n > 0 && n <= 64, "%s has a build-id", file);
    memcpy(out, bits, (size_t)n);
    elf_end(elf);
    close(fd);
    return (size_t)n;
}

static void expect_build_id_of_file(const struct modrec *m)
{
    uint8_t want[64];
    size_t n = file_build_id(m->path, want);
    cr_expect_eq(m->build_id_len, n, "%s", m->path);
    cr_expect(memcmp(m->build_id, want, n) == 0, "build-id of %s as on disk", m->path);
}

static const struct modrec *find_load(const struct mods *s, const char *base, size_t nth)
{
    for (size_t i = 0; i < s->n; i++) {
        const struct modrec *m = &s->m[i];
        const char *b = strrchr(m->path, '/');
        b = b ? b + 1 : m->path;
        if (m->type == GMT_REC_MODULE_LOAD && strcmp(b, base) == 0 && nth-- == 0)
            return m;
    }
    return NULL;
}

static size_t count_path(const struct mods *s, const char *p)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        k += s->m[i].type == GMT_REC_MODULE_LOAD && strcmp(s->m[i].path, p) == 0;
    return k;
}

static void so_path(char *buf, size_t len, const char *name)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    cr_assert(n > 0);
    buf[n] = '\0';
    *strrchr(buf, '/') = '\0';
    snprintf(buf + strlen(buf), len - strlen(buf), "/stack/%s", name);
}

Test(modules, open_lists_program_libc_and_vdso)
{
    start_trace();
    struct mods s;
    finish_and_read(&s);
    char exe[512];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert(n > 0);
    exe[n] = '\0';

    const struct modrec *prog = find_load(&s, strrchr(exe, '/') + 1, 0);
    cr_assert_not_null(prog, "the program is listed");
    cr_expect_str_eq(prog->path, exe);
    cr_expect(prog->preamble);
    expect_build_id_of_file(prog);
    uintptr_t fn = (uintptr_t)&start_trace;
    cr_expect(fn >= prog->start && fn < prog->end, "its range holds its code");

    const struct modrec *libc = find_load(&s, "libc.so.6", 0);
    cr_assert_not_null(libc, "libc is listed");
    expect_build_id_of_file(libc);
    /* a function no sanitizer intercepts, so its address is libc's own */
    uintptr_t lc = (uintptr_t)&gnu_get_libc_version;
    cr_expect(lc >= libc->start && lc < libc->end);

    cr_expect_not_null(find_load(&s, "[vdso]", 0), "the vdso is marked");

    for (size_t i = 0; i < s.n; i++) {
        cr_expect_lt(s.m[i].start, s.m[i].end, "%s", s.m[i].path);
        for (size_t j = i + 1; j < s.n; j++)
            cr_expect_neq(s.m[i].id, s.m[j].id, "module ids are unique");
    }
}

Test(modules, dlopen_and_dlclose_are_seen_by_rescans)
{
    char so[512];
    so_path(so, sizeof so, "libsymtest.so");
    start_trace();
    gmt_modules_rescan(); /* nothing changed: nothing written */
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h, "%s", dlerror());
    struct link_map *lm;
    cr_assert_eq(dlinfo(h, RTLD_DI_LINKMAP, &lm), 0);
    uint64_t bias = lm->l_addr;
    uintptr_t leaf = (uintptr_t)dlsym(h, "symtest_leaf");
    gmt_modules_rescan();
    dlclose(h);
    gmt_modules_rescan();
    h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h);
    gmt_modules_rescan();
    struct mods s;
    finish_and_read(&s);

    const struct modrec *first = find_load(&s, "libsymtest.so", 0);
    cr_assert_not_null(first);
    cr_expect(!first->preamble, "loaded after open: from the rescan");
    cr_expect_str_eq(first->path, so);
    cr_expect_eq(first->bias, bias);
    cr_expect(leaf >= first->start && leaf < first->end);
    expect_build_id_of_file(first);

    size_t unloads = 0;
    for (size_t i = 0; i < s.n; i++)
        if (s.m[i].type == GMT_REC_MODULE_UNLOAD) {
            unloads++;
            cr_expect_eq(s.m[i].id, first->id, "the unload names the dlclosed module");
        }
    cr_expect_eq(unloads, 1);
    const struct modrec *again = find_load(&s, "libsymtest.so", 1);
    cr_assert_not_null(again, "loaded again after dlclose");
    cr_expect_neq(again->id, first->id, "ids are never reused");
    cr_expect_eq(count_path(&s, so), 2);
    dlclose(h);
}

#define RESCANNERS 4

static _Atomic int stop;

static void *rescanner(void *arg)
{
    while (!stop)
        gmt_modules_rescan();
    return NULL;
}

Test(modules, concurrent_rescans_write_each_module_once)
{
    char so[512], so2[512];
    so_path(so, sizeof so, "libsymtest-nodebug.so");
    so_path(so2, sizeof so2, "libsymtest-other.so");
    start_trace();
    pthread_t t[RESCANNERS];
    for (int i = 0; i < RESCANNERS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, rescanner, NULL), 0);
    void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h);
    gmt_modules_rescan();
    void *h2 = dlopen(so2, RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(h2);
    gmt_modules_rescan();
    stop = 1;
    for (int i = 0; i < RESCANNERS; i++)
        pthread_join(t[i], NULL);
    /* the last request is served before the last rescan returns, whoever serves it */
    struct mods s;
    finish_and_read(&s);
    cr_expect_eq(count_path(&s, so), 1);
    cr_expect_eq(count_path(&s, so2), 1);
    for (size_t i = 0; i < s.n; i++)
        cr_expect_eq(s.m[i].type, GMT_REC_MODULE_LOAD, "nothing was unloaded");
    dlclose(h);
    dlclose(h2);
}

/* ---- the main program's own symbol table (elfsym.c) ---- */

__attribute__((noinline, used)) int gmt_test_local_function(int *v)
{
    *v = 4242;
    return 0;
}

Test(elfsym, finds_a_function_the_dynamic_linker_does_not_export)
{
    /* not exported (the test is not linked with -rdynamic): only .symtab has it */
    cr_expect_null(dlsym(RTLD_DEFAULT, "gmt_test_local_function"));
    void *f = gmt_main_program_function("gmt_test_local_function");
    cr_assert_eq(f, (void *)gmt_test_local_function);
    int v = 0;
    cr_expect_eq(((int (*)(int *))f)(&v), 0);
    cr_expect_eq(v, 4242);
}

Test(elfsym, finds_nothing_for_names_not_defined_or_not_functions)
{
    cr_expect_null(gmt_main_program_function("gmt_test_no_such_function"));
    cr_expect_null(gmt_main_program_function("gmt_test_local_functio")); /* a prefix */
    cr_expect_null(gmt_main_program_function("gmt_opt"));                /* an object */
    cr_expect_null(gmt_main_program_function(""));
}
