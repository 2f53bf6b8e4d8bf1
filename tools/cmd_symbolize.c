/* cmd_symbolize.c: `gpumemtrace symbolize TRACE|DIR...`: names each trace's native frames here, beside it, in parallel. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "names.h"
#include "pack.h"
#include "util.h"

const char gmt_help_symbolize[] =
    "usage: gpumemtrace symbolize [options] TRACE|DIR...\n"
    "\n"
    "On the host where the traces were made, resolves every native frame their stacks\n"
    "hold (function, file:line, inlined frames) from the binaries there, checked by\n"
    "build-id, and writes the names beside each trace (TRACE.gmt.names). Every command\n"
    "then reads them first, so the traces read the same on a machine without those\n"
    "binaries (docs/names.md). `gpumemtrace run` does this at its end; run it yourself\n"
    "after a job traced with a plain LD_PRELOAD, or one cut by a crash or a kill.\n"
    "Traces are named in parallel, one worker per core.\n"
    "\n"
    "options:\n"
    "  --force            name again traces whose names are up to date\n"
    "  -v, --verbose      a line per trace: frames, modules, size, what was not named\n"
    "  --debug-dir DIR    more places for binaries and debug files, by path, base name\n"
    "                     and build-id (DIR/.build-id/xx/rest[.debug]) (repeatable)\n"
    "\n"
    "A module whose file is missing here or is another build than the one that ran\n"
    "(its build-id differs) is not named; the line for its trace says so.\n";

struct sym_args {
    bool force, verbose;
};

static const struct option sym_opts[] = {
    {"force", no_argument, 0, 'f'}, {"verbose", no_argument, 0, 'v'}, {0, 0, 0, 0}};

static int sym_opt(void *ctx, int c, const char *arg)
{
    (void)arg;
    struct sym_args *sa = ctx;
    if (c == 'f')
        sa->force = true;
    else if (c == 'v')
        sa->verbose = true;
    return 0;
}

/* One trace's outcome, as a worker leaves it in memory it shares with the parent. */
struct slot {
    int done;                  /* 1 named, -1 failed */
    double secs;
    struct gmt_names_made made;
    char err[512];
};

#define MAX_WORKERS 32

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void name_one(char **files, size_t i, const char *const *dirs, bool force, struct slot *s)
{
    double t0 = now_s();
    s->done = gmt_names_make(files[i], dirs, force, &s->made, s->err, sizeof s->err) ? -1 : 1;
    s->secs = now_s() - t0;
}

static void print_one(FILE *out, const char *path, const struct slot *s, bool verbose)
{
    char b1[32];
    if (s->done < 0) {
        gmt_err("gpumemtrace: symbolize: %s", s->err[0] ? s->err : "worker died");
        return;
    }
    const struct gmt_names_made *m = &s->made;
    if (verbose) {
        fputs("  ", out);
        gmt_fput_safe(out, path, strlen(path));
        if (m->fresh)
            fprintf(out, ": names up to date (%s)\n", gmt_fmt_bytes(b1, sizeof b1, m->bytes));
        else
            fprintf(out, ": %llu addresses, %llu frames in %u module(s), %s (%.1f %% of the "
                    "trace), %.2f s\n", (unsigned long long)m->addresses,
                    (unsigned long long)m->frames, m->modules,
                    gmt_fmt_bytes(b1, sizeof b1, m->bytes),
                    m->trace_bytes ? 100.0 * (double)m->bytes / (double)m->trace_bytes : 0.0,
                    s->secs);
    }
    if (m->unnamed && !m->fresh) {
        if (verbose)
            fputs("      not named: ", out);
        else {
            fputs("  ", out);
            gmt_fput_safe(out, path, strlen(path));
            fputs(": not named: ", out);
        }
        gmt_fput_safe(out, m->unnamed_list, strlen(m->unnamed_list));
        fputc('\n', out);
    }
}

long gmt_names_make_all(char **files, size_t n, const char *const *debug_dirs, bool force,
                        bool verbose, FILE *out)
{
    if (!n)
        return 0;
    double t0 = now_s();
    size_t bytes = n * sizeof(struct slot);
    struct slot *slots = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (slots == MAP_FAILED)
        return -1;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t k = cores > 1 ? (size_t)cores : 1;
    if (k > n)
        k = n;
    if (k > MAX_WORKERS)
        k = MAX_WORKERS;
    pid_t pid[MAX_WORKERS];
    size_t started = 0;
    if (k > 1) {
        fflush(NULL);
        for (size_t w = 0; w < k; w++) {
            pid_t p = fork();
            if (p < 0)
                break;
            if (p == 0) {
                for (size_t i = w; i < n; i += k)
                    name_one(files, i, debug_dirs, force, &slots[i]);
                _exit(0);
            }
            pid[started++] = p;
        }
        for (size_t w = 0; w < started; w++)
            while (waitpid(pid[w], NULL, 0) < 0 && errno == EINTR)
                ;
    }
    /* what no worker did (one core, a fork that failed, a worker that died): here */
    for (size_t i = 0; i < n; i++)
        if (!slots[i].done && (started == 0 || i % k >= started))
            name_one(files, i, debug_dirs, force, &slots[i]);
    long failed = 0;
    uint64_t addrs = 0, frames = 0, nbytes = 0, tbytes = 0;
    size_t named = 0, fresh = 0;
    for (size_t i = 0; i < n; i++) {
        print_one(out, files[i], &slots[i], verbose);
        if (slots[i].done != 1) {
            failed++;
            continue;
        }
        if (slots[i].made.fresh) {
            fresh++;
            continue;
        }
        named++;
        addrs += slots[i].made.addresses;
        frames += slots[i].made.frames;
        nbytes += slots[i].made.bytes;
        tbytes += slots[i].made.trace_bytes;
    }
    char b1[32];
    if (!named && !fresh) {
        munmap(slots, bytes);
        return failed;
    }
    fprintf(out, "gpumemtrace: names for %zu trace(s) written beside them: %llu addresses, %llu "
            "frames, %s (%.1f %% of the traces), %.2f s", named, (unsigned long long)addrs,
            (unsigned long long)frames, gmt_fmt_bytes(b1, sizeof b1, nbytes),
            tbytes ? 100.0 * (double)nbytes / (double)tbytes : 0.0, now_s() - t0);
    if (fresh)
        fprintf(out, "; %zu up to date", fresh);
    fputc('\n', out);
    munmap(slots, bytes);
    return failed;
}

void gmt_names_run_dir(const char *dir, bool quiet)
{
    char **files;
    size_t n;
    if (gmt_list_traces(dir, &files, &n) || !n)
        return;
    FILE *sink = quiet ? fopen("/dev/null", "w") : NULL;
    if (gmt_names_make_all(files, n, NULL, false, false, sink ? sink : stderr) < 0)
        gmt_err("gpumemtrace: out of memory: traces not named");
    if (sink)
        fclose(sink);
    gmt_free_paths(files, n);
}

int gmt_cmd_symbolize(int argc, char **argv)
{
    struct sym_args sa = {false, false};
    struct gmt_args args;
    gmt_args_init(&args);
    const struct gmt_args_spec spec = {
        .cmd = "symbolize", .help = gmt_help_symbolize, .shared = GMT_ARGS_DEBUG_PATHS,
        .own = sym_opts, .own_opt = sym_opt, .ctx = &sa, .optstring = "v",
        .unknown = "unknown option"};
    int rc = gmt_args_parse(&spec, argc, argv, &args);
    if (rc >= 0)
        return rc;
    if (args.first >= argc)
        return gmt_cli_usage_error("symbolize", "no trace given");
    for (int i = args.first; i < argc; i++)
        if (gmt_pack_is(argv[i])) {
            gmt_err("gpumemtrace: symbolize: %s is a pack, which is never written to: name the "
                    "traces in their directory, then pack it", argv[i]);
            return GMT_EXIT_ERROR;
        }
    char **files;
    size_t n;
    if (gmt_safe_stdout())
        return GMT_EXIT_ERROR;
    int status = gmt_args_traces(&args, argc, argv, &files, &n);
    if (status < 0)
        return GMT_EXIT_ERROR;
    long failed = gmt_names_make_all(files, n,
                                     args.ro.n_debug_paths ? args.ro.debug_paths : NULL,
                                     sa.force, sa.verbose, stdout);
    gmt_free_paths(files, n);
    if (failed < 0) {
        gmt_err("gpumemtrace: out of memory");
        return GMT_EXIT_ERROR;
    }
    return failed || status ? GMT_EXIT_ERROR : GMT_EXIT_OK;
}
