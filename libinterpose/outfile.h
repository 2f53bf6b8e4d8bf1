/* outfile.h: the trace file's name and its preamble (outfile.c). */
#ifndef GMT_OUTFILE_H
#define GMT_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gmt.h"

/* ---- outfile.c: the trace file's name and its preamble ---- */
/* The host name ("unknown" when it has none) and the rank the launcher set in the
 * environment (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID), -1 when none. */
GMT_HIDDEN void gmt_outfile_host(char *host, size_t len);
GMT_HIDDEN int gmt_outfile_rank(void);
/* Creates the trace file GPUMEMTRACE_OUTPUT names (%h host, %p pid, %r rank, %% a '%'; the
 * rank goes before ".gmt" when the pattern has no %r; ".1", ".2"... when the name exists),
 * exclusively, append-only: its fd, with its name in path. Else -errno, with *what
 * saying which step failed (for the warning). */
GMT_HIDDEN int gmt_outfile_create(char *path, size_t cap, const char *host, int rank,
                                  const char **what);
/* fd moved to 3 or above (close-on-exec) when it is 0, 1 or 2; -1 with errno if it can't. */
GMT_HIDDEN int gmt_fd_above_stdio(int fd);
/* The records that open a file: header, PROCESS (pid, rank, host, command line) and ENV
 * (the variables that change GPU memory use), built in `scratch`, which holds
 * GMT_PREAMBLE_SCRATCH bytes (the second half is a read area): their length in bytes. */
#define GMT_PREAMBLE_SCRATCH (2u * GMT_REC_MAX)
GMT_HIDDEN size_t gmt_outfile_preamble(unsigned char *scratch, const char *host, int rank,
                                       bool forked);

#endif
