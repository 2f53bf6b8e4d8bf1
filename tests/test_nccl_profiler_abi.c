/* test_nccl_profiler_abi.c: ncclProfiler_v5/_v4 called as NCCL 2.28/2.27 call them, with descriptors laid out byte by byte at NCCL's offsets, read back from the trace. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gmt.h"
#include "modules.h"
#include "reader.h"
#include "writer_api.h"

/* The module map is test_modules' concern: the file then holds what each test makes. */
void gmt_modules_write_all(void)
{
}
void gmt_modules_rescan(void)
{
}

/* The exported structs, seen as NCCL sees them: a name and five function pointers. */
typedef int (*init5_t)(void **, uint64_t, int *, const char *, int, int, int, void *);
typedef int (*init4_t)(void **, int *, const char *, uint64_t, int, int, int, void *);
typedef int (*start_t)(void *, void **, void *);
typedef int (*fini_t)(void *);
struct plugin {
    const char *name;
    void *init;
    start_t start;
    int (*stop)(void *);
    int (*state)(void *, int, void *);
    fini_t finalize;
};
extern struct plugin ncclProfiler_v5, ncclProfiler_v4;

static char dir[64], path[256];

static void setup(void)
{
    strcpy(dir, "/tmp/gmt-prof-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.gmt", dir);
    unsetenv("GPUMEMTRACE_NCCL_PROFILER");
    unsetenv("GPUMEMTRACE_OFF");
    setenv("GPUMEMTRACE_OUTPUT", path, 1);
    gmt_options_load();
}

static void teardown(void)
{
    unlink(path);
    rmdir(dir);
}

TestSuite(nccl_profiler_abi, .init = setup, .fini = teardown, .timeout = 60);

/* NCCL 2.28's ncclProfilerEventDescr_v5_t, by offset: type u64 @0, parentObj @8, rank
 * @16, the union @24. coll: seqNumber +0, func +8, sendBuff +16, recvBuff +24, count +32,
 * root +40, datatype +48, nChannels +56, nWarps +57, algo +64, proto +72, parentGroup
 * +80. p2p: func +0, buff +8, datatype +16, count +24, peer +32, nChannels +36. */
struct raw {
    _Alignas(8) unsigned char b[160];
};
static void put(struct raw *d, size_t at, const void *v, size_t n)
{
    memcpy(d->b + at, v, n);
}
static struct raw coll(const char *func, uint64_t seq, size_t count, int root, const char *dt,
                       uint8_t nch, uint8_t nwarps, const char *algo, const char *proto, int rank)
{
    struct raw d;
    memset(&d, 0, sizeof d);
    uint64_t type = 1 << 1;
    put(&d, 0, &type, 8);
    put(&d, 16, &rank, 4);
    put(&d, 24, &seq, 8);
    put(&d, 32, &func, 8);
    put(&d, 56, &count, 8);
    put(&d, 64, &root, 4);
    put(&d, 72, &dt, 8);
    put(&d, 80, &nch, 1);
    put(&d, 81, &nwarps, 1);
    put(&d, 88, &algo, 8);
    put(&d, 96, &proto, 8);
    return d;
}
static struct raw p2p(const char *func, size_t count, const char *dt, int peer, uint8_t nch)
{
    struct raw d;
    memset(&d, 0, sizeof d);
    uint64_t type = 1 << 2;
    put(&d, 0, &type, 8);
    put(&d, 24, &func, 8);
    put(&d, 40, &dt, 8);
    put(&d, 48, &count, 8);
    put(&d, 56, &peer, 4);
    put(&d, 60, &nch, 1);
    return d;
}

/* The comm's context slot: as in NCCL, a field of a larger struct. */
static struct {
    char before[200];
    void *ctx;
} comm;

static void *init_v5(int *mask)
{
    *mask = -1;
    cr_assert_eq(((init5_t)ncclProfiler_v5.init)(&comm.ctx, 0xfeedull, mask, "c", 1, 2, 0, NULL), 0);
    return comm.ctx;
}

static void start(start_t fn, void *ctx, struct raw *d)
{
    void *h = (void *)1;
    cr_assert_eq(fn(ctx, &h, d), 0);
    cr_expect_null(h, "no handle: NCCL then calls no stopEvent");
}

/* The trace's NCCL_COLL_INFO records, up to max (copied into out); how many. */
static int records(struct gmt_rec_nccl_coll_info *out, int max)
{
    gmt_writer_finish();
    if (access(path, F_OK) != 0)
        return 0; /* the file opens at the first record: none was made */
    struct gmt_reader *r = NULL;
    char err[256] = "";
    cr_assert_eq(gmt_reader_open(&r, path, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    int n = 0;
    while (gmt_reader_next(r, &ev, err, sizeof err) == 1)
        if (ev.rec->type == GMT_REC_NCCL_COLL_INFO && n < max)
            memcpy(&out[n++], ev.rec, sizeof *out);
    gmt_reader_close(r);
    return n;
}

Test(nccl_profiler_abi, v5_collective_fields_land_where_nccl_puts_them)
{
    int mask;
    void *ctx = init_v5(&mask);
    cr_expect_eq(mask, (1 << 1) | (1 << 2), "collectives and send/receive only");
    cr_assert_not_null(ctx);
    struct raw d = coll("AllReduce", 41, 1 << 20, 0, "ncclBfloat16", 24, 16, "RING", "SIMPLE", 1);
    start(ncclProfiler_v5.start, ctx, &d);
    struct raw s = p2p("Send", 4096, "ncclFloat32", 3, 8);
    start(ncclProfiler_v5.start, ctx, &s);
    cr_expect_eq(ncclProfiler_v5.finalize(ctx), 0);
    struct gmt_rec_nccl_coll_info r[4];
    cr_assert_eq(records(r, 4), 2);
    cr_expect_eq(r[0].h.aux, GMT_OP_AllReduce);
    cr_expect_eq(r[0].kind, GMT_NCCL_INFO_COLL);
    cr_expect_eq(r[0].comm_hash, 0xfeedull);
    cr_expect_eq(r[0].context, (uint64_t)(uintptr_t)&comm.ctx);
    cr_expect_eq(r[0].seq, 41);
    cr_expect_eq(r[0].count, 1u << 20);
    cr_expect_eq(r[0].rank, 1);
    cr_expect_eq(r[0].datatype, 9, "ncclBfloat16");
    cr_expect_eq(r[0].algo, GMT_NCCL_ALGO_RING);
    cr_expect_eq(r[0].proto, GMT_NCCL_PROTO_SIMPLE);
    cr_expect_eq(r[0].nchannels, 24);
    cr_expect_eq(r[0].nwarps, 16);
    cr_expect_eq(r[1].h.aux, GMT_OP_Send);
    cr_expect_eq(r[1].kind, GMT_NCCL_INFO_P2P);
    cr_expect_eq(r[1].count, 4096);
    cr_expect_eq(r[1].root, 3, "the peer");
    cr_expect_eq(r[1].datatype, 7);
    cr_expect_eq(r[1].nchannels, 8);
    cr_expect(r[1].algo == GMT_NCCL_CHOICE_NONE && r[1].proto == GMT_NCCL_CHOICE_NONE);
}

Test(nccl_profiler_abi, names_nccl_may_add_are_kept_as_other)
{
    int mask;
    void *ctx = init_v5(&mask);
    struct raw d = coll("SendRecv", 0, 8, -1, "ncclFloat4", 1, 4, "RING_TREE", NULL, 0);
    start(ncclProfiler_v5.start, ctx, &d);
    struct gmt_rec_nccl_coll_info r[2];
    cr_assert_eq(records(r, 2), 1);
    cr_expect_eq(r[0].h.aux, 0, "no op of the trace's list");
    cr_expect_eq(r[0].datatype, -1);
    cr_expect_eq(r[0].algo, GMT_NCCL_CHOICE_OTHER);
    cr_expect_eq(r[0].proto, GMT_NCCL_CHOICE_NONE);
}

Test(nccl_profiler_abi, other_events_write_nothing)
{
    int mask;
    void *ctx = init_v5(&mask);
    struct raw d = coll("AllReduce", 0, 8, 0, "ncclFloat32", 1, 4, "RING", "LL", 0);
    /* group, group API, collective API, kernel launch, and a type with high bits set */
    uint64_t types[] = {1 << 0, 1 << 8, 1 << 9, 1 << 11, (1ull << 40) | (1 << 1)};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        put(&d, 0, &types[i], 8);
        start(ncclProfiler_v5.start, ctx, &d);
    }
    struct gmt_rec_nccl_coll_info r[2];
    cr_expect_eq(records(r, 2), 0);
}

/* A repeat of a shape writes nothing; a changed choice is written again. */
Test(nccl_profiler_abi, repeats_are_written_once_and_changes_again)
{
    int mask;
    void *ctx = init_v5(&mask);
    for (int i = 0; i < 100; i++) {
        struct raw d = coll("AllReduce", (uint64_t)i, 1 << 20, 0, "ncclFloat32", 24, 16, "RING", "SIMPLE", 0);
        start(ncclProfiler_v5.start, ctx, &d);
    }
    struct raw t = coll("AllReduce", 100, 1 << 20, 0, "ncclFloat32", 16, 16, "RING", "SIMPLE", 0);
    start(ncclProfiler_v5.start, ctx, &t);
    struct raw u = coll("AllReduce", 101, 1 << 20, 0, "ncclFloat32", 24, 16, "RING", "SIMPLE", 0);
    start(ncclProfiler_v5.start, ctx, &u);
    struct gmt_rec_nccl_coll_info r[8];
    cr_assert_eq(records(r, 8), 2, "the first and the change; the third is still remembered");
    cr_expect_eq(r[0].seq, 0);
    cr_expect_eq(r[1].seq, 100);
    cr_expect_eq(r[1].nchannels, 16);
}

/* NCCL 2.27's v4: init's arguments in v4's order; the descriptor's type is one byte,
 * and the 2.28 adapter leaves the bytes after it unset. */
Test(nccl_profiler_abi, v4_reads_the_type_byte_alone)
{
    int mask = -1;
    cr_assert_eq(((init4_t)ncclProfiler_v4.init)(&comm.ctx, &mask, "c", 0xbeefull, 1, 2, 0, NULL), 0);
    cr_expect_eq(mask, (1 << 1) | (1 << 2));
    struct raw d = coll("ReduceScatter", 5, 999, 0, "ncclInt32", 2, 8, "PAT", "LL128", 0);
    memset(d.b + 1, 0xab, 7);
    start(ncclProfiler_v4.start, comm.ctx, &d);
    struct gmt_rec_nccl_coll_info r[2];
    cr_assert_eq(records(r, 2), 1);
    cr_expect_eq(r[0].h.aux, GMT_OP_ReduceScatter);
    cr_expect_eq(r[0].comm_hash, 0xbeefull);
    cr_expect_eq(r[0].algo, GMT_NCCL_ALGO_PAT);
    cr_expect_eq(r[0].proto, GMT_NCCL_PROTO_LL128);
    cr_expect_eq(r[0].datatype, 2);
}

Test(nccl_profiler_abi, off_asks_for_no_events)
{
    setenv("GPUMEMTRACE_NCCL_PROFILER", "0", 1);
    gmt_options_load();
    int mask;
    void *ctx = init_v5(&mask);
    cr_expect_eq(mask, 0);
    cr_expect_not_null(ctx, "NCCL calls finalize only for a context");
    struct raw d = coll("AllReduce", 0, 8, 0, "ncclFloat32", 1, 4, "RING", "LL", 0);
    start(ncclProfiler_v5.start, ctx, &d);
    cr_expect_eq(ncclProfiler_v5.finalize(ctx), 0);
    struct gmt_rec_nccl_coll_info r[2];
    cr_expect_eq(records(r, 2), 0);
}

/* Graph-captured plans launch on CUDA's callback thread while the caller launches others:
 * several threads at once on one communicator. Every shape is written, few twice. */
static void *launcher(void *arg)
{
    void *ctx = arg;
    for (int i = 0; i < 2000; i++) {
        struct raw d = coll("AllGather", (uint64_t)i, i % 2 ? 4096 : 8192, 0, "ncclInt8", 2, 8,
                            "RING", "LL", 0);
        start(ncclProfiler_v5.start, ctx, &d);
    }
    return NULL;
}

Test(nccl_profiler_abi, threads_launching_at_once_write_every_shape)
{
    int mask;
    void *ctx = init_v5(&mask);
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, launcher, ctx), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    struct gmt_rec_nccl_coll_info r[64];
    int n = records(r, 64);
    int small = 0, large = 0;
    for (int i = 0; i < n; i++) {
        small += r[i].count == 4096;
        large += r[i].count == 8192;
    }
    cr_expect(small >= 1 && large >= 1, "both shapes: %d and %d", small, large);
    cr_expect_leq(n, 32, "a few written more than once at most while the threads race: %d", n);
}
