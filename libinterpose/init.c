/* init.c: library load and exit: options, crash handlers that flush the trace, fork handling. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "gmt.h"
#include "hooks.h"

/* The fatal signals after which the buffered records would otherwise be lost. */
static const int fatal_signals[] = { SIGSEGV, SIGBUS, SIGABRT, SIGTERM, SIGILL, SIGFPE };
#define NFATAL (sizeof fatal_signals / sizeof fatal_signals[0])

/* What the program had installed before us, per signal: we hand every signal on to it. */
static struct sigaction prev_action[NSIG];
/* gmt.h's hot line: every field's first value (writer closed, the default sampling
 * policy, no library known to be loaded once). */
struct gmt_hot gmt_hot = {
    .meminfo = {GMT_POLICY_FIRST, 2, 0}, /* the default, until the options are read */
    .scope.comm_gen = 1,
    .resolve.single_copy_gen = {~0u, ~0u, ~0u},
};

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

static void fork_child(void)
{
    gmt_writer_fork_child();
}

void gmt_init(void)
{
    int saved = errno;
    /* what runs when the trace file opens: the module map in its preamble, then the
     * background thread */
    gmt_writer_on_open(gmt_modules_write_all, true);
    gmt_writer_on_open(gmt_worker_start, false);
    gmt_options_load();
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

__attribute__((constructor)) static void library_load(void)
{
    gmt_init_once();
}

__attribute__((destructor)) static void library_unload(void)
{
    gmt_graph_exit(); /* while the driver may still answer */
    gmt_writer_finish();
}
