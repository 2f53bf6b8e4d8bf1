/* names_format.h: the layout of TRACE.names, shared by its reader (names_read.c) and its writer (names.c). */
#ifndef GMT_NAMES_FORMAT_H
#define GMT_NAMES_FORMAT_H

#include <stddef.h>
#include <stdint.h>

/*
 * The file (docs/names.md is its spec): a fixed header, then one zlib stream that
 * inflates to four tables, each entry little-endian and of a fixed size:
 *   modules[n_modules]      path, why (0: named), build_id, build_id_len
 *   addresses[n_addresses]  offset (u64), module, first frame, frames, reserved;
 *                           sorted by module then offset, no two alike
 *   frames[n_frames]        function, file, line, flags (1: inlined)
 *   blob[blob_len]          NUL-terminated strings and raw build-ids, named by their
 *                           offset; offset 0 is the empty string and means "none"
 * The header names the trace by a digest of its first bytes (the file header and its
 * PROCESS record: host, pid and start time), so names never apply to another trace.
 */

#define NAMES_MAGIC "GMTNAMES"
#define NAMES_MAJOR 1
#define NAMES_MINOR 0
#define NAMES_MAX_BODY (1ull << 30) /* bytes inflated: more is not a names file */
#define NAMES_MAX_FRAMES 64         /* per address: the symbolizer's inline limit */

struct names_header {
    char magic[8];
    uint16_t version_major, version_minor;
    uint32_t header_size;      /* bytes, this struct */
    uint64_t trace_digest;     /* FNV-1a 64 of the trace's header and first record */
    uint64_t trace_size;       /* bytes of the trace file when it was named */
    uint64_t body_len;         /* bytes of the tables, inflated */
    uint64_t stored_len;       /* bytes of the zlib stream that follows this header */
    uint32_t n_modules;
    uint32_t reserved;
    uint64_t n_addresses, n_frames, blob_len;
};

struct disk_module {
    uint32_t path, why, build_id, build_id_len; /* blob offsets; why 0: named */
};

struct disk_address {
    uint64_t offset;           /* bytes from the module's load bias */
    uint32_t module, first, n, reserved;
};

struct disk_frame {
    uint32_t function, file, line, flags;
};
#define FRAME_INLINED 1u

/* FNV-1a 64 of n bytes from the running hash h: the trace's digest, the strings' keys. */
static inline uint64_t names_fnv1a(uint64_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

#endif
