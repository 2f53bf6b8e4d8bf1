/* trace.c: lookups in a loaded trace: communicators, scopes by id, their samples and records, threads, modules, environment. */
#include "trace.h"

#include <stdio.h>
#include <string.h>

#include "u64map.h"

const struct gmt_scope *gmt_trace_scope_by_id(const struct gmt_trace *t, uint32_t id)
{
    long i = gmt_trace_scope_index(t, id);
    return i >= 0 ? &t->scopes[i] : NULL;
}

const struct gmt_scope_mem *gmt_trace_scope_mem(const struct gmt_trace *t,
                                                const struct gmt_scope *s)
{
    size_t i = (size_t)(s - t->scopes);
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
