/* test_watch.c: `gpumemtrace watch`: traces followed as they grow (only what was appended read, time order, restarts, late stacks, open calls, steps), and the CLI on a live job of the fakes: a terminal at two moments (tmux), a hang, a failure as it happens, the Prometheus endpoint (promtool) against summary --json. */
#include "shell_test.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>

#include "golden/tracebuild.h"
#include "json.h"
#include "watch_view.h"

#define MIB (1ull << 20)
#define REAL0 1700000000000000000ull /* the traces' realtime anchor, ns */

static void setup(void)
{
    shell_setup();
}

TestSuite(watch, .init = setup, .fini = shell_teardown, .timeout = 60);
TestSuite(live, .init = setup, .fini = shell_teardown, .timeout = 120);

/* ---- traces made here ---- */

static void process(struct tb *b, uint32_t pid, int rank, const char *host)
{
    tb_header_current(b);
    size_t hl = strlen(host) + 1;
    struct gmt_rec_process p = {.pid = pid, .ppid = 1, .rank = rank, .local_rank = rank,
                                .world_size = 2, .local_world_size = 2, .realtime_ns = REAL0,
                                .monotonic_ns = TB_T0, .host_len = (uint32_t)hl};
    tb_rec(b, GMT_REC_PROCESS, 0, &p, sizeof p, host, hl);
}

static void alloc(struct tb *b, uint64_t addr, uint64_t bytes, uint32_t stack, uint32_t dt)
{
    struct gmt_rec_alloc a = {.address = addr, .bytes = bytes, .dt = dt, .stack_id = stack,
                              .kind = GMT_KIND_DEVICE, .device = -1};
    tb_rec(b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &a, sizeof a, NULL, 0);
}

static void free_(struct tb *b, uint64_t addr, uint32_t dt)
{
    struct gmt_rec_free f = {.address = addr, .dt = dt};
    tb_rec(b, GMT_REC_FREE, GMT_API_cudaFree, &f, sizeof f, NULL, 0);
}

static void end(struct tb *b, uint64_t t)
{
    struct gmt_rec_end e = {.time_ns = TB_T0 + t};
    tb_rec(b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
}

/* The first n bytes of b into the file (written anew: the same inode grows). */
static void write_part(const struct tb *b, const char *path, size_t n)
{
    FILE *f = fopen(path, "r+b");
    if (!f)
        f = fopen(path, "wb");
    cr_assert_not_null(f);
    cr_assert_eq(fwrite(b->p, 1, n, f), n);
    cr_assert_eq(fclose(f), 0);
}

static char *path_in(const char *name)
{
    static char p[4][PATH_MAX + 64];
    static int k;
    char *s = p[k++ % 4];
    snprintf(s, sizeof p[0], "%s/%s", work, name);
    return s;
}

static void set_open(struct gmt_watch_set *s, const char *root)
{
    char err[256];
    char *roots[] = {(char *)root};
    cr_assert_eq(gmt_watch_set_init(s, roots, 1, NULL, NULL, 0, err, sizeof err), 0, "%s", err);
}

static const struct gmt_watch_trace *refresh(struct gmt_watch_set *s, bool final)
{
    cr_assert_eq(gmt_watch_set_refresh(s, final), 0);
    cr_assert_eq(s->n, 1);
    return s->t[0];
}

/* A thread on device 0 that allocates and frees, samples the device, and ends. */
static void one_thread(struct tb *b)
{
    process(b, 42, 0, "node1");
    tb_thread_on_device0(b, 100, 1000);
    alloc(b, 0x1000, 8 * MIB, 0, 10);
    alloc(b, 0x2000, 16 * MIB, 0, 10);
    tb_meminfo(b, GMT_MEMINFO_PERIODIC, GMT_MEMINFO_SRC_CUMEMGETINFO, 1024 * MIB, GMT_MEMINFO_UNKNOWN, 10);
    free_(b, 0x1000, 10);
    alloc(b, 0x3000, 4 * MIB, 0, 10);
    end(b, 2000);
}

Test(watch, reads_only_what_was_appended_and_ends_where_one_read_does)
{
    struct tb b = {0};
    one_thread(&b);
    const char *p = path_in("t.gmt");
    size_t cut = b.off[5] + 12; /* inside the second allocation */
    write_part(&b, p, cut);
    struct gmt_watch_set s;
    set_open(&s, p);
    const struct gmt_watch_trace *w = refresh(&s, false);
    cr_expect_null(w->error, "%s", w->error);
    cr_expect_eq(w->bytes_read, b.off[5], "stops before the partial record");
    refresh(&s, false); /* no growth: what was held is applied */
    cr_expect_eq(w->dev[0].tracked, 8 * MIB);
    write_part(&b, p, b.len);
    w = refresh(&s, false);
    cr_expect_eq(w->bytes_read, b.len, "each byte read once: %" PRIu64 " of %zu", w->bytes_read, b.len);
    cr_expect(w->complete);
    struct gmt_watch_set one;
    set_open(&one, p);
    const struct gmt_watch_trace *o = refresh(&one, true);
    cr_expect_eq(w->dev[0].tracked, 20 * MIB);
    cr_expect_eq(w->dev[0].tracked, o->dev[0].tracked);
    cr_expect_eq(w->dev[0].peak, 24 * MIB);
    cr_expect_eq(w->dev[0].peak, o->dev[0].peak);
    cr_expect_eq(w->dev[0].used_last, 1024 * MIB);
    int64_t u;
    cr_expect(gmt_watch_untracked(&w->dev[0], &u));
    cr_expect_eq(u, 1000 * (int64_t)MIB, "used 1 GiB - 24 MiB tracked then");
    gmt_watch_set_free(&one);
    gmt_watch_set_free(&s);
    tb_free(&b);
}

/* A free read before the allocation it frees: another thread's chunk reached the file
 * later. In time order the allocation comes first, across refreshes too. */
Test(watch, applies_a_late_chunk_in_time_order)
{
    struct tb b = {0};
    process(&b, 42, 0, "node1");
    tb_thread_on_device0(&b, 101, 2000);
    free_(&b, 0x1000, 10);
    alloc(&b, 0x9000, MIB, 0, 100);
    size_t first = b.len;
    tb_thread_on_device0(&b, 100, 1000);
    alloc(&b, 0x1000, 8 * MIB, 0, 10);
    const char *p = path_in("t.gmt");
    write_part(&b, p, first);
    struct gmt_watch_set s;
    set_open(&s, p);
    const struct gmt_watch_trace *w = refresh(&s, false);
    write_part(&b, p, b.len);
    w = refresh(&s, false);
    w = refresh(&s, false);
    cr_expect_eq(w->unmatched_frees, 0);
    cr_expect_eq(w->dev[0].tracked, MIB, "the 8 MiB were freed after they were allocated");
    cr_expect_eq(w->dev[0].peak, 8 * MIB);
    gmt_watch_set_free(&s);
    tb_free(&b);
}

/* b: the same first 64 bytes as one_thread's (header, PROCESS up to its anchors), a
 * larger file. */
static void other_thread(struct tb *b, uint32_t pid)
{
    process(b, pid, 0, "node2");
    tb_thread_on_device0(b, 100, 1000);
    for (int i = 0; i < 20; i++)
        alloc(b, 0x100000 + (uint64_t)i * 0x1000, 2 * MIB, 0, 10);
}

Test(watch, a_replaced_or_shrunk_trace_is_a_restarted_rank)
{
    struct tb a = {0}, b = {0}, c = {0};
    one_thread(&a);
    other_thread(&b, 42);
    other_thread(&c, 43);
    cr_assert_gt(b.len, a.len);
    cr_assert_eq(memcmp(a.p, b.p, GMT_WATCH_DIGEST_BYTES), 0);
    const char *p = path_in("t.gmt"), *q = path_in("new.gmt");
    cr_assert_eq(tb_write(&a, p), 0);
    struct gmt_watch_set s;
    set_open(&s, p);
    const struct gmt_watch_trace *w = refresh(&s, true);
    cr_expect_eq(w->dev[0].tracked, 20 * MIB);
    cr_assert_eq(tb_write(&b, q), 0);
    cr_assert_eq(rename(q, p), 0); /* another file at the path, its first bytes alike */
    w = refresh(&s, true);
    cr_expect_eq(w->restarts, 1);
    cr_expect_null(w->error, "%s", w->error);
    cr_expect_str_eq(w->host, "node2");
    cr_expect_eq(w->dev[0].tracked, 40 * MIB);
    cr_assert_eq(truncate(p, (off_t)b.off[3]), 0); /* the same file, shorter */
    w = refresh(&s, true);
    cr_expect_eq(w->restarts, 2);
    cr_expect_eq(w->n_dev, 0, "read again up to its CUCTX: nothing allocated");
    /* rewritten in place from its start, longer than before: its first bytes tell */
    cr_assert_eq(tb_write(&c, p), 0);
    w = refresh(&s, true);
    cr_expect_eq(w->restarts, 3);
    cr_expect_eq(w->pid, 43);
    cr_expect_eq(w->dev[0].tracked, 40 * MIB);
    gmt_watch_set_free(&s);
    tb_free(&a);
    tb_free(&b);
    tb_free(&c);
}

Test(watch, new_traces_join_and_gone_ones_leave)
{
    struct tb a = {0};
    one_thread(&a);
    cr_assert_eq(sh("mkdir -p d/sub"), 0);
    cr_assert_eq(tb_write(&a, path_in("d/a.gmt")), 0);
    struct gmt_watch_set s;
    set_open(&s, path_in("d"));
    cr_assert_eq(gmt_watch_set_refresh(&s, true), 0);
    cr_expect_eq(s.n, 1);
    const struct gmt_watch_trace *first = s.t[0];
    cr_assert_eq(tb_write(&a, path_in("d/sub/b.gmt")), 0);
    cr_assert_eq(gmt_watch_set_refresh(&s, true), 0);
    cr_expect_eq(s.n, 2);
    cr_expect_eq(s.t[0], first, "a trace followed already stays as it is");
    cr_expect_eq(s.t[1]->dev[0].tracked, 20 * MIB);
    cr_assert_eq(unlink(path_in("d/a.gmt")), 0);
    cr_assert_eq(gmt_watch_set_refresh(&s, true), 0);
    cr_expect_eq(s.n, 1);
    cr_expect(strstr(s.t[0]->path, "b.gmt"));
    gmt_watch_set_free(&s);
    tb_free(&a);
}

/* The writer's flusher notes a held call (SCOPE_OPEN) that may reach the file after the
 * call's own end: such a note is no call. */
Test(watch, open_calls_from_notes_until_their_end)
{
    struct tb b = {0};
    process(&b, 42, 0, "node1");
    struct gmt_rec_scope_begin f = {.comm = 0xa, .count = 256, .stream = 0x77, .datatype = 7, .peer = -1};
    tb_thread_on_device0(&b, 7, 100);
    struct gmt_rec_comm c = {.comm = 0xa, .rank = 0, .nranks = 2, .device = 0, .dt = 10};
    tb_rec(&b, GMT_REC_COMM, 0, &c, sizeof c, NULL, 0);
    tb_scope_call(&b, GMT_OP_AllReduce, 1, 0, 100, 50, GMT_CALL_HAS_ALL, &f);
    tb_chunk(&b, 9);
    tb_thread_at(&b, 9, TB_T0 + 150);
    tb_scope_open(&b, GMT_OP_AllReduce, 7, 1, TB_T0 + 150, 0xa, 256); /* ended already */
    tb_scope_open(&b, GMT_OP_AllGather, 7, 3, TB_T0 + 4000, 0xa, 64);
    size_t open_at = b.len;
    tb_chunk(&b, 7);
    tb_scope_call(&b, GMT_OP_AllGather, 3, 0, 5000, 1000, 0, &f);
    const char *p = path_in("t.gmt");
    write_part(&b, p, open_at);
    struct gmt_watch_set s;
    set_open(&s, p);
    const struct gmt_watch_trace *w = refresh(&s, false);
    cr_assert_eq(w->n_open, 1);
    const struct gmt_watch_call *call = gmt_watch_longest_call(w);
    cr_expect_eq(call->op, GMT_OP_AllGather);
    cr_expect_eq(call->begin, TB_T0 + 4000);
    cr_expect_eq(call->tid, 7);
    /* in the view: hanging past --hang, not before */
    struct gmt_watch_view v;
    uint64_t at = REAL0 + 4000 + 5000000000ull;
    cr_assert_eq(gmt_watch_view_make(&s, 1000000000ull, at, &v), 0);
    cr_assert_eq(v.n, 1);
    cr_expect_eq(v.rows[0].call_ns, 5000000000ull);
    cr_expect(v.rows[0].hanging);
    cr_expect_eq(v.n_hanging, 1);
    gmt_watch_view_free(&v);
    cr_assert_eq(gmt_watch_view_make(&s, 10000000000ull, at, &v), 0);
    cr_expect(!v.rows[0].hanging);
    gmt_watch_view_free(&v);
    write_part(&b, p, b.len);
    w = refresh(&s, false);
    cr_expect_eq(w->n_open, 0);
    cr_expect_eq(w->calls[GMT_OP_AllReduce], 1);
    cr_expect_eq(w->calls[GMT_OP_AllGather], 1);
    gmt_watch_set_free(&s);
    tb_free(&b);
}

Test(watch, an_ended_process_does_not_hang)
{
    struct tb b = {0};
    process(&b, 42, 0, "node1");
    tb_thread_on_device0(&b, 7, 100);
    tb_scope_begin(&b, GMT_OP_AllReduce, 1, 0, 0xa, 256, 10);
    end(&b, 9000);
    const char *p = path_in("t.gmt");
    cr_assert_eq(tb_write(&b, p), 0);
    struct gmt_watch_set s;
    set_open(&s, p);
    refresh(&s, true);
    struct gmt_watch_view v;
    cr_assert_eq(gmt_watch_view_make(&s, 1000, REAL0 + 3600000000000ull, &v), 0);
    cr_expect_not_null(v.rows[0].call);
    cr_expect_eq(v.rows[0].call_ns, 9000 - 110, "until its END, not until now");
    cr_expect(!v.rows[0].hanging);
    gmt_watch_view_free(&v);
    gmt_watch_set_free(&s);
    tb_free(&b);
}

/* A module and a stack of NCCL's, so allocations have category nccl. */
static void nccl_module(struct tb *b)
{
    const char path[] = "/opt/nccl/lib/libnccl.so.2";
    struct gmt_rec_module_load m = {.time_ns = TB_T0, .module_id = 1, .load_bias = 0x400000,
                                    .start = 0x400000, .end = 0x800000, .path_len = sizeof path};
    tb_rec(b, GMT_REC_MODULE_LOAD, 0, &m, sizeof m, path, sizeof path);
}

static void nccl_stack(struct tb *b, uint32_t id)
{
    struct { struct gmt_rec_stack s; uint64_t ip[2]; } st = {{.stack_id = id, .depth = 2},
                                                              {0x401000, 0x402000}};
    tb_rec(b, GMT_REC_STACK, 0, &st, sizeof st, NULL, 0);
}

Test(watch, a_stack_defined_later_moves_its_bytes_to_its_category)
{
    struct tb b = {0};
    process(&b, 42, 0, "node1");
    nccl_module(&b);
    tb_thread_on_device0(&b, 100, 1000);
    alloc(&b, 0x1000, 6 * MIB, 5, 10);
    size_t first = b.len;
    tb_thread_on_device0(&b, 101, 1500);
    nccl_stack(&b, 5);
    const char *p = path_in("t.gmt");
    write_part(&b, p, first);
    struct gmt_watch_set s;
    set_open(&s, p);
    const struct gmt_watch_trace *w = refresh(&s, false);
    w = refresh(&s, false);
    cr_expect_eq(w->dev[0].tracked, 6 * MIB);
    cr_expect_eq(w->nccl_cat, -1, "no stack of NCCL's read yet");
    write_part(&b, p, b.len);
    w = refresh(&s, false);
    cr_assert_geq(w->nccl_cat, 0);
    cr_expect_eq(w->dev[0].by_cat[w->nccl_cat], 6 * MIB);
    cr_expect_eq(w->n_pending_cat, 0);
    gmt_watch_set_free(&s);
    tb_free(&b);
}

static void nvtx_string(struct tb *b, uint32_t id, const char *name)
{
    struct gmt_rec_nvtx_string n = {.id = id, .len = (uint32_t)strlen(name) + 1};
    tb_rec(b, GMT_REC_NVTX_STRING, GMT_NVTX_STR_NAME, &n, sizeof n, name, n.len);
}

static void nvtx(struct tb *b, unsigned op, uint32_t name, uint64_t t)
{
    struct gmt_rec_nvtx_range r = {.time_ns = TB_T0 + t, .name = name};
    tb_rec(b, GMT_REC_NVTX_RANGE, (uint16_t)op, &r, sizeof r, NULL, 0);
}

Test(watch, steps_are_nvtx_ranges_and_growth_is_per_step)
{
    struct tb b = {0};
    process(&b, 42, 0, "node1");
    nccl_module(&b);
    tb_thread_on_device0(&b, 100, 1000);
    nccl_stack(&b, 5);
    nvtx_string(&b, 1, "train_step");
    nvtx_string(&b, 2, "forward");
    for (int i = 0; i < 4; i++) {
        uint64_t t = 2000 + 1000 * (uint64_t)i;
        nvtx(&b, GMT_NVTX_PUSH, 1, t);
        nvtx(&b, GMT_NVTX_PUSH, 2, t + 1);
        struct gmt_rec_time tm = {.time_ns = TB_T0 + t + 10}; /* the thread's clock, inside */
        tb_rec(&b, GMT_REC_TIME, 0, &tm, sizeof tm, NULL, 0);
        alloc(&b, 0x10000 + (uint64_t)i * 0x1000, 2 * MIB, 0, 1);
        if (i == 0 || i == 3)
            alloc(&b, 0x90000 + (uint64_t)i * 0x1000, i == 0 ? 4 * MIB : MIB, 5, 1);
        nvtx(&b, GMT_NVTX_POP, 2, t + 500);
        nvtx(&b, GMT_NVTX_POP, 1, t + 600);
    }
    end(&b, 9000);
    const char *p = path_in("t.gmt");
    cr_assert_eq(tb_write(&b, p), 0);
    struct gmt_watch_set s;
    set_open(&s, p);
    const struct gmt_watch_trace *w = refresh(&s, true);
    cr_expect_eq(w->steps, 4, "forward is no step");
    int64_t g;
    cr_assert(gmt_watch_step_growth(w, &g));
    cr_expect_eq(g, (int64_t)(7 * MIB / 3), "+2 MiB a step, and 1 MiB of NCCL's in the last");
    cr_expect(w->dev[0].has_first_step);
    cr_expect_eq(w->dev[0].nccl_first_step, 4 * MIB);
    gmt_watch_set_free(&s);
    tb_free(&b);
}

Test(watch, a_malformed_trace_is_one_line_and_status_2)
{
    struct tb b = {0};
    one_thread(&b);
    b.len = b.off[6];
    struct gmt_rec bad = {.type = GMT_REC_ALLOC, .size = 12};
    tb_put(&b, &bad, sizeof bad);
    tb_put(&b, NULL, 8);
    cr_assert_eq(sh("mkdir d"), 0);
    cr_assert_eq(tb_write(&b, path_in("d/bad.gmt")), 0);
    cr_expect_eq(sh("$G watch --once d"), 2);
    char out[4096], err[4096];
    slurp("out", out, sizeof out);
    slurp("err", err, sizeof err);
    cr_expect(strstr(err, "bad.gmt: offset") && strstr(err, "not a multiple of 8"), "%s", err);
    cr_expect_eq(strchr(err, '\n'), err + strlen(err) - 1, "one line: %s", err);
    cr_expect(strstr(out, "1 rank"), "what was read before is shown: %s", out);
    /* no trace at all: refreshed again, it stays one error, nothing read or applied */
    cr_assert_eq(sh("printf 'not a trace, long enough to be read as one' >d/no.gmt"), 0);
    struct gmt_watch_set s;
    set_open(&s, path_in("d/no.gmt"));
    const struct gmt_watch_trace *w = refresh(&s, false);
    w = refresh(&s, false);
    cr_assert_not_null(w->error);
    cr_expect(strstr(w->error, "no.gmt: offset 0: not a gpumemtrace trace (bad magic)"), "%s", w->error);
    cr_expect_eq(w->records, 0);
    gmt_watch_set_free(&s);
    tb_free(&b);
}

/* Twelve threads' chunks, each earlier in time than the one before it in the file, each
 * allocating and freeing what the previous one in time allocated: more runs than are
 * merged in one pass (watch_apply.c's MERGE_WAYS), applied in time order all the same,
 * every free after its allocation. */
Test(watch, many_chunks_out_of_time_order_are_applied_in_time_order)
{
    struct tb b = {0};
    process(&b, 42, 0, "node1");
    for (int j = 11; j >= 0; j--) {
        tb_thread_on_device0(&b, 100 + (uint32_t)j, 1000 + 10 * (uint64_t)j);
        alloc(&b, 0x10000 + (uint64_t)j * 0x1000, MIB, 0, 0);
        if (j)
            free_(&b, 0x10000 + (uint64_t)(j - 1) * 0x1000, 5);
    }
    const char *p = path_in("t.gmt");
    cr_assert_eq(tb_write(&b, p), 0);
    struct gmt_watch_set s;
    set_open(&s, p);
    const struct gmt_watch_trace *w = refresh(&s, true);
    cr_expect_eq(w->unmatched_frees, 0);
    cr_expect_eq(w->dev[0].tracked, MIB, "the last allocation in time is live");
    cr_expect_eq(w->dev[0].peak, 2 * MIB);
    cr_expect_eq(w->dev[0].frees, 11);
    gmt_watch_set_free(&s);
    tb_free(&b);
}

/* A trace's live set is at most half full (a thousand traces each keep one): 600 live
 * allocations fit a table of 2048. */
Test(watch, the_live_set_is_at_most_half_full)
{
    struct tb b = {0};
    process(&b, 42, 0, "node1");
    tb_thread_on_device0(&b, 100, 1000);
    for (uint64_t i = 0; i < 600; i++)
        alloc(&b, 0x100000 + i * 0x1000, 4096, 0, 1);
    const char *p = path_in("t.gmt");
    cr_assert_eq(tb_write(&b, p), 0);
    struct gmt_watch_set s;
    set_open(&s, p);
    const struct gmt_watch_trace *w = refresh(&s, true);
    cr_expect_eq(w->live.n, 600);
    cr_expect_eq(w->live.cap, 2048);
    gmt_watch_set_free(&s);
    tb_free(&b);
}

/* An allocation beyond the 2^56 bytes a trace may hold stops the trace where it is: it
 * leaves nothing in the live set, and what was queued after it is never applied, at
 * this refresh or a later one (its free would take off bytes never charged: found by
 * tests/fuzz/fuzz_watch.c, tests/fuzz/regress/watch/). */
Test(watch, an_allocation_beyond_2p56_stops_the_trace_where_it_is)
{
    struct tb b = {0};
    process(&b, 42, 0, "node1");
    tb_thread_on_device0(&b, 100, 1000);
    alloc(&b, 0x1000, 8 * MIB, 0, 10);
    alloc(&b, 0x2000, 4 * MIB, 0, 10);
    alloc(&b, 0x2000, 1ull << 60, 0, 10); /* the same address again: the old entry stays */
    free_(&b, 0x2000, 10);
    free_(&b, 0x1000, 10);
    alloc(&b, 0x3000, 2 * MIB, 0, 10);
    const char *p = path_in("t.gmt");
    cr_assert_eq(tb_write(&b, p), 0);
    struct gmt_watch_set s;
    set_open(&s, p);
    const struct gmt_watch_trace *w = refresh(&s, false);
    for (int i = 0; i < 3; i++) /* no growth: applied at the first of them */
        w = refresh(&s, false);
    cr_assert_not_null(w->error);
    cr_expect(strstr(w->error, "beyond the 2^56 bytes"), "%s", w->error);
    cr_expect_eq(w->dev[0].tracked, 12 * MIB, "the two allocations before it");
    cr_expect_eq(w->dev[0].by_cat[0] + w->dev[0].by_cat[1], 12 * MIB);
    cr_expect_eq(w->live.n, 2);
    cr_expect_eq(w->n_q, 0, "nothing left to apply");
    gmt_watch_set_free(&s);
    tb_free(&b);
}

/* A device sample beyond the 2^56 bytes stops the trace as such an allocation does: its
 * untracked (used - tracked - graph) would not fit in 64 signed bits (found by
 * tests/fuzz/fuzz_watch.c, tests/fuzz/regress/watch/untracked-sub-overflows). */
Test(watch, a_device_sample_beyond_2p56_stops_the_trace_where_it_is)
{
    struct tb b = {0};
    process(&b, 42, 0, "node1");
    tb_thread_on_device0(&b, 100, 1000);
    tb_meminfo(&b, GMT_MEMINFO_PERIODIC, GMT_MEMINFO_SRC_CUMEMGETINFO, 1024 * MIB,
               GMT_MEMINFO_UNKNOWN, 10);
    alloc(&b, 0x1000, 8 * MIB, 0, 10);
    struct gmt_rec_meminfo m = {.dt = 10, .device = 0, .source = GMT_MEMINFO_SRC_CUMEMGETINFO,
                                .free_bytes = 0, .total_bytes = (1ull << 63) + 1};
    tb_rec(&b, GMT_REC_MEMINFO, GMT_MEMINFO_PERIODIC, &m, sizeof m, NULL, 0);
    const char *p = path_in("t.gmt");
    cr_assert_eq(tb_write(&b, p), 0);
    struct gmt_watch_set s;
    set_open(&s, p);
    const struct gmt_watch_trace *w = refresh(&s, true);
    cr_assert_not_null(w->error);
    cr_expect(strstr(w->error, "a device sample"), "%s", w->error);
    int64_t u;
    cr_assert(gmt_watch_untracked(&w->dev[0], &u));
    cr_expect_eq(u, 1024 * MIB, "the sample before it, with nothing tracked then");
    gmt_watch_set_free(&s);
    tb_free(&b);
}

/* Strings from a trace reach no terminal, JSON or metrics as they are. */
Test(watch, trace_strings_are_escaped_everywhere)
{
    struct tb b = {0};
    const char host[] = "no\x1b]0;pwn\x07\"de\\\n";
    process(&b, 42, 0, host);
    tb_thread_on_device0(&b, 100, 1000);
    alloc(&b, 0x1000, MIB, 0, 10);
    tb_scope_begin(&b, GMT_OP_AllReduce, 1, 0, 0xa, 256, 10);
    cr_assert_eq(sh("mkdir d"), 0);
    cr_assert_eq(tb_write(&b, path_in("d/t.gmt")), 0);
    cr_assert_eq(sh("$G watch --once --hang 0 d"), 0); /* the hang's line names the host */
    char out[8192];
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "rank 0 (no\\x1b]0;pwn\\x07\"de\\\\x0a pid 42)"), "%s", out);
    cr_expect_null(strchr(out, '\x1b'), "%s", out);
    cr_expect_null(strchr(out, '\x07'), "%s", out);
    cr_assert_eq(sh("$G watch --once --json d"), 0);
    slurp("out", out, sizeof out);
    struct gmt_json *j;
    char err[256];
    cr_assert_eq(gmt_json_parse(out, strlen(out), &j, err, sizeof err), 0, "%s: %s", err, out);
    const struct gmt_json *r = &gmt_json_get(j, "ranks")->items[0];
    cr_expect_str_eq(gmt_json_get(r, "host")->str, host);
    gmt_json_free(j);
    struct gmt_watch_set s;
    set_open(&s, path_in("d"));
    cr_assert_eq(gmt_watch_set_refresh(&s, true), 0);
    struct gmt_watch_view v;
    cr_assert_eq(gmt_watch_view_make(&s, 1000, REAL0, &v), 0);
    char *m = NULL;
    size_t ml = 0;
    FILE *f = open_memstream(&m, &ml);
    gmt_watch_render_prom(f, &v);
    fclose(f);
    /* as the format escapes: \\ \" \n; the rest behind an escaped backslash */
    cr_expect(strstr(m, "host=\"no\\\\x1b]0;pwn\\\\x07\\\"de\\\\\\n\""), "%s", m);
    for (const char *q = m; *q; q++)
        cr_expect(*q == '\n' || (*q >= 0x20 && *q < 0x7f), "byte 0x%02x in %s", (unsigned char)*q, m);
    free(m);
    gmt_watch_view_free(&v);
    gmt_watch_set_free(&s);
    tb_free(&b);
}

static struct gmt_json *snapshot(const char *file);

static int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* Rank `rank` of a job: `mib` MiB allocated, and an ENV record of `env` when not NULL. */
static void job_rank(const char *dir, int rank, uint64_t mib, const char *env, bool fail)
{
    struct tb b = {0};
    process(&b, 100 + (uint32_t)rank, rank, "node1");
    const char *e = env ? env : "GPUMEMTRACE_JOB_ID=j1";
    struct gmt_rec_env er = {.count = 1, .bytes = (uint32_t)strlen(e) + 1};
    tb_rec(&b, GMT_REC_ENV, 0, &er, sizeof er, e, er.bytes);
    tb_thread_on_device0(&b, 100, 1000);
    alloc(&b, 0x1000, mib * MIB, 0, 10);
    if (fail) {
        struct gmt_rec_alloc_fail f = {.bytes = 1ull << 40, .error = 2, .dt = 10,
                                       .kind = GMT_KIND_DEVICE, .device = -1};
        tb_rec(&b, GMT_REC_ALLOC_FAIL, GMT_API_cudaMalloc, &f, sizeof f, NULL, 0);
    }
    end(&b, 5000);
    char name[64];
    snprintf(name, sizeof name, "%s/r%d.gmt", dir, rank);
    cr_assert_eq(tb_write(&b, path_in(name)), 0);
    tb_free(&b);
}

Test(watch, the_rank_that_stands_out_with_what_explains_it)
{
    cr_assert_eq(sh("mkdir d"), 0);
    for (int r = 0; r < 4; r++)
        job_rank("d", r, r == 2 ? 96 : 32, r == 2 ? "NCCL_BUFFSIZE=8388608" : NULL, false);
    cr_assert_eq(sh("$G watch --once --json d"), 0);
    struct gmt_json *j = snapshot("out");
    const struct gmt_json *so = gmt_json_get(j, "stand_out");
    cr_assert_eq(so->n, 1, "one rank stands out");
    int64_t rank;
    gmt_json_int64(gmt_json_get(&so->items[0], "rank"), &rank);
    cr_expect_eq(rank, 2);
    cr_expect(strstr(gmt_json_get(&so->items[0], "differences")->str, "NCCL_BUFFSIZE=8388608"),
              "%s", gmt_json_get(&so->items[0], "differences")->str);
    gmt_json_free(j);
    cr_assert_eq(sh("$G watch --once d"), 0);
    char out[16384];
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "Ranks that stand out:\n  rank 2: peak 96 MiB (median 32 MiB)"), "%s", out);
    cr_expect(strstr(out, "recorded differences: NCCL_BUFFSIZE=8388608"), "%s", out);
}

Test(watch, many_ranks_alike_share_a_row_but_not_those_that_failed)
{
    cr_assert_eq(sh("mkdir d"), 0);
    for (int r = 0; r < 40; r++)
        job_rank("d", r, 32, NULL, r == 17 || r == 18);
    cr_assert_eq(sh("$G watch --once d"), 0);
    char out[1 << 16];
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "40 ranks on 1 host, job run:j1"), "%s", out);
    cr_expect(strstr(out, "\n38 ranks "), "the group: %s", out);
    cr_expect(strstr(out, "\n      17    0 ") && strstr(out, "\n      18    0 "),
              "each failed rank alone, though alike: %s", out);
    cr_expect_lt(lines(out), 16, "%s", out);
    cr_expect(strstr(out, "Failed allocations (2, the latest first):\n  "), "%s", out);
    cr_expect(strstr(out, "rank 17 device 0: cudaMalloc of 1 TiB failed (cudaErrorMemoryAllocation)"),
              "%s", out);
}

Test(watch, bad_usage_is_status_2)
{
    cr_assert_eq(sh("mkdir d"), 0);
    static const char *const bad[] = {
        "$G watch", "$G watch /nonexistent/dir", "$G watch --interval 0 d", "$G watch --hang x d",
        "$G watch --prometheus nonsense d", "$G watch --prometheus 127.0.0.1:70000 d",
        "$G watch --prometheus :9400 d", "$G watch --prometheus 203.0.113.7:0 d",
        "$G watch --once --prometheus 127.0.0.1:0 d", "$G watch --step '(' d",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_expect_eq(sh("%s", bad[i]), 2, "%s", bad[i]);
        char err[4096];
        slurp("err", err, sizeof err);
        cr_expect(err[0] && strchr(err, '\n') == err + strlen(err) - 1, "%s: %s", bad[i], err);
    }
    cr_expect_eq(sh("$G watch --once d"), 0);
}

/* ---- the CLI on a job of the fakes ---- */

/* Starts watch_job under `run` in the background, in a process group of its own. */
static void job_start(const char *args, const char *env)
{
    cr_assert_eq(sh("mkdir -p job && (%s setsid \"$G\" run -q -o job -- \"$B/watch/watch_job\" %s "
                    ">job.out 2>&1 & echo $! >job.pid)", env ? env : "", args), 0);
}

static void job_kill(void)
{
    sh("kill -KILL -- -$(cat job.pid) 2>/dev/null; sleep 0.2");
}

static bool have(const char *tool)
{
    return sh("command -v %s", tool) == 0;
}

/* The number in column `col` of the pane's row of rank `rank` (columns as the header
 * names them, right-aligned under it), -1 when the pane has no such row. */
static long pane_number(const char *pane, const char *col, int rank, char *state, size_t sl)
{
    const char *h = strstr(pane, " RANK ");
    if (!h)
        return -1;
    const char *hl = h;
    while (hl > pane && hl[-1] != '\n')
        hl--;
    const char *c = strstr(h, col);
    if (!c)
        return -1;
    size_t endcol = (size_t)(c - hl) + strlen(col);
    char want[16];
    snprintf(want, sizeof want, "%8d ", rank);
    for (const char *l = strchr(h, '\n'); l && *l; l = strchr(l + 1, '\n')) {
        if (strncmp(l + 1, want, strlen(want)))
            continue;
        if (strlen(l + 1) < endcol)
            return -1;
        char num[16];
        snprintf(num, sizeof num, "%.6s", l + 1 + endcol - 6);
        if (state)
            sscanf(l + 1 + endcol + 17, "%15s", state), state[sl - 1] = 0;
        return atol(num);
    }
    return -1;
}

Test(live, the_view_in_a_terminal_at_two_moments)
{
    if (!have("tmux"))
        cr_skip_test("no tmux installed (Debian package tmux)");
    job_start("40 100 ok", NULL);
    char sock[64];
    snprintf(sock, sizeof sock, "gmtw%d", (int)getpid());
    cr_assert_eq(sh("tmux -L %s new-session -d -x 170 -y 30 -c \"$W\" \"$G watch --interval 0.2 job\"",
                    sock), 0);
    char pane[16384], state1[16] = "", state2[16] = "";
    long s1 = -1, s2 = -1;
    for (int i = 0; i < 100 && s1 < 2; i++) { /* moment 1: steps under way */
        sh("sleep 0.1; tmux -L %s capture-pane -p", sock);
        slurp("out", pane, sizeof pane);
        s1 = pane_number(pane, "STEPS", 1, state1, sizeof state1);
    }
    cr_assert_geq(s1, 2, "%s", pane);
    cr_expect_str_eq(state1, "running", "%s", pane);
    cr_expect(strstr(pane, "nccl "), "NCCL's buffers by category: %s", pane);
    cr_expect(strstr(pane, "+1 MiB/step"), "%s", pane);
    for (int i = 0; i < 200; i++) { /* moment 2: the job ended */
        sh("sleep 0.1; tmux -L %s capture-pane -p", sock);
        slurp("out", pane, sizeof pane);
        s2 = pane_number(pane, "STEPS", 1, state2, sizeof state2);
        if (!strcmp(state2, "ended"))
            break;
    }
    cr_expect_str_eq(state2, "ended", "%s", pane);
    cr_expect_eq(s2, 40, "%s", pane);
    cr_expect_gt(s2, s1);
    cr_expect_eq(pane_number(pane, "STEPS", 0, NULL, 0), 40, "%s", pane);
    cr_expect_null(strstr(pane, "\x1b"), "the pane shows text, not escapes");
    /* q quits */
    sh("tmux -L %s send-keys q", sock);
    int gone = 1;
    for (int i = 0; i < 50 && (gone = sh("tmux -L %s has-session", sock)) == 0; i++)
        sh("sleep 0.1");
    cr_expect_neq(gone, 0, "watch still runs after q");
    sh("tmux -L %s kill-server", sock);
    job_kill();
}

static struct gmt_json *snapshot(const char *file)
{
    char buf[1 << 16];
    slurp(file, buf, sizeof buf);
    struct gmt_json *j;
    char err[256];
    cr_assert_eq(gmt_json_parse(buf, strlen(buf), &j, err, sizeof err), 0, "%s: %s", err, buf);
    return j;
}

static const struct gmt_json *rank_of(const struct gmt_json *j, int rank)
{
    const struct gmt_json *rs = gmt_json_get(j, "ranks");
    for (size_t i = 0; rs && i < rs->n; i++) {
        int64_t r;
        if (!gmt_json_int64(gmt_json_get(&rs->items[i], "rank"), &r) && r == rank)
            return &rs->items[i];
    }
    cr_assert_fail("no rank %d", rank);
    return NULL;
}

Test(live, a_rank_that_hangs_in_a_collective_is_marked)
{
    job_start("8 50 hang", "FAKENCCL_TIMEOUT_S=60");
    /* rank 1 stopped at step 4; rank 0 waits in the all-reduce */
    int st = sh("for i in $(seq 150); do \"$G\" watch --once --json --hang 1 job >snap.json || exit 9; "
                "grep -q '\"hanging\": 1' snap.json && exit 0; sleep 0.1; done; exit 1");
    cr_assert_eq(st, 0, "never marked hanging");
    struct gmt_json *j = snapshot("snap.json");
    const struct gmt_json *r0 = rank_of(j, 0), *r1 = rank_of(j, 1);
    const struct gmt_json *call = gmt_json_get(r0, "call");
    cr_assert_eq(call->type, GMT_JSON_OBJECT);
    cr_expect_str_eq(gmt_json_get(call, "op")->str, "AllReduce");
    cr_expect_eq(gmt_json_get(call, "hanging")->type, GMT_JSON_TRUE);
    int64_t size, ns;
    cr_expect_eq(gmt_json_int64(gmt_json_get(call, "comm_size"), &size), 0);
    cr_expect_eq(size, 2);
    cr_expect_eq(gmt_json_int64(gmt_json_get(call, "in_call_ns"), &ns), 0);
    cr_expect_gt(ns, 1000000000);
    cr_expect_eq(gmt_json_get(r1, "call")->type, GMT_JSON_NULL, "rank 1 sleeps outside NCCL");
    gmt_json_free(j);
    /* the same a person reads; and not hanging under the default --hang of 60 s */
    cr_assert_eq(sh("\"$G\" watch --once --hang 1 job"), 0);
    char out[16384];
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "Hanging (in one NCCL call for more than 1 s):\n  rank 0 ("), "%s", out);
    cr_expect(strstr(out, "AllReduce on communicator 1 (rank 0 of 2)"), "%s", out);
    cr_assert_eq(sh("\"$G\" watch --once job"), 0);
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "; 0 hanging;") && !strstr(out, "HANGING"), "%s", out);
    job_kill();
}

Test(live, a_failed_allocation_appears_while_the_job_runs)
{
    job_start("24 150 fail", NULL);
    cr_assert_eq(sh("\"$G\" watch --json --interval 0.1 job >snaps.json 2>w.err & echo $! >w.pid; "
                    "while kill -0 $(cat job.pid) 2>/dev/null; do sleep 0.1; done; sleep 0.5; "
                    "kill -INT $(cat w.pid); wait $(cat w.pid)"), 0, "watch ends 0 on SIGINT");
    char buf[1 << 20];
    slurp("snaps.json", buf, sizeof buf);
    int live = 0, snaps = 0, ended = 0;
    for (char *l = buf, *nl; *l; l = nl + 1) {
        cr_assert_not_null(nl = strchr(l, '\n'), "whole lines");
        *nl = 0;
        struct gmt_json *j;
        char err[256];
        cr_assert_eq(gmt_json_parse(l, strlen(l), &j, err, sizeof err), 0, "%s: %s", err, l);
        snaps++;
        const struct gmt_json *rs = gmt_json_get(j, "ranks");
        for (size_t i = 0; i < rs->n; i++) {
            const struct gmt_json *r = &rs->items[i];
            int64_t rank, fails;
            gmt_json_int64(gmt_json_get(r, "rank"), &rank);
            gmt_json_int64(gmt_json_get(r, "alloc_failures"), &fails);
            bool running = !strcmp(gmt_json_get(r, "state")->str, "running");
            if (rank == 1 && fails == 1 && running) {
                live++;
                const struct gmt_json *f = &gmt_json_get(r, "failures")->items[0];
                cr_expect_str_eq(gmt_json_get(f, "api")->str, "cudaMalloc");
                int64_t bytes;
                gmt_json_int64(gmt_json_get(f, "bytes"), &bytes);
                cr_expect_eq(bytes, 1ll << 40);
            }
            cr_expect(rank == 1 || fails == 0);
            ended += rank == 1 && !running;
        }
        gmt_json_free(j);
    }
    cr_expect_gt(live, 0, "the failure was in a snapshot while rank 1 still ran (%d snapshots)", snaps);
    cr_expect_gt(ended, 0, "and the job's end was seen");
}

/* ---- the metrics endpoint ---- */

/* `watch --prometheus 127.0.0.1:0` on an ended job, a child of this process; its port in
 * *port. */
static pid_t serve(char *port, size_t len)
{
    cr_assert_eq(sh("mkdir job && \"$G\" run -q -o job -- \"$B/watch/watch_job\" 6 20 fail >job.out 2>&1"), 0);
    char cli[PATH_MAX + 16], errf[PATH_MAX + 16], dir[PATH_MAX + 16];
    snprintf(cli, sizeof cli, "%s/gpumemtrace", build_dir);
    snprintf(errf, sizeof errf, "%s/w.err", work);
    snprintf(dir, sizeof dir, "%s/job", work);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(errf, O_WRONLY | O_CREAT | O_TRUNC, 0644), nul = open("/dev/null", O_RDWR);
        if (fd < 0 || nul < 0 || dup2(fd, 2) < 0 || dup2(nul, 1) < 0 || dup2(nul, 0) < 0)
            _exit(126);
        execl(cli, cli, "watch", "--prometheus", "127.0.0.1:0", "--interval", "0.1", dir, (char *)NULL);
        _exit(127);
    }
    char err[512] = "";
    const char *p = NULL;
    for (int i = 0; i < 200 && !(p = strstr(err, "http://127.0.0.1:")); i++) {
        sh("sleep 0.05");
        slurp("w.err", err, sizeof err);
    }
    cr_assert_not_null(p, "%s", err);
    snprintf(port, len, "%.*s", (int)strspn(p + 17, "0123456789"), p + 17);
    sh("sleep 0.3"); /* a refresh or two */
    return pid;
}

static void unserve(pid_t pid)
{
    cr_assert_eq(kill(pid, SIGTERM), 0);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "watch ends 0 on SIGTERM: %#x", st);
}

/* One request on a connection of its own; the whole response into out. */
static void request(const char *port, const char *req, char *out, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    cr_assert_geq(fd, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port)),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(write(fd, req, strlen(req)), (ssize_t)strlen(req));
    size_t n = 0;
    ssize_t k;
    while (n + 1 < cap && (k = read(fd, out + n, cap - 1 - n)) > 0)
        n += (size_t)k;
    out[n] = 0;
    close(fd);
}

/* The value of the series `name` of rank and device, from the metrics text. */
static bool metric(const char *text, const char *name, int rank, int dev, int64_t *v)
{
    char key[64], r[32], d[32];
    snprintf(key, sizeof key, "\n%s{", name);
    snprintf(r, sizeof r, "rank=\"%d\"", rank);
    snprintf(d, sizeof d, "device=\"%d\"", dev);
    for (const char *l = strstr(text, key); l; l = strstr(l + 1, key)) {
        const char *e = strchr(l + 1, '\n');
        size_t n = e ? (size_t)(e - l) : strlen(l);
        char line[1024];
        snprintf(line, sizeof line, "%.*s", (int)n, l);
        const char *close = strstr(line, "} ");
        if (strstr(line, r) && strstr(line, d) && close) {
            *v = strtoll(close + 2, NULL, 10);
            return true;
        }
    }
    return false;
}

Test(live, metrics_agree_with_summary_json_at_the_end)
{
    char port[16], other[512];
    static char resp[1 << 20];
    pid_t pid = serve(port, sizeof port);
    request(port, "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n", resp, sizeof resp);
    request(port, "GET /other HTTP/1.0\r\n\r\n", other, sizeof other);
    cr_expect(!strncmp(other, "HTTP/1.0 404 ", 13), "%s", other);
    request(port, "hello\r\n\r\n", other, sizeof other);
    cr_expect(!strncmp(other, "HTTP/1.0 400 ", 13), "%s", other);
    unserve(pid);
    cr_assert(!strncmp(resp, "HTTP/1.0 200 OK\r\n", 17), "%.200s", resp);
    cr_expect(strstr(resp, "Content-Type: text/plain; version=0.0.4"), "%.300s", resp);
    const char *body = strstr(resp, "\r\n\r\n");
    cr_assert_not_null(body);
    body += 3; /* keep a newline before the first line */
    cr_assert_eq(sh("\"$G\" summary --json job >sum.json"), 0);
    struct gmt_json *j = snapshot("sum.json");
    const struct gmt_json *ts = gmt_json_get(j, "traces");
    int checked = 0;
    for (size_t i = 0; i < ts->n; i++) {
        int64_t rank;
        gmt_json_int64(gmt_json_get(&ts->items[i], "rank"), &rank);
        const struct gmt_json *ds = gmt_json_get(&ts->items[i], "devices");
        for (size_t k = 0; k < ds->n; k++) {
            const struct gmt_json *d = &ds->items[k];
            int64_t dev, peak, endb, fails, total, m;
            gmt_json_int64(gmt_json_get(d, "device"), &dev);
            gmt_json_int64(gmt_json_get(d, "peak_bytes"), &peak);
            gmt_json_int64(gmt_json_get(d, "end_bytes"), &endb);
            gmt_json_int64(gmt_json_get(d, "failures"), &fails);
            gmt_json_int64(gmt_json_get(d, "device_total_bytes"), &total);
            const struct gmt_json *nc = gmt_json_get(gmt_json_get(d, "end_by_category"), "nccl");
            int64_t nccl = 0;
            if (nc)
                gmt_json_int64(nc, &nccl);
            cr_expect(metric(body, "gpumemtrace_peak_bytes", (int)rank, (int)dev, &m) && m == peak,
                      "rank %d peak %lld vs %lld", (int)rank, (long long)m, (long long)peak);
            cr_expect(metric(body, "gpumemtrace_tracked_bytes", (int)rank, (int)dev, &m) && m == endb);
            cr_expect(metric(body, "gpumemtrace_nccl_bytes", (int)rank, (int)dev, &m) && m == nccl);
            cr_expect(metric(body, "gpumemtrace_alloc_failures_total", (int)rank, (int)dev, &m) &&
                      m == fails, "rank %d failures %lld vs %lld", (int)rank, (long long)m, (long long)fails);
            cr_expect(metric(body, "gpumemtrace_device_total_bytes", (int)rank, (int)dev, &m) && m == total);
            checked++;
        }
    }
    cr_expect_eq(checked, 2, "two ranks' devices");
    gmt_json_free(j);
}

Test(live, metrics_pass_promtool)
{
    if (!have("promtool"))
        cr_skip_test("no promtool installed (Debian package prometheus)");
    char port[16];
    static char resp[1 << 20];
    pid_t pid = serve(port, sizeof port);
    request(port, "GET /metrics HTTP/1.0\r\n\r\n", resp, sizeof resp);
    unserve(pid);
    const char *body = strstr(resp, "\r\n\r\n");
    cr_assert_not_null(body);
    FILE *f = fopen(path_in("metrics.txt"), "w");
    cr_assert_not_null(f);
    fputs(body + 4, f);
    cr_assert_eq(fclose(f), 0);
    cr_expect(strstr(body, "gpumemtrace_alloc_failures_total{"), "%.400s", body);
    cr_assert_eq(sh("promtool check metrics <metrics.txt"), 0, "promtool refused the metrics");
    /* the check can fail: the same series twice is told apart */
    cr_assert_eq(sh("cat metrics.txt metrics.txt >twice.txt"), 0);
    cr_expect_neq(sh("promtool check metrics <twice.txt"), 0);
}
