/* test_stack.c: stack capture and interning: ids per call site, one STACK record each, depth, caller frame, threads. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gmt.h"
#include "reader.h"
#include "writer_api.h"

#define MAX_STACKS 64

struct stacks {
    size_t n;
    uint32_t id[MAX_STACKS];
    uint32_t depth[MAX_STACKS];
    uint64_t ip[MAX_STACKS][300];
};

static char dir[64];
static char path[128];

static void start_trace(long depth)
{
    strcpy(dir, "/tmp/gmt-test-stack-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.gmt", dir);
    gmt_opt.output = path;
    gmt_opt.stack_depth = depth;
    gmt_opt.quiet = 1;
    cr_assert(gmt_writer_ready(), "the writer opens %s", path);
}

static void finish_and_read(struct stacks *s)
{
    gmt_writer_finish();
    memset(s, 0, sizeof *s);
    struct gmt_reader *r;
    char err[256];
    cr_assert_eq(gmt_reader_open(&r, path, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    int rc;
    while ((rc = gmt_reader_next(r, &ev, err, sizeof err)) == 1) {
        if (ev.rec->type != GMT_REC_STACK)
            continue;
        const struct gmt_rec_stack *st = (const struct gmt_rec_stack *)ev.rec;
        cr_assert_lt(s->n, MAX_STACKS);
        cr_assert_leq(st->depth, 300);
        cr_assert_eq(st->h.size, sizeof *st + st->depth * 8);
        s->id[s->n] = st->stack_id;
        s->depth[s->n] = st->depth;
        memcpy(s->ip[s->n], st->ip, st->depth * 8);
        s->n++;
    }
    cr_assert_eq(rc, 0, "%s", err);
    cr_expect(gmt_reader_complete(r));
    gmt_reader_close(r);
    if (!getenv("KEEP")) { /* KEEP=1: leave the trace for `gpumemtrace dump` */
        unlink(path);
        rmdir(dir);
    }
}

static size_t count_id(const struct stacks *s, uint32_t id)
{
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        k += s->id[i] == id;
    return k;
}

static const uint64_t *ips_of(const struct stacks *s, uint32_t id, uint32_t *depth)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->id[i] == id) {
            *depth = s->depth[i];
            return s->ip[i];
        }
    cr_assert_fail("no STACK record for id %u", id);
    return NULL;
}

/* Exported (the suite links with -rdynamic) so dladdr can name them. The empty asm
 * after each call keeps the compiler from turning it into a tail call. */
__attribute__((noinline)) uint32_t stack_site_a(void)
{
    uint32_t id = gmt_stack_capture(NULL);
    __asm__ volatile("" ::: "memory");
    return id;
}

__attribute__((noinline)) uint32_t stack_site_b(void)
{
    uint32_t id = gmt_stack_capture(NULL);
    __asm__ volatile("" ::: "memory");
    return id;
}

/* Stands for a hook between the application and the capture: given its own frame, the
 * stack starts in its caller. */
__attribute__((noinline)) uint32_t stack_library_layer(void)
{
    uint32_t id = gmt_stack_capture(GMT_HOOK_FRAME());
    __asm__ volatile("" ::: "memory");
    return id;
}

__attribute__((noinline)) uint32_t stack_site_c(void)
{
    uint32_t id = stack_library_layer();
    __asm__ volatile("" ::: "memory");
    return id;
}

__attribute__((noinline)) uint32_t stack_recurse(int n)
{
    uint32_t id = n > 0 ? stack_recurse(n - 1) : gmt_stack_capture(NULL);
    __asm__ volatile("" ::: "memory");
    return id;
}

/* One call site however often it runs: the trip count is unknown to the compiler, so
 * it cannot unroll or peel the loop into several call sites with different stacks. A
 * local: threads capture at once (a shared one was a data race, under TSan). */
__attribute__((noinline)) static void capture_n(uint32_t (*fn)(void), int n, uint32_t *ids)
{
    volatile int times = n;
    for (int i = 0; i < times; i++)
        ids[i] = fn();
}

static const char *function_of(uint64_t ip)
{
    Dl_info info;
    if (!dladdr((void *)(uintptr_t)ip, &info) || !info.dli_sname)
        return "?";
    return info.dli_sname;
}

Test(stack, same_site_same_id_other_site_other_id)
{
    start_trace(48);
    uint32_t a[2], b;
    capture_n(stack_site_a, 2, a);
    capture_n(stack_site_b, 1, &b);
    uint32_t a1 = a[0], a2 = a[1];
    cr_expect_neq(a1, 0);
    cr_expect_eq(a1, a2);
    cr_expect_neq(b, 0);
    cr_expect_neq(a1, b);
    struct stacks s;
    finish_and_read(&s);
}

Test(stack, first_capture_writes_exactly_one_record)
{
    start_trace(48);
    uint32_t ids[3], b;
    capture_n(stack_site_a, 3, ids);
    capture_n(stack_site_b, 1, &b);
    uint32_t a = ids[0];
    cr_expect(ids[1] == a && ids[2] == a);
    struct stacks s;
    finish_and_read(&s);
    cr_expect_eq(s.n, 2, "STACK records: %zu", s.n);
    cr_expect_eq(count_id(&s, a), 1);
    cr_expect_eq(count_id(&s, b), 1);
    cr_expect_eq(a, 1, "ids start at 1");
    cr_expect_eq(b, 2, "ids are dense");
}

Test(stack, ip0_is_the_return_address_into_the_caller)
{
    start_trace(48);
    uint32_t a = stack_site_a();
    uint32_t c = stack_site_c();
    struct stacks s;
    finish_and_read(&s);
    uint32_t depth;
    const uint64_t *ip = ips_of(&s, a, &depth);
    cr_assert_geq(depth, 2);
    cr_expect_str_eq(function_of(ip[0]), "stack_site_a");
    Dl_info mine, got;
    cr_assert(dladdr((void *)&stack_site_a, &mine));
    cr_assert(dladdr((void *)(uintptr_t)ip[0], &got));
    cr_expect_str_eq(got.dli_fname, mine.dli_fname, "ip[0] is in the test program");
    /* return address: just past a call, inside the function, not at its entry */
    cr_expect_gt(ip[0], (uintptr_t)&stack_site_a);
    ip = ips_of(&s, c, &depth);
    cr_expect_str_eq(function_of(ip[0]), "stack_site_c", "the layer's frame: its caller first");
}

Test(stack, depth_limit_honoured)
{
    start_trace(4);
    uint32_t id = stack_recurse(20);
    gmt_opt.stack_depth = 256;
    uint32_t deep = stack_recurse(64);
    struct stacks s;
    finish_and_read(&s);
    uint32_t depth;
    const uint64_t *ip = ips_of(&s, id, &depth);
    cr_expect_eq(depth, 4);
    for (uint32_t i = 0; i < depth; i++)
        cr_expect_str_eq(function_of(ip[i]), "stack_recurse");
    ip = ips_of(&s, deep, &depth);
    cr_expect_gt(depth, 65, "all 65 recursion frames and their callers: %u", depth);
    cr_expect_leq(depth, 256);
}

Test(stack, depth_zero_disables)
{
    start_trace(0);
    cr_expect_eq(stack_site_a(), 0);
    cr_expect_eq(stack_recurse(3), 0);
    struct stacks s;
    finish_and_read(&s);
    cr_expect_eq(s.n, 0);
}

/* The two ways to the same stack: from a hook's frame (libunwind's tracer started in the
 * caller) and unwinding from the capture itself. They must agree frame for frame below
 * the first, whose call sites differ; and at any depth of recursion. */
__attribute__((noinline)) uint32_t stack_two_ways(int n, uint32_t *slow)
{
    uint32_t id;
    if (n > 0) {
        id = stack_two_ways(n - 1, slow);
    } else {
        *slow = gmt_stack_capture(NULL);
        __asm__ volatile("" ::: "memory");
        id = stack_library_layer();
    }
    __asm__ volatile("" ::: "memory");
    return id;
}

struct two_ways {
    uint32_t fast[3], slow[3];
};
static const int levels[3] = { 0, 7, 40 };

static void *two_ways_all(void *arg)
{
    struct two_ways *w = arg;
    for (int i = 0; i < 3; i++)
        w->fast[i] = stack_two_ways(levels[i], &w->slow[i]);
    return NULL;
}

static void expect_two_ways_agree(const struct stacks *s, const struct two_ways *w);

Test(stack, from_hook_frame_equals_full_unwind)
{
    start_trace(256);
    unsigned long slow_before = atomic_load(&gmt_stack_slow_captures);
    struct two_ways w, t;
    two_ways_all(&w);
    /* and on a thread of its own: its outermost frames are clone's, not main's */
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, two_ways_all, &t), 0);
    pthread_join(th, NULL);
    cr_expect_eq(atomic_load(&gmt_stack_slow_captures), slow_before,
                 "libunwind's fast tracer gave up: the slow unwinder ran");
    struct stacks s;
    finish_and_read(&s);
    expect_two_ways_agree(&s, &w);
    expect_two_ways_agree(&s, &t);
}

static void expect_two_ways_agree(const struct stacks *s, const struct two_ways *w)
{
    const uint32_t *fast = w->fast, *slow = w->slow;
    for (int i = 0; i < 3; i++) {
        uint32_t df, ds;
        const uint64_t *f = ips_of(s, fast[i], &df), *u = ips_of(s, slow[i], &ds);
        cr_expect_eq(df, ds, "recursion %d: %u frames from the frame, %u unwound", levels[i],
                     df, ds);
        cr_expect_gt(df, (uint32_t)levels[i] + 2);
        cr_expect_str_eq(function_of(f[0]), "stack_two_ways");
        cr_expect_str_eq(function_of(u[0]), "stack_two_ways");
        cr_expect_neq(f[0], u[0], "two call sites");
        for (uint32_t k = 1; k < df && k < ds; k++)
            cr_expect_eq(f[k], u[k], "recursion %d frame %u: %#lx vs %#lx", levels[i], k,
                         (unsigned long)f[k], (unsigned long)u[k]);
    }
}

#define THREADS 8
#define ROUNDS 500

static pthread_barrier_t barrier;

struct worker {
    uint32_t ids_a[ROUNDS], ids_b[ROUNDS];
    uint32_t a, b;
    bool consistent;
};

static void *work(void *arg)
{
    struct worker *w = arg;
    w->consistent = true;
    pthread_barrier_wait(&barrier);
    for (int i = 0; i < ROUNDS; i++) {
        capture_n(stack_site_a, 1, &w->ids_a[i]);
        capture_n(stack_site_b, 1, &w->ids_b[i]);
    }
    w->a = w->ids_a[0];
    w->b = w->ids_b[0];
    for (int i = 1; i < ROUNDS; i++)
        if (w->ids_a[i] != w->a || w->ids_b[i] != w->b)
            w->consistent = false;
    return NULL;
}

Test(stack, concurrent_captures_agree_on_ids)
{
    start_trace(48);
    /* The main thread traces too (its stack differs from the workers'), as it would in
     * a real program; the writer then ends the file from this thread's buffer. */
    uint32_t main_id = stack_site_c();
    pthread_t t[THREADS];
    struct worker w[THREADS];
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, work, &w[i]), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    for (int i = 0; i < THREADS; i++) {
        cr_expect(w[i].consistent, "thread %d saw its ids change", i);
        cr_expect_neq(w[i].a, 0);
        cr_expect_neq(w[i].a, w[i].b);
        cr_expect_eq(w[i].a, w[0].a, "thread %d: site a", i);
        cr_expect_eq(w[i].b, w[0].b, "thread %d: site b", i);
    }
    struct stacks s;
    finish_and_read(&s);
    cr_expect_eq(s.n, 3, "one STACK record per stack, whichever thread won: %zu", s.n);
    cr_expect_eq(count_id(&s, main_id), 1);
    cr_expect_eq(count_id(&s, w[0].a), 1);
    cr_expect_eq(count_id(&s, w[0].b), 1);
}

#define DEPTHS 16

static uint32_t depth_ids[THREADS][DEPTHS];

static void *work_depths(void *arg)
{
    uint32_t *ids = arg;
    pthread_barrier_wait(&barrier);
    for (int round = 0; round < 50; round++)
        for (int d = 0; d < DEPTHS; d++) {
            uint32_t id = stack_recurse(d);
            if (round == 0)
                ids[d] = id;
            else if (id != ids[d])
                ids[d] = 0; /* changed: reported as a failure below */
        }
    return NULL;
}

Test(stack, concurrent_inserts_of_different_stacks)
{
    start_trace(48);
    uint32_t main_id = stack_site_c();
    pthread_t t[THREADS];
    pthread_barrier_init(&barrier, NULL, THREADS);
    for (int i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, work_depths, depth_ids[i]), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    for (int d = 0; d < DEPTHS; d++) {
        cr_expect_neq(depth_ids[0][d], 0, "depth %d", d);
        for (int i = 1; i < THREADS; i++)
            cr_expect_eq(depth_ids[i][d], depth_ids[0][d], "thread %d depth %d", i, d);
        for (int e = 0; e < d; e++)
            cr_expect_neq(depth_ids[0][e], depth_ids[0][d]);
    }
    struct stacks s;
    finish_and_read(&s);
    cr_expect_eq(s.n, DEPTHS + 1, "STACK records: %zu", s.n);
    for (int d = 0; d < DEPTHS; d++)
        cr_expect_eq(count_id(&s, depth_ids[0][d]), 1);
    cr_expect_eq(count_id(&s, main_id), 1);
    for (size_t i = 0; i < s.n; i++)
        cr_expect(s.id[i] >= 1 && s.id[i] <= DEPTHS + 1, "ids are dense: %u", s.id[i]);
}

Test(stack, fork_child_defines_its_stacks_again)
{
    start_trace(48);
    uint32_t a = stack_site_a();
    char child_path[160];
    snprintf(child_path, sizeof child_path, "%s/child.gmt", dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        gmt_writer_fork_child();
        gmt_opt.output = child_path;
        int ok = gmt_writer_ready() && stack_site_a() == 1 && stack_site_b() == 2;
        gmt_writer_finish();
        _exit(ok ? 0 : 1);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child's ids start again at 1");
    /* the child's own file holds both definitions */
    char parent_path[128];
    strcpy(parent_path, path);
    strcpy(path, child_path);
    struct stacks s;
    gmt_writer_finish(); /* parent's, so finish_and_read's finish is a no-op */
    finish_and_read(&s);
    cr_expect_eq(s.n, 2);
    cr_expect_eq(count_id(&s, 1), 1);
    cr_expect_eq(count_id(&s, 2), 1);
    cr_expect_eq(a, 1);
    unlink(parent_path);
    rmdir(dir);
}

/* The one-time setup gate (tables.c): a signal handler on the thread doing a setup is
 * told "not now" instead of waiting for itself; another thread waits for the end. */
static struct gmt_once gate;
static int in_handler_got = -1;
static void gate_handler(int sig)
{
    (void)sig;
    in_handler_got = gmt_once_enter(&gate);
}
static void *gate_waiter(void *arg)
{
    *(int *)arg = gmt_once_enter(&gate);
    return NULL;
}

Test(stack, setup_gate_tells_a_handler_of_its_own_thread_not_now, .timeout = 10)
{
    cr_assert_eq(gmt_once_enter(&gate), GMT_ONCE_BUSY, "the first caller does the setup");
    signal(SIGUSR2, gate_handler);
    raise(SIGUSR2);
    cr_expect_eq(in_handler_got, GMT_ONCE_LATER, "the handler inside the setup: %d", in_handler_got);
    int other = -1;
    pthread_t th;
    cr_assert_eq(pthread_create(&th, NULL, gate_waiter, &other), 0);
    usleep(20000);
    cr_expect_eq(other, -1, "another thread waits while the setup runs");
    gmt_once_leave(&gate, true);
    pthread_join(th, NULL);
    cr_expect_eq(other, GMT_ONCE_READY);
    cr_expect_eq(gmt_once_enter(&gate), GMT_ONCE_READY);
    raise(SIGUSR2);
    cr_expect_eq(in_handler_got, GMT_ONCE_READY, "after it, a handler finds it done");
}
