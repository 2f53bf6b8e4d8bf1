/* render_csv.c: the summary's tables as CSV, one section per table, each row naming its file. */
#include "render.h"

#include <inttypes.h>

#include "stacks.h"

static void csv_field(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static void csv_trace(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o,
                      size_t index)
{
    const struct gmt_report *rep = &a->rep;
    fprintf(out, "section,file,device,peak_bytes,end_bytes,device_used_max_bytes,untracked_bytes\n");
    for (size_t d = 0; d < rep->n_dev; d++) {
        const struct gmt_dev_report *r = &rep->dev[d];
        if (!gmt_report_dev_selected(o, r->device))
            continue;
        fprintf(out, "device,");
        csv_field(out, a->t.path);
        if (r->has_used)
            fprintf(out, ",%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRId64 "\n", r->device, r->peak,
                    r->end, r->used_max, gmt_dev_untracked(r));
        else
            fprintf(out, ",%d,%" PRIu64 ",%" PRIu64 ",,\n", r->device, r->peak, r->end);
    }
    fprintf(out, "section,file,op,rank,nranks,calls,bytes_per_call,first_tracked_bytes,first_device_bytes,"
                 "later_tracked_max_bytes,allocs,allocs_other_thread,host_ns_total,host_calls\n");
    for (size_t i = 0; i < rep->n_colls; i++) {
        const struct gmt_coll_row *c = &rep->colls[i];
        if (!gmt_report_coll_selected(o, c))
            continue;
        fprintf(out, "collective,");
        csv_field(out, a->t.path);
        fputc(',', out);
        csv_field(out, c->label);
        fprintf(out, ",%d,%d,%" PRIu64 ",%" PRIu64 ",%" PRId64 ",", c->rank, c->nranks, c->calls,
                c->bytes_per_call, c->first_tracked);
        if (c->first_has_dev)
            fprintf(out, "%" PRId64, c->first_dev);
        fprintf(out, ",%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
                c->later_tracked_max, c->allocs, c->allocs_other_thread, c->host_ns_total,
                c->host_calls);
    }
    fprintf(out, "section,file,category,live_at_peak_bytes,live_at_end_bytes,allocs,bytes_total,stack\n");
    long shown = 0;
    for (size_t i = 0; i < rep->n_sites && shown < o->top; i++, shown++) {
        const struct gmt_site_row *s = &rep->sites[i];
        char line[2048];
        fprintf(out, "site,");
        csv_field(out, a->t.path);
        fputc(',', out);
        csv_field(out, a->cat_names[s->cat]);
        fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", s->live_at_peak,
                s->live_at_end, s->allocs, s->bytes_total);
        csv_field(out, gmt_stack_line(a, s->stack, 8, line, sizeof line));
        fputc('\n', out);
    }
}

const struct gmt_renderer gmt_render_csv = {.trace = csv_trace};
