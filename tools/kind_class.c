/* kind_class.c: what an allocation's kind means to the replay: the memory it is charged as, and the live set's key of it and of its release. */
#include "kind_class.h"

#include "live_map.h"

const uint8_t gmt_class_of_kind[256] = {
    [GMT_KIND_DEVICE] = GMT_CLASS_DEVICE, [GMT_KIND_POOL_ALLOC] = GMT_CLASS_DEVICE,
    [GMT_KIND_PHYSICAL] = GMT_CLASS_DEVICE, [GMT_KIND_MANAGED] = GMT_CLASS_DEVICE,
    [GMT_KIND_NCCL_MEM] = GMT_CLASS_DEVICE, /* GRAPH_MEM: address space (2.3); GRAPHMEM
                                             * records say what graphs hold */
    [GMT_KIND_ARRAY] = GMT_CLASS_DEVICE, [GMT_KIND_MIPMAPPED_ARRAY] = GMT_CLASS_DEVICE,
    [GMT_KIND_HOST_PINNED] = GMT_CLASS_HOST, [GMT_KIND_PHYSICAL_HOST] = GMT_CLASS_HOST,
};

bool gmt_kind_is_device(unsigned kind)
{
    return kind < 256 && gmt_kind_device((uint8_t)kind);
}

bool gmt_kind_is_host(unsigned kind)
{
    return kind < 256 && gmt_kind_host((uint8_t)kind);
}

uint64_t gmt_replay_alloc_key(unsigned kind, uint64_t addr)
{
    return gmt_live_key(kind < 256 ? gmt_ns_of_kind((uint8_t)kind) : GMT_NS_PTR, addr);
}

uint64_t gmt_replay_free_key(unsigned api, uint64_t addr)
{
    return gmt_live_key(gmt_ns_of_free_api(api), addr);
}
