/* cmd_run.c: `gpumemtrace run -- COMMAND`: runs a command with the tracer preloaded, then summarises. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "idnames.h"
#include "jobs.h"
#include "names.h"
#include "reader.h"
#include "report.h"
#include "stacks.h"
#include "util.h"

const char gmt_help_run[] =
    "usage: gpumemtrace run [options] [--] COMMAND [ARGS...]\n"
    "\n"
    "Runs COMMAND with libgpumemtrace.so preloaded (prepended to LD_PRELOAD, so every\n"
    "process it starts is traced too: torchrun's workers, MPI ranks), writes one trace\n"
    "per process that touched CUDA or NCCL into an output directory, passes COMMAND's\n"
    "exit status through, and prints a short summary of the traces at the end.\n"
    "\n"
    "options:\n"
    "  -o, --output DIR   output directory, new or empty (default: a new\n"
    "                     ./gpumemtrace-YYYYmmdd-HHMMSS, -2, -3, ... when taken); one\n"
    "                     that run made is removed again when no trace lands in it\n"
    "  --append           write into -o DIR although it holds traces (the same job's\n"
    "                     other ranks: its job id is taken from them)\n"
    "  --lib PATH         the preload library (default: $GPUMEMTRACE_LIB, else\n"
    "                     libgpumemtrace.so beside this program or in its\n"
    "                     ../lib/gpumemtrace/, as make install lays them out)\n"
    "  -q, --quiet        no summary at the end\n"
    "\n"
    "A plain LD_PRELOAD of the library records the same (the library answers\n"
    "NVTX_INJECTION64_PATH and NCCL_PROFILER_PLUGIN itself); run adds the new directory,\n"
    "a job id of its own and the summary.\n"
    "\n"
    "Environment variables GPUMEMTRACE_* given to run reach the traced processes\n"
    "(GPUMEMTRACE_STACK_DEPTH, GPUMEMTRACE_MEMINFO, ...); run sets GPUMEMTRACE_OUTPUT,\n"
    "GPUMEMTRACE_JOB_ID (recorded in every trace, so that runs never mix) unless given,\n"
    "and NCCL_PROFILER_PLUGIN (to the library, unless already set or\n"
    "GPUMEMTRACE_NCCL_PROFILER=0): NCCL then says which algorithm, protocol and channels\n"
    "each collective ran with; and NVTX_INJECTION64_PATH to the library (NVTX ranges\n"
    "become phases in `summary`) unless it is set already: then it is left, with a note.\n";

/* The library beside the running executable: build/gpumemtrace and build/libgpumemtrace.so,
 * or bin/gpumemtrace and lib/libgpumemtrace.so in an installed tree. */
static int find_lib(char *out, size_t len)
{
    const char *env = getenv("GPUMEMTRACE_LIB");
    if (env && *env) {
        snprintf(out, len, "%s", env);
        return access(out, R_OK) ? -errno : 0;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return -errno;
    exe[n] = 0;
    char *slash = strrchr(exe, '/');
    if (!slash)
        return -ENOENT;
    *slash = 0;
    static const char *const rel[] = {"/libgpumemtrace.so", "/../lib/libgpumemtrace.so",
                                      "/../lib/gpumemtrace/libgpumemtrace.so"};
    for (size_t i = 0; i < sizeof rel / sizeof rel[0]; i++) {
        snprintf(out, len, "%s%s", exe, rel[i]);
        char real[PATH_MAX];
        if (access(out, R_OK) == 0 && realpath(out, real)) {
            snprintf(out, len, "%s", real);
            return 0;
        }
    }
    return -ENOENT;
}


/* What must not go unseen under a line of figures: allocations that failed (the first,
 * with its error and site) and NCCL calls the trace ends inside. */
static void closing_alerts(FILE *o, const struct gmt_analysis *a)
{
    const struct gmt_report *rep = &a->rep;
    if (rep->n_fails) {
        const struct gmt_fail_row *f = &rep->fails[0];
        char b1[32], line[512], err[48];
        gmt_stack_line(a, f->stack, 2, line, sizeof line);
        fprintf(o, "    %zu allocation(s) failed; the first at %.3f s: %s of %s on device %d, %s, at ",
                rep->n_fails, (double)(f->time - a->t.t_first) / 1e9, gmt_api_name(f->api),
                gmt_fmt_bytes(b1, sizeof b1, f->bytes), f->device,
                gmt_error_text(f->api, f->error, err, sizeof err));
        gmt_fput_safe(o, line, strlen(line));
        fputc('\n', o);
    }
    for (size_t i = 0; i < rep->n_open; i++) {
        const struct gmt_open_row *r = &rep->open[i];
        fprintf(o, "    the trace ends inside %s (thread %u, open since %.3f s)\n",
                gmt_op_name(r->op), r->tid, (double)(r->since - a->t.t_first) / 1e9);
    }
}

/* One trace's lines of the closing summary (perhaps in a worker: jobs.h). */
static int short_one(void *ctx, size_t i, const struct gmt_analysis *a, FILE *o, char *err,
                     size_t errlen)
{
    const char *path = a->t.path;
    const char *base = strrchr(path, '/');
    const char *name = base ? base + 1 : path;
    fputs("  ", o);
    gmt_fput_safe(o, name, strlen(name));
    fprintf(o, "%*s", strlen(name) < 44 ? (int)(44 - strlen(name)) : 0, "");
    if (a->t.has_proc && a->t.proc.rank >= 0)
        fprintf(o, " rank %d", a->t.proc.rank);
    for (size_t d = 0; d < a->rep.n_dev; d++) {
        char b1[32], b2[32];
        if (!a->rep.dev[d].peak)
            continue;
        fprintf(o, "  dev %d peak %s", a->rep.dev[d].device,
                gmt_fmt_bytes(b1, sizeof b1, a->rep.dev[d].peak));
        if (a->rep.dev[d].has_used)
            fprintf(o, " (device used %s)", gmt_fmt_bytes(b2, sizeof b2, a->rep.dev[d].used_max));
    }
    uint64_t nccl_first = 0;
    for (size_t c = 0; c < a->rep.n_colls; c++)
        if (a->rep.colls[c].first_tracked > 0)
            nccl_first += (uint64_t)a->rep.colls[c].first_tracked;
    if (nccl_first) {
        char b[32];
        fprintf(o, ", NCCL calls added %s", gmt_fmt_bytes(b, sizeof b, nccl_first));
    }
    fprintf(o, "%s\n", a->t.complete ? "" : a->t.cut ? "  [cut]" : "  [incomplete]");
    closing_alerts(o, a);
    return 0;
}

static int short_take(void *ctx, size_t i, const char *p, size_t len)
{
    fwrite(p, 1, len, stderr);
    return 0;
}

static void short_unread(void *ctx, size_t i, const char *why)
{
    gmt_err("  %s", why);
}

/* The closing summary: a line per trace in dir, on stderr. */
static void short_summary(const char *dir)
{
    char **files;
    size_t n;
    if (gmt_list_traces(dir, &files, &n) || n == 0) {
        gmt_err("gpumemtrace: no traces in %s (no process touched CUDA or NCCL)", dir);
        free(files);
        return;
    }
    struct gmt_report_opts ro;
    gmt_report_opts_init(&ro);
    ro.sites = false; /* one line per trace, no site in it */
    gmt_err("gpumemtrace: %zu trace(s) in %s/", n, dir);
    const struct gmt_jobs J = {.files = files, .n = n, .ro = &ro, .trace = short_one,
                               .take = short_take, .skipped = short_unread};
    struct gmt_jobs_result res;
    int r = gmt_jobs_run(&J, &res);
    if (r)
        gmt_err("gpumemtrace: %s", r == -ENOMEM ? "out of memory" : "a process reading the traces died");
    gmt_free_paths(files, n);
    gmt_err("gpumemtrace: details: gpumemtrace summary %s", dir);
}

struct run_args {
    const char *dir, *lib;
    int quiet, append;
};

static const struct option run_opts[] = {
    {"output", required_argument, 0, 'o'}, {"lib", required_argument, 0, 'l'},
    {"quiet", no_argument, 0, 'q'}, {"append", no_argument, 0, 'a'}, {0, 0, 0, 0}};

static int run_opt(void *ctx, int c, const char *arg)
{
    struct run_args *ra = ctx;
    switch (c) {
    case 'o': ra->dir = arg; break;
    case 'l': ra->lib = arg; break;
    case 'q': ra->quiet = 1; break;
    case 'a': ra->append = 1; break;
    }
    return 0;
}

/* The library to preload: --lib's, else the one beside this program. 0, or the exit
 * status after saying why not. */
static int resolve_lib(const char *lib_arg, char *lib)
{
    if (lib_arg) {
        if (!realpath(lib_arg, lib)) {
            gmt_err("gpumemtrace run: %s: %s", lib_arg, strerror(errno));
            return GMT_EXIT_ERROR;
        }
    } else if (find_lib(lib, PATH_MAX)) {
        gmt_err("gpumemtrace run: libgpumemtrace.so not found beside this program; "
                        "give --lib PATH or set GPUMEMTRACE_LIB");
        return GMT_EXIT_ERROR;
    }
    return 0;
}

/* The number of traces in dir (0 when none or unreadable). */
static size_t traces_in(const char *dir)
{
    char **files = NULL;
    size_t n = 0;
    if (gmt_list_traces(dir, &files, &n))
        return 0;
    for (size_t i = 0; i < n; i++)
        free(files[i]);
    free(files);
    return n;
}

/* The output directory, new for this run: -o's (made if missing; an existing one must
 * hold no trace unless --append), else one named after the time, created exclusively
 * (-2, -3, ... when two runs start in the same second), in dirbuf. Its absolute path in
 * absdir; *made: this run created it. 0, or the exit status after saying why not. */
static int make_dir(const char **dir, char *dirbuf, size_t len, char *absdir, bool append,
                    bool *made_it)
{
    *made_it = false;
    if (!*dir) {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        char stamp[40];
        strftime(stamp, sizeof stamp, "gpumemtrace-%Y%m%d-%H%M%S", &tm);
        int made = -1;
        for (int k = 1; k <= 1000 && made; k++) {
            if (k == 1)
                snprintf(dirbuf, len, "%s", stamp);
            else
                snprintf(dirbuf, len, "%s-%d", stamp, k);
            made = mkdir(dirbuf, 0755);
            if (made && errno != EEXIST) {
                gmt_err("gpumemtrace run: cannot create %s: %s", dirbuf, strerror(errno));
                return GMT_EXIT_ERROR;
            }
        }
        if (made) {
            gmt_err("gpumemtrace run: cannot create a new %s-N: all taken", stamp);
            return GMT_EXIT_ERROR;
        }
        *dir = dirbuf;
        *made_it = true;
    } else if (mkdir(*dir, 0755) == 0) {
        *made_it = true;
    } else if (errno != EEXIST) {
        gmt_err("gpumemtrace run: cannot create %s: %s", *dir, strerror(errno));
        return GMT_EXIT_ERROR;
    }
    /* it may have existed as something else (-o /dev/null, -o a file): traces would
     * then go nowhere, the run would seem to succeed */
    struct stat st;
    const char *why = NULL;
    if (stat(*dir, &st))
        why = strerror(errno);
    else if (!S_ISDIR(st.st_mode))
        why = "not a directory";
    else if (access(*dir, W_OK | X_OK))
        why = strerror(errno);
    if (why) {
        gmt_err("gpumemtrace run: -o %s: %s", *dir, why);
        return GMT_EXIT_ERROR;
    }
    size_t held = traces_in(*dir);
    if (held && !append) {
        gmt_err("gpumemtrace run: -o %s holds %zu trace(s) of an earlier run: give a new "
                "directory, or --append to add this run's", *dir, held);
        return GMT_EXIT_ERROR;
    }
    if (!realpath(*dir, absdir)) {
        gmt_err("gpumemtrace run: %s: %s", *dir, strerror(errno));
        return GMT_EXIT_ERROR;
    }
    return 0;
}

/* GPUMEMTRACE_JOB_ID for the command, unless the user set it: with --append, the job id
 * of a trace already in absdir (its other ranks), else a new one: the time, this pid
 * and random bits, so that two runs never share one. */
static int set_job_id(const char *absdir, bool append)
{
    const char *have = getenv("GPUMEMTRACE_JOB_ID");
    if (have && *have)
        return 0;
    char id[128] = "";
    char **files = NULL;
    size_t n = 0;
    if (append && !gmt_list_traces(absdir, &files, &n)) {
        for (size_t i = 0; i < n; i++) {
            struct gmt_trace t;
            char err[256];
            if (!id[0] && !gmt_trace_load(&t, files[i], err, sizeof err)) {
                const char *v = gmt_trace_env(&t, "GPUMEMTRACE_JOB_ID");
                if (v)
                    snprintf(id, sizeof id, "%s", v);
                gmt_trace_free(&t);
            }
            free(files[i]);
        }
        free(files);
    }
    if (!id[0]) {
        uint64_t rnd = 0;
        FILE *u = fopen("/dev/urandom", "rb");
        if (!u || fread(&rnd, sizeof rnd, 1, u) != 1)
            rnd = (uint64_t)clock() * 0x9e3779b97f4a7c15ull;
        if (u)
            fclose(u);
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        snprintf(id, sizeof id, "%" PRIx64 "-%d-%08" PRIx32, (uint64_t)ts.tv_sec, (int)getpid(),
                 (uint32_t)rnd);
    }
    return setenv("GPUMEMTRACE_JOB_ID", id, 1) ? GMT_EXIT_ERROR : 0;
}

/* NCCL (2.27 on) loads the library once more as its profiler plugin when
 * NCCL_PROFILER_PLUGIN names it: the same object as the preloaded one, recording each
 * collective's algorithm, protocol and channels (docs/nccl-profiler.md). A plugin the
 * user chose is left alone, with one line saying so; GPUMEMTRACE_NCCL_PROFILER=0 sets
 * nothing. 0 or -1. */
static int set_nccl_profiler(const char *lib)
{
    const char *off = getenv("GPUMEMTRACE_NCCL_PROFILER");
    if (off && (!strcmp(off, "0") || !strcasecmp(off, "false") || !strcasecmp(off, "no") ||
                !strcasecmp(off, "off")))
        return 0;
    const char *user = getenv("NCCL_PROFILER_PLUGIN");
    if (user && *user) {
        if (strcmp(user, lib) != 0)
            fprintf(stderr, "gpumemtrace run: NCCL_PROFILER_PLUGIN=%s is set: left as it is, so "
                    "NCCL's algorithm, protocol and channels per collective are not recorded\n",
                    user);
        return 0;
    }
    return setenv("NCCL_PROFILER_PLUGIN", lib, 1);
}

/* The environment the command runs in: the library preloaded (before any the user
 * preloads), its traces written into absdir. 0 or GMT_EXIT_ERROR. */
static int set_env(const char *lib, const char *absdir)
{
    unsetenv("GPUMEMTRACE_LIB"); /* the CLI's own setting, not an option of the library */
    const char *old = getenv("LD_PRELOAD");
    size_t pl = strlen(lib) + (old ? strlen(old) : 0) + 2;
    char *preload = malloc(pl);
    char pattern[PATH_MAX + 32];
    if (!preload)
        return GMT_EXIT_ERROR;
    snprintf(preload, pl, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
    snprintf(pattern, sizeof pattern, "%s/gpumemtrace.%%h.%%p.gmt", absdir);
    int bad = setenv("LD_PRELOAD", preload, 1) || setenv("GPUMEMTRACE_OUTPUT", pattern, 1);
    bad = bad || set_nccl_profiler(lib);
    free(preload);
    /* NVTX loads its injection library by this path: the preloaded one, whose ranges then
     * land in the same trace (docs/phases.md). A tool the user chose keeps its place. */
    const char *nvtx = getenv("NVTX_INJECTION64_PATH");
    if (nvtx && *nvtx)
        gmt_err("gpumemtrace run: NVTX_INJECTION64_PATH is set (%s): left as it is, NVTX ranges "
                "are not traced", nvtx);
    else
        bad = bad || setenv("NVTX_INJECTION64_PATH", lib, 1);
    return bad ? GMT_EXIT_ERROR : 0;
}

/* Runs argv[0..] and waits for it; its exit status (128 + the signal that killed it), or
 * -1 when no process could be made. *started: the command was executed (a pipe closed
 * by the exec tells; the child writes errno into it when the exec failed). */
static int run_and_wait(char **argv, bool *started)
{
    *started = false;
    int ex[2];
    fflush(stdout);
    if (pipe2(ex, O_CLOEXEC)) {
        gmt_err("gpumemtrace run: pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        gmt_err("gpumemtrace run: fork: %s", strerror(errno));
        close(ex[0]);
        close(ex[1]);
        return -1;
    }
    if (pid == 0) {
        close(ex[0]);
        execvp(argv[0], argv);
        int e = errno;
        gmt_err("gpumemtrace run: %s: %s", argv[0], strerror(e));
        (void)!write(ex[1], &e, sizeof e);
        _exit(e == ENOENT ? 127 : 126);
    }
    close(ex[1]);
    /* Ctrl-C reaches the whole foreground group; we wait for the job to finish
     * (it gets the signal too) and then summarise what it left. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, oint, oquit;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &oint);
    sigaction(SIGQUIT, &ign, &oquit);
    int e;
    ssize_t got;
    while ((got = read(ex[0], &e, sizeof e)) < 0 && errno == EINTR)
        ;
    close(ex[0]);
    *started = got == 0;
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    sigaction(SIGINT, &oint, NULL);
    sigaction(SIGQUIT, &oquit, NULL);
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    if (WIFSIGNALED(st))
        gmt_err("gpumemtrace run: %s killed by signal %d (%s)", argv[0], WTERMSIG(st),
                strsignal(WTERMSIG(st)));
    return rc;
}

int gmt_cmd_run(int argc, char **argv)
{
    struct run_args ra = {NULL, NULL, 0, 0};
    struct gmt_args args;
    gmt_args_init(&args);
    /* '+': stop at the first non-option, so the command's own options stay its own */
    const struct gmt_args_spec spec = {
        .cmd = "run", .help = gmt_help_run, .own = run_opts, .own_opt = run_opt, .ctx = &ra,
        .optstring = "+o:q", .unknown = "unknown option"};
    int rc = gmt_args_parse(&spec, argc, argv, &args);
    if (rc >= 0)
        return rc;
    if (args.first >= argc)
        return gmt_cli_usage_error("run", "no command given");
    char lib[PATH_MAX], dirbuf[80], absdir[PATH_MAX];
    const char *dir = ra.dir;
    bool made = false, started = false;
    if (ra.append && !ra.dir)
        return gmt_cli_usage_error("run", "--append wants -o DIR");
    if ((rc = resolve_lib(ra.lib, lib)) ||
        (rc = make_dir(&dir, dirbuf, sizeof dirbuf, absdir, ra.append, &made)))
        return rc;
    if ((rc = set_job_id(absdir, ra.append)) || (rc = set_env(lib, absdir)) ||
        (rc = run_and_wait(argv + args.first, &started)) < 0 || !started) {
        /* a run that failed leaves nothing behind: the directory it made, still empty
         * (rmdir removes nothing else) */
        if (made)
            (void)rmdir(dir);
        return rc < 0 ? GMT_EXIT_ERROR : rc;
    }
    gmt_names_run_dir(dir, ra.quiet);
    if (made && rmdir(dir) == 0) {
        if (!ra.quiet)
            gmt_err("gpumemtrace: no traces (no process touched CUDA or NCCL): %s not kept", dir);
        return rc;
    }
    if (!ra.quiet)
        short_summary(dir);
    return rc;
}
