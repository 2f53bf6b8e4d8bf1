/* cmd_run.c: `gpumemtrace run -- COMMAND`: runs a command with the tracer preloaded, then summarises. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
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
    "  -o, --output DIR   output directory (default: a new ./gpumemtrace-YYYYmmdd-HHMMSS)\n"
    "  --lib PATH         the preload library (default: libgpumemtrace.so beside this\n"
    "                     program, or $GPUMEMTRACE_LIB)\n"
    "  -q, --quiet        no summary at the end\n"
    "\n"
    "Environment variables GPUMEMTRACE_* given to run reach the traced processes\n"
    "(GPUMEMTRACE_STACK_DEPTH, GPUMEMTRACE_MEMINFO, ...); GPUMEMTRACE_OUTPUT is set by run.\n"
    "NVTX_INJECTION64_PATH is set to the library too (NVTX ranges become phases in\n"
    "`summary`), unless it is set already: then it is left as it is, with a note.\n";

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
static void closing_alerts(const struct gmt_analysis *a)
{
    const struct gmt_report *rep = &a->rep;
    if (rep->n_fails) {
        const struct gmt_fail_row *f = &rep->fails[0];
        char b1[32], line[512], err[48];
        gmt_stack_line(a, f->stack, 2, line, sizeof line);
        fprintf(stderr, "    %zu allocation(s) failed; the first at %.3f s: %s of %s on device %d, %s, at ",
                rep->n_fails, (double)(f->time - a->t.t_first) / 1e9, gmt_api_name(f->api),
                gmt_fmt_bytes(b1, sizeof b1, f->bytes), f->device,
                gmt_error_text(f->api, f->error, err, sizeof err));
        gmt_fput_safe(stderr, line, strlen(line));
        fputc('\n', stderr);
    }
    for (size_t i = 0; i < rep->n_open; i++) {
        const struct gmt_open_row *r = &rep->open[i];
        fprintf(stderr, "    the trace ends inside %s (thread %u, open since %.3f s)\n",
                gmt_op_name(r->op), r->tid, (double)(r->since - a->t.t_first) / 1e9);
    }
}

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
    gmt_err("gpumemtrace: %zu trace(s) in %s/", n, dir);
    for (size_t i = 0; i < n; i++) {
        struct gmt_analysis a;
        char err[512];
        if (gmt_analyze(&a, files[i], &ro, err, sizeof err)) {
            gmt_err("  %s", err);
            free(files[i]);
            continue;
        }
        const char *base = strrchr(files[i], '/');
        const char *name = base ? base + 1 : files[i];
        fputs("  ", stderr);
        gmt_fput_safe(stderr, name, strlen(name));
        fprintf(stderr, "%*s", strlen(name) < 44 ? (int)(44 - strlen(name)) : 0, "");
        if (a.t.has_proc && a.t.proc.rank >= 0)
            fprintf(stderr, " rank %d", a.t.proc.rank);
        for (size_t d = 0; d < a.rep.n_dev; d++) {
            char b1[32], b2[32];
            if (!a.rep.dev[d].peak)
                continue;
            fprintf(stderr, "  dev %d peak %s", a.rep.dev[d].device,
                    gmt_fmt_bytes(b1, sizeof b1, a.rep.dev[d].peak));
            if (a.rep.dev[d].has_used)
                fprintf(stderr, " (device used %s)", gmt_fmt_bytes(b2, sizeof b2, a.rep.dev[d].used_max));
        }
        uint64_t nccl_first = 0;
        for (size_t c = 0; c < a.rep.n_colls; c++)
            if (a.rep.colls[c].first_tracked > 0)
                nccl_first += (uint64_t)a.rep.colls[c].first_tracked;
        if (nccl_first) {
            char b[32];
            fprintf(stderr, ", NCCL calls added %s", gmt_fmt_bytes(b, sizeof b, nccl_first));
        }
        gmt_err("%s", a.t.complete ? "" : a.t.cut ? "  [cut]" : "  [incomplete]");
        closing_alerts(&a);
        gmt_analysis_free(&a);
        free(files[i]);
    }
    free(files);
    gmt_err("gpumemtrace: details: gpumemtrace summary %s", dir);
}

struct run_args {
    const char *dir, *lib;
    int quiet;
};

static const struct option run_opts[] = {
    {"output", required_argument, 0, 'o'}, {"lib", required_argument, 0, 'l'},
    {"quiet", no_argument, 0, 'q'}, {0, 0, 0, 0}};

static int run_opt(void *ctx, int c, const char *arg)
{
    struct run_args *ra = ctx;
    switch (c) {
    case 'o': ra->dir = arg; break;
    case 'l': ra->lib = arg; break;
    case 'q': ra->quiet = 1; break;
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

/* The output directory (-o's, else one named after the time, in dirbuf), made if new;
 * its absolute path in absdir. 0, or the exit status after saying why not. */
static int make_dir(const char **dir, char *dirbuf, size_t len, char *absdir)
{
    if (!*dir) {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        strftime(dirbuf, len, "gpumemtrace-%Y%m%d-%H%M%S", &tm);
        *dir = dirbuf;
    }
    if (mkdir(*dir, 0755) && errno != EEXIST) {
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
    if (!realpath(*dir, absdir)) {
        gmt_err("gpumemtrace run: %s: %s", *dir, strerror(errno));
        return GMT_EXIT_ERROR;
    }
    return 0;
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
 * -1 when it could not be started. */
static int run_and_wait(char **argv)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        gmt_err("gpumemtrace run: fork: %s", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        execvp(argv[0], argv);
        gmt_err("gpumemtrace run: %s: %s", argv[0], strerror(errno));
        _exit(errno == ENOENT ? 127 : 126);
    }
    /* Ctrl-C reaches the whole foreground group; we wait for the job to finish
     * (it gets the signal too) and then summarise what it left. */
    struct sigaction ign = {.sa_handler = SIG_IGN}, oint, oquit;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &oint);
    sigaction(SIGQUIT, &ign, &oquit);
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
    struct run_args ra = {NULL, NULL, 0};
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
    char lib[PATH_MAX], dirbuf[64], absdir[PATH_MAX];
    const char *dir = ra.dir;
    if ((rc = resolve_lib(ra.lib, lib)) || (rc = make_dir(&dir, dirbuf, sizeof dirbuf, absdir)) ||
        (rc = set_env(lib, absdir)))
        return rc;
    if ((rc = run_and_wait(argv + args.first)) < 0)
        return GMT_EXIT_ERROR;
    if (!ra.quiet)
        short_summary(dir);
    return rc;
}
