/* watch_job.c: a 2-rank training loop on the fake CUDA/NCCL that runs for a set time, for watch's tests: NVTX steps, a rank that hangs in a collective, an allocation that fails. */

/* Usage: watch_job STEPS STEP_MS MODE
 *   Launcher: starts itself twice (fork + exec, RANK, LOCAL_RANK and WORLD_SIZE in each
 *   child's environment, as torchrun does) and exits 0 when both ranks did; it makes no
 *   CUDA or NCCL call, so it writes no trace.
 * A rank: cudaSetDevice(rank), a 32 MiB model (cudaMalloc), ncclCommInitRank; then STEPS
 *   steps, each an NVTX range "train_step" (when the tracer is preloaded: its NVTX
 *   injection entry is called directly, as an NVTX copy would) around: 8 MiB of
 *   activations allocated and freed, an ncclAllReduce of 1 Mi floats, and 1 MiB kept (the
 *   memory grows by 1 MiB a step); then STEP_MS ms of sleep. Prints "rank R: ok" at the end.
 * MODE ok: as above. hang: at step STEPS/2 rank 1 stops before the all-reduce and sleeps
 *   until it is killed, so rank 0 waits in ncclAllReduce (FAKENCCL_TIMEOUT_S bounds that).
 *   fail: at step STEPS/2 rank 1 asks cudaMalloc for 1 TiB, which fails, and goes on. */
#include "fake_nccl.h"
#include "rank_id.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define COUNT (1u << 20)
#define MIB ((size_t)1 << 20)

/* ---- NVTX, as one NVTX copy drives its injection library (NVTX v3's export tables) ---- */
typedef void (*fn)(void);
#define SLOTS 16
static fn core[SLOTS];
static fn *core_tab[SLOTS + 1];

static void stub(void)
{
}

static int get_module(int module, fn ***out, unsigned *size)
{
    if (module != 1)
        return 0;
    *out = core_tab;
    *size = SLOTS;
    return 1;
}

static struct {
    size_t struct_size;
    int (*get_module)(int, fn ***, unsigned *);
} callbacks = {16, get_module};

static const void *get_table(uint32_t id)
{
    return id == 1 ? (const void *)&callbacks : NULL;
}

static void nvtx_init(void)
{
    for (int i = 1; i < SLOTS; i++) {
        core[i] = stub;
        core_tab[i] = &core[i];
    }
    int (*init)(const void *(*)(uint32_t)) =
        (int (*)(const void *(*)(uint32_t)))dlsym(RTLD_DEFAULT, "InitializeInjectionNvtx2");
    if (init)
        init(get_table);
}

static void push(const char *name)
{
    if (core[9] != stub)
        ((int (*)(const char *))core[9])(name);
}

static void pop(void)
{
    if (core[11] != stub)
        ((int (*)(void))core[11])();
}

/* ---- the job ---- */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&ts, &ts))
        ;
}

static int step(int rank, long s, long steps, const char *mode, float *buf, ncclComm_t comm)
{
    long e;
    push("train_step");
    void *act, *keep;
    if ((e = cudaMalloc(&act, 8 * MIB)))
        return fail(rank, "cudaMalloc (activations)", e);
    if (rank == 1 && s == steps / 2 && !strcmp(mode, "hang"))
        for (;;)
            sleep_ms(1000);
    if (rank == 1 && s == steps / 2 && !strcmp(mode, "fail")) {
        void *huge;
        if (cudaMalloc(&huge, (size_t)1 << 40) == cudaSuccess)
            return fail(rank, "cudaMalloc of 1 TiB (should fail)", 0);
    }
    if ((e = ncclAllReduce(buf, buf, COUNT, ncclFloat, ncclSum, comm, NULL)))
        return fail(rank, "ncclAllReduce", e);
    if ((e = cudaFree(act)))
        return fail(rank, "cudaFree", e);
    if ((e = cudaMalloc(&keep, MIB)))
        return fail(rank, "cudaMalloc (kept)", e);
    pop();
    return 0;
}

static int run_rank(int rank, const char *idfile, long steps, long step_ms, const char *mode)
{
    nvtx_init();
    ncclUniqueId id;
    if (exchange_id(rank, idfile, &id))
        return fail(rank, "unique id exchange", -1);
    long e;
    if ((e = cudaSetDevice(rank)))
        return fail(rank, "cudaSetDevice", e);
    float *buf, *model;
    if ((e = cudaMalloc((void **)&model, 32 * MIB)) || (e = cudaMalloc((void **)&buf, COUNT * sizeof *buf)))
        return fail(rank, "cudaMalloc", e);
    if ((e = cudaMemset(buf, 0, COUNT * sizeof *buf)))
        return fail(rank, "cudaMemset", e);
    ncclComm_t comm;
    if ((e = ncclCommInitRank(&comm, 2, id, rank)))
        return fail(rank, "ncclCommInitRank", e);
    for (long s = 0; s < steps; s++) {
        if (step(rank, s, steps, mode, buf, comm))
            return 1;
        sleep_ms(step_ms);
    }
    if ((e = ncclCommDestroy(comm)))
        return fail(rank, "ncclCommDestroy", e);
    printf("rank %d: ok\n", rank);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 7 && !strcmp(argv[1], "--rank"))
        return run_rank(atoi(argv[2]), argv[3], atol(argv[4]), atol(argv[5]), argv[6]);
    if (argc != 4 || (strcmp(argv[3], "ok") && strcmp(argv[3], "hang") && strcmp(argv[3], "fail"))) {
        fprintf(stderr, "usage: watch_job STEPS STEP_MS ok|hang|fail\n");
        return 2;
    }
    char idfile[256];
    const char *tmpdir = getenv("TMPDIR");
    snprintf(idfile, sizeof idfile, "%s/watch_job.%d.id", tmpdir && *tmpdir ? tmpdir : "/tmp",
             (int)getpid());
    pid_t pids[2];
    for (int r = 0; r < 2; r++) {
        char rs[16];
        snprintf(rs, sizeof rs, "%d", r);
        pids[r] = fork();
        if (pids[r] == 0) {
            setenv("RANK", rs, 1);
            setenv("LOCAL_RANK", rs, 1);
            setenv("WORLD_SIZE", "2", 1);
            execl("/proc/self/exe", argv[0], "--rank", rs, idfile, argv[1], argv[2], argv[3],
                  (char *)NULL);
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
