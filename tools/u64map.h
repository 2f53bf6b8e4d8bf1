/* u64map.h: an open-addressing hash map from 64-bit keys to 64-bit values, for the CLI. */
#ifndef GMT_U64MAP_H
#define GMT_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gmt_u64map {
    uint64_t *keys;
    uint64_t *vals;
    uint8_t *state;            /* 0 empty, 1 used; 2 (deleted) is never made: deletion
                                * shifts the entries after it back instead */
    size_t cap, used, tomb;
};

void gmt_u64map_init(struct gmt_u64map *m);
void gmt_u64map_free(struct gmt_u64map *m);
/* Inserts or replaces. Returns 0 or -ENOMEM. */
int gmt_u64map_put(struct gmt_u64map *m, uint64_t key, uint64_t val);
/* Returns a pointer to the value, or NULL. Valid until the next put or del. */
uint64_t *gmt_u64map_get(const struct gmt_u64map *m, uint64_t key);
bool gmt_u64map_del(struct gmt_u64map *m, uint64_t key);
/* The same without the lookups, for a caller that has just looked the key up: put_new
 * inserts a key known to be absent, del_at removes the value a get returned. */
int gmt_u64map_put_new(struct gmt_u64map *m, uint64_t key, uint64_t val);
void gmt_u64map_del_at(struct gmt_u64map *m, uint64_t *val);

#endif
