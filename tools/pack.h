/* pack.h: one file for a job's traces and their names: a POSIX tar the CLI writes and reads itself, its members read as PACK/MEMBER. */
#ifndef GMT_PACK_H
#define GMT_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GMT_PACK_SUFFIX ".gmtpack"

/* Whether path is a regular file that starts as a tar (ustar) does. */
bool gmt_pack_is(const char *path);

/* The traces (members named *.gmt) of the pack at path, sorted, each as "PATH/MEMBER"
 * (malloc'd, as *out). 0, -ENOMEM, or -EINVAL with a one-line message in err (not a
 * whole tar: cut, a bad checksum, a member past its end). */
int gmt_pack_list(const char *path, char ***out, size_t *n, char *err, size_t errlen);

/* A read-only fd holding the bytes of member MEMBER of the pack PACK, for a path
 * "PACK/MEMBER" whose PACK is a regular file (open() says ENOTDIR for it): a copy in
 * memory (memfd), seekable and mappable as a file is. -1 with errno ENOENT when no
 * leading part of path is a pack holding such a member, or another errno. */
int gmt_pack_open_member(const char *path);

/* What pack wrote. */
struct gmt_pack_made {
    size_t traces, named;      /* traces, and of those the ones with a names file */
    uint64_t bytes;            /* of the pack */
};

/* The traces under dir (as gmt_list_traces finds them) and the names file beside each,
 * named by their paths below dir, into a new pack at out (written whole, then renamed
 * into place). 0, or -1 with a one-line message in err. */
int gmt_pack_write(const char *dir, const char *out, struct gmt_pack_made *made, char *err,
                   size_t errlen);

#endif
