/* test_robust.c: the tracer under hostile conditions: loader locks, dangling caller slots, dlclose, failed lookups, non-blocking NCCL, fork, exec, two copies of a library; closed stdio, low limits, odd output paths; plain LD_PRELOAD's parity with `run`. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>

#include "hook_run.h"
#include "shell_test.h"
#include "trace_format.h"

/* ---------------------------------------------------------------- running a program */

struct rrun {
    char dir[64];
    int status;               /* exit status, or 128 + signal */
    char out[HOOK_OUT_MAX];   /* stdout and stderr together */
};

/* Runs ROBUST_DIR/prog with args (NULL-terminated), traced when `traced` (one file per
 * process: %p), killed by SIGALRM after 20 s so a deadlock fails instead of hanging. */
static void rrun(struct rrun *r, bool traced, const char *prog, const char *const *args)
{
    memset(r, 0, sizeof *r);
    strcpy(r->dir, "/tmp/gmt-robust-XXXXXX");
    cr_assert_not_null(mkdtemp(r->dir));
    char path[256];
    snprintf(path, sizeof path, "%s/%s", ROBUST_DIR, prog);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        unsetenv("LD_PRELOAD");
        unsetenv("ASAN_OPTIONS");
        unsetenv("GPUMEMTRACE_MEMINFO");
        if (traced) {
            char pat[128];
            snprintf(pat, sizeof pat, "%s/t.%%p.gmt", r->dir);
            setenv("GPUMEMTRACE_OUTPUT", pat, 1);
            setenv("LD_PRELOAD", HOOK_LIB, 1);
        }
        setenv("FAKECUDA_DEVICES", "2", 1);
        const char *argv[8] = {path};
        for (int i = 0; args && args[i] && i < 6; i++)
            argv[i + 1] = args[i];
        alarm(20);
        execv(path, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t k;
    while ((k = read(fds[0], r->out + n, sizeof r->out - 1 - n)) > 0)
        n += (size_t)k;
    close(fds[0]);
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The trace files the run wrote, up to `max`; returns how many. */
static int traces(const struct rrun *r, char paths[][320], int max)
{
    DIR *d = opendir(r->dir);
    cr_assert_not_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max)
        if (strstr(e->d_name, ".gmt"))
            snprintf(paths[n++], 320, "%s/%s", r->dir, e->d_name);
    closedir(d);
    return n;
}

static void cleanup(const struct rrun *r)
{
    char paths[8][320];
    int n = traces(r, paths, 8);
    for (int i = 0; i < n; i++)
        unlink(paths[i]);
    rmdir(r->dir);
}

static char lib_path[8][256];
static const char *robust_path(int i, const char *name)
{
    snprintf(lib_path[i], sizeof lib_path[i], "%s/%s", ROBUST_DIR, name);
    return lib_path[i];
}

/* ---------------------------------------------------------------- 1. loader locks */

/* A failed lookup used to dlopen from inside a dl_iterate_phdr callback: loader locks
 * taken in the opposite order from a concurrent dlopen/dlclose. */
Test(robust, failed_lookup_racing_dlopen_does_not_deadlock, .timeout = 60)
{
    const char *args[] = {robust_path(0, "nccl/libnccl.so.2"), robust_path(1, "libx1.so"),
                          robust_path(2, "libx2.so"), NULL};
    struct rrun r;
    rrun(&r, true, "robust_dlrace", args);
    cr_expect_eq(r.status, 0, "status %d: %s", r.status, r.out);
    cr_expect(strstr(r.out, "progress:") != NULL, "%s", r.out);
    cleanup(&r);
}

/* ---------------------------------------------------------------- 2. group slots */

struct comms_seen {
    uint64_t comm[8];
    int n;
};
static void visit_comm(const struct gmt_rec *h, void *arg)
{
    struct comms_seen *s = arg;
    if (h->type == GMT_REC_COMM && s->n < 8)
        s->comm[s->n++] = ((const struct gmt_rec_comm *)h)->comm;
}

/* The slot a communicator was created into inside a group may be gone by ncclGroupEnd:
 * its value is taken when the init returns. */
Test(robust, comm_slot_gone_before_group_end_is_not_read, .timeout = 60)
{
    struct rrun r;
    rrun(&r, true, "robust_group", NULL);
    cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
    void *c0 = NULL, *c1 = NULL;
    const char *p = strstr(r.out, "comms ");
    cr_assert(p && sscanf(p, "comms %p %p", &c0, &c1) == 2, "%s", r.out);
    char paths[4][320];
    cr_assert_eq(traces(&r, paths, 4), 1);
    struct hook_counts c;
    struct comms_seen s = {0};
    hook_read(paths[0], &c, visit_comm, &s);
    cr_expect_eq(s.n, 2);
    cr_expect_eq(s.comm[0], (uint64_t)(uintptr_t)c0);
    cr_expect_eq(s.comm[1], (uint64_t)(uintptr_t)c1);
    cleanup(&r);
}

/* ---------------------------------------------------------------- 3. dlclose */

/* A driver found through dlsym(RTLD_DEFAULT) (our export answers it, so glibc records no
 * dependency), closed and loaded again elsewhere: the cached real pointer must still
 * point at code. */
Test(robust, cached_real_functions_survive_dlclose, .timeout = 60)
{
    const char *args[] = {robust_path(0, "cuda/libcuda.so.1"), NULL};
    struct rrun r;
    rrun(&r, true, "robust_stale", args);
    cr_expect_eq(r.status, 0, "status %d: %s", r.status, r.out);
    cr_expect(strstr(r.out, "second: 0") != NULL, "%s", r.out);
    cleanup(&r);
}

/* ---------------------------------------------------------------- 4. failed lookups */

/* A hooked name the library lacks (ncclCommRevoke) and a version query it lacks
 * (ncclGetVersion): after the first miss, calls must not look again, so they go on while
 * another thread holds the loader's lock. */
Test(robust, failed_lookups_are_cached_until_something_loads, .timeout = 60)
{
    struct rrun r;
    rrun(&r, true, "robust_miss", NULL);
    cr_expect_eq(r.status, 0, "status %d: %s", r.status, r.out);
    cr_expect(strstr(r.out, "free") != NULL, "%s", r.out);
    cleanup(&r);
}

/* ---------------------------------------------------------------- 5. non-blocking NCCL */

struct comm_desc {
    int n;
    struct gmt_rec_comm rec;
};
static void visit_comm_desc(const struct gmt_rec *h, void *arg)
{
    struct comm_desc *d = arg;
    if (h->type == GMT_REC_COMM && d->n++ == 0)
        memcpy(&d->rec, h, sizeof d->rec);
}

/* While a non-blocking init is in progress NCCL answers queries with a WARN in the user's
 * log: the tracer asks only once a later call on the communicator succeeded. */
Test(robust, nonblocking_comm_is_described_once_ready_without_warnings, .timeout = 60)
{
    struct rrun r;
    rrun(&r, false, "robust_nonblock", NULL);
    cr_assert_eq(r.status, 0, "untraced: %s", r.out);
    cr_assert(strstr(r.out, "WARN") == NULL, "untraced: %s", r.out);
    cleanup(&r);
    rrun(&r, true, "robust_nonblock", NULL);
    cr_expect_eq(r.status, 0, "status %d: %s", r.status, r.out);
    cr_expect(strstr(r.out, "WARN") == NULL, "the tracer queried a communicator in progress:\n%s",
              r.out);
    char paths[4][320];
    cr_assert_eq(traces(&r, paths, 4), 1);
    struct hook_counts c;
    struct comm_desc d = {0};
    hook_read(paths[0], &c, visit_comm_desc, &d);
    cr_expect_eq(d.n, 1, "one COMM record");
    cr_expect_eq(d.rec.rank, 2);
    cr_expect_eq(d.rec.nranks, 4);
    cr_expect_eq(d.rec.device, 1);
    cr_expect_neq(d.rec.unique_id_hash, 0);
    cleanup(&r);
}

/* ---------------------------------------------------------------- 6. fork */

struct refs {
    uint32_t scopes[64];
    int nscopes;
    int undefined_scope; /* ALLOC/FREE records naming a scope the file never began */
    int cuctx, alloc, alloc_before_cuctx;
};
static void visit_refs(const struct gmt_rec *h, void *arg)
{
    struct refs *f = arg;
    if (h->type == GMT_REC_SCOPE_BEGIN && f->nscopes < 64)
        f->scopes[f->nscopes++] = ((const struct gmt_rec_scope_begin *)h)->scope_id;
    if (h->type == GMT_REC_CUCTX)
        f->cuctx++;
    struct gmt_rec_alloc_ext x;
    if (as_alloc(h, &x)) {
        f->alloc++;
        if (!f->cuctx)
            f->alloc_before_cuctx++;
        uint32_t s = x.a.scope_id;
        bool known = s == 0;
        for (int i = 0; i < f->nscopes && !known; i++)
            known = f->scopes[i] == s;
        if (!known)
            f->undefined_scope++;
    }
}

/* The child's file must define every scope its records name and carry the context of
 * the thread that forked. */
Test(robust, fork_child_trace_defines_what_it_refers_to, .timeout = 60)
{
    struct rrun r;
    rrun(&r, true, "robust_fork", NULL);
    cr_assert_eq(r.status, 0, "status %d: %s", r.status, r.out);
    char paths[4][320];
    int n = traces(&r, paths, 4);
    cr_assert_eq(n, 2, "a file for the parent and one for the child");
    for (int i = 0; i < n; i++) {
        struct hook_counts c;
        struct refs f = {0};
        hook_read(paths[i], &c, visit_refs, &f);
        cr_expect_gt(f.alloc, 0, "%s", paths[i]);
        cr_expect_eq(f.undefined_scope, 0, "%s: ALLOC names a scope the file never began",
                     paths[i]);
        cr_expect_eq(f.alloc_before_cuctx, 0, "%s: ALLOC before any CUCTX", paths[i]);
    }
    cleanup(&r);
}

/* ---------------------------------------------------------------- 6b. exec */

struct ends {
    int n;          /* END records */
    bool last;      /* the last record is END */
};
static void visit_ends(const struct gmt_rec *h, void *arg)
{
    struct ends *e = arg;
    e->n += h->type == GMT_REC_END;
    e->last = h->type == GMT_REC_END;
}

/* Reads every trace of the run: the file whose ALLOC count is `want` must be complete
 * with one END, last; returns how many files had that count. */
static int trace_with(const struct rrun *r, unsigned want)
{
    char paths[8][320];
    int n = traces(r, paths, 8), found = 0;
    for (int i = 0; i < n; i++) {
        struct hook_counts c;
        struct ends e = {0};
        hook_read(paths[i], &c, visit_ends, &e);
        unsigned allocs = 0;
        for (unsigned a = 0; a < GMT_API_MAX; a++)
            allocs += c.alloc[a];
        if (allocs != want)
            continue;
        found++;
        cr_expect(c.complete, "%s: no END", paths[i]);
        cr_expect_eq(e.n, 1, "%s: %d END records", paths[i], e.n);
        cr_expect(e.last, "%s: END is not the last record", paths[i]);
    }
    return found;
}

/* A fork child that execs, in each of the nine forms: its 100 records (far fewer than a
 * buffer holds, made faster than the flusher's period) and END are in its file. */
Test(robust, exec_in_each_form_keeps_the_old_image_records, .timeout = 120)
{
    const char *forms[] = {"execve", "execv", "execvp", "execvpe", "execl",
                           "execlp", "execle", "fexecve", "execveat"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        const char *args[] = {"fork", forms[i], NULL};
        bool env = strcmp(forms[i], "execv") && strcmp(forms[i], "execvp") &&
                   strcmp(forms[i], "execl") && strcmp(forms[i], "execlp");
        const char *want = env ? "done env\n" : "done\n";
        struct rrun r;
        rrun(&r, false, "robust_exec", args);
        cr_expect_str_eq(r.out, want, "%s untraced", forms[i]);
        cleanup(&r);
        rrun(&r, true, "robust_exec", args);
        cr_expect_eq(r.status, 0, "%s: status %d: %s", forms[i], r.status, r.out);
        cr_expect_str_eq(r.out, want, "%s", forms[i]);
        cr_expect_eq(trace_with(&r, 100), 1, "%s: the child's file with its 100 records", forms[i]);
        cr_expect_eq(trace_with(&r, 1), 1, "%s: the parent's file", forms[i]);
        cleanup(&r);
    }
}

/* A failed exec returns what it returns without the library (the same -1 and errno for a
 * missing program, a directory, a name not in PATH) and tracing goes on: the END written
 * before the call is taken back, the one at exit is the file's only one. */
Test(robust, failed_exec_returns_as_without_the_library_and_tracing_goes_on, .timeout = 60)
{
    const char *args[] = {"missing", NULL};
    struct rrun r;
    rrun(&r, false, "robust_exec", args);
    char want[256];
    snprintf(want, sizeof want, "rc=-1 errno=%d rc=-1 errno=%d rc=-1 errno=%d\n", ENOENT, EACCES,
             ENOENT);
    cr_expect_str_eq(r.out, want, "untraced");
    cleanup(&r);
    rrun(&r, true, "robust_exec", args);
    cr_expect_eq(r.status, 0, "status %d: %s", r.status, r.out);
    cr_expect_str_eq(r.out, want);
    cr_expect_eq(trace_with(&r, 2), 1, "both records, one END");
    cleanup(&r);
}

/* exec while another thread's records are still in its buffer; from a signal handler; and
 * a vfork child's exec, which must leave the parent's file alone. */
Test(robust, exec_with_threads_from_a_handler_and_after_vfork, .timeout = 60)
{
    struct {
        const char *mode;
        unsigned allocs;
        const char *out;
    } cases[] = {{"threads", 100, "done\n"}, {"signal", 20, "done\n"}, {"vfork", 20, "done\n"}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[] = {cases[i].mode, NULL};
        struct rrun r;
        rrun(&r, true, "robust_exec", args);
        cr_expect_eq(r.status, 0, "%s: status %d: %s", cases[i].mode, r.status, r.out);
        cr_expect_str_eq(r.out, cases[i].out, "%s", cases[i].mode);
        char paths[4][320];
        cr_expect_eq(traces(&r, paths, 4), 1, "%s: one file", cases[i].mode);
        cr_expect_eq(trace_with(&r, cases[i].allocs), 1, "%s: every record, one END last",
                     cases[i].mode);
        cleanup(&r);
    }
}

/* exec while two threads allocate without pause and flush their own 4 KiB buffers: the
 * file reads to its end without error, with one END, last (no chunk after it). */
Test(robust, exec_while_other_threads_flush_leaves_end_last, .timeout = 60)
{
    const char *args[] = {"busy", NULL};
    for (int round = 0; round < 5; round++) {
        struct rrun r;
        rrun(&r, true, "robust_exec", args);
        cr_expect_eq(r.status, 0, "status %d: %s", r.status, r.out);
        cr_expect_str_eq(r.out, "done\n");
        char paths[4][320];
        cr_assert_eq(traces(&r, paths, 4), 1);
        struct hook_counts c;
        struct ends e = {0};
        hook_read(paths[0], &c, visit_ends, &e);
        unsigned made = 0; /* the simulated device fills up: most are ALLOC_FAIL */
        for (unsigned a = 0; a < GMT_API_MAX; a++)
            made += c.alloc[a] + c.fail[a];
        cr_expect_geq(made, 20000);
        cr_expect(c.complete);
        cr_expect_eq(e.n, 1, "%d END records", e.n);
        cr_expect(e.last, "a record after END");
        cleanup(&r);
    }
}

/* GPUMEMTRACE_OFF=1: the exec hooks pass straight through and no file is written. */
Test(robust, exec_with_tracing_off_passes_through, .timeout = 60)
{
    const char *args[] = {"off", NULL};
    struct rrun r;
    rrun(&r, true, "robust_exec", args);
    char want[128];
    snprintf(want, sizeof want, "rc=-1 errno=%d\ndone env\n", ENOENT);
    cr_expect_eq(r.status, 0, "status %d: %s", r.status, r.out);
    cr_expect_str_eq(r.out, want);
    char paths[4][320];
    cr_expect_eq(traces(&r, paths, 4), 0, "no file");
    cleanup(&r);
}

/* ---------------------------------------------------------------- 7. two copies */

/* Two plugins, each linked to its own runtime copy, both RTLD_LOCAL: the export resolves
 * the real function relative to its caller. */
Test(robust, each_plugin_calls_its_own_runtime_copy, .timeout = 60)
{
    const char *args[] = {robust_path(0, "libplug13.so"), robust_path(1, "libplug12.so"), NULL};
    struct rrun r;
    rrun(&r, false, "robust_two", args);
    const char *want = "a: cudaMalloc of cudart 13\nb: cudaMalloc of cudart 12\n"
                       "a: cudaMalloc of cudart 13\n";
    cr_assert_str_eq(r.out, want, "untraced");
    cleanup(&r);
    rrun(&r, true, "robust_two", args);
    cr_expect_eq(r.status, 0, "status %d: %s", r.status, r.out);
    cr_expect_str_eq(r.out, want);
    cleanup(&r);
}

/* ---------------------------------------------------------------- 10. the process's own resources */

/* Shell cases: $B the build directory, $E the program, $L the library. */

TestSuite(harm, .init = shell_setup, .fini = shell_teardown, .timeout = 60);

#define E "E='" ROBUST_DIR "/robust_env'; L='" HOOK_LIB "'; export FAKECUDA_DEVICES=2; "
#define TRACED "LD_PRELOAD=\"$L\" GPUMEMTRACE_OUTPUT=\"$W/t.%%p.gmt\" "

static char out[16384], err[16384];

static int lines_with(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* A daemon, `cmd >&-`: the program's write to its closed stdout fails as untraced (before,
 * the trace took fd 1 and the write landed in it, and the trace no longer read). */
Test(harm, stdout_closed_at_start_stays_closed_and_the_trace_reads)
{
    cr_assert_eq(sh(E "\"$E\" stdout >&- 2>plain.txt; " TRACED "\"$E\" stdout >&- 2>traced.txt"), 0);
    char plain[256], traced[256];
    slurp("plain.txt", plain, sizeof plain);
    slurp("traced.txt", traced, sizeof traced);
    cr_expect_str_eq(plain, "write to fd 1: -1 errno 9\n");
    cr_expect_str_eq(traced, plain);
    cr_expect_eq(sh("$G summary --no-symbols t.*.gmt"), 0, "the trace reads");
}

/* The fds the library adds are above 2 (0 and 2 closed at start here) and close-on-exec;
 * there are three: the trace file and libunwind's pipe. */
Test(harm, library_fds_are_above_2_close_on_exec_and_three)
{
    cr_assert_eq(sh(E "\"$E\" fds 0<&- 2>&- > plain.txt; " TRACED "\"$E\" fds 0<&- 2>&- > traced.txt"), 0);
    char plain[4096], traced[4096];
    slurp("plain.txt", plain, sizeof plain);
    slurp("traced.txt", traced, sizeof traced);
    int added = 0;
    for (char *l = strtok(traced, "\n"); l; l = strtok(NULL, "\n")) {
        char own[16];
        snprintf(own, sizeof own, "fd %d ", atoi(l + 3));
        if (strstr(plain, own))
            continue; /* the program's own (stdout; what the test's shell passes on) */
        added++;
        int fd = atoi(l + 3);
        cr_expect_gt(fd, 2, "a library fd on 0, 1 or 2: %s", l);
        cr_expect(strstr(l, " cloexec "), "inherited by exec: %s", l);
    }
    cr_expect_eq(added, 3, "the trace and libunwind's pipe:\n%s", traced);
    slurp("traced.txt", traced, sizeof traced);
    cr_expect(strstr(traced, "t.") && strstr(traced, ".gmt\n"), "%s", traced);
}

/* Under `ulimit -n` the program can open as many files as untraced, less the three. */
Test(harm, a_low_open_file_limit_costs_the_program_three_fds)
{
    cr_assert_eq(sh(E "ulimit -n 16; \"$E\" openmax > plain.txt; " TRACED "\"$E\" openmax > traced.txt"), 0);
    char plain[256], traced[256];
    slurp("plain.txt", plain, sizeof plain);
    slurp("traced.txt", traced, sizeof traced);
    int p = 0, t = 0;
    cr_assert_eq(sscanf(plain, "opened %d", &p), 1, "%s", plain);
    cr_assert_eq(sscanf(traced, "opened %d", &t), 1, "%s", traced);
    cr_expect_eq(p - t, 3, "untraced %d, traced %d", p, t);
}

/* RLIMIT_FSIZE: the trace reaches it, tracing stops with one warning and the program exits
 * 0 as untraced (before: killed by SIGXFSZ, status 153); a stderr past the limit takes the
 * warning's write without a signal too; the program's own write past it still gets the
 * signal (the disposition is the program's). */
Test(harm, the_file_size_limit_stops_tracing_and_never_signals_the_program)
{
    cr_expect_eq(sh(E "ulimit -f 2; \"$E\" alloc 2000; echo untraced $?; " TRACED
                    "GPUMEMTRACE_FLUSH_BYTES=4096 \"$E\" alloc 2000; echo traced $?"), 0);
    slurp("out", out, sizeof out);
    slurp("err", err, sizeof err);
    cr_expect_str_eq(out, "untraced 0\ntraced 0\n");
    cr_expect_eq(lines_with(err, "File too large; tracing stops, the program continues\n"), 1, "%s", err);
    cr_expect_eq(lines_with(err, "\n"), 1, "one line: %s", err);
    /* stderr a file past the limit already */
    cr_expect_eq(sh(E "head -c 4096 /dev/zero > full.txt; ulimit -f 2; " TRACED
                    "GPUMEMTRACE_FLUSH_BYTES=4096 \"$E\" alloc 2000 2>>full.txt; echo traced $?"), 0);
    slurp("out", out, sizeof out);
    cr_expect_str_eq(out, "traced 0\n");
    /* the program's own write: SIGXFSZ as without the library */
    cr_expect_eq(sh(E "ulimit -f 2; " TRACED "sh -c 'head -c 8192 /dev/zero > big.bin'; echo own $?"), 0);
    slurp("out", out, sizeof out);
    cr_expect_str_eq(out, "own 153\n");
}

/* A device, a FIFO or a directory as the output: refused with one warning, nothing made
 * beside it (before: /dev/null.1, a regular file in /dev; with a rank, /dev/null.r0),
 * never a wait on a FIFO. */
Test(harm, a_device_fifo_or_directory_as_output_is_refused_and_nothing_made)
{
    static const char *const cases[][2] = {
        {"/dev/null", "a character device"}, {"$W/fifo", "a FIFO"}, {"$W/dir", "a directory"}};
    cr_assert_eq(sh("mkfifo fifo && mkdir dir"), 0);
    for (size_t i = 0; i < 2 * sizeof cases / sizeof cases[0]; i++) {
        const char *const *c = cases[i % 3], *rank = i < 3 ? "" : "RANK=3 ";
        int rc = sh(E "ls /dev > dev.before; %sLD_PRELOAD=\"$L\" GPUMEMTRACE_OUTPUT=\"%s\" timeout 20 "
                    "\"$E\" alloc 3; echo $?; ls /dev > dev.after; ls \"$W\"", rank, c[0]);
        cr_expect_eq(rc, 0);
        slurp("out", out, sizeof out);
        slurp("err", err, sizeof err);
        cr_expect(!strncmp(out, "0\n", 2), "%s%s: status %s", rank, c[0], out);
        cr_expect(strstr(err, c[1]) && strstr(err, "not a regular file"), "%s%s: %s", rank, c[0], err);
        cr_expect_eq(lines_with(err, "\n"), 1, "one line: %s", err);
        cr_expect_eq(sh("cmp dev.before dev.after"), 0, "%s%s: something was made in /dev", rank, c[0]);
        cr_expect(!strstr(out, "fifo.") && !strstr(out, "dir."), "%s%s: a numbered name was made:\n%s",
                  rank, c[0], out);
    }
    sh("rm -f /dev/null.1 /dev/null.r3");
}

/* ---- plain LD_PRELOAD records what `run` records ---- */

/* NVTX: a client that initialises the way NVTX v3 does finds the library, and its ranges
 * are phases (before: no tool, no phase table). */
Test(harm, plain_preload_records_nvtx_ranges)
{
    cr_assert_eq(sh(E "unset NVTX_INJECTION64_PATH; " TRACED "\"$E\" nvtx && $G summary --no-symbols t.*.gmt"), 0);
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "nvtx: injected\n"), "%s", out);
    cr_expect(strstr(out, "Device memory by phase") && strstr(out, "train_step"), "%s", out);
    /* GPUMEMTRACE_NVTX=0 gives nothing, and the client runs as without a tool */
    cr_assert_eq(sh(E "rm -f t.*; GPUMEMTRACE_NVTX=0 " TRACED "\"$E\" nvtx"), 0);
    slurp("out", out, sizeof out);
    cr_expect_str_eq(out, "nvtx: no tool\n");
}

/* Another tool named in the variable keeps it, with one warning. */
Test(harm, another_nvtx_tool_keeps_its_place_with_one_warning)
{
    cr_assert_eq(sh(E "NVTX_INJECTION64_PATH=/opt/other/libtool.so " TRACED "\"$E\" nvtx"), 0);
    slurp("out", out, sizeof out);
    slurp("err", err, sizeof err);
    cr_expect_str_eq(out, "nvtx: no tool\n", "the client loads the other tool (here: missing)");
    cr_expect_eq(lines_with(err, "NVTX_INJECTION64_PATH=/opt/other/libtool.so is another tool's: "
                                 "NVTX ranges are not recorded\n"), 1, "%s", err);
    /* the library by another path is not another tool */
    cr_assert_eq(sh(E "NVTX_INJECTION64_PATH=\"$B/../$(basename $B)/libgpumemtrace.so\" " TRACED "\"$E\" nvtx"), 0);
    slurp("out", out, sizeof out);
    slurp("err", err, sizeof err);
    cr_expect_str_eq(out, "nvtx: injected\n");
    cr_expect_str_empty(err);
}

/* The answer is the library's getenv's: the environment, and what a child inherits,
 * stay as the program had them. A relative LD_PRELOAD is answered as an absolute path. */
Test(harm, the_environment_and_children_are_unchanged)
{
    cr_assert_eq(sh(E "cp \"$L\" ./lib.so && LD_PRELOAD=./lib.so GPUMEMTRACE_OUTPUT=\"$W/t.%%p.gmt\" \"$E\" env"), 0);
    slurp("out", out, sizeof out);
    char want[3 * PATH_MAX];
    snprintf(want, sizeof want, "getenv nvtx %s/lib.so\ngetenv nccl %s/lib.so\nin environ 0\nchild unset unset\n",
             work, work);
    cr_expect_str_eq(out, want);
    cr_assert_eq(sh(E "GPUMEMTRACE_OFF=1 " TRACED "\"$E\" env"), 0);
    slurp("out", out, sizeof out);
    cr_expect_str_eq(out, "getenv nvtx (unset)\ngetenv nccl (unset)\nin environ 0\nchild unset unset\n");
}

/* The library's getenv answers every other name as glibc's does: one-byte names, a name
 * that is a prefix of another, a name holding '=', the empty name, a name not set. */
Test(harm, getenv_answers_as_glibc_for_every_other_name)
{
    const char *cmd = E "export A=1 AB=2 ABC= X=Y=Z NC=3 NV=4 NCCL_X=5; \"$E\" getenv A AB ABC X X=Y X=Y=Z '' "
                      "NC NV NCCL_X NCCL NONE B > plain.txt; " TRACED "\"$E\" getenv A AB ABC X X=Y X=Y=Z '' "
                      "NC NV NCCL_X NCCL NONE B > traced.txt";
    cr_assert_eq(sh(cmd), 0);
    char plain[1024], traced[1024];
    slurp("plain.txt", plain, sizeof plain);
    slurp("traced.txt", traced, sizeof traced);
    cr_expect(strstr(plain, "[X=Y] =Z\n") && strstr(plain, "[A] =1\n"), "glibc's answers: %s", plain);
    cr_expect_str_eq(traced, plain);
}

/* NCCL's profiler plugin: the simulated NCCL loads NCCL_PROFILER_PLUGIN as NCCL 2.28
 * does, through getenv (before: no NCCL_COLL_INFO without `run`). */
Test(harm, plain_preload_loads_the_nccl_profiler_plugin)
{
    cr_assert_eq(sh(E "unset NCCL_PROFILER_PLUGIN; " TRACED "\"$B/fakes/progs/fake_nccl_1proc\" 1000 >/dev/null && "
                    "$G dump t.*.gmt > dump.txt; grep -c NCCL_COLL_INFO dump.txt; grep -c SCOPE_ dump.txt"), 0);
    int info = -1, scopes = -1;
    slurp("out", out, sizeof out);
    cr_assert_eq(sscanf(out, "%d %d", &info, &scopes), 2, "%s", out);
    cr_expect_gt(info, 0, "no collective info");
    cr_assert_eq(sh(E "rm -f t.*; GPUMEMTRACE_NCCL_PROFILER=0 " TRACED "\"$B/fakes/progs/fake_nccl_1proc\" 1000 "
                    ">/dev/null && $G dump t.*.gmt > dump.txt; grep -c NCCL_COLL_INFO dump.txt; "
                    "grep -c SCOPE_ dump.txt"), 0);
    slurp("out", out, sizeof out);
    cr_assert_eq(sscanf(out, "%d %d", &info, &scopes), 2, "%s", out);
    cr_expect_eq(info, 0);
    cr_expect_gt(scopes, 0);
}

/* The job and the ranks from a launcher's variables, as `run`'s job id gives them. */
Test(harm, plain_preload_takes_job_and_rank_from_the_launcher)
{
    cr_assert_eq(sh(E "for r in 0 1; do TORCHELASTIC_RUN_ID=abc123 RANK=$r WORLD_SIZE=2 " TRACED
                    "\"$E\" alloc 2 || exit 1; done; $G summary --no-symbols ."), 0);
    slurp("out", out, sizeof out);
    cr_expect(strstr(out, "2 with a rank") && strstr(out, "job torchelastic:abc123"), "%s", out);
    cr_expect(strstr(out, "world size 2, every rank here"), "%s", out);
}
