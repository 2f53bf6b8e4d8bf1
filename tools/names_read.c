/* names_read.c: a trace's native frame names read back from TRACE.names (zlib-packed tables), checked, for the symbolizer. */
#include "names_read.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "input.h"
#include "names_format.h"
#include "trace_format.h"

#define DIGEST_SPAN 65536           /* bytes of the trace the digest may cover */

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

int gmt_names_trace_identity(const char *path, uint64_t *digest, uint64_t *size, char *err,
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
    *digest = names_fnv1a(0xcbf29ce484222325ull, buf, span);
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

/* The header of the names file at path (its len bytes at file) into *h, checked against
 * the file and, given trace_path, against that trace: 0, or -EINVAL said in err. */
static int check_header(struct names_header *h, const uint8_t *file, size_t len,
                        const char *path, const char *trace_path, char *err, size_t errlen)
{
    if (len < sizeof *h)
        return bad(err, errlen, path, "shorter than its header");
    memcpy(h, file, sizeof *h);
    if (memcmp(h->magic, NAMES_MAGIC, 8))
        return bad(err, errlen, path, "no GMTNAMES magic");
    if (h->version_major != NAMES_MAJOR) {
        snprintf(err, errlen, "%s: names file version %u.%u; this gpumemtrace reads %u.x", path,
                 h->version_major, h->version_minor, NAMES_MAJOR);
        return -EINVAL;
    }
    if (h->header_size < sizeof *h || h->header_size > len ||
        h->stored_len != len - h->header_size || h->body_len > NAMES_MAX_BODY)
        return bad(err, errlen, path, "its header's sizes are not the file's");
    if (trace_path) {
        uint64_t digest, size;
        char e2[256];
        if (gmt_names_trace_identity(trace_path, &digest, &size, e2, sizeof e2) == 0 &&
            digest != h->trace_digest) {
            snprintf(err, errlen, "%s: made for another trace than %s: not used", path, trace_path);
            return -EINVAL;
        }
    }
    /* the tables' sizes add up to the body's, each count bounded by it first so that no
     * product overflows */
    uint64_t bl = h->body_len;
    if (h->n_modules > bl / sizeof(struct disk_module) ||
        h->n_addresses > bl / sizeof(struct disk_address) ||
        h->n_frames > bl / sizeof(struct disk_frame) || h->blob_len > bl ||
        h->n_modules * sizeof(struct disk_module) + h->n_addresses * sizeof(struct disk_address) +
                h->n_frames * sizeof(struct disk_frame) + h->blob_len != bl ||
        h->blob_len == 0)
        return bad(err, errlen, path, "its tables do not add up to its body");
    return 0;
}

/* n's tables made from its inflated body (n->body, as h lays it out), every string,
 * module and frame they name checked: 0, -EINVAL said in err, or -ENOMEM. */
static int read_tables(struct gmt_names *n, const struct names_header *h, const char *path,
                       char *err, size_t errlen)
{
    const uint8_t *p = n->body;
    const struct disk_module *dm = (const void *)p;
    const struct disk_address *da = (const void *)(p + h->n_modules * sizeof *dm);
    const struct disk_frame *df = (const void *)((const uint8_t *)da + h->n_addresses * sizeof *da);
    n->blob = (const char *)((const uint8_t *)df + h->n_frames * sizeof *df);
    if (n->blob[0] || n->blob[h->blob_len - 1])
        return bad(err, errlen, path, "its strings are not terminated");
    n->n_mods = h->n_modules;
    n->n_addrs = (size_t)h->n_addresses;
    n->n_frames = (size_t)h->n_frames;
    n->mods = calloc(n->n_mods ? n->n_mods : 1, sizeof *n->mods);
    n->addrs = calloc(n->n_addrs ? n->n_addrs : 1, sizeof *n->addrs);
    n->frames = calloc(n->n_frames ? n->n_frames : 1, sizeof *n->frames);
    if (!n->mods || !n->addrs || !n->frames)
        return -ENOMEM;
    for (size_t i = 0; i < n->n_mods; i++) {
        struct disk_module m;
        memcpy(&m, &dm[i], sizeof m);
        if (!str_ok(m.path, h->blob_len) || !m.path || !str_ok(m.why, h->blob_len) ||
            m.build_id > h->blob_len || m.build_id_len > h->blob_len - m.build_id)
            return bad(err, errlen, path, "a module names bytes outside its strings");
        n->mods[i] = (struct names_module){(const uint8_t *)n->blob + m.build_id, m.build_id_len,
                                           n->blob + m.path, m.why ? n->blob + m.why : NULL};
    }
    for (size_t i = 0; i < n->n_frames; i++) {
        struct disk_frame f;
        memcpy(&f, &df[i], sizeof f);
        if (!str_ok(f.function, h->blob_len) || !str_ok(f.file, h->blob_len))
            return bad(err, errlen, path, "a frame names bytes outside its strings");
        n->frames[i] = (struct gmt_names_frame){f.function ? n->blob + f.function : NULL,
                                                f.file ? n->blob + f.file : NULL, f.line,
                                                (f.flags & FRAME_INLINED) != 0};
    }
    for (size_t i = 0; i < n->n_addrs; i++) {
        struct disk_address a;
        memcpy(&a, &da[i], sizeof a);
        if (a.module >= n->n_mods || a.n == 0 || a.n > NAMES_MAX_FRAMES || a.first > n->n_frames ||
            a.n > n->n_frames - a.first)
            return bad(err, errlen, path, "an address names a module or frames it does not have");
        if (i && (a.module < n->addrs[i - 1].module ||
                  (a.module == n->addrs[i - 1].module && a.offset <= n->addrs[i - 1].offset)))
            return bad(err, errlen, path, "its addresses are not in order");
        n->addrs[i] = (struct names_address){a.offset, a.module, a.first, a.n};
    }
    return 0;
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
    r = check_header(&h, file, len, path, trace_path, err, errlen);
    if (r)
        goto out;
    n = calloc(1, sizeof *n);
    if (!n || !(n->body = malloc(h.body_len))) {
        r = -ENOMEM;
        goto out;
    }
    uLongf dl = (uLongf)h.body_len;
    if (uncompress(n->body, &dl, file + h.header_size, (uLong)h.stored_len) != Z_OK ||
        dl != h.body_len) {
        r = bad(err, errlen, path, "its tables do not inflate");
        goto out;
    }
    r = read_tables(n, &h, path, err, errlen);
    if (r)
        goto out;
    *out = n;
    n = NULL;
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
