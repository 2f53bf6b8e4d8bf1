/* tables.c: the library's own tables: address space mapped once, on first use, by whichever thread gets there first. */
#include <sys/mman.h>

#include "gmt.h"

/*
 * The tables (stacks, NVTX names, Python code objects, modules) are reserved address
 * space (MAP_NORESERVE: pages are taken as entries are written) mapped at their first
 * use, never at load: a process that never traces a stack pays nothing. The one-time
 * setup is a gate any thread may reach first, from any hook, also re-entrantly from a
 * signal handler on another thread: one thread does it, the others wait for its end
 * (a few system calls), and no lock is taken.
 */

/* Its address names the thread doing a setup: a thread's TLS block is its own. */
static GMT_TLS char once_self;

int gmt_once_enter(struct gmt_once *o)
{
    uintptr_t st = atomic_load_explicit(&o->state, memory_order_acquire);
    if (GMT_LIKELY(st == GMT_ONCE_READY) || st == GMT_ONCE_FAILED)
        return (int)st;
    uintptr_t self = (uintptr_t)&once_self;
    uintptr_t expect = GMT_ONCE_NEW;
    if (atomic_compare_exchange_strong(&o->state, &expect, self))
        return GMT_ONCE_BUSY; /* ours to do */
    while ((st = atomic_load_explicit(&o->state, memory_order_acquire)) != GMT_ONCE_READY &&
           st != GMT_ONCE_FAILED) {
        if (st == self)
            return GMT_ONCE_LATER; /* a handler interrupting our own setup */
        gmt_cpu_relax();
    }
    return (int)st;
}

void gmt_once_leave(struct gmt_once *o, bool ok)
{
    atomic_store_explicit(&o->state, ok ? GMT_ONCE_READY : GMT_ONCE_FAILED, memory_order_release);
}

void gmt_once_forked(struct gmt_once *o)
{
    uintptr_t st = atomic_load_explicit(&o->state, memory_order_relaxed);
    if (st != GMT_ONCE_READY && st != GMT_ONCE_FAILED)
        atomic_store_explicit(&o->state, GMT_ONCE_NEW, memory_order_relaxed);
}

bool gmt_map_tables(void **a, size_t a_bytes, void **b, size_t b_bytes)
{
    void *x = mmap(NULL, a_bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    void *y = b ? mmap(NULL, b_bytes, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
                : NULL;
    if (x == MAP_FAILED || y == MAP_FAILED) {
        if (x != MAP_FAILED)
            munmap(x, a_bytes);
        if (y && y != MAP_FAILED)
            munmap(y, b_bytes);
        return false;
    }
    *a = x;
    if (b)
        *b = y;
    return true;
}
