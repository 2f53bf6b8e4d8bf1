/* nvtx.c: the NVTX v3 injection: NVTX loads this library (NVTX_INJECTION64_PATH) and gets its ranges recorded as NVTX_STRING and NVTX_RANGE records. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <wchar.h>

#include "clock.h"
#include "gmt.h"
#include "intern.h"
#include "writer_api.h"

/*
 * The protocol (NVTX v3's nvtxInit.h and nvtxTypes.h, restated here from its documented
 * ABI; no NVTX header is used). Each object built with the NVTX headers (libtorch_cuda,
 * libtorch_python, the nvtx Python package's extension, NCCL, ...) has its own copy of
 * NVTX's state, and at its first NVTX call looks up "InitializeInjectionNvtx2" in the
 * library NVTX_INJECTION64_PATH names and calls it with its export-table getter. When
 * that path names the preloaded library, dlopen hands back the loaded object: one state,
 * shared by every copy, and the entry point runs once per copy. It must be idempotent,
 * must not call NVTX (that copy's state is "initialising": a call would spin forever),
 * and returns non-zero once the copy's function slots point here; 0 makes NVTX turn
 * every call of that copy into a no-op, which is also the off switch.
 *
 * Export table 1 (CALLBACKS) is { size_t struct_size; int (*GetModuleFunctionTable)
 * (module, NvtxFunctionTable *out, unsigned *out_size) }; a module's table is an array
 * of pointers to the copy's function-pointer slots, index 0 unused, out_size entries.
 */
typedef void (*nvtx_fn)(void);
typedef nvtx_fn **nvtx_table;  /* NvtxFunctionTable: pointers to the slots */
typedef const void *(*nvtx_get_export_table)(uint32_t id);
struct nvtx_callbacks {        /* NvtxExportTableCallbacks, export table id 1 */
    size_t struct_size;
    int (*get_module_table)(int module, nvtx_table *out, unsigned *out_size);
};
#define NVTX_ETID_CALLBACKS 1
#define NVTX_MODULE_CORE 1
#define NVTX_MODULE_CORE2 5

/* nvtxEventAttributes_t (v2), what we read of it: the message, when the struct is whole */
#define ATTR_SIZE_AT 2         /* uint16_t size */
#define ATTR_MSG_TYPE_AT 32    /* int32_t messageType */
#define ATTR_MSG_AT 40         /* the message union: a pointer */
#define ATTR_SIZE 48
enum { MSG_ASCII = 1, MSG_UNICODE = 2, MSG_REGISTERED = 3 };

/*
 * Interning. Names and domains are kept by content in one global table of the library's
 * lock-free kind (intern.h), as stack.c keeps stacks. A registered string's handle and a
 * domain's handle are pointers to their entries. Each entry ends in its NVTX_STRING
 * record, whose id is the table's, written the first time it is used in a file: `gen` is
 * the file it was written to. A fork child writes a file of its own, so the child starts
 * a new generation rather than a new table (the handles the program holds must stay
 * valid there).
 */
#define TABLE_SLOTS (1u << 14)
#define ARENA_BYTES ((size_t)16 << 20)  /* address space; touched pages only */

struct entry {
    uint64_t hash;
    _Atomic uint32_t gen;      /* the file generation that has its record */
    uint32_t quiet;            /* a domain whose ranges are not recorded (CORE2, below);
                                * atomic accesses: every creator of the domain sets it */
    struct gmt_rec_nvtx_string rec; /* then the string, NUL-terminated, padded */
};
_Static_assert(offsetof(struct entry, rec) % 8 == 0, "the record is 8-byte aligned");
_Static_assert(offsetof(struct entry, hash) == 0, "an interned entry starts with its hash");

static struct gmt_once setup_once;
static struct gmt_intern names = GMT_INTERN_INIT;
static const struct gmt_intern_kind name_kind;
static _Atomic uint32_t file_gen = 1;
static _Atomic uint64_t next_range = 1;
/* Handed out when a name or domain cannot be interned (table full, no memory): NVTX
 * takes NULL for failure, and the program carries on unnamed. Its id is 0. */
static struct entry unnamed;

static void fork_child(void)
{
    atomic_fetch_add_explicit(&file_gen, 1, memory_order_relaxed);
    /* the parent's open ranges are not in the child's file */
    gmt_ts.nvtx.depth = 0;
    gmt_once_forked(&setup_once);
}

__attribute__((constructor)) static void register_fork_child(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}

static bool setup(void)
{
    int st = gmt_once_enter(&setup_once);
    if (GMT_LIKELY(st == GMT_ONCE_READY))
        return true;
    if (st != GMT_ONCE_BUSY) /* failed, or a handler inside our own setup */
        return false;
    if (!gmt_intern_map(&names, &name_kind)) {
        gmt_warn("no memory for NVTX names: ranges are recorded unnamed");
        gmt_once_leave(&setup_once, false);
        return false;
    }
    gmt_once_leave(&setup_once, true);
    return true;
}

static uint32_t entry_id(struct entry *e)
{
    return gmt_intern_id(e, offsetof(struct entry, rec.id));
}

/* The entry's NVTX_STRING goes into this file once, by whichever thread uses it first. */
static void written(struct entry *e)
{
    uint32_t g = atomic_load_explicit(&file_gen, memory_order_relaxed);
    uint32_t had = atomic_load_explicit(&e->gen, memory_order_relaxed);
    /* id 0: its maker has not drawn it yet (intern.h); written once it has */
    if (GMT_LIKELY(had == g) || e == &unnamed || !entry_id(e))
        return;
    if (atomic_compare_exchange_strong(&e->gen, &had, g) && gmt_writer_ready())
        gmt_emit(&e->rec, 0);
}

static uint64_t fnv(unsigned kind, const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ kind;
    h *= 0x100000001b3ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

struct name_key {
    unsigned kind;
    const char *s;
    size_t n;
};

static inline bool same_name(const void *entry, const void *key)
{
    const struct entry *e = entry;
    const struct name_key *k = key;
    return e->rec.h.aux == k->kind && e->rec.len == k->n + 1 && !memcmp(e + 1, k->s, k->n);
}

static inline size_t fill_name(void *entry, const void *key, size_t bytes)
{
    struct entry *e = entry;
    const struct name_key *k = key;
    uint32_t size = (uint32_t)(bytes - offsetof(struct entry, rec));
    atomic_store_explicit(&e->gen, 0, memory_order_relaxed);
    e->quiet = 0;
    e->rec.h = (struct gmt_rec){GMT_REC_NVTX_STRING, (uint16_t)k->kind, size};
    e->rec.len = (uint32_t)k->n + 1;
    memcpy(e + 1, k->s, k->n);
    memset((char *)(e + 1) + k->n, 0, size - sizeof e->rec - k->n); /* the NUL, padding */
    return bytes;
}

static const struct gmt_intern_kind name_kind = {
    .slots = TABLE_SLOTS,
    .arena_bytes = ARENA_BYTES,
    .id_at = offsetof(struct entry, rec.id),
    .same = same_name,
    .fill = fill_name,
};

/* The entry for (kind, s[0..n)), made when new; &unnamed when it can't be. */
static struct entry *intern(unsigned kind, const char *s, size_t n)
{
    if (n > GMT_NVTX_STRING_MAX - 1)
        n = GMT_NVTX_STRING_MAX - 1;
    if (GMT_UNLIKELY(!setup()))
        return &unnamed;
    struct name_key key = { kind, s, n };
    uint32_t size = gmt_rec_padded((uint32_t)(sizeof(struct gmt_rec_nvtx_string) + n + 1));
    uint32_t id;
    bool made;
    struct entry *e = gmt_intern(&names, &name_kind, fnv(kind, s, n), &key,
                                 offsetof(struct entry, rec) + size, &id, &made);
    return e ? e : &unnamed;
}

/* A handle we handed out (a domain's, a registered string's), or NULL for one we did not. */
static struct entry *ours(const void *handle)
{
    const unsigned char *p = handle;
    if (handle == &unnamed)
        return &unnamed;
    if (!names.arena || p < names.arena + 8 || p >= names.arena + ARENA_BYTES)
        return NULL;
    return (struct entry *)(void *)(uintptr_t)p;
}

static uint32_t id_of(struct entry *e)
{
    if (e == &unnamed)
        return 0;
    written(e);
    return entry_id(e);
}

static uint32_t name_ascii(const char *s)
{
    return s ? id_of(intern(GMT_NVTX_STR_NAME, s, strnlen(s, GMT_NVTX_STRING_MAX))) : 0;
}

/* Wide strings (wchar_t, 4 bytes on Linux): ASCII kept, anything else as '?'. */
static struct entry *intern_wide(unsigned kind, const wchar_t *w)
{
    char buf[256];
    size_t n = 0;
    for (; n < sizeof buf && w[n]; n++)
        buf[n] = w[n] > 0 && w[n] < 128 ? (char)w[n] : '?';
    return intern(kind, buf, n);
}

static uint32_t name_wide(const wchar_t *w)
{
    return w ? id_of(intern_wide(GMT_NVTX_STR_NAME, w)) : 0;
}

static uint32_t name_attr(const void *attr)
{
    if (!attr)
        return 0;
    uint16_t size;
    int32_t type;
    const void *msg;
    memcpy(&size, (const char *)attr + ATTR_SIZE_AT, sizeof size);
    if (size < ATTR_SIZE)
        return 0;
    memcpy(&type, (const char *)attr + ATTR_MSG_TYPE_AT, sizeof type);
    memcpy(&msg, (const char *)attr + ATTR_MSG_AT, sizeof msg);
    switch (type) {
    case MSG_ASCII:
        return name_ascii(msg);
    case MSG_UNICODE:
        return name_wide(msg);
    case MSG_REGISTERED: {
        struct entry *e = ours(msg);
        return e && e->rec.h.aux == GMT_NVTX_STR_NAME ? id_of(e) : 0;
    }
    }
    return 0;
}

/* A domain's id (0 the default domain); *quiet: its ranges are not recorded. */
static uint32_t domain_id(const void *domain, bool *quiet)
{
    struct entry *e = domain ? ours(domain) : NULL;
    *quiet = false;
    if (!e || e->rec.h.aux != GMT_NVTX_STR_DOMAIN)
        return 0;
    *quiet = __atomic_load_n(&e->quiet, __ATOMIC_RELAXED);
    return *quiet ? entry_id(e) : id_of(e);
}

/* ---- the records ---- */

static void range(unsigned op, uint32_t domain, uint32_t name)
{
    if (!gmt_writer_ready())
        return;
    struct gmt_rec_nvtx_range r = {
        .h = {GMT_REC_NVTX_RANGE, (uint16_t)op, sizeof r},
        .time_ns = gmt_now_ns(),
        .domain = domain,
        .name = name,
    };
    gmt_emit_untimed(&r, sizeof r, 0);
}

/* START and END: the range's id too. */
static void range_ext(unsigned op, uint32_t domain, uint32_t name, uint64_t range_id)
{
    if (!gmt_writer_ready())
        return;
    struct gmt_rec_nvtx_range_ext r = {
        .r = {.h = {GMT_REC_NVTX_RANGE, (uint16_t)op, sizeof r}, .time_ns = gmt_now_ns(),
              .domain = domain, .name = name},
        .range_id = range_id,
    };
    gmt_emit_untimed(&r, sizeof r, 0);
}
_Static_assert(sizeof(struct gmt_rec_nvtx_range_ext) % GMT_ALIGN == 0, "no padding");
_Static_assert(sizeof(struct gmt_rec_nvtx_range) % GMT_ALIGN == 0, "no padding");

/* Push and pop nest per thread and domain: the level NVTX returns is the count of the
 * domain's ranges open below. A signal handler's push and pop come in balanced pairs:
 * one that runs between a push's store of its entry and its move of depth takes the
 * same slot, so the entry is stored again once depth has moved (and the handler's own
 * would go above it); a pop shifts the entries above its own before depth moves. */
static int push(uint32_t domain, uint32_t name, bool quiet)
{
    int e = errno;
    struct gmt_nvtx_thread *t = &gmt_ts.nvtx;
    uint32_t d = t->depth, n = d < GMT_NVTX_DEPTH ? d : GMT_NVTX_DEPTH;
    int level = 0;
    for (uint32_t i = 0; i < n; i++)
        level += t->open[i].domain == domain;
    if (d < GMT_NVTX_DEPTH) {
        t->open[d].domain = domain;
        t->open[d].name = name;
    } else {
        level += (int)(d - GMT_NVTX_DEPTH); /* beyond what is kept: counted as ours */
    }
    atomic_signal_fence(memory_order_seq_cst);
    t->depth = d + 1;
    atomic_signal_fence(memory_order_seq_cst);
    if (d < GMT_NVTX_DEPTH) {
        t->open[d].domain = domain;
        t->open[d].name = name;
    }
    if (!quiet)
        range(GMT_NVTX_PUSH, domain, name);
    errno = e;
    return level;
}

static int pop(uint32_t domain, bool quiet)
{
    int e = errno;
    struct gmt_nvtx_thread *t = &gmt_ts.nvtx;
    uint32_t d = t->depth;
    int level = -1;
    uint32_t name = 0;
    if (d > GMT_NVTX_DEPTH) {
        t->depth = d - 1; /* a range past what is kept: its name is not known here */
        level = (int)d - 1;
    } else if (d) {
        int i = (int)d - 1;
        while (i >= 0 && t->open[i].domain != domain)
            i--;
        if (i >= 0) {
            name = t->open[i].name;
            level = 0;
            for (int j = 0; j < i; j++)
                level += t->open[j].domain == domain;
            for (uint32_t j = (uint32_t)i; j + 1 < d; j++)
                t->open[j] = t->open[j + 1];
            atomic_signal_fence(memory_order_seq_cst);
            t->depth = d - 1;
        }
    }
    if (!quiet)
        range(GMT_NVTX_POP, domain, name);
    errno = e;
    return level;
}

static uint64_t start(uint32_t domain, uint32_t name, bool quiet)
{
    int e = errno;
    uint64_t id = atomic_fetch_add_explicit(&next_range, 1, memory_order_relaxed);
    if (!quiet)
        range_ext(GMT_NVTX_START, domain, name, id);
    errno = e;
    return id;
}

static void end(uint32_t domain, uint64_t id, bool quiet)
{
    if (quiet)
        return;
    int e = errno;
    range_ext(GMT_NVTX_END, domain, 0, id);
    errno = e;
}

static void mark(uint32_t domain, uint32_t name, bool quiet)
{
    if (quiet)
        return;
    int e = errno;
    range(GMT_NVTX_MARK, domain, name);
    errno = e;
}

/* ---- CORE (module 1): the default domain ---- */
static void mark_ex(const void *attr) { mark(0, name_attr(attr), false); }
static void mark_a(const char *s) { mark(0, name_ascii(s), false); }
static void mark_w(const wchar_t *s) { mark(0, name_wide(s), false); }
static uint64_t start_ex(const void *attr) { return start(0, name_attr(attr), false); }
static uint64_t start_a(const char *s) { return start(0, name_ascii(s), false); }
static uint64_t start_w(const wchar_t *s) { return start(0, name_wide(s), false); }
static void range_end(uint64_t id) { end(0, id, false); }
static int push_ex(const void *attr) { return push(0, name_attr(attr), false); }
static int push_a(const char *s) { return push(0, name_ascii(s), false); }
static int push_w(const wchar_t *s) { return push(0, name_wide(s), false); }
static int range_pop(void) { return pop(0, false); }

/* ---- CORE2 (module 5): domains and registered strings ----
 * A quiet domain's ranges keep their nesting and ids but write nothing, and their
 * names are not looked at: NCCL's ("NCCL"), whose ranges around each of its calls the
 * NCCL scopes already record; a range there would double a collective's cost. */
static void d_mark_ex(const void *dom, const void *attr)
{
    bool q;
    uint32_t d = domain_id(dom, &q);
    mark(d, q ? 0 : name_attr(attr), q);
}
static uint64_t d_start_ex(const void *dom, const void *attr)
{
    bool q;
    uint32_t d = domain_id(dom, &q);
    return start(d, q ? 0 : name_attr(attr), q);
}
static void d_range_end(const void *dom, uint64_t id)
{
    bool q;
    uint32_t d = domain_id(dom, &q);
    end(d, id, q);
}
static int d_push_ex(const void *dom, const void *attr)
{
    bool q;
    uint32_t d = domain_id(dom, &q);
    return push(d, q ? 0 : name_attr(attr), q);
}
static int d_pop(const void *dom)
{
    bool q;
    uint32_t d = domain_id(dom, &q);
    return pop(d, q);
}

static const void *d_register_a(const void *dom, const char *s)
{
    int e = errno;
    struct entry *x = s ? intern(GMT_NVTX_STR_NAME, s, strnlen(s, GMT_NVTX_STRING_MAX)) : &unnamed;
    errno = e;
    return x;
}
static const void *d_register_w(const void *dom, const wchar_t *s)
{
    int e = errno;
    struct entry *x = s ? intern_wide(GMT_NVTX_STR_NAME, s) : &unnamed;
    errno = e;
    return x;
}
/* A domain made quiet by its name, as stored in its entry. */
static struct entry *domain_made(struct entry *x)
{
    if (x != &unnamed && x->rec.len == 5 && !memcmp(x + 1, "NCCL", 5))
        __atomic_store_n(&x->quiet, 1, __ATOMIC_RELAXED);
    return x;
}

static const void *d_create_a(const char *s)
{
    int e = errno;
    struct entry *x = domain_made(intern(GMT_NVTX_STR_DOMAIN, s ? s : "", s ? strnlen(s, GMT_NVTX_STRING_MAX) : 0));
    errno = e;
    return x;
}
static const void *d_create_w(const wchar_t *s)
{
    int e = errno;
    struct entry *x = domain_made(s ? intern_wide(GMT_NVTX_STR_DOMAIN, s) : intern(GMT_NVTX_STR_DOMAIN, "", 0));
    errno = e;
    return x;
}
static void d_destroy(const void *dom) { (void)dom; /* names stay: records refer to them */ }

struct hook {
    unsigned index;            /* NvtxCallbackIdCore / NvtxCallbackIdCore2 */
    nvtx_fn fn;
};
#define H(i, f) {i, (nvtx_fn)(f)}
static const struct hook core_hooks[] = {
    H(1, mark_ex), H(2, mark_a), H(3, mark_w), H(4, start_ex), H(5, start_a),
    H(6, start_w), H(7, range_end), H(8, push_ex), H(9, push_a), H(10, push_w),
    H(11, range_pop),
};
static const struct hook core2_hooks[] = {
    H(1, d_mark_ex), H(2, d_start_ex), H(3, d_range_end), H(4, d_push_ex), H(5, d_pop),
    H(10, d_register_a), H(11, d_register_w), H(12, d_create_a), H(13, d_create_w),
    H(14, d_destroy),
};
#undef H

static int patch(const struct nvtx_callbacks *cb, int module, const struct hook *h, size_t n)
{
    nvtx_table t = NULL;
    unsigned size = 0;
    if (!cb->get_module_table(module, &t, &size) || !t)
        return -1;
    for (size_t i = 0; i < n; i++)
        if (h[i].index < size && t[h[i].index])
            *t[h[i].index] = h[i].fn;
    return 0;
}

/* The injection path the library's getenv gives NVTX when the process has none. */
const char *gmt_nvtx_injection_env(void)
{
    const char *self = gmt_self_path();
    return !gmt_opt.off && gmt_opt.nvtx && self[0] ? self : NULL;
}

/* NVTX's entry point: once per NVTX copy (an object built with its headers). */
GMT_EXPORT int InitializeInjectionNvtx2(nvtx_get_export_table get)
{
    int e = errno;
    gmt_init_once();
    int ok = 0;
    if (get && !gmt_opt.off && gmt_opt.nvtx) {
        const struct nvtx_callbacks *cb = get(NVTX_ETID_CALLBACKS);
        if (cb && cb->struct_size >= sizeof *cb && cb->get_module_table &&
            patch(cb, NVTX_MODULE_CORE, core_hooks, GMT_COUNTOF(core_hooks)) == 0) {
            /* domains are optional: an NVTX without them still has the default one */
            patch(cb, NVTX_MODULE_CORE2, core2_hooks, GMT_COUNTOF(core2_hooks));
            ok = 1;
        }
    }
    errno = e;
    return ok;
}
