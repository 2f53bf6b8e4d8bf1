/* names.c: a trace's native frame names, resolved on its host into TRACE.names (zlib-packed tables) and read back, checked, anywhere. */
#include "names.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "input.h"
#include "reader.h"
#include "report.h"
#include "symbolize.h"
#include "trace_format.h"
#include "u64map.h"
#include "util.h"

/*
 * The file (docs/names.md is its spec): a fixed header, then one zlib stream that
 * inflates to four tables, each entry little-endian and of a fixed size:
 *   modules[n_modules]      path, why (0: named), build_id, build_id_len
 *   addresses[n_addresses]  offset (u64), module, first frame, frames, reserved;
 *                           sorted by module then offset, no two alike
 *   frames[n_frames]        function, file, line, flags (1: inlined)
 *   blob[blob_len]          NUL-terminated strings and raw build-ids, named by their
 *                           offset; offset 0 is the empty string and means "none"
 * The header names the trace by a digest of its first bytes (the file header and its
 * PROCESS record: host, pid and start time), so names never apply to another trace.
 */

#define NAMES_MAGIC "GMTNAMES"
#define NAMES_MAJOR 1
#define NAMES_MINOR 0
#define NAMES_MAX_BODY (1ull << 30) /* bytes inflated: more is not a names file */
#define NAMES_MAX_FRAMES 64         /* per address: the symbolizer's inline limit */
#define DIGEST_SPAN 65536           /* bytes of the trace the digest may cover */

struct names_header {
    char magic[8];
    uint16_t version_major, version_minor;
    uint32_t header_size;      /* bytes, this struct */
    uint64_t trace_digest;     /* FNV-1a 64 of the trace's header and first record */
    uint64_t trace_size;       /* bytes of the trace file when it was named */
    uint64_t body_len;         /* bytes of the tables, inflated */
    uint64_t stored_len;       /* bytes of the zlib stream that follows this header */
    uint32_t n_modules;
    uint32_t reserved;
    uint64_t n_addresses, n_frames, blob_len;
};

struct disk_module {
    uint32_t path, why, build_id, build_id_len; /* blob offsets; why 0: named */
};

struct disk_address {
    uint64_t offset;           /* bytes from the module's load bias */
    uint32_t module, first, n, reserved;
};

struct disk_frame {
    uint32_t function, file, line, flags;
};
#define FRAME_INLINED 1u

struct names_module {
    const uint8_t *build_id;
    size_t build_id_len;
    const char *path, *why;
};

struct names_address {
    uint64_t offset;
    uint32_t module, first, n;
};

struct gmt_names {
    uint8_t *body;
    const char *blob;
    struct names_module *mods;
    size_t n_mods;
    struct names_address *addrs;
    size_t n_addrs;
    struct gmt_names_frame *frames;
    size_t n_frames;
};

/* ---- the trace's identity ---- */

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* The digest of the trace at path (its header and first record), and its size. */
static int trace_identity(const char *path, uint64_t *digest, uint64_t *size, char *err,
                          size_t errlen)
{
    int fd = gmt_open_input(path, 0, err, errlen);
    if (fd < 0)
        return -1;
    struct stat st;
    uint8_t *buf = malloc(DIGEST_SPAN);
    ssize_t got = 0, r;
    while (buf && got < DIGEST_SPAN && (r = read(fd, buf + got, DIGEST_SPAN - (size_t)got)) > 0)
        got += r;
    *size = fstat(fd, &st) == 0 ? (uint64_t)st.st_size : 0;
    close(fd);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    size_t span = (size_t)got;
    struct gmt_file_header h;
    if (span >= sizeof h) {
        memcpy(&h, buf, sizeof h);
        struct gmt_rec rec;
        if (h.header_size >= sizeof h && h.header_size + sizeof rec <= span) {
            memcpy(&rec, buf + h.header_size, sizeof rec);
            if (rec.size <= span - h.header_size)
                span = h.header_size + rec.size;
        }
    }
    *digest = fnv1a(0xcbf29ce484222325ull, buf, span);
    free(buf);
    return 0;
}

/* ---- reading ---- */

void gmt_names_free(struct gmt_names *n)
{
    if (!n)
        return;
    free(n->body);
    free(n->mods);
    free(n->addrs);
    free(n->frames);
    free(n);
}

/* The whole file at path into *buf (at most max bytes). 0, -ENOENT, -EINVAL, -ENOMEM. */
static int slurp(const char *path, uint64_t max, uint8_t **buf, size_t *len, char *err,
                 size_t errlen)
{
    int fd = gmt_open_input(path, 0, err, errlen);
    if (fd < 0)
        return errno == ENOENT ? -ENOENT : -EINVAL;
    struct stat st;
    if (fstat(fd, &st) || (uint64_t)st.st_size > max) {
        snprintf(err, errlen, "%s: larger than a names file can be", path);
        close(fd);
        return -EINVAL;
    }
    size_t n = (size_t)st.st_size, got = 0;
    uint8_t *b = malloc(n ? n : 1);
    ssize_t r = 0;
    while (b && got < n && (r = read(fd, b + got, n - got)) > 0)
        got += (size_t)r;
    close(fd);
    if (!b)
        return -ENOMEM;
    if (got != n) {
        snprintf(err, errlen, "%s: %s", path, r < 0 ? strerror(errno) : "shorter than it was");
        free(b);
        return -EINVAL;
    }
    *buf = b;
    *len = n;
    return 0;
}

static int bad(char *err, size_t errlen, const char *path, const char *what)
{
    snprintf(err, errlen, "%s: not a valid names file: %s", path, what);
    return -EINVAL;
}

static bool str_ok(uint64_t off, uint64_t blob_len)
{
    return off < blob_len;
}

int gmt_names_load(struct gmt_names **out, const char *path, const char *trace_path, char *err,
                   size_t errlen)
{
    *out = NULL;
    if (errlen)
        err[0] = 0;
    uint8_t *file;
    size_t len;
    int r = slurp(path, NAMES_MAX_BODY, &file, &len, err, errlen);
    if (r == -ENOENT && errlen)
        err[0] = 0;
    if (r)
        return r;
    struct names_header h;
    struct gmt_names *n = NULL;
    if (len < sizeof h) {
        r = bad(err, errlen, path, "shorter than its header");
        goto out;
    }
    memcpy(&h, file, sizeof h);
    if (memcmp(h.magic, NAMES_MAGIC, 8)) {
        r = bad(err, errlen, path, "no GMTNAMES magic");
        goto out;
    }
    if (h.version_major != NAMES_MAJOR) {
        snprintf(err, errlen, "%s: names file version %u.%u; this gpumemtrace reads %u.x", path,
                 h.version_major, h.version_minor, NAMES_MAJOR);
        r = -EINVAL;
        goto out;
    }
    if (h.header_size < sizeof h || h.header_size > len || h.stored_len != len - h.header_size ||
        h.body_len > NAMES_MAX_BODY) {
        r = bad(err, errlen, path, "its header's sizes are not the file's");
        goto out;
    }
    if (trace_path) {
        uint64_t digest, size;
        char e2[256];
        if (trace_identity(trace_path, &digest, &size, e2, sizeof e2) == 0 &&
            digest != h.trace_digest) {
            snprintf(err, errlen, "%s: made for another trace than %s: not used", path, trace_path);
            r = -EINVAL;
            goto out;
        }
    }
    /* the tables' sizes add up to the body's, each count bounded by it first so that no
     * product overflows */
    uint64_t bl = h.body_len;
    if (h.n_modules > bl / sizeof(struct disk_module) || h.n_addresses > bl / sizeof(struct disk_address) ||
        h.n_frames > bl / sizeof(struct disk_frame) || h.blob_len > bl ||
        h.n_modules * sizeof(struct disk_module) + h.n_addresses * sizeof(struct disk_address) +
                h.n_frames * sizeof(struct disk_frame) + h.blob_len != bl ||
        h.blob_len == 0) {
        r = bad(err, errlen, path, "its tables do not add up to its body");
        goto out;
    }
    n = calloc(1, sizeof *n);
    if (!n || !(n->body = malloc(bl))) {
        r = -ENOMEM;
        goto out;
    }
    uLongf dl = (uLongf)bl;
    if (uncompress(n->body, &dl, file + h.header_size, (uLong)h.stored_len) != Z_OK || dl != bl) {
        r = bad(err, errlen, path, "its tables do not inflate");
        goto out;
    }
    const uint8_t *p = n->body;
    const struct disk_module *dm = (const void *)p;
    const struct disk_address *da = (const void *)(p + h.n_modules * sizeof *dm);
    const struct disk_frame *df = (const void *)((const uint8_t *)da + h.n_addresses * sizeof *da);
    n->blob = (const char *)((const uint8_t *)df + h.n_frames * sizeof *df);
    if (n->blob[0] || n->blob[h.blob_len - 1]) {
        r = bad(err, errlen, path, "its strings are not terminated");
        goto out;
    }
    n->n_mods = h.n_modules;
    n->n_addrs = (size_t)h.n_addresses;
    n->n_frames = (size_t)h.n_frames;
    n->mods = calloc(n->n_mods ? n->n_mods : 1, sizeof *n->mods);
    n->addrs = calloc(n->n_addrs ? n->n_addrs : 1, sizeof *n->addrs);
    n->frames = calloc(n->n_frames ? n->n_frames : 1, sizeof *n->frames);
    if (!n->mods || !n->addrs || !n->frames) {
        r = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n->n_mods; i++) {
        struct disk_module m;
        memcpy(&m, &dm[i], sizeof m);
        if (!str_ok(m.path, h.blob_len) || !m.path || !str_ok(m.why, h.blob_len) ||
            m.build_id > h.blob_len || m.build_id_len > h.blob_len - m.build_id) {
            r = bad(err, errlen, path, "a module names bytes outside its strings");
            goto out;
        }
        n->mods[i] = (struct names_module){(const uint8_t *)n->blob + m.build_id, m.build_id_len,
                                           n->blob + m.path, m.why ? n->blob + m.why : NULL};
    }
    for (size_t i = 0; i < n->n_frames; i++) {
        struct disk_frame f;
        memcpy(&f, &df[i], sizeof f);
        if (!str_ok(f.function, h.blob_len) || !str_ok(f.file, h.blob_len)) {
            r = bad(err, errlen, path, "a frame names bytes outside its strings");
            goto out;
        }
        n->frames[i] = (struct gmt_names_frame){f.function ? n->blob + f.function : NULL,
                                                f.file ? n->blob + f.file : NULL, f.line,
                                                (f.flags & FRAME_INLINED) != 0};
    }
    for (size_t i = 0; i < n->n_addrs; i++) {
        struct disk_address a;
        memcpy(&a, &da[i], sizeof a);
        if (a.module >= n->n_mods || a.n == 0 || a.n > NAMES_MAX_FRAMES || a.first > n->n_frames ||
            a.n > n->n_frames - a.first) {
            r = bad(err, errlen, path, "an address names a module or frames it does not have");
            goto out;
        }
        if (i && (a.module < n->addrs[i - 1].module ||
                  (a.module == n->addrs[i - 1].module && a.offset <= n->addrs[i - 1].offset))) {
            r = bad(err, errlen, path, "its addresses are not in order");
            goto out;
        }
        n->addrs[i] = (struct names_address){a.offset, a.module, a.first, a.n};
    }
    *out = n;
    n = NULL;
    r = 0;
out:
    if (r == -ENOMEM)
        snprintf(err, errlen, "%s: out of memory", path);
    gmt_names_free(n);
    free(file);
    return r;
}

long gmt_names_find_module(const struct gmt_names *n, const uint8_t *build_id, size_t build_id_len,
                           const char *path)
{
    for (size_t i = 0; n && i < n->n_mods; i++) {
        const struct names_module *m = &n->mods[i];
        if (build_id_len ? m->build_id_len == build_id_len &&
                               !memcmp(m->build_id, build_id, build_id_len)
                         : !m->build_id_len && !strcmp(m->path, path))
            return (long)i;
    }
    return -1;
}

const char *gmt_names_module_why(const struct gmt_names *n, long m)
{
    return m >= 0 && (size_t)m < n->n_mods ? n->mods[m].why : NULL;
}

size_t gmt_names_frames(const struct gmt_names *n, long m, uint64_t offset,
                        const struct gmt_names_frame **out)
{
    size_t lo = 0, hi = n->n_addrs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct names_address *a = &n->addrs[mid];
        if (a->module < (uint32_t)m || (a->module == (uint32_t)m && a->offset < offset))
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == n->n_addrs || n->addrs[lo].module != (uint32_t)m || n->addrs[lo].offset != offset)
        return 0;
    *out = &n->frames[n->addrs[lo].first];
    return n->addrs[lo].n;
}

/* ---- writing ---- */

struct buf {
    uint8_t *p;
    size_t len, cap;
    bool oom;
};

static void put(struct buf *b, const void *d, size_t n)
{
    if (b->oom || !n)
        return;
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 4096;
        while (nc < b->len + n)
            nc *= 2;
        uint8_t *p = realloc(b->p, nc);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = nc;
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
}

/* Strings (and raw build-ids) stored once each, by a 64-bit digest (a digest shared by
 * two of them only stores the second twice), each followed by a NUL. */
struct strtab {
    struct buf blob;
    struct gmt_u64map at;      /* digest -> offset */
};

static uint32_t str_add(struct strtab *t, const void *s, size_t n, bool nul)
{
    if (!s)
        return 0;
    uint64_t d = fnv1a(nul ? 0x84222325cbf29ce4ull : 0x1b3ull, s, n);
    uint64_t *v = gmt_u64map_get(&t->at, d);
    if (v && (size_t)*v + n <= t->blob.len && !memcmp(t->blob.p + *v, s, n) &&
        (!nul || t->blob.p[*v + n] == 0))
        return (uint32_t)*v;
    uint32_t off = (uint32_t)t->blob.len;
    put(&t->blob, s, n);
    put(&t->blob, "", 1); /* after raw bytes too: the blob always ends with a NUL */
    if (!v && gmt_u64map_put(&t->at, d, off))
        t->blob.oom = true;
    return off;
}

static uint32_t str_addz(struct strtab *t, const char *s)
{
    return s ? str_add(t, s, strlen(s), true) : 0;
}

/* One trace module as the writer sees it: its module in the names file. */
struct wmod {
    const uint8_t *bid;
    size_t bid_len;
    char *path;
    uint8_t *bid_copy;
    long nm;                   /* index into the names' modules */
};

struct waddr {
    uint64_t offset;
    uint32_t module, first, n;
};

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int cmp_waddr(const void *a, const void *b)
{
    const struct waddr *x = a, *y = b;
    if (x->module != y->module)
        return x->module < y->module ? -1 : 1;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* What the writer gathers from the trace: its modules, in the symbolizer's order, and the
 * distinct native addresses of its stacks. */
struct gather {
    struct gmt_symbolizer *sym;
    struct wmod *mods;
    size_t n_mods, cap_mods;
    struct gmt_u64map ips;
};

static int gather(struct gather *g, const char *trace, char *err, size_t errlen)
{
    struct gmt_reader *r;
    if (gmt_reader_open(&r, trace, err, errlen))
        return -1;
    struct gmt_event ev[256];
    int rc = 1;
    while (rc == 1) {
        size_t got = gmt_reader_next_batch(r, ev, 256, &rc, err, errlen);
        for (size_t i = 0; i < got; i++) {
            const struct gmt_rec *h = ev[i].rec;
            if (h->type == GMT_REC_MODULE_LOAD) {
                if (gmt_sym_add_module_rec(g->sym, h))
                    continue; /* malformed, or out of memory: the symbolizer lacks it too */
                const struct gmt_rec_module_load *ml = (const void *)h;
                struct wmod *m = gmt_array_push((void **)&g->mods, &g->n_mods, &g->cap_mods,
                                                sizeof *m);
                if (!m)
                    goto nomem;
                memset(m, 0, sizeof *m);
                m->nm = -1;
                m->bid_len = ml->build_id_len;
                m->path = strdup(gmt_module_path(ml));
                m->bid_copy = malloc(m->bid_len ? m->bid_len : 1);
                if (!m->path || !m->bid_copy)
                    goto nomem;
                memcpy(m->bid_copy, gmt_module_build_id(ml), m->bid_len);
                m->bid = m->bid_copy;
            } else if (h->type == GMT_REC_STACK) {
                const struct gmt_rec_stack *st = (const void *)h;
                if (st->depth > (h->size - sizeof *st) / sizeof st->ip[0])
                    continue;
                for (uint32_t k = 0; k < st->depth; k++) {
                    uint64_t ip;
                    memcpy(&ip, &st->ip[k], sizeof ip);
                    if (ip && !GMT_PYFRAME_IS(ip) && !gmt_u64map_get(&g->ips, ip) &&
                        gmt_u64map_put_new(&g->ips, ip, 1))
                        goto nomem;
                }
            }
        }
    }
    gmt_reader_close(r);
    return rc < 0 ? -1 : 0;
nomem:
    gmt_reader_close(r);
    snprintf(err, errlen, "%s: out of memory", trace);
    return -1;
}

static void gather_free(struct gather *g)
{
    for (size_t i = 0; i < g->n_mods; i++) {
        free(g->mods[i].path);
        free(g->mods[i].bid_copy);
    }
    free(g->mods);
    gmt_u64map_free(&g->ips);
    gmt_sym_free(g->sym);
}

/* The names' module for trace module i: one per build-id (per path without one). */
static long names_module_of(struct gather *g, size_t i, struct buf *mods, struct strtab *st,
                            size_t *n_mods, const char *why, bool *created)
{
    struct wmod *m = &g->mods[i];
    *created = false;
    if (m->nm >= 0)
        return m->nm;
    for (size_t k = 0; k < g->n_mods; k++) {
        struct wmod *o = &g->mods[k];
        if (k != i && o->nm >= 0 &&
            (m->bid_len ? o->bid_len == m->bid_len && !memcmp(o->bid, m->bid, m->bid_len)
                        : !o->bid_len && !strcmp(o->path, m->path)))
            return m->nm = o->nm;
    }
    struct disk_module d = {str_addz(st, m->path), str_addz(st, why), 0, (uint32_t)m->bid_len};
    d.build_id = m->bid_len ? str_add(st, m->bid, m->bid_len, false) : 0;
    put(mods, &d, sizeof d);
    *created = true;
    return m->nm = (long)(*n_mods)++;
}

static void list_unnamed(struct gmt_names_made *made, const char *path, const char *why)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t at = strlen(made->unnamed_list);
    if (at < sizeof made->unnamed_list)
        snprintf(made->unnamed_list + at, sizeof made->unnamed_list - at, "%s%s (%s)",
                 at ? "; " : "", base, why);
}

/* Writes the names file: the header and the deflated tables, to a temporary file
 * renamed over `path` once whole. */
static int write_file(const char *path, const char *trace, struct names_header *h,
                      const struct buf *body, char *err, size_t errlen)
{
    uLongf zl = compressBound((uLong)body->len);
    uint8_t *z = malloc(zl);
    if (!z) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    if (compress2(z, &zl, body->p, (uLong)body->len, 6) != Z_OK) {
        free(z);
        snprintf(err, errlen, "%s: cannot compress its tables", path);
        return -1;
    }
    h->stored_len = zl;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%.4096s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    /* who may read the trace may read its names (they name its source files), no more */
    struct stat st;
    if (f && !stat(trace, &st))
        fchmod(fileno(f), st.st_mode & 0666);
    int ok = f && fwrite(h, sizeof *h, 1, f) == 1 && fwrite(z, 1, zl, f) == zl;
    ok = f && !fclose(f) && ok;
    free(z);
    if (!ok || rename(tmp, path)) {
        snprintf(err, errlen, "cannot write %s: %s", path, strerror(errno ? errno : EIO));
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Whether the names file beside the trace was made for it at its present size. */
static bool names_fresh(const char *names, uint64_t digest, uint64_t size, uint64_t *bytes)
{
    int fd = gmt_open_input(names, 0, NULL, 0);
    if (fd < 0)
        return false;
    struct names_header h;
    struct stat st;
    bool ok = read(fd, &h, sizeof h) == (ssize_t)sizeof h && !fstat(fd, &st) &&
              !memcmp(h.magic, NAMES_MAGIC, 8) && h.version_major == NAMES_MAJOR &&
              h.version_minor == NAMES_MINOR && h.trace_digest == digest && h.trace_size == size;
    if (ok)
        *bytes = (uint64_t)st.st_size;
    close(fd);
    return ok;
}

int gmt_names_make(const char *trace, const char *const *debug_dirs, bool force,
                   struct gmt_names_made *made, char *err, size_t errlen)
{
    memset(made, 0, sizeof *made);
    uint64_t digest, size;
    if (trace_identity(trace, &digest, &size, err, errlen))
        return -1;
    made->trace_bytes = size;
    char names[4096];
    if (snprintf(names, sizeof names, "%s%s", trace, GMT_NAMES_SUFFIX) >= (int)sizeof names) {
        snprintf(err, errlen, "%s: path too long", trace);
        return -1;
    }
    if (!force && names_fresh(names, digest, size, &made->bytes)) {
        made->fresh = true;
        return 0;
    }
    struct gather g = {0};
    gmt_u64map_init(&g.ips);
    struct strtab st = {0};
    gmt_u64map_init(&st.at);
    struct buf mods = {0}, frames = {0}, body = {0};
    struct waddr *addrs = NULL;
    uint64_t *ips = NULL;
    int rc = -1;
    size_t n_mods = 0, n_addrs = 0, n_frames = 0;
    if (!(g.sym = gmt_sym_new(debug_dirs)))
        goto nomem;
    if (gather(&g, trace, err, errlen))
        goto done;
    put(&st.blob, "", 1);
    size_t n_ips = 0;
    ips = malloc((g.ips.used ? g.ips.used : 1) * sizeof *ips);
    addrs = malloc((g.ips.used ? g.ips.used : 1) * sizeof *addrs);
    if (!ips || !addrs)
        goto nomem;
    for (size_t i = 0; i < g.ips.cap; i++)
        if (g.ips.state[i] == 1)
            ips[n_ips++] = g.ips.keys[i];
    gmt_sort(ips, n_ips, sizeof *ips, cmp_u64);
    made->addresses = 0;
    for (size_t i = 0; i < n_ips; i++) {
        uint64_t pc = ips[i] - 1; /* what gmt_sym_resolve looks up for a return address */
        long mi = gmt_sym_module_at(g.sym, pc);
        if (mi < 0 || (size_t)mi >= g.n_mods || g.mods[mi].path[0] != '/')
            continue; /* no module, or none on disk ([vdso]): shown the same anywhere */
        const char *why = gmt_sym_unnamed_why(g.sym, ips[i]);
        bool created;
        long nm = names_module_of(&g, (size_t)mi, &mods, &st, &n_mods, why, &created);
        if (created) {
            made->modules++;
            if (why) {
                made->unnamed++;
                list_unnamed(made, g.mods[mi].path, why);
            }
        }
        if (why)
            continue;
        const struct gmt_frame *fr;
        size_t nf;
        if (gmt_sym_resolve_pc(g.sym, pc, &fr, &nf))
            goto nomem;
        if (nf > NAMES_MAX_FRAMES)
            nf = NAMES_MAX_FRAMES;
        addrs[n_addrs++] = (struct waddr){fr[0].offset, (uint32_t)nm, (uint32_t)n_frames,
                                          (uint32_t)nf};
        for (size_t k = 0; k < nf; k++) {
            struct disk_frame d = {str_addz(&st, fr[k].function), str_addz(&st, fr[k].file),
                                   fr[k].line, fr[k].inlined ? FRAME_INLINED : 0};
            put(&frames, &d, sizeof d);
        }
        n_frames += nf;
    }
    /* one entry per module and offset: a module loaded twice maps the same code twice */
    gmt_sort(addrs, n_addrs, sizeof *addrs, cmp_waddr);
    size_t k = 0;
    for (size_t i = 0; i < n_addrs; i++)
        if (!k || cmp_waddr(&addrs[k - 1], &addrs[i]))
            addrs[k++] = addrs[i];
    n_addrs = k;
    if (mods.oom || frames.oom || st.blob.oom || st.blob.len > UINT32_MAX)
        goto nomem;
    put(&body, mods.p, mods.len);
    for (size_t i = 0; i < n_addrs; i++) {
        struct disk_address d = {addrs[i].offset, addrs[i].module, addrs[i].first, addrs[i].n, 0};
        put(&body, &d, sizeof d);
    }
    put(&body, frames.p, frames.len);
    put(&body, st.blob.p, st.blob.len);
    if (body.oom)
        goto nomem;
    struct names_header h = {.version_major = NAMES_MAJOR, .version_minor = NAMES_MINOR,
                             .header_size = sizeof h, .trace_digest = digest, .trace_size = size,
                             .body_len = body.len, .n_modules = (uint32_t)n_mods,
                             .n_addresses = n_addrs, .n_frames = n_frames,
                             .blob_len = st.blob.len};
    memcpy(h.magic, NAMES_MAGIC, 8);
    if (write_file(names, trace, &h, &body, err, errlen))
        goto done;
    made->addresses = n_addrs;
    made->frames = n_frames;
    made->bytes = sizeof h + h.stored_len;
    rc = 0;
    goto done;
nomem:
    snprintf(err, errlen, "%s: out of memory", trace);
done:
    free(ips);
    free(addrs);
    free(mods.p);
    free(frames.p);
    free(body.p);
    free(st.blob.p);
    gmt_u64map_free(&st.at);
    gather_free(&g);
    return rc;
}

/* ---- what could not be named ---- */

#define UNNAMED_SHOWN 16

size_t gmt_names_unnamed(struct gmt_analysis *a, struct gmt_unnamed *out, size_t max)
{
    const struct gmt_trace *t = &a->t;
    if (!a->sym || (a->opts && a->opts->no_symbols) || !t->n_modules)
        return 0;
    /* one verdict per module, by the index the symbolizer gives the module of an address
     * (its modules are the trace's, in the same order) */
    const char **why = calloc(t->n_modules, sizeof *why);
    uint8_t *seen = calloc(t->n_modules, 1);
    size_t n = 0;
    for (size_t s = 1; why && seen && s < t->n_stacks; s++) {
        const struct gmt_stack *st = &t->stacks[s];
        for (uint32_t i = 0; st->ip && i < st->depth; i++) {
            uint64_t ip = st->ip[i];
            if (!ip || GMT_PYFRAME_IS(ip))
                continue;
            long mi = gmt_sym_module_at(a->sym, ip - 1);
            if (mi < 0 || (size_t)mi >= t->n_modules || seen[mi])
                continue;
            seen[mi] = 1;
            if ((why[mi] = gmt_sym_unnamed_why(a->sym, ip)))
                n++;
        }
    }
    size_t k = 0;
    for (size_t i = 0; why && i < t->n_modules && k < max; i++)
        if (why[i])
            out[k++] = (struct gmt_unnamed){t->modules[i].path, why[i]};
    free(why);
    free(seen);
    return n;
}

void gmt_names_text_line(FILE *out, const struct gmt_analysis *a)
{
    struct gmt_unnamed u[UNNAMED_SHOWN];
    size_t n = gmt_names_unnamed((struct gmt_analysis *)a, u, UNNAMED_SHOWN);
    if (!n)
        return;
    fprintf(out, "  names     %zu module%s not named (shown as module+offset):", n, n > 1 ? "s" : "");
    for (size_t i = 0; i < n && i < UNNAMED_SHOWN; i++) {
        const char *b = strrchr(u[i].path, '/');
        b = b ? b + 1 : u[i].path;
        fprintf(out, "%s ", i ? ";" : "");
        gmt_fput_safe(out, b, strlen(b));
        fprintf(out, ": %s", u[i].why ? u[i].why : "?");
    }
    if (n > UNNAMED_SHOWN)
        fprintf(out, "; and %zu more", n - UNNAMED_SHOWN);
    fputc('\n', out);
}

void gmt_names_json(FILE *out, const struct gmt_analysis *a)
{
    struct gmt_unnamed u[256];
    size_t n = gmt_names_unnamed((struct gmt_analysis *)a, u, 256);
    fprintf(out, ", \"unnamed_modules\": [");
    for (size_t i = 0; i < n && i < 256; i++) {
        fprintf(out, "%s{\"module\": ", i ? ", " : "");
        gmt_fput_json_string(out, u[i].path);
        fprintf(out, ", \"why\": ");
        gmt_fput_json_string(out, u[i].why ? u[i].why : "");
        fputc('}', out);
    }
    fputc(']', out);
}
