/* hook_run.h: for the interception suites: run a program with or without the tracer preloaded, and count the records of its trace. */
#ifndef GMT_HOOK_RUN_H
#define GMT_HOOK_RUN_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc_rec.h"
#include "reader.h"

#define HOOK_OUT_MAX 16384

struct hook_run {
    int status;               /* exit status, or 128 + signal */
    char out[HOOK_OUT_MAX];   /* stdout and stderr together */
    char trace[256];          /* the trace file, "" when not traced */
};

/* Runs argv[0] with argv; traced when `traced`. The trace goes to a fresh file. */
static inline void hook_run(struct hook_run *r, bool traced, char *const argv[])
{
    memset(r, 0, sizeof *r);
    char dir[] = "/tmp/gmt-hooktest-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    if (traced)
        snprintf(r->trace, sizeof r->trace, "%s/trace.gmt", dir);
    int fds[2];
    cr_assert_eq(pipe(fds), 0);
    pid_t pid = fork();
    cr_assert_neq(pid, -1);
    if (pid == 0) {
        dup2(fds[1], 1);
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        /* A sanitized test binary must not hand its runtime to the child. */
        unsetenv("LD_PRELOAD");
        unsetenv("ASAN_OPTIONS");
        if (traced) {
            setenv("LD_PRELOAD", HOOK_LIB, 1);
            setenv("GPUMEMTRACE_OUTPUT", r->trace, 1);
        }
        setenv("FAKECUDA_DEVICES", "2", 1);
        execv(argv[0], argv);
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

/* Records of the trace, by type and API. */
/* Runs hook_paths PATH FLAGS untraced and traced: both exit 0 with the same output.
 * Leaves the traced run (and its trace) in *traced. */
static inline void hook_run_paths(const char *prog, const char *path, const char *flags,
                                  struct hook_run *traced)
{
    static struct hook_run plain;
    char *argv[] = { (char *)prog, (char *)path, (char *)flags, NULL };
    hook_run(&plain, false, argv);
    cr_assert_eq(plain.status, 0, "%s %s failed untraced:\n%s", path, flags, plain.out);
    hook_run(traced, true, argv);
    cr_assert_eq(traced->status, 0, "%s %s failed traced:\n%s", path, flags, traced->out);
    cr_assert_str_eq(traced->out, plain.out, "%s %s: output differs with the tracer", path,
                     flags);
}

struct hook_counts {
    unsigned alloc[GMT_API_MAX];
    unsigned free_[GMT_API_MAX];
    unsigned fail[GMT_API_MAX];
    unsigned cuctx;
    bool complete;
};

typedef void hook_visit_fn(const struct gmt_rec *rec, void *arg);

static inline void hook_read(const char *path, struct hook_counts *c, hook_visit_fn *visit,
                             void *arg)
{
    memset(c, 0, sizeof *c);
    struct gmt_reader *rd = NULL;
    char err[256] = "";
    cr_assert_eq(gmt_reader_open(&rd, path, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    int k;
    while ((k = gmt_reader_next(rd, &ev, err, sizeof err)) == 1) {
        const struct gmt_rec *h = ev.rec;
        unsigned api = h->aux < GMT_API_MAX ? h->aux : 0;
        struct gmt_rec_alloc_ext x;
        if (as_alloc(h, &x))
            c->alloc[x.a.h.aux < GMT_API_MAX ? x.a.h.aux : 0]++;
        else if (h->type == GMT_REC_FREE)
            c->free_[api]++;
        else if (h->type == GMT_REC_ALLOC_FAIL)
            c->fail[api]++;
        else if (h->type == GMT_REC_CUCTX)
            c->cuctx++;
        if (visit)
            visit(h, arg);
    }
    cr_assert_eq(k, 0, "%s", err);
    c->complete = gmt_reader_complete(rd);
    gmt_reader_close(rd);
}

static inline void hook_cleanup(const struct hook_run *r)
{
    if (!r->trace[0])
        return;
    unlink(r->trace);
    char dir[256];
    snprintf(dir, sizeof dir, "%s", r->trace);
    char *slash = strrchr(dir, '/');
    if (slash) {
        *slash = 0;
        rmdir(dir);
    }
}

#endif
