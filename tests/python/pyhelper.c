/* pyhelper.c: for tests/python: allocates through the simulated runtime on a thread that C creates, which runs no Python. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

typedef int (*malloc_fn)(void **, size_t);

static void *run(void *arg)
{
    size_t n = *(size_t *)arg;
    malloc_fn f = (malloc_fn)dlsym(RTLD_DEFAULT, "cudaMalloc");
    void *p = NULL;
    return (void *)(size_t)(f && f(&p, n) == 0 ? 0 : 1);
}

__attribute__((visibility("default"))) int alloc_on_native_thread(size_t n)
{
    pthread_t t;
    void *r = (void *)1;
    if (pthread_create(&t, NULL, run, &n) != 0 || pthread_join(t, &r) != 0)
        return -1;
    return (int)(size_t)r;
}
