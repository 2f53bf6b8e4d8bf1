/* intern.c: the interning table's slow paths: mapping, the fork child's reset, the full table, the wait for another thread's id. */
#include <sys/mman.h>

#include "intern.h"

bool gmt_intern_map(struct gmt_intern *t, const struct gmt_intern_kind *k)
{
    void *s, *a;
    if (!gmt_map_tables(&s, (size_t)k->slots * sizeof(uint64_t), &a, k->arena_bytes))
        return false;
    t->slots = s;
    t->arena = a;
    return true;
}

void gmt_intern_reset(struct gmt_intern *t, const struct gmt_intern_kind *k)
{
    if (t->slots) /* zero pages again */
        madvise(t->slots, (size_t)k->slots * sizeof(uint64_t), MADV_DONTNEED);
    atomic_store(&t->cursor, 8);
    atomic_store(&t->next_id, 1);
    atomic_store(&t->entries, 0);
    atomic_store(&t->warned, 0);
}

__attribute__((noinline, cold)) void gmt_intern_full(struct gmt_intern *t,
                                                     const struct gmt_intern_kind *k)
{
    if (k->full_warning && !atomic_exchange(&t->warned, 1))
        gmt_warn("%s", k->full_warning);
}

__attribute__((noinline)) uint32_t gmt_intern_wait(const void *entry, size_t id_at)
{
    for (unsigned i = 0; i < GMT_INTERN_SPIN_LIMIT; i++) {
        uint32_t id = gmt_intern_id(entry, id_at);
        if (id)
            return id;
        gmt_cpu_relax();
    }
    return 0;
}
