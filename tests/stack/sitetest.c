/* sitetest.c: a shared object that stands for a user's CUDA source file: the runtime header's inline allocation wrapper (cuda_runtime.h's cudaMalloc<T>) inlined into the user's function. */
#include <stddef.h>

/* Stands for libcudart's cudaMalloc: gives back the address it returns to. */
__attribute__((noinline)) void *sitetest_runtime_alloc(void **p, size_t bytes)
{
    (void)p;
    (void)bytes;
    __asm__ volatile("" ::: "memory");
    return __builtin_return_address(0);
}

/* cuda_runtime.h's template cudaMalloc<T>(T **, size_t) is an inline function in the
 * user's translation unit: C has no templates, so it is written out for float, under a
 * name the built-in `cuda[A-Z]*` rule matches as it matches the template's. */
static inline __attribute__((always_inline)) void *cudaMallocFloat(float **p, size_t n)
{
    void *r = sitetest_runtime_alloc((void **)p, n * sizeof **p);
    __asm__ volatile("" ::: "memory");
    return r;
}

/* The user's function: the site. */
__attribute__((noinline)) void *sitetest_user_alloc(size_t n)
{
    float *p;
    void *r = cudaMallocFloat(&p, n);
    __asm__ volatile("" ::: "memory");
    return r;
}
