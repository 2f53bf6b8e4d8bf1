/* hook_next.c: built twice (HOOK_NEXT_ID 1 and 2) as two libraries defining hook_probe, to check that dlsym(RTLD_NEXT) stays relative to its caller. */
#include <dlfcn.h>
#include <stddef.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT int hook_probe(void)
{
    return HOOK_NEXT_ID;
}

#if HOOK_NEXT_ID == 1
/* What the next definition after this library answers: 2 (libhook_next_b), or -1. */
EXPORT int hook_next_probe(void)
{
    int (*next)(void) = (int (*)(void))dlsym(RTLD_NEXT, "hook_probe");
    return next ? next() : -1;
}

/* The next definition of a hooked name: libcuda's cuMemAlloc_v2 (or our wrapper of it). */
EXPORT void *hook_next_lookup(const char *name)
{
    /* Not a tail call: dlsym's caller must be this library, not the program's main,
     * whose next object is the preloaded tracer itself. */
    void *p = dlsym(RTLD_NEXT, name);
    __asm__ volatile("" : : "r"(p) : "memory");
    return p;
}
#endif
