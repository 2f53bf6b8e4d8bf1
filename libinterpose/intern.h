/* intern.h: the library's lock-free tables: entries interned by content in a bump arena (stacks, NVTX names, Python code objects), and tables of 64-bit keys (communicators, graphs, sampling counts). */
#ifndef GMT_INTERN_H
#define GMT_INTERN_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gmt.h"

/*
 * Interning. An entry is looked up by a 64-bit hash of its key in one open-addressing
 * table of 64-bit slots: the hash's high 32 bits (to reject most mismatches without
 * touching the entry) and the entry's offset in the arena in 8-byte units (0: an empty
 * slot; entries start at offset 8). An entry is written completely into the bump arena
 * before the CAS that publishes its slot, so a reader that sees the slot sees the whole
 * entry. Its id is drawn only after the CAS wins, so ids are dense (1, 2, 3…) even when
 * two threads race to insert the same key: the loser finds the winner's entry in the
 * slot it lost and waits the few nanoseconds until the id appears. The wait is bounded:
 * a signal handler that interrupted the winner on the winner's own thread would wait for
 * ever; then the entry is returned with id 0 (callers treat it as not interned).
 *
 * Inserts stop at 75% of the slots (probes stay short) or when the arena is used up.
 * Nothing allocates with malloc, locks or makes a system call after gmt_intern_map.
 *
 * What an entry holds besides its hash (its first 8 bytes) and its id (a uint32_t at
 * kind->id_at, 0 until drawn), how a key compares with it and how it is written are the
 * kind's: a static const struct gmt_intern_kind whose callbacks the compiler inlines into
 * gmt_intern, which is always inlined.
 */
struct gmt_intern_kind {
    uint32_t slots;           /* a power of two */
    size_t arena_bytes;       /* address space, touched pages only; below 2^35 */
    size_t id_at;             /* offset of the entry's uint32_t id */
    const char *full_warning; /* warned once when the table fills; NULL: none */
    /* Whether the entry, whose hash is the key's, holds the key. */
    bool (*same)(const void *entry, const void *key);
    /* Writes the key's entry into the `bytes` reserved for it (hash and id are written):
     * the bytes it used, a multiple of 8 (what is left is given back when it can be), or
     * 0 when the key is not to be interned. */
    size_t (*fill)(void *entry, const void *key, size_t bytes);
};

struct gmt_intern {
    _Atomic uint64_t *slots;
    unsigned char *arena;
    _Atomic size_t cursor;    /* the next entry's offset */
    _Atomic uint32_t entries;
    _Atomic uint32_t next_id;
    _Atomic int warned;
};
#define GMT_INTERN_INIT { .cursor = 8, .next_id = 1 }
#define GMT_INTERN_SPIN_LIMIT (1u << 22)

/* Maps the table and its arena; false when there is no memory for them. */
GMT_HIDDEN bool gmt_intern_map(struct gmt_intern *t, const struct gmt_intern_kind *k);
/* Empty again (a fork child, whose file must define what it uses): ids start at 1. */
GMT_HIDDEN void gmt_intern_reset(struct gmt_intern *t, const struct gmt_intern_kind *k);
/* The table is full: warns the first time, when the kind says what. */
GMT_HIDDEN void gmt_intern_full(struct gmt_intern *t, const struct gmt_intern_kind *k);
/* The id of an entry another thread published, once it is drawn; 0 when it did not come. */
GMT_HIDDEN uint32_t gmt_intern_wait(const void *entry, size_t id_at);

static inline uint32_t gmt_intern_id(const void *entry, size_t id_at)
{
    return __atomic_load_n((const uint32_t *)(const void *)((const char *)entry + id_at),
                           __ATOMIC_ACQUIRE);
}

/* A new entry for the key, written but not published (*word: its slot word); NULL when
 * the table is full or the kind would not intern the key. */
static inline __attribute__((always_inline)) unsigned char *
gmt_intern_make(struct gmt_intern *t, const struct gmt_intern_kind *k, uint64_t hash,
                const void *key, size_t bytes, uint64_t *word)
{
    if (atomic_load_explicit(&t->entries, memory_order_relaxed) >= k->slots / 4 * 3) {
        gmt_intern_full(t, k);
        return NULL;
    }
    size_t off = atomic_fetch_add_explicit(&t->cursor, bytes, memory_order_relaxed);
    if (off + bytes > k->arena_bytes) {
        gmt_intern_full(t, k);
        return NULL;
    }
    unsigned char *e = t->arena + off;
    *(uint64_t *)(void *)e = hash;
    __atomic_store_n((uint32_t *)(void *)(e + k->id_at), 0, __ATOMIC_RELAXED);
    size_t used = k->fill(e, key, bytes);
    if (used < bytes) {
        /* unless another entry was placed since (then that room stays unused) */
        size_t end = off + bytes;
        atomic_compare_exchange_strong_explicit(&t->cursor, &end, off + used,
                                                memory_order_relaxed, memory_order_relaxed);
    }
    if (!used)
        return NULL;
    *word = (hash & 0xffffffff00000000ull) | (uint64_t)(off / 8);
    return e;
}

/* The entry of `key` (whose hash is `hash`, whose new entry takes `bytes`, a multiple of
 * 8): found, or made and published; NULL when it is not there and can't be made. *id is
 * its id (0: see above); *made says this call made it (the caller then writes what a new
 * entry needs written, once). */
static inline __attribute__((always_inline)) void *
gmt_intern(struct gmt_intern *t, const struct gmt_intern_kind *k, uint64_t hash,
           const void *key, size_t bytes, uint32_t *id, bool *made)
{
    const uint32_t mask = k->slots - 1;
    const uint64_t tag = hash & 0xffffffff00000000ull;
    unsigned char *mine = NULL;
    uint64_t mine_word = 0;
    *made = false;
    *id = 0;
    for (uint32_t probe = 0, i = (uint32_t)hash & mask; probe < k->slots;
         probe++, i = (i + 1) & mask) {
        uint64_t w = atomic_load_explicit(&t->slots[i], memory_order_acquire);
        while (w == 0) {
            if (!mine && !(mine = gmt_intern_make(t, k, hash, key, bytes, &mine_word)))
                return NULL;
            if (atomic_compare_exchange_strong_explicit(&t->slots[i], &w, mine_word,
                                                        memory_order_acq_rel,
                                                        memory_order_acquire)) {
                atomic_fetch_add_explicit(&t->entries, 1, memory_order_relaxed);
                uint32_t n = atomic_fetch_add_explicit(&t->next_id, 1, memory_order_relaxed);
                __atomic_store_n((uint32_t *)(void *)(mine + k->id_at), n, __ATOMIC_RELEASE);
                *id = n;
                *made = true;
                return mine;
            }
            /* lost the slot: w now holds the winner, which may be this very key */
        }
        if ((w & 0xffffffff00000000ull) != tag)
            continue;
        unsigned char *e = t->arena + (size_t)(w & 0xffffffffu) * 8;
        if (*(const uint64_t *)(const void *)e != hash || !k->same(e, key))
            continue;
        uint32_t got = gmt_intern_id(e, k->id_at);
        *id = GMT_LIKELY(got) ? got : gmt_intern_wait(e, k->id_at);
        return e; /* `mine`, if made, stays unused in the arena */
    }
    gmt_intern_full(t, k);
    return NULL;
}

/*
 * Tables of 64-bit keys. Open addressing with linear probing over at most GMT_PROBES
 * slots from the key's home; 0 marks an empty slot and, in a table that deletes,
 * GMT_KEY_TOMB a deleted key, which lookups pass over and GMT_KEY_ADD reuses (such a
 * table never holds the keys 0 and 1). Values live in arrays beside the keys, indexed
 * by slot. -1: not there, or the probe window is full (callers then fall back to the
 * safe behaviour).
 */
#define GMT_PROBES 16
#define GMT_KEY_TOMB 1u

static inline uint64_t gmt_mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x ? x : 1; /* 0 marks an empty slot */
}

enum gmt_key_op {
    GMT_KEY_FIND,  /* the key's slot */
    GMT_KEY_CLAIM, /* the key's slot, claimed when absent (a table that never deletes) */
    GMT_KEY_ADD,   /* a slot claimed for a key just found absent: an empty one or a tomb */
};

/* The slot of `key` in a table of n (a power of two) keys, probed from `home`. */
static inline __attribute__((always_inline)) long
gmt_key_slot(_Atomic uint64_t *keys, uint32_t n, uint32_t home, uint64_t key, enum gmt_key_op op)
{
    for (uint32_t p = 0, i = home & (n - 1); p < GMT_PROBES; p++, i = (i + 1) & (n - 1)) {
        uint64_t k = atomic_load_explicit(&keys[i], memory_order_acquire);
        if (op != GMT_KEY_ADD && k == key)
            return i;
        if (k != 0 && !(op == GMT_KEY_ADD && k == GMT_KEY_TOMB))
            continue;
        if (op == GMT_KEY_FIND)
            return -1;
        if (atomic_compare_exchange_strong_explicit(&keys[i], &k, key, memory_order_acq_rel,
                                                    memory_order_acquire))
            return i;
        if (op == GMT_KEY_CLAIM && k == key)
            return i;
    }
    return -1;
}

/* Deletes `key` from slot i, where GMT_KEY_FIND found it: false when another thread did. */
static inline bool gmt_key_drop(_Atomic uint64_t *keys, long i, uint64_t key)
{
    uint64_t k = key;
    return atomic_compare_exchange_strong_explicit(&keys[i], &k, GMT_KEY_TOMB,
                                                   memory_order_acq_rel, memory_order_acquire);
}

#endif
