/* names.c: a trace's native frames named on its host by the symbolizer, into TRACE.names; and what could not be named. */
#include "names.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "input.h"
#include "names_format.h"
#include "names_read.h"
#include "reader.h"
#include "report.h"
#include "symbolize.h"
#include "trace_format.h"
#include "u64map.h"
#include "util.h"

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
    uint64_t d = names_fnv1a(nul ? 0x84222325cbf29ce4ull : 0x1b3ull, s, n);
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

/* The names file's tables as they are made. */
struct tables {
    struct strtab st;
    struct buf mods, frames;
    struct waddr *addrs;       /* room for every address */
    size_t n_mods, n_addrs, n_frames;
};

/* Each of the n_ips addresses (return addresses, sorted) whose module lies on disk: its
 * module into the tables, once, and its frames when that module's frames can be named.
 * 0, or -ENOMEM. */
static int name_addresses(struct gather *g, const uint64_t *ips, size_t n_ips,
                          struct tables *tb, struct gmt_names_made *made)
{
    for (size_t i = 0; i < n_ips; i++) {
        uint64_t pc = ips[i] - 1; /* what gmt_sym_resolve looks up for a return address */
        long mi = gmt_sym_module_at(g->sym, pc);
        if (mi < 0 || (size_t)mi >= g->n_mods || g->mods[mi].path[0] != '/')
            continue; /* no module, or none on disk ([vdso]): shown the same anywhere */
        const char *why = gmt_sym_unnamed_why(g->sym, ips[i]);
        bool created;
        long nm = names_module_of(g, (size_t)mi, &tb->mods, &tb->st, &tb->n_mods, why, &created);
        if (created) {
            made->modules++;
            if (why) {
                made->unnamed++;
                list_unnamed(made, g->mods[mi].path, why);
            }
        }
        if (why)
            continue;
        const struct gmt_frame *fr;
        size_t nf;
        if (gmt_sym_resolve_pc(g->sym, pc, &fr, &nf))
            return -ENOMEM;
        if (nf > NAMES_MAX_FRAMES)
            nf = NAMES_MAX_FRAMES;
        tb->addrs[tb->n_addrs++] = (struct waddr){fr[0].offset, (uint32_t)nm,
                                                  (uint32_t)tb->n_frames, (uint32_t)nf};
        for (size_t k = 0; k < nf; k++) {
            struct disk_frame d = {str_addz(&tb->st, fr[k].function),
                                   str_addz(&tb->st, fr[k].file), fr[k].line,
                                   fr[k].inlined ? FRAME_INLINED : 0};
            put(&tb->frames, &d, sizeof d);
        }
        tb->n_frames += nf;
    }
    return 0;
}

/* The tables as the file's body: modules, addresses, frames, strings. 0, or -ENOMEM. */
static int lay_out(struct tables *tb, struct buf *body)
{
    /* one entry per module and offset: a module loaded twice maps the same code twice */
    gmt_sort(tb->addrs, tb->n_addrs, sizeof *tb->addrs, cmp_waddr);
    size_t k = 0;
    for (size_t i = 0; i < tb->n_addrs; i++)
        if (!k || cmp_waddr(&tb->addrs[k - 1], &tb->addrs[i]))
            tb->addrs[k++] = tb->addrs[i];
    tb->n_addrs = k;
    if (tb->mods.oom || tb->frames.oom || tb->st.blob.oom || tb->st.blob.len > UINT32_MAX)
        return -ENOMEM;
    put(body, tb->mods.p, tb->mods.len);
    for (size_t i = 0; i < tb->n_addrs; i++) {
        const struct waddr *a = &tb->addrs[i];
        struct disk_address d = {a->offset, a->module, a->first, a->n, 0};
        put(body, &d, sizeof d);
    }
    put(body, tb->frames.p, tb->frames.len);
    put(body, tb->st.blob.p, tb->st.blob.len);
    return body->oom ? -ENOMEM : 0;
}

int gmt_names_make(const char *trace, const char *const *debug_dirs, bool force,
                   struct gmt_names_made *made, char *err, size_t errlen)
{
    memset(made, 0, sizeof *made);
    uint64_t digest, size;
    if (gmt_names_trace_identity(trace, &digest, &size, err, errlen))
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
    struct tables tb = {0};
    gmt_u64map_init(&tb.st.at);
    struct buf body = {0};
    uint64_t *ips = NULL;
    int rc = -1;
    if (!(g.sym = gmt_sym_new(debug_dirs)))
        goto nomem;
    if (gather(&g, trace, err, errlen))
        goto done;
    put(&tb.st.blob, "", 1);
    size_t n_ips = 0;
    ips = malloc((g.ips.used ? g.ips.used : 1) * sizeof *ips);
    tb.addrs = malloc((g.ips.used ? g.ips.used : 1) * sizeof *tb.addrs);
    if (!ips || !tb.addrs)
        goto nomem;
    for (size_t i = 0; i < g.ips.cap; i++)
        if (g.ips.state[i] == 1)
            ips[n_ips++] = g.ips.keys[i];
    gmt_sort(ips, n_ips, sizeof *ips, cmp_u64);
    if (name_addresses(&g, ips, n_ips, &tb, made) || lay_out(&tb, &body))
        goto nomem;
    struct names_header h = {.version_major = NAMES_MAJOR, .version_minor = NAMES_MINOR,
                             .header_size = sizeof h, .trace_digest = digest, .trace_size = size,
                             .body_len = body.len, .n_modules = (uint32_t)tb.n_mods,
                             .n_addresses = tb.n_addrs, .n_frames = tb.n_frames,
                             .blob_len = tb.st.blob.len};
    memcpy(h.magic, NAMES_MAGIC, 8);
    if (write_file(names, trace, &h, &body, err, errlen))
        goto done;
    made->addresses = tb.n_addrs;
    made->frames = tb.n_frames;
    made->bytes = sizeof h + h.stored_len;
    rc = 0;
    goto done;
nomem:
    snprintf(err, errlen, "%s: out of memory", trace);
done:
    free(ips);
    free(tb.addrs);
    free(tb.mods.p);
    free(tb.frames.p);
    free(body.p);
    free(tb.st.blob.p);
    gmt_u64map_free(&tb.st.at);
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
