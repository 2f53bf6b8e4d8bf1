/* sites.c: a trace's allocation sites as a person reads them: the stacks whose lines print alike at the frames shown are one site, their figures summed. */
#include "sites.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "holders.h"
#include "stacks.h"
#include "util.h"

int gmt_site_frames(const struct gmt_report_opts *o)
{
    return o && o->frames ? o->frames : 3;
}

int gmt_site_text_frames(const struct gmt_report_opts *o)
{
    return o->frames ? o->frames : o->width >= 140 ? 5 : 3;
}

static bool in_view(const struct gmt_analysis *a, const struct gmt_site_row *s, enum gmt_site_view v)
{
    switch (v) {
    case GMT_SITES_LIVE:
        return s->live_at_peak || s->ever_live;
    case GMT_SITES_LEAKS:
        return s->live_at_end && !gmt_site_holder(a, s);
    default:
        return s->allocs != 0;
    }
}

static void add_row(struct gmt_site_row *sum, const struct gmt_site_row *s)
{
    sum->allocs += s->allocs;
    sum->bytes_total += s->bytes_total;
    sum->live_at_peak += s->live_at_peak;
    sum->live_at_end += s->live_at_end;
    sum->count_at_end += s->count_at_end;
    sum->ever_live |= s->ever_live;
}

static int cmp_peak(const void *x, const void *y)
{
    const struct gmt_site_row *a = &((const struct gmt_site_group *)x)->sum;
    const struct gmt_site_row *b = &((const struct gmt_site_group *)y)->sum;
    if (a->live_at_peak != b->live_at_peak)
        return a->live_at_peak > b->live_at_peak ? -1 : 1;
    if (a->live_at_end != b->live_at_end)
        return a->live_at_end > b->live_at_end ? -1 : 1;
    if (a->bytes_total != b->bytes_total)
        return a->bytes_total > b->bytes_total ? -1 : 1;
    return (a->stack > b->stack) - (a->stack < b->stack);
}

static int cmp_end(const void *x, const void *y)
{
    const struct gmt_site_row *a = &((const struct gmt_site_group *)x)->sum;
    const struct gmt_site_row *b = &((const struct gmt_site_group *)y)->sum;
    if (a->live_at_end != b->live_at_end)
        return a->live_at_end > b->live_at_end ? -1 : 1;
    return cmp_peak(x, y);
}

/* The groups of rows[0..m) (largest first), whose lines are lines[] and groups group[]
 * (gmt_site_groups), into out; the lines the groups keep are taken out of lines[]. */
static int build(const struct gmt_site_row *rows, size_t m, char **lines, const size_t *group,
                 struct gmt_site_groups *out)
{
    size_t *at = malloc((m ? m : 1) * sizeof *at);
    size_t *count = calloc(m ? m : 1, sizeof *count);
    out->g = calloc(m ? m : 1, sizeof *out->g);
    if (!at || !count || !out->g) {
        free(at);
        free(count);
        return -ENOMEM;
    }
    for (size_t j = 0; j < m; j++)
        count[group[j]]++;
    int rc = 0;
    for (size_t j = 0; j < m && !rc; j++) {
        const struct gmt_site_row *s = &rows[j];
        if (group[j] == j) {
            struct gmt_site_group *g = &out->g[out->n];
            at[j] = out->n++;
            g->sum = *s;
            g->line = lines[j];
            lines[j] = NULL;
            if (!(g->stacks = malloc(count[j] * sizeof *g->stacks)))
                rc = -ENOMEM;
            else
                g->stacks[g->n_stacks++] = s->stack;
            continue;
        }
        struct gmt_site_group *g = &out->g[at[group[j]]];
        add_row(&g->sum, s);
        if (g->stacks)
            g->stacks[g->n_stacks++] = s->stack;
    }
    free(at);
    free(count);
    return rc;
}

/* rows[0..m), largest first, grouped by their lines at `frames` into out, sorted (by_end:
 * by live_at_end first). 0 or -ENOMEM (out then empty). */
static int group_rows(const struct gmt_analysis *a, const struct gmt_site_row *rows, size_t m,
                      int frames, bool by_end, struct gmt_site_groups *out)
{
    memset(out, 0, sizeof *out);
    size_t *group = malloc((m ? m : 1) * sizeof *group);
    struct gmt_site_in *in = calloc(m ? m : 1, sizeof *in);
    char **lines = calloc(m ? m : 1, sizeof *lines);
    int rc = group && in && lines ? 0 : -ENOMEM;
    for (size_t j = 0; !rc && j < m; j++)
        in[j] = (struct gmt_site_in){rows[j].stack, rows[j].api, rows[j].cat};
    if (!rc && gmt_site_groups(a, in, m, frames, lines, group))
        rc = -ENOMEM;
    else if (!rc) {
        rc = build(rows, m, lines, group, out);
        gmt_site_lines_free(lines, m);
    }
    if (!rc && out->n)
        gmt_sort(out->g, out->n, sizeof *out->g, by_end ? cmp_end : cmp_peak);
    if (rc)
        gmt_site_groups_free(out);
    free(group);
    free(in);
    free(lines);
    return rc;
}

int gmt_report_site_groups(const struct gmt_analysis *a, enum gmt_site_view view, int frames,
                           struct gmt_site_groups *out)
{
    const struct gmt_report *rep = &a->rep;
    struct gmt_site_row *rows = malloc((rep->n_sites ? rep->n_sites : 1) * sizeof *rows);
    if (!rows) {
        memset(out, 0, sizeof *out);
        return -ENOMEM;
    }
    size_t m = 0;
    for (size_t i = 0; i < rep->n_sites; i++)
        if (in_view(a, &rep->sites[i], view))
            rows[m++] = rep->sites[i];
    int rc = group_rows(a, rows, m, frames, view == GMT_SITES_LEAKS, out);
    free(rows);
    return rc;
}

int gmt_block_site_groups(const struct gmt_analysis *a, bool leaks, int frames,
                          struct gmt_site_groups *out)
{
    const struct gmt_blocks *B = &a->blocks;
    struct gmt_site_row *rows = malloc((B->n_sites ? B->n_sites : 1) * sizeof *rows);
    if (!rows) {
        memset(out, 0, sizeof *out);
        return -ENOMEM;
    }
    size_t m = 0;
    for (size_t i = 0; i < B->n_sites; i++) {
        const struct gmt_block_site *s = &B->sites[i];
        if (leaks ? !s->live_at_end : !s->live_at_peak && !s->allocs)
            continue;
        rows[m++] = (struct gmt_site_row){.stack = s->stack, .allocs = s->allocs,
                                          .bytes_total = s->bytes_total,
                                          .live_at_peak = s->live_at_peak,
                                          .live_at_end = s->live_at_end,
                                          .count_at_end = s->count_at_end,
                                          .ever_live = s->bytes_total != 0};
    }
    int rc = group_rows(a, rows, m, frames, leaks, out);
    free(rows);
    return rc;
}

void gmt_site_groups_free(struct gmt_site_groups *s)
{
    for (size_t i = 0; s->g && i < s->n; i++) {
        free(s->g[i].line);
        free(s->g[i].stacks);
    }
    free(s->g);
    memset(s, 0, sizeof *s);
}

/* Each group's holder, from its sum (its largest stack and category). */
static void holders(const struct gmt_analysis *a, struct gmt_site_groups *G)
{
    for (size_t i = 0; i < G->n; i++) {
        const struct gmt_site_row *s = &G->g[i].sum;
        G->g[i].holder = s->live_at_end ? gmt_site_holder(a, s) : NULL;
    }
}

void gmt_sites_fill(const struct gmt_analysis *a, struct gmt_sites *s)
{
    memset(s, 0, sizeof *s);
    s->frames = gmt_site_frames(a->opts);
    s->text_frames = gmt_site_text_frames(a->opts);
    s->all.rc = gmt_report_site_groups(a, GMT_SITES_ALL, s->frames, &s->all);
    s->leaks.rc = gmt_report_site_groups(a, GMT_SITES_LEAKS, s->frames, &s->leaks);
    holders(a, &s->all);
    holders(a, &s->leaks);
    s->live.rc = gmt_report_site_groups(a, GMT_SITES_LIVE, s->text_frames, &s->live);
    if (s->text_frames != s->frames)
        s->text_leaks.rc = gmt_report_site_groups(a, GMT_SITES_LEAKS, s->text_frames, &s->text_leaks);
    s->blocks.rc = gmt_block_site_groups(a, false, s->frames, &s->blocks);
    s->block_leaks.rc = gmt_block_site_groups(a, true, s->frames, &s->block_leaks);
}

void gmt_sites_free(struct gmt_sites *s)
{
    gmt_site_groups_free(&s->all);
    gmt_site_groups_free(&s->leaks);
    gmt_site_groups_free(&s->live);
    gmt_site_groups_free(&s->text_leaks);
    gmt_site_groups_free(&s->blocks);
    gmt_site_groups_free(&s->block_leaks);
}
