/* reader.c: streaming, validating reader of .gmt traces (docs/trace-format.md), for untrusted files. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "idnames.h"
#include "input.h"
#include "reader.h"
#include "reader_parts.h"
#include "util.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the reader maps little-endian records onto host structs: little-endian hosts only"
#endif

/* One thread's clock. Kept per tid, not per CHUNK, because a thread's records are
 * spread over many chunks and its dt chain runs across them. */
struct clock_slot {
    uint32_t tid;
    uint8_t used;
    uint8_t set;               /* a THREAD/TIME/absolute record gave it a value */
    uint64_t ns;
};

struct gmt_reader {
    FILE *f;
    int own;                   /* opened by us: close it */
    char *path;
    /* A regular file is mapped whole (read-only, private) and its records are handed out
     * in place: no fread and no copy per record, which were most of the reader's cost.
     * Pipes and streams the caller opened are read record by record into buf. */
    const uint8_t *map;
    size_t map_len;
    int own_map;               /* mapped by us: unmap it */
    uint8_t *buf;              /* one record, grown up to GMT_REC_MAX */
    size_t cap;
    uint64_t off;              /* offset of the next record */
    uint64_t nrec;
    uint32_t tid;              /* of the latest CHUNK */
    int done;                  /* end reached, cut, or failed: next() returns 0/-1 again */
    int failed;
    int cut;
    uint64_t cut_off;
    int complete;
    int have_process;
    struct gmt_rec_process process;
    struct clock_slot *clk;
    size_t clk_cap, clk_used;
    struct clock_slot *cur_clk; /* the slot of tid, NULL until looked up: one hash per CHUNK, not per record */
    /* A stream read in blocks (gmt_reader_window): the caller's buffer holds the file's
     * bytes from offset win_base on, win_len of them; records are handed out in place. */
    uint8_t *win;
    size_t win_cap, win_len;
    uint64_t win_base;
    int win_eof;               /* the latest block read stopped short: the end, for now */
};

/* The fixed part's size of each known type, by type; 0 for ids no type has. */
static const uint32_t fixed_size[GMT_REC_TYPE_MAX] = {
#define GMT_X(name, val, st) [val] = (uint32_t)sizeof(struct st),
    GMT_RECORD_TYPES(GMT_X)
#undef GMT_X
};

uint32_t gmt_rec_fixed_size(unsigned type)
{
    return type < GMT_REC_TYPE_MAX ? fixed_size[type] : 0;
}

/*
 * What a record does besides being whole, by type: one table load per record gives its
 * fixed size, whether it has variable parts and its clock rule, where a switch per
 * question would take three.
 * The clock rules are docs/trace-format.md 5.2: only the types of versions 1.0 and 2.0
 * take part; a type added later must not, so it stays CLOCK_NONE here, or CLOCK_OWN when
 * it carries its own absolute time.
 */
enum clock_rule {
    CLOCK_NONE,                /* carries no time, moves no clock */
    CLOCK_ANCHOR,              /* PROCESS: its time is the anchor; moves no clock */
    CLOCK_OWN,                 /* a type added later with a time_ns of its own (GRAPHMEM):
                                * its time is that; moves no clock (5.3) */
    CLOCK_ABS,                 /* sets its thread's clock to an absolute time_ns */
    CLOCK_DT,                  /* adds its dt to its thread's clock */
    CLOCK_NOW,                 /* carries no time: its time is its thread's clock, which
                                * it leaves alone (GROUP_REPEAT, whose members are there) */
};

struct type_rule {
    uint8_t clock;             /* enum clock_rule */
    uint8_t flags;             /* RULE_* */
    uint16_t time_at;          /* offset of its time_ns (uint64) or dt (uint32), bytes */
};
#define RULE_PARTS 1           /* variable parts or strings to validate (check_payload) */
#define RULE_STATE 2           /* changes the reader's own state (CHUNK, PROCESS, END) */

#define RULE_ABS(st) { CLOCK_ABS, 0, offsetof(struct st, time_ns) }
#define RULE_DT(st) { CLOCK_DT, 0, offsetof(struct st, dt) }
static const struct type_rule type_rule[GMT_REC_TYPE_MAX] = {
    [GMT_REC_PROCESS] = { CLOCK_ANCHOR, RULE_PARTS | RULE_STATE,
                          offsetof(struct gmt_rec_process, monotonic_ns) },
    [GMT_REC_ENV] = { CLOCK_NONE, RULE_PARTS, 0 },
    [GMT_REC_MODULE_LOAD] = { CLOCK_ABS, RULE_PARTS, offsetof(struct gmt_rec_module_load, time_ns) },
    [GMT_REC_MODULE_UNLOAD] = RULE_ABS(gmt_rec_module_unload),
    [GMT_REC_CHUNK] = { CLOCK_NONE, RULE_STATE, 0 },
    [GMT_REC_THREAD] = { CLOCK_ABS, RULE_PARTS, offsetof(struct gmt_rec_thread, time_ns) },
    [GMT_REC_TIME] = RULE_ABS(gmt_rec_time),
    [GMT_REC_STACK] = { CLOCK_NONE, RULE_PARTS, 0 },
    [GMT_REC_ALLOC] = RULE_DT(gmt_rec_alloc),
    [GMT_REC_FREE] = RULE_DT(gmt_rec_free),
    [GMT_REC_ALLOC_FAIL] = RULE_DT(gmt_rec_alloc_fail),
    [GMT_REC_COMM] = RULE_DT(gmt_rec_comm),
    [GMT_REC_SCOPE_BEGIN] = RULE_DT(gmt_rec_scope_begin),
    /* (2.5) its call form, 32 bytes and more, moves the clock by dt as the plain one; the
     * fields its `has` names are the expander's to check (trace_expand.c): one it cannot
     * restore is dropped there, not an error here */
    [GMT_REC_SCOPE_END] = RULE_DT(gmt_rec_scope_end),
    [GMT_REC_MEMINFO] = RULE_DT(gmt_rec_meminfo),
    [GMT_REC_END] = { CLOCK_ABS, RULE_STATE, offsetof(struct gmt_rec_end, time_ns) },
    [GMT_REC_ALLOC_SMALL] = RULE_DT(gmt_rec_alloc_small),
    [GMT_REC_GRAPHMEM] = { CLOCK_OWN, 0, offsetof(struct gmt_rec_graphmem, time_ns) },
    [GMT_REC_PYCODE] = { CLOCK_NONE, RULE_PARTS, 0 },
    [GMT_REC_NCCL_COLL_INFO] = { CLOCK_OWN, 0, offsetof(struct gmt_rec_nccl_coll_info, time_ns) },
    [GMT_REC_NVTX_STRING] = { CLOCK_NONE, RULE_PARTS, 0 },
    [GMT_REC_NVTX_RANGE] = { CLOCK_OWN, 0, offsetof(struct gmt_rec_nvtx_range, time_ns) },
    /* (2.5) the begin of another thread's call: its time is its own, no clock moves */
    [GMT_REC_SCOPE_OPEN] = { CLOCK_OWN, 0, offsetof(struct gmt_rec_scope_open, time_ns) },
    [GMT_REC_BLOCK] = { CLOCK_OWN, 0, offsetof(struct gmt_rec_block, time_ns) },
    [GMT_REC_GROUP_REPEAT] = { CLOCK_NOW, 0, 0 },
};
#undef RULE_ABS
#undef RULE_DT

/* ---- per-thread clocks ---- */

static size_t clk_hash(uint32_t tid, size_t cap)
{
    return (size_t)((tid * 2654435761u) & (cap - 1));
}

/* Returns the tid's slot, adding it; NULL only when out of memory. The table grows with
 * the number of distinct tids, which is bounded by the number of CHUNK records read. */
static struct clock_slot *clk_slot(struct gmt_reader *r, uint32_t tid)
{
    if (r->clk_cap == 0 || (r->clk_used + 1) * 2 > r->clk_cap) {
        size_t ncap = r->clk_cap ? r->clk_cap * 2 : 16;
        struct clock_slot *n = calloc(ncap, sizeof *n);
        if (!n)
            return NULL;
        for (size_t i = 0; i < r->clk_cap; i++) {
            if (!r->clk[i].used)
                continue;
            size_t j = clk_hash(r->clk[i].tid, ncap);
            while (n[j].used)
                j = (j + 1) & (ncap - 1);
            n[j] = r->clk[i];
        }
        free(r->clk);
        r->clk = n;
        r->clk_cap = ncap;
        r->cur_clk = NULL;
    }
    size_t j = clk_hash(tid, r->clk_cap);
    while (r->clk[j].used && r->clk[j].tid != tid)
        j = (j + 1) & (r->clk_cap - 1);
    if (!r->clk[j].used) {
        r->clk[j].used = 1;
        r->clk[j].tid = tid;
        r->clk_used++;
    }
    return &r->clk[j];
}

/* ---- open ---- */

static int read_full(FILE *f, void *p, size_t n, size_t *got)
{
    *got = fread(p, 1, n, f);
    return (*got < n && ferror(f)) ? -1 : 0;
}

/* Reads n bytes at the reader's position: from the mapping, or the stream. */
static int read_at(struct gmt_reader *r, uint64_t pos, void *p, size_t n, size_t *got)
{
    if (!r->map && !r->f) { /* an empty image */
        *got = 0;
        return 0;
    }
    if (!r->map)
        return read_full(r->f, p, n, got);
    size_t left = pos < r->map_len ? r->map_len - (size_t)pos : 0;
    *got = n < left ? n : left;
    memcpy(p, r->map + pos, *got);
    return 0;
}

/* The window holding the bytes [off, off + need) when the file has them: what it has
 * from off is moved to its start and the rest of it filled with one fread. *avail: the
 * bytes it holds from off (fewer than need at the end). 0, or -1 on a read error. */
static int win_have(struct gmt_reader *r, uint64_t off, size_t need, size_t *avail)
{
    size_t at = (size_t)(off - r->win_base);
    if (r->win_len - at < need && !r->win_eof) {
        memmove(r->win, r->win + at, r->win_len - at);
        r->win_len -= at;
        r->win_base = off;
        at = 0;
        size_t want = r->win_cap - r->win_len;
        size_t got = fread(r->win + r->win_len, 1, want, r->f);
        r->win_len += got;
        if (got < want) {
            if (ferror(r->f))
                return -1;
            r->win_eof = 1;
        }
    }
    *avail = r->win_len - at;
    return 0;
}

int gmt_reader_window(struct gmt_reader *r, uint8_t *buf, size_t cap)
{
    if (r->map || !r->f || (buf && cap < GMT_REC_MAX))
        return -EINVAL;
    int rc = 0;
    /* the stream stands past what the window read ahead: back to the next record */
    if (r->win && r->win_base + r->win_len != r->off && fseeko(r->f, (off_t)r->off, SEEK_SET))
        rc = -errno;
    r->win = buf;
    r->win_cap = buf ? cap : 0;
    r->win_len = 0;
    r->win_base = r->off;
    r->win_eof = 0;
    return rc;
}

static int check_header(struct gmt_reader *r, char *err, size_t errlen)
{
    const char *path = r->path;
    struct gmt_file_header h;
    size_t got;
    if (read_at(r, 0, &h, sizeof h, &got) < 0)
        return gmt_reader_fail(err, errlen, "%s: offset 0: read error: %s", path, strerror(errno));
    size_t mlen = got < 8 ? got : 8;
    if (got == 0)
        return gmt_reader_fail(err, errlen, "%s: offset 0: empty file, not a gpumemtrace trace", path);
    if (memcmp(h.magic, GMT_MAGIC, mlen) != 0)
        return gmt_reader_fail(err, errlen, "%s: offset 0: not a gpumemtrace trace (bad magic)", path);
    if (got < sizeof h)
        return gmt_reader_fail(err, errlen, "%s: offset 0: trace cut inside its %zu-byte file header "
                               "(file has %zu bytes)", path, sizeof h, got);
    if (h.byte_order == 0x04030201u)
        return gmt_reader_fail(err, errlen, "%s: offset 8: trace was written big-endian; gpumemtrace "
                               "reads little-endian traces only", path);
    if (h.byte_order != GMT_BYTE_ORDER_MARK)
        return gmt_reader_fail(err, errlen, "%s: offset 8: bad byte order mark 0x%08x (expected 0x%08x)",
                               path, h.byte_order, GMT_BYTE_ORDER_MARK);
    /* 2.0 only added ALLOC_SMALL: every 1.x file reads as it is */
    char reads[32];
    if (GMT_VERSION_MAJOR_MIN == GMT_VERSION_MAJOR)
        snprintf(reads, sizeof reads, "%u.x", GMT_VERSION_MAJOR);
    else
        snprintf(reads, sizeof reads, "%u.x %s %u.x", GMT_VERSION_MAJOR_MIN,
                 GMT_VERSION_MAJOR - GMT_VERSION_MAJOR_MIN == 1 ? "and" : "to", GMT_VERSION_MAJOR);
    if (h.version_major > GMT_VERSION_MAJOR)
        return gmt_reader_fail(err, errlen, "%s: trace format %u.%u is newer than this gpumemtrace "
                               "(reads %s)", path, h.version_major, h.version_minor, reads);
    if (h.version_major < GMT_VERSION_MAJOR_MIN)
        return gmt_reader_fail(err, errlen, "%s: offset 12: trace format %u.%u is not supported "
                               "(reads %s)", path, h.version_major, h.version_minor, reads);
    if (h.header_size < sizeof h || h.header_size % GMT_ALIGN || h.header_size > GMT_REC_MAX)
        return gmt_reader_fail(err, errlen, "%s: offset 16: bad header_size %u (a multiple of %u "
                               "from %zu to %u)", path, h.header_size, GMT_ALIGN, sizeof h, GMT_REC_MAX);
    /* A newer minor version may extend the header: skip what we don't know. */
    uint64_t left = h.header_size - sizeof h, pos = sizeof h;
    while (left > 0) {
        uint8_t tmp[256];
        size_t n = left < sizeof tmp ? (size_t)left : sizeof tmp;
        if (read_at(r, pos, tmp, n, &got) < 0)
            return gmt_reader_fail(err, errlen, "%s: offset %zu: read error: %s", path, sizeof h,
                                   strerror(errno));
        if (got < n)
            return gmt_reader_fail(err, errlen, "%s: offset 0: trace cut inside its %u-byte file header",
                                   path, h.header_size);
        left -= n;
        pos += n;
    }
    r->off = h.header_size;
    return 0;
}

static int reader_init(struct gmt_reader **out, FILE *f, int own, const void *data,
                       size_t len, const char *name, char *err, size_t errlen)
{
    *out = NULL;
    struct gmt_reader *r = calloc(1, sizeof *r);
    char *p = strdup(name);
    if (!r || !p) {
        free(r);
        free(p);
        if (own)
            fclose(f);
        return gmt_reader_fail(err, errlen, "%s: out of memory", name);
    }
    r->f = f;
    r->own = own;
    r->path = p;
    r->map = data;
    r->map_len = len;
    struct stat st;
    if (own && f && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
        (uint64_t)st.st_size <= SIZE_MAX) {
        void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fileno(f), 0);
        if (m != MAP_FAILED) {
            madvise(m, (size_t)st.st_size, MADV_SEQUENTIAL);
            r->map = m;
            r->map_len = (size_t)st.st_size;
            r->own_map = 1;
        }
    }
    if (check_header(r, err, errlen) < 0) {
        gmt_reader_close(r);
        return -1;
    }
    *out = r;
    return 0;
}

int gmt_reader_open(struct gmt_reader **out, const char *path, char *err, size_t errlen)
{
    *out = NULL;
    FILE *f = gmt_fopen_input(path, 1, err, errlen);
    if (!f)
        return -1;
    return reader_init(out, f, 1, NULL, 0, path, err, errlen);
}

int gmt_reader_fopen(struct gmt_reader **out, FILE *f, const char *name, char *err,
                     size_t errlen)
{
    return reader_init(out, f, 0, NULL, 0, name, err, errlen);
}

int gmt_reader_open_mem(struct gmt_reader **out, const void *data, size_t len,
                        const char *name, char *err, size_t errlen)
{
    return reader_init(out, NULL, 0, len ? data : NULL, len, name, err, errlen);
}

const uint8_t *gmt_reader_image(const struct gmt_reader *r, size_t *len)
{
    if (r->map && len)
        *len = r->map_len;
    return r->map;
}

bool gmt_reader_thread_clock(const struct gmt_reader *r, uint64_t *ns)
{
    const struct clock_slot *c = r->cur_clk;
    if (!c || !c->set)
        return false;
    *ns = c->ns;
    return true;
}

void gmt_reader_close(struct gmt_reader *r)
{
    if (!r)
        return;
    if (r->own && r->f)
        fclose(r->f);
    if (r->own_map)
        munmap((void *)r->map, r->map_len);
    free(r->buf);
    free(r->clk);
    free(r->path);
    free(r);
}

/* ---- records ---- */

/* The time a record stands for, and its effect on the thread's clock, by its type's
 * rule. Returns 0, or -ENOMEM when the thread's clock slot can't be made. */
static int decode_time(struct gmt_reader *r, const uint8_t *rec, struct type_rule rule,
                       uint64_t *time_ns)
{
    *time_ns = 0;
    if (rule.clock == CLOCK_NONE)
        return 0;
    uint64_t abs_ns = 0;
    uint32_t dt = 0;
    if (rule.clock == CLOCK_DT)
        memcpy(&dt, rec + rule.time_at, sizeof dt);
    else if (rule.clock != CLOCK_NOW)
        memcpy(&abs_ns, rec + rule.time_at, sizeof abs_ns);
    if (rule.clock == CLOCK_ANCHOR || rule.clock == CLOCK_OWN) {
        /* The anchor, or a time of its own: it leaves every clock alone. */
        *time_ns = abs_ns;
        return 0;
    }
    struct clock_slot *c = r->cur_clk;
    if (!c && !(c = r->cur_clk = clk_slot(r, r->tid)))
        return -ENOMEM;
    if (rule.clock == CLOCK_ABS) {
        c->ns = abs_ns;
        c->set = 1;
        *time_ns = abs_ns;
    } else if (rule.clock == CLOCK_NOW) {
        *time_ns = c->set ? c->ns : 0;
    } else if (c->set) {
        /* Wraps rather than traps on a corrupt clock: times are data, not sizes. */
        c->ns += dt;
        *time_ns = c->ns;
    }
    return 0;
}

/* The checks of a record's header at off that need no more than the header: its size
 * (a whole number of 8-byte words, at most GMT_REC_MAX) and, for a known type, that it
 * holds the type's fixed part. 0, or -1 with the message in err (the reader failed). */
static int check_rec_header(struct gmt_reader *r, const struct gmt_rec *h, uint64_t off,
                            char *err, size_t errlen)
{
    if (h->size < sizeof *h) {
        r->failed = 1;
        return gmt_reader_fail(err, errlen, "%s: offset %llu: record size %u is smaller than a record "
                               "header (8 bytes)", r->path, (unsigned long long)off, h->size);
    }
    if (h->size % GMT_ALIGN) {
        r->failed = 1;
        return gmt_reader_fail(err, errlen, "%s: offset %llu: record size %u is not a multiple of %u",
                               r->path, (unsigned long long)off, h->size, GMT_ALIGN);
    }
    if (h->size > GMT_REC_MAX) {
        r->failed = 1;
        return gmt_reader_fail(err, errlen, "%s: offset %llu: record size %u exceeds the limit of %u "
                               "bytes", r->path, (unsigned long long)off, h->size, GMT_REC_MAX);
    }
    uint32_t fixed = h->type < GMT_REC_TYPE_MAX ? fixed_size[h->type] : 0;
    if (h->size < fixed) {
        r->failed = 1;
        return gmt_reader_fail(err, errlen, "%s: offset %llu: %s record of %u bytes is shorter than "
                               "its fixed part (%u bytes)", r->path, (unsigned long long)off,
                               gmt_rec_type_name(h->type), h->size, fixed);
    }
    return 0;
}

/* The rest of a stream reader's record whose header h was read: the whole record into
 * r->buf. 1, 0 when the file ends inside it, -1 on a read error (errno set) or -ENOMEM. */
static int read_rest(struct gmt_reader *r, const struct gmt_rec *h)
{
    if (h->size > r->cap) {
        size_t ncap = r->cap ? r->cap : 256;
        while (ncap < h->size)
            ncap *= 2;
        /* Not realloc: the previous record is dead, copying it would be wasted. */
        uint8_t *nb = malloc(ncap);
        if (!nb)
            return -ENOMEM;
        free(r->buf);
        r->buf = nb;
        r->cap = ncap;
    }
    memcpy(r->buf, h, sizeof *h);
    size_t got;
    if (read_full(r->f, r->buf + sizeof *h, h->size - sizeof *h, &got) < 0)
        return -1;
    return got == h->size - sizeof *h;
}

/* What a whole, valid record at off changes in the reader (thread, clocks, PROCESS,
 * END), and the event handed out for it. 0, or -1 with the message in err. */
static int take_record(struct gmt_reader *r, const uint8_t *rec, uint64_t off,
                       struct gmt_event *ev, char *err, size_t errlen)
{
    const struct gmt_rec *h = (const void *)rec;
    /* unknown types (a newer minor version's) have no rule: skipped, as 8. says */
    struct type_rule rule = { CLOCK_NONE, 0, 0 };
    if (h->type < GMT_REC_TYPE_MAX)
        rule = type_rule[h->type];
    if ((rule.flags & RULE_PARTS) && gmt_reader_check_payload(r->path, rec, off, err, errlen) < 0) {
        r->failed = 1;
        return -1;
    }
    if (h->type == GMT_REC_CHUNK) {
        r->tid = ((const struct gmt_rec_chunk *)(const void *)rec)->tid;
        r->cur_clk = NULL;
    }
    uint64_t t;
    if (decode_time(r, rec, rule, &t) < 0) {
        r->failed = 1;
        return gmt_reader_fail(err, errlen, "%s: offset %llu: out of memory", r->path,
                               (unsigned long long)off);
    }
    if (h->type == GMT_REC_PROCESS && !r->have_process) {
        memcpy(&r->process, rec, sizeof r->process);
        r->have_process = 1;
    }
    if (h->type == GMT_REC_END)
        r->complete = 1;
    ev->rec = h;
    ev->offset = off;
    ev->index = r->nrec;
    ev->time_ns = t;
    ev->tid = r->tid;
    r->nrec++;
    r->off = off + h->size;
    return 0;
}

int gmt_reader_next(struct gmt_reader *r, struct gmt_event *ev, char *err, size_t errlen)
{
    if (r->failed)
        return gmt_reader_fail(err, errlen, "%s: offset %llu: reading past an error", r->path,
                               (unsigned long long)r->off);
    if (r->done)
        return 0;
    uint64_t off = r->off;
    struct gmt_rec h;
    size_t got;
    if (r->map && r->map_len - off >= sizeof h) { /* the common case, without a call */
        memcpy(&h, r->map + off, sizeof h);
        got = sizeof h;
    } else if (r->win && r->win_len - (off - r->win_base) >= sizeof h) {
        memcpy(&h, r->win + (off - r->win_base), sizeof h); /* the window's common case */
        got = sizeof h;
    } else if (r->win) {
        if (win_have(r, off, sizeof h, &got) < 0)
            goto read_error;
        if (got > sizeof h)
            got = sizeof h;
        memcpy(&h, r->win + (off - r->win_base), got);
    } else if (read_at(r, off, &h, sizeof h, &got) < 0) {
        goto read_error;
    }
    if (got == 0) {
        r->done = 1;
        return 0;
    }
    if (got < sizeof h)
        goto cut;
    if (check_rec_header(r, &h, off, err, errlen) < 0)
        return -1;
    const uint8_t *rec;
    if (r->map) {
        /* header_size and every record size are multiples of 8 from a page-aligned
         * base, so the record is aligned where it lies */
        if (h.size > r->map_len - off)
            goto cut;
        rec = r->map + off;
    } else if (r->win) {
        /* every record starts on an 8-byte boundary of the window (its base is a
         * record's offset, the buffer malloc's), so it is aligned where it lies */
        size_t avail = r->win_len - (size_t)(off - r->win_base);
        if (avail < h.size && win_have(r, off, h.size, &avail) < 0)
            goto read_error;
        if (avail < h.size)
            goto cut;
        rec = r->win + (off - r->win_base);
    } else {
        int x = read_rest(r, &h);
        if (x == -ENOMEM) {
            r->failed = 1;
            return gmt_reader_fail(err, errlen, "%s: offset %llu: out of memory", r->path,
                                   (unsigned long long)off);
        }
        if (x < 0)
            goto read_error;
        if (x == 0)
            goto cut;
        rec = r->buf;
    }
    return take_record(r, rec, off, ev, err, errlen) < 0 ? -1 : 1;

cut:
    r->done = 1;
    r->cut = 1;
    r->cut_off = off;
    return 0;
read_error:
    r->failed = 1;
    return gmt_reader_fail(err, errlen, "%s: offset %llu: read error: %s", r->path,
                           (unsigned long long)off, strerror(errno));
}

/* Whether the record h (room bytes left in the image from it) is one the batch loops
 * below take as it is: a type without state or variable parts, whole, its size as 4.1
 * says (one test for all the rules; gmt_reader_next says which one is broken). */
static inline __attribute__((always_inline)) bool plain_record(const struct gmt_rec *h,
                                                               uint64_t room)
{
    if (h->type >= GMT_REC_TYPE_MAX)
        return false;
    uint32_t size = h->size;
    return !type_rule[h->type].flags && size >= fixed_size[h->type] &&
           gmt_rec_size_ok(size, room);
}

static inline __attribute__((always_inline)) void put_event(struct gmt_event *e,
                                                            const struct gmt_rec *h,
                                                            uint64_t off, uint64_t index,
                                                            uint64_t t, uint64_t tid)
{
    e->rec = h;
    e->offset = off;
    e->index = index;
    e->time_ns = t;
    e->tid = (uint32_t)tid;
}

/*
 * The records of a mapped image that need nothing but their size checked and their
 * clock moved (all but the first few and the CHUNKs), read in a loop that keeps the
 * reader's position and the thread's clock in locals: the stores into ev[] could
 * otherwise alias them and force a reload per field. Stops at the first record that is
 * anything else (broken, cut, a CHUNK, variable parts, an unknown type), which
 * gmt_reader_next then reads. Returns how many it read into ev.
 */
static size_t next_plain(struct gmt_reader *r, struct gmt_event *ev, size_t max)
{
    struct clock_slot *c = r->cur_clk;
    if (!c) /* the thread's clock is looked up once per CHUNK, by gmt_reader_next */
        return 0;
    /* the bytes at hand: the image, or the window (file offsets base.. of it) */
    const uint8_t *map = r->map ? r->map : r->win;
    const uint64_t base = r->map ? 0 : r->win_base;
    const uint64_t len = r->map ? r->map_len : r->win_base + r->win_len, tid = r->tid;
    uint64_t off = r->off, nrec = r->nrec, clock = c->ns;
    bool set = c->set;
    size_t n = 0;
    while (n < max && len - off >= sizeof(struct gmt_rec)) {
        const struct gmt_rec *h = (const void *)(map + (off - base));
        if (!plain_record(h, len - off))
            break;
        struct type_rule rule = type_rule[h->type];
        uint64_t t = 0;
        if (rule.clock == CLOCK_DT) {
            uint32_t dt;
            memcpy(&dt, (const uint8_t *)h + rule.time_at, sizeof dt);
            if (set)
                t = clock += dt; /* wraps on a corrupt clock, as decode_time does */
        } else if (rule.clock == CLOCK_ABS) { /* the anchor (PROCESS) has RULE_STATE */
            memcpy(&t, (const uint8_t *)h + rule.time_at, sizeof t);
            clock = t;
            set = true;
        } else if (rule.clock == CLOCK_NOW) {
            t = set ? clock : 0;
        }
        put_event(&ev[n++], h, off, nrec++, t, tid);
        off += h->size;
    }
    r->off = off;
    r->nrec = nrec;
    c->ns = clock;
    c->set = set;
    return n;
}

/* What the skim needs of the types below 32, by type: the least size a record may have
 * to be skimmed (its fixed part; above any size for a type not skimmed), and where its
 * dt lies. */
struct skim_rule {
    uint32_t min_size, dt_at;
};

/* The records that skim_rule lets skim from *off on, while their times keep at or above
 * *min: a loop with nothing else live, so it stays in registers. Moves *off, *clock and
 * *min past them; returns how many. Inlined by force into two loops, one for a set clock
 * and one for an unset one. */
static inline __attribute__((always_inline)) size_t
skim_run(const uint8_t *map, uint64_t len, const struct skim_rule *sr, bool set,
         uint64_t *off_p, uint64_t *clock_p, uint64_t *min_p)
{
    uint64_t off = *off_p, clock = *clock_p, min = *min_p;
    size_t k = 0;
    while (len - off >= sizeof(struct gmt_rec)) {
        const struct gmt_rec *h = (const void *)(map + off);
        unsigned type = h->type;
        uint32_t size = h->size;
        /* the rules of 4.1 in four tests: a size not a multiple of 8 or above the limit
         * is a large number once rotated right by 3 bits */
        if (type >= 32 || size < sr[type].min_size ||
            (size >> 3 | size << 29) > GMT_REC_MAX / GMT_ALIGN || size > len - off)
            break;
        /* the file a page on: this is the first pass over it, from memory, and a load
         * that waits stops the loop (a fetch past the image's end is harmless) */
        __builtin_prefetch(map + off + 4096);
        uint32_t dt;
        memcpy(&dt, map + off + sr[type].dt_at, sizeof dt);
        uint64_t t = set ? clock + dt : 0; /* wraps on a corrupt clock, as decode_time does */
        if (t < min)
            break;
        clock = set ? t : clock;
        min = t;
        off += size;
        k++;
    }
    *off_p = off;
    *clock_p = clock;
    *min_p = min;
    return k;
}

size_t gmt_reader_skim(struct gmt_reader *r, uint32_t mask, uint64_t min_time,
                       struct gmt_event *ev, size_t max, struct gmt_skim *sk)
{
    *sk = (struct gmt_skim){0, 0, 0};
    struct clock_slot *c = r->cur_clk;
    if (!r->map || r->failed || r->done || !c)
        return 0;
    /* only types the rules let skim: a dt, nothing else to check or do */
    struct skim_rule sr[32];
    for (unsigned type = 0; type < 32; type++) {
        bool ok = type < GMT_REC_TYPE_MAX && (mask >> type & 1) &&
                  type_rule[type].clock == CLOCK_DT && !type_rule[type].flags;
        /* every skimmed type's fixed part holds a header and its dt: never a size of 0 */
        sr[type].min_size = ok ? fixed_size[type] : UINT32_MAX;
        sr[type].dt_at = ok ? type_rule[type].time_at : 0;
    }
    /* as next_plain, with the clock tried before it moves: a record whose time would
     * go below min_time is left where it is */
    const uint8_t *map = r->map;
    const uint64_t len = r->map_len, tid = r->tid;
    uint64_t off = r->off, nrec = r->nrec, clock = c->ns;
    bool set = c->set;
    size_t n = 0;
    for (;;) {
        uint64_t off0 = off, clock0 = clock;
        size_t k = set ? skim_run(map, len, sr, true, &off, &clock, &min_time)
                       : skim_run(map, len, sr, false, &off, &clock, &min_time);
        if (k) {
            if (!sk->n) { /* the first one's time, read again */
                const struct gmt_rec *h = (const void *)(map + off0);
                uint32_t dt;
                memcpy(&dt, map + off0 + type_rule[h->type].time_at, sizeof dt);
                sk->first = set ? clock0 + dt : 0;
            }
            sk->n += k;
            sk->last = min_time;
            nrec += k;
        }
        if (n == max || len - off < sizeof(struct gmt_rec))
            break;
        const struct gmt_rec *h = (const void *)(map + off);
        if (!plain_record(h, len - off))
            break;
        struct type_rule rule = type_rule[h->type];
        uint64_t t = 0;
        if (rule.clock == CLOCK_DT) {
            uint32_t dt;
            memcpy(&dt, map + off + rule.time_at, sizeof dt);
            t = set ? clock + dt : 0;
            if (t < min_time)
                break;
            clock = set ? t : clock;
            min_time = t;
        } else if (rule.clock == CLOCK_ABS) {
            memcpy(&t, map + off + rule.time_at, sizeof t);
            if (t < min_time)
                break;
            clock = min_time = t;
            set = true;
        } else if (rule.clock == CLOCK_NOW) {
            t = set ? clock : 0; /* the loader sees to a time gone back */
        }
        put_event(&ev[n++], h, off, nrec++, t, tid);
        off += h->size;
    }
    r->off = off;
    r->nrec = nrec;
    c->ns = clock;
    c->set = set;
    return n;
}

size_t gmt_reader_next_batch(struct gmt_reader *r, struct gmt_event *ev, size_t max, int *rc,
                             char *err, size_t errlen)
{
    size_t n = 0;
    *rc = 1;
    if (!r->map && !r->win) { /* a stream's records share one buffer: one at a time */
        *rc = gmt_reader_next(r, ev, err, errlen);
        return *rc > 0;
    }
    while (n < max) {
        if (!r->failed && !r->done) {
            n += next_plain(r, ev + n, max - n);
            if (n == max)
                break;
        }
        /* in a window, gmt_reader_next may read the next block over the records of
         * this batch: it reads only the batch's first */
        if (r->win && n)
            break;
        int x = gmt_reader_next(r, &ev[n], err, errlen);
        if (x <= 0) {
            *rc = x;
            break;
        }
        n++;
    }
    return n;
}

int gmt_reader_follow(struct gmt_reader *r)
{
    if (r->failed || r->map || !r->f)
        return -EINVAL;
    if (r->win) { /* its bytes past the last whole record may be rewritten: read again */
        r->win = NULL;
        r->win_cap = r->win_len = 0;
        r->win_eof = 0;
        if (!r->done && fseeko(r->f, (off_t)r->off, SEEK_SET) != 0)
            return -errno;
    }
    if (!r->done || r->complete)
        return 0;
    /* the stream stands past the bytes of a partial record, or at EOF: both cleared */
    if (fseeko(r->f, (off_t)r->off, SEEK_SET) != 0)
        return -errno;
    r->done = r->cut = 0;
    return 0;
}

bool gmt_reader_cut(const struct gmt_reader *r, uint64_t *offset)
{
    if (r->cut && offset)
        *offset = r->cut_off;
    return r->cut;
}

bool gmt_reader_complete(const struct gmt_reader *r)
{
    return r->complete;
}

uint64_t gmt_reader_records(const struct gmt_reader *r)
{
    return r->nrec;
}

const char *gmt_reader_path(const struct gmt_reader *r)
{
    return r->path;
}

uint64_t gmt_reader_offset(const struct gmt_reader *r)
{
    return r->off;
}

const struct gmt_rec_process *gmt_reader_process(const struct gmt_reader *r)
{
    return r->have_process ? &r->process : NULL;
}
