/* module_range.h: where a shared object the test dlopened lies in memory: its load bias and the span of its PT_LOAD segments. */
#ifndef GMT_TEST_MODULE_RANGE_H
#define GMT_TEST_MODULE_RANGE_H

#include <link.h>
#include <stdint.h>
#include <string.h>

struct module_range {
    const char *path; /* as given to dlopen: the name dl_iterate_phdr reports */
    uint64_t bias, start, end;
};

static int module_range_cb(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct module_range *r = data;
    if (!info->dlpi_name || strcmp(info->dlpi_name, r->path) != 0)
        return 0;
    r->bias = info->dlpi_addr;
    r->start = UINT64_MAX;
    r->end = 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < r->start)
            r->start = a;
        if (a + ph->p_memsz > r->end)
            r->end = a + ph->p_memsz;
    }
    return 1;
}

/* 1 when `path` is loaded (bias, start, end filled), 0 when it is not. */
static inline int module_range(const char *path, uint64_t *bias, uint64_t *start, uint64_t *end)
{
    struct module_range r = {path, 0, 0, 0};
    if (dl_iterate_phdr(module_range_cb, &r) != 1)
        return 0;
    *bias = r.bias;
    *start = r.start;
    *end = r.end;
    return 1;
}

#endif
