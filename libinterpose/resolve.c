/* resolve.c: finds real CUDA/NCCL functions in the library that defines them, and the real dl functions without recursion. */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>

#include "gmt.h"
#include "resolve.h"

/*
 * Why not dlsym(RTLD_NEXT) alone: Python loads PyTorch, NCCL and the runtime with
 * RTLD_LOCAL, and the runtime dlopens libcuda locally, so none of them is in the global
 * scope a preloaded library searches: dlsym(RTLD_NEXT, "ncclAllReduce") is NULL there,
 * and a call through it crashes the program. A library that is loaded at
 * all is found by its soname with dlopen(RTLD_NOLOAD), or, when it was loaded under
 * another name, through the list of loaded objects. The handles we open this way are
 * kept: the reference pins the library, so a cached pointer can't dangle.
 *
 * Our own dlsym/dlvsym/dlopen are exported, so calling those names from here would
 * come back to us. The real ones are reached through libc's dlvsym, found by reading
 * libc's dynamic symbol table, which needs no lookup at all.
 */

static const char *const sonames[][4] = {
    [GMT_LIB_DRIVER] = { "libcuda.so.1", "libcuda.so", NULL, NULL },
    [GMT_LIB_RUNTIME] = { "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", "libcudart.so" },
    [GMT_LIB_NCCL] = { "libnccl.so.2", "libnccl.so", NULL, NULL },
};
static const char *const prefixes[] = {
    [GMT_LIB_DRIVER] = "libcuda.so",
    [GMT_LIB_RUNTIME] = "libcudart.so",
    [GMT_LIB_NCCL] = "libnccl.so",
};
#define NLIBS GMT_COUNTOF(prefixes)

/* gmt_hot.resolve.dl_generation: in gmt.h's hot line */

static _Atomic(void *) real_dlsym_p, real_dlvsym_p, real_dlopen_p, real_dlclose_p;
static _Atomic int dl_state; /* 0 not yet, 1 found, -1 failed */

/* ---- libc's symbol table ---- */

struct elf_lookup {
    const char *name;
    void *found;
};

static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        h = h * 33 + *p;
    return h;
}

static uintptr_t dyn_ptr(const struct dl_phdr_info *info, ElfW(Addr) v)
{
    /* glibc relocates these entries in place on most targets; not on all. */
    return v < info->dlpi_addr ? info->dlpi_addr + v : v;
}

/* String helpers of our own for the lookups that run while the process starts: a
 * sanitizer's or another preload's interceptors of strcmp & co may not be ready then
 * (ASan's start-up calls dlsym, which reaches this code before its own init is done). */
static bool str_eq(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

static bool has_prefix(const char *s, const char *prefix)
{
    while (*prefix && *s == *prefix)
        s++, prefix++;
    return *prefix == 0;
}

static const char *base_of(const char *path)
{
    const char *b = path;
    for (const char *p = path; *p; p++)
        if (*p == '/')
            b = p + 1;
    return b;
}

static void *lookup_in_object(const struct dl_phdr_info *info, const char *name)
{
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return NULL;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const uint32_t *gnuhash = NULL;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        if (dyn->d_tag == DT_SYMTAB)
            symtab = (const ElfW(Sym) *)dyn_ptr(info, dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_STRTAB)
            strtab = (const char *)dyn_ptr(info, dyn->d_un.d_ptr);
        else if (dyn->d_tag == DT_GNU_HASH)
            gnuhash = (const uint32_t *)dyn_ptr(info, dyn->d_un.d_ptr);
    }
    if (!symtab || !strtab || !gnuhash)
        return NULL;
    uint32_t nbuckets = gnuhash[0], symoffset = gnuhash[1], bloom_size = gnuhash[2];
    const uint32_t *buckets = gnuhash + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
    const uint32_t *chain = buckets + nbuckets;
    uint32_t h = gnu_hash(name);
    uint32_t i = nbuckets ? buckets[h % nbuckets] : 0;
    if (i < symoffset)
        return NULL;
    for (;; i++) {
        uint32_t ch = chain[i - symoffset];
        const ElfW(Sym) *s = &symtab[i];
        if ((ch | 1) == (h | 1) && s->st_shndx != SHN_UNDEF && s->st_value != 0 &&
            str_eq(strtab + s->st_name, name))
            return (void *)(info->dlpi_addr + s->st_value);
        if (ch & 1)
            return NULL;
    }
}

static int find_in_libc(struct dl_phdr_info *info, size_t size, void *data)
{
    struct elf_lookup *l = data;
    const char *base = info->dlpi_name ? base_of(info->dlpi_name) : NULL;
    if (!base || (!has_prefix(base, "libc.so.") && !has_prefix(base, "libdl.so.")))
        return 0;
    l->found = lookup_in_object(info, l->name);
    return l->found != NULL;
}

typedef void *dlvsym_fn(void *, const char *, const char *);

static void *next_versioned(dlvsym_fn *libc_dlvsym, const char *name)
{
    /* GLIBC_2.34 where dl* moved into libc; the original version before that. */
    void *p = libc_dlvsym(RTLD_NEXT, name, "GLIBC_2.34");
    return p ? p : libc_dlvsym(RTLD_NEXT, name, "GLIBC_2.2.5");
}

static bool dl_init(void)
{
    int st = atomic_load_explicit(&dl_state, memory_order_acquire);
    if (GMT_LIKELY(st != 0))
        return st > 0;
    struct elf_lookup l = { "dlvsym", NULL };
    dl_iterate_phdr(find_in_libc, &l);
    dlvsym_fn *libc_dlvsym = (dlvsym_fn *)l.found;
    if (!libc_dlvsym) {
        atomic_store_explicit(&dl_state, -1, memory_order_release);
        return false;
    }
    /* Racing threads find the same pointers; the stores are idempotent. */
    atomic_store_explicit(&real_dlsym_p, next_versioned(libc_dlvsym, "dlsym"), memory_order_relaxed);
    atomic_store_explicit(&real_dlvsym_p, next_versioned(libc_dlvsym, "dlvsym"), memory_order_relaxed);
    atomic_store_explicit(&real_dlopen_p, next_versioned(libc_dlvsym, "dlopen"), memory_order_relaxed);
    atomic_store_explicit(&real_dlclose_p, next_versioned(libc_dlvsym, "dlclose"), memory_order_relaxed);
    bool ok = real_dlsym_p && real_dlvsym_p && real_dlopen_p && real_dlclose_p;
    atomic_store_explicit(&dl_state, ok ? 1 : -1, memory_order_release);
    return ok;
}

void *gmt_real_dl(enum gmt_real_dl which)
{
    if (!dl_init())
        return NULL;
    switch (which) {
    case GMT_DL_DLSYM: return atomic_load_explicit(&real_dlsym_p, memory_order_relaxed);
    case GMT_DL_DLVSYM: return atomic_load_explicit(&real_dlvsym_p, memory_order_relaxed);
    case GMT_DL_DLOPEN: return atomic_load_explicit(&real_dlopen_p, memory_order_relaxed);
    case GMT_DL_DLCLOSE: return atomic_load_explicit(&real_dlclose_p, memory_order_relaxed);
    }
    return NULL;
}

/* ---- our own object, so a lookup never answers with one of our exports ---- */

static bool is_ours(const void *p)
{
    Dl_info a, b;
    return p && dladdr(p, &a) && dladdr((const void *)&is_ours, &b) && a.dli_fbase == b.dli_fbase;
}

/* ---- handles of the defining libraries ---- */

#define HANDLES_PER_LIB 8
static _Atomic(void *) handles[NLIBS][HANDLES_PER_LIB];
static _Atomic unsigned long handles_gen[NLIBS] = { ~0ul, ~0ul, ~0ul };

typedef void *dlopen_fn(const char *, int);
typedef void *dlsym_fn(void *, const char *);
typedef int dlclose_fn(void *);

static void keep_handle(enum gmt_lib lib, void *h)
{
    dlclose_fn *real_close = (dlclose_fn *)gmt_real_dl(GMT_DL_DLCLOSE);
    for (int i = 0; i < HANDLES_PER_LIB; i++) {
        void *cur = atomic_load_explicit(&handles[lib][i], memory_order_acquire);
        if (cur == h)
            goto dup; /* dlopen gave us the same object twice: drop the extra reference */
        if (cur == NULL) {
            void *expected = NULL;
            if (atomic_compare_exchange_strong(&handles[lib][i], &expected, h))
                return;
            if (expected == h)
                goto dup;
        }
    }
dup:
    if (real_close)
        real_close(h);
}

/* What a walk of the loaded objects collects: dl_iterate_phdr holds the loader's lock
 * while it calls back, and dlopen/dlclose in another thread take the loader's locks in
 * the opposite order, so nothing that takes a loader lock (dlopen, dlsym, dladdr) may run
 * inside the callback. It only copies names; they are opened after the walk. */
#define SCAN_PATH 1024
struct scan {
    enum gmt_lib lib;
    int n;
    char path[HANDLES_PER_LIB][SCAN_PATH];
};

static int collect_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
    struct scan *s = data;
    const char *path = info->dlpi_name;
    if (!path || !*path || s->n == HANDLES_PER_LIB)
        return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t len = strlen(path);
    if (len >= SCAN_PATH || strncmp(base, prefixes[s->lib], strlen(prefixes[s->lib])) != 0)
        return 0;
    memcpy(s->path[s->n++], path, len + 1);
    return 0;
}

/* Opens (without loading) every copy of the library now in the process. Runs again
 * only after a dlopen or dlclose somewhere, so a miss costs little when repeated. */
static void refresh_handles(enum gmt_lib lib, bool force)
{
    unsigned long gen = atomic_load_explicit(&gmt_hot.resolve.dl_generation, memory_order_acquire);
    if (!force && atomic_load_explicit(&handles_gen[lib], memory_order_acquire) == gen)
        return;
    atomic_store_explicit(&handles_gen[lib], gen, memory_order_release);
    dlopen_fn *real_open = (dlopen_fn *)gmt_real_dl(GMT_DL_DLOPEN);
    if (!real_open)
        return;
    for (int i = 0; i < 4 && sonames[lib][i]; i++) {
        void *h = real_open(sonames[lib][i], RTLD_NOLOAD | RTLD_LAZY);
        if (h)
            keep_handle(lib, h);
    }
    struct scan s;
    s.lib = lib;
    s.n = 0;
    dl_iterate_phdr(collect_loaded, &s);
    /* An object unloaded since the walk is simply not opened: RTLD_NOLOAD never loads. */
    for (int i = 0; i < s.n; i++) {
        void *h = real_open(s.path[i], RTLD_NOLOAD | RTLD_LAZY);
        if (h)
            keep_handle(lib, h);
    }
}

static void *search_handles(enum gmt_lib lib, dlsym_fn *real_sym, const char *name)
{
    for (int i = 0; i < HANDLES_PER_LIB; i++) {
        void *h = atomic_load_explicit(&handles[lib][i], memory_order_acquire);
        if (!h)
            break;
        void *p = real_sym(h, name);
        if (p && !is_ours(p))
            return p;
    }
    return NULL;
}

/* ---- pins: what a cached pointer points into stays loaded ----
 *
 * Every real function we cache (gmt_plt_*, gmt_lkp_*, the cache below, the copies other
 * files keep) is called later without asking the loader again. If its library were
 * unloaded, the call would jump into unmapped (or reused) memory. And since our export
 * answers dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"), glibc does not record the dependency on
 * libcuda that the program's own lookup would have made. So each object a successful
 * lookup found gets one reference of ours, never released: a dlclose by the program then
 * leaves it loaded (as RTLD_NODELETE would), which costs memory, never correctness. */
#define PINS 64
static _Atomic(void *) pinned[PINS]; /* link maps of the objects pinned */

void gmt_pin(const void *fn)
{
    Dl_info info;
    struct link_map *map = NULL;
    if (!fn || !dladdr1(fn, &info, (void **)&map, RTLD_DL_LINKMAP) || !map)
        return;
    /* The main program and the loader are never unloaded; our own object is nodelete. */
    if (!map->l_name || !*map->l_name || is_ours(fn))
        return;
    int i = 0;
    for (; i < PINS; i++) {
        void *cur = atomic_load_explicit(&pinned[i], memory_order_acquire);
        if (cur == map)
            return;
        if (cur == NULL) {
            void *expected = NULL;
            if (atomic_compare_exchange_strong(&pinned[i], &expected, map))
                break;
            if (expected == map)
                return;
        }
    }
    /* With the table full the reference is taken anyway: a second one costs a counter. */
    dlopen_fn *real_open = (dlopen_fn *)gmt_real_dl(GMT_DL_DLOPEN);
    if (real_open)
        (void)real_open(map->l_name, RTLD_NOLOAD | RTLD_LAZY);
}

/* Answers, keyed by the name's address (callers pass string literals; another copy of
 * the same name just takes a second slot). A miss is remembered too, with the generation
 * of loaded objects it was made in: looking again costs dl_iterate_phdr and several
 * dlopen calls, all under the loader's locks, and some callers ask at every event (a
 * hooked name the library lacks, a version query). It is looked for again only once a
 * dlopen or dlclose changed what is loaded. A load that is under way while the miss is
 * made (the generation is bumped before the load) is seen at the next dlopen/dlclose. */
#define CACHE_SLOTS 512
static struct {
    _Atomic(const char *) name;
    _Atomic(void *) fn;
    _Atomic unsigned long miss_gen; /* generation + 1 of the last miss; 0 none */
    _Atomic int lib;
} cache[CACHE_SLOTS];

static size_t cache_home(const char *name)
{
    return ((uintptr_t)name >> 3) * 0x9E3779B97F4A7C15ull >> 55;
}

/* The slot of (lib, name), or -1; with `claim`, an empty slot is taken for it. */
static long cache_slot(enum gmt_lib lib, const char *name, bool claim)
{
    size_t h = cache_home(name);
    for (size_t n = 0; n < 16; n++) {
        size_t i = (h + n) % CACHE_SLOTS;
        const char *k = atomic_load_explicit(&cache[i].name, memory_order_acquire);
        if (k == NULL) {
            if (!claim)
                return -1;
            /* The slot is claimed by its name first; readers that see the name before
             * the rest read "not cached". */
            const char *expected = NULL;
            if (atomic_compare_exchange_strong(&cache[i].name, &expected, name)) {
                atomic_store_explicit(&cache[i].lib, (int)lib, memory_order_release);
                return (long)i;
            }
            k = expected;
        }
        if (k == name && atomic_load_explicit(&cache[i].lib, memory_order_acquire) == (int)lib)
            return (long)i;
    }
    return -1;
}

/* The cached function; NULL with *miss set when a miss was made in generation `gen`. */
static void *cache_get(enum gmt_lib lib, const char *name, unsigned long gen, bool *miss)
{
    *miss = false;
    long i = cache_slot(lib, name, false);
    if (i < 0)
        return NULL;
    void *p = atomic_load_explicit(&cache[i].fn, memory_order_acquire);
    if (!p)
        *miss = atomic_load_explicit(&cache[i].miss_gen, memory_order_acquire) == gen + 1;
    return p;
}

static void cache_put(enum gmt_lib lib, const char *name, void *fn, unsigned long gen)
{
    long i = cache_slot(lib, name, true);
    if (i < 0)
        return;
    if (fn)
        atomic_store_explicit(&cache[i].fn, fn, memory_order_release);
    else
        atomic_store_explicit(&cache[i].miss_gen, gen + 1, memory_order_release);
}

/* ---- two copies of a library: per-caller resolution for the exports ---- */

/* gmt_hot.resolve.single_copy_gen[NLIBS]: in gmt.h's hot line, ~0 at start (gmt.c) */
_Static_assert(NLIBS == GMT_COUNTOF(gmt_hot.resolve.single_copy_gen), "one per library");

/* How many copies of `lib` are loaded (the handles kept of it); at most one is then
 * remembered for this generation, so the exports' fast path needs no more. */
static int copies(enum gmt_lib lib)
{
    unsigned long gen = atomic_load_explicit(&gmt_hot.resolve.dl_generation, memory_order_acquire);
    refresh_handles(lib, false);
    int n = 0;
    for (int i = 0; i < HANDLES_PER_LIB; i++)
        if (atomic_load_explicit(&handles[lib][i], memory_order_acquire))
            n++;
    if (n <= 1)
        atomic_store_explicit(&gmt_hot.resolve.single_copy_gen[lib], gen, memory_order_relaxed);
    return n;
}

/* The definition the caller's own object would bind `name` to: a lookup in its local
 * scope (the object and its dependencies; our preloaded library is not among them). NULL
 * for the main program, whose scope is the global one the process-wide answer comes from. */
static void *for_caller(const void *caller, const char *name)
{
    Dl_info info;
    struct link_map *map = NULL;
    if (!caller || !dladdr1(caller, &info, (void **)&map, RTLD_DL_LINKMAP) || !map ||
        !map->l_name || !*map->l_name || is_ours(caller))
        return NULL;
    dlopen_fn *real_open = (dlopen_fn *)gmt_real_dl(GMT_DL_DLOPEN);
    dlsym_fn *real_sym = (dlsym_fn *)gmt_real_dl(GMT_DL_DLSYM);
    dlclose_fn *real_close = (dlclose_fn *)gmt_real_dl(GMT_DL_DLCLOSE);
    if (!real_open || !real_sym || !real_close)
        return NULL;
    void *h = real_open(map->l_name, RTLD_NOLOAD | RTLD_LAZY);
    if (!h)
        return NULL;
    void *p = real_sym(h, name);
    if (p && is_ours(p))
        p = NULL;
    if (p)
        gmt_pin(p);
    real_close(h); /* the caller's own object is not pinned: only what we call */
    return p;
}

void *gmt_hook_plt_real(_Atomic(void *) *slot, enum gmt_lib lib, const char *abi)
{
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (GMT_LIKELY(p != NULL))
        return p;
    p = gmt_resolve(lib, abi);
    if (p)
        atomic_store_explicit(slot, p, memory_order_release);
    return p;
}

/* (caller, export) -> real function, lock-free, never deleted. A caller is a return
 * address: one call site. If its object is unloaded and another one mapped at the same
 * place calls the same export from the same address, the entry still points at pinned,
 * valid code (possibly another copy's). Full: the process-wide answer. */
#define CALLER_SLOTS 256
static struct {
    _Atomic(const void *) caller;
    _Atomic(const void *) slot;
    _Atomic(void *) fn;
} callers[CALLER_SLOTS];

void *gmt_hook_plt_slow(_Atomic(void *) *slot, enum gmt_lib lib, const char *abi,
                        const void *caller)
{
    void *p = gmt_hook_plt_real(slot, lib, abi);
    if ((unsigned)lib >= NLIBS)
        return p;
    int e = gmt_lib_enter();
    int n = copies(lib);
    gmt_lib_leave(e);
    if (n <= 1)
        return p;
    size_t h = (((uintptr_t)caller >> 2) ^ ((uintptr_t)slot >> 3)) * 0x9E3779B97F4A7C15ull >> 56;
    for (size_t k = 0; k < 16; k++) {
        size_t i = (h + k) % CALLER_SLOTS;
        const void *c = atomic_load_explicit(&callers[i].caller, memory_order_acquire);
        if (c == caller && atomic_load_explicit(&callers[i].slot, memory_order_acquire) == slot) {
            void *q = atomic_load_explicit(&callers[i].fn, memory_order_acquire);
            if (q)
                return q;
            break; /* being filled by another thread: look it up ourselves */
        }
        if (c != NULL)
            continue;
        const void *expected = NULL;
        if (!atomic_compare_exchange_strong(&callers[i].caller, &expected, caller))
            continue;
        atomic_store_explicit(&callers[i].slot, slot, memory_order_release);
        gmt_lib_enter_keep_errno();
        void *q = for_caller(caller, abi);
        gmt_lib_leave_keep_errno();
        errno = e;
        if (!q)
            q = p;
        atomic_store_explicit(&callers[i].fn, q, memory_order_release);
        return q;
    }
    gmt_lib_enter_keep_errno();
    void *q = for_caller(caller, abi);
    gmt_lib_leave_keep_errno();
    errno = e;
    return q ? q : p;
}

void *gmt_resolve(enum gmt_lib lib, const char *name)
{
    if ((unsigned)lib >= NLIBS || !name)
        return NULL;
    dlsym_fn *real_sym = (dlsym_fn *)gmt_real_dl(GMT_DL_DLSYM);
    if (!real_sym)
        return NULL;
    /* Read before looking: a dlopen/dlclose during the search makes the miss stale. */
    unsigned long gen = atomic_load_explicit(&gmt_hot.resolve.dl_generation, memory_order_acquire);
    bool miss;
    void *p = cache_get(lib, name, gen, &miss);
    if (p || miss)
        return p;
    gmt_lib_enter_keep_errno();
    p = real_sym(RTLD_NEXT, name);
    if (p && is_ours(p))
        p = NULL;
    if (!p) {
        refresh_handles(lib, false);
        p = search_handles(lib, real_sym, name);
    }
    if (!p) {
        /* Another thread may be between bumping the generation and opening what it
         * found: look again ourselves before answering "not found". */
        refresh_handles(lib, true);
        p = search_handles(lib, real_sym, name);
    }
    if (p)
        gmt_pin(p);
    gmt_lib_leave_keep_errno();
    cache_put(lib, name, p, gen);
    return p;
}
