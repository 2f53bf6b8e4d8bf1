/* test_job.c: many traces as one job: the collective that stands out across ranks, on hand-built traces. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "job.h"
#include "report.h"
#include "golden/tracebuild.h"

#define COMM 0x5555bbbb0000ull
#define NRANKS 6

/* Rank `rank` of NRANKS: one all-reduce whose first call allocates `first` bytes. */
static char *rank_trace(int rank, uint64_t first)
{
    struct tb b = { 0 };
    tb_header_current(&b);
    static const char host[] = "node-07";
    struct gmt_rec_process p = { .pid = 100 + (uint32_t)rank, .ppid = 1, .rank = rank,
        .local_rank = rank, .world_size = NRANKS, .local_world_size = NRANKS,
        .monotonic_ns = TB_T0, .host_len = sizeof host };
    tb_rec(&b, GMT_REC_PROCESS, 0, &p, sizeof p, host, sizeof host);
    tb_chunk(&b, 200);
    tb_thread_at(&b, 200, TB_T0 + 1000);
    struct gmt_rec_cuctx x = { .context = 0xc0, .device = 0 };
    tb_rec(&b, GMT_REC_CUCTX, 0, &x, sizeof x, NULL, 0);
    struct gmt_rec_comm c = { .comm = COMM, .unique_id_hash = 0x77, .rank = rank,
                              .nranks = NRANKS, .device = 0 };
    tb_rec(&b, GMT_REC_COMM, 0, &c, sizeof c, NULL, 0);
    tb_scope_begin(&b, GMT_OP_AllReduce, 1, 0, COMM, 1 << 20, 100);
    struct gmt_rec_alloc a = { .address = 0x7e0000000000ull, .bytes = first, .dt = 100,
                               .scope_id = 1, .kind = GMT_KIND_PHYSICAL, .device = 0 };
    tb_rec(&b, GMT_REC_ALLOC, GMT_API_cuMemCreate, &a, sizeof a, NULL, 0);
    tb_scope_end(&b, GMT_OP_AllReduce, 1, 0, 100);
    struct gmt_rec_end e = { .time_ns = TB_T0 + 9000 };
    tb_rec(&b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
    static char path[NRANKS][64];
    strcpy(path[rank], "/tmp/gmt-test-job-XXXXXX");
    int fd = mkstemp(path[rank]);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, b.p, b.len), (ssize_t)b.len);
    close(fd);
    tb_free(&b);
    return path[rank];
}

/* Six ranks whose first all-reduce added 100 MiB, one 101, one 99, and rank 4 only 10:
 * rank 4 is the one that stands out, far below the median, not a rank a hair above or
 * below it. */
Test(job, the_collective_outlier_is_the_rank_farthest_below_the_median)
{
    static const uint64_t mib[NRANKS] = { 100, 101, 99, 100, 10, 100 };
    struct gmt_job j;
    gmt_job_init(&j);
    struct gmt_report_opts o;
    gmt_report_opts_init(&o);
    o.no_symbols = true;
    for (int r = 0; r < NRANKS; r++) {
        char *path = rank_trace(r, mib[r] << 20);
        struct gmt_analysis a;
        char err[512];
        cr_assert_eq(gmt_analyze(&a, path, &o, err, sizeof err), 0, "%s", err);
        unlink(path);
        cr_assert_eq(a.rep.n_colls, 1, "rank %d: %zu collective rows", r, a.rep.n_colls);
        cr_assert_eq(a.rep.colls[0].first_tracked, (int64_t)(mib[r] << 20));
        cr_assert_eq(gmt_job_add(&j, &a), 0);
        gmt_analysis_free(&a);
    }
    cr_assert_eq(gmt_job_finish(&j), 0);
    cr_assert_eq(j.n_colls, 1);
    const struct gmt_job_coll_spread *s = &j.colls[0];
    cr_expect_eq(s->ranks, NRANKS);
    cr_expect_eq(s->c.first, (int64_t)(100ull << 20), "median first call: %lld",
                 (long long)s->c.first);
    cr_expect_eq(s->out_rank, 4, "the outlier is rank %d, not rank 4 (10 MiB)", s->out_rank);
    cr_expect_eq(s->out_first, (int64_t)(10ull << 20));
    gmt_job_free(&j);
}
