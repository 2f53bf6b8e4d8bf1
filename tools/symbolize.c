/* symbolize.c: the CLI's symbolizer: module map from the trace, one libdwfl handle per module, inlined frames expanded. */
#include "symbolize.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "input.h"
#include "names_read.h"
#include "u64map.h"
#include "util.h"

/*
 * Each module gets its own Dwfl handle, opened the first time one of its addresses is
 * resolved. One shared handle would refuse modules whose ranges overlap, and a trace
 * has those whenever a library was unloaded and another mapped where it was. Names
 * stay mangled: the CLI is plain C and a demangler is not small; `c++filt` reads our
 * output when wanted.
 */

enum mod_state { MOD_UNOPENED, MOD_OPEN, MOD_UNTRUSTED };

/* Why a module's file was not used (MOD_UNTRUSTED). */
enum mod_why { WHY_NONE, WHY_MISSING, WHY_MISMATCH, WHY_OFFLINE };

struct mod {
    uint32_t id;
    char *path;
    uint8_t *build_id;
    size_t build_id_len;
    uint64_t bias, start, end;
    enum mod_state state;
    enum mod_why why;
    long nm;                /* its module in the names (names_read.h), -1 none, -2 not looked up */
    Dwfl *dwfl;
    Dwfl_Module *dm;
};

struct result {
    size_t n;
    struct gmt_frame f[];
};

struct gmt_symbolizer {
    struct mod *mods;
    size_t nmods, cap;
    char **dirs;            /* extra directories, NULL-terminated */
    char *debuginfo_path;   /* the debug directories, for libdwfl's own searches */
    Dwfl_Callbacks cb;      /* must outlive every Dwfl */
    struct gmt_u64map cache; /* looked-up pc -> struct result * */
    struct pycode {
        char *qualname, *file;
        int32_t firstlineno;
    } *py;                  /* by PYCODE id; qualname NULL: not defined */
    size_t npy;
    bool offline;           /* never open a file: module+offset only */
    bool no_local;          /* GPUMEMTRACE_NO_LOCAL_MODULES: no module is read where the
                             * trace says it was, nor from /usr/lib/debug: what another
                             * machine sees, for checking that the names travel */
    char *trace_path;       /* the trace whose names travel beside it (TRACE.names), */
    char *names_path;       /* read when first needed; NULL none */
    struct gmt_names *names;
    bool names_tried;
};

void gmt_sym_set_offline(struct gmt_symbolizer *s, bool offline)
{
    s->offline = offline;
}

/* A debug file candidate: an fd when it is an ELF file whose build-id is the module's
 * (any, when the module has none), else -1. */
static int open_debug(const char *path, const uint8_t *bid, int bid_len)
{
    int fd = gmt_open_input(path, 0, NULL, 0);
    if (fd < 0)
        return -1;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    bool ok = elf && elf_kind(elf) == ELF_K_ELF;
    if (ok && bid_len > 0) {
        const void *bits = NULL;
        ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
        ok = n == bid_len && memcmp(bits, bid, (size_t)n) == 0;
    }
    if (elf)
        elf_end(elf);
    if (!ok) {
        close(fd);
        return -1;
    }
    return fd;
}

static int try_debug(char **name, const uint8_t *bid, int bid_len, const char *a, const char *b,
                     const char *c, const char *d)
{
    char buf[4096];
    int len = snprintf(buf, sizeof buf, "%s%s%s%s", a, b, c, d);
    if (len < 0 || (size_t)len >= sizeof buf)
        return -1;
    int fd = open_debug(buf, bid, bid_len);
    if (fd >= 0 && !(*name = strdup(buf))) {
        close(fd);
        return -1;
    }
    return fd;
}

/*
 * libdwfl's find_debuginfo, searching where dwfl_standard_find_debuginfo does (by
 * build-id below each debug directory; by .gnu_debuglink beside the module, in its
 * .debug/, and below each debug directory), but opening each candidate as every file
 * the CLI reads (gmt_open_input: a FIFO or device named there cannot block or feed the
 * CLI) and taking it only when its build-id is the module's.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                          Dwarf_Addr base, const char *file_name, const char *debuglink_file,
                          GElf_Word debuglink_crc, char **debuginfo_file_name)
{
    (void)modname, (void)base, (void)debuglink_crc;
    const struct gmt_symbolizer *s = *userdata;
    if (!s)
        return -1;
    const unsigned char *bid = NULL;
    GElf_Addr vaddr;
    int bid_len = dwfl_module_build_id(mod, &bid, &vaddr);
    if (bid_len < 0)
        bid_len = 0;
    const char *std_dirs[] = { s->no_local ? NULL : "/usr/lib/debug", NULL };
    const char *const *lists[] = { std_dirs, (const char *const *)s->dirs };
    int fd;
    if (bid_len >= 2) {
        char hex[2 * 64 + 1] = "", sub[8], rest[2 * 64 + 8];
        for (int i = 0; i < bid_len && i < 64; i++)
            snprintf(hex + 2 * i, 3, "%02x", bid[i]);
        snprintf(sub, sizeof sub, "/%.2s/", hex);
        snprintf(rest, sizeof rest, "%s.debug", hex + 2);
        /* .build-id/xx/REST.debug is the debug file; .build-id/xx/REST, the binary, can
         * hold the symbols too (not stripped) */
        for (size_t l = 0; l < 2; l++)
            for (size_t i = 0; lists[l][i]; i++)
                if ((fd = try_debug(debuginfo_file_name, bid, bid_len, lists[l][i],
                                    "/.build-id", sub, rest)) >= 0 ||
                    (fd = try_debug(debuginfo_file_name, bid, bid_len, lists[l][i],
                                    "/.build-id", sub, hex + 2)) >= 0)
                    return fd;
    }
    if (!debuglink_file || !file_name || strchr(debuglink_file, '/'))
        return -1;
    char dir[4096];
    const char *slash = strrchr(file_name, '/');
    size_t dl = slash ? (size_t)(slash - file_name) : 0;
    if (dl >= sizeof dir)
        return -1;
    memcpy(dir, file_name, dl);
    dir[dl] = 0;
    if ((fd = try_debug(debuginfo_file_name, bid, bid_len, dir, "/", debuglink_file, "")) >= 0 ||
        (fd = try_debug(debuginfo_file_name, bid, bid_len, dir, "/.debug/", debuglink_file,
                        "")) >= 0)
        return fd;
    for (size_t l = 0; l < 2; l++)
        for (size_t i = 0; lists[l][i]; i++)
            if ((fd = try_debug(debuginfo_file_name, bid, bid_len, lists[l][i], dir, "/",
                                debuglink_file)) >= 0)
                return fd;
    return -1;
}

struct gmt_symbolizer *gmt_sym_new(const char *const *debug_dirs)
{
    elf_version(EV_CURRENT);
    struct gmt_symbolizer *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    size_t nd = 0, plen = sizeof "-:.debug:/usr/lib/debug";
    while (debug_dirs && debug_dirs[nd])
        plen += strlen(debug_dirs[nd++]) + 1;
    s->dirs = calloc(nd + 1, sizeof *s->dirs);
    s->debuginfo_path = malloc(plen);
    if (!s->dirs || !s->debuginfo_path)
        goto fail;
    strcpy(s->debuginfo_path, "-:.debug:/usr/lib/debug");
    for (size_t i = 0; i < nd; i++) {
        if (!(s->dirs[i] = strdup(debug_dirs[i])))
            goto fail;
        strcat(s->debuginfo_path, ":");
        strcat(s->debuginfo_path, debug_dirs[i]);
    }
    const char *nl = getenv("GPUMEMTRACE_NO_LOCAL_MODULES");
    s->no_local = nl && *nl && strcmp(nl, "0") != 0;
    s->cb.find_elf = dwfl_build_id_find_elf;
    s->cb.find_debuginfo = find_debuginfo;
    s->cb.debuginfo_path = &s->debuginfo_path;
    gmt_u64map_init(&s->cache);
    return s;
fail:
    gmt_sym_free(s);
    return NULL;
}

void gmt_sym_free(struct gmt_symbolizer *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->cache.cap; i++)
        if (s->cache.state && s->cache.state[i] == 1)
            free((void *)(uintptr_t)s->cache.vals[i]);
    gmt_u64map_free(&s->cache);
    for (size_t i = 0; i < s->nmods; i++) {
        if (s->mods[i].dwfl)
            dwfl_end(s->mods[i].dwfl);
        free(s->mods[i].path);
        free(s->mods[i].build_id);
    }
    free(s->mods);
    for (size_t i = 0; i < s->npy; i++) {
        free(s->py[i].qualname);
        free(s->py[i].file);
    }
    free(s->py);
    for (size_t i = 0; s->dirs && s->dirs[i]; i++)
        free(s->dirs[i]);
    free(s->dirs);
    free(s->debuginfo_path);
    free(s->trace_path);
    free(s->names_path);
    gmt_names_free(s->names);
    free(s);
}

int gmt_sym_add_module(struct gmt_symbolizer *s, uint32_t id, const char *path,
                       const uint8_t *build_id, size_t build_id_len, uint64_t bias,
                       uint64_t start, uint64_t end)
{
    if (!s || !path || end <= start || (build_id_len && !build_id))
        return -EINVAL;
    if (s->nmods == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        struct mod *m = realloc(s->mods, cap * sizeof *m);
        if (!m)
            return -ENOMEM;
        s->mods = m;
        s->cap = cap;
    }
    struct mod *m = &s->mods[s->nmods];
    memset(m, 0, sizeof *m);
    m->path = strdup(path);
    m->build_id = build_id_len ? malloc(build_id_len) : NULL;
    if (!m->path || (build_id_len && !m->build_id)) {
        free(m->path);
        free(m->build_id);
        return -ENOMEM;
    }
    if (build_id_len)
        memcpy(m->build_id, build_id, build_id_len);
    m->id = id;
    m->nm = -2;
    m->build_id_len = build_id_len;
    m->bias = bias;
    m->start = start;
    m->end = end;
    s->nmods++;
    return 0;
}

int gmt_sym_add_module_rec(struct gmt_symbolizer *s, const struct gmt_rec *rec)
{
    if (!rec || rec->type != GMT_REC_MODULE_LOAD || rec->size < sizeof(struct gmt_rec_module_load))
        return -EINVAL;
    const struct gmt_rec_module_load *ml = (const struct gmt_rec_module_load *)rec;
    const char *tail = (const char *)(ml + 1);
    size_t room = rec->size - sizeof *ml;
    if (ml->build_id_len > room || ml->path_len == 0 || ml->path_len > room - ml->build_id_len)
        return -EINVAL;
    const char *path = tail + ml->build_id_len;
    if (memchr(path, '\0', ml->path_len) == NULL)
        return -EINVAL;
    return gmt_sym_add_module(s, ml->module_id, path, (const uint8_t *)tail, ml->build_id_len,
                              ml->load_bias, ml->start, ml->end);
}

static struct mod *find_mod(const struct gmt_symbolizer *s, uint64_t addr)
{
    for (size_t i = s->nmods; i-- > 0;)
        if (addr >= s->mods[i].start && addr < s->mods[i].end)
            return &s->mods[i];
    return NULL;
}

long gmt_sym_module_at(const struct gmt_symbolizer *s, uint64_t addr)
{
    struct mod *m = find_mod(s, addr);
    return m ? (long)(m - s->mods) : -1;
}

const char *gmt_sym_module_of(const struct gmt_symbolizer *s, uint64_t ip, uint64_t *offset)
{
    struct mod *m = find_mod(s, ip);
    if (offset)
        *offset = m ? ip - m->bias : ip;
    return m ? m->path : NULL;
}

/* An fd on `file` when it is an ELF file with the build-id the trace recorded (any
 * ELF file when the trace recorded none), else -1; *other set when it is an ELF file
 * with another build-id. */
static int open_matching(const struct mod *m, const char *file, bool *other)
{
    int fd = gmt_open_input(file, 0, NULL, 0);
    if (fd < 0)
        return -1;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    bool ok = elf && elf_kind(elf) == ELF_K_ELF;
    if (ok && m->build_id_len) {
        const void *bits = NULL;
        ssize_t n = dwelf_elf_gnu_build_id(elf, &bits);
        ok = n > 0 && (size_t)n == m->build_id_len && memcmp(bits, m->build_id, (size_t)n) == 0;
        if (!ok && other)
            *other = true;
    }
    if (elf)
        elf_end(elf);
    if (!ok) {
        close(fd);
        return -1;
    }
    return fd;
}

static int try_candidate(const struct mod *m, const char *dir, const char *a, const char *b,
                         const char *c, bool *other)
{
    char buf[4096];
    int len = snprintf(buf, sizeof buf, "%s%s%s%s", dir, a, b, c);
    if (len < 0 || (size_t)len >= sizeof buf)
        return -1;
    return open_matching(m, buf, other);
}

/* The module's file: where the trace says, else below each debug directory by path,
 * by base name, and by build-id: the binary (.build-id/xx/rest), else its separate debug
 * file (.build-id/xx/rest.debug, which holds the symbols and the program headers the
 * addresses need), as gdb and perf lay them out. *other: a file was found with another
 * build-id than the trace's. */
static int locate(const struct gmt_symbolizer *s, const struct mod *m, bool *other)
{
    if (m->path[0] != '/')
        return -1; /* [vdso], [unknown]: nothing on disk */
    int fd = s->no_local ? -1 : open_matching(m, m->path, other);
    if (fd >= 0)
        return fd;
    const char *base = strrchr(m->path, '/') + 1;
    char hex[2 * 64 + 1] = "";
    for (size_t i = 0; i < m->build_id_len && i < 64; i++)
        snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
    for (size_t i = 0; s->dirs[i]; i++) {
        const char *d = s->dirs[i];
        if ((fd = try_candidate(m, d, m->path, "", "", other)) >= 0 ||
            (fd = try_candidate(m, d, "/", base, "", other)) >= 0)
            return fd;
        if (m->build_id_len >= 2) {
            char sub[8];
            snprintf(sub, sizeof sub, "/%.2s/", hex);
            if ((fd = try_candidate(m, d, "/.build-id", sub, hex + 2, NULL)) >= 0)
                return fd;
            char rest[2 * 64 + 8];
            snprintf(rest, sizeof rest, "%s.debug", hex + 2);
            if ((fd = try_candidate(m, d, "/.build-id", sub, rest, NULL)) >= 0)
                return fd;
        }
    }
    return -1;
}

static void open_mod(const struct gmt_symbolizer *s, struct mod *m)
{
    m->state = MOD_UNTRUSTED;
    m->why = WHY_OFFLINE;
    if (s->offline)
        return;
    bool other = false;
    int fd = locate(s, m, &other);
    m->why = other ? WHY_MISMATCH : WHY_MISSING;
    if (fd < 0)
        return;
    m->dwfl = dwfl_begin(&s->cb);
    if (!m->dwfl) {
        close(fd);
        return;
    }
    const char *base = strrchr(m->path, '/') + 1;
    dwfl_report_begin(m->dwfl);
    /* add_p_vaddr: base is the load bias, as the trace records it. fd is consumed. */
    m->dm = dwfl_report_elf(m->dwfl, base, m->path, fd, m->bias, true);
    dwfl_report_end(m->dwfl, NULL, NULL);
    void **ud = NULL;
    if (m->dm && dwfl_module_info(m->dm, &ud, NULL, NULL, NULL, NULL, NULL, NULL) && ud)
        *ud = (void *)s; /* find_debuginfo's userdata: the debug directories */
    if (m->dm) {
        m->state = MOD_OPEN;
        m->why = WHY_NONE;
    } else {
        close(fd);
    }
}

void gmt_sym_use_names(struct gmt_symbolizer *s, const char *trace_path)
{
    free(s->trace_path);
    free(s->names_path);
    s->names_path = NULL;
    s->names_tried = false;
    size_t n = strlen(trace_path) + sizeof GMT_NAMES_SUFFIX;
    if ((s->trace_path = strdup(trace_path)) && (s->names_path = malloc(n)))
        snprintf(s->names_path, n, "%s%s", trace_path, GMT_NAMES_SUFFIX);
}

/* m's module in the names that travel with the trace, read on first use: -1 none. */
static long names_mod(struct gmt_symbolizer *s, struct mod *m)
{
    if (m->nm != -2)
        return m->nm;
    m->nm = -1;
    if (!s->names_tried && s->names_path) {
        s->names_tried = true;
        char err[512];
        int r = gmt_names_load(&s->names, s->names_path, s->trace_path, err, sizeof err);
        if (r < 0 && r != -ENOENT)
            gmt_err("gpumemtrace: %s (native frames are named from the files here)", err);
    }
    if (s->names)
        m->nm = gmt_names_find_module(s->names, m->build_id, m->build_id_len, m->path);
    return m->nm;
}

bool gmt_sym_module_trusted(struct gmt_symbolizer *s, uint64_t ip)
{
    return find_mod(s, ip ? ip - 1 : 0) && !gmt_sym_unnamed_why(s, ip);
}

const char *gmt_sym_unnamed_why(struct gmt_symbolizer *s, uint64_t ip)
{
    struct mod *m = find_mod(s, ip ? ip - 1 : 0);
    if (!m || s->offline || m->path[0] != '/')
        return NULL;
    const char *host_why = NULL;
    long nm = names_mod(s, m);
    if (nm >= 0 && !(host_why = gmt_names_module_why(s->names, nm)))
        return NULL;
    if (m->state == MOD_UNOPENED)
        open_mod(s, m);
    if (m->state == MOD_OPEN)
        return NULL;
    if (host_why)
        return host_why;
    switch (m->why) {
    case WHY_MISMATCH:
        return "another build at its path (build-id differs)";
    case WHY_MISSING:
        return s->no_local ? "not found, GPUMEMTRACE_NO_LOCAL_MODULES" : "not found";
    default:
        return NULL;
    }
}

static const char *die_name(Dwarf_Die *die)
{
    Dwarf_Attribute a;
    const char *n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
    if (!n)
        n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
    if (!n)
        n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
    return n;
}

static void call_site(Dwarf_Die *die, const char **file, unsigned *line)
{
    Dwarf_Attribute a;
    Dwarf_Word w;
    Dwarf_Die cu;
    Dwarf_Files *files;
    size_t nfiles;
    *file = NULL;
    *line = 0;
    if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &w) == 0)
        *line = (unsigned)w;
    if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &w) == 0 &&
        dwarf_diecu(die, &cu, NULL, NULL) && dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 &&
        w < nfiles)
        *file = dwarf_filesrc(files, w, NULL, NULL);
}

#define INLINE_MAX 64

/* pc's frames as the names that travel with the trace hold them, NULL when they do not. */
static struct result *lookup_names(struct gmt_symbolizer *s, struct mod *m, uint64_t pc)
{
    long nm = names_mod(s, m);
    const struct gmt_names_frame *nf;
    size_t n = nm >= 0 ? gmt_names_frames(s->names, nm, pc - m->bias, &nf) : 0;
    if (!n)
        return NULL;
    struct result *r = calloc(1, sizeof *r + n * sizeof r->f[0]);
    if (!r)
        return NULL;
    r->n = n;
    for (size_t i = 0; i < n; i++)
        r->f[i] = (struct gmt_frame){.function = nf[i].function, .file = nf[i].file,
                                     .line = nf[i].line, .module = m->path,
                                     .offset = pc - m->bias, .inlined = nf[i].inlined};
    return r;
}

static struct result *lookup(struct gmt_symbolizer *s, uint64_t pc)
{
    struct mod *m = find_mod(s, pc);
    struct result *named = m && !s->offline ? lookup_names(s, m, pc) : NULL;
    if (named)
        return named;
    if (m && m->state == MOD_UNOPENED)
        open_mod(s, m);

    const char *sym = NULL;
    const char *src = NULL;
    unsigned src_line = 0;
    Dwarf_Die *scopes = NULL;
    Dwarf_Die chain[INLINE_MAX];
    int nchain = 0;
    if (m && m->state == MOD_OPEN) {
        GElf_Off off;
        GElf_Sym esym;
        sym = dwfl_module_addrinfo(m->dm, pc, &off, &esym, NULL, NULL, NULL);
        Dwfl_Line *l = dwfl_module_getsrc(m->dm, pc);
        int ln = 0;
        if (l && (src = dwfl_lineinfo(l, NULL, &ln, NULL, NULL, NULL)) != NULL)
            src_line = ln > 0 ? (unsigned)ln : 0;
        Dwarf_Addr dbias = 0;
        Dwarf_Die *cu = dwfl_module_addrdie(m->dm, pc, &dbias);
        int ns = cu ? dwarf_getscopes(cu, pc - dbias, &scopes) : 0;
        int inner = -1;
        for (int i = 0; i < ns && inner < 0; i++) {
            int tag = dwarf_tag(&scopes[i]);
            if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram)
                inner = i;
        }
        /* dwarf_getscopes continues past an inlined instance with the scopes of its
         * abstract definition; the functions it was inlined into are its parents in
         * the concrete tree, which dwarf_getscopes_die walks. */
        Dwarf_Die *parents = NULL;
        int np = inner >= 0 ? dwarf_getscopes_die(&scopes[inner], &parents) : 0;
        for (int i = 0; i < np && nchain < INLINE_MAX; i++) {
            int tag = dwarf_tag(&parents[i]);
            if (tag == DW_TAG_inlined_subroutine || tag == DW_TAG_subprogram)
                chain[nchain++] = parents[i];
            if (tag == DW_TAG_subprogram)
                break;
        }
        free(parents);
    }

    size_t n = nchain > 0 ? (size_t)nchain : 1;
    struct result *r = calloc(1, sizeof *r + n * sizeof r->f[0]);
    if (!r) {
        free(scopes);
        return NULL;
    }
    r->n = n;
    for (size_t i = 0; i < n; i++) {
        struct gmt_frame *f = &r->f[i];
        f->module = m ? m->path : NULL;
        f->offset = m ? pc - m->bias : pc;
        f->inlined = i + 1 < n;
        if (nchain > 0) {
            bool outermost = i + 1 == n;
            f->function = outermost && sym ? sym : die_name(&chain[i]);
            if (i == 0) {
                f->file = src;
                f->line = src_line;
            } else {
                call_site(&chain[i - 1], &f->file, &f->line);
            }
        } else {
            f->function = sym;
            f->file = src;
            f->line = src_line;
        }
    }
    free(scopes);
    return r;
}

int gmt_sym_resolve_pc(struct gmt_symbolizer *s, uint64_t pc, const struct gmt_frame **frames,
                       size_t *n)
{
    uint64_t *v = gmt_u64map_get(&s->cache, pc);
    struct result *r = v ? (struct result *)(uintptr_t)*v : NULL;
    if (!r) {
        if (!(r = lookup(s, pc)))
            return -ENOMEM;
        if (gmt_u64map_put(&s->cache, pc, (uint64_t)(uintptr_t)r) < 0) {
            free(r);
            return -ENOMEM;
        }
    }
    *frames = r->f;
    *n = r->n;
    return 0;
}

int gmt_sym_add_pycode(struct gmt_symbolizer *s, uint32_t id, const char *qualname,
                       const char *file, int32_t firstlineno)
{
    if (id == 0 || id >= (1u << 24))
        return -EINVAL;
    if (id >= s->npy) {
        size_t n = s->npy ? s->npy : 64;
        while (n <= id)
            n *= 2;
        struct pycode *p = realloc(s->py, n * sizeof *p);
        if (!p)
            return -ENOMEM;
        memset(p + s->npy, 0, (n - s->npy) * sizeof *p);
        s->py = p;
        s->npy = n;
    }
    struct pycode *c = &s->py[id];
    if (c->qualname)
        return 0;
    c->qualname = strdup(qualname ? qualname : "?");
    c->file = strdup(file ? file : "?");
    c->firstlineno = firstlineno;
    return c->qualname && c->file ? 0 : -ENOMEM;
}

/* A Python frame: one frame, its code's name and file and the frame's line; a code the
 * trace does not define shows as "[python code ID]". */
static struct result *lookup_python(struct gmt_symbolizer *s, uint64_t ip)
{
    struct result *r = calloc(1, sizeof *r + sizeof r->f[0]);
    if (!r)
        return NULL;
    uint32_t id = GMT_PYFRAME_CODE(ip);
    r->n = 1;
    r->f[0].python = true;
    r->f[0].line = GMT_PYFRAME_LINE(ip);
    if (id < s->npy && s->py[id].qualname) {
        r->f[0].function = s->py[id].qualname;
        r->f[0].file = s->py[id].file;
    } else {
        static const char unknown[] = "[python code]";
        r->f[0].function = unknown;
    }
    return r;
}

int gmt_sym_resolve(struct gmt_symbolizer *s, uint64_t ip, const struct gmt_frame **frames,
                    size_t *n)
{
    if (GMT_PYFRAME_IS(ip)) {
        uint64_t *v = gmt_u64map_get(&s->cache, ip);
        struct result *r = v ? (struct result *)(uintptr_t)*v : NULL;
        if (!r) {
            if (!(r = lookup_python(s, ip)))
                return -ENOMEM;
            if (gmt_u64map_put(&s->cache, ip, (uint64_t)(uintptr_t)r) < 0) {
                free(r);
                return -ENOMEM;
            }
        }
        *frames = r->f;
        *n = r->n;
        return 0;
    }
    return gmt_sym_resolve_pc(s, ip ? ip - 1 : 0, frames, n);
}

const char *gmt_frame_format(const struct gmt_frame *f, char *buf, size_t len)
{
    const char *mod = f->module ? strrchr(f->module, '/') : NULL;
    mod = mod ? mod + 1 : f->module;
    const char *inl = f->inlined ? " [inlined]" : "";
    if (f->function && f->file)
        snprintf(buf, len, "%s (%s:%u)%s", f->function, f->file, f->line, inl);
    else if (f->function && mod)
        snprintf(buf, len, "%s (%s+0x%llx)%s", f->function, mod, (unsigned long long)f->offset, inl);
    else if (f->function)
        snprintf(buf, len, "%s%s", f->function, inl);
    else if (mod)
        snprintf(buf, len, "%s+0x%llx", mod, (unsigned long long)f->offset);
    else
        snprintf(buf, len, "0x%llx", (unsigned long long)f->offset);
    /* Paths come from the trace, names from files on disk: neither may drive a terminal. */
    for (char *p = buf; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = '?';
    return buf;
}
