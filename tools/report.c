/* report.c: the summary's model: one trace loaded, categorised and replayed, and which of its rows the options select. */
#include "report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "category.h"
#include "explain.h"
#include "holders.h"
#include "idnames.h"
#include "nccl_own.h"
#include "reader.h"
#include "symbolize.h"
#include "timeline.h"
#include "untracked.h"

const struct gmt_nccl_setting gmt_nccl_settings[GMT_N_NCCL_SETTINGS] = {
    {"NCCL_BUFFSIZE", "4194304"},        {"NCCL_LL_BUFFSIZE", "auto"},
    {"NCCL_LL128_BUFFSIZE", "auto"},     {"NCCL_MIN_NCHANNELS", "auto"},
    {"NCCL_MAX_NCHANNELS", "auto"},      {"NCCL_MIN_P2P_NCHANNELS", "1"},
    {"NCCL_MAX_P2P_NCHANNELS", "auto"},  {"NCCL_NVLS_ENABLE", "auto"},
    {"NCCL_NVLS_NCHANNELS", "auto"},     {"NCCL_RUNTIME_CONNECT", "1"},
    {"NCCL_CUMEM_ENABLE", "auto"},       {"NCCL_CUMEM_HOST_ENABLE", "auto"},
    {"NCCL_P2P_READ_ENABLE", "auto"},    {"NCCL_ALGO", "auto"},
    {"NCCL_PROTO", "auto"},              {"NCCL_WORK_FIFO_BYTES", "1048576"},
    {"NCCL_COMM_SPLIT_SHARE_RESOURCES", "0"}, {"NCCL_P2P_NET_CHUNKSIZE", "131072"},
};

void gmt_report_opts_init(struct gmt_report_opts *o)
{
    memset(o, 0, sizeof *o);
    o->top = 10;
    o->device = -1;
    o->width = 100;
    o->nccl_model = true;
    o->sites = true;
}

int gmt_report_opts_add_internal(struct gmt_report_opts *o, const char *glob)
{
    if (o->n_internal >= GMT_MAX_INTERNAL_RULES)
        return -E2BIG;
    o->internal[o->n_internal++] = glob;
    return 0;
}

int gmt_report_opts_add_debug_path(struct gmt_report_opts *o, const char *dir)
{
    if (o->n_debug_paths >= GMT_MAX_DEBUG_PATHS)
        return -E2BIG;
    o->debug_paths[o->n_debug_paths++] = dir;
    o->debug_paths[o->n_debug_paths] = NULL;
    return 0;
}

int gmt_report_opts_add_category(struct gmt_report_opts *o, const char *spec)
{
    if (o->n_cat_rules >= GMT_MAX_CAT_RULES || !strchr(spec, '='))
        return -EINVAL;
    o->cat_rules[o->n_cat_rules++] = spec;
    return 0;
}

static uint8_t cat_index(struct gmt_analysis *a, const char *name)
{
    for (size_t i = 0; i < a->n_cats; i++)
        if (!strcmp(a->cat_names[i], name))
            return (uint8_t)i;
    if (a->n_cats == GMT_MAX_CATS)
        return 0;
    a->cat_names[a->n_cats] = name;
    return (uint8_t)a->n_cats++;
}

/* The replay found a size beyond GMT_BYTES_MAX: the message names the first record
 * that has one, or else says that what is live on a device adds up past it. */
static void implausible(const struct gmt_trace *t, const char *path, char *err, size_t errlen)
{
    struct gmt_reader *r;
    struct gmt_event ev;
    char e2[64];
    if (gmt_reader_open_mem(&r, t->image, t->image_len, path, e2, sizeof e2) == 0) {
        while (gmt_reader_next(r, &ev, e2, sizeof e2) > 0) {
            const struct gmt_rec *h = ev.rec;
            uint64_t bytes = 0;
            if (h->type == GMT_REC_ALLOC)
                bytes = ((const struct gmt_rec_alloc *)(const void *)h)->bytes;
            else if (h->type == GMT_REC_ALLOC_SMALL)
                bytes = ((const struct gmt_rec_alloc_small *)(const void *)h)->bytes;
            else if (h->type == GMT_REC_ALLOC_FAIL)
                bytes = ((const struct gmt_rec_alloc_fail *)(const void *)h)->bytes;
            if (bytes > GMT_BYTES_MAX) {
                snprintf(err, errlen, "%s: offset %llu: %s of %llu bytes is beyond the 2^56 "
                         "bytes a trace may hold: the trace is corrupt", path,
                         (unsigned long long)ev.offset, gmt_rec_type_name(h->type),
                         (unsigned long long)bytes);
                gmt_reader_close(r);
                return;
            }
        }
        gmt_reader_close(r);
    }
    snprintf(err, errlen, "%s: memory live on a device adds up to more than 2^56 bytes: the "
             "trace is corrupt", path);
}

/* What the renderers read beside the replay: what is held at the end, the untracked parts
 * of each device and of each call row's first call, each communicator's own count and
 * sums, the sites grouped, the timeline. 0 or -ENOMEM. */
static int derive(struct gmt_analysis *a)
{
    const struct gmt_report *rep = &a->rep;
    a->n_held = gmt_held_at_end(a, a->held, GMT_MAX_HOLDERS);
    for (size_t d = 0; d < rep->n_dev; d++)
        if (gmt_report_dev_selected(a->opts, rep->dev[d].device) && !gmt_dev_shown(&rep->dev[d]))
            a->host_only_peak += rep->dev[d].host_peak;
    a->untracked = calloc(rep->n_dev ? rep->n_dev : 1, sizeof *a->untracked);
    a->untracked_calls = calloc(rep->n_colls ? rep->n_colls : 1, sizeof *a->untracked_calls);
    if (!a->untracked || !a->untracked_calls)
        return -ENOMEM;
    for (size_t d = 0; d < rep->n_dev; d++)
        gmt_untracked_parts(&a->t, rep, &rep->dev[d], &a->untracked[d]);
    for (size_t i = 0; i < rep->n_colls; i++)
        gmt_untracked_call_of(&a->t, &rep->colls[i], &a->untracked_calls[i]);
    const struct gmt_nccl_model *m = &a->nccl;
    a->nccl_own = calloc(m->n_c ? m->n_c : 1, sizeof *a->nccl_own);
    a->nccl_why = calloc(m->n_c ? m->n_c : 1, sizeof *a->nccl_why);
    if (!a->nccl_own || !a->nccl_why)
        return -ENOMEM;
    for (size_t i = 0; i < m->n_c; i++) {
        gmt_nccl_own(&a->t, &m->c[i], &a->nccl_own[i]);
        gmt_explain_why(m, &m->c[i], &a->nccl_why[i]);
    }
    a->eager_loading = gmt_untracked_eager(&a->t);
    if (a->opts->sites)
        gmt_sites_fill(a, &a->sites);
    if (a->opts->timeline)
        a->timeline_rc = gmt_timeline_build(a, a->opts->timeline, &a->timeline);
    return 0;
}

int gmt_analyze(struct gmt_analysis *a, const char *path, const struct gmt_report_opts *o,
                char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    a->opts = o;
    if (gmt_trace_load(&a->t, path, err, errlen))
        return -1;
    struct gmt_trace *t = &a->t;
    a->sym = gmt_sym_new(o->n_debug_paths ? o->debug_paths : NULL);
    a->cats = gmt_cat_new();
    if (a->sym) {
        gmt_sym_set_offline(a->sym, o->no_symbols);
        gmt_sym_use_names(a->sym, path);
    }
    a->stack_cat = calloc(t->n_stacks ? t->n_stacks : 1, 1);
    if (!a->sym || !a->cats || !a->stack_cat)
        goto nomem;
    for (int i = 0; i < o->n_cat_rules; i++)
        if (gmt_cat_add_rule(a->cats, o->cat_rules[i])) {
            snprintf(err, errlen, "bad --category '%s' (want NAME=GLOB)", o->cat_rules[i]);
            gmt_analysis_free(a);
            return -1;
        }
    for (size_t i = 0; i < t->n_modules; i++) {
        const struct gmt_module *m = &t->modules[i];
        int r = gmt_sym_add_module(a->sym, m->id, m->path, m->build_id, m->build_id_len,
                                   m->bias, m->start, m->end);
        if (r == -ENOMEM)
            goto nomem;
    }
    for (size_t i = 1; i < t->n_pycodes; i++)
        if (t->pycodes[i].name &&
            gmt_sym_add_pycode(a->sym, (uint32_t)i, t->pycodes[i].qualname, t->pycodes[i].file,
                               t->pycodes[i].firstlineno) == -ENOMEM)
            goto nomem;
    cat_index(a, GMT_CAT_USER); /* index 0: where stacks without a category land */
    for (size_t s = 1; s < t->n_stacks; s++) {
        const struct gmt_stack *st = &t->stacks[s];
        const char *name = st->ip ? gmt_cat_of_stack(a->cats, a->sym, st->ip, st->depth)
                                  : GMT_CAT_UNKNOWN;
        a->stack_cat[s] = cat_index(a, name);
    }
    a->stack_cat[0] = cat_index(a, GMT_CAT_UNKNOWN);
    uint64_t span = t->t_last > t->t_first ? t->t_last - t->t_first : 0;
    if (o->from_ns && o->from_ns > span) {
        snprintf(err, errlen, "%s: --from %.3f s is past the trace's end (%.3f s)", path,
                 (double)o->from_ns / 1e9, (double)span / 1e9);
        gmt_analysis_free(a);
        return -1;
    }
    struct gmt_replay_opts ro = {
        .stack_cat = a->stack_cat,
        .device = o->device,
        .t_from = o->from_ns ? t->t_first + o->from_ns : 0,
        .t_to = o->to_ns ? t->t_first + o->to_ns : 0,
    };
    int r = gmt_replay(t, &ro, &a->rep);
    if (r == -EOVERFLOW) {
        implausible(t, path, err, errlen);
        gmt_analysis_free(a);
        return -1;
    }
    if (r)
        goto nomem;
    r = gmt_phases_compute(t, o->step, o->device, &a->phases, err, errlen);
    if (r) {
        gmt_analysis_free(a);
        return -1;
    }
    a->nccl_rc = o->nccl_model ? gmt_nccl_model_build(a, &a->nccl) : 0;
    if (gmt_blocks_compute(t, &a->phases, o->device, &a->blocks))
        goto nomem;
    if (derive(a))
        goto nomem;
    return 0;
nomem:
    snprintf(err, errlen, "%s: out of memory", path);
    gmt_analysis_free(a);
    return -1;
}

void gmt_analysis_free(struct gmt_analysis *a)
{
    gmt_report_free(&a->rep);
    gmt_phases_free(&a->phases);
    gmt_nccl_model_free(&a->nccl);
    gmt_blocks_free(&a->blocks);
    free(a->untracked);
    free(a->untracked_calls);
    free(a->nccl_own);
    free(a->nccl_why);
    gmt_sites_free(&a->sites);
    gmt_timeline_free(a->timeline);
    if (a->sym)
        gmt_sym_free(a->sym);
    if (a->cats)
        gmt_cat_free(a->cats);
    free(a->stack_cat);
    gmt_trace_free(&a->t);
    memset(a, 0, sizeof *a);
}

bool gmt_report_dev_selected(const struct gmt_report_opts *o, int device)
{
    return o->device < 0 || o->device == device;
}

/* Whether `label` names op `op` as a whole word: "AllReduce" in "Group(AllReduce+
 * AllGather)", not "Reduce" in it; case-insensitive. */
static bool label_names(const char *label, const char *op)
{
    size_t n = strlen(op);
    for (const char *p = label; n && *p; p++) {
        if (strncasecmp(p, op, n))
            continue;
        bool start = p == label || p[-1] == '(' || p[-1] == '+';
        bool end = !p[n] || p[n] == ')' || p[n] == '+';
        if (start && end)
            return true;
    }
    return false;
}

bool gmt_report_coll_selected(const struct gmt_report_opts *o, const struct gmt_coll_row *c)
{
    /* by op name, case-insensitively; a group that holds the op is its too */
    return !o->op || !strcasecmp(o->op, gmt_op_name(c->op)) || label_names(c->label, o->op);
}
