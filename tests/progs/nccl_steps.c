/* nccl_steps.c: a training-loop-shaped NCCL program for the check tests: 2 ranks in 2 processes, N steps of all_reduce, optionally leaking a buffer per step. */

/* Usage: nccl_steps STEPS LEAK_BYTES
 *   Launcher: starts itself twice (fork + exec, RANK set in each child's environment,
 *   as torchrun does) and exits 0 when both ranks did; it makes no CUDA or NCCL call.
 * A rank: cudaSetDevice(rank); ncclCommInitRank (2 ranks); STEPS times: ncclAllReduce of
 *   1 Mi floats, then, when LEAK_BYTES > 0, cudaMalloc(LEAK_BYTES) that is never freed
 *   (the bug the check must catch); ncclCommDestroy; frees its data buffer. Prints
 *   "rank R: ok". */
#include "fake_nccl.h"
#include "rank_id.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define COUNT (1u << 20)

static int run_rank(int rank, const char *idfile, long steps, size_t leak)
{
    ncclUniqueId id;
    if (exchange_id(rank, idfile, &id))
        return fail(rank, "unique id exchange", -1);
    long e;
    if ((e = cudaSetDevice(rank)))
        return fail(rank, "cudaSetDevice", e);
    float *buf;
    if ((e = cudaMalloc((void **)&buf, COUNT * sizeof *buf)))
        return fail(rank, "cudaMalloc", e);
    if ((e = cudaMemset(buf, 0, COUNT * sizeof *buf)))
        return fail(rank, "cudaMemset", e);
    ncclComm_t comm;
    if ((e = ncclCommInitRank(&comm, 2, id, rank)))
        return fail(rank, "ncclCommInitRank", e);
    for (long s = 0; s < steps; s++) {
        if ((e = ncclAllReduce(buf, buf, COUNT, ncclFloat, ncclSum, comm, NULL)))
            return fail(rank, "ncclAllReduce", e);
        void *lost;
        if (leak && (e = cudaMalloc(&lost, leak)))
            return fail(rank, "cudaMalloc (leak)", e);
    }
    if ((e = ncclCommDestroy(comm)))
        return fail(rank, "ncclCommDestroy", e);
    if ((e = cudaFree(buf)))
        return fail(rank, "cudaFree", e);
    printf("rank %d: ok\n", rank);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "--rank"))
        return run_rank(atoi(argv[2]), argv[3], atol(argv[4]), 0) ? 1 : 0;
    if (argc == 6 && !strcmp(argv[1], "--rank"))
        return run_rank(atoi(argv[2]), argv[3], atol(argv[4]), strtoul(argv[5], NULL, 10)) ? 1 : 0;
    if (argc != 3) {
        fprintf(stderr, "usage: nccl_steps STEPS LEAK_BYTES\n");
        return 2;
    }
    char idfile[256];
    const char *tmpdir = getenv("TMPDIR");
    snprintf(idfile, sizeof idfile, "%s/nccl_steps.%d.id", tmpdir && *tmpdir ? tmpdir : "/tmp",
             (int)getpid());
    pid_t pids[2];
    for (int r = 0; r < 2; r++) {
        char rs[16];
        snprintf(rs, sizeof rs, "%d", r);
        pids[r] = fork();
        if (pids[r] == 0) {
            setenv("RANK", rs, 1);
            setenv("WORLD_SIZE", "2", 1);
            execl("/proc/self/exe", argv[0], "--rank", rs, idfile, argv[1], argv[2], (char *)NULL);
            _exit(127);
        }
    }
    int ok = 1;
    for (int r = 0; r < 2; r++) {
        int st = 0;
        if (pids[r] < 0 || waitpid(pids[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
            ok = 0;
    }
    unlink(idfile);
    return ok ? 0 : 1;
}
