/* fuzz_models.c: libFuzzer target: merge, diff and check's models over one or two traces made of the input, with every renderer (JSON must parse). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "baseline.h"
#include "diff.h"
#include "fuzz_common.h"
#include "growth.h"
#include "merge.h"
#include "metrics.h"
#include "check_ranks.h"
#include "render_check.h"
#include "render_diff.h"
#include "render_merge.h"

static void drop(struct gmt_msgs *m)
{
    FILE *f = fopen("/dev/null", "w");
    gmt_msgs_print(m, f ? f : stderr);
    if (f)
        fclose(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* two traces: the input, and its first two thirds (a trace cut short, or a
     * different job), so that pairs, growth and "only in one" are all reached */
    char pa[64], pb[64];
    int fa = fuzz_file(data, size, pa, sizeof pa);
    int fb = fuzz_file(data, size - size / 3, pb, sizeof pb);
    if (fa < 0 || fb < 0)
        goto out;
    struct gmt_report_opts ro;
    gmt_report_opts_init(&ro);
    ro.no_symbols = true;
    char *paths[2] = { pa, pb };
    struct gmt_msgs msgs = GMT_MSGS_INIT;

    struct gmt_merge m;
    if (gmt_merge_of(&m, paths, 2, &ro, &msgs) != -ENOMEM) {
        struct fuzz_out o;
        char why[512];
        (void)gmt_merge_one_run(&m, why, sizeof why);
        gmt_render_merge_text(fuzz_out_open(&o), &m, 10);
        fuzz_out_close(&o, 0);
        gmt_render_merge_json(fuzz_out_open(&o), &m, 10);
        fuzz_out_close(&o, 1);
        gmt_merge_free(&m);
    }
    drop(&msgs);

    struct gmt_diff d;
    if (gmt_diff_of(&d, pb, pa, &ro, 8, &msgs) == 0) {
        struct fuzz_out o;
        gmt_render_diff_text(fuzz_out_open(&o), &d, 5, true, false);
        fuzz_out_close(&o, 0);
        gmt_render_diff_json(fuzz_out_open(&o), &d);
        fuzz_out_close(&o, 1);
    }
    gmt_diff_free(&d);
    drop(&msgs);

    /* check: a baseline written from the second, read back, against the first */
    struct gmt_metrics mb = {0}, ma = {0};
    if (gmt_metrics_from_paths(&mb, paths + 1, 1, &ro, NULL, &msgs) == 0 &&
        gmt_metrics_from_paths(&ma, paths, 1, &ro, NULL, &msgs) == 0) {
        gmt_metrics_sort(&mb);
        gmt_metrics_sort(&ma);
        struct gmt_baseline b = { .metrics = mb };
        struct fuzz_out o;
        gmt_baseline_write(fuzz_out_open(&o), &b);
        fclose(o.f);
        struct gmt_baseline back;
        char err[256];
        /* what --write-baseline writes, check --baseline must read */
        if (gmt_baseline_parse(&back, o.buf, o.len, err, sizeof err) != 0) {
            fprintf(stderr, "baseline does not read back: %s\n%.*s\n", err, (int)o.len, o.buf);
            abort();
        }
        free(o.buf);
        struct gmt_limits cli = {0};
        struct gmt_verdicts vs;
        if (gmt_verdicts_of(&vs, &back.metrics, &back.limits, &ma, &cli) == 0) {
            gmt_render_check_text(fuzz_out_open(&o), &vs, true, true, NULL);
            fuzz_out_close(&o, 0);
            gmt_render_check_step_summary(fuzz_out_open(&o), &vs);
            fuzz_out_close(&o, 0);
            char junit[64];
            snprintf(junit, sizeof junit, "/dev/null");
            gmt_render_check_junit(junit, &vs, 0.0);
            gmt_verdicts_free(&vs);
        }
        /* the job's min/median/max across ranks, checked against itself */
        struct gmt_metrics agg;
        if (gmt_metrics_across_ranks(&agg, &ma) == 0) {
            if (gmt_verdicts_of(&vs, &agg, &back.limits, &agg, &cli) == 0) {
                if (vs.fails)
                    abort(); /* a job never outgrows itself */
                gmt_verdicts_free(&vs);
            }
            gmt_metrics_free(&agg);
        }
        gmt_baseline_free(&back);
    }
    gmt_metrics_free(&ma);
    gmt_metrics_free(&mb);
    drop(&msgs);
out:
    if (fa >= 0)
        close(fa);
    if (fb >= 0)
        close(fb);
    return 0;
}
