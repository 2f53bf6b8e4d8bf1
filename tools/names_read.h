/* names_read.h: the names a trace's native frames need, kept beside it (TRACE.names, which names.c makes), read back anywhere. */
#ifndef GMT_NAMES_READ_H
#define GMT_NAMES_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A trace's names lie in the file of its name with this appended (docs/names.md). */
#define GMT_NAMES_SUFFIX ".names"

/* ---- reading (the symbolizer consults them first) ---- */

struct gmt_names;

/* One source-level frame as named on the host, in the symbolizer's order (innermost
 * first; inlined: inlined into the next). */
struct gmt_names_frame {
    const char *function;      /* NULL: no symbol held the address */
    const char *file;          /* NULL: no line information */
    uint32_t line;
    bool inlined;
};

/* Reads the names file at path for the trace at trace_path (untrusted: every length and
 * index is checked). 0; -ENOENT when there is none (err empty); -EINVAL with a one-line
 * message in err when it is malformed, of a newer version, or was made for another
 * trace; -ENOMEM. */
int gmt_names_load(struct gmt_names **out, const char *path, const char *trace_path, char *err,
                   size_t errlen);
void gmt_names_free(struct gmt_names *n);
/* The module the names hold for a module of the trace: by build-id when it has one,
 * else by path. Its index, or -1. */
long gmt_names_find_module(const struct gmt_names *n, const uint8_t *build_id, size_t build_id_len,
                           const char *path);
/* NULL when the host named module m's frames, else why it could not (a short phrase,
 * as the host said it). */
const char *gmt_names_module_why(const struct gmt_names *n, long m);
/* The frames of the instruction at `offset` (its address minus the module's load bias)
 * in module m: how many (0: the names do not hold it), in *out (valid until
 * gmt_names_free). */
size_t gmt_names_frames(const struct gmt_names *n, long m, uint64_t offset,
                        const struct gmt_names_frame **out);

/* ---- the trace's identity (what names.c stores) ---- */

/* The digest that names the trace at path in a names file (FNV-1a 64 of its header and
 * first record, its PROCESS record: host, pid and start time), and its size. 0, or -1
 * with a one-line message in err. */
int gmt_names_trace_identity(const char *path, uint64_t *digest, uint64_t *size, char *err,
                             size_t errlen);

#endif
