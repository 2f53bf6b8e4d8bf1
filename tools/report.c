/* report.c: analyses one trace and prints the summary a person reads first (text, JSON, CSV). */
#include "report.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "category.h"
#include "reader.h"
#include "symbolize.h"
#include "util.h"

void gmt_report_opts_init(struct gmt_report_opts *o)
{
    memset(o, 0, sizeof *o);
    o->top = 10;
    o->device = -1;
    o->width = 100;
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

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int gmt_list_traces(const char *dir, char ***out, size_t *n)
{
    *out = NULL;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return -errno;
    struct dirent *e;
    size_t cap = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 5 || strcmp(e->d_name + l - 4, ".gmt"))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char **p = realloc(*out, cap * sizeof *p);
            if (!p)
                break;
            *out = p;
        }
        size_t pl = strlen(dir) + l + 2;
        char *path = malloc(pl);
        if (!path)
            break;
        snprintf(path, pl, "%s/%s", dir, e->d_name);
        (*out)[(*n)++] = path;
    }
    closedir(d);
    if (*n)
        qsort(*out, *n, sizeof **out, cmp_str);
    return 0;
}

int gmt_expand_paths(char *const *args, size_t n, char ***out, size_t *nout)
{
    struct gmt_vec v = GMT_VEC_INIT(char *);
    int status = 0;
    for (size_t i = 0; i < n; i++) {
        struct stat st;
        if (stat(args[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            char **list;
            size_t k;
            if (gmt_list_traces(args[i], &list, &k) || k == 0) {
                fprintf(stderr, "gpumemtrace: %s: no traces (*.gmt) in this directory\n", args[i]);
                status = -ENOENT;
                if (!k)
                    continue;
            }
            for (size_t j = 0; j < k; j++) {
                char **slot = gmt_vec_push(&v);
                if (!slot) {
                    free(list[j]);
                    status = -ENOMEM;
                    continue;
                }
                *slot = list[j];
            }
            free(list);
        } else {
            char **slot = gmt_vec_push(&v);
            if (!slot || !(*slot = strdup(args[i]))) {
                if (slot)
                    v.len--;
                status = -ENOMEM;
            }
        }
    }
    *out = v.data;
    *nout = v.len;
    return status;
}

void gmt_free_paths(char **p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(p[i]);
    free(p);
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

int gmt_analyze(struct gmt_analysis *a, const char *path, const struct gmt_report_opts *o,
                char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    if (gmt_trace_load(&a->t, path, err, errlen))
        return -1;
    struct gmt_trace *t = &a->t;
    a->sym = gmt_sym_new(o->n_debug_paths ? o->debug_paths : NULL);
    a->cats = gmt_cat_new();
    if (a->sym)
        gmt_sym_set_offline(a->sym, o->no_symbols);
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
    cat_index(a, GMT_CAT_USER); /* index 0: where stacks without a category land */
    for (size_t s = 1; s < t->n_stacks; s++) {
        const struct gmt_stack *st = &t->stacks[s];
        const char *name = st->ip ? gmt_cat_of_stack(a->cats, a->sym, st->ip, st->depth)
                                  : GMT_CAT_UNKNOWN;
        a->stack_cat[s] = cat_index(a, name);
    }
    a->stack_cat[0] = cat_index(a, GMT_CAT_UNKNOWN);
    struct gmt_replay_opts ro = {
        .stack_cat = a->stack_cat,
        .device = o->device,
        .t_from = o->from_ns ? t->t_first + o->from_ns : 0,
        .t_to = o->to_ns ? t->t_first + o->to_ns : 0,
    };
    if (gmt_replay(t, &ro, &a->rep))
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
    if (a->sym)
        gmt_sym_free(a->sym);
    if (a->cats)
        gmt_cat_free(a->cats);
    free(a->stack_cat);
    gmt_trace_free(&a->t);
    memset(a, 0, sizeof *a);
}

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

/* ---- text ---- */

#define B(x) gmt_fmt_bytes(b##x, sizeof b##x, (x))

static const char *op_label(const struct gmt_analysis *a, uint32_t scope_id, char *buf, size_t len)
{
    const struct gmt_scope *s = scope_id ? gmt_trace_scope_by_id(&a->t, scope_id) : NULL;
    if (!s) {
        snprintf(buf, len, "-");
        return buf;
    }
    snprintf(buf, len, "%s #%u at %.3f s", gmt_op_name(s->op), s->id,
             (double)(s->t_begin - a->t.t_first) / 1e9);
    return buf;
}

static const char *nccl_settings[][2] = {
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
#define N_NCCL_SETTINGS (sizeof nccl_settings / sizeof nccl_settings[0])

static const char *version_text(int32_t v, bool nccl, char *buf, size_t len)
{
    if (v <= 0)
        snprintf(buf, len, "?");
    else if (nccl) /* 22809 = 2.28.9 */
        snprintf(buf, len, "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100);
    else /* 13000 = 13.0 */
        snprintf(buf, len, "%d.%d", v / 1000, (v % 1000) / 10);
    return buf;
}

static bool dev_selected(const struct gmt_report_opts *o, int device)
{
    return o->device < 0 || o->device == device;
}

static void text_header(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_trace *t = &a->t;
    const struct gmt_rec_process *p = &t->proc;
    char b1[32], b2[32], b3[32];
    fprintf(out, "gpumemtrace summary of %s\n\n", t->path);
    if (t->has_proc) {
        fprintf(out, "  process   pid %u (parent %u) on %s", p->pid, p->ppid, t->host ? t->host : "?");
        if (p->rank >= 0)
            fprintf(out, ", rank %d of %d (local rank %d)", p->rank, p->world_size, p->local_rank);
        if (p->flags & GMT_PROC_FORKED)
            fprintf(out, ", forked");
        fprintf(out, "\n  command   ");
        gmt_fput_quoted(out, t->cmdline ? t->cmdline : "", t->cmdline ? strlen(t->cmdline) : 0);
        fprintf(out, "\n");
    }
    fprintf(out, "  devices   ");
    for (size_t d = 0; d < a->rep.n_dev; d++)
        fprintf(out, "%s%d", d ? ", " : "", a->rep.dev[d].device);
    fprintf(out, "%s\n", a->rep.n_dev ? "" : "none seen");
    fprintf(out, "  versions  CUDA driver %s, runtime %s, NCCL %s\n",
            version_text(t->version[GMT_COMP_DRIVER], false, b1, sizeof b1),
            version_text(t->version[GMT_COMP_RUNTIME], false, b2, sizeof b2),
            version_text(t->version[GMT_COMP_NCCL], true, b3, sizeof b3));
    char span[GMT_FMT_LEN];
    gmt_fmt_duration(span, sizeof span, t->t_last > t->t_first ? t->t_last - t->t_first : 0);
    fprintf(out, "  span      %s, %" PRIu64 " records, ", span, t->records);
    if (t->complete)
        fprintf(out, "complete");
    else if (t->cut)
        fprintf(out, "CUT at offset %" PRIu64 " (the process crashed or was killed)", t->cut_offset);
    else
        fprintf(out, "INCOMPLETE (no end record: the process crashed, was killed or exec'd)");
    if (t->records_dropped)
        fprintf(out, ", %" PRIu64 " records dropped", t->records_dropped);
    fprintf(out, "\n  NCCL env  ");
    int col = 12, first = 1;
    for (size_t i = 0; i < N_NCCL_SETTINGS; i++) {
        const char *v = gmt_trace_env(t, nccl_settings[i][0]);
        char item[160];
        snprintf(item, sizeof item, "%s=%s%s", nccl_settings[i][0], v ? v : nccl_settings[i][1],
                 v ? "" : "*");
        int w = (int)strlen(item) + 2;
        if (!first && col + w > o->width) {
            fprintf(out, "\n            ");
            col = 12;
        }
        fprintf(out, "%s%s", first ? "" : "  ", item);
        col += w;
        first = 0;
    }
    fprintf(out, "\n            (* unset: NCCL's default)\n");
}

static void text_peaks(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_report *rep = &a->rep;
    fprintf(out, "\nPeak device memory\n");
    fprintf(out, "  %-6s %10s %12s %10s %10s %10s  %s\n", "device", "peak", "at", "at end",
            "untracked", "dev used", "in flight at the peak");
    for (size_t d = 0; d < rep->n_dev; d++) {
        const struct gmt_dev_report *r = &rep->dev[d];
        if (!dev_selected(o, r->device) || (!r->allocs && !r->has_used && !r->failures))
            continue;
        char bpeak[32], bend[32], bu[32], bused[32], bt[32], lab[96];
        gmt_fmt_bytes(bpeak, sizeof bpeak, r->peak);
        gmt_fmt_bytes(bend, sizeof bend, r->end);
        snprintf(bt, sizeof bt, "%.3f", r->peak_time ? (double)(r->peak_time - a->t.t_first) / 1e9 : 0.0);
        if (r->has_used) {
            gmt_fmt_sbytes(bu, sizeof bu, (int64_t)r->used_max - (int64_t)r->tracked_at_used_max);
            gmt_fmt_bytes(bused, sizeof bused, r->used_max);
        } else {
            snprintf(bu, sizeof bu, "?");
            snprintf(bused, sizeof bused, "?");
        }
        char dn[16];
        snprintf(dn, sizeof dn, "%d", r->device);
        fprintf(out, "  %-6s %10s %10s s %10s %10s %10s  %s\n", r->device < 0 ? "?" : dn, bpeak,
                bt, bend, bu, bused, op_label(a, r->peak_scope, lab, sizeof lab));
        fprintf(out, "         at the peak:");
        for (size_t c = 0; c < a->n_cats; c++)
            if (r->peak_by_cat[c]) {
                char bc[32];
                fprintf(out, " %s %s;", a->cat_names[c], gmt_fmt_bytes(bc, sizeof bc, r->peak_by_cat[c]));
            }
        fprintf(out, "\n         at the end: ");
        for (size_t c = 0; c < a->n_cats; c++)
            if (r->end_by_cat[c]) {
                char bc[32];
                fprintf(out, " %s %s;", a->cat_names[c], gmt_fmt_bytes(bc, sizeof bc, r->end_by_cat[c]));
            }
        if (r->host_peak) {
            char bh[32];
            fprintf(out, "\n         pinned host memory: peak %s", gmt_fmt_bytes(bh, sizeof bh, r->host_peak));
        }
        fprintf(out, "\n");
    }
    fprintf(out, "  untracked = device used (cuMemGetInfo) - tracked: the CUDA context, loaded\n"
                 "  kernels and pool reserves that no allocation call shows. '?' = never sampled.\n");
}

/* communicators by order of appearance, from 1, to tell rows of two apart */
static int comm_index(const struct gmt_trace *t, uint64_t comm)
{
    for (size_t i = 0; comm && i < t->n_comms; i++)
        if (t->comms[i].comm == comm)
            return (int)i + 1;
    return 0;
}

static bool coll_selected(const struct gmt_report_opts *o, const struct gmt_coll_row *c)
{
    return !o->op || !strcmp(o->op, gmt_op_name(c->op)) || !strncmp(c->label, o->op, strlen(o->op));
}

static void text_colls(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_report *rep = &a->rep;
    fprintf(out, "\nNCCL calls (first call vs later calls; tracked = allocation calls, device = cuMemGetInfo)\n");
    if (!rep->n_colls) {
        fprintf(out, "  none\n");
        return;
    }
    fprintf(out, "  %-28s %-9s %6s %10s %10s %10s %10s %10s %13s %9s\n", "op", "rank", "calls",
            "bytes/call", "1st track", "1st dev", "later max", "later dev", "allocs(proxy)", "host time");
    for (size_t i = 0; i < rep->n_colls; i++) {
        const struct gmt_coll_row *c = &rep->colls[i];
        if (!coll_selected(o, c) || !dev_selected(o, c->device))
            continue;
        char rank[48], bpc[32], ft[32], fd[32], lm[32], ld[32], al[48], ht[32];
        int ci = comm_index(&a->t, c->comm);
        if (c->rank >= 0 && a->t.n_comms > 1 && ci > 0)
            snprintf(rank, sizeof rank, "%d/%d c%d", c->rank, c->nranks, ci);
        else if (c->rank >= 0)
            snprintf(rank, sizeof rank, "%d/%d", c->rank, c->nranks);
        else
            snprintf(rank, sizeof rank, "-");
        gmt_fmt_bytes(bpc, sizeof bpc, c->bytes_per_call);
        gmt_fmt_sbytes(ft, sizeof ft, c->first_tracked);
        if (c->first_has_dev)
            gmt_fmt_sbytes(fd, sizeof fd, c->first_dev);
        else
            snprintf(fd, sizeof fd, "?");
        gmt_fmt_sbytes(lm, sizeof lm, c->calls > 1 ? c->later_tracked_max : 0);
        if (c->later_has_dev)
            gmt_fmt_sbytes(ld, sizeof ld, c->later_dev_max);
        else
            snprintf(ld, sizeof ld, c->calls > 1 ? "?" : "-");
        snprintf(al, sizeof al, "%" PRIu64 "(%" PRIu64 ")", c->allocs, c->allocs_other_thread);
        gmt_fmt_duration(ht, sizeof ht, c->host_calls ? c->host_ns_total / c->host_calls : 0);
        fprintf(out, "  %-28.28s %-9s %6" PRIu64 " %10s %10s %10s %10s %10s %13s %9s\n", c->label,
                rank, c->calls, bpc, ft, fd, lm, ld, al, ht);
        if (c->failed)
            fprintf(out, "  %-28s %" PRIu64 " call(s) returned an error\n", "", c->failed);
        if (c->allocs && c->first_stack) {
            char line[1024];
            gmt_stack_line(a, c->first_stack, 4, line, sizeof line);
            int room = o->width - 16 > 20 ? o->width - 16 : 20;
            fprintf(out, "    called from %.*s%s\n", room, line, (int)strlen(line) > room ? "…" : "");
        }
    }
    fprintf(out, "  host time = mean per timed call (grouped calls after their first are written\n"
                 "  untimed). (proxy) = allocations made on another thread than the caller's\n"
                 "  (NCCL's proxy service thread) while the call was in flight.\n");
}

static void text_sites(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o,
                       bool leaks)
{
    const struct gmt_report *rep = &a->rep;
    int frames = o->width >= 140 ? 5 : 3;
    fprintf(out, leaks ? "\nLeaks (device memory still allocated at the end, by site)\n"
                       : "\nTop allocation sites (device memory, by bytes live at the peak)\n");
    long shown = 0;
    for (size_t i = 0; i < rep->n_sites && shown < o->top; i++) {
        const struct gmt_site_row *s = &rep->sites[i];
        if (leaks ? !s->live_at_end : !(s->live_at_peak || s->ever_live))
            continue;
        char b1[32], b2[32], b3[32], line[1024];
        gmt_fmt_bytes(b1, sizeof b1, s->live_at_peak);
        gmt_fmt_bytes(b2, sizeof b2, s->live_at_end);
        gmt_fmt_bytes(b3, sizeof b3, s->bytes_total);
        if (leaks)
            fprintf(out, "  %10s in %" PRIu64 " allocation(s)  [%s]\n", b2, s->count_at_end,
                    a->cat_names[s->cat]);
        else
            fprintf(out, "  %10s at peak, %s at end, %" PRIu64 " allocs, %s in all  [%s]\n", b1, b2,
                    s->allocs, b3, a->cat_names[s->cat]);
        gmt_stack_line(a, s->stack, frames, line, sizeof line);
        int room = o->width - 6 > 20 ? o->width - 6 : 20;
        fprintf(out, "      %.*s%s\n", room, line, (int)strlen(line) > room ? "…" : "");
        shown++;
    }
    if (!shown)
        fprintf(out, "  none\n");
}

static void text_fails(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_report *rep = &a->rep;
    fprintf(out, "\nAllocation failures\n");
    if (!rep->n_fails) {
        fprintf(out, "  none\n");
        return;
    }
    for (size_t i = 0; i < rep->n_fails; i++) {
        const struct gmt_fail_row *f = &rep->fails[i];
        if (!dev_selected(o, f->device))
            continue;
        char b1[32], b2[32], lab[96], line[1024];
        fprintf(out, "  %.3f s  %s of %s on device %d failed (error %d), %s tracked then; in flight: %s\n",
                (double)(f->time - a->t.t_first) / 1e9, gmt_api_name(f->api),
                gmt_fmt_bytes(b1, sizeof b1, f->bytes), f->device, f->error,
                gmt_fmt_bytes(b2, sizeof b2, f->tracked), op_label(a, f->scope, lab, sizeof lab));
        fprintf(out, "      live:");
        for (size_t c = 0; c < a->n_cats; c++)
            if (f->by_cat[c]) {
                char bc[32];
                fprintf(out, " %s %s;", a->cat_names[c], gmt_fmt_bytes(bc, sizeof bc, f->by_cat[c]));
            }
        fprintf(out, "\n      %s\n", gmt_stack_line(a, f->stack, 4, line, sizeof line));
    }
}

void gmt_report_text(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    text_header(out, a, o);
    text_peaks(out, a, o);
    text_colls(out, a, o);
    text_sites(out, a, o, false);
    text_sites(out, a, o, true);
    text_fails(out, a, o);
    if (a->rep.unmatched_frees)
        fprintf(out, "\n  note: %" PRIu64 " free(s) of addresses the trace never saw allocated "
                     "(allocated before tracing started, or by an API not traced)\n",
                a->rep.unmatched_frees);
}

/* ---- JSON (schema gpumemtrace.summary/1, docs/summary-json.md) ---- */

static void jcats(FILE *out, const struct gmt_analysis *a, const uint64_t *by_cat)
{
    fputc('{', out);
    int first = 1;
    for (size_t c = 0; c < a->n_cats; c++)
        if (by_cat[c]) {
            fprintf(out, "%s", first ? "" : ", ");
            gmt_fput_json_string(out, a->cat_names[c]);
            fprintf(out, ": %" PRIu64, by_cat[c]);
            first = 0;
        }
    fputc('}', out);
}

void gmt_report_json(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_trace *t = &a->t;
    const struct gmt_report *rep = &a->rep;
    fprintf(out, "{\"file\": ");
    gmt_fput_json_string(out, t->path);
    fprintf(out, ", \"pid\": %u, \"ppid\": %u, \"host\": ", t->proc.pid, t->proc.ppid);
    gmt_fput_json_string(out, t->host ? t->host : "");
    fprintf(out, ", \"rank\": %d, \"world_size\": %d, \"local_rank\": %d, \"command\": ",
            t->has_proc ? t->proc.rank : -1, t->has_proc ? t->proc.world_size : -1,
            t->has_proc ? t->proc.local_rank : -1);
    gmt_fput_json_string(out, t->cmdline ? t->cmdline : "");
    fprintf(out, ", \"versions\": {\"driver\": %d, \"runtime\": %d, \"nccl\": %d}",
            t->version[GMT_COMP_DRIVER], t->version[GMT_COMP_RUNTIME], t->version[GMT_COMP_NCCL]);
    fprintf(out, ", \"nccl_env\": {");
    for (size_t i = 0; i < N_NCCL_SETTINGS; i++) {
        const char *v = gmt_trace_env(t, nccl_settings[i][0]);
        fprintf(out, "%s", i ? ", " : "");
        gmt_fput_json_string(out, nccl_settings[i][0]);
        fprintf(out, ": ");
        if (v)
            gmt_fput_json_string(out, v);
        else
            fprintf(out, "null");
    }
    fprintf(out, "}, \"span_ns\": %" PRIu64 ", \"records\": %" PRIu64 ", \"complete\": %s",
            t->t_last > t->t_first ? t->t_last - t->t_first : 0, t->records,
            t->complete ? "true" : "false");
    if (t->cut)
        fprintf(out, ", \"cut_offset\": %" PRIu64, t->cut_offset);
    else
        fprintf(out, ", \"cut_offset\": null");
    fprintf(out, ", \"records_dropped\": %" PRIu64, t->records_dropped);
    fprintf(out, ", \"devices\": [");
    int first = 1;
    for (size_t d = 0; d < rep->n_dev; d++) {
        const struct gmt_dev_report *r = &rep->dev[d];
        if (!dev_selected(o, r->device))
            continue;
        fprintf(out, "%s{\"device\": %d, \"peak_bytes\": %" PRIu64 ", \"peak_time_ns\": %" PRIu64
                     ", \"peak_scope\": %u, \"peak_by_category\": ",
                first ? "" : ", ", r->device, r->peak,
                r->peak_time ? r->peak_time - t->t_first : 0, r->peak_scope);
        jcats(out, a, r->peak_by_cat);
        fprintf(out, ", \"end_bytes\": %" PRIu64 ", \"end_by_category\": ", r->end);
        jcats(out, a, r->end_by_cat);
        fprintf(out, ", \"host_pinned_peak_bytes\": %" PRIu64 ", \"virtual_peak_bytes\": %" PRIu64,
                r->host_peak, r->virtual_peak);
        if (r->has_used)
            fprintf(out, ", \"device_used_max_bytes\": %" PRIu64 ", \"tracked_at_used_max_bytes\": %" PRIu64
                         ", \"untracked_bytes\": %" PRId64 ", \"device_total_bytes\": %" PRIu64,
                    r->used_max, r->tracked_at_used_max,
                    (int64_t)r->used_max - (int64_t)r->tracked_at_used_max, r->total);
        else
            fprintf(out, ", \"device_used_max_bytes\": null, \"untracked_bytes\": null");
        fprintf(out, ", \"allocs\": %" PRIu64 ", \"frees\": %" PRIu64 ", \"failures\": %" PRIu64 "}",
                r->allocs, r->frees, r->failures);
        first = 0;
    }
    fprintf(out, "], \"collectives\": [");
    first = 1;
    for (size_t i = 0; i < rep->n_colls; i++) {
        const struct gmt_coll_row *c = &rep->colls[i];
        if (!coll_selected(o, c) || !dev_selected(o, c->device))
            continue;
        fprintf(out, "%s{\"op\": ", first ? "" : ", ");
        gmt_fput_json_string(out, c->label);
        fprintf(out, ", \"comm_rank\": %d, \"comm_size\": %d, \"device\": %d, \"bytes_per_call\": %" PRIu64
                     ", \"calls\": %" PRIu64 ", \"failed_calls\": %" PRIu64
                     ", \"first_tracked_bytes\": %" PRId64 ", \"first_device_bytes\": ",
                c->rank, c->nranks, c->device, c->bytes_per_call, c->calls, c->failed,
                c->first_tracked);
        if (c->first_has_dev)
            fprintf(out, "%" PRId64, c->first_dev);
        else
            fprintf(out, "null");
        fprintf(out, ", \"later_tracked_max_bytes\": %" PRId64 ", \"later_tracked_total_bytes\": %" PRId64
                     ", \"later_device_max_bytes\": ",
                c->later_tracked_max, c->later_tracked_total);
        if (c->later_has_dev)
            fprintf(out, "%" PRId64, c->later_dev_max);
        else
            fprintf(out, "null");
        fprintf(out, ", \"allocs\": %" PRIu64 ", \"alloc_bytes\": %" PRIu64
                     ", \"allocs_other_thread\": %" PRIu64 ", \"host_ns_first\": %" PRIu64
                     ", \"host_ns_total\": %" PRIu64 ", \"host_calls\": %" PRIu64
                     ", \"first_call_stack\": ",
                c->allocs, c->alloc_bytes, c->allocs_other_thread, c->host_ns_first, c->host_ns_total,
                c->host_calls);
        char line[8192];
        gmt_fput_json_string(out, c->first_stack ? gmt_stack_full(a, c->first_stack, 64, line, sizeof line) : "");
        fprintf(out, "}");
        first = 0;
    }
    fprintf(out, "], \"sites\": [");
    long shown = 0;
    for (size_t i = 0; i < rep->n_sites && shown < o->top; i++) {
        const struct gmt_site_row *s = &rep->sites[i];
        if (!s->allocs)
            continue;
        char line[8192];
        fprintf(out, "%s{\"category\": ", shown ? ", " : "");
        gmt_fput_json_string(out, a->cat_names[s->cat]);
        fprintf(out, ", \"live_at_peak_bytes\": %" PRIu64 ", \"live_at_end_bytes\": %" PRIu64
                     ", \"live_at_end_count\": %" PRIu64 ", \"allocs\": %" PRIu64
                     ", \"bytes_total\": %" PRIu64 ", \"stack\": ",
                s->live_at_peak, s->live_at_end, s->count_at_end, s->allocs, s->bytes_total);
        gmt_fput_json_string(out, gmt_stack_full(a, s->stack, 64, line, sizeof line));
        fprintf(out, "}");
        shown++;
    }
    fprintf(out, "], \"failures\": [");
    for (size_t i = 0; i < rep->n_fails; i++) {
        const struct gmt_fail_row *f = &rep->fails[i];
        char line[8192];
        fprintf(out, "%s{\"time_ns\": %" PRIu64 ", \"api\": ", i ? ", " : "", f->time - t->t_first);
        gmt_fput_json_string(out, gmt_api_name(f->api));
        fprintf(out, ", \"bytes\": %" PRIu64 ", \"device\": %d, \"error\": %d, \"tracked_bytes\": %" PRIu64
                     ", \"scope\": %u, \"live_by_category\": ",
                f->bytes, f->device, f->error, f->tracked, f->scope);
        jcats(out, a, f->by_cat);
        fprintf(out, ", \"stack\": ");
        gmt_fput_json_string(out, gmt_stack_full(a, f->stack, 64, line, sizeof line));
        fprintf(out, "}");
    }
    fprintf(out, "], \"unmatched_frees\": %" PRIu64 "}", rep->unmatched_frees);
}

/* ---- CSV ---- */

static void csv_field(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

void gmt_report_csv(FILE *out, const struct gmt_analysis *a, const struct gmt_report_opts *o)
{
    const struct gmt_report *rep = &a->rep;
    fprintf(out, "section,file,device,peak_bytes,end_bytes,device_used_max_bytes,untracked_bytes\n");
    for (size_t d = 0; d < rep->n_dev; d++) {
        const struct gmt_dev_report *r = &rep->dev[d];
        if (!dev_selected(o, r->device))
            continue;
        fprintf(out, "device,");
        csv_field(out, a->t.path);
        if (r->has_used)
            fprintf(out, ",%d,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRId64 "\n", r->device, r->peak,
                    r->end, r->used_max, (int64_t)r->used_max - (int64_t)r->tracked_at_used_max);
        else
            fprintf(out, ",%d,%" PRIu64 ",%" PRIu64 ",,\n", r->device, r->peak, r->end);
    }
    fprintf(out, "section,file,op,rank,nranks,calls,bytes_per_call,first_tracked_bytes,first_device_bytes,"
                 "later_tracked_max_bytes,allocs,allocs_other_thread,host_ns_total,host_calls\n");
    for (size_t i = 0; i < rep->n_colls; i++) {
        const struct gmt_coll_row *c = &rep->colls[i];
        if (!coll_selected(o, c))
            continue;
        fprintf(out, "collective,");
        csv_field(out, a->t.path);
        fputc(',', out);
        csv_field(out, c->label);
        fprintf(out, ",%d,%d,%" PRIu64 ",%" PRIu64 ",%" PRId64 ",", c->rank, c->nranks, c->calls,
                c->bytes_per_call, c->first_tracked);
        if (c->first_has_dev)
            fprintf(out, "%" PRId64, c->first_dev);
        fprintf(out, ",%" PRId64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n",
                c->later_tracked_max, c->allocs, c->allocs_other_thread, c->host_ns_total,
                c->host_calls);
    }
    fprintf(out, "section,file,category,live_at_peak_bytes,live_at_end_bytes,allocs,bytes_total,stack\n");
    long shown = 0;
    for (size_t i = 0; i < rep->n_sites && shown < o->top; i++, shown++) {
        const struct gmt_site_row *s = &rep->sites[i];
        char line[2048];
        fprintf(out, "site,");
        csv_field(out, a->t.path);
        fputc(',', out);
        csv_field(out, a->cat_names[s->cat]);
        fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",", s->live_at_peak,
                s->live_at_end, s->allocs, s->bytes_total);
        csv_field(out, gmt_stack_line(a, s->stack, 8, line, sizeof line));
        fputc('\n', out);
    }
}
