/* kind_class.h: what an allocation's kind means to the replay: the memory it is charged as, and the live set's key of it and of its release (kind_class.c). */
#ifndef GMT_KIND_CLASS_H
#define GMT_KIND_CLASS_H

#include <stdbool.h>
#include <stdint.h>

#include "trace_format.h"

/* What each kind is charged as, by table: the replay asks for every allocation and free,
 * and a table is one load where a switch is a range check and a jump. */
enum { GMT_CLASS_DEVICE = 1, GMT_CLASS_HOST = 2 };
extern const uint8_t gmt_class_of_kind[256];

static inline bool gmt_kind_device(uint8_t kind)
{
    return gmt_class_of_kind[kind] == GMT_CLASS_DEVICE;
}

static inline bool gmt_kind_host(uint8_t kind)
{
    return gmt_class_of_kind[kind] == GMT_CLASS_HOST;
}

/* Another process's memory mapped here: an imported handle (its size as the importer
 * recorded it) and an IPC mapping. Shown as peer memory, never as this device's. */
static inline bool gmt_kind_peer(uint8_t kind)
{
    return kind == GMT_KIND_IMPORTED || kind == GMT_KIND_IPC_MAPPING;
}

/* Charging rules (docs/trace-format.md), for any value: which kinds are local device
 * memory, which are pinned host memory; the rest is address space or a peer's memory. */
bool gmt_kind_is_device(unsigned kind);
bool gmt_kind_is_host(unsigned kind);

/* The key the replay's live set gives an allocation of `kind` at `addr`, and the one a
 * release by `api` of `addr` looks up (the namespaces of handles, pointers, arrays...):
 * for other passes over the events (phases.c) that must match them as the replay does. */
uint64_t gmt_replay_alloc_key(unsigned kind, uint64_t addr);
uint64_t gmt_replay_free_key(unsigned api, uint64_t addr);

#endif
