/* symtest.c: a shared object for the symbolizer and module-map tests: known lines, an inlined call, a static function. */
#include <stdint.h>

/* The test expects these line numbers: #line fixes them whatever is edited above. */
#line 100
__attribute__((noinline)) void *symtest_probe(void)
{
    return __builtin_return_address(0);
}

#line 200
static inline __attribute__((always_inline)) void *symtest_inner(int x)
{
    void *r = x ? symtest_probe() : 0;
    return r;
}

#line 300
__attribute__((noinline)) void *symtest_outer(int x)
{
    void *r = symtest_inner(x);
    __asm__ volatile("" ::: "memory");
    return r;
}

#line 400
static __attribute__((noinline)) int symtest_hidden(int x)
{
    __asm__ volatile("" ::: "memory");
    return x * 3 + 1;
}

/* Addresses the test cannot take itself: a static function and a C++-free leaf. */
uintptr_t symtest_hidden_address(void)
{
    return (uintptr_t)&symtest_hidden;
}

int symtest_leaf(int x)
{
    return symtest_hidden(x) + 2;
}
