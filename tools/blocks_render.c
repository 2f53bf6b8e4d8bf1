/* blocks_render.c: the summary's section on PyTorch's caching allocator (blocks.h's model), as text and as the JSON document's "pytorch" member. */
#include "blocks.h"

#include <inttypes.h>

#include "report.h"
#include "sites.h"
#include "stacks.h"
#include "util.h"

static double rel_s(const struct gmt_trace *t, uint64_t time)
{
    return time > t->t_first ? (double)(time - t->t_first) / 1e9 : 0.0;
}

static int text_frames(const struct gmt_analysis *a)
{
    return a->opts && a->opts->frames ? a->opts->frames : 3;
}

static long text_top(const struct gmt_analysis *a)
{
    return a->opts && a->opts->top > 0 ? a->opts->top : 10;
}

static void text_devices(FILE *out, const struct gmt_analysis *a)
{
    const struct gmt_blocks *B = &a->blocks;
    for (size_t i = 0; i < B->n_dev; i++) {
        const struct gmt_block_dev *d = &B->dev[i];
        char b1[32], b2[32], b3[32], b4[32], b5[32];
        fprintf(out, "  device %d: PyTorch allocated peak %s at %.3f s (reserved then %s); reserved peak %s\n",
                d->device, gmt_fmt_bytes(b1, sizeof b1, d->allocated_peak),
                rel_s(&a->t, d->allocated_peak_time), gmt_fmt_bytes(b2, sizeof b2, d->reserved_at_peak),
                gmt_fmt_bytes(b3, sizeof b3, d->reserved_peak));
        fprintf(out, "            at the end: allocated %s, reserved %s, of which free in the cache %s\n",
                gmt_fmt_bytes(b4, sizeof b4, d->allocated_end), gmt_fmt_bytes(b5, sizeof b5, d->reserved_end),
                gmt_fmt_bytes(b1, sizeof b1, d->cache_end));
        fprintf(out, "            %" PRIu64 " block allocations, %" PRIu64 " frees, %" PRIu64 " OOM(s)\n",
                d->allocs, d->frees, d->ooms);
        /* over time: at most 8 of the line's points, evenly */
        if (d->n_line > 1) {
            fprintf(out, "            over time (allocated / reserved):");
            size_t shown = d->n_line < 8 ? d->n_line : 8;
            for (size_t k = 0; k < shown; k++) {
                size_t j = shown > 1 ? k * (d->n_line - 1) / (shown - 1) : 0;
                const struct gmt_block_point *p = &d->line[j];
                fprintf(out, "%s %.3f s %s / %s", k ? ";" : "", rel_s(&a->t, p->time),
                        gmt_fmt_bytes(b1, sizeof b1, p->allocated), gmt_fmt_bytes(b2, sizeof b2, p->reserved));
            }
            fprintf(out, "\n");
        }
    }
}

static void text_steps(FILE *out, const struct gmt_analysis *a)
{
    const struct gmt_blocks *B = &a->blocks;
    if (!B->steps)
        return;
    char b1[32], b2[32];
    fprintf(out, "  steps (PyTorch allocated): %" PRIu64 "; the first grew %s", B->steps,
            gmt_fmt_sbytes(b1, sizeof b1, B->first_step_growth));
    if (B->steps > 1)
        fprintf(out, ", the %" PRIu64 " after it %s together", B->steps - 1,
                gmt_fmt_sbytes(b2, sizeof b2, B->later_growth));
    fprintf(out, "\n");
    if (B->grows_every_step) {
        char line[1024];
        fprintf(out, "  grows every step: %s per step over %" PRIu64 " steps, from %s\n",
                gmt_fmt_sbytes(b1, sizeof b1, B->growth_per_step), B->steps - 1,
                B->grow_stack_bytes ? gmt_stack_line(a, B->grow_stack, text_frames(a), line, sizeof line)
                                    : "(no block of those steps is still allocated)");
    }
}

static void text_sites(FILE *out, const struct gmt_analysis *a, bool leaks)
{
    fprintf(out, leaks ? "\nPyTorch blocks still allocated at the end (leaks: tensors kept, not the cache), by site\n"
                       : "\nTop PyTorch block sites (tensors, by bytes allocated at the peak)\n");
    /* sites that print alike are one site */
    const struct gmt_site_groups *G = leaks ? &a->sites.block_leaks : &a->sites.blocks;
    if (G->rc) {
        fprintf(out, "  (out of memory)\n");
        return;
    }
    size_t shown = (size_t)text_top(a) < G->n ? (size_t)text_top(a) : G->n;
    for (size_t j = 0; j < shown; j++) {
        const struct gmt_site_row *s = &G->g[j].sum;
        char b1[32], b2[32], b3[32], stacks[32] = "";
        if (G->g[j].n_stacks > 1)
            snprintf(stacks, sizeof stacks, ", %zu stacks", G->g[j].n_stacks);
        if (leaks)
            fprintf(out, "  %10s in %" PRIu64 " block(s)%s\n", gmt_fmt_bytes(b2, sizeof b2, s->live_at_end),
                    s->count_at_end, stacks);
        else
            fprintf(out, "  %10s at peak, %s at end, %" PRIu64 " blocks, %s in all%s\n",
                    gmt_fmt_bytes(b1, sizeof b1, s->live_at_peak), gmt_fmt_bytes(b2, sizeof b2, s->live_at_end),
                    s->allocs, gmt_fmt_bytes(b3, sizeof b3, s->bytes_total), stacks);
        fprintf(out, "      %s\n", G->g[j].line);
    }
    if (!shown)
        fprintf(out, "  none\n");
}

static void text_ooms(FILE *out, const struct gmt_analysis *a)
{
    const struct gmt_blocks *B = &a->blocks;
    for (size_t i = 0; i < B->n_ooms; i++) {
        const struct gmt_block_oom *o = &B->ooms[i];
        char b1[32], b2[32], b3[32], b4[32], line[2048];
        fprintf(out, "\nPyTorch OOM at %.3f s on device %d: asked %s; the largest free block %s\n",
                rel_s(&a->t, o->time), o->device, gmt_fmt_bytes(b1, sizeof b1, o->request),
                gmt_fmt_bytes(b2, sizeof b2, o->largest_free));
        fprintf(out, "  PyTorch knew: allocated %s, reserved %s (%s free in the cache)\n",
                gmt_fmt_bytes(b1, sizeof b1, o->allocated), gmt_fmt_bytes(b2, sizeof b2, o->reserved),
                gmt_fmt_bytes(b3, sizeof b3, o->cache));
        fprintf(out, "  fragmentation: %s free in %" PRIu64 " segment(s) that could not hold the request\n",
                gmt_fmt_bytes(b4, sizeof b4, o->free_unusable), o->segments);
        fprintf(out, "  asked from: %s\n", gmt_stack_line(a, o->stack, text_frames(a), line, sizeof line));
        for (size_t k = 0; k < o->n_seg; k++) {
            const struct gmt_block_segment *s = &o->seg[k];
            fprintf(out, "    segment 0x%" PRIx64 " of %s: %s allocated, %s free, the largest free %s\n",
                    s->addr, gmt_fmt_bytes(b1, sizeof b1, s->size), gmt_fmt_bytes(b2, sizeof b2, s->live),
                    gmt_fmt_bytes(b3, sizeof b3, s->free),
                    gmt_fmt_bytes(b4, sizeof b4, s->largest_free));
        }
        if (o->segments > o->n_seg)
            fprintf(out, "    … and %" PRIu64 " more segment(s)\n", o->segments - o->n_seg);
        fprintf(out, "  blocks allocated then, by site:\n");
        for (size_t k = 0; k < o->n_site; k++)
            fprintf(out, "    %10s in %" PRIu64 " block(s)  %s\n", gmt_fmt_bytes(b1, sizeof b1, o->site[k].bytes),
                    o->site[k].count, gmt_stack_line(a, o->site[k].stack, text_frames(a), line, sizeof line));
    }
}

void gmt_blocks_text(FILE *out, const struct gmt_analysis *a)
{
    const struct gmt_blocks *B = &a->blocks;
    if (B->mode == GMT_BLOCKS_NONE)
        return;
    fprintf(out, "\nPyTorch's caching allocator: %s\n", gmt_block_mode_text(B->mode));
    if (B->mode != GMT_BLOCKS_EVENTS)
        return;
    text_devices(out, a);
    text_steps(out, a);
    if (B->unmatched_frees)
        fprintf(out, "  note: %" PRIu64 " block free(s) of blocks the trace never saw handed out\n",
                B->unmatched_frees);
    text_sites(out, a, false);
    text_sites(out, a, true);
    text_ooms(out, a);
}

/* ---- JSON ---- */

/* "stack": every frame; "line": the frames that matter from the site, as the text shows. */
static void json_stack(FILE *out, const struct gmt_analysis *a, uint32_t stack)
{
    char line[8192];
    gmt_fput_json_string(out, stack ? gmt_stack_full(a, stack, 64, line, sizeof line) : "");
    fprintf(out, ", \"line\": ");
    gmt_fput_json_string(out, stack ? gmt_stack_line(a, stack, text_frames(a), line, sizeof line) : "");
}

/* "sites" or "leaks": the block sites grouped as the text groups them, each with the
 * stacks in it; "stack" is its largest's. */
static void json_sites(FILE *out, const struct gmt_analysis *a, bool leaks)
{
    fprintf(out, leaks ? "], \"leaks\": [" : "], \"sites\": [");
    const struct gmt_site_groups *G = leaks ? &a->sites.block_leaks : &a->sites.blocks;
    if (G->rc)
        return;
    for (size_t i = 0; i < G->n && (long)i < text_top(a); i++) {
        const struct gmt_site_row *s = &G->g[i].sum;
        if (leaks)
            fprintf(out, "%s{\"bytes\": %" PRIu64 ", \"blocks\": %" PRIu64 ", \"stack\": ", i ? ", " : "",
                    s->live_at_end, s->count_at_end);
        else
            fprintf(out, "%s{\"live_at_peak_bytes\": %" PRIu64 ", \"live_at_end_bytes\": %" PRIu64
                         ", \"live_at_end_count\": %" PRIu64 ", \"allocs\": %" PRIu64
                         ", \"bytes_total\": %" PRIu64 ", \"stack\": ",
                    i ? ", " : "", s->live_at_peak, s->live_at_end, s->count_at_end, s->allocs,
                    s->bytes_total);
        json_stack(out, a, s->stack);
        fprintf(out, ", \"stack_ids\": [");
        for (size_t k = 0; k < G->g[i].n_stacks; k++)
            fprintf(out, "%s%" PRIu32, k ? ", " : "", G->g[i].stacks[k]);
        fprintf(out, "]}");
    }
}

void gmt_blocks_json(FILE *out, const struct gmt_analysis *a)
{
    const struct gmt_blocks *B = &a->blocks;
    if (B->mode == GMT_BLOCKS_NONE)
        return; /* no PyTorch CUDA allocator: no member (docs/summary-json.md) */
    fprintf(out, ", \"pytorch\": {\"mode\": ");
    gmt_fput_json_string(out, gmt_block_mode_key(B->mode));
    fprintf(out, ", \"note\": ");
    gmt_fput_json_string(out, gmt_block_mode_text(B->mode));
    fprintf(out, ", \"devices\": [");
    for (size_t i = 0; i < B->n_dev; i++) {
        const struct gmt_block_dev *d = &B->dev[i];
        fprintf(out, "%s{\"device\": %d, \"allocs\": %" PRIu64 ", \"frees\": %" PRIu64
                     ", \"ooms\": %" PRIu64 ", \"allocated_peak_bytes\": %" PRIu64
                     ", \"allocated_peak_ns\": %" PRIu64 ", \"reserved_at_peak_bytes\": %" PRIu64
                     ", \"reserved_peak_bytes\": %" PRIu64 ", \"allocated_end_bytes\": %" PRIu64
                     ", \"reserved_end_bytes\": %" PRIu64 ", \"line\": [",
                i ? ", " : "", d->device, d->allocs, d->frees, d->ooms, d->allocated_peak,
                d->allocated_peak_time > a->t.t_first ? d->allocated_peak_time - a->t.t_first : 0,
                d->reserved_at_peak, d->reserved_peak, d->allocated_end, d->reserved_end);
        for (size_t k = 0; k < d->n_line; k++)
            fprintf(out, "%s[%" PRIu64 ", %" PRIu64 ", %" PRIu64 "]", k ? ", " : "",
                    d->line[k].time > a->t.t_first ? d->line[k].time - a->t.t_first : 0,
                    d->line[k].allocated, d->line[k].reserved);
        fprintf(out, "]}");
    }
    json_sites(out, a, false);
    json_sites(out, a, true);
    fprintf(out, "], \"steps\": {\"count\": %" PRIu64 ", \"first_growth_bytes\": %" PRId64
                 ", \"later_growth_bytes\": %" PRId64 ", \"grows_every_step\": %s",
            B->steps, B->first_step_growth, B->later_growth, B->grows_every_step ? "true" : "false");
    if (B->grows_every_step) {
        fprintf(out, ", \"growth_per_step_bytes\": %" PRId64 ", \"growth_steps\": %" PRIu64
                     ", \"site_bytes\": %" PRIu64 ", \"site\": ",
                B->growth_per_step, B->steps - 1, B->grow_stack_bytes);
        json_stack(out, a, B->grow_stack_bytes ? B->grow_stack : 0);
    }
    fprintf(out, "}, \"ooms\": [");
    for (size_t i = 0; i < B->n_ooms; i++) {
        const struct gmt_block_oom *o = &B->ooms[i];
        fprintf(out, "%s{\"time_ns\": %" PRIu64 ", \"device\": %d, \"tid\": %u, \"request_bytes\": %" PRIu64
                     ", \"allocated_bytes\": %" PRIu64 ", \"reserved_bytes\": %" PRIu64
                     ", \"largest_free_bytes\": %" PRIu64 ", \"free_unusable_bytes\": %" PRIu64
                     ", \"segments\": %" PRIu64 ", \"stack\": ",
                i ? ", " : "", o->time > a->t.t_first ? o->time - a->t.t_first : 0, o->device, o->tid,
                o->request, o->allocated, o->reserved, o->largest_free, o->free_unusable, o->segments);
        json_stack(out, a, o->stack);
        fprintf(out, ", \"segment_rows\": [");
        for (size_t k = 0; k < o->n_seg; k++)
            fprintf(out, "%s{\"address\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"allocated_bytes\": %" PRIu64
                         ", \"largest_free_bytes\": %" PRIu64 "}",
                    k ? ", " : "", o->seg[k].addr, o->seg[k].size, o->seg[k].live, o->seg[k].largest_free);
        fprintf(out, "], \"live_sites\": [");
        for (size_t k = 0; k < o->n_site; k++) {
            fprintf(out, "%s{\"bytes\": %" PRIu64 ", \"blocks\": %" PRIu64 ", \"stack\": ", k ? ", " : "",
                    o->site[k].bytes, o->site[k].count);
            json_stack(out, a, o->site[k].stack);
            fprintf(out, "}");
        }
        fprintf(out, "]}");
    }
    fprintf(out, "], \"unmatched_frees\": %" PRIu64 "}", B->unmatched_frees);
}
