/* resolve.h: real functions from the library that defines them (resolve.c), with the inline cached lookup and GMT_REAL. */
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

#endif
