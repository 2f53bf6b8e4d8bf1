/* u64map.c: open-addressing hash map from 64-bit keys to 64-bit values, linear probing. */
#include "u64map.h"

#include <errno.h>
#include <stdlib.h>

/* Fibonacci hashing: one multiply, the top log2(cap) bits of the product, which depend on
 * every bit of the key (addresses are aligned: their low bits are all alike). Half the
 * cost of the two-multiply finalizer it replaces, on the lookups of every event. */
static size_t slot_of(uint64_t key, size_t cap)
{
    return (size_t)((key * 0x9e3779b97f4a7c15ULL) >> (64 - __builtin_ctzll(cap)));
}

void gmt_u64map_init(struct gmt_u64map *m)
{
    m->keys = m->vals = NULL;
    m->state = NULL;
    m->cap = m->used = m->tomb = 0;
}

void gmt_u64map_free(struct gmt_u64map *m)
{
    free(m->keys);
    free(m->vals);
    free(m->state);
    gmt_u64map_init(m);
}

static int grow(struct gmt_u64map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    if (m->used * 2 < m->cap)
        ncap = m->cap; /* mostly tombstones: rehash in place size */
    uint64_t *k = malloc(ncap * sizeof *k), *v = malloc(ncap * sizeof *v);
    uint8_t *s = calloc(ncap, 1);
    if (!k || !v || !s) {
        free(k);
        free(v);
        free(s);
        return -ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (m->state[i] != 1)
            continue;
        size_t j = slot_of(m->keys[i], ncap);
        while (s[j])
            j = (j + 1) & (ncap - 1);
        s[j] = 1;
        k[j] = m->keys[i];
        v[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    free(m->state);
    m->keys = k;
    m->vals = v;
    m->state = s;
    m->cap = ncap;
    m->tomb = 0;
    return 0;
}

int gmt_u64map_put(struct gmt_u64map *m, uint64_t key, uint64_t val)
{
    uint64_t *p = gmt_u64map_get(m, key);
    if (p) {
        *p = val;
        return 0;
    }
    return gmt_u64map_put_new(m, key, val);
}

int gmt_u64map_put_new(struct gmt_u64map *m, uint64_t key, uint64_t val)
{
    if ((m->used + m->tomb + 1) * 4 >= m->cap * 3) {
        int r = grow(m);
        if (r)
            return r;
    }
    size_t j = slot_of(key, m->cap);
    while (m->state[j] == 1)
        j = (j + 1) & (m->cap - 1);
    if (m->state[j] == 2)
        m->tomb--;
    m->state[j] = 1;
    m->keys[j] = key;
    m->vals[j] = val;
    m->used++;
    return 0;
}

uint64_t *gmt_u64map_get(const struct gmt_u64map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t j = slot_of(key, m->cap);
    for (size_t n = 0; n < m->cap; n++) {
        if (m->state[j] == 0)
            return NULL;
        if (m->state[j] == 1 && m->keys[j] == key)
            return &m->vals[j];
        j = (j + 1) & (m->cap - 1);
    }
    return NULL;
}

/* Backward-shift deletion: the entries after the hole that may live there move back,
 * so no tombstones build up. With tombstones, the replay's churn of allocations and frees
 * (a few thousand live, millions made) filled the table with them and every lookup
 * probed long runs of dead slots. */
bool gmt_u64map_del(struct gmt_u64map *m, uint64_t key)
{
    uint64_t *p = gmt_u64map_get(m, key);
    if (!p)
        return false;
    gmt_u64map_del_at(m, p);
    return true;
}

void gmt_u64map_del_at(struct gmt_u64map *m, uint64_t *p)
{
    size_t mask = m->cap - 1;
    size_t hole = (size_t)(p - m->vals);
    for (size_t k = (hole + 1) & mask; m->state[k] == 1; k = (k + 1) & mask) {
        size_t home = slot_of(m->keys[k], m->cap);
        /* k may move to the hole unless its home lies cyclically in (hole, k] */
        if (((k - home) & mask) < ((k - hole) & mask))
            continue;
        m->keys[hole] = m->keys[k];
        m->vals[hole] = m->vals[k];
        hole = k;
    }
    m->state[hole] = 0;
    m->used--;
}
