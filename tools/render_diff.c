/* render_diff.c: what changed between two runs rendered: as text for a person, as JSON (gpumemtrace.diff/1). */
#include "render_diff.h"

#include <inttypes.h>
#include <string.h>

static const char *fmt_val(char *buf, size_t len, bool has, int64_t v)
{
    if (!has)
        snprintf(buf, len, "-");
    else if (v >= 0)
        gmt_fmt_bytes(buf, len, (uint64_t)v);
    else
        gmt_fmt_sbytes(buf, len, v);
    return buf;
}

/* A change's members, without its braces. */
static void change_json(FILE *o, const struct gmt_diff_change *c)
{
    const char *tab = strchr(c->key, '\t');
    fprintf(o, "\"kind\": ");
    gmt_fput_json_stringn(o, c->key, (size_t)(tab - c->key));
    fprintf(o, ", \"what\": ");
    gmt_fput_json_stringn(o, tab + 1, strlen(tab + 1));
    if (c->in_base)
        fprintf(o, ", \"base\": %" PRId64, c->base);
    else
        fprintf(o, ", \"base\": null");
    if (c->in_new)
        fprintf(o, ", \"new\": %" PRId64, c->now);
    else
        fprintf(o, ", \"new\": null");
    fprintf(o, ", \"delta\": %" PRId64, c->delta);
}

static const struct gmt_diff_pair *pair_at(const struct gmt_diff *d, size_t i)
{
    return &((const struct gmt_diff_pair *)d->pairs.data)[i];
}

static const struct gmt_diff_group *group_at(const struct gmt_diff *d, size_t g)
{
    return &((const struct gmt_diff_group *)d->groups.data)[g];
}

/* One change of the headline as JSON: the change, its pair and who it stands for. */
static void pick_json(FILE *o, const struct gmt_diff *d, const char *name,
                      const struct gmt_diff_pick *k)
{
    fprintf(o, "\"%s\": ", name);
    if (k->pair == SIZE_MAX) {
        fprintf(o, "null");
        return;
    }
    const struct gmt_diff_pair *p = pair_at(d, k->pair);
    fprintf(o, "{\"pair\": %zu, \"who\": ", k->pair);
    gmt_fput_json_stringn(o, p->who, strlen(p->who));
    fprintf(o, ", \"group\": %zu", p->group);
    fprintf(o, ", ");
    change_json(o, &p->c[k->change]);
    fprintf(o, "}");
}

/* One change of the headline as a line: label, change, values, what, and where. */
static void pick_text(FILE *o, const struct gmt_diff *d, const char *label,
                      const struct gmt_diff_pick *k, const char *none)
{
    if (k->pair == SIZE_MAX) {
        fprintf(o, "  %-12s %s\n", label, none);
        return;
    }
    const struct gmt_diff_pair *p = pair_at(d, k->pair);
    const struct gmt_diff_change *c = &p->c[k->change];
    char dl[GMT_FMT_LEN], b[GMT_FMT_LEN], w[GMT_FMT_LEN];
    const char *tab = strchr(c->key, '\t');
    fprintf(o, "  %-12s %s  (%s -> %s)  %.*s %s; %s", label, gmt_fmt_sbytes(dl, sizeof dl, c->delta),
            fmt_val(b, sizeof b, c->in_base, c->base), fmt_val(w, sizeof w, c->in_new, c->now),
            (int)(tab - c->key), c->key, gmt_one_line(tab + 1), p->who);
    if (p->group < d->groups.len && group_at(d, p->group)->n > 1)
        fprintf(o, ", one of %s", group_at(d, p->group)->who);
    fputc('\n', o);
}

static void pair_json(FILE *o, const struct gmt_diff_pair *p, bool first)
{
    fprintf(o, "%s{\"who\": ", first ? "" : ", ");
    gmt_fput_json_stringn(o, p->who, strlen(p->who));
    fprintf(o, ", \"base_file\": ");
    gmt_fput_json_stringn(o, p->base->t.path, strlen(p->base->t.path));
    fprintf(o, ", \"new_file\": ");
    gmt_fput_json_stringn(o, p->now->t.path, strlen(p->now->t.path));
    fprintf(o, ", \"nccl_changed\": ");
    gmt_fput_json_string(o, p->nccl_changed);
    fprintf(o, ", \"changes\": [");
    for (size_t i = 0; i < p->n; i++) {
        fprintf(o, "%s{", i ? ", " : "");
        change_json(o, &p->c[i]);
        fprintf(o, "}");
    }
    fprintf(o, "], \"group\": %zu}", p->group);
}

static void pair_text(FILE *o, const struct gmt_diff_pair *p, long top, bool all)
{
    size_t changed = p->n_changed;
    fprintf(o, "\n%s: %s -> %s: %zu change%s\n", p->who, gmt_one_line(p->base->t.path), gmt_one_line(p->now->t.path),
            changed, changed == 1 ? "" : "s");
    if (p->nccl_changed[0])
        fprintf(o, "  NCCL changed: %s\n", p->nccl_changed);
    size_t shown = 0, limit = top > 0 ? (size_t)top : SIZE_MAX;
    int wk = 4;
    for (size_t i = 0; i < p->n; i++) {
        int l = (int)(strchr(p->c[i].key, '\t') - p->c[i].key);
        if (l > wk)
            wk = l;
    }
    for (size_t i = 0; i < p->n && shown < limit; i++) {
        bool same = p->c[i].delta == 0 && p->c[i].in_base == p->c[i].in_new;
        if (same && !all)
            continue;
        if (!shown)
            fprintf(o, "  %10s  %10s    %10s  %-*s  %s\n", "change", "base", "new", wk, "kind",
                    "what");
        char d[GMT_FMT_LEN], b[GMT_FMT_LEN], w[GMT_FMT_LEN];
        const char *tab = strchr(p->c[i].key, '\t');
        if (p->c[i].delta)
            gmt_fmt_sbytes(d, sizeof d, p->c[i].delta);
        else
            snprintf(d, sizeof d, "0 B");
        const struct gmt_diff_change *c = &p->c[i];
        /* NCCL's own rows carry what changed in NCCL next to their growth */
        bool nccl_row = p->nccl_changed[0] && c->delta &&
                        (!strncmp(c->key, "init\t", 5) || !strncmp(c->key, "first_call\t", 11) ||
                         !strncmp(c->key, "steady\t", 7));
        fprintf(o, "  %10s  %10s -> %10s  %-*.*s  %s%s%s%s\n", d,
                fmt_val(b, sizeof b, c->in_base, c->base), fmt_val(w, sizeof w, c->in_new, c->now),
                wk, (int)(tab - c->key), c->key, tab + 1,
                !c->in_base ? "  (new)" : !c->in_new ? "  (gone)" : "", nccl_row ? "  -- " : "",
                nccl_row ? p->nccl_changed : "");
        shown++;
    }
    size_t hidden = 0;
    for (size_t i = 0; i < p->n; i++)
        hidden += !(p->c[i].delta == 0 && p->c[i].in_base == p->c[i].in_new) || all;
    hidden = hidden > shown ? hidden - shown : 0;
    if (!changed)
        fprintf(o, "  no change\n");
    if (hidden)
        fprintf(o, "  ... %zu more (--top 0 shows all)\n", hidden);
    if (!all && p->n > changed)
        fprintf(o, "  (%zu unchanged, --all shows them)\n", p->n - changed);
}

/* The processes only one side has, as JSON lists or text lines. */
static void only_json(FILE *o, const struct gmt_diff *d, int side)
{
    const struct gmt_diff_side *s = side ? &d->now : &d->base;
    size_t shown = 0;
    for (size_t k = 0; k < d->only.len; k++) {
        const struct gmt_diff_only *x = &((const struct gmt_diff_only *)d->only.data)[k];
        if (x->side != side)
            continue;
        fprintf(o, "%s{\"who\": ", shown++ ? ", " : "");
        gmt_fput_json_stringn(o, x->who, strlen(x->who));
        fprintf(o, ", \"file\": ");
        gmt_fput_json_stringn(o, s->paths[x->index], strlen(s->paths[x->index]));
        fprintf(o, "}");
    }
}

static void only_text(FILE *o, const struct gmt_diff *d, int side)
{
    const struct gmt_diff_side *s = side ? &d->now : &d->base;
    for (size_t k = 0; k < d->only.len; k++) {
        const struct gmt_diff_only *x = &((const struct gmt_diff_only *)d->only.data)[k];
        if (x->side == side)
            fprintf(o, "\n%s: only in %s (%s)\n", x->who, side ? "NEW" : "BASE",
                    gmt_one_line(s->paths[x->index]));
    }
}

void gmt_render_diff_json(FILE *o, const struct gmt_diff *d)
{
    fprintf(o, "{\"schema\": \"gpumemtrace.diff/1\", \"base\": ");
    gmt_fput_json_stringn(o, d->base.arg, strlen(d->base.arg));
    fprintf(o, ", \"new\": ");
    gmt_fput_json_stringn(o, d->now.arg, strlen(d->now.arg));
    fprintf(o, ", \"pairs\": [");
    for (size_t i = 0; i < d->pairs.len; i++)
        pair_json(o, &((const struct gmt_diff_pair *)d->pairs.data)[i], i == 0);
    fprintf(o, "], \"groups\": [");
    for (size_t g = 0; g < d->groups.len; g++) {
        const struct gmt_diff_group *G = group_at(d, g);
        fprintf(o, "%s{\"who\": ", g ? ", " : "");
        gmt_fput_json_string(o, G->who);
        fprintf(o, ", \"count\": %zu, \"stands_for\": %zu, \"pairs\": [", G->n, G->first);
        size_t at = 0;
        for (size_t i = 0; i < d->pairs.len; i++)
            if (pair_at(d, i)->group == g)
                fprintf(o, "%s%zu", at++ ? ", " : "", i);
        fprintf(o, "]}");
    }
    fprintf(o, "], \"headline\": {");
    pick_json(o, d, "peak", &d->peak);
    fprintf(o, ", ");
    pick_json(o, d, "grew", &d->grew);
    fprintf(o, ", ");
    pick_json(o, d, "shrank", &d->shrank);
    fprintf(o, "}, \"only_in_base\": [");
    only_json(o, d, 0);
    fprintf(o, "], \"only_in_new\": [");
    only_json(o, d, 1);
    fprintf(o, "]}\n");
}

void gmt_render_diff_text(FILE *o, const struct gmt_diff *d, long top, bool all, bool every_rank)
{
    fprintf(o, "gpumemtrace diff: %s (%zu process%s) -> %s (%zu process%s)\n", gmt_one_line(d->base.arg),
            d->n_base, d->n_base == 1 ? "" : "es", gmt_one_line(d->now.arg), d->n_new,
            d->n_new == 1 ? "" : "es");
    /* the answer first: what changed most, and where */
    if (d->pairs.len) {
        pick_text(o, d, "peak", &d->peak, "no change of a tracked peak");
        pick_text(o, d, "grew most", &d->grew, "nothing grew");
        pick_text(o, d, "shrank most", &d->shrank, "nothing shrank");
    }
    bool grouped = !every_rank && d->groups.len < d->pairs.len;
    if (grouped)
        fprintf(o, "  (%zu pairs in %zu group%s of ranks alike, each group shown once; --every-rank "
                "shows each)\n", d->pairs.len, d->groups.len, d->groups.len == 1 ? "" : "s");
    for (size_t i = 0; i < d->pairs.len; i++) {
        const struct gmt_diff_pair *p = pair_at(d, i);
        bool stands = p->group < d->groups.len && group_at(d, p->group)->first == i;
        if (grouped && !stands)
            continue;
        if (grouped && group_at(d, p->group)->n > 1)
            fprintf(o, "\n== %s: the changes of %s stand for them ==", group_at(d, p->group)->who,
                    p->who);
        pair_text(o, p, top, all);
    }
    only_text(o, d, 0);
    only_text(o, d, 1);
    if (!d->pairs.len && !d->only.len)
        fprintf(o, "\nno process used a GPU on either side\n");
}
