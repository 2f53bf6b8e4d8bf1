/* options.c: the one options table (GMT_OPTIONS in gmt.h), read from the environment. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "gmt.h"

extern char **environ;

struct gmt_options gmt_opt = {
#define GMT_X(ID, type, field, def, env, help) .field = def,
    GMT_OPTIONS(GMT_X)
#undef GMT_X
};

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

/* never | always | first:N[,every:K] with N, K >= 1. */
static int meminfo_valid(const char *v)
{
    if (!strcmp(v, "never") || !strcmp(v, "always"))
        return 1;
    if (strncmp(v, "first:", 6))
        return 0;
    char *end;
    errno = 0;
    long n = strtol(v + 6, &end, 10);
    if (errno || end == v + 6 || n < 1 || (v[6] < '0' || v[6] > '9'))
        return 0;
    if (!*end)
        return 1;
    if (strncmp(end, ",every:", 7))
        return 0;
    const char *k = end + 7;
    if (*k < '0' || *k > '9')
        return 0;
    long every = strtol(k, &end, 10);
    return !errno && every >= 1 && !*end;
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
        if (!meminfo_valid(v)) {
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
    const char *q = getenv("GPUMEMTRACE_QUIET");
    if (q && *q)
        parse_bool_(&gmt_opt.quiet, "GPUMEMTRACE_QUIET", q, "");
    const char *v;
#define GMT_X(ID, type, field, def, env, help)                                               \
    v = getenv(env);                                                                         \
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
    gmt_hot.options.off = (int)gmt_opt.off; /* the NCCL wrappers read it there */
    gmt_hot.options.no_repeat = !gmt_opt.group_repeat;
    errno = saved;
}
