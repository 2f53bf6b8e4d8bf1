/* options.c: the one options table (GMT_OPTIONS in gmt.h), read from the environment. */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gmt.h"

extern char **environ;

/* Copies, because the program may change or free its environment after we read it. */
static char output_buf[4096];
static char meminfo_buf[128];

/* The allowed range of an integer option is the "LO..HI" its help text states, so the
 * text users read and the check that runs cannot drift apart. */
static int help_range(const char *help, long *lo, long *hi)
{
    const char *dots = NULL;
    for (const char *p = strstr(help, ".."); p; p = strstr(p + 2, ".."))
        dots = p;
    if (!dots)
        return -1;
    const char *s = dots;
    while (s > help && s[-1] >= '0' && s[-1] <= '9')
        s--;
    if (s == dots)
        return -1;
    *lo = strtol(s, NULL, 10);
    *hi = strtol(dots + 2, NULL, 10);
    return 0;
}

static void parse_bool_(int *out, const char *env, const char *v, const char *help)
{
    static const char *const yes[] = { "1", "true", "yes", "on" };
    static const char *const no[] = { "0", "false", "no", "off" };
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (!strcasecmp(v, yes[i])) {
            *out = 1;
            return;
        }
        if (!strcasecmp(v, no[i])) {
            *out = 0;
            return;
        }
    }
    gmt_warn("%s=%s is not 0 or 1; ignored", env, v);
}

static void parse_int_(long *out, const char *env, const char *v, const char *help)
{
    long lo = 0, hi = 0;
    int ranged = help_range(help, &lo, &hi) == 0;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 10);
    if (errno || end == v || *end || (ranged && (n < lo || n > hi))) {
        if (ranged)
            gmt_warn("%s=%s is not an integer in %ld..%ld; using %ld", env, v, lo, hi, *out);
        else
            gmt_warn("%s=%s is not an integer; using %ld", env, v, *out);
        return;
    }
    *out = n;
}

/* A decimal count for the MEMINFO policy, 1..1000000000; advances *s past it. */
static int policy_count(const char **s, uint32_t *out)
{
    const char *p = *s;
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (uint64_t)(*p++ - '0');
        if (v > 1000000000u)
            return -1;
    }
    if (v < 1)
        return -1;
    *s = p;
    *out = (uint32_t)v;
    return 0;
}

/* The one parser of GPUMEMTRACE_MEMINFO: never | always | first:N[,every:K] with N, K
 * in 1..10^9. Its kind, or GMT_POLICY_INVALID for anything else. */
static int parse_meminfo(const char *v, uint32_t *first, uint32_t *every)
{
    *every = 0;
    if (!strcmp(v, "never"))
        return GMT_POLICY_NEVER;
    if (!strcmp(v, "always"))
        return GMT_POLICY_ALWAYS;
    const char *p = v;
    if (strncmp(p, "first:", 6))
        return GMT_POLICY_INVALID;
    p += 6;
    if (policy_count(&p, first))
        return GMT_POLICY_INVALID;
    if (*p) {
        if (strncmp(p, ",every:", 7))
            return GMT_POLICY_INVALID;
        p += 7;
        if (policy_count(&p, every) || *p)
            return GMT_POLICY_INVALID;
    }
    return GMT_POLICY_FIRST;
}

static void parse_str_(const char **out, const char *env, const char *v, const char *help)
{
    char *buf;
    size_t cap;
    if (!strcmp(env, "GPUMEMTRACE_OUTPUT")) {
        buf = output_buf;
        cap = sizeof output_buf;
    } else {
        buf = meminfo_buf;
        cap = sizeof meminfo_buf;
        uint32_t first, every;
        if (parse_meminfo(v, &first, &every) == GMT_POLICY_INVALID) {
            gmt_warn("%s=%s is not never, always or first:N[,every:K]; ignored", env, v);
            return;
        }
    }
    size_t len = strlen(v);
    if (len >= cap) {
        gmt_warn("%s is longer than %zu bytes; ignored", env, cap - 1);
        return;
    }
    memcpy(buf, v, len + 1);
    *out = buf;
}

static int known(const char *name, size_t len)
{
    /* recorded in the trace's ENV, read by the CLI, no option of the library's */
    static const char job_id[] = "GPUMEMTRACE_JOB_ID";
    if (len == sizeof job_id - 1 && !strncmp(name, job_id, len))
        return 1;
#define GMT_X(ID, type, field, def, env, help)                                               \
    if (len == sizeof(env) - 1 && !strncmp(name, env, len))                                  \
        return 1;
    GMT_OPTIONS(GMT_X)
#undef GMT_X
    return 0;
}

void gmt_options_load(void)
{
    int saved = errno;
    struct gmt_options defaults = {
#define GMT_X(ID, type, field, def, env, help) .field = def,
        GMT_OPTIONS(GMT_X)
#undef GMT_X
    };
    gmt_opt = defaults;
    /* Quiet first: it decides whether the other options may warn at all. */
    const char *q = gmt_env("GPUMEMTRACE_QUIET");
    if (q && *q)
        parse_bool_(&gmt_opt.quiet, "GPUMEMTRACE_QUIET", q, "");
    const char *v;
#define GMT_X(ID, type, field, def, env, help)                                               \
    v = gmt_env(env);                                                                        \
    if (v && *v && strcmp(env, "GPUMEMTRACE_QUIET"))                                         \
        parse_##type(&gmt_opt.field, env, v, help);
    GMT_OPTIONS(GMT_X)
#undef GMT_X
    /* A misspelt option would otherwise be silently without effect. */
    static const char prefix[] = "GPUMEMTRACE_";
    for (char **e = environ; e && *e; e++) {
        if (strncmp(*e, prefix, sizeof prefix - 1))
            continue;
        const char *eq = strchr(*e, '=');
        size_t len = eq ? (size_t)(eq - *e) : strlen(*e);
        if (!known(*e, len))
            gmt_warn("unknown option %.*s; ignored", (int)len, *e);
    }
    /* The sampling policy as sampling.c reads it: the default first:2 when unset (or
     * refused above). first and every are written before kind is published. */
    uint32_t first = 2, every = 0;
    int kind = gmt_opt.meminfo ? parse_meminfo(gmt_opt.meminfo, &first, &every) : GMT_POLICY_FIRST;
    gmt_hot.meminfo.first = first;
    gmt_hot.meminfo.every = every;
    atomic_store_explicit(&gmt_hot.meminfo.kind, kind, memory_order_release);
    gmt_hot.options.off = (int)gmt_opt.off; /* the NCCL wrappers read it there */
    gmt_hot.options.no_repeat = !gmt_opt.group_repeat;
    gmt_hot.options.no_compact = !gmt_opt.nccl_compact;
    errno = saved;
}

/* getenv as glibc's is: a linear search of environ, done here as glibc does it (calling
 * through to glibc's would need dlsym, which a getenv made while the loader or malloc
 * initialises must not reach). */
char *gmt_env(const char *name)
{
    if (!name[0])
        return NULL;
    size_t n = strlen(name);
    /* the first two bytes compared before the rest: most entries differ there (a name
     * of one byte has its terminator second, matched against the entry's '=') */
    const char c0 = name[0], c1 = n > 1 ? name[1] : '=';
    for (char **e = environ; e && *e; e++) {
        const char *v = *e;
        if (v[0] != c0 || v[1] != c1)
            continue;
        if (n == 1)
            return (char *)v + 2;
        if (!strncmp(v + 2, name + 2, n - 2) && v[n] == '=')
            return (char *)v + n + 1;
    }
    return NULL;
}
