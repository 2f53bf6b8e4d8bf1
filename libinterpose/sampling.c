/* sampling.c: device-memory samples (MEMINFO): around NCCL calls as GPUMEMTRACE_MEMINFO asks, and outside them (a device's first allocation, failures, the periodic and exit samples), each with the context's limits beside it (DEVLIMITS). */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "nvml.h"
#include "sampling.h"
#include "driver.h"
#include "intern.h"
#include "writer_api.h"

/* Calls seen per (comm, op, bytes), for the sampling policy. */
#define COUNT_SLOTS 4096
static _Atomic uint64_t count_keys[COUNT_SLOTS];
static _Atomic uint32_t count_vals[COUNT_SLOTS];

static uint64_t meminfo_key(uint64_t comm, unsigned op, uint64_t bytes);

int gmt_sample_count(uint64_t comm, unsigned op, uint64_t bytes)
{
    uint64_t key = gmt_mix(meminfo_key(comm, op, bytes));
    long i = gmt_key_slot(count_keys, COUNT_SLOTS, (uint32_t)key, key, GMT_KEY_CLAIM);
    if (i < 0)
        return 0;
    /* Past the first N with no every:K the answer is no for good: a plain load, no
     * locked increment (the count stays at N, where every later call finds it). */
    if (!gmt_hot.meminfo.every && atomic_load_explicit(&count_vals[i], memory_order_relaxed) >= gmt_hot.meminfo.first)
        return -1;
    uint32_t n = atomic_fetch_add_explicit(&count_vals[i], 1, memory_order_relaxed);
    if (n < gmt_hot.meminfo.first)
        return 1;
    return gmt_hot.meminfo.every && (n - gmt_hot.meminfo.first + 1) % gmt_hot.meminfo.every == 0;
}

static uint64_t meminfo_key(uint64_t comm, unsigned op, uint64_t bytes)
{
    return gmt_mix(gmt_mix(comm) ^ ((uint64_t)op << 56) ^ gmt_mix(bytes + 0x9e3779b97f4a7c15ull));
}


/* ---- the context's limits and the multiprocessor shape, beside each sample ----
 * (DEVLIMITS), so the CLI can name the memory they hold. */

/*
 * Why here and not per event: the driver grows the stack limit by itself when a kernel
 * needing more local memory is first launched, and nothing the program calls says so.
 * The limit can only be read, so it is read where device used is read: three
 * cuCtxGetLimit calls (tens of ns) beside a cuMemGetInfo of several microseconds, on the
 * sampling thread, whose context is the one the sample measured. The multiprocessor
 * shape never changes: asked once per device, kept here.
 */
static _Atomic uint64_t shape_of[GMT_SAMPLE_DEVICES]; /* sms << 32 | threads per SM; 0 not asked */

static uint64_t sm_shape(int device)
{
    if ((unsigned)device >= GMT_SAMPLE_DEVICES)
        return 0;
    uint64_t v = atomic_load_explicit(&shape_of[device], memory_order_relaxed);
    if (v)
        return v;
    uint32_t sms = 0, tps = 0;
    /* a device that does not answer is asked again at its next sample, and says 0 now */
    if (gmt_driver_sm_shape(device, &sms, &tps) != 0)
        return 0;
    v = (uint64_t)sms << 32 | tps;
    atomic_store_explicit(&shape_of[device], v, memory_order_relaxed);
    return v;
}

/* A DEVLIMITS record after a cuMemGetInfo MEMINFO of `device` made on this thread, when
 * the thread's current context is on that device. */
static void limits_after_sample(uint32_t scope_id, int device, enum gmt_meminfo_phase phase)
{
    int e = gmt_lib_enter();
    uint64_t lim[3];
    /* another device's sample was taken in its primary context, pushed for the moment:
     * the current context's limits are not that device's */
    bool ok = gmt_driver_current_device() == device && gmt_driver_limits(lim) == 0;
    uint64_t shape = ok ? sm_shape(device) : 0;
    gmt_lib_leave(e);
    if (!ok)
        return;
    struct gmt_rec_devlimits r;
    memset(&r, 0, sizeof r);
    r.h = (struct gmt_rec){.type = GMT_REC_DEVLIMITS, .aux = (uint16_t)phase,
                           .size = gmt_rec_padded(sizeof r)};
    r.device = device;
    r.scope_id = scope_id;
    r.stack_bytes = lim[0];
    r.printf_fifo_bytes = lim[1];
    r.malloc_heap_bytes = lim[2];
    r.sm_count = (uint32_t)(shape >> 32);
    r.max_threads_per_sm = (uint32_t)shape;
    gmt_emit(&r, 0);
}

/* A MEMINFO record; with process_b (this process's bytes, the other processes' bytes,
 * their count and the pid of the largest: NVML's), the extended one. */
static void emit_sample(uint32_t scope_id, int device, enum gmt_meminfo_phase phase,
                        enum gmt_meminfo_source src, uint64_t free_b, uint64_t total_b,
                        const uint64_t *process_b)
{
    struct gmt_rec_meminfo_ext2 r;
    memset(&r, 0, sizeof r);
    size_t size = process_b ? sizeof r : sizeof r.x.m;
    r.x.m.h = (struct gmt_rec){.type = GMT_REC_MEMINFO, .aux = (uint16_t)phase,
                               .size = gmt_rec_padded(size)};
    r.x.m.scope_id = scope_id;
    r.x.m.device = device;
    r.x.m.source = src;
    r.x.m.free_bytes = free_b;
    r.x.m.total_bytes = total_b;
    if (process_b) {
        r.x.process_bytes = process_b[0];
        r.other_bytes = process_b[1];
        r.other_count = (uint32_t)process_b[2];
        r.other_pid = (uint32_t)process_b[3];
    }
    gmt_emit(&r, offsetof(struct gmt_rec_meminfo, dt));
}

void gmt_sample(uint32_t scope_id, int device, enum gmt_meminfo_phase phase)
{
    uint64_t f, t;
    int e = gmt_lib_enter(); /* the driver's calls may set errno */
    int rc = gmt_driver_meminfo(device, &f, &t);
    gmt_lib_leave(e);
    if (rc == 0) {
        emit_sample(scope_id, device, phase, GMT_MEMINFO_SRC_CUMEMGETINFO, f, t, NULL);
        limits_after_sample(scope_id, device, phase);
    }
}

/*
 * ---- around explicit module loads ----
 * cuModuleLoad* and cuLibraryLoad* put code and data on the device that no allocation
 * call shows. On the loading thread, whose context is current, cuMemGetInfo right before
 * and right after (relaxed capture mode, as the other samples of that thread), then one
 * MODLOAD record: two samples per load, about 12 us on an H200. Loads are rare (a
 * program's own modules, a library's at its first use); the lazily loaded kernels of a
 * first launch go through no such call and are not sampled here.
 */
void gmt_modload_before(struct gmt_modload_mark *m)
{
    m->ok = false;
    if (!gmt_writer_ready())
        return;
    int e = gmt_lib_enter();
    int dev = gmt_driver_current_device();
    m->device = dev;
    m->ok = dev >= 0 && dev < GMT_SAMPLE_DEVICES && gmt_driver_meminfo_here(dev, &m->free_b, &m->total_b) == 0;
    gmt_lib_leave(e);
    m->t0 = gmt_now_ns();
}

void gmt_modload_after(const struct gmt_modload_mark *m, enum gmt_modload_api api, int result, uint64_t handle)
{
    if (!m->ok)
        return;
    uint64_t f, t;
    int e = gmt_lib_enter();
    int rc = gmt_driver_meminfo_here(m->device, &f, &t);
    gmt_lib_leave(e);
    if (rc != 0)
        return;
    uint64_t now = gmt_now_ns();
    uint64_t took = now > m->t0 ? now - m->t0 : 0;
    struct gmt_rec_modload r = {
        .h = {.type = GMT_REC_MODLOAD, .aux = (uint16_t)api, .size = sizeof r},
        .time_ns = now,
        .duration = took > UINT32_MAX ? UINT32_MAX : (uint32_t)took,
        .device = m->device,
        .result = result,
        .scope_id = gmt_current_scope(),
        .free_before = m->free_b,
        .free_after = f,
        .total_bytes = t,
        .handle = handle,
    };
    gmt_emit(&r, 0);
}
_Static_assert(sizeof(struct gmt_rec_modload) % GMT_ALIGN == 0, "MODLOAD needs no padding");

/*
 * ---- samples outside NCCL calls ----
 *
 * A program that makes no NCCL call (plain CUDA, PyTorch or JAX on one GPU) would
 * otherwise have no device-used figure at all. Who samples, and how:
 * - FIRST, after a device's first allocation, and FAIL, after an allocation failed: on
 *   the allocating thread, whose context is current, with cuMemGetInfo (one call, in
 *   relaxed capture mode). The device's PCI bus id is asked there too, once: the flusher
 *   must not call CUDA, and NVML knows devices by bus id, not by CUDA's ordinals (which
 *   CUDA_VISIBLE_DEVICES and CUDA_DEVICE_ORDER renumber).
 * - PERIODIC: the flusher (worker.c) calls gmt_sampler_tick at each wake-up; every
 *   GPUMEMTRACE_SAMPLE_MS it asks NVML about each device that had an allocation. No
 *   NVML, no periodic samples: the flusher has no context, and borrowing the device's
 *   primary context (retain, push, cuMemGetInfo, pop, release) could create one when the
 *   program releases it at the same moment, or run during the program's CUDA teardown.
 * - EXIT: at exit, before the writer's END, one NVML sample per device, on the exiting
 *   thread. Never a CUDA call at exit.
 * The sampler lock (`busy`) is held by whoever calls NVML; at_exit takes it for good, so
 * nothing calls NVML once the process exits (its destructor may have run by the time our
 * library's does).
 */
_Atomic uint64_t gmt_sample_seen;
static _Atomic uint64_t dev_claimed;     /* bit d: a thread took device d's first allocation */
static _Atomic uint64_t dev_has_bus;     /* bit d: dev_bus[d] holds its PCI bus id */
static char dev_bus[GMT_SAMPLE_DEVICES][32];

static _Atomic int busy;                 /* held while NVML is asked (flusher, at_exit) */
static _Atomic int stopping;             /* the process is exiting: no more samples */
static _Atomic int exit_hooked;          /* at_exit registered (inherited by fork children) */
/* The holder of busy's: */
static int nvml_state;                   /* 0 not tried, 1 ready, -1 not available */
static void *nvml_dev[GMT_SAMPLE_DEVICES];
static uint64_t nvml_asked;              /* bit d: nvml_dev[d] was looked up */
static uint64_t next_due;                /* the flusher's: the next periodic sample, ns */

/* The device's bus id, once per device, from the thread that allocated on it. */
static void note_device(int device)
{
    uint64_t bit = 1ull << device;
    char bus[sizeof dev_bus[0]];
    int e = gmt_lib_enter();
    int rc = gmt_driver_pci_bus_id(device, bus, (int)sizeof bus);
    gmt_lib_leave(e);
    if (rc == 0 && !(atomic_load(&dev_has_bus) & bit)) {
        memcpy(dev_bus[device], bus, sizeof bus);
        atomic_fetch_or_explicit(&dev_has_bus, bit, memory_order_release);
    }
}

/* Claims device's first sample for this thread: false when another thread had it. The
 * claimer notes the device's bus id (for NVML) and, after its sample, marks it seen. */
static bool claim_device(int device)
{
    uint64_t bit = 1ull << device;
    if (atomic_fetch_or_explicit(&dev_claimed, bit, memory_order_acq_rel) & bit)
        return false;
    note_device(device);
    return true;
}

/* cuMemGetInfo on the calling thread, whose context is on `device`. */
static void sample_here(int device, enum gmt_meminfo_phase phase)
{
    uint64_t f, t;
    int e = gmt_lib_enter();
    int rc = gmt_driver_meminfo_here(device, &f, &t);
    gmt_lib_leave(e);
    if (rc == 0) {
        uint32_t scope = gmt_current_scope();
        emit_sample(scope, device, phase, GMT_MEMINFO_SRC_CUMEMGETINFO, f, t, NULL);
        limits_after_sample(scope, device, phase);
    }
}

void gmt_sample_first_slow(int device)
{
    if (!claim_device(device))
        return; /* another thread's first allocation there */
    sample_here(device, GMT_MEMINFO_FIRST);
    atomic_fetch_or_explicit(&gmt_sample_seen, 1ull << device, memory_order_release);
}

void gmt_sample_fail(int device)
{
    if ((unsigned)device >= GMT_SAMPLE_DEVICES)
        return;
    /* a device whose first allocation fails is sampled from then on all the same */
    if (claim_device(device))
        atomic_fetch_or_explicit(&gmt_sample_seen, 1ull << device, memory_order_release);
    sample_here(device, GMT_MEMINFO_FAIL);
}

/* One NVML sample of each device in `mask`; the caller holds busy and NVML is ready. */
static void sample_nvml(uint64_t mask, enum gmt_meminfo_phase phase)
{
    while (mask) {
        int d = __builtin_ctzll(mask);
        mask &= mask - 1;
        if (!(nvml_asked & (1ull << d))) {
            nvml_asked |= 1ull << d;
            nvml_dev[d] = gmt_nvml_device(dev_bus[d]);
        }
        uint64_t f, t, p[4];
        if (nvml_dev[d] && gmt_nvml_meminfo(nvml_dev[d], &f, &t, p) == 0)
            emit_sample(gmt_current_scope(), d, phase, GMT_MEMINFO_SRC_NVML, f, t, p);
    }
}

/* Takes busy, waiting at most about a second for its holder (a sample takes well under
 * a millisecond; a hung NVML must not hang the program's exit). */
static bool take_busy_bounded(void)
{
    for (int i = 0; i < 10000; i++) {
        int zero = 0;
        if (atomic_compare_exchange_strong(&busy, &zero, 1))
            return true;
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    return false;
}

/* The process began to exit (atexit: before any library's destructor, NVML's too). */
static void at_exit(void)
{
    atomic_store(&stopping, 1);
    if (!take_busy_bounded())
        return;
    /* busy stays taken: no NVML call by anyone from here on */
    uint64_t mask = atomic_load_explicit(&gmt_sample_seen, memory_order_acquire) &
                    atomic_load_explicit(&dev_has_bus, memory_order_acquire);
    if (nvml_state > 0 && mask && gmt_writer_ready())
        sample_nvml(mask, GMT_MEMINFO_EXIT);
}

bool gmt_sampler_exiting(void)
{
    return atomic_load(&stopping) != 0;
}

uint64_t gmt_sampler_tick(uint64_t now)
{
    if (gmt_opt.sample_ms <= 0 || nvml_state < 0 || atomic_load(&stopping))
        return UINT64_MAX;
    uint64_t period = (uint64_t)gmt_opt.sample_ms * 1000000u;
    uint64_t mask = atomic_load_explicit(&gmt_sample_seen, memory_order_acquire) &
                    atomic_load_explicit(&dev_has_bus, memory_order_acquire);
    if (!mask)
        return period; /* no device yet: look again a period later */
    if (next_due && now < next_due)
        return next_due - now;
    int zero = 0;
    if (!atomic_compare_exchange_strong(&busy, &zero, 1))
        return period;
    if (atomic_load(&stopping)) {
        atomic_store(&busy, 0);
        return UINT64_MAX;
    }
    if (nvml_state == 0) {
        /* at_exit first: once NVML is loaded, an exit must find it registered. A process
         * that is exiting already refuses it, and then NVML is not loaded at all. */
        int hooked = atomic_exchange(&exit_hooked, 1);
        if (!hooked && atexit(at_exit) != 0)
            nvml_state = -1;
        else
            nvml_state = gmt_nvml_open() == 0 ? 1 : -1;
    }
    if (nvml_state > 0)
        sample_nvml(mask, GMT_MEMINFO_PERIODIC);
    atomic_store(&busy, 0);
    if (nvml_state < 0)
        return UINT64_MAX;
    /* Keep the cadence: the next sample a period after this one was due, unless the
     * flusher fell a whole period behind. */
    next_due = next_due && now - next_due < period ? next_due + period : now + period;
    return next_due - now;
}

/* A fork child writes a file of its own: its devices get FIRST again. NVML that the
 * parent had loaded (or was loading) is not used in the child: the parent's flusher may
 * have held NVML's own locks at the fork, and the child shares the parent's descriptors
 * to the driver. A child of a parent that never loaded it loads it itself. */
static void fork_child(void)
{
    atomic_store(&gmt_sample_seen, 0);
    atomic_store(&dev_claimed, 0);
    atomic_store(&dev_has_bus, 0);
    if (nvml_state != 0 || atomic_load(&busy))
        nvml_state = -1;
    nvml_asked = 0;
    next_due = 0;
    atomic_store(&busy, 0);
}

__attribute__((constructor)) static void register_fork_child(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}
