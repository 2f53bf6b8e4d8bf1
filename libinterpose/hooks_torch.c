/* hooks_torch.c: PyTorch's caching-allocator blocks, through c10's two profiler report functions: defined here, recorded as BLOCK, forwarded to libc10's own. */
#include <dlfcn.h>
#include <errno.h>

#include "clock.h"
#include "gmt.h"
#include "hooks.h"
#include "writer_api.h"

/*
 * libc10_cuda.so calls c10::reportMemoryUsageToProfiler through its PLT for every block
 * it hands out (+size) or takes back (-size), with the device's totals after the change,
 * on the allocating thread and with that device's allocator lock held; on an OOM it calls
 * c10::reportOutOfMemoryToProfiler. A preloaded definition is bound first. The GIL is not
 * held there, so nothing here may take it (the Python frames are read without it, as for
 * every allocation), nor any lock: another thread may be waiting for the allocator.
 *
 * libc10's own definition feeds torch.profiler(profile_memory=True): it is always called,
 * found in libc10.so itself (dlopen RTLD_NOLOAD + dlsym on that handle: RTLD_NEXT would
 * start after us in the global scope, which is not where PyTorch's copy must be looked
 * for when libc10 was loaded with RTLD_LOCAL). The lookup asks the loader, which takes
 * its lock: it is made at the first report after each dlopen until it succeeds, never per
 * event, as the module rescan after a dlopen is.
 */

/* c10::Device, passed by value in one register: {DeviceType type; DeviceIndex index}. */
struct c10_device {
    int8_t type;
    int8_t index;
};
#define C10_CUDA 1

#define REPORT_NAME "_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE"
#define OOM_NAME "_ZN3c1027reportOutOfMemoryToProfilerElmmNS_6DeviceE"

typedef void report_fn(void *ptr, int64_t size, size_t allocated, size_t reserved,
                       struct c10_device device);
typedef void oom_fn(int64_t size, size_t allocated, size_t reserved, struct c10_device device);

GMT_EXPORT void gmt_torch_report(void *ptr, int64_t size, size_t allocated, size_t reserved,
                                 struct c10_device device) __asm__(REPORT_NAME);
GMT_EXPORT void gmt_torch_oom(int64_t size, size_t allocated, size_t reserved,
                              struct c10_device device) __asm__(OOM_NAME);

static _Atomic(void *) real_report, real_oom;
static _Atomic unsigned looked_at = ~0u; /* dl generation of the last lookup */

typedef void *dlopen_fn(const char *, int);
typedef void *dlsym_fn(void *, const char *);

static __attribute__((noinline)) void lookup(unsigned gen)
{
    atomic_store_explicit(&looked_at, gen, memory_order_relaxed);
    dlopen_fn *op = (dlopen_fn *)gmt_real_dl(GMT_DL_DLOPEN);
    dlsym_fn *sym = (dlsym_fn *)gmt_real_dl(GMT_DL_DLSYM);
    if (!op || !sym)
        return;
    int e = gmt_lib_enter();
    /* The reference RTLD_NOLOAD takes is kept: libc10 stays loaded, the pointers valid. */
    void *h = op("libc10.so", RTLD_NOLOAD | RTLD_LAZY);
    if (h) {
        void *r = sym(h, REPORT_NAME), *o = sym(h, OOM_NAME);
        if (r && r != (void *)&gmt_torch_report)
            atomic_store_explicit(&real_report, r, memory_order_release);
        if (o && o != (void *)&gmt_torch_oom)
            atomic_store_explicit(&real_oom, o, memory_order_release);
    }
    gmt_lib_leave(e);
}

/* libc10's definition of one of the two, or NULL: then nothing is forwarded. */
static inline void *real_of(_Atomic(void *) *slot)
{
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (GMT_LIKELY(p))
        return p;
    unsigned gen = atomic_load_explicit(&gmt_hot.resolve.dl_generation, memory_order_acquire);
    if (atomic_load_explicit(&looked_at, memory_order_relaxed) != gen)
        lookup(gen);
    return atomic_load_explicit(slot, memory_order_acquire);
}

/* `frame`: the exported function's, where libc10_cuda's stack starts. */
static __attribute__((noinline)) void record(enum gmt_block_op op, void *ptr, int64_t size,
                                             size_t allocated, size_t reserved,
                                             struct c10_device device, const void *frame)
{
    if (!gmt_writer_ready())
        return;
    gmt_events_note_dl();
    struct gmt_rec_block rec;
    memset(&rec, 0, sizeof rec);
    rec.h.type = GMT_REC_BLOCK;
    rec.h.aux = (uint16_t)op;
    rec.h.size = sizeof rec;
    rec.address = (uint64_t)(uintptr_t)ptr;
    rec.size = size;
    rec.total_allocated = allocated;
    rec.total_reserved = reserved;
    rec.device_type = device.type;
    rec.device_index = device.index;
    /* A free's stack would cost an unwind per free for nothing: the block's ALLOC names it. */
    if (op != GMT_BLOCK_FREE) {
        gmt_ts.guard.in_event++;
        rec.stack_id = gmt_stack_capture(frame);
        gmt_ts.guard.in_event--;
    }
    rec.time_ns = gmt_now_ns();
    gmt_emit(&rec, 0);
}

/* Not recorded: CPU blocks (their allocator reports them too), and what the library's own
 * calls into PyTorch would allocate. */
static inline bool wanted(struct c10_device device)
{
    return device.type == C10_CUDA && gmt_ts.guard.in_lib == 0 && !gmt_hot.options.off;
}

void gmt_torch_report(void *ptr, int64_t size, size_t allocated, size_t reserved,
                      struct c10_device device)
{
    if (wanted(device)) {
        int e = errno;
        record(size >= 0 ? GMT_BLOCK_ALLOC : GMT_BLOCK_FREE, ptr, size, allocated, reserved,
               device, GMT_HOOK_FRAME());
        errno = e;
    }
    report_fn *real = (report_fn *)real_of(&real_report);
    if (real)
        real(ptr, size, allocated, reserved, device);
}

void gmt_torch_oom(int64_t size, size_t allocated, size_t reserved, struct c10_device device)
{
    if (wanted(device)) {
        int e = errno;
        record(GMT_BLOCK_OOM, NULL, size, allocated, reserved, device, GMT_HOOK_FRAME());
        errno = e;
    }
    oom_fn *real = (oom_fn *)real_of(&real_oom);
    if (real)
        real(size, allocated, reserved, device);
}
