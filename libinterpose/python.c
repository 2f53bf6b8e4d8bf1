/* python.c: the calling thread's CPython frames (3.9–3.13), read without the GIL; each code object is written once as a PYCODE record. */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/uio.h>
#include <unistd.h>

#include "gmt.h"
#include "intern.h"
#include "python.h"
#include "resolve.h"
#include "writer_api.h"

/*
 * The rules (docs/stacks.md, "Python frames"):
 * - Nothing of the interpreter's is called but PyGILState_GetThisThreadState (a TLS read:
 *   the thread's own state even while it does not hold the GIL, as faulthandler does) and,
 *   once, Py_GetVersion. No GIL, no Python code, no object made, no reference count
 *   touched. Everything is found with dlsym(RTLD_DEFAULT): libpython shared or linked
 *   into the executable alike; the library never links it.
 * - The thread reads its own frame chain while it is inside a C call (the hooked API), so
 *   the chain cannot change under it, and frames hold strong references to their code.
 *   Still, every pointer followed is checked first: aligned and in user space, the
 *   thread state's thread id is pthread_self(), a code object's type is &PyCode_Type, a
 *   string's &PyUnicode_Type, a line table's &PyBytes_Type with a bounded size, loops
 *   bounded; the first sighting of a code object also checks, through process_vm_readv
 *   (which fails instead of faulting on unmapped memory), that the object, its strings
 *   and its line table can be read. Any doubt: no
 *   Python frames (or a frame without a line), never a fault.
 * - Code objects are interned by address in one table of the library's lock-free kind
 *   (intern.h). An address can be reused by another code object once the first is
 *   freed: an entry also holds the object's name, filename and line-table pointers,
 *   first line and a fingerprint of the name's and file name's text (their strings can
 *   be freed and made again at the same addresses too: exec in a loop), and only an
 *   object that still has all of them is that entry's; another gets a new entry, id and
 *   PYCODE record. The entry ends in its PYCODE record, whose id is the table's.
 *   Each entry caches a few (instruction offset, line) pairs, so a line table is decoded
 *   once per call site, not per event.
 */

#define PY_ITER_MAX 4096                 /* frames walked, skipped ones included */
#define SLOT_COUNT (1u << 16)            /* 65536 code objects, 512 KiB of address space */
#define ARENA_BYTES ((size_t)24 << 20)   /* entries and their PYCODE records, address space */
#define LINETABLE_MAX (1u << 20)         /* bytes; a larger table is not believed */
#define CODE_COPY 224                    /* bytes of a code object checked on first sight */
#define LINE_WAYS 8
#define NO_TABLE UINT32_MAX

struct offsets {
    unsigned minor;
    int ts_thread_id;
    int ts_frame;      /* 3.9/3.10 frame, 3.13 current_frame; -1: through cframe */
    int ts_cframe;     /* 3.11/3.12 */
    int cf_current;    /* _PyCFrame.current_frame */
    int fr_back, fr_code, fr_instr; /* 3.9/3.10 f_lasti (int); 3.11+ prev_instr/instr_ptr */
    int fr_owner;      /* 3.11+ */
    int fr_is_entry;   /* 3.11 */
    int co_firstlineno, co_filename, co_name, co_qualname, co_linetable;
    int co_code;       /* 3.11+: co_code_adaptive, inline */
    int co_firsttraceable;
    int ascii_size, compact_size;
};

/* x86-64 release builds, from each version's headers (docs/stacks.md has the sources). */
static const struct offsets tables[] = {
    { 9, 176, 24, -1, 0, 24, 32, 104, -1, -1, 40, 104, 112, -1, 120, -1, -1, 48, 72 },
    { 10, 176, 24, -1, 0, 24, 32, 96, -1, -1, 40, 104, 112, -1, 120, -1, -1, 48, 72 },
    { 11, 152, -1, 56, 8, 48, 32, 56, 69, 68, 72, 112, 120, 128, 136, 184, 168, 48, 72 },
    { 12, 136, -1, 56, 0, 8, 0, 56, 70, -1, 68, 112, 120, 128, 136, 192, 176, 40, 56 },
    { 13, 152, 72, -1, 0, 8, 0, 56, 70, -1, 68, 112, 120, 128, 136, 200, 184, 40, 56 },
};

enum { OWNER_GENERATOR = 1, OWNER_CSTACK = 3 };
enum { PY_NEW, PY_BUSY, PY_READY, PY_ABSENT, PY_OFF };

struct code_entry {
    uint64_t hash;                 /* of the code object's address */
    uintptr_t code;                /* the code object's address */
    uintptr_t name, filename, linetable; /* the object's fields when it was seen */
    uint64_t name_fp, file_fp;     /* str_fp of the name and the file name then */
    int32_t firstlineno;
    uint32_t table_len;            /* bytes of the line table, checked readable once;
                                    * NO_TABLE: none to believe */
    _Atomic uint32_t next_way;     /* the way a miss overwrites when all are taken */
    uint32_t unused;
    _Atomic uint64_t lines[LINE_WAYS];   /* (lasti + 1) << 32 | line; 0 empty */
    struct gmt_rec_pycode rec;     /* code_id: the table's id; then the strings */
};
_Static_assert(offsetof(struct code_entry, hash) == 0, "an interned entry starts with its hash");
_Static_assert(offsetof(struct code_entry, rec) % 8 == 0, "the record is 8-byte aligned");
_Static_assert(SLOT_COUNT < (1u << 24), "ids fit a Python frame's 24 bits");

static _Atomic int state = PY_NEW;
static GMT_TLS unsigned retry_count; /* this thread's captures since it last looked */
static const struct offsets *off;
static void *(*get_tstate)(void);
static int (*is_finalizing)(void);
static uintptr_t code_type, unicode_type, bytes_type;
static uintptr_t eval_lo, eval_hi;
static struct gmt_intern codes = GMT_INTERN_INIT;
static _Atomic uint32_t codes_gen = 1; /* moved on by each reset of codes (python memo) */
static const struct gmt_intern_kind code_kind;
static _Atomic int vm_read_broken;   /* process_vm_readv refused (seccomp): trust structure */

static inline bool ptr_ok(uintptr_t p)
{
    return p >= 4096 && p < ((uintptr_t)1 << 47) && (p & 7) == 0;
}
static inline uintptr_t word(uintptr_t base, int at)
{
    return *(const uintptr_t *)(base + (uintptr_t)at);
}
static inline int32_t i32(uintptr_t base, int at)
{
    return *(const int32_t *)(base + (uintptr_t)at);
}

/* Whether len bytes at p can be read: a copy through the kernel, which fails where a
 * load would fault. Slow (a syscall): first sightings only. */
static bool readable(uintptr_t p, size_t len)
{
    if (atomic_load_explicit(&vm_read_broken, memory_order_relaxed))
        return true;
    unsigned char buf[256];
    while (len) {
        size_t k = len < sizeof buf ? len : sizeof buf;
        struct iovec l = { buf, k }, r = { (void *)p, k };
        ssize_t got = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
        if (got < 0 && (errno == ENOSYS || errno == EPERM)) {
            atomic_store_explicit(&vm_read_broken, 1, memory_order_relaxed);
            return true;
        }
        if (got != (ssize_t)k)
            return false;
        p += k;
        len -= k;
    }
    return true;
}

static void fork_child(void)
{
    gmt_intern_reset(&codes, &code_kind);
    atomic_fetch_add_explicit(&codes_gen, 1, memory_order_relaxed); /* memos: ids of old */
}

static void fork_child_setup(void)
{
    if (atomic_load_explicit(&state, memory_order_relaxed) == PY_BUSY)
        atomic_store_explicit(&state, PY_NEW, memory_order_relaxed);
}

__attribute__((constructor)) static void register_fork_child(void)
{
    pthread_atfork(NULL, NULL, fork_child_setup);
}

static unsigned parse_minor(const char *v)
{
    /* "3.11.7 (main, …": the major must be 3 */
    if (!v || v[0] != '3' || v[1] != '.')
        return 0;
    unsigned m = 0;
    for (const char *p = v + 2; *p >= '0' && *p <= '9' && m < 100; p++)
        m = m * 10 + (unsigned)(*p - '0');
    return m;
}

/* A symbol of the process's global scope (libpython's, where Python runs), asked of the
 * real dlsym: the library's own export would only hand the name on. */
static void *py_sym(const char *name)
{
    typedef void *dlsym_fn(void *, const char *);
    dlsym_fn *real = (dlsym_fn *)gmt_real_dl(GMT_DL_DLSYM);
    return real ? real(RTLD_DEFAULT, name) : NULL;
}

/* The interpreter, found once it is loaded. False: none (asked again now and then, for a
 * program that loads libpython later), or one this file does not know. */
static bool setup_slow(void)
{
    int st = atomic_load_explicit(&state, memory_order_acquire);
    if (st == PY_ABSENT) {
        /* a program without Python pays one thread-local increment; each thread looks
         * again every 4096 of its captures */
        if (++retry_count & 4095)
            return false;
        int expect = PY_ABSENT;
        if (!atomic_compare_exchange_strong(&state, &expect, PY_NEW))
            return false;
        st = PY_NEW;
    }
    if (st != PY_NEW)
        return false;
    int expect = PY_NEW;
    if (!atomic_compare_exchange_strong(&state, &expect, PY_BUSY))
        return false; /* another thread is at it: this capture goes without */

    int result = PY_ABSENT;
    void *gts = py_sym("PyGILState_GetThisThreadState");
    void *ct = py_sym("PyCode_Type");
    void *ut = py_sym("PyUnicode_Type");
    void *bt = py_sym("PyBytes_Type");
    void *eval = py_sym("_PyEval_EvalFrameDefault");
    const char *(*getversion)(void) = (const char *(*)(void))py_sym("Py_GetVersion");
    if (gts && ct && ut && bt && getversion) {
        result = PY_OFF;
        unsigned minor = 0;
        const unsigned long *hex = py_sym("Py_Version");
        if (hex)
            minor = (unsigned)(*hex >> 24) == 3 ? (unsigned)(*hex >> 16 & 0xff) : 0;
        else
            minor = parse_minor(getversion());
        for (size_t i = 0; i < GMT_COUNTOF(tables); i++)
            if (tables[i].minor == minor)
                off = &tables[i];
        /* 3.13: the runtime describes itself (_Py_DebugOffsets, first in _PyRuntime):
         * a free-threaded build, or one whose layout is not the table's, is refused. */
        const unsigned char *rt = py_sym("_PyRuntime");
        if (off && minor == 13) {
            const uint64_t *d = (const uint64_t *)(const void *)rt;
            if (!rt || memcmp(rt, "xdebugpy", 8) != 0 || d[2] != 0)
                off = NULL;
        }
        if (off && ptr_ok((uintptr_t)ct)) {
            if (gmt_intern_map(&codes, &code_kind)) {
                get_tstate = (void *(*)(void))gts;
                is_finalizing = (int (*)(void))py_sym("_Py_IsFinalizing");
                if (!is_finalizing)
                    is_finalizing = (int (*)(void))py_sym("Py_IsFinalizing");
                code_type = (uintptr_t)ct;
                unicode_type = (uintptr_t)ut;
                bytes_type = (uintptr_t)bt;
                Dl_info info;
                const ElfW(Sym) *sym = NULL;
                if (eval && dladdr1(eval, &info, (void **)&sym, RTLD_DL_SYMENT) && sym &&
                    sym->st_size) {
                    eval_lo = (uintptr_t)eval;
                    eval_hi = eval_lo + sym->st_size;
                }
                pthread_atfork(NULL, NULL, fork_child);
                result = PY_READY;
            } else {
                gmt_warn("no memory for the Python code table: no Python frames");
            }
        } else if (!off) {
            gmt_warn("Python %.20s is not one whose frames the library reads (3.9-3.13, "
                     "not free-threaded): native frames only", getversion());
        }
    }
    atomic_store_explicit(&state, result, memory_order_release);
    return result == PY_READY;
}

static inline bool setup(void)
{
    if (GMT_LIKELY(atomic_load_explicit(&state, memory_order_acquire) == PY_READY))
        return true;
    return setup_slow();
}


/* ---- strings and line tables ---- */

/* A str object's text as UTF-8 into out (at most cap - 1 bytes and a NUL, cut at a whole
 * character). Returns the bytes written including the NUL; "?" when it is not a compact
 * str. */
static uint32_t read_str(uintptr_t s, char *out, uint32_t cap)
{
    uint32_t n = 0;
    if (!ptr_ok(s) || word(s, 8) != unicode_type || !readable(s, (size_t)off->compact_size))
        goto unknown;
    int64_t len = (int64_t)word(s, 16);
    uint32_t st = *(const uint32_t *)(s + 32);
    unsigned kind = st >> 2 & 7;
    bool compact = st >> 5 & 1, ascii = st >> 6 & 1;
    if (!compact || len < 0 || len > 65536 || (kind != 1 && kind != 2 && kind != 4))
        goto unknown;
    uintptr_t data = s + (uintptr_t)(ascii ? off->ascii_size : off->compact_size);
    if (!readable(data, (size_t)len * kind))
        goto unknown;
    for (int64_t i = 0; i < len; i++) {
        uint32_t c = kind == 1 ? ((const uint8_t *)data)[i]
                   : kind == 2 ? ((const uint16_t *)data)[i] : ((const uint32_t *)data)[i];
        char b[4];
        uint32_t k;
        if (c < 0x80) {
            b[0] = (char)(c ? c : '?');
            k = 1;
        } else if (c < 0x800) {
            b[0] = (char)(0xc0 | c >> 6), b[1] = (char)(0x80 | (c & 0x3f));
            k = 2;
        } else if (c < 0x10000) {
            if (c >= 0xd800 && c < 0xe000)
                c = 0xfffd; /* a lone surrogate (surrogateescape'd file names) */
            b[0] = (char)(0xe0 | c >> 12), b[1] = (char)(0x80 | (c >> 6 & 0x3f)),
            b[2] = (char)(0x80 | (c & 0x3f));
            k = 3;
        } else {
            if (c > 0x10ffff)
                c = 0xfffd;
            b[0] = (char)(0xf0 | c >> 18), b[1] = (char)(0x80 | (c >> 12 & 0x3f)),
            b[2] = (char)(0x80 | (c >> 6 & 0x3f)), b[3] = (char)(0x80 | (c & 0x3f));
            k = 4;
        }
        if (n + k + 1 > cap)
            break;
        memcpy(out + n, b, k);
        n += k;
    }
    out[n] = 0;
    return n + 1;
unknown:
    memcpy(out, "?", 2);
    return 2;
}

/* Whether s is a compact str whose header and text can be read: names and file names
 * are (made by the compiler or unmarshalled); first sight of a code object only. */
static bool str_ok(uintptr_t s)
{
    if (!ptr_ok(s) || !readable(s, (size_t)off->compact_size) || word(s, 8) != unicode_type)
        return false;
    uint64_t len = word(s, 16);
    uint32_t st = *(const uint32_t *)(s + 32);
    unsigned kind = st >> 2 & 7;
    if (!(st >> 5 & 1) || len > 65536 || (kind != 1 && kind != 2 && kind != 4))
        return false;
    uintptr_t data = s + (uintptr_t)((st >> 6 & 1) ? off->ascii_size : off->compact_size);
    return readable(data, (size_t)len * kind + 1);
}

/* A str's length and last 8 bytes of text: two strings that differ there are not the
 * same name, whatever their addresses. s is a code object's field that str_ok accepted
 * when the code was first seen, and later the field of a live code object (its frame
 * holds it) equal to that one: a live compact str. A text shorter than 8 bytes is read
 * as one word from its start, masked: its NUL and the object's padding follow it inside
 * its allocation (pymalloc and malloc round sizes up to 8 bytes or more). */
static inline __attribute__((always_inline)) uint64_t str_fp(uintptr_t s)
{
    uint64_t len = word(s, 16);
    uint32_t st = *(const uint32_t *)(s + 32);
    if (len > 65536)
        return len; /* not the string that was checked, so not the same */
    uintptr_t data = s + (uintptr_t)((st >> 6 & 1) ? off->ascii_size : off->compact_size);
    size_t bytes = (size_t)len * (st >> 2 & 7);
    uintptr_t at = bytes >= 8 ? data + bytes - 8 : data;
    uint64_t tail;
    memcpy(&tail, (const void *)at, 8);
    if (bytes < 8)
        tail &= (1ull << (8 * bytes)) - 1; /* bytes 0: 1 << 0 - 1 = 0 */
    return tail ^ len << 48;
}

/* The line table's bytes, NULL when the object is not a bytes object of sane size. */
static const uint8_t *table_bytes(uintptr_t b, uint32_t *len)
{
    if (!ptr_ok(b) || word(b, 8) != bytes_type)
        return NULL;
    int64_t n = (int64_t)word(b, 16);
    if (n < 0 || n > LINETABLE_MAX)
        return NULL;
    *len = (uint32_t)n;
    return (const uint8_t *)(b + 32);
}

/* 3.9 co_lnotab: (address delta, signed line delta) pairs; addr in bytes. */
static int line_39(const uint8_t *t, uint32_t n, int first, int64_t addr)
{
    int line = first;
    int64_t a = 0;
    for (uint32_t i = 0; i + 1 < n; i += 2) {
        a += t[i];
        if (a > addr)
            break;
        line += (int8_t)t[i + 1];
    }
    return line;
}

/* 3.10 co_linetable: ranges [start, start + delta) in bytes, each with a signed line
 * delta; -128: the range has no line. */
static int line_310(const uint8_t *t, uint32_t n, int first, int64_t addr)
{
    int64_t end = 0;
    int line = first, ar_line = -1;
    uint32_t i = 0;
    while (end <= addr) {
        if (i + 1 >= n)
            return -1;
        end += t[i];
        int8_t d = (int8_t)t[i + 1];
        i += 2;
        if (d == -128) {
            ar_line = -1;
        } else {
            line += d;
            ar_line = line;
        }
    }
    return ar_line;
}

static bool varint(const uint8_t *t, uint32_t n, uint32_t *i, uint32_t *v)
{
    uint32_t val = 0;
    for (unsigned shift = 0; shift <= 24; shift += 6) {
        if (*i >= n)
            return false;
        uint8_t b = t[(*i)++];
        val |= (uint32_t)(b & 63) << shift;
        if (!(b & 64)) {
            *v = val;
            return true;
        }
    }
    return false;
}

/* 3.11+ location table: entries of 1..8 code units; addr in code units. */
static int line_311(const uint8_t *t, uint32_t n, int first, int64_t addr)
{
    int line = first;
    int64_t a = 0;
    uint32_t i = 0, v;
    while (i < n) {
        uint8_t b = t[i++];
        if (!(b & 0x80))
            return -1;
        unsigned code = b >> 3 & 15, len = (b & 7) + 1u;
        bool none = false;
        if (code == 15) {
            none = true;
        } else if (code == 14 || code == 13) {
            if (!varint(t, n, &i, &v))
                return -1;
            line += (v & 1) ? -(int)(v >> 1) : (int)(v >> 1);
            for (int k = 0; code == 14 && k < 3; k++)
                if (!varint(t, n, &i, &v))
                    return -1;
        } else if (code >= 10) {
            line += (int)code - 10;
            i += 2;
        } else {
            i += 1;
        }
        if (addr >= a && addr < a + len)
            return none ? -1 : line;
        a += len;
    }
    return -1;
}

/* ---- code objects ---- */

/* A code object's fields, as its entry keeps them. */
struct code_key {
    uintptr_t co, name, file, lt;
    int32_t first;
};

/* The same object as the entry's, not another that took its address since. */
static inline __attribute__((always_inline)) bool same_code(const void *entry, const void *key)
{
    const struct code_entry *e = entry;
    const struct code_key *k = key;
    return e->code == k->co && e->name == k->name && e->filename == k->file &&
           e->linetable == k->lt && e->firstlineno == k->first &&
           e->name_fp == str_fp(k->name) && e->file_fp == str_fp(k->file);
}

/* First sight: the object and its strings are checked before anything is believed, then
 * the entry and its PYCODE record are written (the strings take what they need of the
 * room reserved for the longest). 0: not a code object to intern. */
static size_t fill_code(void *entry, const void *key, size_t bytes)
{
    struct code_entry *e = entry;
    const struct code_key *k = key;
    uintptr_t qual = off->co_qualname >= 0 ? word(k->co, off->co_qualname) : 0;
    if (!readable(k->co, CODE_COPY) || !str_ok(k->name) || !str_ok(k->file) ||
        (qual && !ptr_ok(qual)))
        return 0;
    e->code = k->co;
    e->name = k->name;
    e->filename = k->file;
    e->linetable = k->lt;
    e->name_fp = str_fp(k->name);
    e->file_fp = str_fp(k->file);
    e->firstlineno = k->first;
    /* the line table is an immutable bytes object the code holds: checked once */
    uint32_t tl = 0;
    const uint8_t *t = table_bytes(k->lt, &tl);
    e->table_len = t && readable((uintptr_t)t, tl) ? tl : NO_TABLE;
    atomic_store_explicit(&e->next_way, 0, memory_order_relaxed);
    for (int w = 0; w < LINE_WAYS; w++)
        atomic_store_explicit(&e->lines[w], 0, memory_order_relaxed);
    struct gmt_rec_pycode *r = &e->rec;
    char *s = (char *)(r + 1);
    r->name_len = read_str(k->name, s, GMT_PYCODE_STR_MAX);
    r->qualname_len = read_str(qual ? qual : k->name, s + r->name_len, GMT_PYCODE_STR_MAX);
    r->filename_len = read_str(k->file, s + r->name_len + r->qualname_len, GMT_PYCODE_STR_MAX);
    uint32_t used = (uint32_t)sizeof *r + r->name_len + r->qualname_len + r->filename_len;
    uint32_t padded = gmt_rec_padded(used);
    memset((char *)r + used, 0, padded - used);
    r->h.type = GMT_REC_PYCODE;
    r->h.aux = 0;
    r->h.size = padded;
    r->firstlineno = k->first;
    r->reserved = 0;
    (void)bytes;
    return offsetof(struct code_entry, rec) + padded;
}

static const struct gmt_intern_kind code_kind = {
    .slots = SLOT_COUNT,
    .arena_bytes = ARENA_BYTES,
    .id_at = offsetof(struct code_entry, rec.code_id),
    .same = same_code,
    .fill = fill_code,
};

/* The entry of code object co, made (and its PYCODE written) on first sight; NULL when
 * co is not a code object or the table is full. *id: its id. Two threads seeing co first
 * at once: one entry and one id (one frame value, so one stack for the same frames on
 * every thread). */
static struct code_entry *code_entry(uintptr_t co, uint32_t *id)
{
    if (!ptr_ok(co) || word(co, 8) != code_type)
        return NULL;
    struct code_key k = { co, word(co, off->co_name), word(co, off->co_filename),
                          word(co, off->co_linetable), i32(co, off->co_firstlineno) };
    bool made;
    size_t room = offsetof(struct code_entry, rec) + sizeof(struct gmt_rec_pycode) +
                  3 * GMT_PYCODE_STR_MAX + GMT_ALIGN;
    struct code_entry *e = gmt_intern(&codes, &code_kind, gmt_mix(co), &k, room, id, &made);
    if (made)
        gmt_emit(&e->rec.h, 0);
    return e && *id ? e : NULL;
}

/* lasti: in bytes (3.9), code units (3.10+); < 0 not started. 0: unknown line. */
static uint32_t code_line(struct code_entry *s, uintptr_t co, int64_t lasti)
{
    if (lasti < 0)
        return s->firstlineno > 0 ? (uint32_t)s->firstlineno : 0;
    uint64_t key = (uint64_t)(lasti + 1) << 32;
    int empty = -1;
    for (int w = 0; w < LINE_WAYS; w++) {
        uint64_t v = atomic_load_explicit(&s->lines[w], memory_order_relaxed);
        if ((v & 0xffffffff00000000ull) == key)
            return (uint32_t)v;
        if (!v && empty < 0)
            empty = w;
    }
    uint32_t n = s->table_len;
    const uint8_t *t = (const uint8_t *)(s->linetable + 32);
    int line = -1;
    if (n != NO_TABLE) { /* an empty table is a table: 3.9's then says the first line */
        if (off->minor == 9)
            line = line_39(t, n, s->firstlineno, lasti);
        else if (off->minor == 10)
            line = line_310(t, n, s->firstlineno, lasti * 2);
        else
            line = line_311(t, n, s->firstlineno, lasti);
    }
    uint32_t l = line > 0 && line < (1 << 24) ? (uint32_t)line : 0;
    if (lasti < (1ll << 31)) {
        int w = empty >= 0 ? empty
                           : (int)(atomic_fetch_add_explicit(&s->next_way, 1, memory_order_relaxed) %
                                   LINE_WAYS);
        atomic_store_explicit(&s->lines[w], key | l, memory_order_relaxed);
    }
    (void)co;
    return l;
}

/* ---- the thread's memo of frames it has read ---- */

/*
 * A training loop allocates from the same few Python stacks over and over, and its
 * outer frames are the same frames at the same instruction each time. Each thread
 * keeps the frames its last walks read, by frame address: a frame that is the same
 * frame of the same code object at the same instruction, whose code object still has
 * the same name, file name and line table objects and first line, and whose name and
 * file name still hash the same, is the frame value read before, with no intern lookup
 * and no line lookup. The hashes stand for the intern's text fingerprints (exec in a
 * loop can make another function at the same frame, code, string and table addresses):
 * a str's hash, once computed, is of its whole text; a str not hashed yet (-1) falls
 * back to str_fp. A fork resets the intern's ids, and with them every thread's memo.
 */
#define MEMO_SLOTS 256 /* 20 KiB of each thread's TLS */
struct memo_slot {
    uintptr_t f, co, name, file, lt;
    uint64_t name_h, file_h;
    uint64_t at;       /* f_lasti (3.9/3.10) or the instruction pointer */
    uint64_t value;    /* the GMT_PYFRAME; 0: empty */
    int32_t first;
};
static GMT_TLS struct memo_slot memo[MEMO_SLOTS];
static GMT_TLS uint32_t memo_gen;           /* the generation this thread's memo is of */
static GMT_TLS const struct code_entry *memo_entry; /* frame_value's last entry */

static inline uint64_t str_id(uintptr_t s)
{
    uint64_t h = word(s, 24); /* PyASCIIObject.hash */
    return h != UINT64_MAX ? h : str_fp(s);
}

/* 3.11+ frames lie one after another in the thread's frame stack, each more than 64
 * bytes: a stack of frames spanning up to 16 KiB has each in a slot of its own. */
static inline struct memo_slot *memo_at(uintptr_t f)
{
    return &memo[(f >> 6) & (MEMO_SLOTS - 1)];
}

/* The value this thread read for frame f of code object co at `at` before, when
 * everything it was read from is still the same; 0: read it. A slot holds only code
 * objects that were checked, so co's type is the one check left before its fields. */
static inline uint64_t memo_get(const struct memo_slot *m, uintptr_t f, uintptr_t co,
                                uint64_t at, const struct offsets *o)
{
    if (m->f != f || m->co != co || m->at != at || word(co, 8) != code_type)
        return 0;
    uintptr_t name = word(co, o->co_name), file = word(co, o->co_filename);
    if (m->name != name || m->file != file || m->lt != word(co, o->co_linetable) ||
        m->first != i32(co, o->co_firstlineno) || m->name_h != str_id(name) ||
        m->file_h != str_id(file))
        return 0;
    return m->value;
}

static inline void memo_put(struct memo_slot *m, uintptr_t f, uint64_t at, uint64_t value)
{
    const struct code_entry *s = memo_entry;
    m->f = f;
    m->co = s->code;
    m->name = s->name;
    m->file = s->filename;
    m->lt = s->linetable;
    m->first = s->firstlineno;
    m->name_h = str_id(s->name);
    m->file_h = str_id(s->filename);
    m->at = at;
    m->value = value;
}

/* The frame value of a frame of co at `at` (owner: 3.11+ its owner), read afresh: 1, or
 * 0 for a frame to skip (not a code object in 3.11+, or not yet started), -1 for a
 * frame not to believe. memo_entry: the code's entry, for memo_put. */
static __attribute__((noinline)) int frame_value(uintptr_t co, uint64_t at, int owner,
                                                 const struct offsets *o, uint64_t *v)
{
    int64_t lasti = -1;
    *v = 0;
    if (o->minor <= 10) {
        lasti = (int64_t)at;
    } else {
        if (!ptr_ok(co) || word(co, 8) != code_type)
            return 0;
        uintptr_t code0 = co + (uintptr_t)o->co_code;
        int32_t firsttr = i32(co, o->co_firsttraceable);
        if (owner != OWNER_GENERATOR && (intptr_t)(at - code0) < (intptr_t)firsttr * 2)
            return 0; /* incomplete: its first instructions not yet run */
        if (at >= code0 && at - code0 < ((uintptr_t)1 << 32))
            lasti = (int64_t)((at - code0) / 2);
    }
    uint32_t id;
    struct code_entry *s = code_entry(co, &id);
    if (!s)
        return -1;
    memo_entry = s;
    *v = GMT_PYFRAME(id, code_line(s, co, lasti));
    return 1;
}

/* ---- the frame chain ---- */

uint32_t gmt_python_frames(struct gmt_py_stack *out)
{
    out->n = out->ngroups = 0;
    out->eval_lo = out->eval_span = 0;
    if (!gmt_opt.python || !setup())
        return 0;
    out->eval_lo = eval_lo;
    out->eval_span = eval_hi - eval_lo;
    if (is_finalizing && is_finalizing())
        return 0;
    const struct offsets o = *off; /* in registers or the stack: no reload after stores */
    uintptr_t ts = (uintptr_t)get_tstate();
    if (!ptr_ok(ts) || word(ts, o.ts_thread_id) != (uintptr_t)pthread_self())
        return 0;
    uintptr_t f;
    if (o.ts_frame >= 0) {
        f = word(ts, o.ts_frame);
    } else {
        uintptr_t cf = word(ts, o.ts_cframe);
        if (!ptr_ok(cf))
            return 0;
        f = word(cf, o.cf_current);
    }
    uint32_t gen = atomic_load_explicit(&codes_gen, memory_order_relaxed);
    if (GMT_UNLIKELY(memo_gen != gen)) {
        memset(memo, 0, sizeof memo);
        memo_gen = gen;
    }
    uint32_t n = 0, g = 0, in_group = 0;
    bool old = o.minor <= 10;
    for (unsigned iter = 0; f && iter < PY_ITER_MAX; iter++) {
        if (!ptr_ok(f))
            break;
        uintptr_t co = word(f, o.fr_code);
        uintptr_t back = word(f, o.fr_back);
        /* where the frame is: 3.9/3.10 f_lasti, 3.11+ the instruction pointer */
        uint64_t at = old ? (uint64_t)(int64_t)i32(f, o.fr_instr) : word(f, o.fr_instr);
        bool end_group = old, skip = false;
        int owner = 0;
        if (!old) {
            owner = *(const int8_t *)(f + (uintptr_t)o.fr_owner);
            if (owner == OWNER_CSTACK && o.minor >= 12)
                skip = end_group = true;
            else if (o.fr_is_entry >= 0 && *(const uint8_t *)(f + (uintptr_t)o.fr_is_entry))
                end_group = true;
        }
        if (!skip && n < GMT_PY_DEPTH_MAX) {
            struct memo_slot *m = memo_at(f);
            uint64_t v = memo_get(m, f, co, at, &o);
            if (!v) {
                int r = frame_value(co, at, owner, &o, &v);
                if (r < 0)
                    break; /* not a code object: believe nothing further out */
                if (r > 0)
                    memo_put(m, f, at, v);
            }
            if (v) {
                out->ip[n++] = v;
                in_group++;
            }
        }
        if (end_group) {
            if (g == GMT_PY_DEPTH_MAX)
                break;
            out->group[g++] = (uint16_t)in_group;
            in_group = 0;
        }
        if (n == GMT_PY_DEPTH_MAX || back == f)
            break;
        f = back;
    }
    if (in_group && g < GMT_PY_DEPTH_MAX)
        out->group[g++] = (uint16_t)in_group;
    out->n = n;
    out->ngroups = g;
    return n;
}
