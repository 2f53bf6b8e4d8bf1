/* pack.c: a job's traces and names as one POSIX tar: written member by member, read through an index of its headers. */
#include "pack.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "names_read.h"
#include "paths.h"
#include "util.h"

/*
 * A plain tar, so that `tar xf job.gmtpack` gives the directory back and a tar someone
 * made of a job's directory reads as a pack: 512-byte ustar headers, a pax extended
 * header ('x') before a member whose path or size ustar cannot hold, data padded to 512
 * bytes, two zero blocks at the end. The reader indexes the headers once per file (the
 * last pack read stays indexed: every command opens each member at least twice) and
 * takes GNU long names ('L') and base-256 sizes too; other member types are skipped.
 */

#define BLOCK 512
#define MAX_MEMBERS (1u << 20)
#define MAX_PAX (1u << 20)      /* bytes of one pax header: more is not ours to read */

struct member {
    char *name;
    uint64_t offset, size;     /* of its data in the file */
};

struct index {
    char *path;
    dev_t dev;
    ino_t ino;
    off_t size;
    struct timespec mtime;
    struct member *m;
    size_t n;
};

static struct index cached;

static void index_free(struct index *x)
{
    for (size_t i = 0; i < x->n; i++)
        free(x->m[i].name);
    free(x->m);
    free(x->path);
    memset(x, 0, sizeof *x);
}

static uint64_t octal(const char *p, size_t n, bool *ok)
{
    if ((unsigned char)p[0] & 0x80) { /* base-256, GNU's for sizes past 8 GiB */
        uint64_t v = (unsigned char)p[0] & 0x7f;
        for (size_t i = 1; i < n; i++) {
            if (v >> 56)
                *ok = false;
            v = v << 8 | (unsigned char)p[i];
        }
        return v;
    }
    uint64_t v = 0;
    size_t i = 0;
    while (i < n && p[i] == ' ')
        i++;
    for (; i < n && p[i] >= '0' && p[i] <= '7'; i++) {
        if (v >> 61)
            *ok = false;
        v = v * 8 + (uint64_t)(p[i] - '0');
    }
    if (i < n && p[i] && p[i] != ' ')
        *ok = false;
    return v;
}

static bool header_ok(const unsigned char *h)
{
    if (memcmp(h + 257, "ustar", 5))
        return false;
    unsigned sum = 0;
    for (int i = 0; i < BLOCK; i++)
        sum += i >= 148 && i < 156 ? ' ' : h[i];
    bool ok = true;
    uint64_t want = octal((const char *)h + 148, 8, &ok);
    return ok && want == sum;
}

/* A file pack.c reads, a pack or a file to pack, as the CLI opens what it reads: a
 * regular file, or a member of a pack (a pack packed in another reads as a pack). */
static int open_file(const char *path, char *err, size_t errlen)
{
    bool fifo;
    return gmt_open_file(path, 0, gmt_pack_open_member, err, errlen, &fifo);
}

bool gmt_pack_is(const char *path)
{
    int fd = open_file(path, NULL, 0);
    if (fd < 0)
        return false;
    unsigned char h[BLOCK];
    bool is = pread(fd, h, sizeof h, 0) == (ssize_t)sizeof h && header_ok(h);
    close(fd);
    return is;
}

static bool all_zero(const unsigned char *h)
{
    for (int i = 0; i < BLOCK; i++)
        if (h[i])
            return false;
    return true;
}

/* A pax header's "LEN key=value\n" records: path and size, when given. */
static void pax_parse(char *d, size_t n, char **path, uint64_t *size, bool *has_size)
{
    size_t at = 0;
    while (at < n) {
        char *end;
        unsigned long len = strtoul(d + at, &end, 10);
        if (end == d + at || *end != ' ' || len == 0 || len > n - at)
            return;
        char *rec = end + 1, *stop = d + at + len - 1; /* the record's '\n' */
        if (*stop != '\n')
            return;
        *stop = 0;
        if (!strncmp(rec, "path=", 5)) {
            free(*path);
            *path = strdup(rec + 5);
        } else if (!strncmp(rec, "size=", 5)) {
            char *e2;
            errno = 0;
            unsigned long long v = strtoull(rec + 5, &e2, 10);
            if (!errno && *e2 == 0) {
                *size = v;
                *has_size = true;
            }
        }
        at += len;
    }
}

static int cmp_member(const void *a, const void *b)
{
    return strcmp(((const struct member *)a)->name, ((const struct member *)b)->name);
}

/* The pax ('x') or GNU long-name ('L') header at `off`, its `size` bytes at `data`: the
 * path and size of the next member. 0, -ENOMEM, -EINVAL (err). */
static int read_extended(int fd, uint64_t off, uint64_t data, uint64_t size, char type,
                         const char *path, char **next_name, uint64_t *next_size, bool *has_size,
                         char *err, size_t errlen)
{
    if (size > MAX_PAX) {
        snprintf(err, errlen, "%s: offset %llu: an extended header of %llu bytes", path,
                 (unsigned long long)off, (unsigned long long)size);
        return -EINVAL;
    }
    char *d = malloc((size_t)size + 1);
    if (!d)
        return -ENOMEM;
    if (pread(fd, d, (size_t)size, (off_t)data) != (ssize_t)size) {
        free(d);
        snprintf(err, errlen, "%s: offset %llu: cannot read", path, (unsigned long long)data);
        return -EINVAL;
    }
    d[size] = 0;
    if (type == 'x') {
        pax_parse(d, (size_t)size, next_name, next_size, has_size);
        free(d);
    } else {
        free(*next_name);
        *next_name = d;
    }
    return 0;
}

/* A regular file's member, named by the extended header before it or by its own header
 * h (prefix/name), without a leading "./". 0 or -ENOMEM. */
static int add_member(struct index *x, size_t *cap, const unsigned char *h, const char *next_name,
                      uint64_t data, uint64_t size)
{
    char name[BLOCK];
    if (!next_name) {
        const char *pre = (const char *)h + 345, *nm = (const char *)h;
        size_t pl = strnlen(pre, 155), nl = strnlen(nm, 100);
        snprintf(name, sizeof name, "%.*s%s%.*s", (int)pl, pre, pl ? "/" : "", (int)nl, nm);
    }
    const char *n = next_name ? next_name : name;
    while (n[0] == '.' && n[1] == '/')
        n += 2;
    struct member *m = gmt_array_push((void **)&x->m, &x->n, cap, sizeof *m);
    if (!m || !(m->name = strdup(n))) {
        if (m)
            x->n--;
        return -ENOMEM;
    }
    m->offset = data;
    m->size = size;
    return 0;
}

/* The members of the pack open on fd (size bytes), into x. 0, -ENOMEM, -EINVAL (err). */
static int index_read(int fd, uint64_t fsize, const char *path, struct index *x, char *err,
                      size_t errlen)
{
    unsigned char h[BLOCK];
    uint64_t off = 0;
    size_t cap = 0;
    char *next_name = NULL;
    uint64_t next_size = 0;
    bool has_size = false;
    int r = 0;
    for (;;) {
        if (off + BLOCK > fsize || pread(fd, h, BLOCK, (off_t)off) != BLOCK) {
            snprintf(err, errlen, "%s: offset %llu: the pack ends without its end blocks: cut?",
                     path, (unsigned long long)off);
            r = -EINVAL;
            break;
        }
        if (all_zero(h))
            break;
        bool ok = header_ok(h);
        uint64_t size = octal((const char *)h + 124, 12, &ok);
        if (!ok) {
            snprintf(err, errlen, "%s: offset %llu: not a tar header", path, (unsigned long long)off);
            r = -EINVAL;
            break;
        }
        if (has_size)
            size = next_size;
        uint64_t data = off + BLOCK;
        if (size > fsize - data) {
            snprintf(err, errlen, "%s: offset %llu: a member of %llu bytes runs past the pack's "
                     "end", path, (unsigned long long)off, (unsigned long long)size);
            r = -EINVAL;
            break;
        }
        char type = (char)h[156];
        if (type == 'x' || type == 'L') {
            r = read_extended(fd, off, data, size, type, path, &next_name, &next_size, &has_size,
                              err, errlen);
            if (r)
                break;
        } else {
            if ((type == '0' || type == 0) && x->n < MAX_MEMBERS &&
                (r = add_member(x, &cap, h, next_name, data, size)) != 0)
                break;
            free(next_name);
            next_name = NULL;
            has_size = false;
        }
        off = data + (size + BLOCK - 1) / BLOCK * BLOCK;
    }
    free(next_name);
    if (!r && x->n)
        gmt_sort(x->m, x->n, sizeof *x->m, cmp_member);
    if (r == -ENOMEM)
        snprintf(err, errlen, "%s: out of memory", path);
    return r;
}

/* The index of the pack at path: the cached one when the file is unchanged. */
static const struct index *index_of(const char *path, char *err, size_t errlen)
{
    int fd = open_file(path, err, errlen);
    if (fd < 0)
        return NULL;
    struct stat st;
    if (fstat(fd, &st)) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        close(fd);
        return NULL;
    }
    if (cached.path && !strcmp(cached.path, path) && cached.dev == st.st_dev &&
        cached.ino == st.st_ino && cached.size == st.st_size &&
        cached.mtime.tv_sec == st.st_mtim.tv_sec && cached.mtime.tv_nsec == st.st_mtim.tv_nsec) {
        close(fd);
        return &cached;
    }
    index_free(&cached);
    struct index x = {.dev = st.st_dev, .ino = st.st_ino, .size = st.st_size, .mtime = st.st_mtim};
    int r = index_read(fd, (uint64_t)st.st_size, path, &x, err, errlen);
    close(fd);
    if (r || !(x.path = strdup(path))) {
        if (!r)
            snprintf(err, errlen, "%s: out of memory", path);
        index_free(&x);
        return NULL;
    }
    cached = x;
    return &cached;
}

int gmt_pack_list(const char *path, char ***out, size_t *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    const struct index *x = index_of(path, err, errlen);
    if (!x)
        return -EINVAL;
    struct gmt_vec v = GMT_VEC_INIT(char *);
    for (size_t i = 0; i < x->n; i++) {
        size_t l = strlen(x->m[i].name);
        if (l < 5 || strcmp(x->m[i].name + l - 4, ".gmt"))
            continue;
        char **slot = gmt_vec_push(&v);
        size_t pl = strlen(path) + l + 2;
        if (!slot || !(*slot = malloc(pl))) {
            if (slot)
                v.len--;
            gmt_free_paths(v.data, v.len);
            snprintf(err, errlen, "%s: out of memory", path);
            return -ENOMEM;
        }
        snprintf(*slot, pl, "%s/%s", path, x->m[i].name);
    }
    *out = v.data;
    *n = v.len;
    return 0;
}

static const struct member *find_member(const struct index *x, const char *name)
{
    struct member key = {.name = (char *)name};
    return x->n ? bsearch(&key, x->m, x->n, sizeof *x->m, cmp_member) : NULL;
}

int gmt_pack_open_member(const char *path)
{
    char *p = strdup(path);
    if (!p)
        return -1;
    /* the longest leading part that is a regular file is the pack */
    for (char *slash = strrchr(p, '/'); slash && slash > p; slash = strrchr(p, '/')) {
        *slash = 0;
        struct stat st;
        if (stat(p, &st) || !S_ISREG(st.st_mode))
            continue;
        char err[256];
        const struct index *x = gmt_pack_is(p) ? index_of(p, err, sizeof err) : NULL;
        const struct member *m = x ? find_member(x, path + (slash - p) + 1) : NULL;
        int pack = m ? open_file(p, NULL, 0) : -1;
        free(p);
        if (pack < 0) {
            errno = ENOENT;
            return -1;
        }
        int fd = memfd_create("gpumemtrace-pack-member", MFD_CLOEXEC);
        char *buf = fd >= 0 ? malloc(1 << 20) : NULL;
        uint64_t done = 0;
        while (buf && done < m->size) {
            size_t want = m->size - done < (1u << 20) ? (size_t)(m->size - done) : (1u << 20);
            ssize_t got = pread(pack, buf, want, (off_t)(m->offset + done));
            if (got <= 0 || write(fd, buf, (size_t)got) != got)
                break;
            done += (uint64_t)got;
        }
        int e = errno;
        free(buf);
        close(pack);
        if (done != m->size || lseek(fd, 0, SEEK_SET) != 0) {
            if (fd >= 0)
                close(fd);
            errno = e ? e : EIO;
            return -1;
        }
        return fd;
    }
    free(p);
    errno = ENOENT;
    return -1;
}

/* ---- writing ---- */

static void put_octal(char *dst, size_t n, uint64_t v)
{
    snprintf(dst, n, "%0*llo", (int)n - 1, (unsigned long long)v);
}

static void finish_header(unsigned char *h)
{
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (int i = 0; i < BLOCK; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
}

static bool put_all(FILE *f, const void *d, size_t n)
{
    return fwrite(d, 1, n, f) == n;
}

static bool pad(FILE *f, uint64_t n)
{
    static const unsigned char zero[BLOCK];
    size_t r = (size_t)(n % BLOCK);
    return !r || put_all(f, zero, BLOCK - r);
}

/* One pax record "LEN key=value\n" into b: its length counts its own digits. */
static size_t pax_record(char *b, size_t cap, const char *key, const char *val)
{
    size_t body = strlen(key) + strlen(val) + 3; /* ' ', '=', '\n' */
    size_t len = body + 1;
    while (len != body + (size_t)snprintf(NULL, 0, "%zu", len))
        len = body + (size_t)snprintf(NULL, 0, "%zu", len);
    snprintf(b, cap, "%zu %s=%s\n", len, key, val);
    return len;
}

/* One member: its headers, its data (size bytes of src), its padding. */
static int put_member(FILE *f, const char *name, const char *src, const struct stat *st,
                      char *err, size_t errlen)
{
    unsigned char h[BLOCK];
    uint64_t size = (uint64_t)st->st_size;
    size_t nl = strlen(name);
    bool long_name = nl > 100, big = size >= 077777777777ull;
    char pre[156] = "";
    const char *tail = name;
    if (long_name && !big) { /* ustar's prefix/name split, where a '/' allows it */
        const char *s = name + nl > name + 101 ? name + nl - 101 : name;
        s = strchr(s, '/');
        if (s && (size_t)(s - name) <= 155 && strlen(s + 1) <= 100 && s > name) {
            snprintf(pre, sizeof pre, "%.*s", (int)(s - name), name);
            tail = s + 1;
            long_name = false;
        }
    }
    if (long_name || big) {
        char rec[4200], sz[32];
        size_t len = 0;
        if (long_name)
            len += pax_record(rec, sizeof rec, "path", name);
        snprintf(sz, sizeof sz, "%llu", (unsigned long long)size);
        if (big)
            len += pax_record(rec + len, sizeof rec - len, "size", sz);
        memset(h, 0, sizeof h);
        snprintf((char *)h, 100, "PaxHeaders/%.80s", strrchr(name, '/') ? strrchr(name, '/') + 1 : name);
        put_octal((char *)h + 100, 8, 0644);
        put_octal((char *)h + 108, 8, 0);
        put_octal((char *)h + 116, 8, 0);
        put_octal((char *)h + 124, 12, len);
        put_octal((char *)h + 136, 12, (uint64_t)st->st_mtim.tv_sec);
        h[156] = 'x';
        finish_header(h);
        if (!put_all(f, h, BLOCK) || !put_all(f, rec, len) || !pad(f, len))
            goto werr;
        tail = long_name ? "" : tail;
    }
    memset(h, 0, sizeof h);
    snprintf((char *)h, 101, "%.100s", long_name ? name + nl - (nl < 100 ? nl : 100) : tail);
    memcpy(h + 345, pre, strlen(pre));
    put_octal((char *)h + 100, 8, 0644);
    put_octal((char *)h + 108, 8, 0);
    put_octal((char *)h + 116, 8, 0);
    put_octal((char *)h + 124, 12, big ? 0 : size);
    put_octal((char *)h + 136, 12, (uint64_t)st->st_mtim.tv_sec);
    h[156] = '0';
    finish_header(h);
    if (!put_all(f, h, BLOCK))
        goto werr;
    int fd = open_file(src, err, errlen);
    if (fd < 0)
        return -1;
    char *buf = malloc(1 << 20);
    uint64_t done = 0;
    ssize_t got = 0;
    while (buf && done < size) {
        size_t want = size - done < (1u << 20) ? (size_t)(size - done) : (1u << 20);
        if ((got = read(fd, buf, want)) <= 0 || !put_all(f, buf, (size_t)got))
            break;
        done += (uint64_t)got;
    }
    free(buf);
    close(fd);
    if (done != size) {
        snprintf(err, errlen, "%s: %s", src, got < 0 ? strerror(errno) : "shorter than when listed");
        return -1;
    }
    if (!pad(f, size))
        goto werr;
    return 0;
werr:
    snprintf(err, errlen, "cannot write the pack: %s", strerror(errno ? errno : EIO));
    return -1;
}

int gmt_pack_write(const char *dir, const char *out, struct gmt_pack_made *made, char *err,
                   size_t errlen)
{
    memset(made, 0, sizeof *made);
    char **files;
    size_t n;
    int r = gmt_list_traces(dir, &files, &n);
    if (r || !n) {
        snprintf(err, errlen, "%s: %s", dir, r ? strerror(-r) : "no traces (*.gmt) in this directory");
        return -1;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%.4096s.tmp.%ld", out, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) {
        snprintf(err, errlen, "cannot create %s: %s", out, strerror(errno));
        gmt_free_paths(files, n);
        return -1;
    }
    size_t dl = strlen(dir);
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        const char *rel = files[i] + dl;
        while (*rel == '/')
            rel++;
        for (int pass = 0; pass < 2 && !rc; pass++) {
            char src[4200], name[4200];
            snprintf(src, sizeof src, "%.4096s%s", files[i], pass ? GMT_NAMES_SUFFIX : "");
            snprintf(name, sizeof name, "%.4096s%s", rel, pass ? GMT_NAMES_SUFFIX : "");
            struct stat st;
            if (stat(src, &st) || !S_ISREG(st.st_mode)) {
                if (!pass) {
                    snprintf(err, errlen, "%s: %s", src, strerror(errno ? errno : EINVAL));
                    rc = -1;
                }
                continue;
            }
            rc = put_member(f, name, src, &st, err, errlen);
            if (!rc) {
                made->traces += !pass;
                made->named += pass;
            }
        }
    }
    static const unsigned char zero[2 * BLOCK];
    if (!rc && !put_all(f, zero, sizeof zero)) {
        snprintf(err, errlen, "cannot write %s: %s", out, strerror(errno ? errno : EIO));
        rc = -1;
    }
    long end = ftell(f);
    if (fclose(f) && !rc) {
        snprintf(err, errlen, "cannot write %s: %s", out, strerror(errno));
        rc = -1;
    }
    if (!rc && rename(tmp, out)) {
        snprintf(err, errlen, "cannot create %s: %s", out, strerror(errno));
        rc = -1;
    }
    if (rc)
        unlink(tmp);
    made->bytes = end > 0 ? (uint64_t)end : 0;
    gmt_free_paths(files, n);
    return rc;
}
