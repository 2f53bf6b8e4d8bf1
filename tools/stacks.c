/* stacks.c: a recorded stack as text: folded for people, every frame for machines and matching. */
#include "stacks.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "idnames.h"
#include "symbolize.h"
#include "trace.h"
#include "util.h"

/*
 * One table of rules says whose a frame is. X(role, kind, where, function), one row per
 * rule; a row matches a frame of its kind when each of its non-empty globs matches:
 *   NATIVE  where: the module's base name; function: the demangled function
 *   PYHOST  the same, for native frames of a stack that holds Python frames: the
 *           interpreter's own (its evaluation loop, call machinery), which the Python
 *           frames stand for
 *   PY      where: the code's file (co_filename, whole path); function: its qualified
 *           name
 * Roles:
 *   INTERNAL   an allocator's, a runtime's or a framework's own: a site is the first
 *              frame, innermost first, that matches none (when the stack holds Python
 *              frames, the first Python frame that matches none, wherever native frames
 *              are)
 *   FRAMEWORK  with the INTERNAL rows, a framework's plumbing: beyond the site, where it
 *              lies between the user's own frames, the folded line shows "…" for it
 * --internal GLOB adds a glob of both roles, tried against a native frame's module and
 * function, and a Python frame's file and function.
 */
#define GMT_FRAME_RULES(X)                                                         \
    X(INTERNAL, NATIVE, "libgpumemtrace*", "")                                     \
    X(INTERNAL, NATIVE, "libcudart*", "")                                          \
    X(INTERNAL, NATIVE, "libcuda.so*", "")                                         \
    X(INTERNAL, NATIVE, "libc.so*", "")                                            \
    X(INTERNAL, NATIVE, "ld-linux*", "")                                           \
    /* the CUDA runtime linked into a program (nvcc's default) or an extension */  \
    X(INTERNAL, NATIVE, "", "libcudart_static_*")                                  \
    X(INTERNAL, NATIVE, "", "cuda[A-Z]*")                                          \
    /* caching allocators: PyTorch's, CuPy's, XLA's */                             \
    X(INTERNAL, NATIVE, "", "c10::cuda::CUDACachingAllocator::*")                  \
    X(INTERNAL, NATIVE, "", "c10::cuda::CudaMallocAsync::*")                       \
    X(INTERNAL, NATIVE, "", "*cupy_4cuda_6memory*")                                \
    X(INTERNAL, NATIVE, "", "tsl::BFCAllocator::*")                                \
    X(INTERNAL, NATIVE, "", "stream_executor::*Alloc*")                            \
    /* NCCL's allocation helpers (its alloc.h): the NCCL function that asked is next */ \
    X(INTERNAL, NATIVE, "", "ncclCudaCalloc*")                                     \
    X(INTERNAL, NATIVE, "", "ncclCudaMalloc*")                                     \
    X(INTERNAL, NATIVE, "", "ncclCudaHostCalloc*")                                 \
    X(INTERNAL, NATIVE, "", "ncclCuMemAlloc*")                                     \
    X(INTERNAL, NATIVE, "", "ncclCuMemHostAlloc*")                                 \
    X(INTERNAL, NATIVE, "", "ncclCalloc*")                                         \
    X(INTERNAL, NATIVE, "", "ncclRealloc*")                                        \
    /* the interpreter, shared or linked into the executable, and ctypes' call path */ \
    X(INTERNAL, PYHOST, "libpython*", "")                                          \
    X(INTERNAL, PYHOST, "python3*", "")                                            \
    X(INTERNAL, PYHOST, "_ctypes*", "")                                            \
    X(INTERNAL, PYHOST, "libffi*", "")                                             \
    /* PyTorch's Python, installed; and its layers between the user's line and the  \
     * native op where torch is a source checkout */                               \
    X(INTERNAL, PY, "*-packages/torch/*", "")                                      \
    X(INTERNAL, PY, "*/torch/nn/modules/*.py", "")                                 \
    X(INTERNAL, PY, "*/torch/nn/functional.py", "")                                \
    X(INTERNAL, PY, "*/torch/functional.py", "")                                   \
    X(INTERNAL, PY, "*/torch/_tensor.py", "")                                      \
    X(INTERNAL, PY, "*/torch/_ops.py", "")                                         \
    X(INTERNAL, PY, "*/torch/cuda/memory.py", "")                                  \
    X(INTERNAL, PY, "*/torch/utils/_contextlib.py", "")                            \
    X(INTERNAL, PY, "*/torch/autograd/__init__.py", "")                            \
    X(INTERNAL, PY, "*/torch/autograd/graph.py", "")                               \
    X(INTERNAL, PY, "*/torch/nn/parallel/distributed.py", "")                      \
    X(INTERNAL, PY, "*/torch/distributed/distributed_c10d.py", "")                 \
    X(INTERNAL, PY, "*/torch/distributed/c10d_logger.py", "")                      \
    /* Python's import machinery and `python -m`, between a launcher's and the     \
     * user's code */                                                              \
    X(FRAMEWORK, PY, "<frozen importlib.*", "")                                    \
    X(FRAMEWORK, PY, "*/importlib/*", "")                                          \
    X(FRAMEWORK, PY, "<frozen runpy>", "")                                         \
    X(FRAMEWORK, PY, "*/runpy.py", "")                                             \
    /* PyTorch's native libraries (ATen, autograd, the Python bindings) */         \
    X(FRAMEWORK, NATIVE, "libtorch*", "")                                          \
    X(FRAMEWORK, NATIVE, "libc10*", "")                                            \
    /* the C library's start code, in the executable */                            \
    X(FRAMEWORK, NATIVE, "", "_start")                                             \
    X(FRAMEWORK, NATIVE, "", "__libc_start*")

enum rule_role { INTERNAL, FRAMEWORK };
enum rule_kind { NATIVE, PYHOST, PY };

static const struct {
    enum rule_role role;
    enum rule_kind kind;
    const char *where, *function;
} internal_rules[] = {
#define GMT_X(r, k, m, f) { r, k, m, f },
    GMT_FRAME_RULES(GMT_X)
#undef GMT_X
};

static bool glob_match(const char *glob, const char *s)
{
    return glob[0] && s && fnmatch(glob, s, 0) == 0;
}

/* A row's verdict: each of its non-empty globs matches (a row has at least one). */
static bool row_match(size_t i, const char *where, const char *fn)
{
    const char *w = internal_rules[i].where, *f = internal_rules[i].function;
    return (w[0] || f[0]) && (!w[0] || glob_match(w, where)) && (!f[0] || glob_match(f, fn));
}

/* Whether a module only passes requests on (a module rule): its frames are left out of
 * the folded line beyond the site too; the interpreter's, when Python frames are there. */
static bool layer_module(const char *mod, bool has_py)
{
    for (size_t i = 0; i < sizeof internal_rules / sizeof internal_rules[0]; i++)
        if (internal_rules[i].role == INTERNAL &&
            (internal_rules[i].kind == NATIVE || (has_py && internal_rules[i].kind == PYHOST)) &&
            !internal_rules[i].function[0] && glob_match(internal_rules[i].where, mod))
            return true;
    return false;
}

const char *gmt_without_return_type(const char *fn)
{
    if (!fn)
        return NULL;
    size_t end = strcspn(fn, "<(");
    const char *sp = NULL;
    for (size_t i = 0; i < end; i++)
        if (fn[i] == ' ')
            sp = fn + i;
    return sp && !strncmp(fn, "operator", 8) ? fn : sp ? sp + 1 : fn;
}

/* Whether frame fr (of module mod, base name) matches a rule of role INTERNAL, or with
 * `framework` one of either role; has_py: the stack holds Python frames. */
static bool rule_frame(const struct gmt_analysis *a, const char *mod, const struct gmt_frame *fr,
                       bool has_py, bool framework)
{
    char dm[512];
    bool py = fr && fr->python;
    const char *fn = fr && fr->function ? (py ? fr->function : gmt_demangle(fr->function, dm, sizeof dm))
                                        : NULL;
    if (!py)
        fn = gmt_without_return_type(fn);
    const char *where = py ? fr->file : mod;
    for (size_t i = 0; i < sizeof internal_rules / sizeof internal_rules[0]; i++) {
        enum rule_kind k = internal_rules[i].kind;
        if ((framework || internal_rules[i].role == INTERNAL) &&
            (py ? k == PY : k == NATIVE || (has_py && k == PYHOST)) && row_match(i, where, fn))
            return true;
    }
    const struct gmt_report_opts *o = a->opts;
    for (int i = 0; o && i < o->n_internal; i++)
        if (glob_match(o->internal[i], where) || glob_match(o->internal[i], fn))
            return true;
    return false;
}

/* An allocator's, runtime's or framework's own: never a site. */
static bool internal_frame(const struct gmt_analysis *a, const char *mod, const struct gmt_frame *fr,
                           bool has_py)
{
    return rule_frame(a, mod, fr, has_py, false);
}

static bool has_python(const struct gmt_stack *st)
{
    for (uint32_t i = 0; i < st->depth; i++)
        if (GMT_PYFRAME_IS(st->ip[i]))
            return true;
    return false;
}

static const char *base_name(const char *path)
{
    const char *b = path ? strrchr(path, '/') : NULL;
    return b ? b + 1 : path;
}

/* One frame for a person: demangled name without arguments, then file:line, else the
 * module and offset. */
static void frame_text(const struct gmt_frame *f, char *buf, size_t len)
{
    char dm[512];
    const char *fn = f->function && !f->python ? gmt_demangle(f->function, dm, sizeof dm)
                                               : f->function;
    const char *mod = base_name(f->module);
    const char *file = base_name(f->file);
    if (fn && file)
        snprintf(buf, len, "%s (%s:%u)", fn, file, f->line);
    else if (fn && mod)
        snprintf(buf, len, "%s [%s]", fn, mod);
    else if (fn)
        snprintf(buf, len, "%s", fn);
    else if (mod)
        snprintf(buf, len, "%s+0x%llx", mod, (unsigned long long)f->offset);
    else
        snprintf(buf, len, "0x%llx", (unsigned long long)f->offset);
}

/* A line being written: frames with " < " between them, "… < " before one that follows
 * frames left out. */
struct line_out {
    char *buf;
    size_t len, used;
    int shown;
};

static bool put_frame(struct line_out *L, const char *text, bool gap)
{
    int w = snprintf(L->buf + L->used, L->len - L->used, "%s%s%s", L->shown ? " < " : "",
                     gap ? "… < " : "", text);
    if (w < 0 || (size_t)w >= L->len - L->used) {
        L->buf[L->len - 1] = 0;
        return false;
    }
    L->used += (size_t)w;
    L->shown++;
    return true;
}

/* Folding: from the site (the first frame that is not internal, innermost first; the
 * innermost frame when all are), the site and the frame after it, then the first frame
 * in each new module outward (which library handed the request on); a framework's
 * frames (the rules' FRAMEWORK and INTERNAL rows) between the user's are left out; "…"
 * for what is left out before a frame shown, up to max_frames shown. from_site: every
 * frame from the site. Neither: every frame. api: named after the site's frame when it
 * has no file and line (0: not). */
static const char *stack_text(const struct gmt_analysis *a, uint32_t stack, unsigned api,
                              int max_frames, bool fold, bool from_site, char *buf, size_t len)
{
    buf[0] = 0;
    const struct gmt_trace *t = &a->t;
    if (!stack || stack >= t->n_stacks || !t->stacks[stack].ip) {
        snprintf(buf, len, "%s", stack ? "(stack not in trace)" : "(no stack)");
        return buf;
    }
    const struct gmt_stack *st = &t->stacks[stack];
    bool has_py = has_python(st);
    uint32_t site_i = 0;
    size_t site_k = 0;
    bool sited = (fold || from_site) && gmt_stack_site(a, stack, &site_i, &site_k);
    struct line_out L = {buf, len, 0, 0};
    int seen = 0;
    bool omitted = false;
    const char *prev_mod = NULL;
    for (uint32_t i = site_i; i < st->depth && L.shown < max_frames; i++) {
        uint64_t off;
        const char *mod = gmt_sym_module_of(a->sym, st->ip[i], &off);
        /* pass-through layers are left out: beyond the site when folded; unfolded, all
         * but an innermost one that nothing else precedes */
        if (layer_module(base_name(mod), has_py) &&
            (fold || from_site ? i > site_i : L.shown > 0 || i + 1 < st->depth))
            continue;
        const struct gmt_frame *fr;
        size_t n;
        if (gmt_sym_resolve(a->sym, st->ip[i], &fr, &n) || n == 0)
            continue;
        for (size_t k = i == site_i ? site_k : 0; k < n && L.shown < max_frames; k++) {
            bool new_module = !prev_mod || !mod || strcmp(prev_mod, mod) != 0;
            prev_mod = mod;
            if (fold && L.shown && rule_frame(a, base_name(mod), &fr[k], has_py, true)) {
                omitted = true;
                continue;
            }
            if (fold && seen++ >= 2 && !new_module) {
                omitted = true;
                continue;
            }
            char f[700];
            frame_text(&fr[k], f, sizeof f);
            const char *called = api && sited && !L.shown && !fr[k].file ? gmt_api_name(api) : NULL;
            if (called) {
                size_t l = strlen(f);
                snprintf(f + l, sizeof f - l, " (calls %s)", called);
            }
            /* a person's line (folded, or from its site): a name's line end does not end it */
            if (!put_frame(&L, fold || from_site ? gmt_one_line(f) : f, omitted))
                return buf;
            omitted = false;
        }
    }
    return buf;
}

bool gmt_stack_site(const struct gmt_analysis *a, uint32_t stack, uint32_t *ip_index, size_t *inline_index)
{
    *ip_index = 0;
    *inline_index = 0;
    const struct gmt_trace *t = &a->t;
    if (!stack || stack >= t->n_stacks || !t->stacks[stack].ip)
        return false;
    const struct gmt_stack *st = &t->stacks[stack];
    bool has_py = has_python(st);
    /* the user's Python line, when there is one, whatever native frames lead to it */
    for (uint32_t i = 0; has_py && i < st->depth; i++) {
        const struct gmt_frame *fr;
        size_t n;
        if (!GMT_PYFRAME_IS(st->ip[i]) || gmt_sym_resolve(a->sym, st->ip[i], &fr, &n) || !n)
            continue;
        if (!internal_frame(a, NULL, &fr[0], true)) {
            *ip_index = i;
            return true;
        }
    }
    for (uint32_t i = 0; i < st->depth; i++) {
        const char *mod = base_name(gmt_sym_module_of(a->sym, st->ip[i], NULL));
        const struct gmt_frame *fr;
        size_t n;
        if (gmt_sym_resolve(a->sym, st->ip[i], &fr, &n) || n == 0) {
            if (!internal_frame(a, mod, NULL, has_py)) {
                *ip_index = i;
                return true;
            }
            continue;
        }
        /* inlined frames first (innermost), then the function they are inlined into */
        for (size_t k = 0; k < n; k++)
            if (!internal_frame(a, mod, &fr[k], has_py)) {
                *ip_index = i;
                *inline_index = k;
                return true;
            }
    }
    return false; /* every frame internal: the stack is shown from its innermost */
}

const char *gmt_site_line(const struct gmt_analysis *a, uint32_t stack, unsigned api,
                          int max_frames, char *buf, size_t len)
{
    bool fold = !(a->opts && a->opts->frames);
    return stack_text(a, stack, api, max_frames, fold, !fold, buf, len);
}

const char *gmt_stack_line(const struct gmt_analysis *a, uint32_t stack, int max_frames,
                           char *buf, size_t len)
{
    return gmt_site_line(a, stack, 0, max_frames, buf, len);
}

const char *gmt_stack_full(const struct gmt_analysis *a, uint32_t stack, int max_frames,
                           char *buf, size_t len)
{
    return stack_text(a, stack, 0, max_frames, false, false, buf, len);
}

/* A frame's text as one field of a folded line: ';' separates frames there and the last
 * space the count, so ';' becomes ':', and what is no printable text (a control byte, a
 * C1 control, a byte of no UTF-8 sequence: a name from a corrupt or hostile file) '?'. */
static void folded_field(char *f)
{
    unsigned char *p = (unsigned char *)f;
    size_t n = strlen(f);
    for (size_t i = 0; i < n;) {
        size_t k = gmt_utf8_len(p + i, n - i);
        if (k == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0)
            p[i] = p[i + 1] = '?';
        else if (!k || p[i] < 0x20 || p[i] == 0x7f)
            p[i] = '?', k = 1;
        else if (p[i] == ';')
            p[i] = ':';
        i += k;
    }
}

const char *gmt_stack_folded(const struct gmt_analysis *a, uint32_t stack, char *buf, size_t len)
{
    const struct gmt_trace *t = &a->t;
    buf[0] = 0;
    if (!stack || stack >= t->n_stacks || !t->stacks[stack].ip) {
        snprintf(buf, len, "%s", stack ? "[stack not in trace]" : "[no stack]");
        return buf;
    }
    /* innermost first into `frames` (each NUL-terminated), then written outermost first */
    enum { ROOM = 32768, MAX_FRAMES = 1024 };
    static char frames[ROOM];
    static uint32_t at[MAX_FRAMES];
    size_t used = 0, n = 0;
    const struct gmt_stack *st = &t->stacks[stack];
    bool has_py = has_python(st);
    for (uint32_t i = 0; i < st->depth && n < MAX_FRAMES; i++) {
        uint64_t off;
        const char *mod = gmt_sym_module_of(a->sym, st->ip[i], &off);
        const char *b = base_name(mod);
        if (b && !strncmp(b, "libgpumemtrace", 14))
            continue;
        /* as py-spy --native: the Python frames stand for the interpreter's own */
        if (has_py && b && layer_module(b, true) && !layer_module(b, false))
            continue;
        const struct gmt_frame *fr;
        size_t nf;
        if (gmt_sym_resolve(a->sym, st->ip[i], &fr, &nf) || nf == 0)
            continue;
        for (size_t k = 0; k < nf && n < MAX_FRAMES && used + 700 < ROOM; k++) {
            frame_text(&fr[k], frames + used, ROOM - used);
            folded_field(frames + used);
            at[n++] = (uint32_t)used;
            used += strlen(frames + used) + 1;
        }
    }
    size_t out = 0;
    for (size_t i = n; i-- > 0;) {
        int w = snprintf(buf + out, len - out, "%s%s", out ? ";" : "", frames + at[i]);
        if (w < 0 || (size_t)w >= len - out) {
            buf[len - 1] = 0;
            break;
        }
        out += (size_t)w;
    }
    if (!n)
        snprintf(buf, len, "[no frames]");
    return buf;
}

struct line_ref {
    const char *text;
    uint32_t key;
    size_t i;
};

static int cmp_line_ref(const void *x, const void *y)
{
    const struct line_ref *a = x, *b = y;
    int c = strcmp(a->text, b->text);
    if (!c)
        c = (a->key > b->key) - (a->key < b->key);
    return c ? c : (a->i > b->i) - (a->i < b->i);
}

void gmt_site_lines_free(char **lines, size_t n)
{
    for (size_t i = 0; lines && i < n; i++)
        free(lines[i]);
}

int gmt_site_groups(const struct gmt_analysis *a, const struct gmt_site_in *in, size_t n,
                    int frames, char **lines, size_t *group)
{
    struct line_ref *r = malloc((n ? n : 1) * sizeof *r);
    enum { LINE = 4096 };
    char *buf = malloc(LINE);
    int rc = r && buf ? 0 : -1;
    for (size_t i = 0; i < n; i++)
        lines[i] = NULL;
    for (size_t i = 0; !rc && i < n; i++) {
        gmt_site_line(a, in[i].stack, in[i].api, frames, buf, LINE);
        if (!(lines[i] = strdup(buf)))
            rc = -1;
        r[i] = (struct line_ref){lines[i], in[i].key, i};
    }
    if (!rc && n) {
        /* each run of equal lines and keys, in the sorted order, is one site: its first
         * member (the least index) stands for it */
        gmt_sort(r, n, sizeof *r, cmp_line_ref);
        for (size_t k = 0; k < n; k++) {
            bool same = k && r[k].key == r[k - 1].key && !strcmp(r[k].text, r[k - 1].text);
            group[r[k].i] = same ? group[r[k - 1].i] : r[k].i;
        }
    }
    if (rc)
        gmt_site_lines_free(lines, n);
    free(r);
    free(buf);
    return rc;
}

size_t gmt_stack_frames(const struct gmt_analysis *a, uint32_t stack, char *buf, size_t len,
                        const char **frames, size_t max, size_t *site)
{
    const struct gmt_trace *t = &a->t;
    *site = 0;
    if (!stack || stack >= t->n_stacks || !t->stacks[stack].ip || !len)
        return 0;
    uint32_t site_i = 0;
    size_t site_k = 0;
    gmt_stack_site(a, stack, &site_i, &site_k);
    const struct gmt_stack *st = &t->stacks[stack];
    size_t n = 0, used = 0;
    for (uint32_t i = 0; i < st->depth && n < max; i++) {
        const char *mod = base_name(gmt_sym_module_of(a->sym, st->ip[i], NULL));
        if (mod && !strncmp(mod, "libgpumemtrace", 14))
            continue;
        const struct gmt_frame *fr;
        size_t nf;
        if (gmt_sym_resolve(a->sym, st->ip[i], &fr, &nf))
            continue;
        for (size_t k = 0; k < nf && n < max && used + 640 <= len; k++) {
            if (i == site_i && k == site_k)
                *site = n;
            frame_text(&fr[k], buf + used, len - used);
            frames[n++] = buf + used;
            used += strlen(buf + used) + 1;
        }
    }
    return n;
}
