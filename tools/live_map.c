/* live_map.c: the live set's key tables and its growth, the parts of it not inlined into the replay. */
#include "live_map.h"

#include <errno.h>
#include <stdlib.h>

#include "trace_format.h"

const uint8_t gmt_ns_by_kind[256] = {
    [GMT_KIND_PHYSICAL] = GMT_NS_HANDLE, [GMT_KIND_PHYSICAL_HOST] = GMT_NS_HANDLE,
    [GMT_KIND_IMPORTED] = GMT_NS_HANDLE, [GMT_KIND_MULTICAST] = GMT_NS_HANDLE,
    [GMT_KIND_RETAINED] = GMT_NS_HANDLE, [GMT_KIND_VIRTUAL] = GMT_NS_VIRTUAL,
    [GMT_KIND_MAPPING] = GMT_NS_MAPPING, [GMT_KIND_IPC_MAPPING] = GMT_NS_IPC,
    [GMT_KIND_POOL] = GMT_NS_POOL, [GMT_KIND_ARRAY] = GMT_NS_ARRAY,
    [GMT_KIND_MIPMAPPED_ARRAY] = GMT_NS_ARRAY,
};

const uint8_t gmt_ns_by_free_api[256] = {
    [GMT_API_cuMemRelease] = GMT_NS_HANDLE, [GMT_API_cuMemAddressFree] = GMT_NS_VIRTUAL,
    [GMT_API_cuMemUnmap] = GMT_NS_MAPPING, [GMT_API_cuIpcCloseMemHandle] = GMT_NS_IPC,
    [GMT_API_cudaMemPoolDestroy] = GMT_NS_POOL, [GMT_API_cuMemPoolDestroy] = GMT_NS_POOL,
    [GMT_API_cudaFreeArray] = GMT_NS_ARRAY, [GMT_API_cudaFreeMipmappedArray] = GMT_NS_ARRAY,
    [GMT_API_cuArrayDestroy] = GMT_NS_ARRAY, [GMT_API_cuMipmappedArrayDestroy] = GMT_NS_ARRAY,
};

/* Doubles the table (makes it, when empty); -ENOMEM. */
int gmt_live_grow(struct gmt_live_map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 1024;
    struct gmt_live_map n = {calloc(ncap, sizeof *n.s), ncap, m->n,
                         (unsigned)(64 - __builtin_ctzll(ncap)), m->dense};
    if (!n.s)
        return -ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->s[i].refs)
            continue;
        size_t j = gmt_live_home(&n, m->s[i].key);
        while (n.s[j].refs)
            j = (j + 1) & (ncap - 1);
        n.s[j] = m->s[i];
    }
    free(m->s);
    *m = n;
    return 0;
}
