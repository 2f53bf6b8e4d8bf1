/* robust_stale.c: a driver found through dlsym(RTLD_DEFAULT) is closed and loaded again elsewhere: the tracer's cached real pointers must not dangle. Usage: robust_stale LIBCUDA */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/mman.h>

typedef int alloc_fn(unsigned long long *, size_t);

int main(int argc, char **argv)
{
    if (argc < 2)
        return 2;
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    if (!h)
        return 2;
    alloc_fn *f = (alloc_fn *)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    unsigned long long p = 0;
    printf("first: %d\n", f(&p, 1 << 20));
    Dl_info di;
    dladdr(dlsym(h, "cuInit"), &di);
    void *base = di.dli_fbase;
    dlclose(h);
    /* Keep the old place taken, so a reload (if the library was unloaded) lands elsewhere. */
    mmap(base, 16384, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    h = dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL);
    f = (alloc_fn *)dlsym(RTLD_DEFAULT, "cuMemAlloc_v2");
    printf("second: %d\n", f(&p, 1 << 20));
    return 0;
}
