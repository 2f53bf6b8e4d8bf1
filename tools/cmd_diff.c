/* cmd_diff.c: `gpumemtrace diff BASE NEW`: what grew or shrank between two runs, rank by rank, biggest first. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "args.h"
#include "cli.h"
#include "report.h"
#include "stacks.h"
#include "util.h"

const char gmt_help_diff[] =
    "usage: gpumemtrace diff [options] BASE NEW\n"
    "\n"
    "What grew or shrank between two runs. BASE and NEW are each a trace or a directory\n"
    "of traces (what 'gpumemtrace run -o DIR' writes); processes are matched rank by rank\n"
    "(by file-name order when the rank is unknown). For each matched pair, the changes,\n"
    "biggest first:\n"
    "  peak        peak tracked device memory, and device used (cuMemGetInfo) when both\n"
    "              runs sampled it\n"
    "  category    each category's share at the peak (nccl, pytorch, user, ...)\n"
    "  init        bytes each communicator init/split added\n"
    "  first_call  bytes each collective's first call added; steady: the most a later\n"
    "              call added (collectives matched by op, communicator size and rank, bytes\n"
    "              per call, never by address or time)\n"
    "  site        bytes live at the peak per allocation site, matched by its symbolised\n"
    "              stack (never by address); leak: live at exit\n"
    "\n"
    "options:\n"
    "  --json            one JSON document with every row (schema gpumemtrace.diff/1)\n"
    "  --all             also show rows that did not change\n"
    "  --top N           rows per process pair (default 25, 0 all)\n"
    "  --frames N        stack frames that identify a site (default 8)\n"
    "  --debug-paths DIR extra directories for binaries and debug files (repeatable)\n"
    "\n"
    "Exit status: 0 (whatever changed), 2 bad usage or unreadable input.\n";

struct row {
    char *key;                 /* kind, TAB, what: the matching key */
    int64_t value;
};

struct side {
    const char *arg;
    char **paths;
    size_t n_paths;
    struct gmt_analysis *an;   /* n_paths, those that loaded */
    bool *ok;
    int32_t *rank, *process;   /* identity; process -1: used no GPU */
};

static int add_row(struct gmt_vec *rows, const char *kind, const char *what, int64_t v)
{
    struct row *r = gmt_vec_push(rows);
    if (!r)
        return -ENOMEM;
    size_t n = strlen(kind) + strlen(what) + 2;
    if (!(r->key = malloc(n))) {
        rows->len--;
        return -ENOMEM;
    }
    snprintf(r->key, n, "%s\t%s", kind, what);
    r->value = v;
    return 0;
}

static int cmp_row(const void *a, const void *b)
{
    return strcmp(((const struct row *)a)->key, ((const struct row *)b)->key);
}

static int64_t clamp64(uint64_t v)
{
    return v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* Every quantity of one process, keyed by what it is (never by address or time). */
static int rows_of(const struct gmt_analysis *a, int frames, struct gmt_vec *rows)
{
    struct gmt_metrics m = {0};
    int r = gmt_metrics_add(&m, a, 0, 0, NULL);
    for (size_t i = 0; !r && i < m.n; i++) {
        char what[300], full[300];
        gmt_metric_what(&m.v[i], full, sizeof full);
        /* the kind is its own column: drop it from the text */
        const char *sp = strchr(full, ' ');
        snprintf(what, sizeof what, "%s", sp ? sp + 1 : full);
        r = add_row(rows, gmt_check_name(m.v[i].check), what, m.v[i].value);
    }
    gmt_metrics_free(&m);
    const struct gmt_report *rep = &a->rep;
    for (size_t d = 0; !r && d < rep->n_dev; d++) {
        const struct gmt_dev_report *dr = &rep->dev[d];
        char what[128];
        if (dr->has_used) {
            snprintf(what, sizeof what, "device %d device used (cuMemGetInfo)", dr->device);
            if ((r = add_row(rows, "peak", what, clamp64(dr->used_max))))
                break;
        }
        for (size_t c = 0; c < a->n_cats && c < GMT_MAX_CATS; c++) {
            if (!dr->peak_by_cat[c])
                continue;
            snprintf(what, sizeof what, "device %d %s at the peak", dr->device, a->cat_names[c]);
            if ((r = add_row(rows, "category", what, clamp64(dr->peak_by_cat[c]))))
                break;
        }
    }
    for (size_t s = 0; !r && s < rep->n_sites; s++) {
        const struct gmt_site_row *sr = &rep->sites[s];
        if (!sr->allocs)
            continue;
        char line[2048];
        gmt_stack_line(a, sr->stack, frames, line, sizeof line);
        if (sr->live_at_peak || !sr->live_at_end)
            r = add_row(rows, "site", line, clamp64(sr->live_at_peak));
        if (!r && sr->live_at_end)
            r = add_row(rows, "leak", line, clamp64(sr->live_at_end));
    }
    if (r)
        return r;
    /* sites that print alike are one site to a person: sum them */
    if (rows->len)
        qsort(rows->data, rows->len, sizeof(struct row), cmp_row);
    struct row *v = rows->data;
    size_t out = 0;
    for (size_t i = 0; i < rows->len; i++) {
        if (out && !strcmp(v[out - 1].key, v[i].key)) {
            v[out - 1].value += v[i].value;
            free(v[i].key);
            continue;
        }
        v[out++] = v[i];
    }
    rows->len = out;
    return 0;
}

static void free_rows(struct gmt_vec *rows)
{
    for (size_t i = 0; i < rows->len; i++)
        free(((struct row *)rows->data)[i].key);
    gmt_vec_free(rows);
}

struct change {
    const char *key;
    bool in_base, in_new;
    int64_t base, now, delta;
};

static uint64_t mag(int64_t v)
{
    return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

static int cmp_change(const void *a, const void *b)
{
    const struct change *x = a, *y = b;
    if (mag(x->delta) != mag(y->delta))
        return mag(x->delta) > mag(y->delta) ? -1 : 1;
    if (x->delta != y->delta)
        return x->delta > y->delta ? -1 : 1;
    return strcmp(x->key, y->key);
}

static int64_t sat_sub(int64_t a, int64_t b)
{
    if (b < 0 && a > INT64_MAX + b)
        return INT64_MAX;
    if (b > 0 && a < INT64_MIN + b)
        return INT64_MIN;
    return a - b;
}

/* Merges two sorted row lists into changes sorted biggest first. */
static struct change *changes_of(const struct gmt_vec *rb, const struct gmt_vec *rn, size_t *n)
{
    const struct row *b = rb->data, *w = rn->data;
    struct change *c = calloc(rb->len + rn->len + 1, sizeof *c);
    if (!c)
        return NULL;
    size_t i = 0, j = 0, k = 0;
    while (i < rb->len || j < rn->len) {
        int cmp = i >= rb->len ? 1 : j >= rn->len ? -1 : strcmp(b[i].key, w[j].key);
        struct change *x = &c[k++];
        if (cmp <= 0) {
            x->key = b[i].key;
            x->in_base = true;
            x->base = b[i++].value;
        }
        if (cmp >= 0) {
            x->key = w[j].key;
            x->in_new = true;
            x->now = w[j++].value;
        }
        x->delta = sat_sub(x->now, x->base);
        /* device used compares only when both runs sampled it: one sampled is no change */
        if (x->in_base != x->in_new && strstr(x->key, "(cuMemGetInfo)"))
            k--;
    }
    qsort(c, k, sizeof *c, cmp_change);
    *n = k;
    return c;
}

static void jstr(FILE *o, const char *s, size_t n)
{
    fputc('"', o);
    for (size_t i = 0; i < n && s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        if (ch == '"' || ch == '\\')
            fprintf(o, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            fprintf(o, "\\u%04x", ch);
        else
            fputc(ch, o);
    }
    fputc('"', o);
}

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

struct opts {
    bool json, all;
    long top;
    int frames;
};

static int print_pair(const struct opts *o, const char *who, const struct gmt_analysis *ab,
                      const struct gmt_analysis *an, bool first)
{
    struct gmt_vec rb = GMT_VEC_INIT(struct row), rn = GMT_VEC_INIT(struct row);
    int r = rows_of(ab, o->frames, &rb);
    if (!r)
        r = rows_of(an, o->frames, &rn);
    size_t n = 0;
    struct change *c = r ? NULL : changes_of(&rb, &rn, &n);
    if (!c) {
        free_rows(&rb);
        free_rows(&rn);
        return -ENOMEM;
    }
    if (o->json) {
        printf("%s{\"who\": ", first ? "" : ", ");
        jstr(stdout, who, strlen(who));
        printf(", \"base_file\": ");
        jstr(stdout, ab->t.path, strlen(ab->t.path));
        printf(", \"new_file\": ");
        jstr(stdout, an->t.path, strlen(an->t.path));
        printf(", \"changes\": [");
        for (size_t i = 0; i < n; i++) {
            const char *tab = strchr(c[i].key, '\t');
            printf("%s{\"kind\": ", i ? ", " : "");
            jstr(stdout, c[i].key, (size_t)(tab - c[i].key));
            printf(", \"what\": ");
            jstr(stdout, tab + 1, strlen(tab + 1));
            if (c[i].in_base)
                printf(", \"base\": %" PRId64, c[i].base);
            else
                printf(", \"base\": null");
            if (c[i].in_new)
                printf(", \"new\": %" PRId64, c[i].now);
            else
                printf(", \"new\": null");
            printf(", \"delta\": %" PRId64 "}", c[i].delta);
        }
        printf("]}");
    } else {
        size_t changed = 0;
        for (size_t i = 0; i < n; i++)
            changed += c[i].delta != 0 || c[i].in_base != c[i].in_new;
        printf("\n%s: %s -> %s: %zu change%s\n", who, ab->t.path, an->t.path, changed,
               changed == 1 ? "" : "s");
        size_t shown = 0, limit = o->top > 0 ? (size_t)o->top : SIZE_MAX;
        int wk = 4;
        for (size_t i = 0; i < n; i++) {
            int l = (int)(strchr(c[i].key, '\t') - c[i].key);
            if (l > wk)
                wk = l;
        }
        for (size_t i = 0; i < n && shown < limit; i++) {
            bool same = c[i].delta == 0 && c[i].in_base == c[i].in_new;
            if (same && !o->all)
                continue;
            if (!shown)
                printf("  %10s  %10s    %10s  %-*s  %s\n", "change", "base", "new", wk, "kind", "what");
            char d[GMT_FMT_LEN], b[GMT_FMT_LEN], w[GMT_FMT_LEN];
            const char *tab = strchr(c[i].key, '\t');
            if (c[i].delta)
                gmt_fmt_sbytes(d, sizeof d, c[i].delta);
            else
                snprintf(d, sizeof d, "0 B");
            printf("  %10s  %10s -> %10s  %-*.*s  %s%s\n", d, fmt_val(b, sizeof b, c[i].in_base, c[i].base),
                   fmt_val(w, sizeof w, c[i].in_new, c[i].now), wk, (int)(tab - c[i].key), c[i].key,
                   tab + 1, !c[i].in_base ? "  (new)" : !c[i].in_new ? "  (gone)" : "");
            shown++;
        }
        size_t hidden = 0;
        for (size_t i = 0; i < n; i++)
            hidden += !(c[i].delta == 0 && c[i].in_base == c[i].in_new) || o->all;
        hidden = hidden > shown ? hidden - shown : 0;
        if (!changed)
            printf("  no change\n");
        if (hidden)
            printf("  ... %zu more (--top 0 shows all)\n", hidden);
        if (!o->all && n > changed)
            printf("  (%zu unchanged, --all shows them)\n", n - changed);
    }
    free(c);
    free_rows(&rb);
    free_rows(&rn);
    return 0;
}

static void free_side(struct side *s)
{
    for (size_t i = 0; i < s->n_paths; i++)
        if (s->ok && s->ok[i])
            gmt_analysis_free(&s->an[i]);
    free(s->an);
    free(s->ok);
    free(s->rank);
    free(s->process);
    gmt_free_paths(s->paths, s->n_paths);
}

static int load_side(struct side *s, const struct gmt_report_opts *ro)
{
    int status = 0;
    char *arg = (char *)s->arg;
    if (gmt_expand_paths(&arg, 1, &s->paths, &s->n_paths))
        status = -EINVAL;
    size_t n = s->n_paths ? s->n_paths : 1;
    s->an = calloc(n, sizeof *s->an);
    s->ok = calloc(n, sizeof *s->ok);
    s->rank = calloc(n, sizeof *s->rank);
    s->process = calloc(n, sizeof *s->process);
    if (!s->an || !s->ok || !s->rank || !s->process) {
        fprintf(stderr, "gpumemtrace: out of memory\n");
        return -ENOMEM;
    }
    struct gmt_idents ids;
    gmt_idents_init(&ids);
    for (size_t i = 0; i < s->n_paths; i++) {
        char err[512];
        s->process[i] = -1;
        if (gmt_analyze(&s->an[i], s->paths[i], ro, err, sizeof err)) {
            fprintf(stderr, "gpumemtrace: %s\n", err);
            status = -EINVAL;
            continue;
        }
        s->ok[i] = true;
        if (!gmt_analysis_used_gpu(&s->an[i]))
            continue;
        gmt_idents_next(&ids, &s->an[i], &s->rank[i], &s->process[i]);
        if (gmt_idents_take(&ids, s->rank[i])) {
            status = -ENOMEM;
            break;
        }
    }
    gmt_idents_free(&ids);
    return status;
}

static int cmp_ident(int32_t ra, int32_t pa, int32_t rb, int32_t pb)
{
    struct gmt_metric a = {.rank = ra, .process = pa}, b = {.rank = rb, .process = pb};
    return gmt_metric_cmp(&a, &b);
}

/* Indices of a side's GPU-using traces sorted by identity. */
static size_t *order_of(const struct side *s, size_t *n)
{
    size_t *o = malloc((s->n_paths ? s->n_paths : 1) * sizeof *o);
    if (!o)
        return NULL;
    size_t k = 0;
    for (size_t i = 0; i < s->n_paths; i++)
        if (s->ok[i] && s->process[i] >= 0)
            o[k++] = i;
    for (size_t i = 1; i < k; i++)
        for (size_t j = i; j > 0 && cmp_ident(s->rank[o[j - 1]], s->process[o[j - 1]],
                                              s->rank[o[j]], s->process[o[j]]) > 0; j--) {
            size_t t = o[j]; o[j] = o[j - 1]; o[j - 1] = t;
        }
    *n = k;
    return o;
}

static const struct option diff_opts[] = {
    {"all", no_argument, 0, 'a'}, {"frames", required_argument, 0, 'f'}, {0, 0, 0, 0}};

static int diff_opt(void *ctx, int c, const char *arg)
{
    struct opts *o = ctx;
    long v;
    if (c == 'a') {
        o->all = true;
        return 0;
    }
    if (gmt_cli_long(arg, 1, 64, &v))
        return gmt_cli_usage_error("diff", "--frames wants 1..64, not '%s'", arg);
    o->frames = (int)v;
    return 0;
}

int gmt_cmd_diff(int argc, char **argv)
{
    struct opts o = {.frames = 8};
    struct gmt_args args;
    gmt_args_init(&args);
    args.ro.top = 25;
    const struct gmt_args_spec spec = {
        .cmd = "diff", .help = gmt_help_diff, .top_max = 1000000,
        .shared = GMT_ARGS_JSON | GMT_ARGS_DEBUG_PATHS | GMT_ARGS_TOP,
        .own = diff_opts, .own_opt = diff_opt, .ctx = &o, .optstring = "",
        .unknown = "unknown option or missing value"};
    int rc = gmt_args_parse(&spec, argc, argv, &args);
    if (rc >= 0)
        return rc;
    const struct gmt_report_opts ro = args.ro;
    o.json = args.output == GMT_OUT_JSON;
    o.top = args.ro.top;
    int first = args.first;
    if (argc - first != 2)
        return gmt_cli_usage_error("diff", "wants two arguments, BASE and NEW");
    struct side sb = {.arg = argv[first]}, sn = {.arg = argv[first + 1]};
    int status = GMT_EXIT_OK;
    if (load_side(&sb, &ro) | load_side(&sn, &ro))
        status = GMT_EXIT_ERROR;
    size_t nb = 0, nn = 0;
    size_t *ob = status ? NULL : order_of(&sb, &nb), *on = status ? NULL : order_of(&sn, &nn);
    if (!status && (!ob || !on)) {
        fprintf(stderr, "gpumemtrace: out of memory\n");
        status = GMT_EXIT_ERROR;
    }
    if (status) {
        free(ob);
        free(on);
        free_side(&sb);
        free_side(&sn);
        return status;
    }
    if (o.json) {
        printf("{\"schema\": \"gpumemtrace.diff/1\", \"base\": ");
        jstr(stdout, sb.arg, strlen(sb.arg));
        printf(", \"new\": ");
        jstr(stdout, sn.arg, strlen(sn.arg));
        printf(", \"pairs\": [");
    } else {
        printf("gpumemtrace diff: %s (%zu process%s) -> %s (%zu process%s)\n", sb.arg, nb,
               nb == 1 ? "" : "es", sn.arg, nn, nn == 1 ? "" : "es");
    }
    size_t i = 0, j = 0, pairs = 0;
    struct gmt_vec only = GMT_VEC_INIT(size_t[2]); /* (side, index) */
    while (i < nb || j < nn) {
        int cmp = i >= nb ? 1 : j >= nn ? -1
                  : cmp_ident(sb.rank[ob[i]], sb.process[ob[i]], sn.rank[on[j]], sn.process[on[j]]);
        if (cmp != 0) {
            size_t *x = gmt_vec_push(&only);
            if (x) {
                x[0] = cmp < 0 ? 0 : 1;
                x[1] = cmp < 0 ? ob[i] : on[j];
            }
            if (cmp < 0)
                i++;
            else
                j++;
            continue;
        }
        struct gmt_metric id = {.rank = sb.rank[ob[i]], .process = sb.process[ob[i]]};
        char who[64];
        gmt_metric_who(&id, who, sizeof who);
        if (print_pair(&o, who, &sb.an[ob[i]], &sn.an[on[j]], pairs == 0)) {
            fprintf(stderr, "gpumemtrace: out of memory\n");
            status = GMT_EXIT_ERROR;
            break;
        }
        pairs++;
        i++;
        j++;
    }
    if (o.json)
        printf("], \"only_in_base\": [");
    size_t k_base = 0, k_new = 0;
    for (int side = 0; side < 2; side++) {
        if (o.json && side == 1)
            printf("], \"only_in_new\": [");
        for (size_t k = 0; k < only.len; k++) {
            const size_t *x = ((const size_t(*)[2])only.data)[k];
            if ((int)x[0] != side)
                continue;
            const struct side *s = side ? &sn : &sb;
            struct gmt_metric id = {.rank = s->rank[x[1]], .process = s->process[x[1]]};
            char who[64];
            gmt_metric_who(&id, who, sizeof who);
            size_t *cnt = side ? &k_new : &k_base;
            if (o.json) {
                printf("%s{\"who\": ", (*cnt)++ ? ", " : "");
                jstr(stdout, who, strlen(who));
                printf(", \"file\": ");
                jstr(stdout, s->paths[x[1]], strlen(s->paths[x[1]]));
                printf("}");
            } else {
                printf("\n%s: only in %s (%s)\n", who, side ? "NEW" : "BASE", s->paths[x[1]]);
            }
        }
    }
    if (o.json)
        printf("]}\n");
    else if (!pairs && !only.len)
        printf("\nno process used a GPU on either side\n");
    gmt_vec_free(&only);
    free(ob);
    free(on);
    free_side(&sb);
    free_side(&sn);
    return status;
}
