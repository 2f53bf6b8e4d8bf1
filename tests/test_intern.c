/* test_intern.c: the library's lock-free tables (intern.h): one id per key across racing threads, dense ids, full tables and arenas, the wait for a winner's id, key tables with tombstones. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "intern.h"

/* ---- a kind of entry for the tests: a string, its length and its id ---- */
struct entry {
    uint64_t hash;
    uint32_t id;
    uint32_t len;
    char s[];
};
struct key {
    const char *s;
    uint32_t len;
};

static _Atomic int refuse_prefix; /* fill refuses keys starting with '!' while set */
static _Atomic int hold_fills;    /* fill waits until this many fills are under way */
static _Atomic int fills;

/* Holds a fill until `hold_fills` threads made their entries of the key, so that they
 * all race for the same empty slot (bounded: a broken table must fail, not hang). */
static void hold(void)
{
    int want = atomic_load(&hold_fills);
    if (!want)
        return;
    atomic_fetch_add(&fills, 1);
    struct timespec ts = { 0, 100000 };
    for (int i = 0; i < 20000 && atomic_load(&fills) < want; i++)
        nanosleep(&ts, NULL);
}

static inline bool same(const void *entry, const void *key)
{
    const struct entry *e = entry;
    const struct key *k = key;
    return e->len == k->len && !memcmp(e->s, k->s, k->len);
}

static inline size_t fill(void *entry, const void *key, size_t bytes)
{
    struct entry *e = entry;
    const struct key *k = key;
    if (atomic_load(&refuse_prefix) && k->len && k->s[0] == '!')
        return 0;
    hold();
    e->len = k->len;
    memcpy(e->s, k->s, k->len);
    return bytes;
}

#define SLOTS 1024
static const struct gmt_intern_kind kind = {
    .slots = SLOTS, .arena_bytes = 1 << 20, .id_at = offsetof(struct entry, id),
    .same = same, .fill = fill,
};
/* 16 slots (12 entries at most), warned about once full */
static const struct gmt_intern_kind small = {
    .slots = 16, .arena_bytes = 1 << 20, .id_at = offsetof(struct entry, id),
    .full_warning = "test table full (expected by test_intern)", .same = same, .fill = fill,
};
/* an arena of 4 KiB */
static const struct gmt_intern_kind tight = {
    .slots = SLOTS, .arena_bytes = 4096, .id_at = offsetof(struct entry, id),
    .same = same, .fill = fill,
};

static uint64_t fnv(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
    return h;
}

static _Atomic int same_hash; /* every key hashes alike: the compare alone tells them apart */

static struct entry *put(struct gmt_intern *t, const struct gmt_intern_kind *k, const char *s,
                         uint32_t *id, bool *made)
{
    struct key key = { s, (uint32_t)strlen(s) };
    uint64_t h = atomic_load(&same_hash) ? 0x1234567800000005ull : fnv(s, key.len);
    size_t bytes = (sizeof(struct entry) + key.len + 7) & ~(size_t)7;
    return gmt_intern(t, k, h, &key, bytes, id, made);
}

static struct gmt_intern fresh(const struct gmt_intern_kind *k)
{
    struct gmt_intern t = GMT_INTERN_INIT;
    cr_assert(gmt_intern_map(&t, k), "the table is mapped");
    atomic_store(&same_hash, 0);
    atomic_store(&refuse_prefix, 0);
    atomic_store(&hold_fills, 0);
    atomic_store(&fills, 0);
    return t;
}

/* ---- racing threads ---- */

#define THREADS 8
#define KEYS 300
static struct gmt_intern racing;
static _Atomic int go;
static _Atomic int made_count[KEYS];
static uint32_t ids[THREADS][KEYS];

static void *insert_all(void *arg)
{
    int me = (int)(intptr_t)arg;
    while (!atomic_load(&go))
        ;
    for (int j = 0; j < KEYS; j++) {
        int i = (j * 7 + me * 37) % KEYS; /* each thread its own order */
        char s[32];
        snprintf(s, sizeof s, "key-%d", i);
        uint32_t id;
        bool made;
        struct entry *e = put(&racing, &kind, s, &id, &made);
        cr_assert_not_null(e);
        cr_assert_str_eq(e->s, s);
        ids[me][i] = id;
        if (made)
            atomic_fetch_add(&made_count[i], 1);
    }
    return NULL;
}

Test(intern, racing_threads_get_one_dense_id_per_key)
{
    racing = fresh(&kind);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, insert_all, (void *)(intptr_t)i), 0);
    atomic_store(&go, 1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    bool seen[KEYS + 1] = { false };
    for (int i = 0; i < KEYS; i++) {
        cr_expect_eq(atomic_load(&made_count[i]), 1, "key %d made once", i);
        uint32_t id = ids[0][i];
        cr_assert(id >= 1 && id <= KEYS, "key %d: id %u within 1..%d", i, id, KEYS);
        cr_expect_not(seen[id], "id %u given twice", id);
        seen[id] = true;
        for (int t = 1; t < THREADS; t++)
            cr_expect_eq(ids[t][i], id, "thread %d sees key %d's id", t, i);
    }
    cr_expect_eq(atomic_load(&racing.entries), KEYS);
}

static struct entry *raced[2];
static uint32_t raced_id[2];
static bool raced_made[2];

static void *insert_contended(void *arg)
{
    int me = (int)(intptr_t)arg;
    raced[me] = put(&racing, &kind, "contended", &raced_id[me], &raced_made[me]);
    return NULL;
}

Test(intern, the_loser_of_a_race_for_a_slot_takes_the_winners_entry)
{
    racing = fresh(&kind);
    atomic_store(&hold_fills, 2); /* both have made an entry before either publishes */
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, insert_contended, (void *)(intptr_t)i), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    cr_assert_eq(atomic_load(&fills), 2, "both threads made an entry");
    atomic_store(&hold_fills, 0);
    cr_assert(raced[0] && raced[1]);
    cr_expect_eq(raced[0], raced[1], "one entry");
    cr_expect_eq(raced_made[0] + raced_made[1], 1, "made once");
    cr_expect_eq(raced_id[0], 1);
    cr_expect_eq(raced_id[1], 1);
    uint32_t id;
    bool made;
    cr_expect_not_null(put(&racing, &kind, "next", &id, &made));
    cr_expect_eq(id, 2, "the loser drew no id");
    cr_expect_eq(atomic_load(&racing.entries), 2);
}

/* ---- one thread ---- */

Test(intern, a_key_found_again_keeps_its_entry_and_id)
{
    struct gmt_intern t = fresh(&kind);
    uint32_t id1, id2, id3;
    bool made1, made2, made3;
    struct entry *a = put(&t, &kind, "alpha", &id1, &made1);
    struct entry *b = put(&t, &kind, "beta", &id2, &made2);
    struct entry *a2 = put(&t, &kind, "alpha", &id3, &made3);
    cr_assert(a && b && a2);
    cr_expect(made1 && made2 && !made3);
    cr_expect_eq(id1, 1);
    cr_expect_eq(id2, 2);
    cr_expect_eq(id3, 1);
    cr_expect_eq(a2, a);
    cr_expect_eq(gmt_intern_id(a, kind.id_at), 1);
}

Test(intern, colliding_hashes_are_told_apart_by_the_compare)
{
    struct gmt_intern t = fresh(&kind);
    atomic_store(&same_hash, 1);
    const char *names[] = { "a", "b", "c", "d", "e" };
    for (int round = 0; round < 2; round++)
        for (uint32_t i = 0; i < 5; i++) {
            uint32_t id;
            bool made;
            struct entry *e = put(&t, &kind, names[i], &id, &made);
            cr_assert_not_null(e);
            cr_expect_str_eq(e->s, names[i]);
            cr_expect_eq(id, i + 1, "%s: id %u", names[i], id);
            cr_expect_eq(made, round == 0);
        }
}

Test(intern, a_full_table_refuses_new_keys_and_keeps_the_old)
{
    struct gmt_intern t = fresh(&small);
    char s[16];
    for (int i = 0; i < 12; i++) { /* 75% of 16 slots */
        snprintf(s, sizeof s, "k%d", i);
        uint32_t id;
        bool made;
        cr_assert_not_null(put(&t, &small, s, &id, &made), "%s fits", s);
    }
    uint32_t id = 99;
    bool made = true;
    cr_expect_null(put(&t, &small, "one-more", &id, &made));
    cr_expect_eq(id, 0);
    cr_expect_not(made);
    cr_expect_eq(atomic_load(&t.warned), 1, "warned");
    cr_expect_null(put(&t, &small, "and-another", &id, &made));
    cr_expect_not_null(put(&t, &small, "k3", &id, &made));
    cr_expect_eq(id, 4);
    cr_expect_eq(atomic_load(&t.entries), 12);
}

Test(intern, a_full_arena_refuses_new_keys)
{
    struct gmt_intern t = fresh(&tight);
    char s[64];
    int fitted = 0;
    for (int i = 0; i < 200; i++) {
        snprintf(s, sizeof s, "a-key-of-some-length-%d", i);
        uint32_t id;
        bool made;
        if (!put(&t, &tight, s, &id, &made))
            break;
        fitted++;
        cr_expect_eq(id, (uint32_t)fitted);
    }
    /* the arena's first 8 bytes are never used; each entry takes 16 + 22..24 bytes → 40 */
    cr_expect_eq(fitted, (4096 - 8) / 40, "%d entries fitted", fitted);
    cr_expect_eq(atomic_load(&t.warned), 0, "a kind without a warning stays silent");
}

Test(intern, a_refused_key_takes_no_id_and_gives_its_room_back)
{
    struct gmt_intern t = fresh(&kind);
    atomic_store(&refuse_prefix, 1);
    size_t before = atomic_load(&t.cursor);
    uint32_t id = 5;
    bool made = true;
    cr_expect_null(put(&t, &kind, "!not this one", &id, &made));
    cr_expect_eq(id, 0);
    cr_expect_not(made);
    cr_expect_eq(atomic_load(&t.cursor), before, "the room is given back");
    cr_expect_not_null(put(&t, &kind, "this one", &id, &made));
    cr_expect_eq(id, 1, "ids are drawn once an entry is published");
}

Test(intern, reset_starts_again_from_id_one)
{
    struct gmt_intern t = fresh(&kind);
    uint32_t id;
    bool made;
    put(&t, &kind, "x", &id, &made);
    put(&t, &kind, "y", &id, &made);
    gmt_intern_reset(&t, &kind);
    cr_expect_not_null(put(&t, &kind, "y", &id, &made));
    cr_expect(made, "the old entry is forgotten");
    cr_expect_eq(id, 1);
    cr_expect_eq(atomic_load(&t.entries), 1);
}

/* ---- the wait for the winner's id ---- */

static struct entry *late;
static void *publish_late(void *arg)
{
    struct timespec ts = { 0, 200000 }; /* well within the wait's bound */
    nanosleep(&ts, NULL);
    __atomic_store_n(&late->id, (uint32_t)(uintptr_t)arg, __ATOMIC_RELEASE);
    return NULL;
}

Test(intern, a_lookup_waits_for_the_winners_id)
{
    struct gmt_intern t = fresh(&kind);
    uint32_t id;
    bool made;
    late = put(&t, &kind, "slow", &id, &made);
    cr_assert_not_null(late);
    /* as if its maker had published the slot and not yet drawn the id */
    __atomic_store_n(&late->id, 0, __ATOMIC_RELEASE);
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, publish_late, (void *)(uintptr_t)7), 0);
    struct entry *e = put(&t, &kind, "slow", &id, &made);
    pthread_join(th, NULL);
    cr_expect_eq(e, late);
    cr_expect_not(made);
    cr_expect_eq(id, 7, "the id its maker drew");
}

Test(intern, the_wait_for_an_id_that_never_comes_ends)
{
    struct gmt_intern t = fresh(&kind);
    uint32_t id;
    bool made;
    struct entry *e = put(&t, &kind, "stuck", &id, &made);
    __atomic_store_n(&e->id, 0, __ATOMIC_RELEASE);
    cr_expect_eq(put(&t, &kind, "stuck", &id, &made), e);
    cr_expect_eq(id, 0);
}

/* ---- key tables ---- */

#define NKEYS 64
static _Atomic uint64_t keys[NKEYS];

static void clear_keys(void)
{
    for (int i = 0; i < NKEYS; i++)
        atomic_store(&keys[i], 0);
}

Test(keys, claim_finds_or_claims_a_slot_once)
{
    clear_keys();
    long a = gmt_key_slot(keys, NKEYS, 5, 1000, GMT_KEY_CLAIM);
    long b = gmt_key_slot(keys, NKEYS, 5, 2000, GMT_KEY_CLAIM);
    cr_expect_eq(a, 5);
    cr_expect_eq(b, 6, "probes on from a taken home");
    cr_expect_eq(gmt_key_slot(keys, NKEYS, 5, 1000, GMT_KEY_CLAIM), a);
    cr_expect_eq(gmt_key_slot(keys, NKEYS, 5, 2000, GMT_KEY_FIND), b);
    cr_expect_eq(gmt_key_slot(keys, NKEYS, 5, 3000, GMT_KEY_FIND), -1, "find claims nothing");
    cr_expect_eq(atomic_load(&keys[7]), 0);
    cr_expect_eq(gmt_key_slot(keys, NKEYS, 63, 4000, GMT_KEY_CLAIM), 63);
    cr_expect_eq(gmt_key_slot(keys, NKEYS, 63, 5000, GMT_KEY_CLAIM), 0, "the probe wraps");
}

Test(keys, a_full_probe_window_has_no_slot)
{
    clear_keys();
    for (uint64_t k = 0; k < GMT_PROBES; k++)
        cr_assert_eq(gmt_key_slot(keys, NKEYS, 10, 100 + k, GMT_KEY_CLAIM), (long)(10 + k));
    cr_expect_eq(gmt_key_slot(keys, NKEYS, 10, 999, GMT_KEY_CLAIM), -1);
    cr_expect_eq(gmt_key_slot(keys, NKEYS, 10, 999, GMT_KEY_FIND), -1);
    cr_expect_eq(atomic_load(&keys[10 + GMT_PROBES]), 0, "nothing past the window");
}

Test(keys, tombstones_are_passed_over_and_reused)
{
    clear_keys();
    long a = gmt_key_slot(keys, NKEYS, 20, 111, GMT_KEY_ADD);
    long b = gmt_key_slot(keys, NKEYS, 20, 222, GMT_KEY_ADD);
    cr_assert_eq(a, 20);
    cr_assert_eq(b, 21);
    cr_expect(gmt_key_drop(keys, a, 111));
    cr_expect_not(gmt_key_drop(keys, a, 111), "dropped once");
    cr_expect_eq(atomic_load(&keys[a]), GMT_KEY_TOMB);
    cr_expect_eq(gmt_key_slot(keys, NKEYS, 20, 111, GMT_KEY_FIND), -1);
    cr_expect_eq(gmt_key_slot(keys, NKEYS, 20, 222, GMT_KEY_FIND), b, "found past the tomb");
    cr_expect_eq(gmt_key_slot(keys, NKEYS, 20, 333, GMT_KEY_ADD), a, "the tomb is reused");
    cr_expect_eq(gmt_key_slot(keys, NKEYS, 20, 333, GMT_KEY_FIND), a);
    cr_expect_eq(gmt_key_slot(keys, NKEYS, 20, 222, GMT_KEY_FIND), b);
}

static _Atomic uint64_t shared_keys[NKEYS];
static long claimed[THREADS][8];

static void *claim_all(void *arg)
{
    int me = (int)(intptr_t)arg;
    while (!atomic_load(&go))
        ;
    for (int j = 0; j < 8; j++) {
        int i = (j + me) % 8;
        claimed[me][i] = gmt_key_slot(shared_keys, NKEYS, 3, 0x100 + (uint64_t)i, GMT_KEY_CLAIM);
    }
    return NULL;
}

Test(keys, racing_claims_of_a_key_get_one_slot)
{
    atomic_store(&go, 0);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, claim_all, (void *)(intptr_t)i), 0);
    atomic_store(&go, 1);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < 8; i++) {
        cr_assert_geq(claimed[0][i], 3);
        cr_assert_lt(claimed[0][i], 11);
        cr_expect_eq(atomic_load(&shared_keys[claimed[0][i]]), 0x100 + (uint64_t)i);
        for (int t = 1; t < THREADS; t++)
            cr_expect_eq(claimed[t][i], claimed[0][i], "thread %d, key %d", t, i);
    }
}
