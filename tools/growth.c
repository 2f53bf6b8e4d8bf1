/* growth.c: per-check growth limits (parsed, resolved against a baseline's) and each metric's verdict under them. */
#include "growth.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* "12", "2.5", "0.0001": a non-negative decimal with at most 4 fraction digits, times
 * 10^4, so a percentage becomes parts per million. */
int gmt_parse_percent_ppm(const char *s, size_t len, uint64_t *out)
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
            if (vlen < 2 || val[vlen - 1] != '%' || gmt_parse_percent_ppm(val, vlen - 1, &ppm)) {
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

int gmt_verdicts_of(struct gmt_verdicts *vs, const struct gmt_metrics *base,
                    const struct gmt_limits *base_limits, const struct gmt_metrics *now,
                    const struct gmt_limits *cli)
{
    memset(vs, 0, sizeof *vs);
    size_t cap = now->n + base->n;
    if (!(vs->v = calloc(cap ? cap : 1, sizeof *vs->v)))
        return -ENOMEM;
    size_t i = 0, j = 0;
    while (i < base->n || j < now->n) {
        struct gmt_verdict *r = &vs->v[vs->n++];
        int cmp = i >= base->n ? 1 : j >= now->n ? -1 : gmt_metric_cmp(&base->v[i], &now->v[j]);
        if (cmp < 0) {
            r->kind = GMT_GONE;
            r->base = &base->v[i++];
            gmt_limits_resolve(cli, base_limits, r->base->check, &r->ppm, &r->max_bytes);
            vs->gone++;
            continue;
        }
        r->now = &now->v[j++];
        if (cmp == 0)
            r->base = &base->v[i++];
        else
            vs->added++;
        int64_t b = r->base ? r->base->value : 0;
        gmt_limits_resolve(cli, base_limits, r->now->check, &r->ppm, &r->max_bytes);
        r->growth = gmt_sat_sub(r->now->value, b);
        r->allowed = gmt_limit_allowed(b, r->ppm, r->max_bytes);
        r->kind = r->growth > 0 && (uint64_t)r->growth > r->allowed ? GMT_FAIL : GMT_PASS;
        if (r->kind == GMT_FAIL)
            vs->fails++;
    }
    return 0;
}

void gmt_verdicts_free(struct gmt_verdicts *vs)
{
    free(vs->v);
    memset(vs, 0, sizeof *vs);
}
