/* growth.h: how much a metric may grow over its baseline: per-check limits, and each metric's verdict under them. */
#ifndef GMT_GROWTH_H
#define GMT_GROWTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics.h"

/* Limits: growth fails when new - base > max(base * max_growth, max_bytes). Per check,
 * plus a default (index GMT_CHECK_N) for checks not named. */
#define GMT_DEFAULT_GROWTH_PPM 50000u  /* 5% */
#define GMT_DEFAULT_MAX_BYTES 0u
struct gmt_limits {
    bool has_growth[GMT_CHECK_N + 1];
    uint64_t growth_ppm[GMT_CHECK_N + 1];  /* parts per million of the base: 5% = 50000 */
    bool has_bytes[GMT_CHECK_N + 1];
    uint64_t max_bytes[GMT_CHECK_N + 1];
};
/* "5%", "peak=10%,first_call=0%", "2.5%,steady=0%": items separated by commas, each a
 * percentage (the default) or CHECK=percentage. 0 or -EINVAL with a message in err. */
int gmt_limits_parse_growth(struct gmt_limits *l, const char *spec, char *err, size_t errlen);
/* "64MiB", "0,leak=1MiB": like growth, each value a byte size (B, KiB, MiB, GiB, TiB,
 * K/M/G/T the same; KB/MB/GB/TB decimal). */
int gmt_limits_parse_bytes(struct gmt_limits *l, const char *spec, char *err, size_t errlen);
/* "12", "2.5", "0.0001" (len bytes at s): a non-negative decimal with at most 4 fraction
 * digits, a percentage, into parts per million. 0 or -EINVAL. */
int gmt_parse_percent_ppm(const char *s, size_t len, uint64_t *out);
/* A byte size as above. 0 or -EINVAL. */
int gmt_parse_size(const char *s, size_t len, uint64_t *out);
/* The limits that apply to check c: the command line's for c, else the command line's
 * default, else the baseline's for c, else the baseline's default, else the built-in. */
void gmt_limits_resolve(const struct gmt_limits *cli, const struct gmt_limits *base,
                        enum gmt_check c, uint64_t *growth_ppm, uint64_t *max_bytes);
/* The allowed growth over `base` bytes: max(floor(max(base,0) * ppm / 1e6), max_bytes). */
uint64_t gmt_limit_allowed(int64_t base, uint64_t growth_ppm, uint64_t max_bytes);
/* "5%", "2.5%", "0.0001%". */
const char *gmt_fmt_ppm(char *buf, size_t len, uint64_t ppm);

/* One metric of the traces against the baseline: within its limit, beyond it, or only
 * in the baseline. */
enum gmt_verdict_kind { GMT_PASS, GMT_FAIL, GMT_GONE };
struct gmt_verdict {
    enum gmt_verdict_kind kind;
    const struct gmt_metric *base, *now; /* either may be NULL (new / gone) */
    int64_t growth;                      /* now - base (0 when new), bytes, saturated */
    uint64_t allowed, ppm, max_bytes;    /* the growth allowed, from these limits */
};
struct gmt_verdicts {
    struct gmt_verdict *v; size_t n;
    size_t fails, gone, added;           /* verdicts of each kind; added: not in the base */
};
/* Every metric of `base` and `now` (both sorted by identity), matched by identity, with
 * the limits of `cli` over those of `base_limits` (gmt_limits_resolve). A metric only
 * in now grows from 0. Returns 0 or -ENOMEM. */
int gmt_verdicts_of(struct gmt_verdicts *vs, const struct gmt_metrics *base,
                    const struct gmt_limits *base_limits, const struct gmt_metrics *now,
                    const struct gmt_limits *cli);
void gmt_verdicts_free(struct gmt_verdicts *vs);

#endif
