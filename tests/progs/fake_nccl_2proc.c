/* fake_nccl_2proc.c: an NCCL program to trace: two ranks in two processes (one device each) run all_reduce twice, like a torchrun job. */

/* Usage: fake_nccl_2proc [COUNT]
 *   Launcher: starts itself twice (fork + exec, as torchrun does) as
 *   fake_nccl_2proc --rank R --nranks 2 --id-file F [COUNT], waits, exits 0 when both
 *   ranks did. The launcher itself makes no CUDA or NCCL call.
 * A rank: rank 0 writes ncclGetUniqueId to F, the other reads it; cudaSetDevice(rank);
 *   ncclCommInitRank; two ncclAllReduce (sum, float, COUNT elements, default 1Mi) checked
 *   element by element; ncclCommDestroy. It prints
 *   "rank R: ok init=A first=B second=C" with the cudaMemGetInfo drops (bytes) over init,
 *   the first and the second all_reduce: the first allocates NCCL's buffers, the second
 *   nothing. */
#include "fake_nccl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CK(call)                                                                              \
    do {                                                                                      \
        long e_ = (long)(call);                                                               \
        if (e_ != 0) {                                                                        \
            fprintf(stderr, "rank %d: %s failed: %ld\n", rank, #call, e_);                    \
            exit(1);                                                                          \
        }                                                                                     \
    } while (0)

static size_t used(void)
{
    size_t f, t;
    return cudaMemGetInfo(&f, &t) == cudaSuccess ? t - f : 0;
}

static int run_rank(int rank, int nranks, const char *idfile, size_t count)
{
    ncclUniqueId id;
    if (rank == 0) {
        CK(ncclGetUniqueId(&id));
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", idfile);
        FILE *f = fopen(tmp, "wb");
        if (!f || fwrite(&id, sizeof id, 1, f) != 1 || fclose(f) || rename(tmp, idfile)) {
            fprintf(stderr, "rank 0: cannot write %s\n", idfile);
            return 1;
        }
    } else {
        FILE *f = NULL;
        for (int i = 0; i < 30000 && !(f = fopen(idfile, "rb")); i++) {
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
        }
        if (!f || fread(&id, sizeof id, 1, f) != 1) {
            fprintf(stderr, "rank %d: cannot read %s\n", rank, idfile);
            return 1;
        }
        fclose(f);
    }
    int ndev = 0;
    CK(cudaGetDeviceCount(&ndev));
    CK(cudaSetDevice(rank % ndev));
    float *buf, *host = malloc(count * sizeof *host);
    CK(cudaMalloc((void **)&buf, count * sizeof *buf));
    size_t u0 = used();
    ncclComm_t comm;
    CK(ncclCommInitRank(&comm, nranks, id, rank));
    size_t u1 = used();
    size_t deltas[2];
    for (int iter = 0; iter < 2; iter++) {
        for (size_t i = 0; i < count; i++) host[i] = (float)(rank + 1 + (int)(i % 7));
        CK(cudaMemcpy(buf, host, count * sizeof *host, cudaMemcpyHostToDevice));
        size_t before = used();
        CK(ncclAllReduce(buf, buf, count, ncclFloat, ncclSum, comm, NULL));
        CK(cudaStreamSynchronize(NULL));
        deltas[iter] = used() - before;
        CK(cudaMemcpy(host, buf, count * sizeof *host, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < count; i++) {
            float want = 0;
            for (int r = 0; r < nranks; r++) want += (float)(r + 1 + (int)(i % 7));
            if (host[i] != want) {
                fprintf(stderr, "rank %d: element %zu is %g, want %g\n", rank, i, host[i], want);
                return 1;
            }
        }
    }
    CK(ncclCommDestroy(comm));
    CK(cudaFree(buf));
    free(host);
    printf("rank %d: ok init=%zu first=%zu second=%zu\n", rank, u1 - u0, deltas[0], deltas[1]);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 7 && !strcmp(argv[1], "--rank")) {
        size_t count = argc > 7 ? strtoul(argv[7], NULL, 10) : (1u << 20);
        return run_rank(atoi(argv[2]), atoi(argv[4]), argv[6], count);
    }
    const char *count = argc > 1 ? argv[1] : "1048576";
    char idfile[256];
    const char *tmpdir = getenv("TMPDIR");
    snprintf(idfile, sizeof idfile, "%s/fake_nccl_2proc.%d.id", tmpdir && *tmpdir ? tmpdir : "/tmp", (int)getpid());
    pid_t pids[2];
    for (int r = 0; r < 2; r++) {
        char rs[16];
        snprintf(rs, sizeof rs, "%d", r);
        pids[r] = fork();
        if (pids[r] == 0) {
            execl("/proc/self/exe", argv[0], "--rank", rs, "--nranks", "2", "--id-file", idfile, count, (char *)NULL);
            _exit(127);
        }
    }
    int ok = 1;
    for (int r = 0; r < 2; r++) {
        int st = 0;
        if (pids[r] < 0 || waitpid(pids[r], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) ok = 0;
    }
    unlink(idfile);
    return ok ? 0 : 1;
}
