/* test_nccl_hooks.c: the NCCL hooks and scopes: exports, pass-through, scopes/groups/COMM records in the trace, allocation attribution, MEMINFO policy. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gmt.h"
#include "idnames.h"
#include "nccl_abi.h"
#include "scope.h"
#include "alloc_rec.h"
#include "reader.h"
#include "replay.h"
#include "trace.h"
#include "writer_api.h"

#ifndef NCCL_PROG
#define NCCL_PROG "" /* no fake NCCL yet: tests that run it are skipped */
#endif

/* ---------------------------------------------------------------- running the program */

struct run {
    char dir[64];
    char out[128];
    char trace[64 + 2 + 256];
    int status;
    int dies_of; /* set before run_prog: the signal the program is to die of, 0 none */
};

/* Runs NCCL_PROG with `args` (NULL-terminated), traced when `traced`, extra environment
 * "NAME=value" strings in `env` (NULL-terminated or NULL). stdout goes to r->out. */
static void run_prog(struct run *r, bool traced, const char *const *args, const char *const *env)
{
    if (!*NCCL_PROG)
        cr_skip_test("the fake NCCL is not built yet");
    strcpy(r->dir, "/tmp/gmt-nccl-XXXXXX");
    cr_assert_not_null(mkdtemp(r->dir));
    snprintf(r->out, sizeof r->out, "%s/out.txt", r->dir);
    r->trace[0] = 0;
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        FILE *o = freopen(r->out, "w", stdout);
        if (!o)
            _exit(126);
        unsetenv("LD_PRELOAD");
        unsetenv("GPUMEMTRACE_MEMINFO");
        if (traced) {
            char pat[128];
            snprintf(pat, sizeof pat, "%s/t.%%p.gmt", r->dir);
            setenv("GPUMEMTRACE_OUTPUT", pat, 1);
            setenv("LD_PRELOAD", LIB_SO, 1);
        }
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        const char *argv[16] = {NCCL_PROG};
        for (int i = 0; args[i] && i < 14; i++)
            argv[i + 1] = args[i];
        execv(NCCL_PROG, (char *const *)argv);
        _exit(127);
    }
    cr_assert_eq(waitpid(pid, &r->status, 0), pid);
    if (r->dies_of)
        cr_assert(WIFSIGNALED(r->status) && WTERMSIG(r->status) == r->dies_of,
                  "%s %s: status 0x%x, not signal %d", NCCL_PROG, args[0], r->status, r->dies_of);
    else
        cr_assert(WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0,
                  "%s %s exited with status 0x%x", NCCL_PROG, args[0], r->status);
    if (traced) {
        DIR *d = opendir(r->dir);
        cr_assert_not_null(d);
        struct dirent *e;
        while ((e = readdir(d)))
            if (strstr(e->d_name, ".gmt"))
                snprintf(r->trace, sizeof r->trace, "%s/%s", r->dir, e->d_name);
        closedir(d);
        cr_assert(r->trace[0], "no trace written in %s", r->dir);
    }
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    static char buf[1 << 18];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return strdup(buf);
}

/* ---------------------------------------------------------------- the trace, decoded */

#define MAXR 4096
struct scope {
    uint32_t id, parent, tid;
    unsigned op;
    uint64_t comm, count, t_begin, t_end;
    int datatype, result, ended, index, end_index;
    uint32_t stack;
};
struct alloc {
    unsigned api, kind;
    uint64_t address, bytes, t;
    uint32_t scope, tid, stack;
};
struct stack {
    uint32_t id, depth;
    uint64_t ip[64];
};
struct module {
    uint64_t start, end;
    char path[128];
};
struct comm {
    uint64_t comm, parent, hash;
    int rank, nranks, device, index;
};
struct meminfo {
    unsigned phase;
    uint32_t scope;
    int device;
};
struct trace {
    struct scope scopes[MAXR];
    int nscopes;
    struct alloc allocs[MAXR];
    int nallocs;
    struct comm comms[64];
    int ncomms;
    struct meminfo mem[MAXR];
    int nmem;
    int nfrees_ncclmem;
    struct stack stacks[256];
    int nstacks;
    struct module modules[128];
    int nmodules;
};

static struct trace T;

static struct scope *scope_by_id(uint32_t id)
{
    for (int i = 0; i < T.nscopes; i++)
        if (T.scopes[i].id == id)
            return &T.scopes[i];
    return NULL;
}

/* Opens a trace as the CLI reads it: GROUP_REPEAT records expanded (*buf holds it). */
static void open_expanded(struct gmt_reader **rd, const char *path, uint8_t **buf)
{
    struct gmt_file_end fe;
    char err[256];
    cr_assert_eq(gmt_trace_open_expanded(rd, path, buf, &fe, err, sizeof err), 0, "%s", err);
    cr_expect_eq(fe.lost, 0, "%llu records of repeated groups not restored",
                 (unsigned long long)fe.lost);
}

/* Records of one type in the file as written. */
/* Records of `type` in the file as written, of at least `min_size` bytes. */
static int count_records_of_size(const char *path, unsigned type, uint32_t min_size)
{
    struct gmt_reader *rd;
    char err[256];
    cr_assert_eq(gmt_reader_open(&rd, path, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    int n = 0, rc;
    while ((rc = gmt_reader_next(rd, &ev, err, sizeof err)) > 0)
        n += ev.rec->type == type && ev.rec->size >= min_size;
    cr_assert_eq(rc, 0, "%s", err);
    gmt_reader_close(rd);
    return n;
}
static int count_records(const char *path, unsigned type)
{
    return count_records_of_size(path, type, 0);
}

static void load(const char *path)
{
    memset(&T, 0, sizeof T);
    struct gmt_reader *rd;
    uint8_t *buf = NULL;
    char err[256];
    open_expanded(&rd, path, &buf);
    struct gmt_event ev;
    int rc, index = 0;
    while ((rc = gmt_reader_next(rd, &ev, err, sizeof err)) > 0) {
        const struct gmt_rec *h = ev.rec;
        index++;
        if (h->type == GMT_REC_SCOPE_BEGIN && T.nscopes < MAXR) {
            const struct gmt_rec_scope_begin *b = (const void *)h;
            T.scopes[T.nscopes++] = (struct scope){
                .id = b->scope_id, .parent = b->parent_id, .tid = ev.tid, .op = h->aux,
                .comm = b->comm, .count = b->count, .t_begin = ev.time_ns,
                .datatype = b->datatype, .index = index, .stack = b->stack_id};
        } else if (h->type == GMT_REC_SCOPE_END) {
            const struct gmt_rec_scope_end *e = (const void *)h;
            struct scope *s = scope_by_id(e->scope_id);
            cr_assert_not_null(s, "SCOPE_END of unknown scope %u", e->scope_id);
            cr_expect_eq(s->op, h->aux, "scope %u begins as op %u, ends as %u", s->id, s->op, h->aux);
            s->result = e->result;
            s->ended++;
            s->t_end = ev.time_ns;
            s->end_index = index;
        } else if ((h->type == GMT_REC_ALLOC || h->type == GMT_REC_ALLOC_SMALL) &&
                   T.nallocs < MAXR) {
            struct gmt_rec_alloc_ext x;
            as_alloc(h, &x);
            const struct gmt_rec_alloc *a = &x.a;
            T.allocs[T.nallocs++] = (struct alloc){
                .api = a->h.aux, .kind = a->kind, .address = a->address, .bytes = a->bytes,
                .t = ev.time_ns, .scope = a->scope_id, .tid = ev.tid, .stack = a->stack_id};
        } else if (h->type == GMT_REC_STACK && T.nstacks < 256) {
            const struct gmt_rec_stack *st = (const void *)h;
            struct stack *k = &T.stacks[T.nstacks++];
            k->id = st->stack_id;
            k->depth = st->depth < 64 ? st->depth : 64;
            memcpy(k->ip, st->ip, k->depth * sizeof k->ip[0]);
        } else if (h->type == GMT_REC_MODULE_LOAD && T.nmodules < 128) {
            const struct gmt_rec_module_load *m = (const void *)h;
            struct module *k = &T.modules[T.nmodules++];
            k->start = m->start;
            k->end = m->end;
            const char *mpath = (const char *)(m + 1) + m->build_id_len;
            snprintf(k->path, sizeof k->path, "%.*s", (int)m->path_len, mpath);
        } else if (h->type == GMT_REC_FREE) {
            if (h->aux == GMT_API_ncclMemFree)
                T.nfrees_ncclmem++;
        } else if (h->type == GMT_REC_COMM && T.ncomms < 64) {
            const struct gmt_rec_comm *c = (const void *)h;
            T.comms[T.ncomms++] = (struct comm){c->comm, c->parent, c->unique_id_hash, c->rank,
                                                c->nranks, c->device, index};
        } else if (h->type == GMT_REC_MEMINFO && h->aux <= GMT_MEMINFO_END && T.nmem < MAXR) {
            /* the policy's samples around NCCL calls; FIRST, FAIL, PERIODIC and EXIT are
             * test_sampling's */
            const struct gmt_rec_meminfo *m = (const void *)h;
            T.mem[T.nmem++] = (struct meminfo){h->aux, m->scope_id, m->device};
        }
    }
    cr_assert_geq(rc, 0, "%s", err);
    gmt_reader_close(rd);
    free(buf);
    for (int i = 0; i < T.nscopes; i++)
        cr_expect_eq(T.scopes[i].ended, 1, "scope %u (op %s) ended %d times", T.scopes[i].id,
                     gmt_op_name(T.scopes[i].op), T.scopes[i].ended);
}

static int count_op(unsigned op)
{
    int n = 0;
    for (int i = 0; i < T.nscopes; i++)
        n += T.scopes[i].op == op;
    return n;
}

static int meminfo_of(uint32_t scope, unsigned phase)
{
    int n = 0;
    for (int i = 0; i < T.nmem; i++)
        n += T.mem[i].scope == scope && T.mem[i].phase == phase;
    return n;
}

/* ---------------------------------------------------------------- exports */

Test(nccl_hooks, exports_every_entry_point_under_both_names)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "nm -D --defined-only %s", LIB_SO);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    static char syms[1 << 20];
    size_t n = fread(syms, 1, sizeof syms - 1, p);
    syms[n] = 0;
    cr_assert_eq(pclose(p), 0, "nm failed on %s", LIB_SO);
    int found = 0;
#define CHECK_EXPORT(name, op, shape, params, args, sargs)                                     \
    do {                                                                                       \
        const char *want[2] = {" T nccl" #name "\n", " T pnccl" #name "\n"};                   \
        for (int i = 0; i < 2; i++) {                                                          \
            cr_expect_not_null(strstr(syms, want[i]), "%s not exported", want[i] + 3);         \
            found += strstr(syms, want[i]) != NULL;                                            \
        }                                                                                      \
    } while (0);
    GMT_NCCL_ENTRIES(CHECK_EXPORT)
#undef CHECK_EXPORT
    cr_assert_eq(found, 60, "30 entry points x 2 names, %d found", found);
}

Test(nccl_hooks, wrapper_lookup_knows_every_name_and_nothing_else)
{
    int n = 0;
#define CHECK_LOOKUP(name, op, shape, params, args, sargs)                   \
    cr_expect_eq(gmt_nccl_wrapper("nccl" #name), (void *)nccl##name);      \
    cr_expect_eq(gmt_nccl_wrapper("pnccl" #name), (void *)pnccl##name);    \
    n += gmt_nccl_wrapper("nccl" #name) != NULL;
    GMT_NCCL_ENTRIES(CHECK_LOOKUP)
#undef CHECK_LOOKUP
    cr_expect_eq(n, 30);
    cr_expect_null(gmt_nccl_wrapper("ncclCommCount"));
    cr_expect_null(gmt_nccl_wrapper("ncclAllReduceX"));
    cr_expect_null(gmt_nccl_wrapper("cuMemAlloc_v2"));
    cr_expect_null(gmt_nccl_wrapper(NULL));
}

/* ---------------------------------------------------------------- pass-through */

Test(nccl_hooks, results_and_data_pass_through_unchanged)
{
    const char *args[] = {"calls", NULL};
    struct run a = {0}, b = {0};
    run_prog(&a, false, args, NULL);
    run_prog(&b, true, args, NULL);
    char *x = slurp(a.out), *y = slurp(b.out);
    char *sx, *sy;
    char *lx = strtok_r(x, "\n", &sx), *ly = strtok_r(y, "\n", &sy);
    int lines = 0, present = 0;
    for (; lx && ly; lx = strtok_r(NULL, "\n", &sx), ly = strtok_r(NULL, "\n", &sy), lines++) {
        char name[64];
        if (strstr(lx, " absent") && sscanf(lx, "%63s", name) == 1) {
            /* Missing from this NCCL: our export must answer without calling anything. */
            char want[128];
            snprintf(want, sizeof want, "%-28s r=%d", name, (int)ncclSystemError);
            cr_expect_str_eq(ly, want);
        } else {
            cr_expect_str_eq(ly, lx);
            present += strstr(lx, " r=") != NULL;
        }
    }
    cr_expect(!lx && !ly, "outputs differ in length after %d lines", lines);
    cr_expect_gt(present, 100, "only %d calls reached the fake NCCL", present);
    load(b.trace);
    /* One scope per call made through either name (twins pass through). */
    cr_expect_gt(count_op(GMT_OP_AllReduce), 4);
    cr_expect_gt(count_op(GMT_OP_Group), 20);
    free(x);
    free(y);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of s (a malloc'd string) sorted, as a new malloc'd string; s is freed. */
static char *sorted_lines(char *s)
{
    size_t n = 0, len = strlen(s);
    char **line = malloc((len + 1) * sizeof *line);
    cr_assert_not_null(line);
    char *save;
    for (char *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
        line[n++] = l;
    qsort(line, n, sizeof *line, cmp_str);
    char *out = malloc(len + 2), *p = out;
    cr_assert_not_null(out);
    for (size_t i = 0; i < n; i++)
        p += sprintf(p, "%s\n", line[i]);
    *p = 0;
    free(line);
    free(s);
    return out;
}

/* Loaded but off (GPUMEMTRACE_OFF=1): every call passes straight through, and there
 * is no trace. */
Test(nccl_hooks, off_passes_every_call_through_and_writes_nothing)
{
    const char *args[] = {"bare", "3", NULL};
    char pre[256], out[160];
    snprintf(pre, sizeof pre, "LD_PRELOAD=%s", LIB_SO);
    struct run a = {0}, b = {0};
    run_prog(&a, false, args, NULL);
    snprintf(out, sizeof out, "GPUMEMTRACE_OUTPUT=%s/t.%%p.gmt", a.dir);
    const char *env[] = {pre, "GPUMEMTRACE_OFF=1", out, NULL};
    run_prog(&b, false, args, env);
    /* the ranks are threads: their lines interleave differently from run to run */
    char *x = sorted_lines(slurp(a.out)), *y = sorted_lines(slurp(b.out));
    cr_expect_str_eq(y, x);
    cr_expect(strstr(x, "sum"), "the program printed its sums");
    DIR *d = opendir(a.dir);
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        cr_expect(!strstr(e->d_name, ".gmt"), "a trace was written: %s", e->d_name);
    closedir(d);
    free(x);
    free(y);
}

/* ---------------------------------------------------------------- scopes */

Test(nccl_hooks, bare_collective_is_one_scope_without_parent)
{
    const char *args[] = {"bare", "3", NULL};
    struct run r = {0};
    run_prog(&r, true, args, NULL);
    load(r.trace);
    cr_assert_eq(count_op(GMT_OP_AllReduce), 6);
    for (int i = 0; i < T.nscopes; i++) {
        struct scope *s = &T.scopes[i];
        if (s->op != GMT_OP_AllReduce)
            continue;
        cr_expect_eq(s->parent, 0);
        cr_expect_neq(s->comm, 0);
        cr_expect_eq(s->count, 1024);
        cr_expect_eq(s->datatype, ncclFloat32);
        cr_expect_eq(s->result, 0);
    }
    /* Two ranks of one unique id, each on its device. */
    cr_assert_eq(T.ncomms, 2);
    cr_expect_eq(T.comms[0].hash, T.comms[1].hash);
    cr_expect_neq(T.comms[0].hash, 0);
    cr_expect_eq(T.comms[0].rank + T.comms[1].rank, 1);
    cr_expect_eq(T.comms[0].nranks, 2);
    for (int i = 0; i < 2; i++)
        cr_expect_eq(T.comms[i].device, T.comms[i].rank);
}

/* The first collective on a communicator is where NCCL connects: its buffers are
 * allocated by another thread while the caller waits. Those allocations happen inside
 * the first call's time window, never inside a later call's; when they carry a scope it
 * is that first call's (or the init's). */
Test(nccl_hooks, first_collective_allocates_later_ones_do_not)
{
    const char *args[] = {"bare", "3", NULL};
    struct run r = {0};
    run_prog(&r, true, args, NULL);
    load(r.trace);
    int in_first = 0;
    for (int i = 0; i < T.nscopes; i++) {
        struct scope *s = &T.scopes[i];
        if (s->op != GMT_OP_AllReduce)
            continue;
        int nth = 0; /* which call on this communicator */
        for (int j = 0; j < i; j++)
            nth += T.scopes[j].op == GMT_OP_AllReduce && T.scopes[j].comm == s->comm;
        int inside = 0;
        for (int k = 0; k < T.nallocs; k++) {
            struct alloc *a = &T.allocs[k];
            if (a->scope == s->id || (a->tid != s->tid && a->t > s->t_begin && a->t < s->t_end &&
                                      (a->kind == GMT_KIND_PHYSICAL || a->kind == GMT_KIND_MAPPING)))
                inside++;
        }
        if (nth == 0)
            in_first += inside;
        else
            cr_expect_eq(inside, 0, "all_reduce #%d on comm 0x%llx: %d allocations", nth + 1,
                         (unsigned long long)s->comm, inside);
    }
    cr_expect_gt(in_first, 0, "the first all_reduces allocated nothing");
    for (int k = 0; k < T.nallocs; k++) {
        struct scope *s = scope_by_id(T.allocs[k].scope);
        if (!s || T.allocs[k].tid == s->tid)
            continue;
        cr_expect(s->op == GMT_OP_AllReduce || s->op == GMT_OP_CommInitRank,
                  "foreign-thread allocation stamped with a %s scope", gmt_op_name(s->op));
    }
}

static const char *module_of(uint64_t ip)
{
    for (int i = 0; i < T.nmodules; i++)
        if (ip >= T.modules[i].start && ip < T.modules[i].end)
            return T.modules[i].path;
    return "?";
}

/* An allocation NCCL makes inside the application's call (ncclCommInitRank's, on the
 * calling thread) is unwound from the driver hook's frame through the real NCCL and our
 * NCCL wrapper to the application: the wrapper's frame is dropped, NCCL's are kept. */
Test(nccl_hooks, allocation_inside_a_call_has_nccls_frames_not_ours)
{
    const char *args[] = {"bare", "1", NULL};
    struct run r = {0};
    run_prog(&r, true, args, NULL);
    load(r.trace);
    int checked = 0;
    for (int k = 0; k < T.nallocs; k++) {
        struct alloc *a = &T.allocs[k];
        struct scope *s = scope_by_id(a->scope);
        if (!s || s->tid != a->tid)
            continue; /* the calling thread inside a call (ncclCommInitRank's buffers) */
        struct stack *st = NULL;
        for (int i = 0; i < T.nstacks; i++)
            if (T.stacks[i].id == a->stack)
                st = &T.stacks[i];
        cr_assert_not_null(st, "allocation %d: no STACK %u", k, a->stack);
        bool in_nccl = false;
        for (uint32_t f = 0; f < st->depth; f++) {
            const char *m = module_of(st->ip[f]);
            cr_expect(!strstr(m, "libgpumemtrace"), "frame %u is in %s", f, m);
            in_nccl |= strstr(m, "libnccl") != NULL;
        }
        cr_expect(strstr(module_of(st->ip[0]), "libnccl"), "frame 0 is in %s, not NCCL",
                  module_of(st->ip[0]));
        cr_expect(in_nccl);
        checked++;
    }
    cr_expect_gt(checked, 0, "no allocation on the calling thread inside an NCCL call");
}

/* Stamping proper: the proxy thread's allocations carry the first collective's scope id
 * (gmt_scope_for_foreign_thread, used by events.c for threads without a scope). */
Test(nccl_hooks, proxy_thread_allocations_carry_the_collective_scope)
{
    const char *args[] = {"bare", "2", NULL};
    struct run r = {0};
    run_prog(&r, true, args, NULL);
    load(r.trace);
    int stamped = 0;
    for (int k = 0; k < T.nallocs; k++) {
        struct scope *s = scope_by_id(T.allocs[k].scope);
        stamped += s && s->op == GMT_OP_AllReduce && T.allocs[k].tid != s->tid;
    }
    cr_expect_gt(stamped, 0, "no allocation of another thread carries an all_reduce scope");
}

/* Nested groups: NCCL's proxy thread allocates in the outermost ncclGroupEnd, after the
 * inner group has ended: its allocations carry the outer group's scope. */
Test(nccl_hooks, proxy_allocations_in_nested_groups_carry_the_outermost_group)
{
    const char *args[] = {"nested", NULL};
    struct run r = {0};
    run_prog(&r, true, args, NULL);
    load(r.trace);
    cr_assert_eq(count_op(GMT_OP_Group), 2);
    struct scope *outer = NULL;
    for (int i = 0; i < T.nscopes; i++)
        if (T.scopes[i].op == GMT_OP_Group && T.scopes[i].parent == 0)
            outer = &T.scopes[i];
    cr_assert_not_null(outer);
    int foreign = 0;
    for (int k = 0; k < T.nallocs; k++) {
        if (T.allocs[k].tid == outer->tid || T.allocs[k].t < outer->t_begin ||
            T.allocs[k].t > outer->t_end)
            continue;
        foreign++;
        cr_expect_eq(T.allocs[k].scope, outer->id, "allocation %d of thread %u: scope %u", k,
                     T.allocs[k].tid, T.allocs[k].scope);
    }
    cr_expect_gt(foreign, 0, "the proxy thread allocated inside the groups");
}

Test(nccl_hooks, group_scope_holds_its_collectives_and_initall_writes_a_comm_per_device)
{
    const char *args[] = {"group", NULL};
    struct run r = {0};
    run_prog(&r, true, args, NULL);
    load(r.trace);
    cr_assert_eq(count_op(GMT_OP_CommInitAll), 2);
    cr_assert_eq(count_op(GMT_OP_Group), 3);
    /* Two cliques over devices 0 and 1: four communicators, two per device. */
    cr_assert_eq(T.ncomms, 4);
    int per_dev[2] = {0, 0};
    for (int i = 0; i < 4; i++) {
        cr_expect_eq(T.comms[i].hash, 0);
        cr_expect_eq(T.comms[i].parent, 0);
        cr_expect_eq(T.comms[i].nranks, 2);
        cr_expect_eq(T.comms[i].device, T.comms[i].rank);
        if (T.comms[i].device >= 0 && T.comms[i].device < 2)
            per_dev[T.comms[i].device]++;
        for (int j = 0; j < i; j++)
            cr_expect_neq(T.comms[i].comm, T.comms[j].comm);
    }
    cr_expect_eq(per_dev[0], 2);
    cr_expect_eq(per_dev[1], 2);
    int groups = 0;
    for (int i = 0; i < T.nscopes; i++) {
        struct scope *g = &T.scopes[i];
        if (g->op != GMT_OP_Group)
            continue;
        int children = 0;
        for (int j = 0; j < T.nscopes; j++)
            children += T.scopes[j].parent == g->id;
        cr_expect_eq(children, groups < 2 ? 4 : 2, "group %d has %d children", groups, children);
        cr_expect_eq(g->result, 0);
        groups++;
    }
    /* Each InitAll's COMM records are written inside its scope. */
    for (int i = 0; i < T.nscopes; i++) {
        struct scope *s = &T.scopes[i];
        if (s->op != GMT_OP_CommInitAll)
            continue;
        int inside = 0;
        for (int c = 0; c < T.ncomms; c++)
            inside += T.comms[c].index > s->index;
        cr_expect_geq(inside, 2);
    }
}

Test(nccl_hooks, failed_collective_records_its_error)
{
    const char *args[] = {"group", NULL};
    struct run r = {0};
    run_prog(&r, true, args, NULL);
    char *out = slurp(r.out);
    const char *p = strstr(out, "invalid datatype r=");
    cr_assert_not_null(p);
    int want = atoi(p + strlen("invalid datatype r="));
    cr_expect_neq(want, 0);
    load(r.trace);
    int seen = 0;
    for (int i = 0; i < T.nscopes; i++)
        if (T.scopes[i].datatype == 99) {
            cr_expect_eq(T.scopes[i].op, GMT_OP_AllReduce);
            cr_expect_eq(T.scopes[i].result, want);
            seen++;
        }
    cr_expect_eq(seen, 1);
    free(out);
}

Test(nccl_hooks, communicator_created_inside_a_group)
{
    const char *args[] = {"init_in_group", NULL};
    struct run r = {0};
    run_prog(&r, true, args, NULL);
    load(r.trace);
    cr_assert_eq(count_op(GMT_OP_CommInitRank), 2);
    struct scope *g = NULL;
    for (int i = 0; i < T.nscopes && !g; i++)
        if (T.scopes[i].op == GMT_OP_Group)
            g = &T.scopes[i];
    cr_assert_not_null(g);
    for (int i = 0; i < T.nscopes; i++)
        if (T.scopes[i].op == GMT_OP_CommInitRank)
            cr_expect_eq(T.scopes[i].parent, g->id);
    cr_assert_eq(T.ncomms, 2);
    for (int i = 0; i < 2; i++) {
        /* Written once the group ended, with what the finished communicator says. */
        cr_expect_gt(T.comms[i].index, g->index);
        cr_expect_eq(T.comms[i].rank, i);
        cr_expect_eq(T.comms[i].device, i);
        cr_expect_eq(T.comms[i].nranks, 2);
        cr_expect_neq(T.comms[i].hash, 0);
    }
    cr_expect_eq(T.comms[0].hash, T.comms[1].hash);
}

Test(nccl_hooks, ncclmemalloc_is_one_allocation_of_its_own_kind)
{
    const char *args[] = {"init_in_group", NULL};
    struct run r = {0};
    run_prog(&r, true, args, NULL);
    load(r.trace);
    cr_assert_eq(count_op(GMT_OP_MemAlloc), 1);
    uint32_t sid = 0;
    for (int i = 0; i < T.nscopes; i++)
        if (T.scopes[i].op == GMT_OP_MemAlloc)
            sid = T.scopes[i].id;
    int mine = 0, ncclmem = 0;
    for (int k = 0; k < T.nallocs; k++) {
        if (T.allocs[k].scope != sid)
            continue;
        mine++;
        if (T.allocs[k].kind == GMT_KIND_NCCL_MEM) {
            ncclmem++;
            cr_expect_eq(T.allocs[k].api, GMT_API_ncclMemAlloc);
            cr_expect_eq(T.allocs[k].bytes, 3u << 20);
        }
    }
    cr_expect_eq(ncclmem, 1);
    cr_expect_eq(mine, 1, "the cuMem calls inside ncclMemAlloc were recorded too (%d)", mine);
    cr_expect_eq(T.nfrees_ncclmem, 1);
}

/* ---------------------------------------------------------------- MEMINFO policy */

/* Sampled all_reduce scopes (BEGIN and END both present) per run of `iters` calls on
 * each of two communicators. */
static int sampled_allreduces(const char *policy, const char *iters)
{
    const char *args[] = {"bare", iters, NULL};
    char env[64];
    snprintf(env, sizeof env, "GPUMEMTRACE_MEMINFO=%s", policy);
    const char *envs[] = {env, NULL};
    struct run r = {0};
    run_prog(&r, true, args, policy ? envs : NULL);
    load(r.trace);
    int n = 0;
    for (int i = 0; i < T.nscopes; i++) {
        if (T.scopes[i].op != GMT_OP_AllReduce)
            continue;
        int b = meminfo_of(T.scopes[i].id, GMT_MEMINFO_BEGIN);
        int e = meminfo_of(T.scopes[i].id, GMT_MEMINFO_END);
        cr_expect_eq(b, e, "scope %u: %d BEGIN, %d END samples", T.scopes[i].id, b, e);
        n += b > 0 && e > 0;
    }
    return n;
}

Test(nccl_hooks, meminfo_default_samples_first_two_per_key)
{
    cr_expect_eq(sampled_allreduces(NULL, "4"), 4);
}

Test(nccl_hooks, meminfo_never_samples_nothing)
{
    cr_expect_eq(sampled_allreduces("never", "3"), 0);
    cr_expect_eq(T.nmem, 0);
}

Test(nccl_hooks, meminfo_always_samples_every_call)
{
    cr_expect_eq(sampled_allreduces("always", "3"), 6);
}

Test(nccl_hooks, meminfo_first_n_then_every_k)
{
    cr_expect_eq(sampled_allreduces("first:1", "3"), 2);
    /* calls 0, 2, 4 of each communicator */
    cr_expect_eq(sampled_allreduces("first:1,every:2", "5"), 6);
    /* calls 0 and 2 of 4: every:K counts from the call after the first N */
    cr_expect_eq(sampled_allreduces("first:1,every:2", "4"), 4);
}

/* One thread calling on ten communicators in turn, in groups of two (more than the
 * per-thread memo holds, two devices): each communicator's first two calls are sampled,
 * on its own device, by the group they are in; its first call alone captures a stack. */
Test(nccl_hooks, meminfo_and_stacks_per_communicator_when_one_thread_rotates_over_many)
{
    const char *args[] = {"rotate", "4", "5", NULL};
    struct run r = {0};
    run_prog(&r, true, args, NULL);
    load(r.trace);
    cr_assert_eq(T.ncomms, 10);
    cr_assert_eq(count_op(GMT_OP_AllReduce), 40);
    for (int c = 0; c < T.ncomms; c++) {
        int calls = 0, stacks = 0;
        for (int i = 0; i < T.nscopes; i++) {
            struct scope *s = &T.scopes[i];
            if (s->op != GMT_OP_AllReduce || s->comm != T.comms[c].comm)
                continue;
            cr_expect_eq(meminfo_of(s->id, GMT_MEMINFO_BEGIN), 0, "members are sampled by their group");
            struct scope *g = scope_by_id(s->parent);
            cr_assert_not_null(g);
            cr_expect_eq(g->op, GMT_OP_Group);
            int on_dev = 0;
            for (int m = 0; m < T.nmem; m++)
                on_dev += T.mem[m].scope == g->id && T.mem[m].device == T.comms[c].device;
            cr_expect_eq(on_dev, calls < 2 ? 2 : 0, "comm %d call %d: %d samples on device %d",
                         c, calls, on_dev, T.comms[c].device);
            stacks += s->stack != 0;
            calls++;
        }
        cr_expect_eq(calls, 4);
        cr_expect_eq(stacks, 1, "comm %d: %d stacks", c, stacks);
    }
}

/* Group members after their (comm, op)'s first call, with nothing to sample, are written
 * the short way at their return: BEGIN and END back to back, at the thread's previous
 * time, inside their group, with every field of a full scope. */
Test(nccl_hooks, later_group_members_are_zero_length_scopes_in_their_group)
{
    /* four cliques: eight communicators on one thread, the memo's size */
    const char *args[] = {"rotate", "3", "4", NULL};
    const char *envs[] = {"GPUMEMTRACE_MEMINFO=never", NULL};
    struct run r = {0};
    run_prog(&r, true, args, envs);
    load(r.trace);
    cr_assert_eq(T.ncomms, 8);
    for (int c = 0; c < T.ncomms; c++) {
        int calls = 0;
        for (int i = 0; i < T.nscopes; i++) {
            struct scope *s = &T.scopes[i];
            if (s->op != GMT_OP_AllReduce || s->comm != T.comms[c].comm)
                continue;
            struct scope *g = scope_by_id(s->parent);
            cr_assert_not_null(g);
            cr_expect_eq(g->op, GMT_OP_Group);
            cr_expect_eq(s->tid, g->tid);
            cr_expect(g->t_begin <= s->t_begin && s->t_end <= g->t_end, "inside the group's time");
            cr_expect(g->index < s->index && s->end_index < g->end_index, "inside the group's records");
            cr_expect_eq(s->count, 1024);
            cr_expect_eq(s->datatype, ncclFloat32);
            cr_expect_eq(s->result, 0);
            if (calls == 0) {
                cr_expect_neq(s->stack, 0, "the first call is a full scope with its stack");
            } else {
                cr_expect_eq(s->stack, 0);
                cr_expect_eq(s->t_end, s->t_begin, "comm %d call %d: zero length", c, calls);
                cr_expect_eq(s->end_index, s->index + 1, "BEGIN and END back to back");
            }
            calls++;
        }
        cr_expect_eq(calls, 3);
    }
}

/* The records of a trace as the CLI reads them, one line each, for comparing two runs:
 * scopes and allocations with every field but times, pointers (communicators by the
 * order of their COMM records) and stacks' ids of ours. Each thread's lines together,
 * the threads' blocks sorted: the order of chunks in the file is the flushes'. */
struct block {
    uint32_t tid;
    char *text;
    size_t n, cap;
};

static int cmp_block(const void *a, const void *b)
{
    return strcmp(((const struct block *)a)->text, ((const struct block *)b)->text);
}

static char *record_lines(const char *path)
{
    struct gmt_reader *rd;
    uint8_t *buf = NULL;
    char err[256];
    open_expanded(&rd, path, &buf);
    struct block blocks[16];
    int nblocks = 0;
    uint64_t comms[16];
    int ncomms = 0;
    struct thread_comms {
        uint32_t tid;
        int n;
        uint64_t comm[16];
    } tc[16];
    int ntc = 0;
    struct gmt_event ev;
    int rc;
    while ((rc = gmt_reader_next(rd, &ev, err, sizeof err)) > 0) {
        const struct gmt_rec *h = ev.rec;
        char line[256] = "";
        if (h->type == GMT_REC_COMM && ncomms < 16) {
            comms[ncomms++] = ((const struct gmt_rec_comm *)(const void *)h)->comm;
        } else if (h->type == GMT_REC_SCOPE_BEGIN) {
            const struct gmt_rec_scope_begin *b = (const void *)h;
            int c = -1;
            for (int i = 0; i < ncomms; i++)
                if (comms[i] == b->comm)
                    c = i;
            /* by its place among this thread's communicators: threads that make theirs at
             * once write their COMM records in either order */
            if (c >= 0) {
                int t = 0;
                while (t < ntc && tc[t].tid != ev.tid)
                    t++;
                if (t == ntc) {
                    cr_assert_lt(ntc, 16);
                    tc[ntc++] = (struct thread_comms){.tid = ev.tid};
                }
                int k = 0;
                while (k < tc[t].n && tc[t].comm[k] != b->comm)
                    k++;
                if (k == tc[t].n) {
                    cr_assert_lt(k, 16);
                    tc[t].comm[tc[t].n++] = b->comm;
                }
                c = k;
            }
            snprintf(line, sizeof line, "begin %s id %u parent %u stack %u comm %d count %llu "
                     "type %d peer %d\n", gmt_op_name(h->aux), b->scope_id, b->parent_id,
                     b->stack_id, c, (unsigned long long)b->count, b->datatype, b->peer);
        } else if (h->type == GMT_REC_SCOPE_END) {
            const struct gmt_rec_scope_end *e = (const void *)h;
            snprintf(line, sizeof line, "end %s id %u result %d\n", gmt_op_name(h->aux),
                     e->scope_id, e->result);
        } else if (h->type == GMT_REC_ALLOC || h->type == GMT_REC_ALLOC_SMALL) {
            struct gmt_rec_alloc_ext x;
            as_alloc(h, &x);
            snprintf(line, sizeof line, "alloc %s %llu scope %u\n", gmt_api_name(x.a.h.aux),
                     (unsigned long long)x.a.bytes, x.a.scope_id);
        } else if (h->type == GMT_REC_FREE) {
            const struct gmt_rec_free *f = (const void *)h;
            snprintf(line, sizeof line, "free %s scope %u\n", gmt_api_name(h->aux), f->scope_id);
        }
        size_t l = strlen(line);
        if (!l)
            continue;
        struct block *bl = NULL;
        for (int i = 0; i < nblocks; i++)
            if (blocks[i].tid == ev.tid)
                bl = &blocks[i];
        if (!bl) {
            cr_assert_lt(nblocks, 16);
            bl = &blocks[nblocks++];
            *bl = (struct block){.tid = ev.tid, .cap = 1 << 16};
            cr_assert_not_null(bl->text = malloc(bl->cap));
        }
        if (bl->n + l + 1 > bl->cap) {
            bl->cap *= 2;
            cr_assert_not_null(bl->text = realloc(bl->text, bl->cap));
        }
        memcpy(bl->text + bl->n, line, l);
        bl->n += l;
        bl->text[bl->n] = 0;
    }
    cr_assert_eq(rc, 0, "%s", err);
    gmt_reader_close(rd);
    free(buf);
    qsort(blocks, (size_t)nblocks, sizeof blocks[0], cmp_block);
    size_t total = 1;
    for (int i = 0; i < nblocks; i++)
        total += blocks[i].n + 16;
    char *out = malloc(total);
    cr_assert_not_null(out);
    out[0] = 0;
    for (int i = 0; i < nblocks; i++) {
        strcat(out, "-- thread\n");
        strcat(out, blocks[i].text);
        free(blocks[i].text);
    }
    return out;
}

/* The program traced with `off` (a setting that turns a compact form off) and without,
 * both under `policy`: the same output. */
static void run_both_ways(const char *const *args, const char *off, const char *policy,
                          struct run *plain, struct run *compact)
{
    const char *e1[] = {off, policy, NULL}, *e2[] = {policy, NULL};
    run_prog(plain, true, args, e1);
    run_prog(compact, true, args, e2);
    char *o1 = slurp(plain->out), *o2 = slurp(compact->out);
    cr_expect_str_eq(o2, o1, "the program's output");
    free(o1);
    free(o2);
}

/* Two traces whose records (record_lines) are the same, else the first line that differs. */
static void expect_same_records(const char *one, const char *two, const char *as_one,
                                const char *as_two)
{
    char *a = record_lines(one), *b = record_lines(two);
    cr_expect_gt(strlen(a), 10000);
    if (strcmp(a, b)) {
        size_t line = 1, start = 0;
        for (size_t i = 0; a[i] && a[i] == b[i]; i++)
            if (a[i] == '\n') {
                line++;
                start = i + 1;
            }
        cr_expect_fail("record line %zu differs:\n  %s: %.100s\n  %s: %.100s", line, as_one,
                       a + start, as_two, b + start);
    }
    free(a);
    free(b);
}

/* A group with the members of the thread's previous one is written as GROUP_REPEAT, and
 * reads back as exactly the records its members make one by one, whatever a step does
 * differently (more members, another size, an allocation between members, a rejected
 * member, a nested group, an empty group, a call between groups). */
static void expect_repeats_read_back(const char *policy)
{
    const char *args[] = {"repeat", "100", NULL};
    struct run one = {0}, rep = {0};
    run_both_ways(args, "GPUMEMTRACE_GROUP_REPEAT=0", policy, &one, &rep);
    cr_expect_eq(count_records(one.trace, GMT_REC_GROUP_REPEAT), 0);
    int repeats = count_records(rep.trace, GMT_REC_GROUP_REPEAT);
    cr_expect_geq(repeats, 20, "%d of 100 groups written as GROUP_REPEAT", repeats);
    expect_same_records(one.trace, rep.trace, "one by one", "repeated");
}
Test(nccl_hooks, repeated_groups_read_back_as_the_records_written_one_by_one)
{
    expect_repeats_read_back("GPUMEMTRACE_MEMINFO=first:2");
    /* no sampling: members NCCL rejects go the short way too, and repeat */
    expect_repeats_read_back("GPUMEMTRACE_MEMINFO=never");
}

/* SCOPE_ENDs in call form (format 2.5: 32 bytes or more, standing for their begin too). */
static int count_call_forms(const char *path)
{
    return count_records_of_size(path, GMT_REC_SCOPE_END, GMT_SCOPE_CALL_MIN);
}

/* A loop's ungrouped calls, each written as one record at its return, read back as the
 * SCOPE_BEGIN and SCOPE_END the library writes with GPUMEMTRACE_NCCL_COMPACT=0: sizes,
 * streams and datatypes that change, an allocation between calls, a call NCCL rejects. */
static void expect_loop_read_back(const char *policy)
{
    const char *args[] = {"loop", "120", NULL};
    struct run one = {0}, cf = {0};
    run_both_ways(args, "GPUMEMTRACE_NCCL_COMPACT=0", policy, &one, &cf);
    cr_expect_eq(count_call_forms(one.trace), 0);
    int forms = count_call_forms(cf.trace);
    cr_expect_geq(forms, 50, "%d of the loop's ~160 calls written in call form", forms);
    expect_same_records(one.trace, cf.trace, "two records", "call form");
}
Test(nccl_hooks, loop_calls_in_call_form_read_back_as_begin_and_end)
{
    expect_loop_read_back("GPUMEMTRACE_MEMINFO=first:2");
    expect_loop_read_back("GPUMEMTRACE_MEMINFO=never");
}

/* A program that hangs in an NCCL call and then dies (SIGKILL, a crash on another
 * thread) or exits: the call it hangs in is in the trace, open, on its thread, with a
 * time no later than the end of the trace; with call forms (a SCOPE_OPEN the flusher or
 * the dying thread wrote) as with two records per call. */
static void expect_hang_shows_after(const char *how, int dies_of, const char *compact,
                                    const char *wait_ms, const char *flush)
{
    const char *args[] = {"hang", how, wait_ms, NULL};
    const char *envs[] = {compact, "GPUMEMTRACE_MEMINFO=first:2", flush, NULL};
    struct run r = {.dies_of = dies_of};
    run_prog(&r, true, args, envs);
    struct gmt_reader *rd;
    uint8_t *buf = NULL;
    char err[256];
    open_expanded(&rd, r.trace, &buf);
    struct gmt_event ev;
    int rc, open_n = 0;
    uint32_t open_id = 0, open_tid = 0, ids[64], tids[64];
    uint64_t open_t = 0, last_t = 0, t_of[64];
    int n = 0;
    while ((rc = gmt_reader_next(rd, &ev, err, sizeof err)) > 0) {
        if (ev.time_ns > last_t)
            last_t = ev.time_ns;
        if (ev.rec->type == GMT_REC_SCOPE_BEGIN && ev.rec->aux == GMT_OP_AllReduce && n < 64) {
            const struct gmt_rec_scope_begin *b = (const void *)ev.rec;
            ids[n] = b->scope_id;
            tids[n] = ev.tid;
            t_of[n++] = ev.time_ns;
        } else if (ev.rec->type == GMT_REC_SCOPE_END && ev.rec->aux == GMT_OP_AllReduce) {
            const struct gmt_rec_scope_end *e = (const void *)ev.rec;
            for (int i = 0; i < n; i++)
                if (ids[i] == e->scope_id && tids[i] == ev.tid)
                    ids[i] = 0;
        }
    }
    cr_assert_eq(rc, 0, "%s", err);
    gmt_reader_close(rd);
    free(buf);
    for (int i = 0; i < n; i++)
        if (ids[i]) {
            open_n++;
            open_id = ids[i];
            open_tid = tids[i];
            open_t = t_of[i];
        }
    cr_expect_eq(n, 9, "%s, %s: AllReduce begins: %d (4 per rank and the hung one)", how, compact, n);
    cr_expect_eq(open_n, 1, "%s, %s: AllReduce calls open at the end: %d", how, compact, open_n);
    cr_expect_neq(open_id, 0);
    cr_expect_neq(open_tid, 0);
    cr_expect(open_t > 0 && open_t <= last_t, "%s, %s: the open call's time %llu, the last %llu",
              how, compact, (unsigned long long)open_t, (unsigned long long)last_t);
}
static void expect_hang_shows(const char *how, int dies_of, const char *compact)
{
    expect_hang_shows_after(how, dies_of, compact, "400", NULL);
}

/* Exit at once, and a flusher that never ticks: only the exit path can note the call
 * the other thread is in. */
Test(nccl_hooks, an_exit_while_a_call_hangs_shows_the_call_open_with_no_flush)
{
    expect_hang_shows_after("exit", 0, "GPUMEMTRACE_NCCL_COMPACT=1", "0", "GPUMEMTRACE_FLUSH_MS=60000");
}

Test(nccl_hooks, a_hang_in_a_call_shows_the_call_open, .timeout = 120)
{
    const char *modes[] = {"GPUMEMTRACE_NCCL_COMPACT=1", "GPUMEMTRACE_NCCL_COMPACT=0"};
    for (int m = 0; m < 2; m++) {
        expect_hang_shows("kill", SIGKILL, modes[m]);
        expect_hang_shows("crash", SIGSEGV, modes[m]);
        expect_hang_shows("exit", 0, modes[m]);
    }
}

/* A program that crashes inside a group repeating its last one: the members it called
 * are in the trace (the crash handler writes them), as they are when written one by one. */
Test(nccl_hooks, a_crash_inside_a_repeated_group_keeps_its_members)
{
    const char *args[] = {"crash_in_group", NULL};
    const char *envs[] = {"GPUMEMTRACE_MEMINFO=never", NULL};
    struct run r = {.dies_of = SIGSEGV};
    run_prog(&r, true, args, envs);
    cr_expect_geq(count_records(r.trace, GMT_REC_GROUP_REPEAT), 1, "the loop repeated");
    struct gmt_reader *rd;
    uint8_t *buf = NULL;
    char err[256];
    open_expanded(&rd, r.trace, &buf);
    struct gmt_event ev;
    uint32_t group = 0;
    int members = 0, rc;
    while ((rc = gmt_reader_next(rd, &ev, err, sizeof err)) > 0) {
        if (ev.rec->type != GMT_REC_SCOPE_BEGIN)
            continue;
        const struct gmt_rec_scope_begin *b = (const void *)ev.rec;
        if (ev.rec->aux == GMT_OP_Group) {
            group = b->scope_id; /* the last one is the one the crash left open */
            members = 0;
        } else if (b->parent_id == group && ev.rec->aux == GMT_OP_AllReduce) {
            members++;
        }
    }
    cr_assert_eq(rc, 0, "%s", err);
    cr_expect_eq(members, 2, "the open group's members: %d", members);
    gmt_reader_close(rd);
    free(buf);
}

/* The CLI's host time per call leaves out the members it has no time for: each
 * communicator's all_reduce row has its 3 calls, of which only the first was timed. */
Test(nccl_hooks, host_time_counts_only_the_timed_calls)
{
    const char *args[] = {"rotate", "3", "2", NULL};
    const char *envs[] = {"GPUMEMTRACE_MEMINFO=never", NULL};
    struct run r = {0};
    run_prog(&r, true, args, envs);
    struct gmt_trace t;
    char err[256];
    cr_assert_eq(gmt_trace_load(&t, r.trace, err, sizeof err), 0, "%s", err);
    struct gmt_replay_opts o = {.device = -1};
    struct gmt_report rep;
    cr_assert_eq(gmt_replay(&t, &o, &rep), 0);
    int rows = 0;
    for (size_t i = 0; i < rep.n_colls; i++) {
        const struct gmt_coll_row *c = &rep.colls[i];
        if (c->op != GMT_OP_AllReduce)
            continue;
        rows++;
        cr_expect_eq(c->calls, 3);
        cr_expect_eq(c->host_calls, 1, "row %zu: %llu timed calls", i,
                     (unsigned long long)c->host_calls);
        cr_expect_eq(c->host_ns_total, c->host_ns_first, "only the first call has a time");
    }
    cr_expect_eq(rows, 4, "one row per communicator");
    gmt_report_free(&rep);
    gmt_trace_free(&t);
}

Test(nccl_hooks, meminfo_bad_value_warns_and_uses_the_default)
{
    cr_expect_eq(sampled_allreduces("sometimes", "3"), 4);
}

/* ---------------------------------------------------------------- scope.c in-process */

/* A trace of our own in this process (no CUDA, no NCCL here: devices are given). */
static const char *open_own_trace(void)
{
    static char path[64];
    strcpy(path, "/tmp/gmt-scope-XXXXXX");
    cr_assert_not_null(mkdtemp(path));
    strcat(path, "/t.gmt");
    setenv("GPUMEMTRACE_OUTPUT", path, 1);
    setenv("GPUMEMTRACE_MEMINFO", "never", 1);
    gmt_options_load();
    cr_assert(gmt_writer_ready());
    return path;
}

struct opener {
    int device;
    uint32_t scope;
    pthread_barrier_t *opened, *done;
};

/* Another thread opens a scope on `device` and keeps it open until told. */
static void *open_and_wait(void *arg)
{
    struct opener *o = arg;
    o->scope = gmt_scope_begin(GMT_OP_AllReduce, 0, 8, ncclFloat32, -1, 0);
    gmt_scope_add_device(o->scope, o->device, 1);
    pthread_barrier_wait(o->opened);
    pthread_barrier_wait(o->done);
    gmt_scope_end(o->scope, GMT_OP_AllReduce, 0);
    return NULL;
}

Test(scope, foreign_thread_attribution_needs_exactly_one_thread_per_device)
{
    open_own_trace();
    cr_expect_eq(gmt_scope_for_foreign_thread(0), 0);
    pthread_barrier_t opened, done;
    pthread_barrier_init(&opened, NULL, 3);
    pthread_barrier_init(&done, NULL, 3);
    struct opener a = {0, 0, &opened, &done}, b = {1, 0, &opened, &done};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, open_and_wait, &a);
    pthread_create(&tb, NULL, open_and_wait, &b);
    pthread_barrier_wait(&opened);
    cr_expect_eq(gmt_scope_for_foreign_thread(0), a.scope);
    cr_expect_eq(gmt_scope_for_foreign_thread(1), b.scope);
    cr_expect_eq(gmt_scope_for_foreign_thread(2), 0);
    cr_expect_eq(gmt_scope_for_foreign_thread(-1), 0, "two threads: ambiguous");
    /* A second thread on device 0 makes device 0 ambiguous too. */
    uint32_t mine = gmt_scope_begin(GMT_OP_AllGather, 0, 8, ncclFloat32, -1, 0);
    gmt_scope_add_device(mine, 0, 2);
    cr_expect_eq(gmt_scope_for_foreign_thread(0), 0);
    gmt_scope_end(mine, GMT_OP_AllGather, 0);
    cr_expect_eq(gmt_scope_for_foreign_thread(0), a.scope);
    pthread_barrier_wait(&done);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    cr_expect_eq(gmt_scope_for_foreign_thread(0), 0, "closed scopes are unpublished");
    cr_expect_eq(gmt_scope_for_foreign_thread(-1), 0);
}

Test(scope, group_is_published_for_its_members_devices_until_it_ends)
{
    open_own_trace();
    uint32_t g = gmt_scope_begin(GMT_OP_Group, 0, 0, -1, -1, 0);
    cr_expect_eq(gmt_current_scope(), g);
    uint32_t c0 = gmt_scope_begin(GMT_OP_AllReduce, 0, 8, ncclFloat32, -1, 0);
    gmt_scope_add_device(c0, 0, 1);
    /* Inside a user group NCCL does a member's work in ncclGroupEnd: while
     * the member's own call runs, the group is what is published on its device. */
    cr_expect_eq(gmt_current_scope(), c0);
    cr_expect_eq(gmt_scope_for_foreign_thread(0), g, "the group, not its enqueuing member");
    cr_expect_eq(gmt_scope_for_foreign_thread(1), 0, "no member on device 1 yet");
    gmt_scope_end(c0, GMT_OP_AllReduce, 0);
    uint32_t c1 = gmt_scope_begin(GMT_OP_AllReduce, 0, 8, ncclFloat32, -1, 0);
    gmt_scope_add_device(c1, 1, 1);
    gmt_scope_end(c1, GMT_OP_AllReduce, 0);
    /* ncclGroupEnd runs with only the group open: both devices point at it. */
    cr_expect_eq(gmt_current_scope(), g);
    cr_expect_eq(gmt_scope_for_foreign_thread(0), g);
    cr_expect_eq(gmt_scope_for_foreign_thread(1), g);
    cr_expect_eq(gmt_scope_for_foreign_thread(-1), g, "one thread: unambiguous");
    gmt_scope_end(g, GMT_OP_Group, 0);
    cr_expect_eq(gmt_current_scope(), 0);
    cr_expect_eq(gmt_scope_for_foreign_thread(0), 0);
    cr_expect_eq(gmt_scope_for_foreign_thread(1), 0);
}

/* An outer frame that comes to concern a device after an inner frame was published
 * there (a member's group registered late, as gmt_scope_member_pre can) leaves the inner
 * one published: an allocation there is the innermost call's. When the inner one ends,
 * the device falls back to the outer. */
Test(scope, an_outer_frame_registered_later_does_not_hide_the_inner_one)
{
    open_own_trace();
    uint32_t outer = gmt_scope_begin(GMT_OP_AllReduce, 0, 8, ncclFloat32, -1, 0);
    uint32_t inner = gmt_scope_begin(GMT_OP_AllGather, 0, 8, ncclFloat32, -1, 0);
    gmt_scope_add_device(inner, 0, 1);
    cr_assert_eq(gmt_scope_for_foreign_thread(0), inner);
    gmt_claims_register(0, 0);
    cr_expect_eq(gmt_scope_for_foreign_thread(0), inner, "the outer scope %u hid the inner %u",
                 gmt_scope_for_foreign_thread(0), inner);
    gmt_scope_end(inner, GMT_OP_AllGather, 0);
    cr_expect_eq(gmt_scope_for_foreign_thread(0), outer, "the outer one once the inner ended");
    gmt_scope_end(outer, GMT_OP_AllReduce, 0);
    cr_expect_eq(gmt_scope_for_foreign_thread(0), 0);
}

Test(scope, nesting_past_the_cap_is_counted_not_fatal)
{
    open_own_trace();
    uint32_t ids[40];
    for (int i = 0; i < 40; i++)
        ids[i] = gmt_scope_begin(GMT_OP_Group, 0, 0, -1, -1, 0);
    cr_expect_eq(gmt_ts.scope.depth, 40);
    cr_expect_eq(gmt_current_scope(), ids[31], "the deepest tracked scope");
    for (int i = 39; i >= 0; i--)
        gmt_scope_end(ids[i], GMT_OP_Group, 0);
    cr_expect_eq(gmt_ts.scope.depth, 0);
    cr_expect_eq(gmt_current_scope(), 0);
    for (int i = 1; i < 40; i++)
        cr_expect_gt(ids[i], ids[i - 1], "scope ids increase");
}

Test(scope, a_scope_left_open_is_closed_with_its_parent)
{
    open_own_trace();
    uint32_t g = gmt_scope_begin(GMT_OP_Group, 0, 0, -1, -1, 0);
    uint32_t inner = gmt_scope_begin(GMT_OP_Group, 0, 0, -1, -1, 0);
    cr_expect_eq(gmt_current_scope(), inner);
    gmt_scope_end(g, GMT_OP_Group, 3);
    cr_expect_eq(gmt_ts.scope.depth, 0);
    cr_expect_eq(gmt_current_scope(), 0);
}

/* ---- a loop's calls on communicators whose device the COMM cache knows ---- */

/* Each device's published scope, 0 none, for devices 0..2. */
static void expect_published(uint32_t on0, uint32_t on1, uint32_t on2, int call)
{
    cr_expect_eq(gmt_scope_for_foreign_thread(0), on0, "call %d: device 0", call);
    cr_expect_eq(gmt_scope_for_foreign_thread(1), on1, "call %d: device 1", call);
    cr_expect_eq(gmt_scope_for_foreign_thread(2), on2, "call %d: device 2", call);
}

Test(scope, a_loop_call_publishes_the_device_its_communicator_is_on_now)
{
    open_own_trace();
    const uint64_t a = 0xa000, b = 0xb000, c = 0xc000;
    gmt_scope_comm_cache_put(a, 0);
    gmt_scope_comm_cache_put(b, 1);
    gmt_scope_comm_cache_put(c, 2);
    /* The thread moves between devices (its one idle claim is re-labelled each time) and
     * between communicators (the memo the last call found is another one's). */
    static const int order[] = {0, 0, 1, 1, 0, 2, 0, 1, 2, 2, 1, 0, 0, 2, 1, 0};
    uint32_t prev = 0;
    for (int i = 0; i < (int)(sizeof order / sizeof order[0]); i++) {
        int dev = order[i];
        uint64_t comm = dev == 0 ? a : dev == 1 ? b : c;
        uint32_t id = gmt_scope_begin(GMT_OP_AllReduce, comm, 8, ncclFloat32, -1, 0);
        cr_assert_gt(id, prev, "call %d: a scope of its own", i);
        cr_expect_eq(gmt_current_scope(), id);
        expect_published(dev == 0 ? id : 0, dev == 1 ? id : 0, dev == 2 ? id : 0, i);
        gmt_scope_end(id, GMT_OP_AllReduce, 0);
        cr_expect_eq(gmt_ts.scope.depth, 0);
        expect_published(0, 0, 0, i);
        prev = id;
    }
    /* A new communicator at a's address, on device 2: the memo of the old one is out of
     * date, and the next call on that address is published on device 2. */
    gmt_scope_comm_cache_put(a, 2);
    uint32_t id = gmt_scope_begin(GMT_OP_AllReduce, a, 8, ncclFloat32, -1, 0);
    expect_published(0, 0, id, 100);
    gmt_scope_end(id, GMT_OP_AllReduce, 0);
    expect_published(0, 0, 0, 101);
    /* Inside another scope a call goes the general way, and falls back to it at its end. */
    uint32_t outer = gmt_scope_begin(GMT_OP_AllGather, b, 8, ncclFloat32, -1, 0);
    id = gmt_scope_begin(GMT_OP_AllReduce, b, 8, ncclFloat32, -1, 0);
    expect_published(0, id, 0, 102);
    gmt_scope_end(id, GMT_OP_AllReduce, 0);
    expect_published(0, outer, 0, 103);
    gmt_scope_end(outer, GMT_OP_AllGather, 0);
    expect_published(0, 0, 0, 104);
}

/* A signal handler's NCCL call, on another communicator, in the middle of the thread's. */
static volatile sig_atomic_t handler_calls, handler_bad;
static void nccl_call_in_handler(int sig)
{
    (void)sig;
    int depth = gmt_ts.scope.depth;
    uint32_t id = gmt_scope_begin(GMT_OP_Broadcast, 0xd000, 4, ncclFloat32, 0, 0);
    if (id && gmt_scope_for_foreign_thread(3) != id)
        handler_bad = 1;
    gmt_scope_end(id, GMT_OP_Broadcast, 0);
    if (gmt_ts.scope.depth != depth || gmt_scope_for_foreign_thread(3) != 0)
        handler_bad = 1;
    handler_calls++;
}

/* The scopes of `path` (expanded) nest on each thread: every SCOPE_END closes the
 * innermost open scope, and none is left open. `n_op` gets the number of scopes of each
 * op; the return is END's count of records dropped. */
static uint64_t expect_scopes_nest(const char *path, int n_op[GMT_OP_MAX])
{
    uint64_t dropped = UINT64_MAX;
    struct gmt_reader *rd;
    uint8_t *buf = NULL;
    char err[256];
    open_expanded(&rd, path, &buf);
    enum { DEPTH = 16 };
    struct { uint32_t tid; int depth; uint32_t open[DEPTH]; } th[8] = {{0}};
    int nth = 0, bad = 0, rc;
    struct gmt_event ev;
    while ((rc = gmt_reader_next(rd, &ev, err, sizeof err)) > 0) {
        if (ev.rec->type == GMT_REC_END)
            dropped = ((const struct gmt_rec_end *)(const void *)ev.rec)->records_dropped;
        if (ev.rec->type != GMT_REC_SCOPE_BEGIN && ev.rec->type != GMT_REC_SCOPE_END)
            continue;
        int k = 0;
        while (k < nth && th[k].tid != ev.tid)
            k++;
        if (k == nth) {
            cr_assert_lt(nth, 8);
            th[nth++].tid = ev.tid;
        }
        if (ev.rec->type == GMT_REC_SCOPE_BEGIN) {
            const struct gmt_rec_scope_begin *b = (const void *)ev.rec;
            cr_assert_lt(th[k].depth, DEPTH, "scopes nest deeper than a handler's");
            th[k].open[th[k].depth++] = b->scope_id;
            if (ev.rec->aux < GMT_OP_MAX)
                n_op[ev.rec->aux]++;
        } else {
            const struct gmt_rec_scope_end *e = (const void *)ev.rec;
            if (th[k].depth == 0 || th[k].open[th[k].depth - 1] != e->scope_id)
                bad++;
            else
                th[k].depth--;
        }
    }
    cr_assert_eq(rc, 0, "%s", err);
    gmt_reader_close(rd);
    free(buf);
    cr_expect_eq(bad, 0, "%d SCOPE_ENDs that close no innermost open scope", bad);
    for (int k = 0; k < nth; k++)
        cr_expect_eq(th[k].depth, 0, "thread %u left %d scopes open", th[k].tid, th[k].depth);
    cr_expect_neq(dropped, UINT64_MAX, "no END");
    return dropped;
}

Test(scope, a_signal_handlers_call_in_the_middle_of_a_loop_call_leaves_it_intact)
{
    const char *path = open_own_trace();
    gmt_scope_comm_cache_put(0xa000, 0);
    gmt_scope_comm_cache_put(0xd000, 3);
    /* Both calls' first ones (their stacks captured) before any signal: stack.c's one-time
     * setup is not for a handler that interrupts it. */
    gmt_scope_end(gmt_scope_begin(GMT_OP_AllReduce, 0xa000, 8, ncclFloat32, -1, 0),
                  GMT_OP_AllReduce, 0);
    nccl_call_in_handler(0);
    handler_calls = 0;
    struct sigaction sa = {.sa_handler = nccl_call_in_handler};
    sigemptyset(&sa.sa_mask);
    cr_assert_eq(sigaction(SIGALRM, &sa, NULL), 0);
    struct itimerval every = {{0, 20}, {0, 20}}, off = {{0, 0}, {0, 0}};
    cr_assert_eq(setitimer(ITIMER_REAL, &every, NULL), 0);
    int bad = 0, loops = 0;
    for (int i = 0; i < 200000 && (handler_calls < 200 || i < 1000); i++, loops++) {
        uint32_t id = gmt_scope_begin(GMT_OP_AllReduce, 0xa000, 8, ncclFloat32, -1, 0);
        if (gmt_current_scope() != id || gmt_ts.scope.depth != 1 ||
            gmt_scope_for_foreign_thread(0) != id)
            bad++;
        gmt_scope_end(id, GMT_OP_AllReduce, 0);
        if (gmt_ts.scope.depth != 0 || gmt_scope_for_foreign_thread(0) != 0)
            bad++;
    }
    setitimer(ITIMER_REAL, &off, NULL);
    signal(SIGALRM, SIG_DFL);
    cr_expect_gt(handler_calls, 0, "the handler ran");
    cr_expect_eq(bad, 0, "calls whose scope was not the thread's or not published");
    cr_expect_eq(handler_bad, 0, "handler calls whose scope was not published");
    /* In the file: each loop call is one scope whatever the handler did inside it (its
     * records write the held begin first, or go before it), the handler's nest. */
    int calls = loops + 1;
    gmt_writer_finish();
    int n_op[GMT_OP_MAX] = {0};
    uint64_t dropped = expect_scopes_nest(path, n_op);
    cr_expect_eq(n_op[GMT_OP_AllReduce], calls, "AllReduce scopes: %d of %d", n_op[GMT_OP_AllReduce],
                 calls);
    /* a handler that lands inside one of the thread's emits loses both its records */
    cr_expect_eq(n_op[GMT_OP_Broadcast] + (int)(dropped / 2), handler_calls + 1,
                 "the handler's: %d, and %d dropped, of %d", n_op[GMT_OP_Broadcast],
                 (int)(dropped / 2), (int)handler_calls + 1);
    cr_expect_eq(dropped % 2, 0, "%d records dropped: only handler calls, two records each",
                 (int)dropped);
    /* and each call's fields are its own: a call form leaves out the fields of the
     * previous one in the file, so a handler's call form written between a loop call's
     * fields and its record would lend that call its communicator */
    struct gmt_reader *rd;
    uint8_t *buf = NULL;
    char err[256];
    struct gmt_event ev;
    int wrong = 0, rc;
    open_expanded(&rd, path, &buf);
    while ((rc = gmt_reader_next(rd, &ev, err, sizeof err)) > 0) {
        if (ev.rec->type != GMT_REC_SCOPE_BEGIN)
            continue;
        const struct gmt_rec_scope_begin *b = (const void *)ev.rec;
        wrong += (b->h.aux == GMT_OP_AllReduce && b->comm != 0xa000) ||
                 (b->h.aux == GMT_OP_Broadcast && b->comm != 0xd000);
    }
    cr_expect_eq(rc, 0, "%s", err);
    gmt_reader_close(rd);
    free(buf);
    cr_expect_eq(wrong, 0, "%d calls with another call's communicator", wrong);
}

/* A loop call that stays in progress gets a SCOPE_OPEN from the flusher (on its own
 * thread, naming this one) within a few ticks, timed or not, and reads back as one
 * scope: the SCOPE_OPEN restores nothing once the call form is in the file. */
static void held_call_noted(bool timed)
{
    const char *path = open_own_trace();
    gmt_scope_comm_cache_put(0xa000, 0);
    /* calls until the thread's next draw is the one wanted (after 3: the fast path's) */
    for (int i = 0;; i++) {
        uint32_t next = gmt_ts.call.rng;
        if (i >= 3 && gmt_call_timed(&next) == timed)
            break;
        gmt_scope_end(gmt_scope_begin(GMT_OP_AllReduce, 0xa000, 8, ncclFloat32, -1, 0),
                      GMT_OP_AllReduce, 0);
    }
    uint32_t id = gmt_scope_begin(GMT_OP_AllReduce, 0xa000, 8, ncclFloat32, -1, 0);
    cr_assert_eq(gmt_ts.writer.deferred, GMT_DEFER_CALL, "the call is held");
    cr_assert_eq(atomic_load(&gmt_writer_slot()->word[1]) != 0, timed, "word 1: the begin's time");
    struct timespec ts = {0, 400 * 1000 * 1000}; /* 8 ticks of the default flush_ms */
    nanosleep(&ts, NULL);
    gmt_scope_end(id, GMT_OP_AllReduce, 0);
    uint32_t me = (uint32_t)syscall(SYS_gettid);
    gmt_writer_finish();

    struct gmt_reader *rd;
    char err[256];
    cr_assert_eq(gmt_reader_open(&rd, path, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    int opens = 0, rc;
    uint64_t end_t = 0, open_t = 0;
    while ((rc = gmt_reader_next(rd, &ev, err, sizeof err)) > 0) {
        if (ev.rec->type == GMT_REC_SCOPE_OPEN) {
            const struct gmt_rec_scope_open *o = (const void *)ev.rec;
            cr_expect_eq(o->scope_id, id);
            cr_expect_eq(o->tid, me, "it names the thread in the call");
            cr_expect_neq(ev.tid, me, "written by another thread");
            cr_expect(o->comm == 0xa000 && o->count == 8 && o->datatype == ncclFloat32);
            open_t = o->time_ns;
            opens++;
        } else if (ev.rec->type == GMT_REC_SCOPE_END && ev.tid == me &&
                   ((const struct gmt_rec_scope_end *)(const void *)ev.rec)->scope_id == id) {
            cr_expect_geq(ev.rec->size, GMT_SCOPE_CALL_MIN, "the return wrote the call form");
            const struct gmt_rec_scope_call *cf = (const void *)ev.rec;
            cr_expect_eq(cf->weight, timed ? GMT_CALL_TIMED_EVERY : 0u, "weight %u", cf->weight);
            cr_expect_eq(cf->e.duration != 0, timed, "duration %u", cf->e.duration);
            end_t = ev.time_ns;
        }
    }
    cr_assert_eq(rc, 0, "%s", err);
    gmt_reader_close(rd);
    cr_expect_eq(opens, 1, "%s call: %d SCOPE_OPENs", timed ? "timed" : "untimed", opens);
    cr_expect(open_t && end_t && open_t < end_t && end_t - open_t >= 200 * 1000 * 1000,
              "the SCOPE_OPEN's time %llu, the end %llu", (unsigned long long)open_t,
              (unsigned long long)end_t);
    int n_op[GMT_OP_MAX] = {0};
    expect_scopes_nest(path, n_op);
    cr_expect_eq(n_op[GMT_OP_AllReduce], (int)id, "one scope per call (ids from 1)");
}
Test(scope, a_held_call_in_progress_is_noted_by_the_flusher_timed) { held_call_noted(true); }
Test(scope, a_held_call_in_progress_is_noted_by_the_flusher_untimed) { held_call_noted(false); }

/* Another record of the thread while a loop call is held (an allocation NCCL makes in the
 * call, say) goes through the writer's deferred hook: the held begin is written first, as
 * a SCOPE_BEGIN, and the return writes a plain SCOPE_END after that record. */
Test(scope, a_record_inside_a_held_call_writes_its_begin_first)
{
    const char *path = open_own_trace();
    gmt_scope_comm_cache_put(0xa000, 0);
    for (int i = 0; i < 3; i++) /* past the first call: the next one is held */
        gmt_scope_end(gmt_scope_begin(GMT_OP_AllReduce, 0xa000, 8, ncclFloat32, -1, 0),
                      GMT_OP_AllReduce, 0);
    uint32_t id = gmt_scope_begin(GMT_OP_AllReduce, 0xa000, 8, ncclFloat32, -1, 0);
    cr_assert_eq(gmt_ts.writer.deferred, GMT_DEFER_CALL, "the call is held");
    struct gmt_rec_cuctx c = {.h = {GMT_REC_CUCTX, 0, sizeof c}, .context = 0xc0de, .device = 0};
    gmt_emit(&c, 0);
    cr_expect_eq(gmt_ts.writer.deferred, GMT_DEFER_OFF, "the record spilled the held begin");
    gmt_scope_end(id, GMT_OP_AllReduce, 0);
    gmt_writer_finish();

    struct gmt_reader *rd;
    char err[256];
    cr_assert_eq(gmt_reader_open(&rd, path, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    int rc, i = 0, at_begin = -1, at_ctx = -1, at_end = -1;
    while ((rc = gmt_reader_next(rd, &ev, err, sizeof err)) > 0) {
        const struct gmt_rec_scope_begin *b = (const void *)ev.rec;
        const struct gmt_rec_scope_end *e = (const void *)ev.rec;
        if (ev.rec->type == GMT_REC_SCOPE_BEGIN && b->scope_id == id)
            at_begin = i;
        else if (ev.rec->type == GMT_REC_CUCTX &&
                 ((const struct gmt_rec_cuctx *)(const void *)ev.rec)->context == 0xc0de)
            at_ctx = i;
        else if (ev.rec->type == GMT_REC_SCOPE_END && e->scope_id == id) {
            at_end = i;
            cr_expect_lt(ev.rec->size, GMT_SCOPE_CALL_MIN, "a plain SCOPE_END");
        }
        i++;
    }
    cr_assert_eq(rc, 0, "%s", err);
    gmt_reader_close(rd);
    cr_expect(at_begin >= 0 && at_begin < at_ctx && at_ctx < at_end,
              "begin at %d, the record at %d, end at %d", at_begin, at_ctx, at_end);
}

Test(scope, a_fork_child_publishes_only_its_own_scopes)
{
    open_own_trace();
    gmt_scope_comm_cache_put(0xa000, 0);
    for (int i = 0; i < 3; i++) /* the memo, the claim and the hint are warm */
        gmt_scope_end(gmt_scope_begin(GMT_OP_AllReduce, 0xa000, 8, ncclFloat32, -1, 0),
                      GMT_OP_AllReduce, 0);
    uint32_t open = gmt_scope_begin(GMT_OP_AllReduce, 0xa000, 8, ncclFloat32, -1, 0);
    cr_assert_eq(gmt_scope_for_foreign_thread(0), open);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fails = 0;
        fails += gmt_ts.scope.depth != 0;
        fails += gmt_scope_for_foreign_thread(0) != 0; /* the parent's scope is not ours */
        uint32_t id = gmt_scope_begin(GMT_OP_AllReduce, 0xa000, 8, ncclFloat32, -1, 0);
        fails += gmt_scope_for_foreign_thread(0) != id;
        fails += gmt_current_scope() != id;
        gmt_scope_end(id, GMT_OP_AllReduce, 0);
        fails += gmt_scope_for_foreign_thread(0) != 0;
        _exit(fails);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: status 0x%x", status);
    cr_expect_eq(gmt_scope_for_foreign_thread(0), open, "the parent's scope still open");
    gmt_scope_end(open, GMT_OP_AllReduce, 0);
    cr_expect_eq(gmt_scope_for_foreign_thread(0), 0);
}
