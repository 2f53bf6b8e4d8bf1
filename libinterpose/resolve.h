/* resolve.h: real functions from the library that defines them (resolve.c): the cached lookups, GMT_REAL, and the real function behind each hooked export for its caller. */
#ifndef GMT_RESOLVE_H
#define GMT_RESOLVE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "gmt.h"

/* ---- resolve.c: real functions, always from the library that defines them ---- */
enum gmt_lib { GMT_LIB_DRIVER, GMT_LIB_RUNTIME, GMT_LIB_NCCL };
/* The real definition of `name` (an ABI name: "cuMemAlloc_v2", "ncclAllReduce"), found
 * through the defining library (RTLD_NEXT, then dlopen(soname, RTLD_NOLOAD), then the
 * handles seen in intercepted dlopen calls), never through a wrapper of ours. NULL when
 * not found: the caller then returns the API's own error, never calls through NULL.
 * The object it was found in is pinned (resolve.c: never unloaded from then on), so the
 * answer may be cached for good. */
GMT_HIDDEN void *gmt_resolve(enum gmt_lib lib, const char *name);
/* gmt_resolve's answer kept in `cache` once found; NULL (not found yet) is asked again at
 * the next call. GMT_REAL(lib, type, name): the same with a cache of its own per use. */
static inline void *gmt_resolve_cached(_Atomic(void *) *cache, enum gmt_lib lib, const char *name)
{
    void *p = atomic_load_explicit(cache, memory_order_acquire);
    if (!p) {
        p = gmt_resolve(lib, name);
        if (p)
            atomic_store_explicit(cache, p, memory_order_release);
    }
    return p;
}
#define GMT_REAL(lib, type, name)                                                            \
    ({                                                                                       \
        static _Atomic(void *) cache_##name;                                                 \
        (type)gmt_resolve_cached(&cache_##name, lib, #name);                                 \
    })

/* ---- the real functions behind the hooks' exports ---- */
/* The real function behind an export, process-wide: gmt_resolve's answer, cached in `slot`. */
GMT_HIDDEN void *gmt_hook_plt_real(_Atomic(void *) *slot, enum gmt_lib lib, const char *abi);
/* The real function for a call of an export from `caller` (a return address) when two or
 * more copies of `lib` may be loaded: looked up in the caller's own dependency scope
 * first, cached per (caller, export). */
GMT_HIDDEN void *gmt_hook_plt_slow(_Atomic(void *) *slot, enum gmt_lib lib, const char *abi,
                                   const void *caller);

/*
 * The real function behind an export, for its caller. Two copies of a library can be
 * loaded side by side (a plugin linked to cudart 12 next to PyTorch's cudart 13, both
 * RTLD_LOCAL; two NCCLs): each caller must reach the copy its own dependencies name, as
 * the PLT would have bound it without us. The common case, one copy, costs three loads.
 * gmt_hot.resolve (gmt.h's hot line): dl_generation is bumped by every dlopen and dlclose,
 * before the real call (what was loaded may differ); single_copy_gen[lib] is the
 * generation at which exactly one copy of each library was seen (anything else: not known
 * to be one).
 */
/* The cached pointer while one copy is loaded, else NULL (then gmt_hook_plt_slow). */
static inline void *gmt_hook_plt_cached(_Atomic(void *) *slot, enum gmt_lib lib)
{
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (GMT_LIKELY(p != NULL) &&
        GMT_LIKELY(atomic_load_explicit(&gmt_hot.resolve.single_copy_gen[lib], memory_order_relaxed) ==
                   atomic_load_explicit(&gmt_hot.resolve.dl_generation, memory_order_relaxed)))
        return p;
    return NULL;
}
static inline void *gmt_hook_plt_for(_Atomic(void *) *slot, enum gmt_lib lib, const char *abi,
                                     const void *caller)
{
    void *p = gmt_hook_plt_cached(slot, lib);
    return GMT_LIKELY(p != NULL) ? p : gmt_hook_plt_slow(slot, lib, abi, caller);
}

/* The real dl functions (the next definitions after ours, normally libc's). */
enum gmt_real_dl { GMT_DL_DLSYM, GMT_DL_DLVSYM, GMT_DL_DLOPEN, GMT_DL_DLCLOSE };
GMT_HIDDEN void *gmt_real_dl(enum gmt_real_dl which);
/* Keeps the object that defines fn loaded for good (one reference of ours, never
 * released), so a pointer to fn that we cached can't dangle after the program's dlclose.
 * Every pointer gmt_resolve returns is pinned; so is every real function a wrapper of
 * ours is bound to. Not for the hot path: it asks the loader. */
GMT_HIDDEN void gmt_pin(const void *fn);

#endif
