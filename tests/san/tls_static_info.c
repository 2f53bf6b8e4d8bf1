/* tls_static_info.c: a dependency of the sanitized preload library, after its ASan runtime: hands on ld.so's _dl_get_tls_static_info to that runtime's start-up. */
#include <dlfcn.h>
#include <stddef.h>

/*
 * ASan's start-up looks _dl_get_tls_static_info up with dlsym(RTLD_NEXT) from its own
 * runtime and calls what it gets. Behind a preloaded library the runtime is that
 * library's dependency; in a program that names ld.so among its own dependencies (the
 * static-runtime fake), ld.so then comes before the runtime in the lookup order, the
 * lookup finds nothing and the start-up calls address 0. This object comes after the
 * runtime and gives ld.so's own function, found from the start of the order.
 */
typedef void tls_info_fn(size_t *size, size_t *align);

__attribute__((visibility("default"))) void _dl_get_tls_static_info(size_t *size, size_t *align);
void _dl_get_tls_static_info(size_t *size, size_t *align)
{
    static tls_info_fn *real;
    if (!real)
        real = (tls_info_fn *)dlvsym(RTLD_DEFAULT, "_dl_get_tls_static_info", "GLIBC_PRIVATE");
    if (real)
        real(size, align);
    else
        *size = *align = 0;
}
