/* test_nccl_comms.c: COMM records of non-blocking communicators on the fake NCCL: written once the communicator is ready, never while its init runs, never for one whose init failed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "hook_run.h"
#include "trace_format.h"

struct comms {
    struct gmt_rec_comm rec[4];
    int n;
};

static void visit_comm(const struct gmt_rec *h, void *arg)
{
    struct comms *c = arg;
    if (h->type == GMT_REC_COMM && c->n < 4)
        memcpy(&c->rec[c->n++], h, sizeof c->rec[0]);
}

/* `out` with each NCCL log line cut to what follows its host:pid:tid [device] prefix. */
static void unprefixed(const char *out, char *buf, size_t len)
{
    size_t n = 0;
    for (const char *p = out; *p && n + 1 < len;) {
        const char *end = strchr(p, '\n');
        size_t l = end ? (size_t)(end - p + 1) : strlen(p);
        const char *tag = strstr(p, " NCCL WARN ");
        if (tag && tag < p + l) {
            l -= (size_t)(tag + 1 - p);
            p = tag + 1;
        }
        if (l > len - 1 - n)
            l = len - 1 - n;
        memcpy(buf + n, p, l);
        n += l;
        p += l;
    }
    buf[n] = 0;
}

static int count_of(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
        n++;
    return n;
}

/* Runs nccl_scenarios MODE untraced, then traced: the same output, WARN lines included
 * (the tracer asked nothing NCCL warns about), and the trace's COMM records. */
static void run_mode(const char *mode, struct hook_run *traced, struct comms *c)
{
    cr_assert_eq(setenv("NCCL_DEBUG", "WARN", 1), 0);
    static struct hook_run plain;
    char *argv[] = { NCCL_PROG, (char *)mode, NULL };
    hook_run(&plain, false, argv);
    cr_assert_eq(plain.status, 0, "%s untraced: %s", mode, plain.out);
    hook_run(traced, true, argv);
    cr_assert_eq(traced->status, 0, "%s traced: %s", mode, traced->out);
    static char a[HOOK_OUT_MAX], b[HOOK_OUT_MAX];
    unprefixed(plain.out, a, sizeof a);
    unprefixed(traced->out, b, sizeof b);
    cr_assert_str_eq(b, a, "%s: the output differs with the tracer", mode);
    memset(c, 0, sizeof *c);
    struct hook_counts counts;
    hook_read(traced->trace, &counts, visit_comm, c);
    cr_expect(counts.complete, "%s: the trace has no END", mode);
}

/* Rank 0's init waits for rank 1, so its communicator is still initializing when the
 * program registers a buffer and calls all_reduce on it: both fail, each with NCCL's WARN.
 * Its COMM record is written at the first call that succeeded on it, with what NCCL then
 * says about it. */
Test(nccl_comms, a_nonblocking_communicator_is_described_once_ready)
{
    static struct hook_run traced;
    struct comms c;
    run_mode("nonblocking", &traced, &c);
    cr_expect(strstr(traced.out, "init rank 0 r=7\nrank 0 state=7\n") != NULL, "%s", traced.out);
    cr_expect(strstr(traced.out, "register while initializing r=4\n") != NULL, "%s", traced.out);
    cr_expect(strstr(traced.out, "all_reduce while initializing r=4\n") != NULL, "%s", traced.out);
    cr_expect(strstr(traced.out, "rank 0 state=0\nregister r=0\n") != NULL, "%s", traced.out);
    cr_expect_eq(count_of(traced.out, "NCCL WARN"), 2, "the program's two calls warn:\n%s",
                 traced.out);
    cr_assert_eq(c.n, 2, "%d COMM records, want 2", c.n);
    /* rank 1's blocking init is described at once, rank 0 once it is ready */
    const struct gmt_rec_comm *r1 = &c.rec[0], *r0 = &c.rec[1];
    cr_expect(r1->rank == 1 && r1->nranks == 2 && r1->device == 1,
              "rank 1: rank %d of %d on device %d", r1->rank, r1->nranks, r1->device);
    cr_expect(r0->rank == 0 && r0->nranks == 2 && r0->device == 0,
              "rank 0: rank %d of %d on device %d", r0->rank, r0->nranks, r0->device);
    cr_expect_neq(r0->unique_id_hash, 0u);
    cr_expect_eq(r0->unique_id_hash, r1->unique_id_hash, "one clique, one unique id");
    cr_expect_neq(r0->comm, r1->comm);
    hook_cleanup(&traced);
}

/* Rank 0 of 2 alone: its init gives up waiting for its peer, and every later call fails
 * with that error. A communicator that never became ready is not described. */
Test(nccl_comms, a_communicator_whose_nonblocking_init_failed_is_never_described)
{
    cr_assert_eq(setenv("FAKENCCL_TIMEOUT_S", "1", 1), 0);
    static struct hook_run traced;
    struct comms c;
    run_mode("nonblocking_fails", &traced, &c);
    cr_expect(strstr(traced.out, "init rank 0 r=7\nrank 0 state=6\nregister r=6\n"
                                 "all_reduce r=6\nabort r=0\n") != NULL,
              "%s", traced.out);
    cr_expect_eq(count_of(traced.out, "NCCL WARN"), 0, "%s", traced.out);
    cr_expect_eq(c.n, 0, "%d COMM records for a communicator never ready (rank %d)", c.n,
                 c.n ? c.rec[0].rank : 0);
    hook_cleanup(&traced);
}
