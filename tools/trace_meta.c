/* trace_meta.c: a loaded trace's metadata tables: process, environment, modules, threads, stacks and Python code objects, from their records. */
#include "trace_meta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "util.h"

#define MAX_STACK_ID (1u << 24) /* ids are dense from 1; a larger one is a corrupt file */

static char *dupn(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (p) {
        memcpy(p, s, n);
        p[n] = 0;
    }
    return p;
}

int gmt_meta_process(struct gmt_trace *t, const struct gmt_rec *r)
{
    const struct gmt_rec_process *p = (const void *)r;
    t->proc = *p;
    t->has_proc = true;
    const char *s = (const char *)(p + 1);
    size_t room = r->size - sizeof *p;
    size_t hl = p->host_len <= room ? p->host_len : room;
    /* a second PROCESS (a corrupt or concatenated file) replaces the first, as before */
    free(t->host);
    free(t->cmdline);
    t->cmdline = NULL;
    t->host = dupn(s, hl ? strnlen(s, hl) : 0);
    size_t cl = p->cmdline_len <= room - hl ? p->cmdline_len : room - hl;
    char *c = dupn(s + hl, cl);
    if (!t->host || !c) {
        free(c);
        return -ENOMEM;
    }
    /* arguments are NUL-separated: join them with spaces, drop the final NUL */
    while (cl > 0 && c[cl - 1] == 0)
        cl--;
    for (size_t i = 0; i < cl; i++)
        if (c[i] == 0)
            c[i] = ' ';
    c[cl] = 0;
    t->cmdline = c;
    return 0;
}

int gmt_meta_env(struct gmt_trace *t, size_t *cap, const struct gmt_rec *r)
{
    const struct gmt_rec_env *e = (const void *)r;
    const char *s = (const char *)(e + 1), *end = (const char *)r + r->size;
    if (e->bytes <= (size_t)(end - s))
        end = s + e->bytes;
    while (s < end && *s) {
        size_t n = strnlen(s, (size_t)(end - s));
        char **slot = gmt_array_push((void **)&t->env, &t->n_env, cap, sizeof *slot);
        if (!slot || !(*slot = dupn(s, n)))
            return -ENOMEM;
        s += n + 1;
    }
    return 0;
}

int gmt_meta_module(struct gmt_trace *t, size_t *cap, const struct gmt_event *e)
{
    const struct gmt_rec_module_load *m = (const void *)e->rec;
    struct gmt_module *mod = gmt_array_push((void **)&t->modules, &t->n_modules, cap, sizeof *mod);
    if (!mod)
        return -ENOMEM;
    const char *p = (const char *)(m + 1);
    size_t room = e->rec->size - sizeof *m;
    size_t bl = m->build_id_len <= room ? m->build_id_len : room;
    mod->id = m->module_id;
    mod->build_id = (uint8_t *)dupn(p, bl);
    mod->build_id_len = (uint32_t)bl;
    size_t pl = m->path_len <= room - bl ? m->path_len : room - bl;
    mod->path = dupn(p + bl, strnlen(p + bl, pl));
    mod->bias = m->load_bias;
    mod->start = m->start;
    mod->end = m->end;
    mod->t_load = m->time_ns;
    return mod->path && mod->build_id ? 0 : -ENOMEM;
}

/* PYCODE: ids below 2^24 (the width a Python frame has for them), stored by id; the
 * reader checked that the three strings are within the record and NUL-terminated. */
int gmt_meta_pycode(struct gmt_trace *t, const struct gmt_rec *r)
{
    const struct gmt_rec_pycode *c = (const void *)r;
    if (c->code_id == 0 || c->code_id >= (1u << 24) ||
        c->code_id > t->image_len / sizeof(struct gmt_rec_pycode))
        return 0; /* no frame can name it */
    if (c->code_id >= t->n_pycodes) {
        size_t n = t->n_pycodes ? t->n_pycodes : 64;
        while (n <= c->code_id)
            n *= 2;
        struct gmt_pycode *p = realloc(t->pycodes, n * sizeof *p);
        if (!p)
            return -ENOMEM;
        memset(p + t->n_pycodes, 0, (n - t->n_pycodes) * sizeof *p);
        t->pycodes = p;
        t->n_pycodes = n;
    }
    struct gmt_pycode *pc = &t->pycodes[c->code_id];
    if (pc->name)
        return 0; /* defined twice: keep the first */
    const char *s = (const char *)(c + 1);
    pc->name = strdup(s);
    pc->qualname = strdup(s + c->name_len);
    pc->file = strdup(s + c->name_len + c->qualname_len);
    pc->firstlineno = c->firstlineno;
    return pc->name && pc->qualname && pc->file ? 0 : -ENOMEM;
}

int gmt_meta_stack(struct gmt_trace *t, const struct gmt_rec *r, char *err, size_t errlen,
                   uint64_t off)
{
    const struct gmt_rec_stack *s = (const void *)r;
    /* ids are dense from 1, each defined by a STACK record of its own: one larger than
     * the file has room for such records is corrupt (and would size the stack table) */
    if (s->stack_id == 0 || s->stack_id >= MAX_STACK_ID ||
        s->stack_id > t->image_len / sizeof(struct gmt_rec_stack)) {
        snprintf(err, errlen, "%s: offset %llu: stack id %u out of range", t->path,
                 (unsigned long long)off, s->stack_id);
        return -EINVAL;
    }
    if (s->stack_id >= t->n_stacks) {
        size_t n = t->n_stacks ? t->n_stacks : 64;
        while (n <= s->stack_id)
            n *= 2;
        struct gmt_stack *p = realloc(t->stacks, n * sizeof *p);
        if (!p)
            return -ENOMEM;
        memset(p + t->n_stacks, 0, (n - t->n_stacks) * sizeof *p);
        t->stacks = p;
        t->n_stacks = n;
    }
    struct gmt_stack *st = &t->stacks[s->stack_id];
    if (st->ip)
        return 0; /* defined twice: keep the first */
    uint32_t depth = s->depth;
    if ((size_t)depth > (r->size - sizeof *s) / 8)
        depth = (uint32_t)((r->size - sizeof *s) / 8);
    st->ip = malloc((depth ? depth : 1) * sizeof(uint64_t));
    if (!st->ip)
        return -ENOMEM;
    memcpy(st->ip, s->ip, depth * sizeof(uint64_t));
    st->depth = depth;
    return 0;
}

int gmt_meta_module_unload(struct gmt_trace *t, const struct gmt_rec *r)
{
    const struct gmt_rec_module_unload *u = (const void *)r;
    for (size_t i = 0; i < t->n_modules; i++)
        if (t->modules[i].id == u->module_id && !t->modules[i].t_unload)
            t->modules[i].t_unload = u->time_ns ? u->time_ns : 1;
    return 0;
}

int gmt_meta_thread(struct gmt_trace *t, size_t *cap, const struct gmt_rec *r)
{
    const struct gmt_rec_thread *th = (const void *)r;
    struct gmt_thread *slot = NULL;
    for (size_t i = 0; i < t->n_threads; i++)
        if (t->threads[i].tid == th->tid)
            slot = &t->threads[i];
    if (!slot && !(slot = gmt_array_push((void **)&t->threads, &t->n_threads, cap, sizeof *slot)))
        return -ENOMEM;
    slot->tid = th->tid;
    memcpy(slot->name, th->name, GMT_THREAD_NAME_LEN);
    slot->name[GMT_THREAD_NAME_LEN] = 0;
    return 0;
}
