/* test_replay.c: the replay's peaks on hand-built traces: which instant a device's peak is, and what it holds then. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay.h"
#include "trace.h"
#include "golden/tracebuild.h"

#define ADDR 0x7e0000000000ull
#define BYTES (64ull << 20)
#define COMM 0x5555aaaa0000ull
#define SCOPE 7

static char *write_tmp(const struct tb *b)
{
    static char path[64];
    strcpy(path, "/tmp/gmt-test-replay-XXXXXX");
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, b->p, b->len), (ssize_t)b->len);
    close(fd);
    return path;
}

static void put_alloc(struct tb *b, uint32_t stack, uint32_t scope, uint32_t dt)
{
    struct gmt_rec_alloc r = { .address = ADDR, .bytes = BYTES, .dt = dt, .stack_id = stack,
                               .scope_id = scope, .kind = GMT_KIND_DEVICE, .device = 0 };
    tb_rec(b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &r, sizeof r, NULL, 0);
}

static void put_free(struct tb *b, uint32_t scope, uint32_t dt)
{
    struct gmt_rec_free r = { .address = ADDR, .dt = dt, .scope_id = scope };
    tb_rec(b, GMT_REC_FREE, GMT_API_cudaFree, &r, sizeof r, NULL, 0);
}

/* One thread on device 0: 64 MiB allocated by the user's code (stack 1) and freed, then
 * the same 64 MiB at the same address again, inside an all-reduce (stack 2, NCCL's),
 * freed after it. The device's peak is reached twice, at TB_T0 + 1100 and + 3300. */
static void peak_twice(struct tb *b)
{
    tb_header_current(b);
    struct gmt_rec_process p = { .pid = 5, .ppid = 1, .rank = 0, .local_rank = 0,
        .world_size = 1, .local_world_size = 1, .monotonic_ns = TB_T0 };
    tb_rec(b, GMT_REC_PROCESS, 0, &p, sizeof p, NULL, 0);
    for (uint32_t id = 1; id <= 2; id++) {
        uint64_t ip[1] = { 0x401000ull + id * 0x100 };
        struct gmt_rec_stack s = { .stack_id = id, .depth = 1 };
        tb_rec(b, GMT_REC_STACK, 0, &s, sizeof s, ip, sizeof ip);
    }
    tb_chunk(b, 100);
    tb_thread_at(b, 100, TB_T0 + 1000);
    struct gmt_rec_cuctx x = { .context = 0xc0, .device = 0 };
    tb_rec(b, GMT_REC_CUCTX, 0, &x, sizeof x, NULL, 0);
    struct gmt_rec_comm c = { .comm = COMM, .rank = 0, .nranks = 1, .device = 0 };
    tb_rec(b, GMT_REC_COMM, 0, &c, sizeof c, NULL, 0);
    put_alloc(b, 1, 0, 100);                                      /* + 1100: the peak */
    put_free(b, 0, 1000);                                         /* + 2100 */
    tb_scope_begin(b, GMT_OP_AllReduce, SCOPE, 0, COMM, 1024, 1000); /* + 3100 */
    put_alloc(b, 2, SCOPE, 200);                                  /* + 3300: as high again */
    tb_scope_end(b, GMT_OP_AllReduce, SCOPE, 0, 100);
    put_free(b, 0, 1000);
    struct gmt_rec_end e = { .time_ns = TB_T0 + 9000 };
    tb_rec(b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
}

/* A peak reached again is the same peak: its time, the call in flight and the bytes by
 * category are those of the first instant, and so are the sites live at it. */
Test(replay, a_peak_reached_again_keeps_its_first_instant)
{
    struct tb b = { 0 };
    peak_twice(&b);
    char *path = write_tmp(&b);
    struct gmt_trace t;
    char err[256];
    cr_assert_eq(gmt_trace_load(&t, path, err, sizeof err), 0, "%s", err);
    unlink(path);
    cr_assert_geq(t.n_stacks, 3);
    uint8_t *cat = calloc(t.n_stacks, 1);
    cr_assert_not_null(cat);
    cat[1] = 0; /* the user's */
    cat[2] = 3; /* NCCL's */
    struct gmt_replay_opts o = { .stack_cat = cat, .device = -1 };
    struct gmt_report rep;
    cr_assert_eq(gmt_replay(&t, &o, &rep), 0);
    cr_assert_geq(rep.n_dev, 1);
    const struct gmt_dev_report *d = NULL;
    for (size_t i = 0; i < rep.n_dev; i++)
        if (rep.dev[i].device == 0)
            d = &rep.dev[i];
    cr_assert_not_null(d, "no report of device 0");
    cr_expect_eq(d->peak, BYTES);
    cr_expect_eq(d->peak_time, TB_T0 + 1100, "peak at +%llu ns, not the first instant (+1100)",
                 (unsigned long long)(d->peak_time - TB_T0));
    cr_expect_eq(d->peak_scope, 0, "the first peak is outside any call, not in scope %u",
                 d->peak_scope);
    cr_expect_eq(d->peak_by_cat[0], BYTES, "user bytes at the peak: %llu",
                 (unsigned long long)d->peak_by_cat[0]);
    cr_expect_eq(d->peak_by_cat[3], 0, "NCCL bytes at the peak: %llu",
                 (unsigned long long)d->peak_by_cat[3]);
    /* each category's own highest is still its own */
    cr_expect_eq(d->cat_peak[0], BYTES);
    cr_expect_eq(d->cat_peak[3], BYTES);
    cr_expect_eq(rep.unmatched_frees, 0);
    bool seen1 = false, seen2 = false;
    for (size_t i = 0; i < rep.n_sites; i++) {
        const struct gmt_site_row *s = &rep.sites[i];
        if (s->stack == 1) {
            seen1 = true;
            cr_expect_eq(s->live_at_peak, BYTES, "the user's site at the peak: %llu",
                         (unsigned long long)s->live_at_peak);
        } else if (s->stack == 2) {
            seen2 = true;
            cr_expect_eq(s->live_at_peak, 0, "NCCL's site at the peak: %llu",
                         (unsigned long long)s->live_at_peak);
        }
    }
    cr_expect(seen1 && seen2, "both sites reported");
    gmt_report_free(&rep);
    free(cat);
    gmt_trace_free(&t);
    tb_free(&b);
}
