/* paths.h: the traces a directory holds, listed by path (what trace operands and packs are made of). */
#ifndef GMT_PATHS_H
#define GMT_PATHS_H

#include <stddef.h>

/* The traces (*.gmt) in dir and its subdirectories (8 levels; no symbolic link to a
 * directory is followed), sorted by path; *out and each path are malloc'd.
 * Returns 0 or -errno. */
int gmt_list_traces(const char *dir, char ***out, size_t *n);
/* Frees a list of n malloc'd paths (gmt_list_traces', gmt_expand_paths', gmt_pack_list's). */
void gmt_free_paths(char **p, size_t n);

#endif
