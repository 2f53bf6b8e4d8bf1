/* stacks.c: a recorded stack as text: folded for people, every frame for machines and matching. */
#include "stacks.h"

#include <string.h>

#include "symbolize.h"
#include "trace.h"
#include "util.h"

/* Frames a person skips: the layers between the caller and the driver. */
static bool boring_module(const char *path)
{
    if (!path)
        return false;
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    return !strncmp(b, "libgpumemtrace", 14) || !strncmp(b, "libcudart", 9) ||
           !strncmp(b, "libcuda.so", 10) || !strncmp(b, "libc.so", 7) ||
           !strncmp(b, "ld-linux", 8);
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
    const char *fn = f->function ? gmt_demangle(f->function, dm, sizeof dm) : NULL;
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

/* Folding: the first two frames (where the memory was asked for), then the first frame
 * in each new module outward (which library handed the request on), "…" for what is
 * left out, up to max_frames shown. */
static const char *stack_text(const struct gmt_analysis *a, uint32_t stack, int max_frames,
                              bool fold, char *buf, size_t len)
{
    buf[0] = 0;
    const struct gmt_trace *t = &a->t;
    if (!stack || stack >= t->n_stacks || !t->stacks[stack].ip) {
        snprintf(buf, len, "%s", stack ? "(stack not in trace)" : "(no stack)");
        return buf;
    }
    const struct gmt_stack *st = &t->stacks[stack];
    size_t used = 0;
    int shown = 0, seen = 0;
    bool omitted = false;
    const char *prev_mod = NULL;
    for (uint32_t i = 0; i < st->depth && shown < max_frames; i++) {
        uint64_t off;
        const char *mod = gmt_sym_module_of(a->sym, st->ip[i], &off);
        if (boring_module(mod) && (shown > 0 || i + 1 < st->depth))
            continue;
        const struct gmt_frame *fr;
        size_t n;
        if (gmt_sym_resolve(a->sym, st->ip[i], &fr, &n) || n == 0)
            continue;
        for (size_t k = 0; k < n && shown < max_frames; k++, seen++) {
            bool new_module = !prev_mod || !mod || strcmp(prev_mod, mod) != 0;
            prev_mod = mod;
            if (fold && seen >= 2 && !new_module) {
                omitted = true;
                continue;
            }
            char f[640];
            frame_text(&fr[k], f, sizeof f);
            int w = snprintf(buf + used, len - used, "%s%s%s", shown ? " < " : "",
                             omitted ? "… < " : "", f);
            omitted = false;
            if (w < 0 || (size_t)w >= len - used) {
                buf[len - 1] = 0;
                return buf;
            }
            used += (size_t)w;
            shown++;
        }
    }
    return buf;
}

const char *gmt_stack_line(const struct gmt_analysis *a, uint32_t stack, int max_frames,
                           char *buf, size_t len)
{
    return stack_text(a, stack, max_frames, true, buf, len);
}

const char *gmt_stack_full(const struct gmt_analysis *a, uint32_t stack, int max_frames,
                           char *buf, size_t len)
{
    return stack_text(a, stack, max_frames, false, buf, len);
}

/* A frame's text as one field of a folded line: ';' separates frames there and the last
 * space the count, so ';' becomes ':', and control characters (a name from a corrupt
 * file) become '?'. */
static void folded_field(char *f)
{
    for (; *f; f++) {
        if (*f == ';')
            *f = ':';
        else if ((unsigned char)*f < 0x20 || *f == 0x7f)
            *f = '?';
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
    for (uint32_t i = 0; i < st->depth && n < MAX_FRAMES; i++) {
        uint64_t off;
        const char *mod = gmt_sym_module_of(a->sym, st->ip[i], &off);
        const char *b = base_name(mod);
        if (b && !strncmp(b, "libgpumemtrace", 14))
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
