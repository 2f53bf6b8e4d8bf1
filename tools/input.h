/* input.h: what the CLI reads, opened by path: a file, a pipe, or a trace inside a pack. */
#ifndef GMT_INPUT_H
#define GMT_INPUT_H

#include <stddef.h>
#include <stdio.h>

/* Opens a file the CLI reads (a trace, a baseline, a module or its debug file) so that
 * it cannot block or feed forever, as gmt_open_file does (util.h): a regular file; with
 * `streams`, a FIFO or pipe too (then read to its end); anything else (directory,
 * device, socket) is refused. A path PACK/MEMBER whose PACK is a pack opens its member
 * (gmt_pack_open_member, pack.h). Returns the fd (O_CLOEXEC), or -1 with "PATH: why" in
 * err (err may be NULL). */
int gmt_open_input(const char *path, int streams, char *err, size_t errlen);
/* The same, as a stdio stream ("rb"). A FIFO is waited on for its writer, a few seconds
 * at most (a writer started beside the reader may open it a moment after); one nobody
 * opens to write is refused. NULL with "PATH: why" in err (err may be NULL). */
FILE *gmt_fopen_input(const char *path, int streams, char *err, size_t errlen);

#endif
