/* category.c: the category rules (built-in table plus --category NAME=GLOB) and how a stack gets its category. */
#include "category.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize.h"

/* X(category, glob on the module's base name, transparent). Order matters only among
 * globs that could match the same name. */
#define GMT_BUILTIN_RULES(X)                                                          \
    X("nccl", "libnccl*", false)                                                      \
    X("pytorch", "libtorch*", false)                                                  \
    X("pytorch", "libc10*", false)                                                    \
    X("pytorch", "libcaffe2*", false)                                                 \
    X("cublas", "libcublas*", false)                                                  \
    X("cudnn", "libcudnn*", false)                                                    \
    X("jax", "xla_*", false)                                                          \
    X("jax", "libjax*", false)                                                        \
    X("jax", "jaxlib*", false)                                                        \
    X("python", "libpython*", false)                                                  \
    X("python", "python3*", false)                                                    \
    X("cuda-runtime", "libcudart*", true)                                             \
    X("cuda-driver", "libcuda.so*", true)                                             \
    X("system", "libc.so*", true)                                                     \
    X("system", "libc-*", true)                                                       \
    X("system", "ld-linux*", true)                                                    \
    X("system", "libstdc++*", true)                                                   \
    X("system", "libgcc_s*", true)                                                    \
    X("system", "libpthread*", true)                                                  \
    X("system", "libdl.so*", true)                                                    \
    X("system", "\\[vdso\\]", true)                                                   \
    X("gpumemtrace", "libgpumemtrace*", true)

struct rule {
    const char *name;
    const char *glob;
    bool transparent;
};

static const struct rule builtin[] = {
#define GMT_X(name, glob, transparent) { name, glob, transparent },
    GMT_BUILTIN_RULES(GMT_X)
#undef GMT_X
};

struct gmt_categories {
    struct rule *user; /* tried newest first; strings owned */
    size_t nuser, cap;
};

struct gmt_categories *gmt_cat_new(void)
{
    return calloc(1, sizeof(struct gmt_categories));
}

void gmt_cat_free(struct gmt_categories *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->nuser; i++) {
        free((char *)c->user[i].name);
        free((char *)c->user[i].glob);
    }
    free(c->user);
    free(c);
}

static bool valid_name(const char *s, size_t n)
{
    if (n == 1 && s[0] == '-')
        return true;
    if (n == 0 || n > 32)
        return false;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '.' || ch == '-'))
            return false;
    }
    return true;
}

int gmt_cat_add_rule(struct gmt_categories *c, const char *spec)
{
    if (!c || !spec)
        return -EINVAL;
    const char *eq = strchr(spec, '=');
    if (!eq || !valid_name(spec, (size_t)(eq - spec)) || eq[1] == '\0')
        return -EINVAL;
    if (c->nuser == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 8;
        struct rule *r = realloc(c->user, cap * sizeof *r);
        if (!r)
            return -ENOMEM;
        c->user = r;
        c->cap = cap;
    }
    char *name = strndup(spec, (size_t)(eq - spec));
    char *glob = strdup(eq + 1);
    if (!name || !glob) {
        free(name);
        free(glob);
        return -ENOMEM;
    }
    bool transparent = strcmp(name, GMT_CAT_TRANSPARENT) == 0;
    c->user[c->nuser++] = (struct rule){ name, glob, transparent };
    return 0;
}

const char *gmt_cat_of_module(const struct gmt_categories *c, const char *path, bool *transparent)
{
    if (transparent)
        *transparent = false;
    if (!path)
        return GMT_CAT_UNKNOWN;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const struct rule *hit = NULL;
    for (size_t i = c ? c->nuser : 0; i-- > 0 && !hit;)
        if (fnmatch(c->user[i].glob, base, 0) == 0)
            hit = &c->user[i];
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0] && !hit; i++)
        if (fnmatch(builtin[i].glob, base, 0) == 0)
            hit = &builtin[i];
    if (!hit)
        return GMT_CAT_USER;
    if (transparent)
        *transparent = hit->transparent;
    /* A user's pass-through rule has no name of its own to show. */
    return strcmp(hit->name, GMT_CAT_TRANSPARENT) == 0 ? GMT_CAT_USER : hit->name;
}

const char *gmt_cat_of_modules(const struct gmt_categories *c, const char *const *paths, size_t n)
{
    const char *innermost = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!paths[i])
            return GMT_CAT_USER;
        bool transparent;
        const char *cat = gmt_cat_of_module(c, paths[i], &transparent);
        if (!transparent)
            return cat;
        if (!innermost)
            innermost = cat;
    }
    return innermost ? innermost : GMT_CAT_UNKNOWN;
}

const char *gmt_cat_of_stack(const struct gmt_categories *c, const struct gmt_symbolizer *s,
                             const uint64_t *ip, size_t n)
{
    const char *innermost = NULL;
    for (size_t i = 0; i < n; i++) {
        const char *path = gmt_sym_module_of(s, ip[i] ? ip[i] - 1 : 0, NULL);
        if (!path)
            return GMT_CAT_USER;
        bool transparent;
        const char *cat = gmt_cat_of_module(c, path, &transparent);
        if (!transparent)
            return cat;
        if (!innermost)
            innermost = cat;
    }
    return innermost ? innermost : GMT_CAT_UNKNOWN;
}

static size_t add_name(const char **names, size_t k, size_t max, const char *name)
{
    if (strcmp(name, GMT_CAT_TRANSPARENT) == 0)
        return k;
    for (size_t i = 0; i < k && i < max; i++)
        if (strcmp(names[i], name) == 0)
            return k;
    if (k < max)
        names[k] = name;
    return k + 1;
}

size_t gmt_cat_names(const struct gmt_categories *c, const char **names, size_t max)
{
    size_t k = 0;
    for (size_t i = c ? c->nuser : 0; i-- > 0;)
        k = add_name(names, k, max, c->user[i].name);
    for (size_t i = 0; i < sizeof builtin / sizeof builtin[0]; i++)
        k = add_name(names, k, max, builtin[i].name);
    k = add_name(names, k, max, GMT_CAT_USER);
    return k;
}
