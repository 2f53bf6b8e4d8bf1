/* test_nccl_comms.c: COMM records of non-blocking communicators on the fake NCCL: written once the communicator is ready, never while its init runs, never for one whose init failed. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook_run.h"
#include "trace_format.h"

struct comms {
    struct gmt_rec_comm rec[4];
    int n;
    struct gmt_rec_nccl_memstats stats[8]; /* NCCL_MEMSTATS, in file order */
    int n_stats;
    int stats_before_comm; /* NCCL_MEMSTATS INIT of a communicator with no COMM record yet */
};

static void visit_comm(const struct gmt_rec *h, void *arg)
{
    struct comms *c = arg;
    if (h->type == GMT_REC_COMM && c->n < 4)
        memcpy(&c->rec[c->n++], h, sizeof c->rec[0]);
    if (h->type == GMT_REC_NCCL_MEMSTATS && c->n_stats < 8) {
        const struct gmt_rec_nccl_memstats *m = (const void *)h;
        bool described = false;
        for (int i = 0; i < c->n; i++)
            described = described || c->rec[i].comm == m->comm;
        c->stats_before_comm += h->aux == GMT_MEMSTATS_INIT && !described;
        memcpy(&c->stats[c->n_stats++], h, sizeof c->stats[0]);
    }
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

/* ---- with the NCCL that has ncclCommMemStats (2.29.7) ---- */

/* Runs the scenarios on the fake NCCL 2.29.7: its libnccl.so.2 first on the library path. */
static void with_memstats_nccl(void)
{
    static char lp[PATH_MAX + 32];
    char prog[PATH_MAX];
    snprintf(prog, sizeof prog, "%s", NCCL_PROG);
    /* NCCL_PROG is BUILD/fakes/progs/nccl_scenarios; the 2.29.7 NCCL is BUILD/fakes/nccl-memstats */
    char *cut = strstr(prog, "/progs/nccl_scenarios");
    cr_assert_not_null(cut);
    *cut = 0;
    snprintf(lp, sizeof lp, "%s/nccl-memstats", prog);
    cr_assert_eq(setenv("LD_LIBRARY_PATH", lp, 1), 0);
}

/* NCCL answers ncclCommMemStats only for a communicator that is ready, and warns about one
 * still initializing. The library asks once the communicator is ready (its COMM record):
 * no WARN of its own, an INIT count for each communicator after its COMM record, every
 * figure known, and one more count before each destroy. */
Test(nccl_comms, a_nonblocking_communicator_is_counted_by_nccl_once_ready)
{
    with_memstats_nccl();
    static struct hook_run traced;
    struct comms c;
    run_mode("nonblocking", &traced, &c);
    cr_expect_eq(count_of(traced.out, "NCCL WARN"), 2, "the program's two calls warn, no more:\n%s", traced.out);
    cr_assert_eq(c.n, 2, "%d COMM records, want 2", c.n);
    cr_expect_eq(c.stats_before_comm, 0, "a count asked before its communicator was ready");
    int init = 0, destroy = 0;
    for (int i = 0; i < c.n_stats; i++) {
        const struct gmt_rec_nccl_memstats *m = &c.stats[i];
        init += m->h.aux == GMT_MEMSTATS_INIT;
        destroy += m->h.aux == GMT_MEMSTATS_DESTROY;
        cr_expect(m->total_bytes != GMT_MEMSTATS_UNKNOWN && m->total_bytes > 0 &&
                      m->persist_bytes != GMT_MEMSTATS_UNKNOWN && m->suspend_bytes != GMT_MEMSTATS_UNKNOWN,
                  "count %d (phase %d) of comm %#llx has unknown figures", i, m->h.aux,
                  (unsigned long long)m->comm);
    }
    cr_expect_eq(init, 2, "%d INIT counts, want one per communicator", init);
    cr_expect_eq(destroy, 2, "%d DESTROY counts, want one per communicator", destroy);
    /* rank 0's (the non-blocking one's) INIT count is of rank 0's communicator */
    bool r0 = false;
    for (int i = 0; i < c.n_stats; i++)
        r0 = r0 || (c.stats[i].h.aux == GMT_MEMSTATS_INIT && c.stats[i].comm == c.rec[1].comm &&
                    c.stats[i].device == 0);
    cr_expect(r0, "no INIT count of the non-blocking communicator on device 0");
    hook_cleanup(&traced);
}

/* Aborted while its init still runs: NCCL is never asked (it would warn), no count. */
Test(nccl_comms, a_communicator_aborted_while_initializing_is_never_counted)
{
    with_memstats_nccl();
    cr_assert_eq(setenv("FAKENCCL_TIMEOUT_S", "1", 1), 0);
    static struct hook_run traced;
    struct comms c;
    run_mode("nonblocking_abort", &traced, &c);
    cr_expect(strstr(traced.out, "init rank 0 r=7\nrank 0 state=7\nabort r=0\n") != NULL, "%s", traced.out);
    cr_expect_eq(count_of(traced.out, "NCCL WARN"), 0, "%s", traced.out);
    cr_expect_eq(c.n, 0, "%d COMM records", c.n);
    cr_expect_eq(c.n_stats, 0, "%d NCCL_MEMSTATS of a communicator never ready", c.n_stats);
    hook_cleanup(&traced);
}
