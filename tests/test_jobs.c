/* test_jobs.c: the job driver (tools/jobs.c): every trace analysed once, here or in workers, handed on in order, failures reported and skipped. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs.h"

#define GOOD "tests/golden/demo-r0.gmt"
#define N 40 /* above the driver's threshold for workers */

struct seen {
    size_t order[N], n_taken, n_traced;
    pid_t here, from[N];
    size_t fail_at;            /* trace() fails for this index, N: never */
    char *errs[N];
};

static void keep(void *ctx, size_t i, const char *why)
{
    struct seen *S = ctx;
    S->errs[i] = strdup(why);
}

static int trace_cb(void *ctx, size_t i, const struct gmt_analysis *a, FILE *out, char *err,
                    size_t errlen)
{
    struct seen *S = ctx;
    if (i == S->fail_at) {
        snprintf(err, errlen, "trace %zu refused", i);
        return -1;
    }
    if (!out) {                /* in-process: the order itself */
        S->order[S->n_traced++] = i;
        return 0;
    }
    pid_t p = getpid();
    fwrite(&i, sizeof i, 1, out);
    fwrite(&p, sizeof p, 1, out);
    fprintf(out, "%s", a->t.path);
    return 0;
}

static int take_cb(void *ctx, size_t i, const char *p, size_t len)
{
    struct seen *S = ctx;
    size_t j;
    cr_assert_geq(len, sizeof j + sizeof(pid_t));
    memcpy(&j, p, sizeof j);
    cr_assert_eq(j, i, "take() got trace %zu's bytes for trace %zu", j, i);
    memcpy(&S->from[S->n_taken], p + sizeof j, sizeof(pid_t));
    cr_assert_eq(len - sizeof j - sizeof(pid_t), strlen(GOOD));
    S->order[S->n_taken++] = i;
    return 0;
}

static char **paths(const char *bad_at_7_and_30)
{
    char **f = calloc(N, sizeof *f);
    for (size_t i = 0; i < N; i++)
        f[i] = (char *)((i == 7 || i == 30) ? bad_at_7_and_30 : GOOD);
    return f;
}

Test(jobs, hands_on_in_order_and_skips_what_cannot_be_read)
{
    struct seen S = {.here = getpid(), .fail_at = 12};
    char **f = paths("tests/golden/no-such-trace.gmt");
    bool unread[N] = {0};
    struct gmt_report_opts ro;
    gmt_report_opts_init(&ro);
    ro.no_symbols = true;
    const struct gmt_jobs J = {.files = f, .n = N, .ro = &ro, .trace = trace_cb, .take = take_cb,
                               .ctx = &S, .unread = unread, .skipped = keep};
    struct gmt_jobs_result res;
    cr_assert_eq(gmt_jobs_run(&J, &res), 0);
    cr_assert_eq(res.done, N - 3);
    cr_assert_eq(res.skipped, 3);
    size_t k = 0;
    for (size_t i = 0; i < N; i++) {
        bool skipped = i == 7 || i == 30 || i == 12;
        cr_assert_eq(unread[i], skipped, "trace %zu", i);
        cr_assert_eq(S.errs[i] != NULL, skipped, "trace %zu", i);
        if (!skipped)
            cr_assert_eq(S.order[k++], i, "the %zu-th taken is not trace %zu", k - 1, i);
    }
    cr_assert(strstr(S.errs[7], "no-such-trace.gmt"), "%s", S.errs[7]);
    cr_assert_str_eq(S.errs[12], "trace 12 refused");
    if (sysconf(_SC_NPROCESSORS_ONLN) > 1) {
        cr_assert_geq(res.workers, 2);
        for (size_t i = 0; i < S.n_taken; i++)
            cr_assert_neq(S.from[i], S.here, "a trace was analysed here, not in a worker");
    }
    for (size_t i = 0; i < N; i++)
        free(S.errs[i]);
    free(f);
}

Test(jobs, without_take_runs_each_trace_here_in_order)
{
    struct seen S = {.here = getpid(), .fail_at = N};
    char **f = paths("tests/golden/no-such-trace.gmt");
    bool unread[N] = {0};
    struct gmt_report_opts ro;
    gmt_report_opts_init(&ro);
    ro.no_symbols = true;
    const struct gmt_jobs J = {.files = f, .n = N, .ro = &ro, .trace = trace_cb, .ctx = &S,
                               .unread = unread};
    struct gmt_jobs_result res;
    cr_assert_eq(gmt_jobs_run(&J, &res), 0);
    cr_assert_eq(res.workers, 0);
    cr_assert_eq(res.done, N - 2);
    cr_assert_eq(S.n_traced, N - 2);
    for (size_t i = 0, k = 0; i < N; i++)
        if (i != 7 && i != 30)
            cr_assert_eq(S.order[k++], i);
    cr_assert(unread[7] && unread[30] && !unread[0]);
    free(f);
}

struct kept {
    struct gmt_analysis a[N];
    size_t n;
};

/* Takes every analysis but the third's, which it refuses after looking at it. */
static int keep_cb(void *ctx, size_t i, const struct gmt_analysis *a, FILE *out, char *err,
                   size_t errlen)
{
    struct kept *K = ctx;
    cr_assert_null(out);
    if (i == 2) {
        snprintf(err, errlen, "trace %zu refused", i);
        return -1;
    }
    K->a[K->n++] = *a;
    return 0;
}

Test(jobs, with_keep_what_trace_took_outlives_the_run)
{
    struct kept *K = calloc(1, sizeof *K);
    char *f[4] = {GOOD, "tests/golden/demo-r1.gmt", GOOD, "tests/golden/no-such-trace.gmt"};
    bool unread[4] = {0};
    struct gmt_report_opts ro;
    gmt_report_opts_init(&ro);
    ro.no_symbols = true;
    const struct gmt_jobs J = {.files = f, .n = 4, .ro = &ro, .trace = keep_cb, .ctx = K,
                               .keep = true, .unread = unread};
    struct gmt_jobs_result res;
    cr_assert_eq(gmt_jobs_run(&J, &res), 0);
    cr_assert_eq(res.done, 2);
    cr_assert_eq(res.skipped, 2);
    cr_assert(!unread[0] && !unread[1] && unread[2] && unread[3]);
    cr_assert_eq(K->n, 2);
    /* still whole after the run: the driver freed neither */
    cr_assert_str_eq(K->a[0].t.path, GOOD);
    cr_assert_str_eq(K->a[1].t.path, "tests/golden/demo-r1.gmt");
    cr_assert_gt(K->a[1].rep.n_dev, 0);
    cr_assert_gt(K->a[1].t.n_stacks, 0);
    for (size_t i = 0; i < K->n; i++)
        gmt_analysis_free(&K->a[i]);
    free(K);
}
