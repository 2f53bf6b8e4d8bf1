/* holders.c: who holds memory still allocated at exit for reuse (a caching allocator, a communicator), told from its stack. */
#include "holders.h"

#include <fnmatch.h>
#include <string.h>

#include "symbolize.h"
#include "util.h"

/*
 * Memory a caching allocator holds at exit is its cache, kept for reuse and normal at
 * exit (PyTorch does not empty its cache before the process ends), not a leak. Such
 * memory is told from its allocation's stack: a frame in the holder's module, or a
 * frame whose (demangled) function matches, innermost first. X(holder, module glob on
 * the base name, function glob); an empty glob matches nothing. Function globs need
 * symbols (not with --no-symbols); module globs do not.
 */
#define GMT_HOLDER_RULES(X)                                                          \
    X("PyTorch's caching allocator", "libc10_cuda*", "*CUDACachingAllocator*")        \
    X("PyTorch's caching allocator", "", "*CudaMallocAsync*")                         \
    X("CuPy's memory pool", "memory.cpython*", "*MemoryPool*")                        \
    X("XLA's BFC allocator", "", "*BFCAllocator*")                                    \
    X("XLA's BFC allocator", "", "*CreatePhysicalAllocation*")                        \
    X("cuBLAS handles (freed by cublasDestroy)", "", "cublasCreate*")

struct rule {
    const char *holder, *module, *function;
};

static const struct rule rules[] = {
#define GMT_X(h, m, f) { h, m, f },
    GMT_HOLDER_RULES(GMT_X)
#undef GMT_X
};

#define N_RULES (sizeof rules / sizeof rules[0])

/* NCCL's buffers still allocated at exit belong to communicators not destroyed, which
 * free them in ncclCommDestroy: held, not leaked (its category says it is NCCL's). */
static const char nccl_holder[] = "NCCL's communicators (not destroyed)";

static const char *base_name(const char *p)
{
    const char *b = p ? strrchr(p, '/') : NULL;
    return b ? b + 1 : p;
}

static bool match(const char *glob, const char *s)
{
    return glob[0] && s && fnmatch(glob, s, 0) == 0;
}

const char *gmt_site_holder(const struct gmt_analysis *a, const struct gmt_site_row *s)
{
    if (s->cat < a->n_cats && !strcmp(a->cat_names[s->cat], "nccl"))
        return nccl_holder;
    const struct gmt_trace *t = &a->t;
    if (!s->stack || s->stack >= t->n_stacks || !t->stacks[s->stack].ip)
        return NULL;
    const struct gmt_stack *st = &t->stacks[s->stack];
    for (uint32_t i = 0; i < st->depth; i++) {
        const char *mod = base_name(gmt_sym_module_of(a->sym, st->ip[i], NULL));
        for (size_t r = 0; r < N_RULES; r++)
            if (match(rules[r].module, mod))
                return rules[r].holder;
        const struct gmt_frame *fr;
        size_t n;
        if (gmt_sym_resolve(a->sym, st->ip[i], &fr, &n))
            continue;
        for (size_t k = 0; k < n; k++) {
            char dm[512];
            const char *fn = fr[k].function ? gmt_demangle(fr[k].function, dm, sizeof dm) : NULL;
            for (size_t r = 0; r < N_RULES; r++)
                if (match(rules[r].function, fn))
                    return rules[r].holder;
        }
    }
    return NULL;
}

size_t gmt_held_at_end(const struct gmt_analysis *a, struct gmt_held *out, size_t max)
{
    const struct gmt_report *rep = &a->rep;
    size_t n = 0;
    for (size_t i = 0; i < rep->n_sites; i++) {
        const struct gmt_site_row *s = &rep->sites[i];
        const char *who = s->live_at_end ? gmt_site_holder(a, s) : NULL;
        if (!who)
            continue;
        size_t k = 0;
        while (k < n && strcmp(out[k].holder, who))
            k++;
        if (k == n && n == max)
            continue;
        if (k == n)
            out[n++] = (struct gmt_held){who, 0, 0};
        out[k].bytes += s->live_at_end;
        out[k].count += s->count_at_end;
    }
    return n;
}
