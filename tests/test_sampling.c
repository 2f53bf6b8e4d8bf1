/* test_sampling.c: device samples outside NCCL calls: FIRST, FAIL, PERIODIC and EXIT in the trace of a CUDA program with no NCCL call, with and without (the simulated) NVML. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gmt.h"
#include "reader.h"
#include "sampling.h"
#include "trace_format.h"
#include "writer_api.h"

#define MIB (1ull << 20)
#define CONTEXT_BYTES (300 * MIB) /* what the fake driver charges a context */

struct run {
    int status;                   /* exit status, or 128 + signal */
    char out[8192];               /* stdout */
    char dir[64];
    char traces[4][320];          /* the trace files written, by pid order of readdir */
    int ntraces;
    char stats[320];              /* FAKENVML_STATS prefix */
};

/* Runs sample_prog MODE MS, traced or not, with `nvml` ("nvml", "nvml-old" or NULL: no
 * NVML to be found) and extra "NAME=value" strings. */
static void run(struct run *r, bool traced, const char *nvml, const char *mode, const char *ms,
                const char *const *env)
{
    memset(r, 0, sizeof *r);
    strcpy(r->dir, "/tmp/gmt-sampling-XXXXXX");
    cr_assert_not_null(mkdtemp(r->dir));
    snprintf(r->stats, sizeof r->stats, "%s/nvml-stats", r->dir);
    char outp[128];
    snprintf(outp, sizeof outp, "%s/out.txt", r->dir);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        if (!freopen(outp, "w", stdout))
            _exit(126);
        unsetenv("LD_PRELOAD");
        unsetenv("ASAN_OPTIONS");
        unsetenv("GPUMEMTRACE_SAMPLE_MS");
        unsetenv("GPUMEMTRACE_MEMINFO");
        setenv("FAKECUDA_DEVICES", "2", 1);
        setenv("FAKENVML_STATS", r->stats, 1);
        char lp[256];
        /* an empty directory when no NVML is to be found */
        snprintf(lp, sizeof lp, "%s/%s", nvml ? SAMPLE_FAKES : r->dir, nvml ? nvml : "");
        setenv("LD_LIBRARY_PATH", lp, 1);
        if (traced) {
            char pat[128];
            snprintf(pat, sizeof pat, "%s/t.%%p.gmt", r->dir);
            setenv("GPUMEMTRACE_OUTPUT", pat, 1);
            setenv("LD_PRELOAD", SAMPLE_LIB, 1);
        }
        for (int i = 0; env && env[i]; i++)
            putenv((char *)env[i]);
        execl(SAMPLE_PROG, SAMPLE_PROG, mode, ms, (char *)NULL);
        _exit(127);
    }
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    FILE *f = fopen(outp, "r");
    cr_assert_not_null(f);
    size_t n = fread(r->out, 1, sizeof r->out - 1, f);
    r->out[n] = 0;
    fclose(f);
    DIR *d = opendir(r->dir);
    cr_assert_not_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".gmt") && r->ntraces < 4)
            snprintf(r->traces[r->ntraces++], sizeof r->traces[0], "%s/%s", r->dir, e->d_name);
    closedir(d);
}

static void cleanup(const struct run *r)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", r->dir);
    if (system(cmd)) {
    }
}

/* The same program untraced: its output and status, which the traced run must match. */
static void expect_same_as_untraced(const struct run *traced, const char *nvml, const char *mode,
                                    const char *ms)
{
    struct run plain;
    run(&plain, false, nvml, mode, ms, NULL);
    cr_expect_eq(traced->status, plain.status, "status %d traced, %d untraced", traced->status,
                 plain.status);
    cr_expect_str_eq(traced->out, plain.out, "output differs with the tracer");
    cleanup(&plain);
}

/* ---- the trace, read back */

struct sample {
    unsigned phase, source;
    int device;
    uint64_t free_b, total_b, process_b; /* process_b: GMT_MEMINFO_UNKNOWN when absent */
    bool ext;
    uint32_t tid;
    uint64_t index, time_ns;
};
struct trace {
    struct sample s[512];
    int n;
    uint32_t flusher_tid;      /* the THREAD named gpumemtrace */
    uint32_t fail_tid;         /* the ALLOC_FAIL's thread */
    uint64_t fail_index, end_index, first_alloc_ns, first_free_ns;
    int fails, ends;
    bool forked;
};

static void read_trace(const char *path, struct trace *t)
{
    memset(t, 0, sizeof *t);
    struct gmt_reader *rd = NULL;
    char err[256] = "";
    cr_assert_eq(gmt_reader_open(&rd, path, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    int k;
    while ((k = gmt_reader_next(rd, &ev, err, sizeof err)) == 1) {
        const struct gmt_rec *h = ev.rec;
        if (h->type == GMT_REC_MEMINFO && t->n < (int)(sizeof t->s / sizeof t->s[0])) {
            const struct gmt_rec_meminfo *m = (const void *)h;
            struct sample *s = &t->s[t->n++];
            s->phase = h->aux;
            s->source = m->source;
            s->device = m->device;
            s->free_b = m->free_bytes;
            s->total_b = m->total_bytes;
            s->ext = h->size >= sizeof(struct gmt_rec_meminfo_ext);
            s->process_b = s->ext ? ((const struct gmt_rec_meminfo_ext *)(const void *)h)->process_bytes
                                  : GMT_MEMINFO_UNKNOWN;
            s->tid = ev.tid;
            s->index = ev.index;
            s->time_ns = ev.time_ns;
        } else if (h->type == GMT_REC_THREAD) {
            const struct gmt_rec_thread *th = (const void *)h;
            if (!strncmp(th->name, "gpumemtrace", GMT_THREAD_NAME_LEN))
                t->flusher_tid = th->tid;
        } else if (h->type == GMT_REC_ALLOC_FAIL) {
            t->fails++;
            t->fail_tid = ev.tid;
            t->fail_index = ev.index;
        } else if (h->type == GMT_REC_FREE && !t->first_free_ns) {
            t->first_free_ns = ev.time_ns;
        } else if (h->type == GMT_REC_END) {
            t->ends++;
            t->end_index = ev.index;
        } else if ((h->type == GMT_REC_ALLOC || h->type == GMT_REC_ALLOC_SMALL) && !t->first_alloc_ns) {
            t->first_alloc_ns = ev.time_ns;
        } else if (h->type == GMT_REC_PROCESS) {
            t->forked = ((const struct gmt_rec_process *)(const void *)h)->flags & GMT_PROC_FORKED;
        }
    }
    cr_assert_eq(k, 0, "%s", err);
    gmt_reader_close(rd);
}

static int count(const struct trace *t, unsigned phase, int device)
{
    int n = 0;
    for (int i = 0; i < t->n; i++)
        n += t->s[i].phase == phase && (device < 0 || t->s[i].device == device);
    return n;
}

static const struct sample *find(const struct trace *t, unsigned phase, int device)
{
    for (int i = 0; i < t->n; i++)
        if (t->s[i].phase == phase && t->s[i].device == device)
            return &t->s[i];
    return NULL;
}

/* "name count" from the fake NVML's stats file of the run's (only or first) process */
static long nvml_stat(const struct run *r, const char *name)
{
    DIR *d = opendir(r->dir);
    cr_assert_not_null(d);
    struct dirent *e;
    char path[400] = "";
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "nvml-stats.", 11))
            snprintf(path, sizeof path, "%s/%s", r->dir, e->d_name);
    closedir(d);
    if (!path[0])
        return -1;
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f);
    char key[64];
    unsigned long v;
    long found = -1;
    while (fscanf(f, "%63s %lu", key, &v) == 2)
        if (!strcmp(key, name))
            found = (long)v;
    fclose(f);
    return found;
}

/* ---- tests */

Test(sampling, first_per_device_periodic_at_the_period_and_exit)
{
    const char *env[] = {"GPUMEMTRACE_SAMPLE_MS=20", "SAMPLE_PROG_ANSWERS=5", NULL};
    struct run r;
    run(&r, true, "nvml", "plain", "200", env);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert_eq(r.ntraces, 1);
    struct trace t;
    read_trace(r.traces[0], &t);
    for (int d = 0; d < 2; d++) {
        const struct sample *f = find(&t, GMT_MEMINFO_FIRST, d);
        cr_assert_not_null(f, "no FIRST sample of device %d", d);
        cr_expect_eq(count(&t, GMT_MEMINFO_FIRST, d), 1);
        cr_expect_eq(f->source, GMT_MEMINFO_SRC_CUMEMGETINFO);
        cr_expect_not(f->ext, "cuMemGetInfo says nothing of the process");
        cr_expect_neq(f->tid, t.flusher_tid, "FIRST is the allocating thread's");
        cr_expect_eq(f->total_b, 4096 * MIB);
        int periodic = count(&t, GMT_MEMINFO_PERIODIC, d);
        /* 200 ms at 20 ms: 10, less the flusher's first wake-up; a loaded machine's late
         * wake-ups make fewer, and the program then stays until 5 were answered; never
         * many more */
        cr_expect(periodic >= 5 && periodic <= 15, "device %d: %d PERIODIC samples", d, periodic);
        cr_expect_eq(count(&t, GMT_MEMINFO_EXIT, d), 1, "device %d: one EXIT", d);
    }
    cr_expect_eq(count(&t, GMT_MEMINFO_SAMPLE, -1) + count(&t, GMT_MEMINFO_BEGIN, -1) +
                     count(&t, GMT_MEMINFO_END, -1) + count(&t, GMT_MEMINFO_FAIL, -1), 0);
    cr_assert_neq(t.flusher_tid, 0u);
    for (int i = 0; i < t.n; i++) {
        const struct sample *s = &t.s[i];
        if (s->phase == GMT_MEMINFO_PERIODIC) {
            cr_expect_eq(s->tid, t.flusher_tid, "PERIODIC is the flusher's");
            cr_expect_eq(s->source, GMT_MEMINFO_SRC_NVML);
            cr_expect(s->ext);
            /* the process: its allocation (64 or 32 MiB, in 2 MiB steps) and its context,
             * until the program frees them (a loaded machine may sample in between) */
            uint64_t want = CONTEXT_BYTES + (s->device == 0 ? 64 : 32) * MIB;
            if (s->time_ns >= t.first_free_ns)
                continue;
            cr_expect_eq(s->process_b, want, "device %d: process %llu, not %llu", s->device,
                         (unsigned long long)s->process_b, (unsigned long long)want);
            cr_expect_eq(s->total_b - s->free_b, want, "nothing else uses the fake device");
        }
        if (s->phase == GMT_MEMINFO_EXIT) {
            cr_expect_neq(s->tid, t.flusher_tid, "EXIT is the exiting thread's");
            cr_expect_eq(s->source, GMT_MEMINFO_SRC_NVML);
            cr_expect_lt(s->index, t.end_index, "EXIT before END");
            cr_expect_eq(s->process_b, CONTEXT_BYTES, "everything freed but the context");
        }
    }
    cr_expect_eq(t.ends, 1);
    /* NVML: initialised once, never shut down, never asked after a shutdown */
    cr_expect_eq(nvml_stat(&r, "init"), 1);
    cr_expect_eq(nvml_stat(&r, "shutdown"), 0);
    cr_expect_eq(nvml_stat(&r, "after_shutdown"), 0);
    long meminfo = nvml_stat(&r, "meminfo");
    cr_expect_eq(meminfo, count(&t, GMT_MEMINFO_PERIODIC, -1) + count(&t, GMT_MEMINFO_EXIT, -1),
                 "one NVML memory query per sample: %ld", meminfo);
    /* every NVML call on the flusher but the exit's (a memory query and a process list
     * per device, and a device's handle if the flusher had not looked it up yet) */
    long all = nvml_stat(&r, "init") + nvml_stat(&r, "handle") + meminfo + nvml_stat(&r, "procs");
    long others = all - nvml_stat(&r, "from_flusher");
    int exits = count(&t, GMT_MEMINFO_EXIT, -1);
    cr_expect(others >= 2 * exits && others <= 2 * exits + 2,
              "%ld NVML calls off the flusher for %d EXIT samples", others, exits);
    expect_same_as_untraced(&r, "nvml", "plain", "200");
    cleanup(&r);
}

Test(sampling, sample_ms_0_gives_no_periodic_and_loads_no_nvml)
{
    const char *env[] = {"GPUMEMTRACE_SAMPLE_MS=0", NULL};
    struct run r;
    run(&r, true, "nvml", "plain", "150", env);
    cr_assert_eq(r.status, 0, "%s", r.out);
    struct trace t;
    read_trace(r.traces[0], &t);
    cr_expect_eq(count(&t, GMT_MEMINFO_FIRST, -1), 2, "FIRST all the same");
    cr_expect_eq(count(&t, GMT_MEMINFO_PERIODIC, -1), 0);
    cr_expect_eq(count(&t, GMT_MEMINFO_EXIT, -1), 0);
    cr_expect_eq(nvml_stat(&r, "init"), -1, "NVML was loaded");
    cleanup(&r);
}

Test(sampling, failed_allocation_is_followed_by_fail_sample_on_its_thread)
{
    struct run r;
    run(&r, true, "nvml", "oom", "50", NULL);
    cr_assert_eq(r.status, 7, "%s", r.out);
    struct trace t;
    read_trace(r.traces[0], &t);
    cr_assert_eq(t.fails, 1);
    const struct sample *f = find(&t, GMT_MEMINFO_FAIL, 0);
    cr_assert_not_null(f, "no FAIL sample");
    cr_expect_eq(count(&t, GMT_MEMINFO_FAIL, -1), 1);
    cr_expect_eq(f->tid, t.fail_tid, "on the failing thread");
    cr_expect_eq(f->index, t.fail_index + 1, "right after the ALLOC_FAIL");
    cr_expect_eq(f->source, GMT_MEMINFO_SRC_CUMEMGETINFO);
    /* the fake device as the driver has it: 4 GiB, the context charged */
    cr_expect_eq(f->total_b, 4096 * MIB);
    cr_expect_eq(f->free_b, 4096 * MIB - CONTEXT_BYTES);
    expect_same_as_untraced(&r, "nvml", "oom", "50");
    cleanup(&r);
}

Test(sampling, without_nvml_no_periodic_and_the_program_is_unchanged)
{
    const char *env[] = {"GPUMEMTRACE_SAMPLE_MS=10", NULL};
    struct run r;
    run(&r, true, NULL, "plain", "120", env);
    cr_assert_eq(r.status, 0, "%s", r.out);
    struct trace t;
    read_trace(r.traces[0], &t);
    cr_expect_eq(count(&t, GMT_MEMINFO_FIRST, -1), 2);
    cr_expect_eq(count(&t, GMT_MEMINFO_PERIODIC, -1), 0);
    cr_expect_eq(count(&t, GMT_MEMINFO_EXIT, -1), 0);
    cr_expect_eq(t.ends, 1);
    expect_same_as_untraced(&r, NULL, "plain", "120");
    cleanup(&r);
}

Test(sampling, failing_nvml_is_done_without)
{
    const char *modes[] = {"FAKENVML_FAIL=init", "FAKENVML_FAIL=handle", "FAKENVML_FAIL=meminfo"};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
        const char *env[] = {"GPUMEMTRACE_SAMPLE_MS=10", modes[i], NULL};
        struct run r;
        run(&r, true, "nvml", "plain", "100", env);
        cr_assert_eq(r.status, 0, "%s: %s", modes[i], r.out);
        struct trace t;
        read_trace(r.traces[0], &t);
        cr_expect_eq(count(&t, GMT_MEMINFO_FIRST, -1), 2, "%s", modes[i]);
        cr_expect_eq(count(&t, GMT_MEMINFO_PERIODIC, -1), 0, "%s", modes[i]);
        cr_expect_eq(t.ends, 1, "%s", modes[i]);
        if (i == 0)
            cr_expect_eq(nvml_stat(&r, "init"), 1, "a failed init is not retried");
        cleanup(&r);
    }
}

Test(sampling, process_figure_unknown_when_nvml_cannot_say)
{
    /* an unlisted pid (a container's namespace), a failing process query, an NVML too
     * old for the _v3 list: device-wide figures all the same, the process's unknown */
    const char *envs[][3] = {{"GPUMEMTRACE_SAMPLE_MS=10", "FAKENVML_UNLISTED=1", NULL},
                             {"GPUMEMTRACE_SAMPLE_MS=10", "FAKENVML_FAIL=procs", NULL},
                             {"GPUMEMTRACE_SAMPLE_MS=10", NULL, NULL}};
    const char *libs[] = {"nvml", "nvml", "nvml-old"};
    for (int i = 0; i < 3; i++) {
        struct run r;
        run(&r, true, libs[i], "sampled", "20000", envs[i]);
        cr_assert_eq(r.status, 0, "%s", r.out);
        cr_assert(strstr(r.out, "sampled: yes\n"), "case %d: %s", i, r.out);
        struct trace t;
        read_trace(r.traces[0], &t);
        const struct sample *p = find(&t, GMT_MEMINFO_PERIODIC, 0);
        cr_assert_not_null(p, "case %d: no PERIODIC", i);
        cr_expect(p->ext);
        cr_expect_eq(p->process_b, GMT_MEMINFO_UNKNOWN, "case %d", i);
        cr_expect_eq(p->total_b - p->free_b, CONTEXT_BYTES + 64 * MIB, "case %d", i);
        cleanup(&r);
    }
}

Test(sampling, other_processes_count_device_wide_not_in_the_process_figure)
{
    /* The program stays until the flusher has sampled both devices (bounded): a fixed
     * stay lets a loaded machine leave the flusher no tick inside it. The flusher wakes
     * only every 100 ms here, later than a short stay would wait, as under load. */
    const char *env[] = {"GPUMEMTRACE_SAMPLE_MS=10", "GPUMEMTRACE_FLUSH_MS=200",
                         "FAKENVML_OTHER_MB=1000", NULL};
    struct run r;
    run(&r, true, "nvml", "sampled", "20000", env);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert(strstr(r.out, "sampled: yes\n"), "no periodic sample in 20 s: %s", r.out);
    struct trace t;
    read_trace(r.traces[0], &t);
    const struct sample *p = find(&t, GMT_MEMINFO_PERIODIC, 1);
    cr_assert_not_null(p);
    cr_expect_eq(p->process_b, CONTEXT_BYTES + 32 * MIB);
    cr_expect_eq(p->total_b - p->free_b, CONTEXT_BYTES + 32 * MIB + 1000 * MIB);
    cleanup(&r);
}

Test(sampling, never_creates_a_context_nor_calls_cuda_from_its_thread)
{
    /* Idle for 200 ms while the flusher samples every 10 ms: the program makes no driver
     * call then, so any would be the tracer's. And the contexts the driver made are the
     * program's: the counts print the same traced and untraced. */
    const char *env[] = {"GPUMEMTRACE_SAMPLE_MS=10", "SAMPLE_PROG_ANSWERS=3", NULL};
    struct run r;
    run(&r, true, "nvml", "idle", "200", env);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_expect(strstr(r.out, "driver calls while idle: 0\n"), "%s", r.out);
    struct trace t;
    read_trace(r.traces[0], &t);
    cr_expect_geq(count(&t, GMT_MEMINFO_PERIODIC, -1), 5, "sampled while idle (20 due)");
    expect_same_as_untraced(&r, "nvml", "idle", "200");
    cleanup(&r);
}

Test(sampling, fork_child_samples_in_its_own_trace)
{
    const char *env[] = {"GPUMEMTRACE_SAMPLE_MS=10", "SAMPLE_PROG_ANSWERS=3", NULL};
    struct run r;
    run(&r, true, "nvml", "fork", "100", env);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert_eq(r.ntraces, 2, "parent and child traces");
    int forked = 0;
    for (int i = 0; i < 2; i++) {
        struct trace t;
        read_trace(r.traces[i], &t);
        forked += t.forked;
        cr_expect_eq(count(&t, GMT_MEMINFO_FIRST, 0), 1, "%s", r.traces[i]);
        int periodic = count(&t, GMT_MEMINFO_PERIODIC, 0);
        cr_expect(periodic >= 3 && periodic <= 15, "%s: %d PERIODIC", r.traces[i], periodic);
        cr_expect_eq(count(&t, GMT_MEMINFO_EXIT, 0), 1, "%s", r.traces[i]);
        cr_expect_eq(t.ends, 1);
    }
    cr_expect_eq(forked, 1, "one of them is the fork child");
    expect_same_as_untraced(&r, "nvml", "fork", "100");
    cleanup(&r);
}

Test(sampling, fork_child_of_a_sampling_parent_does_not_use_its_nvml)
{
    const char *env[] = {"GPUMEMTRACE_SAMPLE_MS=10", "SAMPLE_PROG_ANSWERS=3", NULL};
    struct run r;
    run(&r, true, "nvml", "forkafter", "80", env);
    cr_assert_eq(r.status, 0, "%s", r.out);
    cr_assert_eq(r.ntraces, 2);
    for (int i = 0; i < 2; i++) {
        struct trace t;
        read_trace(r.traces[i], &t);
        cr_expect_eq(t.ends, 1);
        if (t.forked) {
            cr_expect_eq(count(&t, GMT_MEMINFO_FIRST, 1), 1, "the child's device gets FIRST");
            cr_expect_eq(count(&t, GMT_MEMINFO_FIRST, 0), 0, "the parent's device: not in the child");
            cr_expect_eq(count(&t, GMT_MEMINFO_PERIODIC, -1), 0, "the parent's NVML is not used");
        } else {
            cr_expect_geq(count(&t, GMT_MEMINFO_PERIODIC, 0), 3);
            cr_expect_eq(count(&t, GMT_MEMINFO_EXIT, 0), 1);
        }
    }
    expect_same_as_untraced(&r, "nvml", "forkafter", "80");
    cleanup(&r);
}

/* ---- in this process: the allocating threads and the flusher at once (the
 * ThreadSanitizer build checks this one; the tests above run a program) */

typedef int cu_init_fn(unsigned);
typedef int cu_retain_fn(void **, int);
typedef int cu_set_fn(void *);
static void *threads_ctx[2];
static cu_set_fn *threads_set;

static void *allocating_thread(void *arg)
{
    int dev = (int)(intptr_t)arg % 2;
    threads_set(threads_ctx[dev]);
    for (int i = 0; i < 3000; i++) {
        gmt_sample_first(dev);
        if (i % 500 == 0)
            gmt_sample_fail(dev);
        if (i % 100 == 0) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

Test(sampling, threads_sample_while_the_flusher_does)
{
    char dir[] = "/tmp/gmt-sampling-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/t.gmt", dir);
    setenv("GPUMEMTRACE_OUTPUT", path, 1);
    setenv("GPUMEMTRACE_SAMPLE_MS", "1", 1);
    setenv("FAKECUDA_DEVICES", "2", 1);
    gmt_options_load();
    /* the fake driver in the global scope, where the library looks for the driver; the
     * fake NVML loaded already, so that the library's dlopen by soname finds it */
    void *cu = dlopen(SAMPLE_FAKES "/libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    cr_assert_not_null(cu, "%s", dlerror());
    void *nvml = dlopen(SAMPLE_FAKES "/nvml/libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    cr_assert_not_null(nvml, "%s", dlerror());
    typedef unsigned long answered_fn(int);
    answered_fn *answered = (answered_fn *)dlsym(nvml, "fakenvml_flusher_meminfo");
    cr_assert_not_null(answered);
    cu_init_fn *init = (cu_init_fn *)dlsym(cu, "cuInit");
    cu_retain_fn *retain = (cu_retain_fn *)dlsym(cu, "cuDevicePrimaryCtxRetain");
    threads_set = (cu_set_fn *)dlsym(cu, "cuCtxSetCurrent");
    cr_assert(init && retain && threads_set);
    cr_assert_eq(init(0), 0);
    for (int d = 0; d < 2; d++)
        cr_assert_eq(retain(&threads_ctx[d], d), 0);
    cr_assert(gmt_writer_ready());
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        cr_assert_eq(pthread_create(&th[i], NULL, allocating_thread, (void *)(intptr_t)i), 0);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    /* the flusher samples while the threads ran; then until NVML answered it about both
     * devices three times, however late it runs on a loaded machine (at most 30 s): the
     * third query comes after the second's record (the rate is the program tests'
     * concern, this one is about the threads and the flusher at once) */
    struct timespec ts = {0, 1000000L};
    for (int i = 0; i < 30000 && (answered(0) < 3 || answered(1) < 3); i++)
        nanosleep(&ts, NULL);
    gmt_writer_finish();
    struct trace t;
    read_trace(path, &t);
    for (int d = 0; d < 2; d++) {
        cr_expect_eq(count(&t, GMT_MEMINFO_FIRST, d), 1, "device %d", d);
        cr_expect_eq(count(&t, GMT_MEMINFO_FAIL, d), 12, "device %d", d);
        cr_expect_geq(count(&t, GMT_MEMINFO_PERIODIC, d), 2, "device %d", d);
    }
    unlink(path);
    rmdir(dir);
}
