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

/* The records every trace below begins with: one process, stacks 1 and 2 (each one
 * frame, 0x401100 and 0x401200), thread 100 on device 0 from TB_T0 + 1000, a
 * communicator. */
static void prologue(struct tb *b)
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
}

static void epilogue(struct tb *b)
{
    struct gmt_rec_end e = { .time_ns = TB_T0 + 90000 };
    tb_rec(b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
}

static void put(struct tb *b, uint16_t api, uint8_t kind, uint64_t addr, uint64_t bytes,
                uint32_t scope, uint32_t dt)
{
    struct gmt_rec_alloc r = { .address = addr, .bytes = bytes, .dt = dt, .stack_id = 1,
                               .scope_id = scope, .kind = kind, .device = 0 };
    tb_rec(b, GMT_REC_ALLOC, api, &r, sizeof r, NULL, 0);
}

static void release(struct tb *b, uint16_t api, uint64_t addr, uint32_t dt)
{
    struct gmt_rec_free r = { .address = addr, .dt = dt };
    tb_rec(b, GMT_REC_FREE, api, &r, sizeof r, NULL, 0);
}

static void load(struct tb *b, struct gmt_trace *t)
{
    char *path = write_tmp(b);
    char err[256];
    cr_assert_eq(gmt_trace_load(t, path, err, sizeof err), 0, "%s", err);
    unlink(path);
}

static const struct gmt_dev_report *replay_dev0(struct gmt_trace *t, struct gmt_report *rep)
{
    struct gmt_replay_opts o = { .device = -1 };
    cr_assert_eq(gmt_replay(t, &o, rep), 0);
    for (size_t i = 0; i < rep->n_dev; i++)
        if (rep->dev[i].device == 0)
            return &rep->dev[i];
    cr_assert_fail("no report of device 0");
    return NULL;
}

/* An allocation no call claims (scope 0) made while a call is open on its thread: the
 * peak it reaches names that call, the one in flight then. */
Test(replay, a_peak_no_call_claims_names_the_call_in_flight)
{
    struct tb b = { 0 };
    prologue(&b);
    tb_scope_begin(&b, GMT_OP_AllReduce, SCOPE, 0, COMM, 1024, 100);
    put(&b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, ADDR, BYTES, 0, 100);
    tb_scope_end(&b, GMT_OP_AllReduce, SCOPE, 0, 100);
    release(&b, GMT_API_cudaFree, ADDR, 100);
    epilogue(&b);
    struct gmt_trace t;
    load(&b, &t);
    struct gmt_report rep;
    const struct gmt_dev_report *d = replay_dev0(&t, &rep);
    cr_expect_eq(d->peak, BYTES);
    cr_expect_eq(d->peak_scope, SCOPE, "the peak names scope %u, not the call in flight (%u)",
                 d->peak_scope, SCOPE);
    gmt_report_free(&rep);
    gmt_trace_free(&t);
    tb_free(&b);
}

/* cuMemCreate's handle retained once more (cuMemRetainAllocationHandle) holds its bytes
 * until its second release: a 64 MiB cudaMalloc between the two releases peaks at both. */
Test(replay, a_retained_handle_is_live_until_its_last_release)
{
    const uint64_t handle = 0x1234000ull;
    struct tb b = { 0 };
    prologue(&b);
    put(&b, GMT_API_cuMemCreate, GMT_KIND_PHYSICAL, handle, BYTES, 0, 100);
    put(&b, GMT_API_cuMemRetainAllocationHandle, GMT_KIND_RETAINED, handle, 0, 0, 100);
    release(&b, GMT_API_cuMemRelease, handle, 100);
    put(&b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, ADDR, BYTES, 0, 100);
    release(&b, GMT_API_cudaFree, ADDR, 100);
    release(&b, GMT_API_cuMemRelease, handle, 100);
    epilogue(&b);
    struct gmt_trace t;
    load(&b, &t);
    struct gmt_report rep;
    const struct gmt_dev_report *d = replay_dev0(&t, &rep);
    cr_expect_eq(d->peak, 2 * BYTES, "peak %llu MiB: the handle was gone after one release",
                 (unsigned long long)(d->peak >> 20));
    cr_expect_eq(rep.unmatched_frees, 0);
    gmt_report_free(&rep);
    gmt_trace_free(&t);
    tb_free(&b);
}

/* A stack id defined twice (a corrupt or concatenated trace) keeps its first frames. */
Test(replay, a_stack_defined_twice_keeps_its_first_frames)
{
    struct tb b = { 0 };
    prologue(&b);
    uint64_t ip[2] = { 0x409900ull, 0x409a00ull };
    struct gmt_rec_stack s = { .stack_id = 1, .depth = 2 };
    tb_rec(&b, GMT_REC_STACK, 0, &s, sizeof s, ip, sizeof ip);
    epilogue(&b);
    struct gmt_trace t;
    load(&b, &t);
    cr_assert_gt(t.n_stacks, 1);
    cr_expect_eq(t.stacks[1].depth, 1);
    cr_assert_not_null(t.stacks[1].ip);
    cr_expect_eq(t.stacks[1].ip[0], 0x401100ull, "stack 1 is %#llx, not its first definition",
                 (unsigned long long)t.stacks[1].ip[0]);
    gmt_trace_free(&t);
    tb_free(&b);
}

/* A thread whose clock was set back while it ran (its THREAD record says an earlier
 * time): what it did after is replayed at its own time, before what it did earlier in
 * the file. 64 MiB at +5000 held to the end; the clock then set back to +1000, where
 * another 64 MiB is taken and freed by +1200: never both live. */
Test(replay, a_thread_s_clock_set_back_replays_in_time_order)
{
    const uint64_t other = ADDR + (1ull << 32);
    struct tb b = { 0 };
    prologue(&b);
    put(&b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, ADDR, BYTES, 0, 4000); /* + 5000 */
    tb_thread_at(&b, 100, TB_T0 + 1000);
    put(&b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, other, BYTES, 0, 100); /* + 1100 */
    release(&b, GMT_API_cudaFree, other, 100);                        /* + 1200 */
    tb_thread_at(&b, 100, TB_T0 + 6000);
    release(&b, GMT_API_cudaFree, ADDR, 100);                          /* + 6100 */
    epilogue(&b);
    struct gmt_trace t;
    load(&b, &t);
    cr_expect_geq(t.n_runs, 2, "the clock going back starts a run");
    struct gmt_report rep;
    const struct gmt_dev_report *d = replay_dev0(&t, &rep);
    cr_expect_eq(d->peak, BYTES, "peak %llu MiB: replayed in the file's order, not in time",
                 (unsigned long long)(d->peak >> 20));
    cr_expect_eq(d->peak_time, TB_T0 + 1100, "peak at +%llu, not when first reached (+1100)",
                 (unsigned long long)(d->peak_time - TB_T0));
    cr_expect_eq(rep.unmatched_frees, 0);
    gmt_report_free(&rep);
    gmt_trace_free(&t);
    tb_free(&b);
}
