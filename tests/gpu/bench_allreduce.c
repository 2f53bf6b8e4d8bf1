/* bench_allreduce.c: one process drives up to 2 GPUs (ncclCommInitAll; one GPU: a single-rank communicator; BENCH_BARE=1: one GPU, calls outside groups) and prints 8-byte all_reduce latency and 128 MiB all_reduce bus bandwidth, one line each, plus the loop's host time, its latency again and the in-process A/B of the exported against libnccl's own entry points. */
#include <elf.h>
#include <link.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <nccl.h>

#define CUDA(call)                                                                   \
    do {                                                                             \
        cudaError_t e_ = (call);                                                     \
        if (e_ != cudaSuccess) {                                                     \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
                    cudaGetErrorString(e_));                                         \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)
#define NCCL(call)                                                                   \
    do {                                                                             \
        ncclResult_t r_ = (call);                                                    \
        if (r_ != ncclSuccess) {                                                     \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,            \
                    ncclGetErrorString(r_));                                         \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

#define MAXDEV 2
static int ndev = MAXDEV; /* GPUs used: min(MAXDEV, cudaGetDeviceCount); 1 runs a single-rank communicator */

static ncclComm_t comms[MAXDEV];
static cudaStream_t streams[MAXDEV];
static float *buf[MAXDEV];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* BENCH_BARE=1 with one GPU: each all_reduce is called alone, outside a group, as a
 * training loop's ungrouped collectives are (a tracer's one-record-per-call path). */
static int bare;

static void all_reduce(size_t count)
{
    if (bare) {
        NCCL(ncclAllReduce(buf[0], buf[0], count, ncclFloat, ncclSum, comms[0], streams[0]));
        return;
    }
    NCCL(ncclGroupStart());
    for (int d = 0; d < ndev; d++)
        NCCL(ncclAllReduce(buf[d], buf[d], count, ncclFloat, ncclSum, comms[d], streams[d]));
    NCCL(ncclGroupEnd());
}

/* ---- NCCL's own entry points, past any interposer ----
 *
 * With a tracer preloaded, ncclAllReduce & co. above reach its wrappers (and so would
 * dlsym, which it wraps too). These are the functions in libnccl's own symbol table,
 * looked up by its GNU hash table as the dynamic linker does: the same process can then
 * time the loop both ways, block by block, with its layout, its threads and its mode. In
 * a process without a tracer both ways are the same calls, which makes that ratio the
 * control. */
typedef ncclResult_t (*group_fn)(void);
typedef ncclResult_t (*allreduce_fn)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                     ncclComm_t, cudaStream_t);
static group_fn own_group_start, own_group_end;
static allreduce_fn own_allreduce;

struct own_lookup {
    const char *name;
    void *found;
};

static uint32_t gnu_hash(const char *s)
{
    uint32_t h = 5381;
    for (; *s; s++)
        h = h * 33 + (unsigned char)*s;
    return h;
}

static int find_in_nccl(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct own_lookup *q = arg;
    (void)size;
    if (!info->dlpi_name || !strstr(info->dlpi_name, "libnccl.so"))
        return 0;
    const ElfW(Dyn) *dyn = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
            dyn = (const void *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
    if (!dyn)
        return 0;
    uintptr_t symtab = 0, strtab = 0, gnuhash = 0;
    for (; dyn->d_tag != DT_NULL; dyn++) {
        uintptr_t v = dyn->d_un.d_ptr;
        if (v < info->dlpi_addr) /* not relocated in place by this dynamic linker */
            v += info->dlpi_addr;
        if (dyn->d_tag == DT_SYMTAB) symtab = v;
        else if (dyn->d_tag == DT_STRTAB) strtab = v;
        else if (dyn->d_tag == DT_GNU_HASH) gnuhash = v;
    }
    if (!symtab || !strtab || !gnuhash)
        return 0;
    const uint32_t *ht = (const uint32_t *)gnuhash;
    uint32_t nbuckets = ht[0], symoffset = ht[1], bloom_size = ht[2];
    const uint32_t *buckets = ht + 4 + bloom_size * (sizeof(ElfW(Addr)) / 4);
    const uint32_t *chain = buckets + nbuckets;
    const ElfW(Sym) *syms = (const void *)symtab;
    uint32_t h = gnu_hash(q->name);
    for (uint32_t i = buckets[h % nbuckets]; i >= symoffset && i; i++) {
        uint32_t ch = chain[i - symoffset];
        if ((ch | 1) == (h | 1) && strcmp((const char *)strtab + syms[i].st_name, q->name) == 0 &&
            syms[i].st_value) {
            q->found = (void *)(info->dlpi_addr + syms[i].st_value);
            return 1;
        }
        if (ch & 1)
            break;
    }
    return 0;
}

static void *own_nccl(const char *name)
{
    struct own_lookup q = {name, NULL};
    dl_iterate_phdr(find_in_nccl, &q);
    return q.found;
}

static void all_reduce_own(size_t count)
{
    if (bare) {
        NCCL(own_allreduce(buf[0], buf[0], count, ncclFloat, ncclSum, comms[0], streams[0]));
        return;
    }
    NCCL(own_group_start());
    for (int d = 0; d < ndev; d++)
        NCCL(own_allreduce(buf[d], buf[d], count, ncclFloat, ncclSum, comms[d], streams[d]));
    NCCL(own_group_end());
}

static void sync_all(void)
{
    for (int d = 0; d < ndev; d++) {
        CUDA(cudaSetDevice(d));
        CUDA(cudaStreamSynchronize(streams[d]));
    }
}

/* Seconds per all_reduce of `count` floats: `iters` back to back, then one sync, as
 * nccl-tests times them. */
static double time_loop(size_t count, int warmup, int iters)
{
    for (int i = 0; i < warmup; i++)
        all_reduce(count);
    sync_all();
    double t0 = now_s();
    for (int i = 0; i < iters; i++)
        all_reduce(count);
    sync_all();
    return (now_s() - t0) / iters;
}

/* Host time per 8-byte all_reduce call sequence, enqueue only: batches of 200 (within
 * CUDA's launch queue, so nothing blocks on the GPU), each drained before the next;
 * the median batch. Against allreduce_8B_us it tells whether the loop is bound by the
 * host (the two are close) or by the GPUs. */
static double host_enqueue_us(void)
{
    enum { BATCHES = 7, N = 200 };
    double v[BATCHES];
    for (int b = 0; b < BATCHES; b++) {
        sync_all();
        double t0 = now_s();
        for (int i = 0; i < N; i++)
            all_reduce(2);
        v[b] = (now_s() - t0) / N * 1e6;
    }
    sync_all();
    for (int i = 1; i < BATCHES; i++) /* insertion sort, 7 values */
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            double t = v[j]; v[j] = v[j - 1]; v[j - 1] = t;
        }
    return v[BATCHES / 2];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The 8-byte loop in blocks of 500 iterations, alternating between the exported
 * entry points (a tracer's wrappers, when one is preloaded) and NCCL's own, ABBA order;
 * prints both medians and the median of the per-pair ratios. */
static void in_process_ab(void)
{
    own_group_start = (group_fn)own_nccl("ncclGroupStart");
    own_group_end = (group_fn)own_nccl("ncclGroupEnd");
    own_allreduce = (allreduce_fn)own_nccl("ncclAllReduce");
    if (!own_group_start || !own_group_end || !own_allreduce) {
        printf("inproc_ab none (libnccl's symbols not found)\n");
        return;
    }
    enum { PAIRS = 24, ITERS = 500 };
    double exported[PAIRS], own[PAIRS], ratio[PAIRS];
    for (int p = 0; p < PAIRS; p++) {
        for (int k = 0; k < 2; k++) {
            int use_own = (p + k) % 2;
            sync_all();
            double t0 = now_s();
            for (int i = 0; i < ITERS; i++) {
                if (use_own)
                    all_reduce_own(2);
                else
                    all_reduce(2);
            }
            sync_all();
            double us = (now_s() - t0) / ITERS * 1e6;
            if (use_own)
                own[p] = us;
            else
                exported[p] = us;
        }
        ratio[p] = exported[p] / own[p];
    }
    qsort(exported, PAIRS, sizeof(double), cmp_double);
    qsort(own, PAIRS, sizeof(double), cmp_double);
    qsort(ratio, PAIRS, sizeof(double), cmp_double);
    printf("allreduce_8B_exported_us %.3f\n", (exported[PAIRS / 2 - 1] + exported[PAIRS / 2]) / 2);
    printf("allreduce_8B_own_us %.3f\n", (own[PAIRS / 2 - 1] + own[PAIRS / 2]) / 2);
    printf("allreduce_8B_inproc_ratio %.4f\n", (ratio[PAIRS / 2 - 1] + ratio[PAIRS / 2]) / 2);
}

int main(int argc, char **argv)
{
    int lat_iters = argc > 1 ? atoi(argv[1]) : 5000;
    int bw_iters = argc > 2 ? atoi(argv[2]) : 40;
    const size_t big = (size_t)128 << 20; /* bytes */
    int have = 0;
    CUDA(cudaGetDeviceCount(&have));
    ndev = have < MAXDEV ? have : MAXDEV;
    const char *b = getenv("BENCH_BARE");
    bare = b && b[0] == '1';
    if (bare)
        ndev = 1;
    int devs[MAXDEV] = {0, 1};
    NCCL(ncclCommInitAll(comms, ndev, devs));
    printf("devices %d\n", ndev);
    for (int d = 0; d < ndev; d++) {
        CUDA(cudaSetDevice(d));
        CUDA(cudaStreamCreateWithFlags(&streams[d], cudaStreamNonBlocking));
        CUDA(cudaMalloc((void **)&buf[d], big));
        CUDA(cudaMemset(buf[d], 0, big));
    }
    int cpu0 = sched_getcpu();
    double lat = time_loop(2, 200, lat_iters);
    printf("allreduce_8B_us %.3f\n", lat * 1e6);
    /* The same process again, and its host-only cost: is the mode the process's for
     * life, and is the loop host- or GPU-bound in it? */
    printf("allreduce_8B_host_us %.3f\n", host_enqueue_us());
    printf("allreduce_8B_again_us %.3f\n", time_loop(2, 0, lat_iters) * 1e6);
    printf("main_cpu %d %d\n", cpu0, sched_getcpu());
    in_process_ab();
    double t = time_loop(big / sizeof(float), 5, bw_iters);
    /* bus bandwidth as nccl-tests defines it: algbw * 2(n-1)/n */
    printf("allreduce_128MiB_busbw_GBs %.3f\n", (double)big / t * 2.0 * (ndev - 1) / ndev / 1e9);
    fflush(stdout);
    for (int d = 0; d < ndev; d++) {
        CUDA(cudaSetDevice(d));
        CUDA(cudaFree(buf[d]));
        NCCL(ncclCommDestroy(comms[d]));
    }
    return 0;
}
