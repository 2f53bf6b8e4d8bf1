/* hooks_dl.c: the lookup paths (dlsym, dlvsym, dlopen, dlclose, cuGetProcAddress, cudaGetDriverEntryPoint*) that hand out our wrappers. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <link.h>
#include <string.h>

#include "hooks.h"
#include "resolve.h"

#define ALWAYS static inline __attribute__((always_inline))

/* ---- the table ---- */

const struct gmt_hook gmt_hooks[] = {
#define GMT_X(file, lib, abi, base, ver, var, body, ret, params, args)                         \
    { #abi, #base, GMT_LIB_##lib, GMT_VAR_##var, ver, (void *)&gmt_wrap_##abi, &gmt_lkp_##abi, \
      &gmt_plt_##abi },
    GMT_HOOKS(GMT_X)
#undef GMT_X
};
const size_t gmt_hooks_count = sizeof gmt_hooks / sizeof gmt_hooks[0];

bool gmt_hook_is_ours(const void *fn)
{
    Dl_info a, b;
    return fn && dladdr(fn, &a) && dladdr((const void *)&gmt_hook_is_ours, &b) &&
           a.dli_fbase == b.dli_fbase;
}

/* Hands out e's wrapper for `real` when e's lookup slot is free or already holds it.
 * A slot holds one real function for good: a second, different one (another copy of
 * the library) gets no wrapper, since the wrapper would call the first. */
static void *claim(const struct gmt_hook *e, void *real)
{
    void *expected = NULL;
    if (atomic_compare_exchange_strong_explicit(e->lkp, &expected, real, memory_order_acq_rel,
                                                memory_order_acquire)) {
        gmt_pin(real); /* the wrapper calls it for good, also after a dlclose */
        return e->wrapper;
    }
    if (expected == real)
        return e->wrapper;
    gmt_warn("%s: a second definition at %p is not traced", e->abi, real);
    return real;
}

static const struct gmt_hook *by_abi(const char *abi)
{
    for (size_t i = 0; i < gmt_hooks_count; i++)
        if (strcmp(gmt_hooks[i].abi, abi) == 0)
            return &gmt_hooks[i];
    return NULL;
}

void *gmt_hook_for_abi(const char *abi, void *real)
{
    if (!real || !abi || gmt_hook_is_ours(real))
        return real;
    const struct gmt_hook *e = by_abi(abi);
    return e ? claim(e, real) : real;
}

/* A base name that, from a version on, the driver answers with a function another base
 * name's entry wraps: cuGraphInstantiate is cuGraphInstantiateWithFlags from 12000 (cuda.h
 * maps the one name to the other), cuGraphInstantiate_v2 (another ABI) before. */
static const struct {
    const char *base;
    int ver;
    const char *abi;
} base_aliases[] = {
    { "cuGraphInstantiate", 12000, "cuGraphInstantiateWithFlags" },
};

void *gmt_hook_for_base(const char *base, int version, uint64_t flags, void *real)
{
    if (!real || !base || gmt_hook_is_ours(real))
        return real;
    struct {
        const struct gmt_hook *e;
        int ver; /* the lowest version at which a lookup of `base` returns e->abi */
    } cand[6];
    size_t n = 0;
    for (size_t i = 0; i < gmt_hooks_count && n < 4; i++)
        if (gmt_hooks[i].lib == GMT_LIB_DRIVER && strcmp(gmt_hooks[i].base, base) == 0) {
            cand[n].e = &gmt_hooks[i];
            cand[n++].ver = gmt_hooks[i].ver;
        }
    for (size_t i = 0; i < GMT_COUNTOF(base_aliases) && n < GMT_COUNTOF(cand); i++)
        if (strcmp(base_aliases[i].base, base) == 0 && (cand[n].e = by_abi(base_aliases[i].abi)))
            cand[n++].ver = base_aliases[i].ver;
    if (n == 0)
        return real;
    /* Known by the pointer: what a lookup returned before, or the exported symbol. */
    for (size_t i = 0; i < n; i++)
        if (atomic_load_explicit(cand[i].e->lkp, memory_order_acquire) == real)
            return cand[i].e->wrapper;
    for (size_t i = 0; i < n; i++)
        if (gmt_hook_plt_real(cand[i].e->plt, GMT_LIB_DRIVER, cand[i].e->abi) == real)
            return claim(cand[i].e, real);
    /* A pointer the driver exports under no name: the variant the flags select, at the
     * newest ABI the version asks for. Below an entry's version the driver returns an
     * older ABI under the same base name, which no wrapper of ours fits. */
    unsigned want = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) ? GMT_VAR_PTSZ
                                                                             : GMT_VAR_DEF;
    const struct gmt_hook *best = NULL;
    int best_ver = 0;
    for (int pass = 0; pass < 2 && !best; pass++) {
        for (size_t i = 0; i < n; i++) {
            const struct gmt_hook *e = cand[i].e;
            if ((pass == 0 && e->var != want) || (pass == 1 && e->var != GMT_VAR_DEF))
                continue;
            if (cand[i].ver <= version && (!best || cand[i].ver > best_ver)) {
                best = e;
                best_ver = cand[i].ver;
            }
        }
    }
    return best ? claim(best, real) : real;
}

/* ---- cuGetProcAddress and the runtime's entry-point API ---- */

ALWAYS void *swap_for_wrapper(const char *sym, void **pfn, int version, uint64_t flags)
{
    int e = errno;
    void *w = gmt_hook_for_base(sym, version, flags, *pfn);
    errno = e;
    return w;
}

ALWAYS CUresult gmt_body_getproc_v1(gmt_fn_cuGetProcAddress *real, const char *sym, void **pfn,
                                    int ver, cuuint64_t flags)
{
    CUresult r = real(sym, pfn, ver, flags);
    if (r == CUDA_SUCCESS && sym && pfn && *pfn) {
        void *w = swap_for_wrapper(sym, pfn, ver, flags);
        if (w != *pfn)
            *pfn = w;
    }
    return r;
}

ALWAYS CUresult gmt_body_getproc_v2(gmt_fn_cuGetProcAddress_v2 *real, const char *sym, void **pfn,
                                    int ver, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status)
{
    CUresult r = real(sym, pfn, ver, flags, status);
    if (r == CUDA_SUCCESS && sym && pfn && *pfn) {
        void *w = swap_for_wrapper(sym, pfn, ver, flags);
        if (w != *pfn)
            *pfn = w;
    }
    return r;
}

/* cudaGetDriverEntryPoint asks the driver at the runtime's own version, which is past
 * every entry's: the newest ABI is what it returns. */
ALWAYS cudaError_t gmt_body_entry_point(gmt_fn_cudaGetDriverEntryPoint *real, const char *sym,
                                        void **pfn, unsigned long long flags,
                                        enum cudaDriverEntryPointQueryResult *status)
{
    cudaError_t r = real(sym, pfn, flags, status);
    if (r == cudaSuccess && sym && pfn && *pfn) {
        void *w = swap_for_wrapper(sym, pfn, INT_MAX, flags);
        if (w != *pfn)
            *pfn = w;
    }
    return r;
}

ALWAYS cudaError_t gmt_body_entry_point_by_version(gmt_fn_cudaGetDriverEntryPointByVersion *real,
                                                   const char *sym, void **pfn, unsigned int ver,
                                                   unsigned long long flags,
                                                   enum cudaDriverEntryPointQueryResult *status)
{
    cudaError_t r = real(sym, pfn, ver, flags, status);
    if (r == cudaSuccess && sym && pfn && *pfn) {
        void *w = swap_for_wrapper(sym, pfn, ver > INT_MAX ? INT_MAX : (int)ver, flags);
        if (w != *pfn)
            *pfn = w;
    }
    return r;
}

#define GMT_X(file, ...) GMT_HOOKS_OF_DL_##file(GMT_HOOK_DEFINE, file, __VA_ARGS__)
GMT_HOOKS(GMT_X)
#undef GMT_X

/* ---- dlsym, dlvsym, dlopen, dlclose ----
 *
 * glibc resolves dlsym(RTLD_NEXT/RTLD_DEFAULT) and dlopen's search path relative to
 * the object that called it, found from the return address. A C hook that calls the
 * real function would make every caller look like us. So the exported dlsym, dlvsym
 * and dlopen are small assembly trampolines: they ask a C router what to do, and for
 * everything we don't wrap they jump to the real function with the caller's own
 * return address still in place, so glibc sees exactly the call it would have seen.
 *
 * Wrapped are only lookups of names we hook, by a handle (the real lookup is made from
 * here: a handle lookup does not depend on the caller) or by RTLD_NEXT (emulated below
 * from the caller's place in the link-map chain). dlsym(RTLD_DEFAULT, hooked name)
 * finds our export by itself, as a PLT call would.
 */

struct gmt_dl_route {
    void *result; /* the answer, when jump is NULL */
    void *jump;   /* the real function to continue in, with the original arguments */
};

GMT_HIDDEN struct gmt_dl_route gmt_dlsym_route(void *handle, const char *name,
                                               const char *version, void *caller);
GMT_HIDDEN void *gmt_dlopen_route(void);

static bool hooked_name(const char *name)
{
    if (name[0] == 'c' && name[1] == 'u')
        return by_abi(name) != NULL;
    if (gmt_nccl_wrapper && (strncmp(name, "nccl", 4) == 0 || strncmp(name, "pnccl", 5) == 0))
        return gmt_nccl_wrapper(name) != NULL;
    return false;
}

typedef void *dlsym_fn(void *, const char *);
typedef void *dlvsym_fn(void *, const char *, const char *);
typedef void *dlopen_fn(const char *, int);
typedef int dlclose_fn(void *);

static void *lookup(void *handle, const char *name, const char *version)
{
    if (version) {
        dlvsym_fn *f = (dlvsym_fn *)gmt_real_dl(GMT_DL_DLVSYM);
        return f ? f(handle, name, version) : NULL;
    }
    dlsym_fn *f = (dlsym_fn *)gmt_real_dl(GMT_DL_DLSYM);
    return f ? f(handle, name) : NULL;
}

/* dlsym(RTLD_NEXT) as the caller would have had it: the first object after the caller
 * in load order that defines the name itself. Each object is opened by its path with
 * RTLD_NOLOAD for a handle (a link map is not a valid handle before dlopen saw it). */
static void *next_after(void *caller, const char *name, const char *version)
{
    Dl_info info;
    struct link_map *self = NULL;
    if (!dladdr1(caller, &info, (void **)&self, RTLD_DL_LINKMAP) || !self)
        return NULL;
    dlopen_fn *real_open = (dlopen_fn *)gmt_real_dl(GMT_DL_DLOPEN);
    dlclose_fn *real_close = (dlclose_fn *)gmt_real_dl(GMT_DL_DLCLOSE);
    if (!real_open || !real_close)
        return NULL;
    for (struct link_map *m = self->l_next; m; m = m->l_next) {
        if (!m->l_name || !*m->l_name)
            continue;
        void *h = real_open(m->l_name, RTLD_NOLOAD | RTLD_LAZY);
        if (!h)
            continue;
        void *p = lookup(h, name, version);
        struct link_map *def = NULL;
        bool here = p && dladdr1(p, &info, (void **)&def, RTLD_DL_LINKMAP) && def == m;
        real_close(h);
        if (here)
            return p;
    }
    return NULL;
}

static void *wrap(const char *name, void *real)
{
    if (!real || gmt_hook_is_ours(real))
        return real;
    if (name[0] == 'c' && name[1] == 'u')
        return gmt_hook_for_abi(name, real);
    /* The NCCL wrapper calls what gmt_resolve finds: hand it out only for that. */
    void *w = gmt_nccl_wrapper ? gmt_nccl_wrapper(name) : NULL;
    /* resolve caches by the name's address: pass our literal, never the caller's buffer */
    const char *lit = w && gmt_nccl_name ? gmt_nccl_name(name) : NULL;
    return lit && gmt_resolve(GMT_LIB_NCCL, lit) == real ? w : real;
}

struct gmt_dl_route gmt_dlsym_route(void *handle, const char *name, const char *version,
                                    void *caller)
{
    struct gmt_dl_route r = { NULL, gmt_real_dl(version ? GMT_DL_DLVSYM : GMT_DL_DLSYM) };
    if (!r.jump || !name || handle == RTLD_DEFAULT || gmt_ts.guard.in_lib > 0)
        return r;
    int e = gmt_lib_enter();
    if (hooked_name(name)) {
        void *real = handle == RTLD_NEXT ? next_after(caller, name, version)
                                         : lookup(handle, name, version);
        /* Not found: the real call gives the caller glibc's own answer and error. */
        if (real || handle != RTLD_NEXT) {
            r.result = wrap(name, real);
            r.jump = NULL;
        }
    }
    gmt_lib_leave(e);
    return r;
}

static void *dlopen_missing(const char *file, int mode)
{
    return NULL;
}

void *gmt_dlopen_route(void)
{
    /* Bumped before the load: whoever looks next, the library may be there. */
    atomic_fetch_add_explicit(&gmt_hot.resolve.dl_generation, 1, memory_order_acq_rel);
    void *real = gmt_real_dl(GMT_DL_DLOPEN);
    return real ? real : (void *)&dlopen_missing;
}

GMT_EXPORT int dlclose(void *handle)
{
    dlclose_fn *real = (dlclose_fn *)gmt_real_dl(GMT_DL_DLCLOSE);
    if (!real)
        return -1;
    int r = real(handle);
    atomic_fetch_add_explicit(&gmt_hot.resolve.dl_generation, 1, memory_order_acq_rel);
    return r;
}

#if defined(__x86_64__)
/* Entry: %rsp is 8 past a 16-byte boundary. Arguments stay saved across the router
 * call and are restored for the jump; the caller's return address stays on the stack. */
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        ".cfi_startproc\n"
        "    pushq %rdi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    pushq %rsi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    subq $8, %rsp\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    xorl %edx, %edx\n"
        "    movq 24(%rsp), %rcx\n"
        "    call gmt_dlsym_route\n"
        "    addq $8, %rsp\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    popq %rsi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    popq %rdi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    testq %rdx, %rdx\n"
        "    jnz 1f\n"
        "    ret\n"
        "1:  jmp *%rdx\n"
        ".cfi_endproc\n"
        ".size dlsym, .-dlsym\n"

        ".globl dlvsym\n"
        ".type dlvsym, @function\n"
        "dlvsym:\n"
        ".cfi_startproc\n"
        "    pushq %rdi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    pushq %rsi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    pushq %rdx\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    movq 24(%rsp), %rcx\n"
        "    call gmt_dlsym_route\n"
        "    movq %rdx, %r11\n"
        "    popq %rdx\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    popq %rsi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    popq %rdi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    testq %r11, %r11\n"
        "    jnz 1f\n"
        "    ret\n"
        "1:  jmp *%r11\n"
        ".cfi_endproc\n"
        ".size dlvsym, .-dlvsym\n"

        ".globl dlopen\n"
        ".type dlopen, @function\n"
        "dlopen:\n"
        ".cfi_startproc\n"
        "    pushq %rdi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    pushq %rsi\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    subq $8, %rsp\n"
        ".cfi_adjust_cfa_offset 8\n"
        "    call gmt_dlopen_route\n"
        "    addq $8, %rsp\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    popq %rsi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    popq %rdi\n"
        ".cfi_adjust_cfa_offset -8\n"
        "    jmp *%rax\n"
        ".cfi_endproc\n"
        ".size dlopen, .-dlopen\n");
#else
/* Elsewhere the real call is made from here: lookups relative to the caller (RTLD_NEXT,
 * dlopen's RUNPATH) then see this library as the caller. */
GMT_EXPORT void *dlsym(void *handle, const char *name)
{
    struct gmt_dl_route r = gmt_dlsym_route(handle, name, NULL, __builtin_return_address(0));
    return r.jump ? ((dlsym_fn *)r.jump)(handle, name) : r.result;
}

GMT_EXPORT void *dlvsym(void *handle, const char *name, const char *version)
{
    struct gmt_dl_route r = gmt_dlsym_route(handle, name, version, __builtin_return_address(0));
    return r.jump ? ((dlvsym_fn *)r.jump)(handle, name, version) : r.result;
}

GMT_EXPORT void *dlopen(const char *file, int mode)
{
    return ((dlopen_fn *)gmt_dlopen_route())(file, mode);
}
#endif
