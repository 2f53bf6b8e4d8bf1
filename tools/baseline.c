/* baseline.c: the baseline file: written as stable JSON (keys sorted, one metric per line) and parsed back. */
#include "baseline.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "input.h"
#include "json.h"
#include "trace.h"
#include "util.h"

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
    fprintf(out, "%s]", b->metrics.n ? "\n  " : "");
    if (b->nccl.known) {
        /* what diff and check name when NCCL memory changed */
        fprintf(out, ",\n  \"nccl\": {\"env\": {");
        int k = 0;
        for (const char *l = b->nccl.env; *l;) {
            const char *nl = strchr(l, '\n'), *eq = strchr(l, '=');
            size_t ll = nl ? (size_t)(nl - l) : strlen(l);
            if (eq && eq < l + ll) {
                fprintf(out, "%s", k++ ? ", " : "");
                gmt_fput_json_stringn(out, l, (size_t)(eq - l));
                fprintf(out, ": ");
                gmt_fput_json_stringn(out, eq + 1, ll - (size_t)(eq - l) - 1);
            }
            l += ll + (nl ? 1 : 0);
        }
        fprintf(out, "}, \"version\": %d}", b->nccl.version);
    }
    fprintf(out, ",\n  \"schema\": \"%s\"\n}\n", GMT_BASELINE_SCHEMA);
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
            if (x->type != GMT_JSON_NUMBER || gmt_parse_percent_ppm(x->str, strlen(x->str), &ppm))
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

/* One key of a metric: its value into m. 0 or -EINVAL with the message in err. */
static int parse_metric_key(const char *k, const struct gmt_json *x, struct gmt_metric *m,
                            char *err, size_t errlen)
{
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
        if (x->type != GMT_JSON_STRING || !gmt_category_name_ok(x->str, x->len))
            return bad(x, err, errlen, "\"category\" wants a category name ([A-Za-z0-9_.-], "
                       "1..%d characters)", GMT_CAT_NAME_MAX);
        memcpy(m->category, x->str, x->len + 1);
    } else if (!strcmp(k, "bytes")) {
        if ((r = get_int(x, k, -(int64_t)GMT_BYTES_MAX, (int64_t)GMT_BYTES_MAX, &n, err,
                         errlen)))
            return r;
        m->value = n;
    } else if (!strcmp(k, "bytes_per_call")) {
        /* count × element size, as the trace says: any 64-bit value, as written */
        char *end;
        errno = 0;
        unsigned long long u = x->type == GMT_JSON_NUMBER && x->str[0] >= '0' &&
                                       x->str[0] <= '9' ? strtoull(x->str, &end, 10) : 0;
        if (x->type != GMT_JSON_NUMBER || x->str[0] < '0' || x->str[0] > '9' || *end ||
            errno)
            return bad(x, err, errlen, "\"bytes_per_call\" wants an integer 0..2^64-1");
        m->bytes_per_call = u;
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
    return 0;
}

/* Where a metric's keys that only some checks have stood (NULL: absent), for the checks
 * made once "check" is known (docs/ci-gate.md). */
struct metric_keys {
    const struct gmt_json *bytes, *coll, *dev, *bpc;
};

/* What a metric must and must not have for its check. 0 or -EINVAL with the message. */
static int check_metric(const struct gmt_json *v, const struct gmt_metric *m,
                        const struct metric_keys *at, char *err, size_t errlen)
{
    if (m->check == GMT_CHECK_N)
        return bad(v, err, errlen, "a metric needs \"check\"");
    if (!at->bytes)
        return bad(v, err, errlen, "a metric needs \"bytes\"");
    if (m->rank < 0 && m->process < 1)
        return bad(v, err, errlen, "a metric needs \"rank\" or \"process\"");
    bool dev = m->check == GMT_CHECK_peak || m->check == GMT_CHECK_leak;
    const char *name = gmt_check_name(m->check);
    if (!dev && !m->op[0])
        return bad(v, err, errlen, "a %s metric needs \"op\"", name);
    if (dev && at->coll)
        return bad(at->coll, err, errlen, "a %s metric has no \"op\", \"comm_rank\" or "
                   "\"comm_size\"", name);
    if (!dev && at->dev)
        return bad(at->dev, err, errlen, "a %s metric has no \"device\" or \"category\"", name);
    if (at->bpc && m->check != GMT_CHECK_first_call && m->check != GMT_CHECK_steady)
        return bad(at->bpc, err, errlen, "a %s metric has no \"bytes_per_call\"", name);
    /* only what a communicator's init or a first call adds can be negative (it may free
     * more than it allocates); a later call's most, a peak and a leak cannot */
    if (m->value < 0 && m->check != GMT_CHECK_init && m->check != GMT_CHECK_first_call)
        return bad(at->bytes, err, errlen, "\"bytes\" of a %s metric wants 0..2^56, not %" PRId64,
                   name, m->value);
    return 0;
}

static int parse_metric(const struct gmt_json *v, struct gmt_metric *m, char *err, size_t errlen)
{
    if (v->type != GMT_JSON_OBJECT)
        return bad(v, err, errlen, "a metric wants an object, not %s", gmt_json_type_name(v->type));
    memset(m, 0, sizeof *m);
    m->rank = m->comm_size = m->comm_rank = m->device = m->dev_lo = m->dev_hi = -1;
    m->occurrence = 1;
    m->check = GMT_CHECK_N;
    struct metric_keys at = {0};
    for (size_t i = 0; i < v->n; i++) {
        const char *k = v->keys[i];
        const struct gmt_json *x = &v->items[i];
        if (!strcmp(k, "op") || !strcmp(k, "comm_rank") || !strcmp(k, "comm_size"))
            at.coll = at.coll ? at.coll : x;
        else if (!strcmp(k, "device") || !strcmp(k, "category"))
            at.dev = at.dev ? at.dev : x;
        else if (!strcmp(k, "bytes_per_call"))
            at.bpc = x;
        else if (!strcmp(k, "bytes"))
            at.bytes = x;
        int r = parse_metric_key(k, x, m, err, errlen);
        if (r)
            return r;
    }
    return check_metric(v, m, &at, err, errlen);
}

/* The baseline's "limits" object. 0 or -EINVAL with the message in err. */
static int parse_limits(const struct gmt_json *v, struct gmt_limits *l, char *err, size_t errlen)
{
    if (v->type != GMT_JSON_OBJECT)
        return bad(v, err, errlen, "\"limits\" wants an object");
    for (size_t j = 0; j < v->n; j++) {
        bool growth = !strcmp(v->keys[j], "max_growth_percent");
        if (!growth && strcmp(v->keys[j], "max_bytes"))
            return bad(&v->items[j], err, errlen, "unknown key \"%s\" in \"limits\" (max_bytes, "
                       "max_growth_percent)", v->keys[j]);
        if (parse_limit_table(&v->items[j], l, growth, err, errlen))
            return -EINVAL;
    }
    return 0;
}

/* The baseline's "metrics" array, each metric once. 0, -EINVAL or -ENOMEM with the
 * message in err. */
static int parse_metrics(const struct gmt_json *v, struct gmt_metrics *ms, char *err,
                         size_t errlen)
{
    if (v->type != GMT_JSON_ARRAY)
        return bad(v, err, errlen, "\"metrics\" wants an array");
    for (size_t j = 0; j < v->n; j++) {
        struct gmt_metric *m = gmt_metrics_push(ms);
        if (!m) {
            snprintf(err, errlen, "out of memory");
            return -ENOMEM;
        }
        if (parse_metric(&v->items[j], m, err, errlen))
            return -EINVAL;
        for (size_t q = 0; q + 1 < ms->n; q++)
            if (!gmt_metric_cmp(&ms->v[q], m))
                return bad(&v->items[j], err, errlen, "the same metric twice");
    }
    return 0;
}

/* "nccl": {"env": {"NCCL_X": "value", ...}, "version": N}, the run's NCCL. */
static int parse_nccl(const struct gmt_json *v, struct gmt_nccl_print *p, char *err, size_t errlen)
{
    if (v->type != GMT_JSON_OBJECT)
        return bad(v, err, errlen, "\"nccl\" wants an object");
    memset(p, 0, sizeof *p);
    const struct gmt_json *env = gmt_json_get(v, "env"), *ver = gmt_json_get(v, "version");
    int64_t x = 0;
    if (ver && (gmt_json_int64(ver, &x) || x < 0 || x > INT32_MAX))
        return bad(ver, err, errlen, "\"version\" wants NCCL's version number (22809)");
    p->version = (int32_t)x;
    if (env && env->type != GMT_JSON_OBJECT)
        return bad(env, err, errlen, "\"env\" wants an object of strings");
    size_t at = 0;
    for (size_t i = 0; env && i < env->n; i++) {
        const struct gmt_json *e = &env->items[i];
        const char *name = env->keys[i];
        if (e->type != GMT_JSON_STRING || strncmp(name, "NCCL_", 5) || strpbrk(name, "=\n") ||
            memchr(e->str, '\n', e->len))
            return bad(e, err, errlen, "\"env\" wants NCCL_* names and one-line strings");
        size_t need = strlen(name) + 1 + e->len + 1;
        if (at + need + 1 > sizeof p->env)
            return bad(e, err, errlen, "\"env\" is longer than %d bytes", GMT_NCCL_PRINT_MAX);
        at += (size_t)snprintf(p->env + at, sizeof p->env - at, "%s=%s\n", name, e->str);
    }
    p->known = true;
    return 0;
}

/* One key of the baseline's object. 0, -EINVAL or -ENOMEM with the message in err. */
static int parse_key(struct gmt_baseline *b, const char *k, const struct gmt_json *v, char *err,
                     size_t errlen)
{
    if (!strcmp(k, "schema"))
        return 0;
    if (!strcmp(k, "category")) {
        if (v->type == GMT_JSON_NULL)
            return 0;
        if (v->type != GMT_JSON_STRING || !gmt_category_name_ok(v->str, v->len))
            return bad(v, err, errlen, "\"category\" wants null or a category name");
        memcpy(b->category, v->str, v->len + 1);
        return 0;
    }
    if (!strcmp(k, "limits"))
        return parse_limits(v, &b->limits, err, errlen);
    if (!strcmp(k, "nccl"))
        return parse_nccl(v, &b->nccl, err, errlen);
    if (!strcmp(k, "metrics"))
        return parse_metrics(v, &b->metrics, err, errlen);
    return bad(v, err, errlen, "unknown key \"%s\" in a baseline", k);
}

int gmt_baseline_parse(struct gmt_baseline *b, const char *text, size_t len, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    struct gmt_json *root;
    int r = gmt_json_parse(text, len, &root, err, errlen);
    if (r)
        return r;
    const struct gmt_json *schema = root->type == GMT_JSON_OBJECT ? gmt_json_get(root, "schema") : NULL;
    if (root->type != GMT_JSON_OBJECT)
        r = bad(root, err, errlen, "a baseline is an object, not %s", gmt_json_type_name(root->type));
    else if (!schema)
        r = bad(root, err, errlen, "not a gpumemtrace baseline (no \"schema\")");
    else if (schema->type != GMT_JSON_STRING || strcmp(schema->str, GMT_BASELINE_SCHEMA))
        r = bad(schema, err, errlen, "\"schema\" is not \"%s\"", GMT_BASELINE_SCHEMA);
    for (size_t i = 0; !r && i < root->n; i++)
        r = parse_key(b, root->keys[i], &root->items[i], err, errlen);
    if (!r && !gmt_json_get(root, "metrics"))
        r = bad(root, err, errlen, "a baseline needs \"metrics\"");
    if (!r)
        gmt_metrics_sort(&b->metrics);
    gmt_json_free(root);
    if (r)
        gmt_baseline_free(b);
    return r;
}

int gmt_baseline_load(struct gmt_baseline *b, const char *path, char *err, size_t errlen)
{
    memset(b, 0, sizeof *b);
    FILE *f = gmt_fopen_input(path, 0, err, errlen);
    if (!f)
        return -EINVAL;
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
