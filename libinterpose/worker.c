/* worker.c: the library's background thread and its ticks: flushing (the writer's), steering the clock, the periodic device samples and the version notes. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "clock.h"
#include "gmt.h"
#include "sampling.h"
#include "versions.h"
#include "worker.h"
#include "writer_api.h"

static _Atomic int g_worker; /* 0 none, 1 starting/running */

/* A fork child has no worker: the first open there starts its own. */
static void fork_child(void)
{
    atomic_store(&g_worker, 0);
}

__attribute__((constructor)) static void register_fork_child(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}

/*
 * Every flush_ms/2 the writer writes out what is at least that old (gmt_writer_tick). A
 * thread that makes records faster than its buffer holds them for that long (a tight
 * NCCL loop writes ~16 MB/s) would otherwise fill it and flush it itself, in the middle
 * of the program's call, tens of microseconds of write(2) at a time: so the tick also
 * takes any buffer an eighth full, and the worker wakes at once every 250 us after a
 * thread had to flush its own, twice as often while a tick finds a buffer a quarter full
 * and half as often while all stay under an eighth (up to flush_ms/2). The clock is
 * still steered once per flush_ms/2 (clock.c counts on that period).
 */
#define FLUSHER_MIN_PERIOD_NS 250000u

static void *worker_main(void *arg)
{
    (void)arg;
    prctl(PR_SET_NAME, "gpumemtrace", 0, 0, 0);
    uint64_t period_ns = 0, last_clock_tick = 0;
    unsigned long owner_flushes = 0;
    /* sampling.c's periodic device samples: the wake-up comes no later than the next */
    uint64_t sample_wait = UINT64_MAX;
    for (;;) {
        long ms = gmt_opt.flush_ms > 1 ? gmt_opt.flush_ms : 2;
        /* Wake every flush_ms/2 and flush what is at least flush_ms/2 old: a record then
         * waits at most flush_ms (plus scheduling) before it is in the file. */
        uint64_t half_ns = (uint64_t)ms * 500000u;
        if (period_ns == 0 || period_ns > half_ns)
            period_ns = half_ns;
        uint64_t sleep_ns = sample_wait < period_ns ? sample_wait : period_ns;
        struct timespec ts = { (time_t)(sleep_ns / 1000000000u), (long)(sleep_ns % 1000000000u) };
        while (nanosleep(&ts, &ts) && errno == EINTR) {
        }
        int phase = gmt_writer_phase();
        if (phase == GMT_WRITER_DONE)
            break;
        uint64_t now = gmt_now_ns();
        /* the clock's tick: once per flush_ms/2, up to a quarter of it (at most 1 ms)
         * early when the wake-up jitters */
        uint64_t slack = half_ns / 4 < 1000000 ? half_ns / 4 : 1000000;
        if (now - last_clock_tick + slack >= half_ns) {
            gmt_clock_tick();
            last_clock_tick = now = gmt_now_ns();
        }
        if (phase != GMT_WRITER_TAKING)
            continue;
        unsigned fullest = gmt_writer_tick(now, half_ns);
        sample_wait = gmt_sampler_tick(now);
        gmt_version_note_static_runtime();
        unsigned long of = gmt_writer_owner_flushes();
        if (of != owner_flushes) {
            owner_flushes = of;
            period_ns = FLUSHER_MIN_PERIOD_NS;
        } else if (fullest >= 4)
            period_ns = period_ns / 2 > FLUSHER_MIN_PERIOD_NS ? period_ns / 2 : FLUSHER_MIN_PERIOD_NS;
        else if (fullest < 2)
            period_ns = period_ns * 2 < half_ns ? period_ns * 2 : half_ns;
    }
    atomic_store(&g_worker, 0);
    return NULL;
}

void gmt_worker_start(void)
{
    int zero = 0;
    if (!atomic_compare_exchange_strong(&g_worker, &zero, 1))
        return;
    /* The worker must never take the program's signals: it inherits a full mask. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    /* 256 KiB: it also runs the loader and NVML (sampling.c), whose stack use is theirs */
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_t th;
    int rc = pthread_create(&th, &attr, worker_main, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        atomic_store(&g_worker, 0);
        gmt_warn("cannot start the flusher thread (%s): records reach the file only "
                 "when a buffer fills or at exit",
                 strerrordesc_np(rc) ? strerrordesc_np(rc) : "error");
    }
}

