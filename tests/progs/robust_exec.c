/* robust_exec.c: exec in its forms and situations (fork child, other threads, busy threads, vfork, signal handler, a missing program): the old image's records and END must be in its trace, and a failed exec must leave the call's result and tracing as they were. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_cuda.h"

extern char **environ;

static const char *self;

static void alloc_n(int n)
{
    for (int i = 0; i < n; i++) {
        void *p;
        if (cudaMalloc(&p, 4096u * (unsigned)(i + 1)) != 0)
            exit(4);
    }
}

/* argv[0] of the new image: "done", which prints its mark and exits. */
static char *done_argv[] = { "robust_exec", "done", NULL };

/* An environment with ROBUST_EXEC_ENV=1 added: the forms that take envp pass it on. */
static char **env_plus(void)
{
    static char *env[512];
    int n = 0;
    for (char **e = environ; *e && n < 510; e++)
        env[n++] = *e;
    env[n++] = "ROBUST_EXEC_ENV=1";
    env[n] = NULL;
    return env;
}

/* exec self in form `how`; returns only when it failed. */
static int exec_self(const char *how)
{
    const char *base = strrchr(self, '/') ? strrchr(self, '/') + 1 : self;
    if (!strcmp(how, "execve"))
        return execve(self, done_argv, env_plus());
    if (!strcmp(how, "execv"))
        return execv(self, done_argv);
    if (!strcmp(how, "execvp"))
        return execvp(base, done_argv); /* found through PATH */
    if (!strcmp(how, "execvpe"))
        return execvpe(base, done_argv, env_plus());
    if (!strcmp(how, "execl"))
        return execl(self, "robust_exec", "done", (char *)NULL);
    if (!strcmp(how, "execlp"))
        return execlp(base, "robust_exec", "done", (char *)NULL);
    if (!strcmp(how, "execle"))
        return execle(self, "robust_exec", "done", (char *)NULL, env_plus());
    if (!strcmp(how, "fexecve")) {
        int fd = open(self, O_RDONLY | O_CLOEXEC);
        return fd < 0 ? -1 : fexecve(fd, done_argv, env_plus());
    }
    if (!strcmp(how, "execveat"))
        return execveat(AT_FDCWD, self, done_argv, env_plus(), 0);
    errno = EINVAL;
    return -1;
}

static int wait_child(pid_t pid)
{
    int st = 0;
    if (waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static atomic_int parked, release_;

static void *other_thread(void *arg)
{
    (void)arg;
    alloc_n(50);
    atomic_store(&parked, 1);
    while (!atomic_load(&release_))
        usleep(1000);
    return NULL;
}

static atomic_long spins;

static void *spinner(void *arg)
{
    (void)arg;
    for (;;) {
        void *p;
        cudaMalloc(&p, 256);
        atomic_fetch_add(&spins, 1);
    }
    return NULL;
}

static void exec_from_handler(int sig)
{
    (void)sig;
    execv(self, done_argv);
    _exit(3);
}

int main(int argc, char **argv)
{
    self = argv[0];
    if (argc < 2)
        return 2;
    const char *mode = argv[1];
    if (!strcmp(mode, "done")) {
        printf("done%s\n", getenv("ROBUST_EXEC_ENV") ? " env" : "");
        return 0;
    }
    /* the p forms find this program through PATH */
    char path[4096];
    const char *slash = strrchr(self, '/');
    snprintf(path, sizeof path, "%.*s:%s", slash ? (int)(slash - self) : 1, slash ? self : ".",
             getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    setenv("PATH", path, 1);
    /* off: the same calls with GPUMEMTRACE_OFF=1 (the image is started again with it) */
    if (!strcmp(mode, "off")) {
        if (!getenv("GPUMEMTRACE_OFF")) {
            setenv("GPUMEMTRACE_OFF", "1", 1);
            execv(self, argv);
            return 3;
        }
        alloc_n(1);
        int rc = execv("/nonexistent/robust-exec-missing", done_argv);
        printf("rc=%d errno=%d\n", rc, errno);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            alloc_n(10);
            exec_self("execle");
            _exit(3);
        }
        return wait_child(pid);
    }
    /* fork FORM: the child makes 100 records and execs itself in that form */
    if (!strcmp(mode, "fork") && argc > 2) {
        alloc_n(1);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            alloc_n(100);
            exec_self(argv[2]);
            _exit(3);
        }
        return wait_child(pid);
    }
    /* missing: exec of what does not exist, or can't be run, fails as without the library */
    if (!strcmp(mode, "missing")) {
        alloc_n(1);
        errno = 0;
        int rc = execv("/nonexistent/robust-exec-missing", done_argv);
        int e1 = errno;
        errno = 0;
        int rc2 = execl("/", "robust_exec", "done", (char *)NULL);
        int e2 = errno;
        errno = 0;
        int rc3 = execvp("robust-exec-missing-in-path", done_argv);
        int e3 = errno;
        alloc_n(1);
        printf("rc=%d errno=%d rc=%d errno=%d rc=%d errno=%d\n", rc, e1, rc2, e2, rc3, e3);
        return 0;
    }
    /* threads: another thread's records are still in its buffer when main execs */
    if (!strcmp(mode, "threads")) {
        pthread_t t;
        pthread_create(&t, NULL, other_thread, NULL);
        while (!atomic_load(&parked))
            usleep(1000);
        alloc_n(50);
        exec_self("execv");
        return 3;
    }
    /* busy: two threads allocate without pause, with buffers small enough that they
     * flush their own, while main execs */
    if (!strcmp(mode, "busy")) {
        if (!getenv("GPUMEMTRACE_FLUSH_BYTES")) {
            setenv("GPUMEMTRACE_FLUSH_BYTES", "4096", 1);
            execv(self, argv);
            return 3;
        }
        pthread_t t[2];
        for (int i = 0; i < 2; i++)
            pthread_create(&t[i], NULL, spinner, NULL);
        while (atomic_load(&spins) < 20000)
            usleep(1000);
        exec_self("execv");
        return 3;
    }
    /* vfork: the child's exec must not write END into the parent's file */
    if (!strcmp(mode, "vfork")) {
        alloc_n(10);
        fflush(NULL);
        pid_t pid = vfork();
        if (pid == 0) {
            execv(self, done_argv);
            _exit(3);
        }
        int st = wait_child(pid);
        alloc_n(10);
        return st;
    }
    /* signal: exec from a signal handler */
    if (!strcmp(mode, "signal")) {
        alloc_n(20);
        signal(SIGUSR1, exec_from_handler);
        raise(SIGUSR1);
        return 3;
    }
    return 2;
}
