/* live_map.h: the replay's live set: every allocation still live, by (namespace, address). */
#ifndef GMT_LIVE_MAP_H
#define GMT_LIVE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Address namespaces: a handle, a pointer, a reservation and a mapping may share a value.
 * Pointers, most keys, are 0: their key is the address itself. */
enum gmt_ns { GMT_NS_PTR, GMT_NS_HANDLE, GMT_NS_VIRTUAL, GMT_NS_MAPPING, GMT_NS_IPC, GMT_NS_POOL,
              GMT_NS_ARRAY };

/* By table, not a switch: one load per allocation or free (kinds are a byte, APIs below
 * 256; anything else is a pointer). */
extern const uint8_t gmt_ns_by_kind[256];
extern const uint8_t gmt_ns_by_free_api[256];

static inline int gmt_ns_of_kind(uint8_t kind)
{
    return gmt_ns_by_kind[kind];
}

static inline int gmt_ns_of_free_api(unsigned api)
{
    return api < 256 ? gmt_ns_by_free_api[api] : GMT_NS_PTR;
}

static inline uint64_t gmt_live_key(int ns, uint64_t addr)
{
    return addr ^ ((uint64_t)ns << 58);
}

/*
 * The live set, by (namespace, address): open addressing whose slots are the entries
 * themselves (no second array to reach: one cache line per allocation or free),
 * Fibonacci hashing, backward-shift deletion. A few thousand entries churn through it
 * millions of times.
 */
struct gmt_live {
    uint64_t key, bytes;
    uint32_t site, refs;       /* refs 0: an empty slot */
    int32_t scope;             /* attributed scope index, -1 none */
    int16_t dslot;
    uint8_t kind, cat;
};

struct gmt_live_map {
    struct gmt_live *s;
    size_t cap, n;             /* cap a power of two, at most a quarter full: short clusters,
                                * so short probes and few moves per deletion */
    unsigned shift;            /* 64 - log2(cap) */
    bool dense;                /* at most half full instead: half the memory, for a set
                                * kept per trace of a thousand (watch's), each probe a
                                * little longer */
};

/* Fibonacci hashing: the key's slot in a table of 2^(64 - shift) */
static inline size_t gmt_fib_slot(uint64_t key, unsigned shift)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> shift);
}

static inline size_t gmt_live_home(const struct gmt_live_map *m, uint64_t key)
{
    return gmt_fib_slot(key, m->shift);
}

/* The live-set functions below are inlined by force: the allocation and free handlers
 * are inlined in two places (the merge's loop and run_walk), and a call from either
 * costs more than the function itself. */
static inline __attribute__((always_inline)) struct gmt_live *gmt_live_get(const struct gmt_live_map *m,
                                                                 uint64_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t j = gmt_live_home(m, key);; j = (j + 1) & (m->cap - 1)) {
        struct gmt_live *x = &m->s[j];
        if (!x->refs)
            return NULL;
        if (x->key == key)
            return x;
    }
}

/* Doubles the table (makes it, when empty); -ENOMEM. */
int gmt_live_grow(struct gmt_live_map *m);

/* The entry of `key`, or the empty slot where it would go (refs 0), found with one
 * probe: an allocation looks for a stale entry at its address and inserts in the same
 * walk. The table grows first, so the slot stays valid; NULL out of memory. */
static inline __attribute__((always_inline)) struct gmt_live *gmt_live_find_or_slot(struct gmt_live_map *m,
                                                                          uint64_t key)
{
    if ((m->n + 1) * (m->dense ? 2 : 4) > m->cap && gmt_live_grow(m))
        return NULL;
    for (size_t j = gmt_live_home(m, key);; j = (j + 1) & (m->cap - 1)) {
        struct gmt_live *x = &m->s[j];
        if (!x->refs || x->key == key)
            return x;
    }
}

static inline __attribute__((always_inline)) void gmt_live_del_at(struct gmt_live_map *m, struct gmt_live *x)
{
    size_t mask = m->cap - 1, hole = (size_t)(x - m->s);
    for (size_t k = (hole + 1) & mask; m->s[k].refs; k = (k + 1) & mask) {
        size_t home = gmt_live_home(m, m->s[k].key);
        /* k may move to the hole unless its home lies cyclically in (hole, k] */
        if (((k - home) & mask) < ((k - hole) & mask))
            continue;
        m->s[hole] = m->s[k];
        hole = k;
    }
    m->s[hole].refs = 0;
    m->n--;
}

#endif
