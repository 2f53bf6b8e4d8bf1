/* train_sim.c: a 2-rank data-parallel training loop on the simulated CUDA/NCCL, for `make demo`.
 *
 * Shaped like a real job under torchrun: a launcher starts one worker process per GPU
 * (RANK, LOCAL_RANK, WORLD_SIZE in the environment); each worker allocates its model
 * with cudaMalloc, creates an NCCL communicator, and runs a few steps: activations from
 * the stream-ordered pool, gradients all-reduced in one bucket (a group of all_reduces),
 * a small all_gather of metrics. One "metrics history" buffer per step is never freed
 * (the leak the summary should find). Every result is checked; the worker prints a
 * checksum, so runs with and without the tracer can be compared.
 *
 * Usage: train_sim [steps]        (default 4)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "fake_nccl.h"

#define NRANKS 2
#define NLAYERS 3
#define LAYER_FLOATS (16u << 20) /* 64 MiB of float32 per layer */

#define CHECK_CUDA(x)                                                                  \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "rank %d: %s failed: %d\n", rank, #x, (int)e_);            \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)
#define CHECK_NCCL(x)                                                                  \
    do {                                                                               \
        ncclResult_t r_ = (x);                                                         \
        if (r_ != ncclSuccess) {                                                       \
            fprintf(stderr, "rank %d: %s failed: %d\n", rank, #x, (int)r_);            \
            exit(1);                                                                   \
        }                                                                              \
    } while (0)

static int rank;

/* rank 0 makes the unique id and hands it over through a file, as torchrun's store would */
static void exchange_id(ncclUniqueId *id, const char *path)
{
    if (rank == 0) {
        CHECK_NCCL(ncclGetUniqueId(id));
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "wb");
        if (!f || fwrite(id, sizeof *id, 1, f) != 1 || fclose(f) || rename(tmp, path)) {
            perror(path);
            exit(1);
        }
        return;
    }
    for (int tries = 0; tries < 2000; tries++) {
        FILE *f = fopen(path, "rb");
        if (f) {
            size_t n = fread(id, sizeof *id, 1, f);
            fclose(f);
            if (n == 1)
                return;
        }
        struct timespec ts = {0, 5 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    fprintf(stderr, "rank %d: no unique id in %s\n", rank, path);
    exit(1);
}

static void fill(float *dev, size_t n, float v)
{
    /* simulated device memory is host-visible, but go through the API like real code */
    float *h = malloc(n * sizeof *h);
    for (size_t i = 0; i < n; i++)
        h[i] = v;
    CHECK_CUDA(cudaMemcpy(dev, h, n * sizeof *h, cudaMemcpyHostToDevice));
    free(h);
}

static double sum_of(const float *dev, size_t n)
{
    float *h = malloc(n * sizeof *h);
    CHECK_CUDA(cudaMemcpy(h, dev, n * sizeof *h, cudaMemcpyDeviceToHost));
    double s = 0;
    for (size_t i = 0; i < n; i += 4099)
        s += h[i];
    free(h);
    return s;
}

static int worker(int steps, const char *id_path)
{
    int nranks = atoi(getenv("WORLD_SIZE"));
    CHECK_CUDA(cudaSetDevice(rank));
    float *params[NLAYERS], *grads[NLAYERS], *adam[NLAYERS];
    for (int l = 0; l < NLAYERS; l++) {
        CHECK_CUDA(cudaMalloc((void **)&params[l], LAYER_FLOATS * sizeof(float)));
        CHECK_CUDA(cudaMalloc((void **)&grads[l], LAYER_FLOATS * sizeof(float)));
        fill(params[l], LAYER_FLOATS, 1.0f);
        adam[l] = NULL;
    }
    ncclUniqueId id;
    exchange_id(&id, id_path);
    ncclComm_t comm;
    CHECK_NCCL(ncclCommInitRank(&comm, nranks, id, rank));
    cudaStream_t stream;
    CHECK_CUDA(cudaStreamCreate(&stream));
    float *metrics, *gathered;
    CHECK_CUDA(cudaMalloc((void **)&metrics, 256 * sizeof(float)));
    CHECK_CUDA(cudaMalloc((void **)&gathered, 256 * sizeof(float) * (size_t)nranks));
    double checksum = 0;
    for (int step = 1; step <= steps; step++) {
        float *act;
        CHECK_CUDA(cudaMallocAsync((void **)&act, 128u << 20, stream));
        for (int l = 0; l < NLAYERS; l++)
            fill(grads[l], LAYER_FLOATS, (float)(rank + step));
        CHECK_CUDA(cudaFreeAsync(act, stream));
        /* one bucket: the gradients of every layer in one group, like DDP's reducer */
        CHECK_NCCL(ncclGroupStart());
        for (int l = 0; l < NLAYERS; l++)
            CHECK_NCCL(ncclAllReduce(grads[l], grads[l], LAYER_FLOATS, ncclFloat32, ncclSum, comm, stream));
        CHECK_NCCL(ncclGroupEnd());
        CHECK_CUDA(cudaStreamSynchronize(stream));
        if (!adam[0]) /* the optimizer's state appears at the first step */
            for (int l = 0; l < NLAYERS; l++)
                CHECK_CUDA(cudaMalloc((void **)&adam[l], 2 * LAYER_FLOATS * sizeof(float)));
        fill(metrics, 256, (float)(step * 10 + rank));
        CHECK_NCCL(ncclAllGather(metrics, gathered, 256, ncclFloat32, comm, stream));
        CHECK_CUDA(cudaStreamSynchronize(stream));
        /* every rank contributed rank + step: the sum over ranks is known */
        double expect = 0;
        for (int r = 0; r < nranks; r++)
            expect += r + step;
        float g;
        CHECK_CUDA(cudaMemcpy(&g, grads[0], sizeof g, cudaMemcpyDeviceToHost));
        if (g != (float)expect) {
            fprintf(stderr, "rank %d: step %d: all_reduce gave %g, expected %g\n", rank, step, g, expect);
            return 1;
        }
        checksum += sum_of(grads[NLAYERS - 1], LAYER_FLOATS) + sum_of(gathered, 256 * (size_t)nranks);
        float *history; /* kept "for later" and never freed: the leak */
        CHECK_CUDA(cudaMalloc((void **)&history, 4u << 20));
    }
    printf("rank %d: %d steps, checksum %.1f\n", rank, steps, checksum);
    CHECK_NCCL(ncclCommDestroy(comm));
    for (int l = 0; l < NLAYERS; l++) {
        CHECK_CUDA(cudaFree(params[l]));
        CHECK_CUDA(cudaFree(grads[l]));
        CHECK_CUDA(cudaFree(adam[l]));
    }
    CHECK_CUDA(cudaFree(metrics));
    CHECK_CUDA(cudaFree(gathered));
    CHECK_CUDA(cudaStreamDestroy(stream));
    return 0;
}

int main(int argc, char **argv)
{
    const char *r = getenv("TRAIN_SIM_WORKER");
    int steps = argc > 1 ? atoi(argv[1]) : 4;
    if (steps < 1 || steps > 1000) {
        fprintf(stderr, "usage: train_sim [steps 1..1000]\n");
        return 2;
    }
    if (r) {
        rank = atoi(getenv("RANK"));
        return worker(steps, r);
    }
    /* the launcher: one worker process per simulated GPU, as torchrun does */
    char id_path[64];
    snprintf(id_path, sizeof id_path, "/tmp/train_sim.%d.id", (int)getpid());
    unlink(id_path);
    pid_t pids[NRANKS];
    for (int i = 0; i < NRANKS; i++) {
        pids[i] = fork();
        if (pids[i] < 0) {
            perror("fork");
            return 1;
        }
        if (pids[i] == 0) {
            char v[16];
            snprintf(v, sizeof v, "%d", i);
            setenv("RANK", v, 1);
            setenv("LOCAL_RANK", v, 1);
            snprintf(v, sizeof v, "%d", NRANKS);
            setenv("WORLD_SIZE", v, 1);
            setenv("LOCAL_WORLD_SIZE", v, 1);
            setenv("TRAIN_SIM_WORKER", id_path, 1);
            execv("/proc/self/exe", argv);
            perror("execv");
            _exit(127);
        }
    }
    int status = 0;
    for (int i = 0; i < NRANKS; i++) {
        int st;
        while (waitpid(pids[i], &st, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            status = 1;
    }
    unlink(id_path);
    return status;
}
