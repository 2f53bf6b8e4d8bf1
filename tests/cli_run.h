/* cli_run.h: for suites that run the CLI and other programs: one run with its stdout, stderr and status captured; temporary files and directories. */
#ifndef GMT_CLI_RUN_H
#define GMT_CLI_RUN_H

#include <criterion/criterion.h>
#include <fcntl.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct result {
    int status;                /* exit status, or 128 + signal */
    char out[1 << 17];
    char err[8192];
};

/* BUILD/tests/test_x -> BUILD: the build the suite belongs to, whose CLI (and
 * sanitizers) it runs. */
static inline const char *cli_build_dir(void)
{
    static char dir[PATH_MAX];
    if (!dir[0]) {
        char exe[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        cr_assert_gt(n, 0);
        exe[n] = 0;
        snprintf(dir, sizeof dir, "%s", dirname(dirname(exe)));
    }
    return dir;
}

/* Everything fd holds, from its start, into buf (NUL-terminated, cut at cap - 1); fd is
 * closed. */
static inline void cli_slurp(int fd, char *buf, size_t cap)
{
    size_t n = 0;
    ssize_t k;
    lseek(fd, 0, SEEK_SET);
    while (n + 1 < cap && (k = read(fd, buf + n, cap - 1 - n)) > 0)
        n += (size_t)k;
    buf[n] = 0;
    close(fd);
}

/* A temporary file already unlinked, open for reading and writing. */
static inline int cli_tmpfd(void)
{
    char p[] = "/tmp/gmt-test-run-XXXXXX";
    int fd = mkstemp(p);
    cr_assert_geq(fd, 0);
    unlink(p);
    return fd;
}

/* How a run is set up; all optional. */
struct cli_io {
    const char *const *env;    /* "NAME=VALUE" sets, "NAME" unsets; NULL-terminated */
    const char *out;           /* stdout into this file (created or truncated), not res->out */
    const char *in;            /* stdin from this file */
    unsigned timeout_s;        /* then SIGALRM ends it (status 142), not a stuck suite; 0: none */
};

/*
 * Runs argv[0] with argv and waits: argv[0] is "gpumemtrace" for the build's CLI, a path,
 * or a program looked up on PATH. GITHUB_ACTIONS is unset unless io->env sets it again,
 * since the suites may run inside GitHub Actions, where `check` then writes annotations.
 */
static inline void cli_exec(struct result *res, const struct cli_io *io, const char *const *argv)
{
    static const struct cli_io none;
    if (!io)
        io = &none;
    char cli[PATH_MAX + 16];
    const char *prog = argv[0];
    if (!strcmp(prog, "gpumemtrace")) {
        snprintf(cli, sizeof cli, "%s/gpumemtrace", cli_build_dir());
        cr_assert_eq(access(cli, X_OK), 0, "%s not built", cli);
        prog = cli;
    }
    int ofd = io->out ? open(io->out, O_WRONLY | O_CREAT | O_TRUNC, 0644) : cli_tmpfd();
    int efd = cli_tmpfd();
    cr_assert_geq(ofd, 0, "%s", io->out);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        unsetenv("GITHUB_ACTIONS");
        for (size_t i = 0; io->env && io->env[i]; i++) {
            if (strchr(io->env[i], '='))
                putenv((char *)io->env[i]);
            else
                unsetenv(io->env[i]);
        }
        if (io->in) {
            int ifd = open(io->in, O_RDONLY);
            if (ifd < 0 || dup2(ifd, 0) < 0)
                _exit(126);
        }
        if (dup2(ofd, 1) < 0 || dup2(efd, 2) < 0)
            _exit(126);
        if (io->timeout_s)
            alarm(io->timeout_s);
        if (strchr(prog, '/'))
            execv(prog, (char *const *)argv);
        else
            execvp(prog, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    res->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    res->out[0] = 0;
    if (io->out)
        close(ofd);
    else
        cli_slurp(ofd, res->out, sizeof res->out);
    cli_slurp(efd, res->err, sizeof res->err);
}

/* `gpumemtrace ARGS...` with io (NULL: none). */
#define CLI_RUN(res, io, ...) \
    cli_exec((res), (io), (const char *const[]){"gpumemtrace", __VA_ARGS__, NULL})

/* ---- files and directories ---- */

#define CLI_MAX_DIRS 16
static char cli_dirs[CLI_MAX_DIRS][64];
static int cli_n_dirs;

/* A new directory under /tmp (at most CLI_MAX_DIRS per test). */
static inline char *cli_tmpdir(void)
{
    cr_assert_lt(cli_n_dirs, CLI_MAX_DIRS);
    char *d = cli_dirs[cli_n_dirs++];
    snprintf(d, sizeof cli_dirs[0], "/tmp/gmt-test-run-XXXXXX");
    cr_assert_not_null(mkdtemp(d));
    return d;
}

static inline int cli_rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f)
{
    return remove(p);
}

/* d and everything below it, gone (symbolic links are not followed). */
static inline void cli_rmtree(const char *d)
{
    nftw(d, cli_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Every directory cli_tmpdir made, removed: a suite's .fini. */
static inline void cli_tmpdirs_remove(void)
{
    for (int i = 0; i < cli_n_dirs; i++)
        cli_rmtree(cli_dirs[i]);
    cli_n_dirs = 0;
}

/* A whole text file (up to 1 MiB) in a buffer that the next call reuses. */
static inline const char *cli_read_file(const char *path)
{
    static char buf[1 << 20];
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return buf;
}

/* ---- counting in outputs ---- */

static inline int lines(const char *s)
{
    int n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static inline int count_of(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)); p += strlen(what))
        n++;
    return n;
}

#endif
