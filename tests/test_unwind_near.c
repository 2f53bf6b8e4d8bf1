/* test_unwind_near.c: the thread's near cache of frame rules (unwind.c) answers only for the return address it holds, and is emptied when the loaded objects change. */
#include <criterion/criterion.h>
#include <stdint.h>

#include "gmt.h"
/* The cache is static to unwind.c: the test builds its copy of the file, which the
 * linker then takes instead of the archive's (every symbol of unwind.o is defined here). */
#include "unwind.c"

static unsigned near_of(uint64_t ra)
{
    return (unsigned)((ra * 0x9e3779b97f4a7c15ull) >> (64 - NEAR_BITS));
}

/* Two return addresses in no loaded object, in one slot of the cache. */
static void colliding(uint64_t *a, uint64_t *b)
{
    *a = 0x10000000;
    for (uint64_t x = *a + 1;; x++)
        if (near_of(x) == near_of(*a)) {
            *b = x;
            return;
        }
}

Test(unwind_near, a_slot_answers_only_for_its_own_address)
{
    cr_assert(gmt_unwind_setup());
    uint64_t a, b;
    colliding(&a, &b);
    uint64_t planted = make_rule(R_STD, true, 16, true, -16);
    memo.near[near_of(a)].ra = a;
    memo.near[near_of(a)].rule = planted;
    cr_expect_eq(rule_missed(a, MEMO, 0), planted, "the address the slot holds");
    uint64_t got = rule_missed(b, MEMO, 0);
    cr_expect_neq(got, planted, "another address in the same slot got its rule");
    cr_expect_eq(memo.near[near_of(b)].ra, b, "the slot now holds the address looked up");
}

__attribute__((noinline)) static int walk_here(uint64_t *out, int max)
{
    return gmt_unwind_walk(__builtin_frame_address(0), out, max);
}

Test(unwind_near, emptied_when_the_loaded_objects_change)
{
    cr_assert(gmt_unwind_setup());
    uint64_t out[64];
    cr_assert_gt(walk_here(out, 64), 0);
    uint64_t a = 0x10000000;
    memo.near[near_of(a)].ra = a;
    memo.near[near_of(a)].rule = make_rule(R_STD, true, 16, true, -16);
    atomic_fetch_add(&gmt_hot.resolve.dl_generation, 1); /* a dlopen or dlclose */
    cr_assert_gt(walk_here(out, 64), 0);
    cr_expect_neq(memo.near[near_of(a)].ra, a, "a rule of the old objects was kept");
}
