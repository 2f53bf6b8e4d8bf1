/* test_nvtx.c: the NVTX injection protocol, driven by a fake NVTX client that follows NVTX v3's documented export-table ABI, and the records it leaves in the trace. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <wchar.h>

#include "gmt.h"
#include "reader.h"
#include "writer_api.h"

/*
 * The client: what one NVTX copy (an object built with the NVTX headers) hands its
 * injection library. Module tables are arrays of pointers to the copy's function slots,
 * entry 0 unused; each slot starts as a stub that is not ours (NVTX's *_impl_init).
 * Slot numbers and signatures are NVTX v3's (CORE = module 1, CORE2 = module 5).
 */
typedef void (*fn)(void);
#define SLOTS 16
struct client {
    fn core[SLOTS], core2[SLOTS];
    fn *core_tab[SLOTS + 1], *core2_tab[SLOTS + 1];
    bool no_core2, module_fails;
};
static struct client A, B;
static struct client *cur;

static void stub(void)
{
}

static int get_module(int module, fn ***out, unsigned *size)
{
    if (cur->module_fails)
        return 0;
    if (module == 1) {
        *out = cur->core_tab;
        *size = SLOTS;
        return 1;
    }
    if (module == 5 && !cur->no_core2) {
        *out = cur->core2_tab;
        *size = SLOTS;
        return 1;
    }
    return 0;
}

static struct {
    size_t struct_size;
    int (*get_module)(int, fn ***, unsigned *);
} callbacks = {16, get_module}, short_callbacks = {8, get_module};

static const void *get_table(uint32_t id)
{
    return id == 1 ? (const void *)&callbacks : NULL;
}
static const void *get_nothing(uint32_t id)
{
    return NULL;
}
static const void *get_short(uint32_t id)
{
    return id == 1 ? (const void *)&short_callbacks : NULL;
}

static void client_reset(struct client *c)
{
    memset(c, 0, sizeof *c);
    for (int i = 1; i < SLOTS; i++) {
        c->core[i] = c->core2[i] = stub;
        c->core_tab[i] = &c->core[i];
        c->core2_tab[i] = &c->core2[i];
    }
}

static int init(struct client *c, const void *(*get)(uint32_t))
{
    cur = c;
    return InitializeInjectionNvtx2(get);
}

/* nvtxEventAttributes_t v2, as its ABI lays it out (48 bytes) */
struct attr {
    uint16_t version, size;
    uint32_t category;
    int32_t color_type;
    uint32_t color;
    int32_t payload_type, reserved0;
    uint64_t payload;
    int32_t message_type, pad;
    const void *message;
};
_Static_assert(sizeof(struct attr) == 48 && offsetof(struct attr, message_type) == 32 &&
                   offsetof(struct attr, message) == 40, "the v2 layout");
static struct attr msg(int type, const void *m)
{
    return (struct attr){.version = 3, .size = 48, .message_type = type, .message = m};
}

/* the calls, through the client's slots as NVTX's own functions make them */
#define PUSH_A(c, s) ((int (*)(const char *))(c)->core[9])(s)
#define PUSH_W(c, s) ((int (*)(const wchar_t *))(c)->core[10])(s)
#define POP(c) ((int (*)(void))(c)->core[11])()
#define START_A(c, s) ((uint64_t (*)(const char *))(c)->core[5])(s)
#define END(c, id) ((void (*)(uint64_t))(c)->core[7])(id)
#define MARK_A(c, s) ((void (*)(const char *))(c)->core[2])(s)
#define D_CREATE(c, s) ((const void *(*)(const char *))(c)->core2[12])(s)
#define D_REGISTER(c, d, s) ((const void *(*)(const void *, const char *))(c)->core2[10])(d, s)
#define D_PUSH(c, d, a) ((int (*)(const void *, const struct attr *))(c)->core2[4])(d, a)
#define D_POP(c, d) ((int (*)(const void *))(c)->core2[5])(d)
#define D_START(c, d, a) ((uint64_t (*)(const void *, const struct attr *))(c)->core2[2])(d, a)
#define D_END(c, d, id) ((void (*)(const void *, uint64_t))(c)->core2[3])(d, id)

static char dir[64], path[256];

static void setup(void)
{
    strcpy(dir, "/tmp/gmt-nvtx-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.gmt", dir);
    unsetenv("GPUMEMTRACE_NVTX");
    unsetenv("GPUMEMTRACE_OFF");
    setenv("GPUMEMTRACE_OUTPUT", path, 1);
    gmt_options_load();
    client_reset(&A);
    client_reset(&B);
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_expect_eq(system(cmd), 0);
}

TestSuite(nvtx, .init = setup, .fini = teardown, .timeout = 60);

/* The NVTX records of a trace file, in file order. */
struct seen {
    struct {
        unsigned kind;
        uint32_t id;
        char s[64];
    } str[64];
    size_t n_str;
    struct gmt_rec_nvtx_range_ext rng[64]; /* range_id 0 where the record has none */
    size_t n_rng;
};

/* tid: the thread every range must be in (0: any). */
static void read_trace(const char *file, uint32_t tid, struct seen *s)
{
    memset(s, 0, sizeof *s);
    struct gmt_reader *r;
    char err[256];
    cr_assert_eq(gmt_reader_open(&r, file, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    int rc;
    while ((rc = gmt_reader_next(r, &ev, err, sizeof err)) > 0) {
        if (ev.rec->type == GMT_REC_NVTX_STRING && s->n_str < 64) {
            const struct gmt_rec_nvtx_string *x = (const void *)ev.rec;
            s->str[s->n_str].kind = x->h.aux;
            s->str[s->n_str].id = x->id;
            snprintf(s->str[s->n_str].s, 64, "%s", (const char *)(x + 1));
            s->n_str++;
        } else if (ev.rec->type == GMT_REC_NVTX_RANGE && s->n_rng < 64) {
            size_t n = ev.rec->size < sizeof s->rng[0] ? ev.rec->size : sizeof s->rng[0];
            memcpy(&s->rng[s->n_rng++], ev.rec, n);
            cr_expect(!tid || ev.tid == tid, "a range in its own thread's chunk");
        }
    }
    cr_assert_eq(rc, 0, "%s", err);
    gmt_reader_close(r);
}

/* The id of a string of `kind` (0 when absent), and how many records define it. */
static uint32_t id_of(const struct seen *s, unsigned kind, const char *text, int *count)
{
    uint32_t id = 0;
    *count = 0;
    for (size_t i = 0; i < s->n_str; i++)
        if (s->str[i].kind == kind && !strcmp(s->str[i].s, text)) {
            id = s->str[i].id;
            (*count)++;
        }
    return id;
}

Test(nvtx, patches_its_slots_and_returns_non_zero)
{
    cr_assert_eq(init(&A, get_table), 1);
    for (int i = 1; i <= 11; i++)
        cr_expect_neq(A.core[i], stub, "CORE slot %d hooked", i);
    for (int i = 12; i < SLOTS; i++)
        cr_expect_eq(A.core[i], stub, "CORE slot %d (naming) left alone", i);
    int hooked2[] = {1, 2, 3, 4, 5, 10, 11, 12, 13, 14};
    for (size_t i = 0; i < sizeof hooked2 / sizeof hooked2[0]; i++)
        cr_expect_neq(A.core2[hooked2[i]], stub, "CORE2 slot %d hooked", hooked2[i]);
    cr_expect_eq(A.core2[6], stub, "resources are not ours");
    cr_expect_eq(A.core2[15], stub);
}

Test(nvtx, declines_when_switched_off)
{
    setenv("GPUMEMTRACE_NVTX", "0", 1);
    gmt_options_load();
    cr_expect_eq(init(&A, get_table), 0);
    cr_expect_eq(A.core[9], stub);
    setenv("GPUMEMTRACE_NVTX", "1", 1);
    setenv("GPUMEMTRACE_OFF", "1", 1);
    gmt_options_load();
    cr_expect_eq(init(&A, get_table), 0);
    cr_expect_eq(A.core[9], stub);
    cr_expect_eq(access(path, F_OK), -1, "no trace when declined");
}

Test(nvtx, declines_a_table_it_cannot_use)
{
    cr_expect_eq(init(&A, NULL), 0);
    cr_expect_eq(init(&A, get_nothing), 0);
    cr_expect_eq(init(&A, get_short), 0);
    A.module_fails = true;
    cr_expect_eq(init(&A, get_table), 0);
    cr_expect_eq(A.core[9], stub);
    /* CORE2 is optional: an NVTX copy without domains still gets the default domain */
    client_reset(&A);
    A.no_core2 = true;
    cr_expect_eq(init(&A, get_table), 1);
    cr_expect_neq(A.core[9], stub);
    cr_expect_eq(A.core2[4], stub);
}

Test(nvtx, levels_nest_per_domain_as_nvtx_returns_them)
{
    cr_assert_eq(init(&A, get_table), 1);
    cr_expect_eq(PUSH_A(&A, "outer"), 0);
    cr_expect_eq(PUSH_A(&A, "inner"), 1);
    const void *d = D_CREATE(&A, "mylib");
    cr_assert_not_null(d);
    struct attr x = msg(1, "x");
    cr_expect_eq(D_PUSH(&A, d, &x), 0, "a domain's own nesting");
    cr_expect_eq(D_PUSH(&A, NULL, &x), 2, "NULL is the default domain");
    cr_expect_eq(POP(&A), 2);
    cr_expect_eq(POP(&A), 1, "pops the default domain's innermost, under mylib's");
    cr_expect_eq(D_POP(&A, d), 0);
    cr_expect_eq(POP(&A), 0);
    cr_expect_lt(POP(&A), 0, "nothing open");
    uint64_t s1 = START_A(&A, "s1"), s2 = START_A(&A, "s2");
    cr_expect_neq(s1, 0);
    cr_expect_neq(s1, s2);
}

/* Domains interleave on a thread: a pop of one domain ends that domain's innermost range,
 * even when another domain's range was pushed after it. Its POP names that range. */
Test(nvtx, a_pop_names_its_own_domains_innermost_range)
{
    cr_assert_eq(init(&A, get_table), 1);
    const void *d = D_CREATE(&A, "mylib");
    cr_assert_not_null(d);
    struct attr x = msg(1, "x");
    cr_expect_eq(PUSH_A(&A, "a"), 0);
    cr_expect_eq(D_PUSH(&A, d, &x), 0);
    cr_expect_eq(POP(&A), 0, "the default domain's level");
    cr_expect_eq(D_POP(&A, d), 0, "mylib's range is still open");
    gmt_writer_finish();

    struct seen s;
    read_trace(path, (uint32_t)gettid(), &s);
    int n;
    uint32_t a = id_of(&s, GMT_NVTX_STR_NAME, "a", &n), xn = id_of(&s, GMT_NVTX_STR_NAME, "x", &n);
    uint32_t dom = id_of(&s, GMT_NVTX_STR_DOMAIN, "mylib", &n);
    cr_assert(a && xn && dom && a != xn);
    cr_assert_eq(s.n_rng, 4);
    static const unsigned op[4] = {GMT_NVTX_PUSH, GMT_NVTX_PUSH, GMT_NVTX_POP, GMT_NVTX_POP};
    uint32_t want_dom[4] = {0, dom, 0, dom}, want_name[4] = {a, xn, a, xn};
    for (int k = 0; k < 4; k++) {
        cr_expect_eq(s.rng[k].r.h.aux, op[k], "record %d: op %u", k, s.rng[k].r.h.aux);
        cr_expect_eq(s.rng[k].r.domain, want_dom[k], "record %d: domain %u", k, s.rng[k].r.domain);
        cr_expect_eq(s.rng[k].r.name, want_name[k], "record %d: name %u, want %u (%s)", k,
                     s.rng[k].r.name, want_name[k], want_name[k] == a ? "a" : "x");
    }
}

Test(nvtx, records_each_name_once_and_every_range)
{
    cr_assert_eq(init(&A, get_table), 1);
    const void *d = D_CREATE(&A, "mylib");
    const void *reg = D_REGISTER(&A, d, "registered");
    cr_assert_not_null(reg);
    for (int i = 0; i < 3; i++) {
        PUSH_A(&A, "step");
        struct attr r = msg(3, reg);
        D_PUSH(&A, d, &r);
        PUSH_W(&A, L"wide\u00e9");
        POP(&A);
        D_POP(&A, d);
        POP(&A);
    }
    struct attr a = msg(1, "async");
    uint64_t id = D_START(&A, d, &a);
    D_END(&A, d, id);
    MARK_A(&A, "here");
    gmt_writer_finish();

    struct seen s;
    read_trace(path, (uint32_t)gettid(), &s);
    int n;
    uint32_t step = id_of(&s, GMT_NVTX_STR_NAME, "step", &n);
    cr_expect_eq(n, 1, "\"step\" defined once");
    uint32_t regd = id_of(&s, GMT_NVTX_STR_NAME, "registered", &n);
    cr_expect_eq(n, 1);
    uint32_t wide = id_of(&s, GMT_NVTX_STR_NAME, "wide?", &n);
    cr_expect_eq(n, 1, "a wide name, non-ASCII as '?'");
    uint32_t dom = id_of(&s, GMT_NVTX_STR_DOMAIN, "mylib", &n);
    cr_expect_eq(n, 1);
    uint32_t async = id_of(&s, GMT_NVTX_STR_NAME, "async", &n);
    cr_expect(step && regd && wide && dom && async);
    cr_expect_neq(step, regd);
    cr_assert_eq(s.n_rng, 3 * 6 + 3);
    for (int i = 0; i < 3; i++) {
        const struct gmt_rec_nvtx_range_ext *x = &s.rng[6 * i];
        uint32_t want_dom[6] = {0, dom, 0, 0, dom, 0}, want_name[6] = {step, regd, wide, wide, regd, step};
        unsigned want_op[6] = {GMT_NVTX_PUSH, GMT_NVTX_PUSH, GMT_NVTX_PUSH, GMT_NVTX_POP, GMT_NVTX_POP, GMT_NVTX_POP};
        for (int k = 0; k < 6; k++) {
            const struct gmt_rec_nvtx_range *r = &x[k].r;
            cr_expect_eq(r->h.aux, want_op[k], "step %d record %d op", i, k);
            cr_expect_eq(r->h.size, sizeof *r, "push, pop: no range id");
            cr_expect_eq(r->domain, want_dom[k], "step %d record %d domain", i, k);
            cr_expect_eq(r->name, want_name[k], "step %d record %d name", i, k);
            if (k)
                cr_expect_geq(r->time_ns, x[k - 1].r.time_ns, "time goes forward");
        }
    }
    const struct gmt_rec_nvtx_range_ext *t = &s.rng[18];
    cr_expect_eq(t[0].r.h.aux, GMT_NVTX_START);
    cr_expect_eq(t[0].r.h.size, sizeof t[0]);
    cr_expect_eq(t[0].range_id, id);
    cr_expect_eq(t[0].r.name, async);
    cr_expect_eq(t[1].r.h.aux, GMT_NVTX_END);
    cr_expect_eq(t[1].range_id, id);
    cr_expect_eq(t[1].r.domain, dom);
    cr_expect_eq(t[2].r.h.aux, GMT_NVTX_MARK);
}

Test(nvtx, two_nvtx_copies_share_one_set_of_names)
{
    cr_assert_eq(init(&A, get_table), 1);
    cr_assert_eq(init(&B, get_table), 1, "the entry point runs once per NVTX copy");
    PUSH_A(&A, "shared");
    PUSH_A(&B, "shared");
    cr_expect_eq(POP(&B), 1, "one thread's nesting, whichever copy the call came through");
    POP(&A);
    const void *da = D_CREATE(&A, "lib"), *db = D_CREATE(&B, "lib");
    cr_expect_eq(da, db, "a domain by name is one handle");
    gmt_writer_finish();
    struct seen s;
    read_trace(path, (uint32_t)gettid(), &s);
    int n;
    cr_expect_neq(id_of(&s, GMT_NVTX_STR_NAME, "shared", &n), 0);
    cr_expect_eq(n, 1);
    cr_expect_eq(s.n_rng, 4);
}

Test(nvtx, a_fork_child_defines_the_names_it_uses_in_its_own_file)
{
    char pat[128];
    snprintf(pat, sizeof pat, "%s/t.%%p.gmt", dir);
    setenv("GPUMEMTRACE_OUTPUT", pat, 1);
    gmt_options_load();
    cr_assert_eq(init(&A, get_table), 1);
    const void *d = D_CREATE(&A, "forked");
    PUSH_A(&A, "before");
    POP(&A);
    PUSH_A(&A, "open-at-fork");
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        struct attr a = msg(1, "before");
        int bad = D_PUSH(&A, d, &a) != 0; /* the domain's nesting starts over */
        bad |= D_POP(&A, d) != 0;
        bad |= POP(&A) >= 0;             /* the parent's open range is not the child's */
        gmt_writer_finish();
        _exit(bad);
    }
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "levels in the child");
    POP(&A);
    gmt_writer_finish();
    char child[256];
    snprintf(child, sizeof child, "%s/t.%d.gmt", dir, (int)pid);
    struct seen s;
    read_trace(child, 0, &s);
    int n;
    cr_expect_neq(id_of(&s, GMT_NVTX_STR_NAME, "before", &n), 0, "the name is defined again");
    cr_expect_eq(n, 1);
    cr_expect_neq(id_of(&s, GMT_NVTX_STR_DOMAIN, "forked", &n), 0, "so is the domain");
    cr_expect_eq(n, 1);
}

Test(nvtx, nccls_own_domain_nests_but_writes_nothing)
{
    cr_assert_eq(init(&A, get_table), 1);
    const void *nccl = D_CREATE(&A, "NCCL"), *mine = D_CREATE(&A, "NCCLX");
    struct attr a = msg(1, "AllReduce"), b = msg(1, "mine");
    cr_expect_eq(D_PUSH(&A, nccl, &a), 0);
    cr_expect_eq(D_PUSH(&A, nccl, &a), 1, "its nesting is kept");
    cr_expect_eq(D_PUSH(&A, mine, &b), 0);
    cr_expect_eq(D_POP(&A, mine), 0);
    cr_expect_eq(D_POP(&A, nccl), 1);
    cr_expect_eq(D_POP(&A, nccl), 0);
    uint64_t id = D_START(&A, nccl, &a);
    cr_expect_neq(id, 0);
    D_END(&A, nccl, id);
    gmt_writer_finish();
    struct seen s;
    read_trace(path, (uint32_t)gettid(), &s);
    int n;
    cr_expect_eq(id_of(&s, GMT_NVTX_STR_NAME, "AllReduce", &n), 0, "NCCL's names are not written");
    cr_expect_eq(id_of(&s, GMT_NVTX_STR_DOMAIN, "NCCL", &n), 0);
    uint32_t dm = id_of(&s, GMT_NVTX_STR_DOMAIN, "NCCLX", &n);
    cr_expect_neq(dm, 0, "another domain is recorded");
    cr_assert_eq(s.n_rng, 2, "only the other domain's push and pop");
    cr_expect_eq(s.rng[0].r.domain, dm);
    cr_expect_eq(s.rng[1].r.domain, dm);
}

/* Threads pushing the same names at once: each name is defined once, and every range of
 * every thread names the right one. */
#define MT_THREADS 4
#define MT_NAMES 40
#define MT_ROUNDS 200
static void *mt_worker(void *arg)
{
    (void)arg;
    char name[32];
    for (int r = 0; r < MT_ROUNDS; r++) {
        snprintf(name, sizeof name, "range-%d", r % MT_NAMES);
        if (PUSH_A(&A, name) != 0 || POP(&A) != 0)
            return (void *)1;
    }
    return NULL;
}

Test(nvtx, threads_intern_each_name_once)
{
    cr_assert_eq(init(&A, get_table), 1);
    pthread_t th[MT_THREADS];
    for (int i = 0; i < MT_THREADS; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, mt_worker, NULL), 0);
    for (int i = 0; i < MT_THREADS; i++) {
        void *rv;
        pthread_join(th[i], &rv);
        cr_expect_null(rv, "levels on thread %d", i);
    }
    gmt_writer_finish();
    struct gmt_reader *r;
    char err[256];
    cr_assert_eq(gmt_reader_open(&r, path, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    char names[MT_NAMES * 2 + 1][32] = {{0}};
    int defined = 0;
    uint32_t *ids = calloc(MT_THREADS * MT_ROUNDS * 2, sizeof *ids);
    size_t n = 0;
    while (gmt_reader_next(r, &ev, err, sizeof err) > 0) {
        if (ev.rec->type == GMT_REC_NVTX_STRING) {
            const struct gmt_rec_nvtx_string *x = (const void *)ev.rec;
            cr_assert_leq(x->id, MT_NAMES * 2);
            cr_expect_eq(names[x->id][0], 0, "id %u defined twice", x->id);
            snprintf(names[x->id], 32, "%s", (const char *)(x + 1));
            defined++;
        } else if (ev.rec->type == GMT_REC_NVTX_RANGE && n < MT_THREADS * MT_ROUNDS * 2) {
            ids[n++] = ((const struct gmt_rec_nvtx_range *)(const void *)ev.rec)->name;
        }
    }
    gmt_reader_close(r);
    cr_expect_eq(defined, MT_NAMES);
    cr_expect_eq(n, MT_THREADS * MT_ROUNDS * 2);
    int per_name[MT_NAMES] = {0};
    for (size_t i = 0; i < n; i++) {
        int k = -1;
        cr_assert(ids[i] <= MT_NAMES * 2 && sscanf(names[ids[i]], "range-%d", &k) == 1,
                  "range %zu names id %u", i, ids[i]);
        per_name[k]++;
    }
    for (int k = 0; k < MT_NAMES; k++)
        cr_expect_eq(per_name[k], MT_THREADS * (MT_ROUNDS / MT_NAMES) * 2, "range-%d", k);
    free(ids);
}
