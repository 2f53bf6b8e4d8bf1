/* init.c: library load and exit: options, crash handlers that flush the trace, fork handling. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "gmt.h"
#include "hooks.h"
#include "modules.h"
#include "outfile.h"
#include "worker.h"
#include "writer_api.h"

/* The fatal signals after which the buffered records would otherwise be lost. */
static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGABRT, SIGTERM, SIGILL, SIGFPE };
#define NFATAL (sizeof fatal_signals / sizeof fatal_signals[0])

/* What the program had installed before us, per signal: we hand every signal on to it. */
static struct sigaction prev_action[NSIG];
static _Atomic int atfork_done;

static bool synchronous_fault(int sig, const siginfo_t *si)
{
    /* si_code > 0: the kernel raised it for the faulting instruction, which runs again
     * when the handler returns. */
    return (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) && si &&
           si->si_code > 0;
}

static void on_fatal(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    gmt_writer_flush_all();
    struct sigaction prev = prev_action[sig];
    if (prev.sa_flags & SA_RESETHAND) {
        /* The kernel would have reset the disposition before running it: so do we. */
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigaction(sig, &dfl, NULL);
        prev_action[sig].sa_handler = SIG_DFL;
        prev_action[sig].sa_flags = 0;
    }
    if (prev.sa_flags & SA_SIGINFO) {
        errno = saved;
        prev.sa_sigaction(sig, si, uc);
        return;
    }
    if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
        errno = saved;
        prev.sa_handler(sig);
        return;
    }
    if (prev.sa_handler == SIG_IGN && !synchronous_fault(sig, si)) {
        errno = saved;
        return;
    }
    /* Default action: let it happen exactly as without us. A fault repeats on return and
     * dies with the same address and core; anything else is raised again and delivered
     * as soon as this handler returns and unblocks it. (A fault the program ignored is
     * fatal all the same: the kernel forces the default on ignored faults.) */
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigaction(sig, &dfl, NULL);
    if (!synchronous_fault(sig, si))
        raise(sig);
    errno = saved;
}

static void install_handlers(void)
{
    for (size_t i = 0; i < NFATAL; i++) {
        int sig = fatal_signals[i];
        struct sigaction cur;
        if (sigaction(sig, NULL, &cur) != 0)
            continue;
        /* Called again (tests, or a second init): ours is already there. */
        if ((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == on_fatal)
            continue;
        /* An ignored signal stays ignored, also across exec: not ours to take. */
        if (!(cur.sa_flags & SA_SIGINFO) && cur.sa_handler == SIG_IGN)
            continue;
        prev_action[sig] = cur;
        struct sigaction ours;
        memset(&ours, 0, sizeof ours);
        ours.sa_sigaction = on_fatal;
        /* Keep what changes the program's behaviour around the handler: its mask,
         * restarting of interrupted calls, re-entry. */
        ours.sa_mask = cur.sa_mask;
        ours.sa_flags = SA_SIGINFO | SA_ONSTACK | (cur.sa_flags & (SA_RESTART | SA_NODEFER));
        sigaction(sig, &ours, NULL);
    }
}

/*
 * libunwind (linked in) opens a pipe at its first unwind and keeps it, to test whether an
 * address can be read (it writes a byte from it): the link wraps its pipe2 (--wrap=pipe2)
 * so that, like the trace file, the pipe never takes fd 0, 1 or 2 when the process
 * started with them closed. The name is the linker's convention; the pipe's two fds are
 * libunwind's, kept for the process's life.
 */
int __wrap_pipe2(int fds[2], int flags);
int __wrap_pipe2(int fds[2], int flags)
{
    /* the system call, not __real_pipe2: the test programs link this file without the
     * wrap */
    int rc = (int)syscall(SYS_pipe2, fds, flags | O_CLOEXEC);
    if (rc != 0 || (fds[0] > 2 && fds[1] > 2))
        return rc;
    int hi[2] = { gmt_fd_above_stdio(fds[0]), gmt_fd_above_stdio(fds[1]) };
    if (hi[0] < 0 || hi[1] < 0) {
        int e = errno;
        if (hi[0] >= 0)
            close(hi[0]);
        if (hi[1] >= 0)
            close(hi[1]);
        errno = e;
        return -1;
    }
    fds[0] = hi[0];
    fds[1] = hi[1];
    return 0;
}

static void fork_child(void)
{
    gmt_writer_fork_child();
}

static char self_path[PATH_MAX];

const char *gmt_self_path(void)
{
    return self_path;
}

/* The loader's name for this object: the LD_PRELOAD entry as written, which may be
 * relative; made absolute now, while the working directory is the one it was written
 * against. */
static void find_self(void)
{
    Dl_info info;
    if (!dladdr((void *)find_self, &info) || !info.dli_fname || !info.dli_fname[0])
        return;
    const char *f = info.dli_fname;
    char *real = realpath(f, self_path); /* into PATH_MAX bytes of ours */
    if (real)
        return;
    size_t at = 0;
    if (f[0] != '/') {
        if (!getcwd(self_path, sizeof self_path)) {
            self_path[0] = 0;
            return;
        }
        at = strlen(self_path);
        if (at + 1 < sizeof self_path)
            self_path[at++] = '/';
    }
    size_t n = strlen(f);
    if (at + n >= sizeof self_path) {
        self_path[0] = 0;
        return;
    }
    memcpy(self_path + at, f, n + 1);
}

void gmt_init(void)
{
    int saved = errno;
    /* what runs when the trace file opens: the module map in its preamble, then the
     * background thread */
    gmt_writer_on_open(gmt_modules_write_all, true);
    gmt_writer_on_open(gmt_worker_start, false);
    gmt_options_load();
    if (!self_path[0])
        find_self();
    /* Also when off: the exec hooks call through whatever the options say. */
    gmt_exec_resolve();
    if (!gmt_opt.off) {
        gmt_clock_init();
        install_handlers();
        int zero = 0;
        if (atomic_compare_exchange_strong(&atfork_done, &zero, 1))
            pthread_atfork(NULL, NULL, fork_child);
    }
    errno = saved;
}

/* Once per process, by whoever comes first: our constructor, or a hook reached before
 * it ran (a constructor of a library loaded before us that calls cudaMalloc; -z
 * initfirst makes that rare, not impossible). Options must be read before the first
 * decision about tracing. */
static _Atomic int init_state; /* 0 not yet, 1 running, 2 done */

void gmt_init_once(void)
{
    if (GMT_LIKELY(atomic_load_explicit(&init_state, memory_order_acquire) == 2))
        return;
    int zero = 0;
    if (atomic_compare_exchange_strong(&init_state, &zero, 1)) {
        gmt_init();
        atomic_store_explicit(&init_state, 2, memory_order_release);
        return;
    }
    while (atomic_load_explicit(&init_state, memory_order_acquire) != 2)
        sched_yield();
}

/* The writer's first record may come before the constructor ran. */
GMT_WRITER_BEFORE_OPEN(init_before_open, gmt_init_once);

__attribute__((constructor)) static void library_load(void)
{
    gmt_init_once();
}

__attribute__((destructor)) static void library_unload(void)
{
    gmt_graph_exit(); /* while the driver may still answer */
    gmt_writer_finish();
}
