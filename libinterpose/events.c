/* events.c: builds and emits ALLOC, FREE and ALLOC_FAIL records, with a CUCTX record first whenever the thread's CUDA context changed. */
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "driver.h"
#include "gmt.h"
#include "resolve.h"
#include "modules.h"
#include "probe.h"
#include "sampling.h"
#include "versions.h"
#include "writer_api.h"


/*
 * The context is asked of the real driver at each event (driver.h's table): cuCtxGetCurrent
 * costs about 10 ns and changes nothing the program can see.
 */
static _Atomic unsigned long modules_gen;

static GMT_TLS struct {
    uint64_t context;
    int device;
    bool known;
    bool first_done;   /* `device` had its FIRST sample (sampling.c): reset with the context */
} cur;

/* A fork child writes a file of its own: the forking thread's context must be written
 * there again before its first event. (The child has no other thread.) */
static void fork_child(void)
{
    cur.known = false;
}

__attribute__((constructor)) static void register_fork_child(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}

void gmt_events_note_dl(void)
{
    unsigned long gen = atomic_load_explicit(&gmt_hot.resolve.dl_generation, memory_order_acquire);
    unsigned long seen = atomic_load_explicit(&modules_gen, memory_order_relaxed);
    if (GMT_LIKELY(gen == seen))
        return;
    if (atomic_compare_exchange_strong(&modules_gen, &seen, gen))
        gmt_modules_rescan();
}

static void note_context(void)
{
    gmt_fn_cuCtxGetCurrent *get_current = GMT_DRIVER(cuCtxGetCurrent);
    CUcontext ctx = NULL;
    if (get_current && get_current(&ctx) != CUDA_SUCCESS)
        ctx = NULL;
    uint64_t id = (uint64_t)(uintptr_t)ctx;
    if (GMT_LIKELY(cur.known && cur.context == id))
        return;
    int device = -1;
    gmt_fn_cuCtxGetDevice *get_device = GMT_DRIVER(cuCtxGetDevice);
    CUdevice d;
    if (ctx && get_device && get_device(&d) == CUDA_SUCCESS)
        device = d;
    struct gmt_rec_cuctx rec;
    memset(&rec, 0, sizeof rec);
    rec.h.type = GMT_REC_CUCTX;
    rec.h.size = sizeof rec;
    rec.context = id;
    rec.device = device;
    gmt_emit(&rec, 0);
    cur.context = id;
    cur.device = device;
    cur.known = true;
    cur.first_done = false;
    if (ctx)
        gmt_version_note(GMT_COMP_DRIVER);
}

/* The scope an event belongs to: the thread's own innermost NCCL call, or, on a thread
 * with none (NCCL's proxy service thread allocating for a caller that waits), the one
 * scope open on the event's device, when exactly one thread has one open there. */
static uint32_t event_scope(int device)
{
    uint32_t s = gmt_current_scope();
    if (GMT_LIKELY(s))
        return s;
    return gmt_scope_for_foreign_thread(device >= 0 ? device : (cur.known ? cur.device : -1));
}

/* Common start of every event: false when nothing is to be recorded. */
static bool begin(void)
{
    if (!gmt_writer_ready())
        return false;
    gmt_events_note_dl();
    note_context();
    return true;
}

_Static_assert(GMT_API_MAX <= 0x80 && GMT_KIND_MAX <= 0x20,
              "ALLOC_SMALL packs api in 7 bits and kind in 5");

static int16_t clamp_device(int device)
{
    return device < INT16_MIN || device > INT16_MAX ? -1 : (int16_t)device;
}

/* `frame`: the hook's, where the application's stack starts (NULL: unwind from here). */
static uint32_t stack_id(const void *frame)
{
    return gmt_stack_capture(frame);
}

/* The device of an allocation of device memory had its FIRST sample, or gets it now. The
 * thread remembers it for its current context's device: a loop of allocations there pays
 * a load and a test. */
static __attribute__((noinline)) void first_sample(int device)
{
    int d = device >= 0 ? device : cur.known ? cur.device : -1;
    gmt_sample_first(d);
    if (d >= 0 && d == cur.device && d < GMT_SAMPLE_DEVICES &&
        (atomic_load_explicit(&gmt_sample_seen, memory_order_acquire) & (1ull << d)))
        cur.first_done = true;
}

/* The kinds that take memory of a device (for its FIRST and FAIL samples): not host
 * memory, address space, mappings of what was counted already, nor a peer's memory. */
static bool device_memory(enum gmt_kind kind)
{
    switch (kind) {
    case GMT_KIND_DEVICE: case GMT_KIND_POOL_ALLOC: case GMT_KIND_PHYSICAL:
    case GMT_KIND_NCCL_MEM: case GMT_KIND_ARRAY: case GMT_KIND_MIPMAPPED_ARRAY:
        return true;
    default:
        return false;
    }
}

static void event_alloc(enum gmt_api api, enum gmt_kind kind, unsigned flags, uint64_t address,
                        uint64_t bytes, int device, uint64_t stream, uint64_t related,
                        uint64_t offset, const void *frame)
{
    if (!begin())
        return;
    uint32_t stack = stack_id(frame);
    uint32_t scope = event_scope(device);
    int16_t dev = clamp_device(device);
    if (!stream && !related && !offset && !scope && dev == -1) {
        /* the common case (a cudaMalloc outside NCCL) in 32 bytes */
        struct gmt_rec_alloc_small rec = {
            .h = {GMT_REC_ALLOC_SMALL, GMT_SMALL_AUX(api, kind, flags), sizeof rec},
            .address = address,
            .bytes = bytes,
            .stack_id = stack,
        };
        gmt_emit_rec(&rec);
    } else {
        struct gmt_rec_alloc_ext rec;
        memset(&rec, 0, sizeof rec);
        bool ext = stream || related || offset;
        rec.a.h.type = GMT_REC_ALLOC;
        rec.a.h.aux = (uint16_t)api;
        rec.a.h.size = ext ? sizeof(struct gmt_rec_alloc_ext) : sizeof(struct gmt_rec_alloc);
        rec.a.address = address;
        rec.a.bytes = bytes;
        rec.a.stack_id = stack;
        rec.a.scope_id = scope;
        rec.a.kind = (uint8_t)kind;
        rec.a.flags = (uint8_t)flags;
        rec.a.device = dev;
        rec.stream = stream;
        rec.related = related;
        rec.offset = offset;
        gmt_emit(&rec, offsetof(struct gmt_rec_alloc, dt));
    }
    if (!(flags & GMT_ALLOC_CAPTURED)) /* a graph's memory node holds no memory yet */
        gmt_query_alloc(kind, address, bytes, device >= 0 ? device : cur.known ? cur.device : -1,
                        scope != 0);
    if (api < GMT_API_cuMemAlloc) /* a runtime hook, after the runtime returned */
        gmt_version_note(GMT_COMP_RUNTIME);
    if (GMT_UNLIKELY(!cur.first_done || device >= 0) && device_memory(kind))
        first_sample(device);
}

void gmt_event_free(enum gmt_api api, uint64_t address, uint64_t stream)
{
    GMT_PROBE_BEGIN(t0);
    if (!begin())
        return;
    struct gmt_rec_free_ext rec;
    memset(&rec, 0, sizeof rec);
    rec.f.h.type = GMT_REC_FREE;
    rec.f.h.aux = (uint16_t)api;
    /* A free's stack is not captured: unwinding on every free would cost more than the
     * answer is worth; the allocation's stack names the memory. */
    rec.f.h.size = stream ? sizeof(struct gmt_rec_free_ext) : sizeof(struct gmt_rec_free);
    rec.f.address = address;
    rec.f.scope_id = event_scope(-1);
    gmt_query_free(api, address);
    rec.stream = stream;
    if (GMT_LIKELY(!stream))
        gmt_emit_rec(&rec.f);
    else
        gmt_emit(&rec, offsetof(struct gmt_rec_free, dt));
    GMT_PROBE_END(t0, GMT_PROBE_FREE);
}

static void event_fail(enum gmt_api api, enum gmt_kind kind, uint64_t bytes, int device,
                       int error, const void *frame)
{
    if (!begin())
        return;
    struct gmt_rec_alloc_fail rec;
    memset(&rec, 0, sizeof rec);
    rec.h.type = GMT_REC_ALLOC_FAIL;
    rec.h.aux = (uint16_t)api;
    rec.h.size = sizeof rec;
    rec.bytes = bytes;
    rec.error = error;
    rec.stack_id = stack_id(frame);
    rec.scope_id = event_scope(device);
    rec.kind = (uint8_t)kind;
    rec.device = clamp_device(device);
    gmt_emit(&rec, offsetof(struct gmt_rec_alloc_fail, dt));
    /* the device's free and total next to the failure (an OOM's moment) */
    if (device_memory(kind))
        gmt_sample_fail(device >= 0 ? device : cur.known ? cur.device : -1);
}

/* The two that capture stacks count themselves in gmt_ts.guard.in_event: a signal handler that
 * allocates while this thread records an event has frames of ours in its stack, and
 * stack.c then knows to drop them. */
__attribute__((noinline)) void gmt_event_alloc(enum gmt_api api, enum gmt_kind kind,
                                               uint64_t address, uint64_t bytes, int device,
                                               uint64_t stream, uint64_t related,
                                               uint64_t offset, const void *frame)
{
    GMT_PROBE_BEGIN(t0);
    gmt_ts.guard.in_event++;
    event_alloc(api, kind, 0, address, bytes, device, stream, related, offset, frame);
    gmt_ts.guard.in_event--;
    GMT_PROBE_END(t0, GMT_PROBE_ALLOC);
}

__attribute__((noinline)) void gmt_event_alloc_flagged(enum gmt_api api, enum gmt_kind kind,
                                                       unsigned flags, uint64_t address,
                                                       uint64_t bytes, int device,
                                                       uint64_t stream, uint64_t related,
                                                       const void *frame)
{
    gmt_ts.guard.in_event++;
    event_alloc(api, kind, flags, address, bytes, device, stream, related, 0, frame);
    gmt_ts.guard.in_event--;
}

__attribute__((noinline)) void gmt_event_fail(enum gmt_api api, enum gmt_kind kind,
                                              uint64_t bytes, int device, int error,
                                              const void *frame)
{
    gmt_ts.guard.in_event++;
    event_fail(api, kind, bytes, device, error, frame);
    gmt_ts.guard.in_event--;
}
