/* nccl_scenarios.c: NCCL call patterns for the hook tests (run with and without the tracer preloaded); prints every result, never pointers. */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_cuda.h"
#include "nccl_abi.h"

/* Weak: an entry point the NCCL at hand lacks reads as NULL (untraced) and is reported
 * "absent"; under the tracer our export answers instead. */
#define WEAK(name, op, shape, params, args, sargs)                   \
    extern __typeof__(nccl##name) nccl##name __attribute__((weak));  \
    extern __typeof__(pnccl##name) pnccl##name __attribute__((weak));
GMT_NCCL_ENTRIES(WEAK)
#undef WEAK
extern __typeof__(ncclGetUniqueId) ncclGetUniqueId __attribute__((weak));
ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err);

static ncclResult_t rc_of(const char *name, void *fn, ncclResult_t r)
{
    if (!fn)
        printf("%-28s absent\n", name);
    else
        printf("%-28s r=%d\n", name, (int)r);
    return r;
}
/* CALL(P, Name, (args)): calls P##Name if it exists and prints its result. */
#define CALL(p, name, args) \
    rc_of(#p #name, (void *)p##name, p##name ? p##name args : ncclInternalError)

#define COUNT 1024
static float *sendb[2], *recvb[2];
static cudaStream_t streams[2];

static void buffers(void)
{
    float host[COUNT * 2];
    for (int d = 0; d < 2; d++) {
        cudaSetDevice(d);
        cudaStreamCreate(&streams[d]);
        cudaMalloc((void **)&sendb[d], sizeof host);
        cudaMalloc((void **)&recvb[d], sizeof host);
        for (int i = 0; i < COUNT * 2; i++)
            host[i] = (float)(i % 13 + d);
        cudaMemcpy(sendb[d], host, sizeof host, cudaMemcpyHostToDevice);
        cudaMemset(recvb[d], 0, sizeof host);
    }
    cudaSetDevice(0);
}

static void print_sums(const char *what)
{
    float host[COUNT * 2];
    for (int d = 0; d < 2; d++) {
        cudaSetDevice(d);
        cudaStreamSynchronize(streams[d]);
        cudaMemcpy(host, recvb[d], sizeof host, cudaMemcpyDeviceToHost);
        double s = 0;
        for (int i = 0; i < COUNT * 2; i++)
            s += host[i] * (i % 5 + 1);
        printf("%-28s rank %d sum %.1f\n", what, d, s);
    }
    cudaSetDevice(0);
}

/* Both ranks of a 2-device clique from one thread: a group around the pair. */
#define PAIR(p, name, a0, a1)          \
    do {                               \
        CALL(p, GroupStart, ());       \
        CALL(p, name, a0);             \
        CALL(p, name, a1);             \
        CALL(p, GroupEnd, ());         \
        print_sums(#p #name);          \
    } while (0)

#define ALL_COLLECTIVES(p, c)                                                                    \
    do {                                                                                         \
        PAIR(p, AllReduce, (sendb[0], recvb[0], COUNT, ncclFloat32, ncclSum, c[0], streams[0]),  \
             (sendb[1], recvb[1], COUNT, ncclFloat32, ncclSum, c[1], streams[1]));               \
        PAIR(p, AllGather, (sendb[0], recvb[0], COUNT, ncclFloat32, c[0], streams[0]),           \
             (sendb[1], recvb[1], COUNT, ncclFloat32, c[1], streams[1]));                        \
        PAIR(p, ReduceScatter,                                                                   \
             (sendb[0], recvb[0], COUNT / 2, ncclFloat32, ncclSum, c[0], streams[0]),            \
             (sendb[1], recvb[1], COUNT / 2, ncclFloat32, ncclSum, c[1], streams[1]));           \
        PAIR(p, Broadcast, (sendb[0], recvb[0], COUNT, ncclFloat32, 0, c[0], streams[0]),        \
             (sendb[1], recvb[1], COUNT, ncclFloat32, 0, c[1], streams[1]));                     \
        PAIR(p, Bcast, (recvb[0], COUNT, ncclFloat32, 1, c[0], streams[0]),                      \
             (recvb[1], COUNT, ncclFloat32, 1, c[1], streams[1]));                               \
        PAIR(p, Reduce, (sendb[0], recvb[0], COUNT, ncclFloat32, ncclMax, 0, c[0], streams[0]),  \
             (sendb[1], recvb[1], COUNT, ncclFloat32, ncclMax, 0, c[1], streams[1]));            \
        PAIR(p, AlltoAll, (sendb[0], recvb[0], COUNT / 2, ncclFloat32, c[0], streams[0]),        \
             (sendb[1], recvb[1], COUNT / 2, ncclFloat32, c[1], streams[1]));                    \
        PAIR(p, Gather, (sendb[0], recvb[0], COUNT / 2, ncclFloat32, 1, c[0], streams[0]),       \
             (sendb[1], recvb[1], COUNT / 2, ncclFloat32, 1, c[1], streams[1]));                 \
        PAIR(p, Scatter, (sendb[0], recvb[0], COUNT / 2, ncclFloat32, 0, c[0], streams[0]),      \
             (sendb[1], recvb[1], COUNT / 2, ncclFloat32, 0, c[1], streams[1]));                 \
        CALL(p, GroupStart, ());                                                                 \
        CALL(p, Send, (sendb[0], COUNT, ncclFloat32, 1, c[0], streams[0]));                      \
        CALL(p, Recv, (recvb[1], COUNT, ncclFloat32, 0, c[1], streams[1]));                      \
        CALL(p, GroupEnd, ());                                                                   \
        print_sums(#p "Send/Recv");                                                              \
    } while (0)

#define ALL_COMM_CALLS(p, c)                                                                     \
    do {                                                                                         \
        ncclUniqueId id;                                                                         \
        memset(&id, 0, sizeof id);                                                               \
        if (ncclGetUniqueId)                                                                     \
            ncclGetUniqueId(&id);                                                                \
        ncclComm_t r[2] = {0, 0}, k[2] = {0, 0};                                                 \
        ncclConfig_t cfg = {sizeof cfg, GMT_NCCL_CONFIG_MAGIC, GMT_NCCL_VERSION_CODE,            \
                            GMT_NCCL_CONFIG_UNDEF_INT, GMT_NCCL_CONFIG_UNDEF_INT,                \
                            GMT_NCCL_CONFIG_UNDEF_INT, GMT_NCCL_CONFIG_UNDEF_INT, NULL,          \
                            GMT_NCCL_CONFIG_UNDEF_INT, GMT_NCCL_CONFIG_UNDEF_INT, NULL,          \
                            GMT_NCCL_CONFIG_UNDEF_INT, GMT_NCCL_CONFIG_UNDEF_INT,                \
                            GMT_NCCL_CONFIG_UNDEF_INT, GMT_NCCL_CONFIG_UNDEF_INT,                \
                            GMT_NCCL_CONFIG_UNDEF_INT, GMT_NCCL_CONFIG_UNDEF_INT};               \
        CALL(p, GroupStart, ());                                                                 \
        cudaSetDevice(0);                                                                        \
        CALL(p, CommInitRank, (&r[0], 2, id, 0));                                                \
        cudaSetDevice(1);                                                                        \
        CALL(p, CommInitRank, (&r[1], 2, id, 1));                                                \
        CALL(p, GroupEnd, ());                                                                   \
        if (ncclGetUniqueId)                                                                     \
            ncclGetUniqueId(&id);                                                                \
        CALL(p, GroupStart, ());                                                                 \
        cudaSetDevice(0);                                                                        \
        CALL(p, CommInitRankConfig, (&k[0], 2, id, 0, &cfg));                                    \
        cudaSetDevice(1);                                                                        \
        CALL(p, CommInitRankConfig, (&k[1], 2, id, 1, &cfg));                                    \
        CALL(p, GroupEnd, ());                                                                   \
        void *h[2] = {0, 0};                                                                     \
        ncclWindow_t w[2] = {0, 0};                                                              \
        CALL(p, GroupStart, ());                                                                 \
        CALL(p, CommRegister, (c[0], sendb[0], COUNT * 4, &h[0]));                               \
        CALL(p, CommRegister, (c[1], sendb[1], COUNT * 4, &h[1]));                               \
        CALL(p, CommWindowRegister, (c[0], recvb[0], COUNT * 4, &w[0], 0));                      \
        CALL(p, CommWindowRegister, (c[1], recvb[1], COUNT * 4, &w[1], 0));                      \
        CALL(p, GroupEnd, ());                                                                   \
        CALL(p, GroupStart, ());                                                                 \
        CALL(p, CommDeregister, (c[0], h[0]));                                                   \
        CALL(p, CommDeregister, (c[1], h[1]));                                                   \
        CALL(p, CommWindowDeregister, (c[0], w[0]));                                             \
        CALL(p, CommWindowDeregister, (c[1], w[1]));                                             \
        CALL(p, GroupEnd, ());                                                                   \
        void *m = NULL;                                                                          \
        if (CALL(p, MemAlloc, (&m, 3u << 20)) == ncclSuccess)                                    \
            CALL(p, MemFree, (m));                                                               \
        ncclSimInfo_t sim = {sizeof sim, 0x74685283u, GMT_NCCL_VERSION_CODE, -1.0f};             \
        CALL(p, GroupStart, ());                                                                 \
        CALL(p, AllReduce, (sendb[0], recvb[0], COUNT, ncclFloat32, ncclSum, c[0], streams[0])); \
        CALL(p, AllReduce, (sendb[1], recvb[1], COUNT, ncclFloat32, ncclSum, c[1], streams[1])); \
        CALL(p, GroupSimulateEnd, (&sim));                                                       \
        CALL(p, CommRevoke, (k[0], 0));                                                          \
        CALL(p, CommRevoke, (k[1], 0));                                                          \
        CALL(p, CommFinalize, (r[0]));                                                           \
        CALL(p, CommFinalize, (r[1]));                                                           \
        CALL(p, CommDestroy, (r[0]));                                                            \
        CALL(p, CommDestroy, (r[1]));                                                            \
        CALL(p, CommAbort, (k[0]));                                                              \
        CALL(p, CommAbort, (k[1]));                                                              \
    } while (0)

/* Every entry point under both names but split and shrink (a 2-rank split from one
 * thread blocks in the fake NCCL); results and data printed. */
static int calls(void)
{
    ncclComm_t a[2] = {0, 0}, b[2] = {0, 0};
    buffers();
    if (CALL(nccl, CommInitAll, (a, 2, NULL)) != ncclSuccess)
        return 1;
    if (CALL(pnccl, CommInitAll, (b, 2, NULL)) != ncclSuccess)
        return 1;
    ALL_COLLECTIVES(nccl, a);
    ALL_COLLECTIVES(pnccl, b);
    ALL_COMM_CALLS(nccl, a);
    ALL_COMM_CALLS(pnccl, b);
    int dl[2] = {0, 1};
    CALL(nccl, CommDestroy, (a[0]));
    CALL(nccl, CommDestroy, (a[1]));
    CALL(pnccl, CommDestroy, (b[0]));
    CALL(pnccl, CommDestroy, (b[1]));
    (void)dl;
    return 0;
}

/* Two threads, one rank each on its own device: bare all_reduces on a communicator made
 * with ncclCommInitRank; the first one connects (the proxy thread allocates). */
static ncclUniqueId bare_id;
static int bare_iters = 3;
static void *bare_rank(void *arg)
{
    int rank = (int)(long)arg;
    ncclComm_t c;
    cudaSetDevice(rank);
    if (ncclCommInitRank(&c, 2, bare_id, rank) != ncclSuccess) {
        printf("rank %d init failed\n", rank);
        return NULL;
    }
    for (int i = 0; i < bare_iters; i++) {
        ncclResult_t r = ncclAllReduce(sendb[rank], recvb[rank], COUNT, ncclFloat32, ncclSum, c,
                                       streams[rank]);
        cudaStreamSynchronize(streams[rank]);
        printf("rank %d all_reduce %d r=%d\n", rank, i, (int)r);
    }
    ncclCommDestroy(c);
    return NULL;
}

static int bare(void)
{
    buffers();
    ncclGetUniqueId(&bare_id);
    pthread_t t[2];
    for (long r = 0; r < 2; r++)
        pthread_create(&t[r], NULL, bare_rank, (void *)r);
    for (int r = 0; r < 2; r++)
        pthread_join(t[r], NULL);
    print_sums("bare");
    return 0;
}

/* A training loop without groups, on one thread (its records are then the same at every
 * run): two one-rank communicators on two devices, `bare_iters` steps of ungrouped calls
 * in a few sizes, on two streams, with another datatype now and then, an allocation
 * between calls, a call NCCL rejects and steps on the other communicator. */
static int loop(void)
{
    ncclComm_t c[2];
    cudaStream_t other;
    buffers();
    cudaStreamCreate(&other);
    for (int d = 0; d < 2; d++)
        if (ncclCommInitAll(&c[d], 1, (int[]){d}) != ncclSuccess)
            return 1;
    ncclResult_t bad = ncclSuccess;
    for (int i = 0; i < bare_iters; i++) {
        int d = i % 6 == 5;
        cudaSetDevice(d);
        size_t count = i % 3 == 0 ? COUNT : i % 3 == 1 ? COUNT / 2 : COUNT / 4;
        cudaStream_t s = d ? streams[1] : i % 4 == 3 ? other : streams[0];
        ncclAllReduce(sendb[d], recvb[d], count, ncclFloat32, ncclSum, c[d], s);
        if (i % 5 == 2)
            ncclAllGather(sendb[d], recvb[d], COUNT / 2, i % 10 == 2 ? ncclInt32 : ncclFloat32,
                          c[d], s);
        if (i % 7 == 5) {
            void *p = NULL;
            cudaMalloc(&p, 8192);
            cudaFree(p);
        }
        if (i % 9 == 4) {
            ncclResult_t r = ncclAllReduce(sendb[d], recvb[d], COUNT, (ncclDataType_t)99, ncclSum,
                                           c[d], s);
            if (r != ncclSuccess)
                bad = r;
        }
    }
    cudaSetDevice(0);
    cudaStreamSynchronize(other);
    printf("loop of %d rejected r=%d\n", bare_iters, (int)bad);
    print_sums("loop");
    for (int d = 0; d < 2; d++)
        ncclCommDestroy(c[d]);
    return 0;
}

/* A hang: both ranks make 4 all_reduces, then rank 0 one more, which rank 1 never joins.
 * After `hang_ms` the process ends as `how` says: kill (SIGKILL), crash (SIGSEGV on the
 * main thread) or exit. */
static volatile int hang_entered;
static void *hang_rank(void *arg)
{
    int rank = (int)(long)arg;
    ncclComm_t c;
    cudaSetDevice(rank);
    if (ncclCommInitRank(&c, 2, bare_id, rank) != ncclSuccess)
        return NULL;
    for (int i = 0; i < 4; i++)
        ncclAllReduce(sendb[rank], recvb[rank], COUNT, ncclFloat32, ncclSum, c, streams[rank]);
    cudaStreamSynchronize(streams[rank]);
    if (rank == 0) {
        __atomic_store_n(&hang_entered, 1, __ATOMIC_RELEASE);
        ncclAllReduce(sendb[0], recvb[0], COUNT, ncclFloat32, ncclSum, c, streams[0]);
    }
    return NULL;
}

static int hang(const char *how, int hang_ms)
{
    buffers();
    ncclGetUniqueId(&bare_id);
    pthread_t t[2];
    for (long r = 0; r < 2; r++)
        pthread_create(&t[r], NULL, hang_rank, (void *)r);
    pthread_join(t[1], NULL);
    while (!__atomic_load_n(&hang_entered, __ATOMIC_ACQUIRE))
        sched_yield();
    struct timespec ts = {hang_ms / 1000, (long)(hang_ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
    printf("hang: ending by %s\n", how);
    if (strcmp(how, "kill") == 0)
        raise(SIGKILL);
    if (strcmp(how, "crash") == 0)
        raise(SIGSEGV);
    exit(0);
}

/* One thread, ncclCommInitAll over 2 devices, grouped collectives (2 rounds); then a
 * second clique on the same devices, so each device has two communicators. */
static int group(void)
{
    ncclComm_t a[2], b[2];
    buffers();
    if (ncclCommInitAll(a, 2, NULL) != ncclSuccess || ncclCommInitAll(b, 2, NULL) != ncclSuccess)
        return 1;
    for (int round = 0; round < 2; round++) {
        ncclGroupStart();
        for (int d = 0; d < 2; d++)
            ncclAllReduce(sendb[d], recvb[d], COUNT, ncclFloat32, ncclSum, a[d], streams[d]);
        for (int d = 0; d < 2; d++)
            ncclAllGather(sendb[d], recvb[d], COUNT, ncclFloat32, a[d], streams[d]);
        printf("group end r=%d\n", (int)ncclGroupEnd());
        print_sums("group");
    }
    ncclGroupStart();
    for (int d = 0; d < 2; d++)
        ncclAllReduce(sendb[d], recvb[d], COUNT, ncclFloat32, ncclSum, b[d], streams[d]);
    printf("group end r=%d\n", (int)ncclGroupEnd());
    print_sums("second clique");
    /* An invalid datatype: NCCL rejects it at the call. */
    ncclResult_t r = ncclAllReduce(sendb[0], recvb[0], COUNT, (ncclDataType_t)99, ncclSum, a[0],
                                   streams[0]);
    printf("invalid datatype r=%d\n", (int)r);
    for (int d = 0; d < 2; d++) {
        ncclCommDestroy(a[d]);
        ncclCommDestroy(b[d]);
    }
    return 0;
}

/* One thread, `rotate_cliques` ncclCommInitAll cliques over 2 devices (two communicators
 * each: more than the tracer remembers per thread with 5). `bare_iters` rounds; in each,
 * every clique does one grouped all_reduce (ncclGroupStart, one call per device,
 * ncclGroupEnd), as tests/gpu/bench_allreduce.c does. */
static int rotate_cliques = 3;
static int rotate(void)
{
    enum { MAXC = 8 };
    ncclComm_t c[2 * MAXC];
    if (rotate_cliques < 1 || rotate_cliques > MAXC)
        return 2;
    buffers();
    for (int k = 0; k < rotate_cliques; k++)
        if (ncclCommInitAll(&c[2 * k], 2, NULL) != ncclSuccess)
            return 1;
    for (int i = 0; i < bare_iters; i++)
        for (int k = 0; k < rotate_cliques; k++) {
            ncclGroupStart();
            for (int d = 0; d < 2; d++)
                ncclAllReduce(sendb[d], recvb[d], COUNT, ncclFloat32, ncclSum, c[2 * k + d],
                              streams[d]);
            ncclResult_t r = ncclGroupEnd();
            if (r != ncclSuccess)
                printf("clique %d round %d r=%d\n", k, i, (int)r);
        }
    for (int d = 0; d < 2; d++)
        cudaStreamSynchronize(streams[d]);
    print_sums("rotate");
    for (int k = 0; k < 2 * rotate_cliques; k++)
        ncclCommDestroy(c[k]);
    return 0;
}

/* Nested user groups around the first all_reduce of a clique: NCCL sets up its
 * connections (its proxy thread allocates) in the outermost ncclGroupEnd. */
static int nested(void)
{
    ncclComm_t c[2];
    buffers();
    if (ncclCommInitAll(c, 2, NULL) != ncclSuccess)
        return 1;
    ncclGroupStart();
    ncclGroupStart();
    for (int d = 0; d < 2; d++)
        ncclAllReduce(sendb[d], recvb[d], COUNT, ncclFloat32, ncclSum, c[d], streams[d]);
    printf("inner group end r=%d\n", (int)ncclGroupEnd());
    printf("outer group end r=%d\n", (int)ncclGroupEnd());
    print_sums("nested");
    for (int d = 0; d < 2; d++)
        ncclCommDestroy(c[d]);
    return 0;
}

/* A training loop's group, the same at most steps, with every way a step can differ:
 * `bare_iters` steps of {all_reduce on each device} in a group, and at some steps two
 * more members, another size, an allocation between the members, a member NCCL rejects,
 * a nested group, an empty group, a call outside the group. Both ranks do the same. */
static int repeat(void)
{
    ncclComm_t c[2];
    buffers();
    if (ncclCommInitAll(c, 2, NULL) != ncclSuccess)
        return 1;
    for (int i = 0; i < bare_iters; i++) {
        if (i % 23 == 15) { /* an empty group */
            ncclGroupStart();
            ncclGroupEnd();
            continue;
        }
        size_t count = i % 7 == 4 ? COUNT / 2 : COUNT;
        ncclGroupStart();
        ncclAllReduce(sendb[0], recvb[0], count, ncclFloat32, ncclSum, c[0], streams[0]);
        if (i % 11 == 6) { /* the program allocates between two members */
            void *p = NULL;
            cudaMalloc(&p, 4096);
            cudaFree(p);
        }
        if (i % 17 == 10)
            ncclGroupStart();
        ncclAllReduce(sendb[1], recvb[1], count, ncclFloat32, ncclSum, c[1], streams[1]);
        if (i % 17 == 10)
            ncclGroupEnd();
        if (i % 5 == 3)
            for (int d = 0; d < 2; d++)
                ncclAllGather(sendb[d], recvb[d], COUNT / 2, ncclFloat32, c[d], streams[d]);
        if (i % 13 == 8 || i % 13 == 9) /* twice: the second repeats the first */
            printf("step %d invalid datatype r=%d\n", i,
                   (int)ncclAllReduce(sendb[0], recvb[0], COUNT, (ncclDataType_t)99, ncclSum, c[0],
                                      streams[0]));
        ncclResult_t r = ncclGroupEnd();
        if (r != ncclSuccess)
            printf("step %d group end r=%d\n", i, (int)r);
        if (i % 3 == 1) {
            int n = 0;
            ncclCommCount(c[0], &n);
        }
    }
    print_sums("repeat");
    for (int d = 0; d < 2; d++)
        ncclCommDestroy(c[d]);
    return 0;
}

/* A crash inside a group that repeats the last one: four identical groups, then the
 * fifth's members, then SIGSEGV before its ncclGroupEnd. */
static int crash_in_group(void)
{
    ncclComm_t c[2];
    buffers();
    if (ncclCommInitAll(c, 2, NULL) != ncclSuccess)
        return 1;
    for (int i = 0; i < 5; i++) {
        ncclGroupStart();
        for (int d = 0; d < 2; d++)
            ncclAllReduce(sendb[d], recvb[d], COUNT, ncclFloat32, ncclSum, c[d], streams[d]);
        if (i == 4)
            raise(SIGSEGV);
        ncclGroupEnd();
    }
    return 0;
}

/* Communicators created inside a group: they exist once ncclGroupEnd returns. */
static int init_in_group(void)
{
    ncclUniqueId id;
    ncclComm_t c[2];
    buffers();
    ncclGetUniqueId(&id);
    ncclGroupStart();
    for (int d = 0; d < 2; d++) {
        cudaSetDevice(d);
        ncclCommInitRank(&c[d], 2, id, d);
    }
    printf("group end r=%d\n", (int)ncclGroupEnd());
    ncclGroupStart();
    for (int d = 0; d < 2; d++)
        ncclAllReduce(sendb[d], recvb[d], COUNT, ncclFloat32, ncclSum, c[d], streams[d]);
    printf("group end r=%d\n", (int)ncclGroupEnd());
    print_sums("init in group");
    void *m = NULL;
    printf("memalloc r=%d\n", (int)ncclMemAlloc(&m, 3u << 20));
    printf("memfree r=%d\n", (int)ncclMemFree(m));
    for (int d = 0; d < 2; d++)
        ncclCommDestroy(c[d]);
    return 0;
}

/* Polls a non-blocking communicator until its init ended: its result. */
static ncclResult_t wait_ready(ncclComm_t c)
{
    ncclResult_t st = ncclInProgress;
    while (ncclCommGetAsyncError(c, &st) == ncclSuccess && st == ncclInProgress)
        sched_yield();
    return st;
}

/* A non-blocking communicator (rank 0 on device 0) used while its init waits for rank 1:
 * those calls of the program's fail; rank 1's blocking init completes the clique; once
 * ncclCommGetAsyncError says so, the same calls succeed. */
static int nonblocking(void)
{
    ncclUniqueId id;
    ncclComm_t c[2];
    buffers();
    ncclGetUniqueId(&id);
    ncclConfig_t cfg = {.size = sizeof cfg, .magic = GMT_NCCL_CONFIG_MAGIC, .version = 22800,
                        .blocking = 0};
    printf("init rank 0 r=%d\n", (int)ncclCommInitRankConfig(&c[0], 2, id, 0, &cfg));
    ncclResult_t st = ncclSuccess;
    ncclCommGetAsyncError(c[0], &st);
    printf("rank 0 state=%d\n", (int)st);
    void *h = NULL;
    printf("register while initializing r=%d\n",
           (int)ncclCommRegister(c[0], sendb[0], 4096, &h));
    printf("all_reduce while initializing r=%d\n",
           (int)ncclAllReduce(sendb[0], recvb[0], COUNT, ncclFloat32, ncclSum, c[0], streams[0]));
    cudaSetDevice(1);
    printf("init rank 1 r=%d\n", (int)ncclCommInitRank(&c[1], 2, id, 1));
    cudaSetDevice(0);
    printf("rank 0 state=%d\n", (int)wait_ready(c[0]));
    printf("register r=%d\n", (int)ncclCommRegister(c[0], sendb[0], 4096, &h));
    printf("deregister r=%d\n", (int)ncclCommDeregister(c[0], h));
    ncclGroupStart();
    for (int d = 0; d < 2; d++)
        ncclAllReduce(sendb[d], recvb[d], COUNT, ncclFloat32, ncclSum, c[d], streams[d]);
    printf("group end r=%d\n", (int)ncclGroupEnd());
    print_sums("nonblocking");
    for (int d = 0; d < 2; d++)
        ncclCommDestroy(c[d]);
    return 0;
}

/* Rank 0 of 2, non-blocking, alone: its peer never comes. */
static ncclComm_t nonblocking_rank0_alone(void)
{
    ncclUniqueId id;
    ncclComm_t c = NULL;
    buffers();
    ncclGetUniqueId(&id);
    ncclConfig_t cfg = {.size = sizeof cfg, .magic = GMT_NCCL_CONFIG_MAGIC, .version = 22800,
                        .blocking = 0};
    printf("init rank 0 r=%d\n", (int)ncclCommInitRankConfig(&c, 2, id, 0, &cfg));
    return c;
}

/* A non-blocking init that fails: rank 0 of 2 alone, its peer never comes (the fake gives
 * up after FAKENCCL_TIMEOUT_S); every call on it then fails with the init's error. */
static int nonblocking_fails(void)
{
    ncclComm_t c = nonblocking_rank0_alone();
    printf("rank 0 state=%d\n", (int)wait_ready(c));
    void *h = NULL;
    printf("register r=%d\n", (int)ncclCommRegister(c, sendb[0], 4096, &h));
    printf("all_reduce r=%d\n",
           (int)ncclAllReduce(sendb[0], recvb[0], COUNT, ncclFloat32, ncclSum, c, streams[0]));
    printf("abort r=%d\n", (int)ncclCommAbort(c));
    return 0;
}

/* A non-blocking init given up at once: rank 0 of 2 alone, aborted while its init still
 * waits for its peer (ncclCommAbort is what a program does with a hung init). */
static int nonblocking_abort(void)
{
    ncclComm_t c = nonblocking_rank0_alone();
    ncclResult_t st = ncclSuccess;
    ncclCommGetAsyncError(c, &st);
    printf("rank 0 state=%d\n", (int)st);
    printf("abort r=%d\n", (int)ncclCommAbort(c));
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *what = argc > 1 ? argv[1] : "";
    if (argc > 2)
        bare_iters = atoi(argv[2]);
    if (argc > 3)
        rotate_cliques = atoi(argv[3]);
    if (strcmp(what, "calls") == 0)
        return calls();
    if (strcmp(what, "bare") == 0)
        return bare();
    if (strcmp(what, "group") == 0)
        return group();
    if (strcmp(what, "init_in_group") == 0)
        return init_in_group();
    if (strcmp(what, "rotate") == 0)
        return rotate();
    if (strcmp(what, "nested") == 0)
        return nested();
    if (strcmp(what, "repeat") == 0)
        return repeat();
    if (strcmp(what, "crash_in_group") == 0)
        return crash_in_group();
    if (strcmp(what, "nonblocking") == 0)
        return nonblocking();
    if (strcmp(what, "nonblocking_abort") == 0)
        return nonblocking_abort();
    if (strcmp(what, "nonblocking_fails") == 0)
        return nonblocking_fails();
    if (strcmp(what, "loop") == 0)
        return loop();
    if (strcmp(what, "hang") == 0 && argc > 3)
        return hang(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: %s calls|bare [ITERS]|group|init_in_group|rotate [ITERS [CLIQUES]]|nested|repeat [ITERS]|crash_in_group|nonblocking|nonblocking_fails|loop [ITERS]|hang kill|crash|exit MS\n", argv[0]);
    return 2;
}
