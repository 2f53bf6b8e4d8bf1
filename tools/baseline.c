/* baseline.c: extracts the NCCL memory metrics from analyses, parses limits, writes and reads baseline JSON. */
#include "baseline.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "reader.h"
#include "util.h"

static const char *const check_names[] = {
#define GMT_X(name, what) #name,
    GMT_CHECKS(GMT_X)
#undef GMT_X
};

const char *gmt_check_name(enum gmt_check c)
{
    return (unsigned)c < GMT_CHECK_N ? check_names[c] : "?";
}

int gmt_check_by_name(const char *name, size_t len)
{
    for (int i = 0; i < GMT_CHECK_N; i++)
        if (strlen(check_names[i]) == len && !memcmp(check_names[i], name, len))
            return i;
    return -1;
}

/* ---- identity ---- */

static int cmp_i64(int64_t a, int64_t b)
{
    return a < b ? -1 : a > b;
}

int gmt_metric_cmp(const struct gmt_metric *a, const struct gmt_metric *b)
{
    /* known ranks first, in rank order; then unknown-rank processes in file order */
    int ka = a->rank >= 0, kb = b->rank >= 0;
    int r;
    if (ka != kb)
        return ka ? -1 : 1;
    if ((r = cmp_i64(a->rank, b->rank)) || (r = cmp_i64(a->process, b->process)) ||
        (r = cmp_i64(a->check, b->check)) || (r = strcmp(a->op, b->op)) ||
        (r = cmp_i64(a->comm_size, b->comm_size)) || (r = cmp_i64(a->comm_rank, b->comm_rank)))
        return r;
    if (a->bytes_per_call != b->bytes_per_call)
        return a->bytes_per_call < b->bytes_per_call ? -1 : 1;
    if ((r = cmp_i64(a->device, b->device)) || (r = strcmp(a->category, b->category)))
        return r;
    return cmp_i64(a->occurrence, b->occurrence);
}

const char *gmt_metric_who(const struct gmt_metric *m, char *buf, size_t len)
{
    if (m->rank >= 0 && m->process > 1)
        snprintf(buf, len, "rank %d #%d", m->rank, m->process);
    else if (m->rank >= 0)
        snprintf(buf, len, "rank %d", m->rank);
    else
        snprintf(buf, len, "process %d", m->process);
    return buf;
}

/* Exact when a unit divides it ("1 MiB", "12 KiB"), else plain bytes: two sizes that
 * differ must not print alike, since they are different collectives. */
static const char *exact_bytes(char *buf, size_t len, uint64_t b)
{
    static const char *const units[] = {"TiB", "GiB", "MiB", "KiB"};
    for (int i = 0; i < 4; i++) {
        uint64_t u = 1ull << (10 * (4 - i));
        if (b >= u && b % u == 0) {
            snprintf(buf, len, "%" PRIu64 " %s", b / u, units[i]);
            return buf;
        }
    }
    snprintf(buf, len, "%" PRIu64 " B", b);
    return buf;
}

const char *gmt_metric_what(const struct gmt_metric *m, char *buf, size_t len)
{
    char size[48] = "", bpc[48] = "", occ[16] = "";
    if (m->comm_size >= 0)
        snprintf(size, sizeof size, " %d rank%s", m->comm_size, m->comm_size == 1 ? "" : "s");
    if (m->occurrence > 1)
        snprintf(occ, sizeof occ, " #%u", m->occurrence);
    switch (m->check) {
    case GMT_CHECK_init:
        snprintf(buf, len, "init %s%s%s", m->op, size, occ);
        break;
    case GMT_CHECK_first_call:
    case GMT_CHECK_steady: {
        char b[GMT_FMT_LEN];
        snprintf(bpc, sizeof bpc, " %s/call", exact_bytes(b, sizeof b, m->bytes_per_call));
        snprintf(buf, len, "%s %s%s%s%s", gmt_check_name(m->check), m->op, size, bpc, occ);
        break;
    }
    default:
        if (m->device >= 0)
            snprintf(buf, len, "%s device %d%s%s%s", gmt_check_name(m->check), m->device,
                     m->category[0] ? " " : "", m->category, occ);
        else
            snprintf(buf, len, "%s device ?%s%s%s", gmt_check_name(m->check),
                     m->category[0] ? " " : "", m->category, occ);
        break;
    }
    return buf;
}

void gmt_metrics_free(struct gmt_metrics *m)
{
    free(m->v);
    memset(m, 0, sizeof *m);
}

static int cmp_metric_q(const void *a, const void *b)
{
    return gmt_metric_cmp(a, b);
}

void gmt_metrics_sort(struct gmt_metrics *m)
{
    if (m->n)
        qsort(m->v, m->n, sizeof *m->v, cmp_metric_q);
}

static struct gmt_metric *push(struct gmt_metrics *m)
{
    if (m->n == m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 32;
        struct gmt_metric *v = realloc(m->v, ncap * sizeof *v);
        if (!v)
            return NULL;
        m->v = v;
        m->cap = ncap;
    }
    struct gmt_metric *e = &m->v[m->n++];
    memset(e, 0, sizeof *e);
    e->comm_size = e->comm_rank = e->device = -1;
    return e;
}

/* ---- extraction ---- */

static bool is_init_op(unsigned op)
{
    switch (op) {
    case GMT_OP_CommInitRank: case GMT_OP_CommInitAll: case GMT_OP_CommInitRankConfig:
    case GMT_OP_CommInitRankScalable: case GMT_OP_CommSplit: case GMT_OP_CommShrink:
        return true;
    default:
        return false;
    }
}

static bool is_collective_op(unsigned op)
{
    return (op >= GMT_OP_AllReduce && op <= GMT_OP_Recv) || op == GMT_OP_Group;
}

static int cmp_scope_time(const void *a, const void *b, void *ctx)
{
    const struct gmt_scope *s = ctx;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (s[x].t_begin != s[y].t_begin)
        return s[x].t_begin < s[y].t_begin ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* Numbers equal identities in order of appearance; m->v[from..] are this process's. */
static void number_occurrences(struct gmt_metrics *m, size_t from)
{
    for (size_t i = from; i < m->n; i++) {
        uint32_t k = 1;
        m->v[i].occurrence = 0;
        for (size_t j = from; j < i; j++) {
            struct gmt_metric x = m->v[j];
            x.occurrence = 0;
            if (!gmt_metric_cmp(&x, &m->v[i]))
                k++;
        }
        m->v[i].occurrence = k;
    }
}

static int cat_of(const struct gmt_analysis *a, const char *category)
{
    for (size_t c = 0; c < a->n_cats && c < GMT_MAX_CATS; c++)
        if (!strcmp(a->cat_names[c], category))
            return (int)c;
    return -1;
}

static bool analysis_empty(const struct gmt_analysis *a)
{
    for (size_t d = 0; d < a->rep.n_dev; d++)
        if (a->rep.dev[d].allocs || a->rep.dev[d].failures)
            return false;
    return a->t.n_scopes == 0;
}

static int add_inits(struct gmt_metrics *m, const struct gmt_analysis *a, int32_t rank,
                     int32_t process)
{
    const struct gmt_trace *t = &a->t;
    size_t *order = malloc((t->n_scopes ? t->n_scopes : 1) * sizeof *order);
    if (!order)
        return -ENOMEM;
    for (size_t i = 0; i < t->n_scopes; i++)
        order[i] = i;
    qsort_r(order, t->n_scopes, sizeof *order, cmp_scope_time, t->scopes);
    for (size_t k = 0; k < t->n_scopes; k++) {
        const struct gmt_scope *s = &t->scopes[order[k]];
        if (!is_init_op(s->op))
            continue;
        struct gmt_metric *e = push(m);
        if (!e) {
            free(order);
            return -ENOMEM;
        }
        e->rank = rank;
        e->process = process;
        e->check = GMT_CHECK_init;
        snprintf(e->op, sizeof e->op, "%s", gmt_op_name(s->op));
        e->value = a->rep.scope_tracked ? a->rep.scope_tracked[order[k]] : 0;
        e->calls = 1;
        if (s->op == GMT_OP_CommSplit || s->op == GMT_OP_CommShrink) {
            /* the child is the n-th communicator naming this parent, for the n-th split */
            size_t nth = 0, seen = 0;
            for (size_t j = 0; j < k; j++) {
                const struct gmt_scope *p = &t->scopes[order[j]];
                if ((p->op == GMT_OP_CommSplit || p->op == GMT_OP_CommShrink) && p->comm == s->comm)
                    nth++;
            }
            for (size_t c = 0; s->comm && c < t->n_comms; c++)
                if (t->comms[c].parent == s->comm && seen++ == nth) {
                    e->comm_size = t->comms[c].nranks;
                    e->comm_rank = t->comms[c].rank;
                    break;
                }
        } else {
            /* the hooks record nranks (devices for InitAll) as count, the rank as peer */
            if (s->count > 0 && s->count <= INT32_MAX)
                e->comm_size = (int32_t)s->count;
            int32_t peer = gmt_trace_scope_peer(t, s);
            if (s->op != GMT_OP_CommInitAll && peer >= 0)
                e->comm_rank = peer;
        }
    }
    free(order);
    return 0;
}

int gmt_metrics_add(struct gmt_metrics *m, const struct gmt_analysis *a, int32_t rank,
                    int32_t process, const char *category)
{
    if (analysis_empty(a))
        return 0;
    size_t from = m->n;
    int r = add_inits(m, a, rank, process);
    if (r)
        return r;
    const struct gmt_report *rep = &a->rep;
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < rep->n_colls; i++) {
            const struct gmt_coll_row *c = &rep->colls[i];
            if (!is_collective_op(c->op))
                continue;
            struct gmt_metric *e = push(m);
            if (!e)
                return -ENOMEM;
            e->rank = rank;
            e->process = process;
            e->check = pass == 0 ? GMT_CHECK_first_call : GMT_CHECK_steady;
            snprintf(e->op, sizeof e->op, "%s", c->label);
            e->comm_size = c->nranks >= 0 ? c->nranks : -1;
            e->comm_rank = c->rank >= 0 ? c->rank : -1;
            e->bytes_per_call = c->bytes_per_call;
            e->calls = c->calls;
            if (pass == 0)
                e->value = c->first_tracked;
            else
                e->value = c->calls > 1 && c->later_tracked_max > 0 ? c->later_tracked_max : 0;
        }
    const char *cat = category && *category ? category : NULL;
    int ci = cat ? cat_of(a, cat) : -1;
    for (int pass = 0; pass < 2; pass++)
        for (size_t d = 0; d < rep->n_dev; d++) {
            const struct gmt_dev_report *dr = &rep->dev[d];
            /* a slot that only saw address space or host memory has nothing to gate */
            if (!dr->peak && !dr->failures)
                continue;
            struct gmt_metric *e = push(m);
            if (!e)
                return -ENOMEM;
            e->rank = rank;
            e->process = process;
            e->check = pass == 0 ? GMT_CHECK_peak : GMT_CHECK_leak;
            e->device = dr->device >= 0 ? dr->device : -1;
            if (cat)
                snprintf(e->category, sizeof e->category, "%s", cat);
            uint64_t v;
            if (pass == 0)
                v = !cat ? dr->peak : ci >= 0 ? dr->cat_peak[ci] : 0;
            else
                v = !cat ? dr->end : ci >= 0 ? dr->end_by_cat[ci] : 0;
            e->value = v > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)v;
        }
    number_occurrences(m, from);
    return 0;
}

/* ---- traces from paths ---- */

struct rank_count {
    int32_t rank;
    int32_t count;
};

void gmt_idents_init(struct gmt_idents *s)
{
    memset(s, 0, sizeof *s);
    s->seen.esize = sizeof(struct rank_count);
}

void gmt_idents_free(struct gmt_idents *s)
{
    gmt_vec_free(&s->seen);
}

static struct rank_count *rank_slot(const struct gmt_idents *s, int32_t rank)
{
    for (size_t k = 0; k < s->seen.len; k++)
        if (((struct rank_count *)s->seen.data)[k].rank == rank)
            return &((struct rank_count *)s->seen.data)[k];
    return NULL;
}

void gmt_idents_next(const struct gmt_idents *s, const struct gmt_analysis *a, int32_t *rank,
                     int32_t *process)
{
    *rank = a->t.has_proc && a->t.proc.rank >= 0 ? a->t.proc.rank : -1;
    /* no RANK in its environment (a launcher that passes ranks as arguments): its rank
     * in the first communicator it made is what a person means by its rank */
    for (size_t i = 0; *rank < 0 && i < a->t.n_comms; i++)
        if (!a->t.comms[i].parent && a->t.comms[i].rank >= 0)
            *rank = a->t.comms[i].rank;
    if (*rank >= 0) {
        const struct rank_count *rc = rank_slot(s, *rank);
        *process = rc ? rc->count + 1 : 0;
    } else {
        *process = s->unknown + 1;
    }
}

int gmt_idents_take(struct gmt_idents *s, int32_t rank)
{
    if (rank < 0) {
        s->unknown++;
        return 0;
    }
    struct rank_count *rc = rank_slot(s, rank);
    if (!rc) {
        if (!(rc = gmt_vec_push(&s->seen)))
            return -ENOMEM;
        rc->rank = rank;
    }
    rc->count++;
    return 0;
}

bool gmt_analysis_used_gpu(const struct gmt_analysis *a)
{
    return !analysis_empty(a);
}

int gmt_metrics_from_paths(struct gmt_metrics *m, char *const *paths, size_t n,
                           const struct gmt_report_opts *ro, const char *category)
{
    int status = 0;
    struct gmt_idents ids;
    gmt_idents_init(&ids);
    for (size_t i = 0; i < n; i++) {
        struct gmt_analysis a;
        char err[512];
        if (gmt_analyze(&a, paths[i], ro, err, sizeof err)) {
            fprintf(stderr, "gpumemtrace: %s\n", err);
            status = -EINVAL;
            continue;
        }
        int32_t rank, process;
        gmt_idents_next(&ids, &a, &rank, &process);
        size_t before = m->n;
        int r = gmt_metrics_add(m, &a, rank, process, category);
        gmt_analysis_free(&a);
        /* a process that used no GPU (a launcher) takes no identity */
        if (!r && m->n > before)
            r = gmt_idents_take(&ids, rank);
        if (r) {
            fprintf(stderr, "gpumemtrace: %s: out of memory\n", paths[i]);
            status = r;
            break;
        }
    }
    gmt_idents_free(&ids);
    return status;
}


/* ---- limits ---- */

/* "12", "2.5", "0.0001": a non-negative decimal with at most 4 fraction digits, times
 * 10^4, so a percentage becomes parts per million. */
static int parse_percent_ppm(const char *s, size_t len, uint64_t *out)
{
    uint64_t whole = 0, frac = 0;
    size_t i = 0, fd = 0;
    if (!len)
        return -EINVAL;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++) {
        whole = whole * 10 + (uint64_t)(s[i] - '0');
        if (whole > 1000000000ull) /* ten million times the base is no limit anymore */
            return -ERANGE;
    }
    if (i == 0)
        return -EINVAL;
    if (i < len && s[i] == '.') {
        i++;
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, fd++) {
            if (fd >= 4)
                return -EINVAL;
            frac = frac * 10 + (uint64_t)(s[i] - '0');
        }
        if (fd == 0)
            return -EINVAL;
    }
    if (i != len)
        return -EINVAL;
    while (fd++ < 4)
        frac *= 10;
    *out = whole * 10000 + frac;
    return 0;
}

int gmt_parse_size(const char *s, size_t len, uint64_t *out)
{
    size_t i = 0;
    uint64_t whole = 0;
    double frac = 0, scale = 0.1;
    bool digits = false;
    for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits = true) {
        if (whole > (UINT64_MAX - 9) / 10)
            return -EINVAL;
        whole = whole * 10 + (uint64_t)(s[i] - '0');
    }
    if (i < len && s[i] == '.') {
        i++;
        for (; i < len && s[i] >= '0' && s[i] <= '9'; i++, digits = true, scale /= 10)
            frac += (s[i] - '0') * scale;
    }
    if (!digits)
        return -EINVAL;
    while (i < len && s[i] == ' ')
        i++;
    static const struct { const char *name; uint64_t mult; } units[] = {
        {"", 1}, {"B", 1},
        {"K", 1ull << 10}, {"KiB", 1ull << 10}, {"KB", 1000ull},
        {"M", 1ull << 20}, {"MiB", 1ull << 20}, {"MB", 1000000ull},
        {"G", 1ull << 30}, {"GiB", 1ull << 30}, {"GB", 1000000000ull},
        {"T", 1ull << 40}, {"TiB", 1ull << 40}, {"TB", 1000000000000ull},
    };
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        if (strlen(units[u].name) != len - i || memcmp(units[u].name, s + i, len - i))
            continue;
        uint64_t mult = units[u].mult;
        if (whole > UINT64_MAX / mult)
            return -EINVAL;
        uint64_t v = whole * mult;
        uint64_t f = (uint64_t)(frac * (double)mult);
        if (v > UINT64_MAX - f)
            return -EINVAL;
        *out = v + f;
        return 0;
    }
    return -EINVAL;
}

static int parse_limit_list(struct gmt_limits *l, const char *spec, bool growth, char *err,
                            size_t errlen)
{
    const char *opt = growth ? "--max-growth" : "--max-bytes";
    const char *p = spec;
    if (!*p) {
        snprintf(err, errlen, "%s: empty", opt);
        return -EINVAL;
    }
    for (;;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        int idx = GMT_CHECK_N;
        const char *val = p;
        size_t vlen = len;
        if (eq) {
            idx = gmt_check_by_name(p, (size_t)(eq - p));
            if (idx < 0) {
                snprintf(err, errlen, "%s: unknown check '%.*s' (checks: init, first_call, "
                         "steady, peak, leak)", opt, (int)(eq - p), p);
                return -EINVAL;
            }
            val = eq + 1;
            vlen = len - (size_t)(val - p);
        }
        if (growth) {
            uint64_t ppm;
            if (vlen < 2 || val[vlen - 1] != '%' || parse_percent_ppm(val, vlen - 1, &ppm)) {
                snprintf(err, errlen, "%s: '%.*s' is not a percentage like 5%% or 2.5%%", opt,
                         (int)vlen, val);
                return -EINVAL;
            }
            l->has_growth[idx] = true;
            l->growth_ppm[idx] = ppm;
        } else {
            uint64_t b;
            if (gmt_parse_size(val, vlen, &b)) {
                snprintf(err, errlen, "%s: '%.*s' is not a size like 0, 512KiB or 64MiB", opt,
                         (int)vlen, val);
                return -EINVAL;
            }
            l->has_bytes[idx] = true;
            l->max_bytes[idx] = b;
        }
        if (!end)
            return 0;
        p = end + 1;
    }
}

int gmt_limits_parse_growth(struct gmt_limits *l, const char *spec, char *err, size_t errlen)
{
    return parse_limit_list(l, spec, true, err, errlen);
}

int gmt_limits_parse_bytes(struct gmt_limits *l, const char *spec, char *err, size_t errlen)
{
    return parse_limit_list(l, spec, false, err, errlen);
}

void gmt_limits_resolve(const struct gmt_limits *cli, const struct gmt_limits *base,
                        enum gmt_check c, uint64_t *growth_ppm, uint64_t *max_bytes)
{
    const struct gmt_limits *order[2] = {cli, base};
    *growth_ppm = GMT_DEFAULT_GROWTH_PPM;
    *max_bytes = GMT_DEFAULT_MAX_BYTES;
    bool g = false, b = false;
    for (int i = 0; i < 2; i++) {
        const struct gmt_limits *l = order[i];
        if (!l)
            continue;
        int idx[2] = {c, GMT_CHECK_N};
        for (int k = 0; k < 2; k++) {
            if (!g && l->has_growth[idx[k]]) {
                *growth_ppm = l->growth_ppm[idx[k]];
                g = true;
            }
            if (!b && l->has_bytes[idx[k]]) {
                *max_bytes = l->max_bytes[idx[k]];
                b = true;
            }
        }
    }
}

uint64_t gmt_limit_allowed(int64_t base, uint64_t growth_ppm, uint64_t max_bytes)
{
    unsigned __int128 b = base > 0 ? (uint64_t)base : 0;
    unsigned __int128 rel = b * growth_ppm / 1000000u;
    uint64_t r = rel > UINT64_MAX ? UINT64_MAX : (uint64_t)rel;
    return r > max_bytes ? r : max_bytes;
}

const char *gmt_fmt_ppm(char *buf, size_t len, uint64_t ppm)
{
    uint64_t whole = ppm / 10000, frac = ppm % 10000;
    if (!frac) {
        snprintf(buf, len, "%" PRIu64 "%%", whole);
        return buf;
    }
    char f[8];
    snprintf(f, sizeof f, "%04" PRIu64, frac);
    for (int i = 3; i > 0 && f[i] == '0'; i--)
        f[i] = 0;
    snprintf(buf, len, "%" PRIu64 ".%s%%", whole, f);
    return buf;
}

/* ---- baseline JSON ---- */

void gmt_baseline_free(struct gmt_baseline *b)
{
    gmt_metrics_free(&b->metrics);
    memset(b, 0, sizeof *b);
}

/* Percent as a JSON number: 5, 2.5, 0.0001. */
static void jpercent(FILE *out, uint64_t ppm)
{
    char b[48];
    gmt_fmt_ppm(b, sizeof b, ppm);
    b[strlen(b) - 1] = 0;
    fputs(b, out);
}

static void write_limit_table(FILE *out, const struct gmt_limits *l, bool growth)
{
    /* keys sorted: "default" sorts among the check names */
    const char *names[GMT_CHECK_N + 1];
    int idx[GMT_CHECK_N + 1];
    int n = 0;
    for (int i = 0; i <= GMT_CHECK_N; i++) {
        bool has = growth ? l->has_growth[i] : l->has_bytes[i];
        if (!has && i != GMT_CHECK_N)
            continue;
        names[n] = i == GMT_CHECK_N ? "default" : gmt_check_name((enum gmt_check)i);
        idx[n++] = i;
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(names[j - 1], names[j]) > 0; j--) {
            const char *tn = names[j]; names[j] = names[j - 1]; names[j - 1] = tn;
            int ti = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = ti;
        }
    fputc('{', out);
    for (int i = 0; i < n; i++) {
        fprintf(out, "%s\"%s\": ", i ? ", " : "", names[i]);
        int k = idx[i];
        if (growth)
            jpercent(out, l->has_growth[k] ? l->growth_ppm[k] : GMT_DEFAULT_GROWTH_PPM);
        else
            fprintf(out, "%" PRIu64, l->has_bytes[k] ? l->max_bytes[k] : (uint64_t)GMT_DEFAULT_MAX_BYTES);
    }
    fputc('}', out);
}

static void write_metric(FILE *out, const struct gmt_metric *m)
{
    bool coll = m->check == GMT_CHECK_first_call || m->check == GMT_CHECK_steady;
    bool dev = m->check == GMT_CHECK_peak || m->check == GMT_CHECK_leak;
    /* keys in sorted order */
    fprintf(out, "{\"bytes\": %" PRId64, m->value);
    if (coll)
        fprintf(out, ", \"bytes_per_call\": %" PRIu64, m->bytes_per_call);
    if (dev && m->category[0]) {
        fprintf(out, ", \"category\": ");
        gmt_fput_json_string(out, m->category);
    }
    fprintf(out, ", \"check\": \"%s\"", gmt_check_name(m->check));
    if (!dev)
        fprintf(out, ", \"comm_rank\": %d, \"comm_size\": %d", m->comm_rank, m->comm_size);
    if (dev)
        fprintf(out, ", \"device\": %d", m->device);
    if (m->occurrence > 1)
        fprintf(out, ", \"occurrence\": %u", m->occurrence);
    if (!dev) {
        fprintf(out, ", \"op\": ");
        gmt_fput_json_string(out, m->op);
    }
    if (m->process)
        fprintf(out, ", \"process\": %d", m->process);
    if (m->rank >= 0)
        fprintf(out, ", \"rank\": %d", m->rank);
    fputc('}', out);
}

int gmt_baseline_write(FILE *out, const struct gmt_baseline *b)
{
    fprintf(out, "{\n  \"category\": ");
    if (b->category[0])
        gmt_fput_json_string(out, b->category);
    else
        fprintf(out, "null");
    fprintf(out, ",\n  \"limits\": {\n    \"max_bytes\": ");
    write_limit_table(out, &b->limits, false);
    fprintf(out, ",\n    \"max_growth_percent\": ");
    write_limit_table(out, &b->limits, true);
    fprintf(out, "\n  },\n  \"metrics\": [");
    for (size_t i = 0; i < b->metrics.n; i++) {
        fprintf(out, "%s\n    ", i ? "," : "");
        write_metric(out, &b->metrics.v[i]);
    }
    fprintf(out, "%s],\n  \"schema\": \"%s\"\n}\n", b->metrics.n ? "\n  " : "", GMT_BASELINE_SCHEMA);
    return ferror(out) ? -EIO : 0;
}

static int bad(const struct gmt_json *v, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int bad(const struct gmt_json *v, char *err, size_t errlen, const char *fmt, ...)
{
    int w = snprintf(err, errlen, "%u:%u: ", v->line, v->col);
    if (w >= 0 && (size_t)w < errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + w, errlen - (size_t)w, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

static int get_int(const struct gmt_json *v, const char *key, int64_t lo, int64_t hi,
                   int64_t *out, char *err, size_t errlen)
{
    int r = gmt_json_int64(v, out);
    if (r == -EINVAL)
        return bad(v, err, errlen, "\"%s\" wants an integer, not %s", key,
                   v->type == GMT_JSON_NUMBER ? v->str : gmt_json_type_name(v->type));
    if (r || *out < lo || *out > hi)
        return bad(v, err, errlen, "\"%s\" is out of range (%s)", key, v->str);
    return 0;
}

static bool category_ok(const char *s, size_t len)
{
    if (len == 0 || len > GMT_CAT_NAME_MAX)
        return false;
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

static int parse_limit_table(const struct gmt_json *v, struct gmt_limits *l, bool growth,
                             char *err, size_t errlen)
{
    const char *what = growth ? "max_growth_percent" : "max_bytes";
    if (v->type != GMT_JSON_OBJECT)
        return bad(v, err, errlen, "\"%s\" wants an object, not %s", what, gmt_json_type_name(v->type));
    for (size_t i = 0; i < v->n; i++) {
        const char *k = v->keys[i];
        const struct gmt_json *x = &v->items[i];
        int idx = !strcmp(k, "default") ? GMT_CHECK_N : gmt_check_by_name(k, strlen(k));
        if (idx < 0)
            return bad(x, err, errlen, "unknown check \"%s\" in \"%s\" (checks: default, init, "
                       "first_call, steady, peak, leak)", k, what);
        if (growth) {
            uint64_t ppm;
            if (x->type != GMT_JSON_NUMBER || parse_percent_ppm(x->str, strlen(x->str), &ppm))
                return bad(x, err, errlen, "\"%s\" in \"%s\" wants a percentage like 5 or 2.5 "
                           "(at most 4 decimals)", k, what);
            l->has_growth[idx] = true;
            l->growth_ppm[idx] = ppm;
        } else {
            int64_t n;
            int r = get_int(x, k, 0, INT64_MAX, &n, err, errlen);
            if (r)
                return r;
            l->has_bytes[idx] = true;
            l->max_bytes[idx] = (uint64_t)n;
        }
    }
    return 0;
}

static int parse_metric(const struct gmt_json *v, struct gmt_metric *m, char *err, size_t errlen)
{
    if (v->type != GMT_JSON_OBJECT)
        return bad(v, err, errlen, "a metric wants an object, not %s", gmt_json_type_name(v->type));
    memset(m, 0, sizeof *m);
    m->rank = m->comm_size = m->comm_rank = m->device = -1;
    m->occurrence = 1;
    m->check = GMT_CHECK_N;
    bool has_bytes = false;
    for (size_t i = 0; i < v->n; i++) {
        const char *k = v->keys[i];
        const struct gmt_json *x = &v->items[i];
        int64_t n;
        int r = 0;
        if (!strcmp(k, "check")) {
            int c = x->type == GMT_JSON_STRING ? gmt_check_by_name(x->str, x->len) : -1;
            if (c < 0)
                return bad(x, err, errlen, "\"check\" wants one of init, first_call, steady, "
                           "peak, leak");
            m->check = (enum gmt_check)c;
        } else if (!strcmp(k, "op")) {
            if (x->type != GMT_JSON_STRING || x->len == 0 || x->len >= sizeof m->op ||
                memchr(x->str, 0, x->len))
                return bad(x, err, errlen, "\"op\" wants a label of 1..%zu characters",
                           sizeof m->op - 1);
            memcpy(m->op, x->str, x->len + 1);
        } else if (!strcmp(k, "category")) {
            if (x->type != GMT_JSON_STRING || !category_ok(x->str, x->len))
                return bad(x, err, errlen, "\"category\" wants a category name ([A-Za-z0-9_.-], "
                           "1..%d characters)", GMT_CAT_NAME_MAX);
            memcpy(m->category, x->str, x->len + 1);
        } else if (!strcmp(k, "bytes")) {
            if ((r = get_int(x, k, INT64_MIN, INT64_MAX, &n, err, errlen)))
                return r;
            m->value = n;
            has_bytes = true;
        } else if (!strcmp(k, "bytes_per_call")) {
            if ((r = get_int(x, k, 0, INT64_MAX, &n, err, errlen)))
                return r;
            m->bytes_per_call = (uint64_t)n;
        } else if (!strcmp(k, "comm_rank") || !strcmp(k, "comm_size") || !strcmp(k, "device")) {
            if ((r = get_int(x, k, -1, INT32_MAX, &n, err, errlen)))
                return r;
            *(!strcmp(k, "comm_rank") ? &m->comm_rank : !strcmp(k, "comm_size") ? &m->comm_size
                                                                                 : &m->device) = (int32_t)n;
        } else if (!strcmp(k, "rank")) {
            if ((r = get_int(x, k, 0, INT32_MAX, &n, err, errlen)))
                return r;
            m->rank = (int32_t)n;
        } else if (!strcmp(k, "process")) {
            if ((r = get_int(x, k, 1, INT32_MAX, &n, err, errlen)))
                return r;
            m->process = (int32_t)n;
        } else if (!strcmp(k, "occurrence")) {
            if ((r = get_int(x, k, 1, UINT32_MAX, &n, err, errlen)))
                return r;
            m->occurrence = (uint32_t)n;
        } else {
            return bad(x, err, errlen, "unknown key \"%s\" in a metric", k);
        }
    }
    if (m->check == GMT_CHECK_N)
        return bad(v, err, errlen, "a metric needs \"check\"");
    if (!has_bytes)
        return bad(v, err, errlen, "a metric needs \"bytes\"");
    if (m->rank < 0 && m->process < 1)
        return bad(v, err, errlen, "a metric needs \"rank\" or \"process\"");
    bool dev = m->check == GMT_CHECK_peak || m->check == GMT_CHECK_leak;
    if (!dev && !m->op[0])
        return bad(v, err, errlen, "a %s metric needs \"op\"", gmt_check_name(m->check));
    return 0;
}

int gmt_baseline_parse(struct gmt_baseline *b, const char *text, size_t len, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    struct gmt_json *root;
    int r = gmt_json_parse(text, len, &root, err, errlen);
    if (r)
        return r;
    r = -EINVAL;
    if (root->type != GMT_JSON_OBJECT) {
        bad(root, err, errlen, "a baseline is an object, not %s", gmt_json_type_name(root->type));
        goto out;
    }
    const struct gmt_json *schema = gmt_json_get(root, "schema");
    if (!schema) {
        bad(root, err, errlen, "not a gpumemtrace baseline (no \"schema\")");
        goto out;
    }
    if (schema->type != GMT_JSON_STRING || strcmp(schema->str, GMT_BASELINE_SCHEMA)) {
        bad(schema, err, errlen, "\"schema\" is not \"%s\"", GMT_BASELINE_SCHEMA);
        goto out;
    }
    for (size_t i = 0; i < root->n; i++) {
        const char *k = root->keys[i];
        const struct gmt_json *v = &root->items[i];
        if (!strcmp(k, "schema")) {
            continue;
        } else if (!strcmp(k, "category")) {
            if (v->type == GMT_JSON_NULL)
                continue;
            if (v->type != GMT_JSON_STRING || !category_ok(v->str, v->len)) {
                bad(v, err, errlen, "\"category\" wants null or a category name");
                goto out;
            }
            memcpy(b->category, v->str, v->len + 1);
        } else if (!strcmp(k, "limits")) {
            if (v->type != GMT_JSON_OBJECT) {
                bad(v, err, errlen, "\"limits\" wants an object");
                goto out;
            }
            for (size_t j = 0; j < v->n; j++) {
                bool growth = !strcmp(v->keys[j], "max_growth_percent");
                if (!growth && strcmp(v->keys[j], "max_bytes")) {
                    bad(&v->items[j], err, errlen, "unknown key \"%s\" in \"limits\" (max_bytes, "
                        "max_growth_percent)", v->keys[j]);
                    goto out;
                }
                if (parse_limit_table(&v->items[j], &b->limits, growth, err, errlen))
                    goto out;
            }
        } else if (!strcmp(k, "metrics")) {
            if (v->type != GMT_JSON_ARRAY) {
                bad(v, err, errlen, "\"metrics\" wants an array");
                goto out;
            }
            for (size_t j = 0; j < v->n; j++) {
                struct gmt_metric *m = push(&b->metrics);
                if (!m) {
                    snprintf(err, errlen, "out of memory");
                    r = -ENOMEM;
                    goto out;
                }
                if (parse_metric(&v->items[j], m, err, errlen))
                    goto out;
                for (size_t q = 0; q + 1 < b->metrics.n; q++)
                    if (!gmt_metric_cmp(&b->metrics.v[q], m)) {
                        bad(&v->items[j], err, errlen, "the same metric twice");
                        goto out;
                    }
            }
        } else {
            bad(v, err, errlen, "unknown key \"%s\" in a baseline", k);
            goto out;
        }
    }
    gmt_metrics_sort(&b->metrics);
    r = 0;
out:
    gmt_json_free(root);
    if (r)
        gmt_baseline_free(b);
    return r;
}

int gmt_baseline_load(struct gmt_baseline *b, const char *path, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -errno;
    }
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    int r = 0;
    while (buf) {
        if (len == cap) {
            if (cap > GMT_JSON_MAX_INPUT) {
                snprintf(err, errlen, "%s: larger than %u bytes: not a baseline", path,
                         GMT_JSON_MAX_INPUT);
                r = -E2BIG;
                break;
            }
            char *nb = realloc(buf, cap * 2);
            if (!nb) {
                snprintf(err, errlen, "%s: out of memory", path);
                r = -ENOMEM;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        size_t k = fread(buf + len, 1, cap - len, f);
        len += k;
        if (k == 0)
            break;
    }
    if (!r && ferror(f)) {
        snprintf(err, errlen, "%s: read error", path);
        r = -EIO;
    }
    fclose(f);
    if (!buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -ENOMEM;
    }
    if (!r) {
        char e[400];
        r = gmt_baseline_parse(b, buf, len, e, sizeof e);
        if (r)
            snprintf(err, errlen, "%s:%s", path, e);
    }
    free(buf);
    return r;
}
