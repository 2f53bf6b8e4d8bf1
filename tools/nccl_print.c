/* nccl_print.c: what of NCCL a run had (its version and NCCL_* settings), and what differs between two runs. */
#include "nccl_print.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Variables that name a machine or only steer logging: they size nothing, and a
 * baseline must not carry a host's name. */
static bool print_skips(const char *e)
{
    static const char *const skip[] = {"NCCL_COMM_ID=", "NCCL_HOSTID=", "NCCL_DEBUG=",
                                       "NCCL_DEBUG_FILE=", "NCCL_DEBUG_SUBSYS="};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (!strncmp(e, skip[i], strlen(skip[i])))
            return true;
    return false;
}

void gmt_nccl_print_of(const struct gmt_trace *t, struct gmt_nccl_print *p)
{
    memset(p, 0, sizeof *p);
    p->known = true;
    p->version = t->version[GMT_COMP_NCCL];
    const char *names[256];
    size_t n = 0;
    for (size_t i = 0; i < t->n_env && n < 256; i++)
        if (!strncmp(t->env[i], "NCCL_", 5) && strchr(t->env[i], '=') &&
            !strpbrk(t->env[i], "\n") && !print_skips(t->env[i]))
            names[n++] = t->env[i];
    gmt_sort(names, n, sizeof *names, cmp_str);
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t l = strlen(names[i]);
        if (at + l + 2 > sizeof p->env)
            break;
        memcpy(p->env + at, names[i], l);
        at += l;
        p->env[at++] = '\n';
    }
    p->env[at] = 0;
}

int gmt_nccl_print_of_paths(char *const *paths, size_t n, struct gmt_nccl_print *p)
{
    memset(p, 0, sizeof *p);
    for (size_t i = 0; i < n; i++) {
        struct gmt_trace t;
        char err[256];
        if (gmt_trace_load(&t, paths[i], err, sizeof err))
            continue;
        gmt_nccl_print_of(&t, p);
        gmt_trace_free(&t);
        return 0;
    }
    return -1;
}

static const char *version_text(int32_t v, char *buf, size_t len)
{
    if (v <= 0)
        snprintf(buf, len, "unknown");
    else
        snprintf(buf, len, "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
    return buf;
}

static void append(char *buf, size_t len, size_t *at, const char *fmt, const char *a1,
                   const char *a2, const char *a3)
{
    if (*at + 1 >= len)
        return;
    int k = snprintf(buf + *at, len - *at, fmt, *at ? ", " : "", a1, a2, a3);
    if (k > 0)
        *at = *at + (size_t)k < len ? *at + (size_t)k : len - 1;
}

/* The value of NAME (n bytes) in a print's lines, copied into val; false when absent. */
static bool print_value(const char *env, const char *name, size_t n, char *val, size_t len)
{
    for (const char *l = env; *l;) {
        const char *nl = strchr(l, '\n');
        size_t ll = nl ? (size_t)(nl - l) : strlen(l);
        if (ll > n && !strncmp(l, name, n) && l[n] == '=') {
            snprintf(val, len, "%.*s", (int)(ll - n - 1), l + n + 1);
            return true;
        }
        l += ll + (nl ? 1 : 0);
    }
    return false;
}

/* Lines of `from_env`'s side that differ from the other side, into buf. */
static void env_changes(const char *a, const char *b, bool a_side, char *buf, size_t len, size_t *at)
{
    const char *side = a_side ? a : b;
    for (const char *l = side; *l;) {
        const char *nl = strchr(l, '\n');
        size_t ll = nl ? (size_t)(nl - l) : strlen(l);
        const char *eq = memchr(l, '=', ll);
        if (eq) {
            size_t n = (size_t)(eq - l);
            char va[256], vb[256], name[128];
            bool ha = print_value(a, l, n, va, sizeof va), hb = print_value(b, l, n, vb, sizeof vb);
            snprintf(name, sizeof name, "%.*s", (int)n, l);
            if (!(ha && hb && !strcmp(va, vb)) && (a_side || !ha))
                append(buf, len, at, "%s%s %s -> %s", name, ha ? va : "unset", hb ? vb : "unset");
        }
        l += ll + (nl ? 1 : 0);
    }
}

const char *gmt_nccl_print_diff(const struct gmt_nccl_print *a, const struct gmt_nccl_print *b,
                                char *buf, size_t len)
{
    size_t at = 0;
    if (!len)
        return buf;
    buf[0] = 0;
    if (!a->known || !b->known)
        return buf;
    env_changes(a->env, b->env, true, buf, len, &at);
    env_changes(a->env, b->env, false, buf, len, &at);
    if (a->version != b->version && (a->version > 0 || b->version > 0)) {
        char x[32], y[32];
        append(buf, len, &at, "%sNCCL %s -> %s%s", version_text(a->version, x, sizeof x),
               version_text(b->version, y, sizeof y), "");
    }
    return buf;
}

const char *gmt_nccl_settings_diff(const struct gmt_trace *a, const struct gmt_trace *b, char *buf,
                                   size_t len)
{
    struct gmt_nccl_print pa, pb;
    gmt_nccl_print_of(a, &pa);
    gmt_nccl_print_of(b, &pb);
    return gmt_nccl_print_diff(&pa, &pb, buf, len);
}
