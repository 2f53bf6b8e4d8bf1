/* category.h: which software asked for memory (nccl, pytorch, cublas, user…), from the modules on its stack. */
#ifndef GMT_CATEGORY_H
#define GMT_CATEGORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gmt_symbolizer;

/*
 * Rules match a module's base name with a shell glob (fnmatch). A stack's category is
 * that of its innermost frame (ip[0] first, outward) whose module is not "transparent";
 * transparent modules are layers that only pass a request on: the CUDA runtime and
 * driver, the C and C++ runtimes, the dynamic loader, gpumemtrace itself. So PyTorch's
 * cudaMalloc that reaches the driver through libcudart is "pytorch", NCCL's buffers
 * allocated on its proxy thread are "nccl", and a program that calls cudaMalloc
 * itself is "user" (any module no rule names). When every frame is transparent, the
 * innermost frame's category is used ("cuda-runtime" for the runtime's own needs);
 * without frames, "unknown".
 *
 * Rules added with gmt_cat_add_rule are tried before the built-in ones, newest first,
 * so a user rule can claim a module a built-in rule would.
 */

#define GMT_CAT_USER "user"
#define GMT_CAT_UNKNOWN "unknown"
#define GMT_CAT_TRANSPARENT "-"   /* as NAME in a user rule: the glob names a pass-through layer */

struct gmt_categories;

struct gmt_categories *gmt_cat_new(void); /* the built-in rules; NULL when out of memory */
void gmt_cat_free(struct gmt_categories *c);

/* "NAME=GLOB" as given to --category: NAME is 1..32 of [A-Za-z0-9_.-] or GMT_CAT_TRANSPARENT
 * then "=GLOB" (a transparent layer: "-=libmywrapper*.so*"). Returns 0 or -EINVAL, -ENOMEM. */
int gmt_cat_add_rule(struct gmt_categories *c, const char *spec);

/* The category of one module path (base name matched); *transparent, if not NULL, says
 * whether the module only passes requests on. NULL path: GMT_CAT_UNKNOWN. */
const char *gmt_cat_of_module(const struct gmt_categories *c, const char *path, bool *transparent);

/* The category of a stack given the module path of each frame, innermost first (NULL
 * entries: no module known, treated as user code). */
const char *gmt_cat_of_modules(const struct gmt_categories *c, const char *const *paths, size_t n);

/* The same for a stack of instruction addresses, mapped to modules by s. */
const char *gmt_cat_of_stack(const struct gmt_categories *c, const struct gmt_symbolizer *s,
                             const uint64_t *ip, size_t n);

/* Every category name a stack can get, in rule order, built-ins last; for listing. */
size_t gmt_cat_names(const struct gmt_categories *c, const char **names, size_t max);

#endif
