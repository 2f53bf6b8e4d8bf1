/* rank_id.h: the test programs' ranks meet through a file: rank 0 writes its ncclUniqueId to
 * IDFILE (whole, by a rename), the others wait up to 30 s for it. */
#ifndef GMT_TEST_RANK_ID_H
#define GMT_TEST_RANK_ID_H

#include <stdio.h>
#include <time.h>

#include "fake_nccl.h"

/* "rank R: WHAT failed: E" on stderr; 1, the program's exit status for it. */
static inline int fail(int rank, const char *what, long e)
{
    fprintf(stderr, "rank %d: %s failed: %ld\n", rank, what, e);
    return 1;
}

/* 0, or -1 when the id could not be written or read. */
static inline int exchange_id(int rank, const char *idfile, ncclUniqueId *id)
{
    if (rank == 0) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", idfile);
        if (ncclGetUniqueId(id) != ncclSuccess)
            return -1;
        FILE *f = fopen(tmp, "wb");
        if (!f || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) || rename(tmp, idfile))
            return -1;
        return 0;
    }
    FILE *f = NULL;
    for (int i = 0; i < 30000 && !(f = fopen(idfile, "rb")); i++) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    if (!f)
        return -1;
    int ok = fread(id, sizeof *id, 1, f) == 1;
    fclose(f);
    return ok ? 0 : -1;
}

#endif
