/* trace.c: lookups in a loaded trace: communicators, scopes by id, their samples and records, threads, modules, environment. */
#include "trace.h"

#include <stdio.h>
#include <string.h>

#include "u64map.h"

/* Most lookups walk the scopes in order, a member's and its group's in turn: the count
 * found last, per thread, and the ones beside it are tried first (a guess, checked). */
static _Thread_local size_t note_hint, stored_hint;

/* The notes whose first member is at or before index i (by_stored: whose stored scopes
 * before them are at most i), a count from 0 to t->n_reps. */
static inline uint64_t note_key(const struct gmt_rep_note *n, bool by_stored)
{
    return by_stored ? n->stored_before : n->first_scope;
}

static inline bool count_is(const struct gmt_trace *t, size_t h, size_t i, bool by_stored)
{
    return h <= t->n_reps && (h == 0 || note_key(&t->reps[h - 1], by_stored) <= i) &&
           (h == t->n_reps || note_key(&t->reps[h], by_stored) > i);
}

static size_t notes_up_to(const struct gmt_trace *t, size_t i, bool by_stored)
{
    size_t *hint = by_stored ? &stored_hint : &note_hint;
    size_t h = *hint;
    if (count_is(t, h, i, by_stored))
        return h;
    if (count_is(t, h + 1, i, by_stored))
        return *hint = h + 1;
    if (h && count_is(t, h - 1, i, by_stored))
        return *hint = h - 1;
    size_t lo = 0, hi = t->n_reps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (note_key(&t->reps[mid], by_stored) <= i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return *hint = lo;
}

long gmt_scope_slot_slow(const struct gmt_trace *t, size_t i, uint32_t *j)
{
    size_t k = notes_up_to(t, i, false);
    if (!k)
        return (long)i;
    const struct gmt_rep_note *n = &t->reps[k - 1];
    if (i - n->first_scope < n->count) {
        *j = (uint32_t)(i - n->first_scope);
        return -1 - (long)(k - 1);
    }
    /* past its members: the scopes before, less the members of it and of the notes before */
    return (long)(i - (n->first_scope - n->stored_before) - n->count);
}

size_t gmt_scope_index_of_stored_slow(const struct gmt_trace *t, size_t k)
{
    /* the notes made before t->scopes[k]: those with no more stored before them */
    size_t c = notes_up_to(t, k, true);
    if (!c)
        return k;
    const struct gmt_rep_note *n = &t->reps[c - 1];
    return k + (n->first_scope - n->stored_before) + n->count;
}

long gmt_trace_parent_index_slow(const struct gmt_trace *t, size_t i, uint32_t parent_id)
{
    uint32_t j;
    long k = gmt_scope_slot(t, i, &j);
    if (k < 0)
        return (long)t->reps[-1 - k].group;
    return gmt_trace_scope_index(t, parent_id);
}

long gmt_trace_member_index(const struct gmt_trace *t, uint32_t id)
{
    /* the last note by group id below id */
    size_t lo = 0, hi = t->n_reps;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->reps[t->rep_by_id[mid]].group_id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (!lo)
        return -1;
    const struct gmt_rep_note *n = &t->reps[t->rep_by_id[lo - 1]];
    return id - n->group_id <= n->count ? (long)(n->first_scope + (id - n->group_id - 1)) : -1;
}

/* Member j of note k, as the loader made the scopes of a group written out: its
 * template member's fields, its group's ids, thread and time, begun and ended at once. */
static void member_scope(const struct gmt_trace *t, size_t k, uint32_t j, struct gmt_scope *s)
{
    const struct gmt_rep_note *n = &t->reps[k];
    const struct gmt_rep_tmpl *m = &t->rep_tmpl[n->origin_at + j];
    memset(s, 0, sizeof *s);
    s->id = n->group_id + 1 + j;
    s->parent_id = n->group_id;
    s->tid = n->tid;
    s->result = m->result;
    s->offset = n->offset;
    s->comm = m->comm;
    s->count = m->count;
    s->t_begin = s->t_end = n->time;
    s->datatype = m->datatype;
    s->op = m->op;
    s->device = m->device >= 0 ? m->device : n->device;
    if (t->member_comm.used) {
        const uint64_t *c = gmt_u64map_get(&t->member_comm, n->first_scope + j);
        if (c) {
            s->comm = *c;
            const struct gmt_comm *cm = gmt_trace_comm(t, *c);
            if (cm && cm->device >= 0)
                s->device = (int16_t)cm->device;
        }
    }
}

const struct gmt_scope *gmt_trace_scope_slow(const struct gmt_trace *t, size_t i,
                                             struct gmt_scope *tmp)
{
    uint32_t j;
    long k = gmt_scope_slot_slow(t, i, &j);
    if (k >= 0)
        return &t->scopes[k];
    member_scope(t, (size_t)(-1 - k), j, tmp);
    return tmp;
}

const struct gmt_scope *gmt_trace_scope_by_id(const struct gmt_trace *t, uint32_t id,
                                              struct gmt_scope *tmp)
{
    long i = gmt_trace_scope_index(t, id);
    return i >= 0 ? gmt_trace_scope(t, (size_t)i, tmp) : NULL;
}

long gmt_trace_scope_at(const struct gmt_trace *t, uint32_t id, uint64_t off)
{
    if (t->scope_dups) {
        const uint64_t *v = gmt_u64map_get(&t->scope_at, off);
        return v ? (long)*v - 1 : -1;
    }
    long i = gmt_trace_scope_index(t, id);
    struct gmt_scope tmp;
    return i >= 0 && gmt_trace_scope(t, (size_t)i, &tmp)->offset <= off ? i : -1;
}

const struct gmt_scope_mem *gmt_trace_scope_mem(const struct gmt_trace *t, size_t i)
{
    if (i < t->scope_mem_lo || i >= t->scope_mem_hi) /* most: none sampled, no lookup */
        return NULL;
    const uint64_t *at = gmt_u64map_get(&t->scope_mem_of, i);
    return at && *at <= t->n_scope_mem ? &t->scope_mem[*at - 1] : NULL;
}

/* The SCOPE_BEGIN a scope was made from: whole in the image, which the trace keeps. A
 * repeated group's member lies at its GROUP_REPEAT: its fields are those of the
 * SCOPE_BEGIN it was first read from, but for its stack (0, as the format says). NULL
 * for such a member when its note is not found (cannot be: the loader made both). */
static const struct gmt_rec_scope_begin *scope_rec(const struct gmt_trace *t,
                                                   const struct gmt_scope *s, bool *repeated)
{
    const struct gmt_rec *h = (const void *)(t->image + s->offset);
    *repeated = h->type == GMT_REC_GROUP_REPEAT;
    if (!*repeated)
        return (const void *)h;
    const struct gmt_rec_group_repeat *g = (const void *)h;
    const uint64_t *v = gmt_u64map_get(&t->rep_at, s->offset);
    uint32_t k = s->id - g->scope_id - 1;
    if (!v || k >= t->reps[*v - 1].count)
        return NULL;
    const struct gmt_rep_note *n = &t->reps[*v - 1];
    return (const void *)(t->image + t->rep_origin[n->origin_at + k]);
}

uint32_t gmt_trace_scope_stack(const struct gmt_trace *t, const struct gmt_scope *s)
{
    bool repeated;
    const struct gmt_rec_scope_begin *b = scope_rec(t, s, &repeated);
    return b && !repeated ? b->stack_id : 0;
}

int32_t gmt_trace_scope_peer(const struct gmt_trace *t, const struct gmt_scope *s)
{
    bool repeated;
    const struct gmt_rec_scope_begin *b = scope_rec(t, s, &repeated);
    return b ? b->peer : -1;
}

const char *gmt_trace_thread_name(const struct gmt_trace *t, uint32_t tid)
{
    for (size_t i = 0; i < t->n_threads; i++)
        if (t->threads[i].tid == tid)
            return t->threads[i].name;
    return "";
}

const struct gmt_module *gmt_trace_module_at(const struct gmt_trace *t, uint64_t ip)
{
    for (size_t i = 0; i < t->n_modules; i++)
        if (ip >= t->modules[i].start && ip < t->modules[i].end)
            return &t->modules[i];
    return NULL;
}

const char *gmt_trace_env(const struct gmt_trace *t, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < t->n_env; i++)
        if (!strncmp(t->env[i], name, n) && t->env[i][n] == '=')
            return t->env[i] + n + 1;
    return NULL;
}

const char *gmt_env_job_id(char *const *env, size_t n_env, char *buf, size_t len)
{
    static const struct { const char *var, *kind; } ids[] = {
        {"GPUMEMTRACE_JOB_ID", "run"},         {"TORCHELASTIC_RUN_ID", "torchelastic"},
        {"SLURM_JOB_ID", "slurm"},             {"OMPI_MCA_ess_base_jobid", "openmpi"},
        {"PMIX_NAMESPACE", "pmix"}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++) {
        size_t n = strlen(ids[i].var);
        size_t k = 0;
        while (k < n_env && (strncmp(env[k], ids[i].var, n) || env[k][n] != '='))
            k++;
        if (k < n_env && env[k][n + 1]) {
            snprintf(buf, len, "%s:%s", ids[i].kind, env[k] + n + 1);
            return buf;
        }
    }
    return NULL;
}

const char *gmt_trace_job_id(const struct gmt_trace *t, char *buf, size_t len)
{
    return gmt_env_job_id(t->env, t->n_env, buf, len);
}

int gmt_trace_comm_index(const struct gmt_trace *t, uint64_t comm)
{
    for (size_t i = 0; comm && i < t->n_comms; i++)
        if (t->comms[i].comm == comm)
            return (int)i + 1;
    return 0;
}
