/* test_intercept.c: every hooked allocation call is recorded exactly once on every path (PLT, cuGetProcAddress, entry points, dlsym), and the program behaves as without the tracer. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "hook_run.h"
#include "trace_format.h"

#define PATHS HOOK_DIR "/hook_paths"

/* What hook_paths' driver sequence must leave in the trace, whatever the path. */
static const struct {
    enum gmt_api api;
    unsigned alloc, free_, fail;
} driver_expect[] = {
    { GMT_API_cuMemAlloc, 2, 0, 1 },
    { GMT_API_cuMemFree, 0, 4, 0 },
    { GMT_API_cuMemAllocPitch, 1, 0, 0 },
    { GMT_API_cuMemAllocManaged, 1, 0, 0 },
    { GMT_API_cuMemAllocHost, 1, 0, 0 },
    { GMT_API_cuMemHostAlloc, 1, 0, 0 },
    { GMT_API_cuMemFreeHost, 0, 2, 0 },
    { GMT_API_cuMemHostRegister, 1, 0, 0 },
    { GMT_API_cuMemHostUnregister, 0, 1, 0 },
    { GMT_API_cuMemAllocAsync, 1, 0, 0 },
    { GMT_API_cuMemAllocFromPoolAsync, 1, 0, 0 },
    { GMT_API_cuMemFreeAsync, 0, 2, 0 },
    { GMT_API_cuMemPoolCreate, 1, 0, 0 },
    { GMT_API_cuMemPoolDestroy, 0, 1, 0 },
    { GMT_API_cuMemPoolTrimTo, 0, 0, 0 },
    { GMT_API_cuMemCreate, 2, 0, 0 },
    { GMT_API_cuMemRelease, 0, 4, 0 },
    { GMT_API_cuMemAddressReserve, 1, 0, 0 },
    { GMT_API_cuMemAddressFree, 0, 1, 0 },
    { GMT_API_cuMemMap, 1, 0, 0 },
    { GMT_API_cuMemUnmap, 0, 1, 0 },
    { GMT_API_cuMemImportFromShareableHandle, 1, 0, 0 },
    { GMT_API_cuMemRetainAllocationHandle, 1, 0, 0 },
    { GMT_API_cuIpcOpenMemHandle, 1, 0, 0 },
    { GMT_API_cuIpcCloseMemHandle, 0, 1, 0 },
    { GMT_API_cuGraphAddMemAllocNode, 1, 0, 0 },
    { GMT_API_cuMulticastCreate, 0, 0, 1 },
    { GMT_API_cuArrayCreate, 1, 0, 0 },
    { GMT_API_cuArray3DCreate, 2, 0, 1 },
    { GMT_API_cuMipmappedArrayCreate, 3, 0, 0 },
    { GMT_API_cuArrayDestroy, 0, 3, 0 },
    { GMT_API_cuMipmappedArrayDestroy, 0, 3, 0 },
};

static const struct {
    enum gmt_api api;
    unsigned alloc, free_, fail;
} runtime_expect[] = {
    { GMT_API_cudaMalloc, 1, 0, 1 },
    { GMT_API_cudaFree, 0, 4, 0 },
    { GMT_API_cudaMallocPitch, 1, 0, 0 },
    { GMT_API_cudaMalloc3D, 1, 0, 0 },
    { GMT_API_cudaMallocManaged, 1, 0, 0 },
    { GMT_API_cudaMallocHost, 1, 0, 0 },
    { GMT_API_cudaHostAlloc, 1, 0, 0 },
    { GMT_API_cudaFreeHost, 0, 2, 0 },
    { GMT_API_cudaHostRegister, 1, 0, 0 },
    { GMT_API_cudaHostUnregister, 0, 1, 0 },
    { GMT_API_cudaMallocAsync, 1, 0, 0 },
    { GMT_API_cudaFreeAsync, 0, 2, 0 },
    { GMT_API_cudaMemPoolCreate, 1, 0, 0 },
    { GMT_API_cudaMallocFromPoolAsync, 1, 0, 0 },
    { GMT_API_cudaMemPoolDestroy, 0, 1, 0 },
    { GMT_API_cudaMallocArray, 1, 0, 0 },
    { GMT_API_cudaMalloc3DArray, 1, 0, 1 },
    { GMT_API_cudaMallocMipmappedArray, 1, 0, 0 },
    { GMT_API_cudaFreeArray, 0, 2, 0 },
    { GMT_API_cudaFreeMipmappedArray, 0, 1, 0 },
};

/* Runs hook_paths PATH FLAGS both ways: same output and status, then the trace. */
static void run_both(const char *path, const char *flags, struct hook_counts *c,
                     struct hook_run *traced)
{
    hook_run_paths(PATHS, path, flags, traced);
    hook_read(traced->trace, c, NULL, NULL);
    cr_expect(c->complete, "trace of %s %s has no END", path, flags);
}

static void expect_driver(const struct hook_counts *c, const char *path, const char *flags)
{
    for (size_t i = 0; i < sizeof driver_expect / sizeof driver_expect[0]; i++) {
        unsigned a = driver_expect[i].api;
        cr_expect_eq(c->alloc[a], driver_expect[i].alloc, "%s %s: api %u: %u ALLOC, want %u",
                     path, flags, a, c->alloc[a], driver_expect[i].alloc);
        cr_expect_eq(c->free_[a], driver_expect[i].free_, "%s %s: api %u: %u FREE, want %u",
                     path, flags, a, c->free_[a], driver_expect[i].free_);
        cr_expect_eq(c->fail[a], driver_expect[i].fail, "%s %s: api %u: %u FAIL, want %u", path,
                     flags, a, c->fail[a], driver_expect[i].fail);
    }
    for (unsigned a = GMT_API_cudaMalloc; a <= GMT_API_cudaFreeMipmappedArray; a++)
        cr_expect_eq(c->alloc[a] + c->free_[a] + c->fail[a], 0u, "%s %s: runtime api %u seen",
                     path, flags, a);
}

static void driver_path(const char *path, const char *const *flag_values)
{
    for (; *flag_values; flag_values++) {
        static struct hook_run traced;
        struct hook_counts c;
        run_both(path, *flag_values, &c, &traced);
        expect_driver(&c, path, *flag_values);
        if (!strcmp(*flag_values, "2"))
            cr_expect(strstr(traced.out, "cuMemAllocAsync=0 cuMemAllocAsync_ptsz=1") != NULL,
                      "%s 2 did not reach the per-thread variant:\n%s", path, traced.out);
        hook_cleanup(&traced);
    }
}

static const char *const all_flags[] = { "0", "1", "2", NULL };

Test(intercept, plt_records_each_driver_call_once)
{
    static const char *const none[] = { "0", NULL };
    driver_path("plt", none);
}

Test(intercept, get_proc_address_v1_every_flag)
{
    driver_path("getproc1", all_flags);
}

Test(intercept, get_proc_address_v2_every_flag)
{
    driver_path("getproc2", all_flags);
}

Test(intercept, driver_entry_point_every_flag)
{
    driver_path("entry", all_flags);
}

Test(intercept, driver_entry_point_by_version_every_flag)
{
    driver_path("entryver", all_flags);
}

Test(intercept, dlsym_on_libcuda_handle)
{
    static const char *const flags[] = { "0", "2", NULL };
    driver_path("dlsym", flags);
}

static void runtime_path(const char *path)
{
    static struct hook_run traced;
    struct hook_counts c;
    run_both(path, "0", &c, &traced);
    for (size_t i = 0; i < sizeof runtime_expect / sizeof runtime_expect[0]; i++) {
        unsigned a = runtime_expect[i].api;
        cr_expect_eq(c.alloc[a], runtime_expect[i].alloc, "%s: api %u: %u ALLOC", path, a,
                     c.alloc[a]);
        cr_expect_eq(c.free_[a], runtime_expect[i].free_, "%s: api %u: %u FREE", path, a,
                     c.free_[a]);
        cr_expect_eq(c.fail[a], runtime_expect[i].fail, "%s: api %u: %u FAIL", path, a,
                     c.fail[a]);
    }
    /* The runtime reached the driver for each of these: nested, so not recorded again. */
    for (unsigned a = GMT_API_cuMemAlloc; a <= GMT_API_cuMipmappedArrayDestroy; a++)
        cr_expect_eq(c.alloc[a] + c.free_[a] + c.fail[a], 0u,
                     "%s: driver api %u recorded under a runtime call", path, a);
    hook_cleanup(&traced);
}

Test(intercept, runtime_call_recorded_once_not_again_as_driver)
{
    runtime_path("runtime");
}

Test(intercept, runtime_through_dlsym_on_libcudart)
{
    runtime_path("rtdlsym");
}

struct oom {
    unsigned fails;
    int error;
    uint64_t bytes;
    unsigned kind;
};

static void visit_oom(const struct gmt_rec *h, void *arg)
{
    struct oom *o = arg;
    if (h->type != GMT_REC_ALLOC_FAIL || h->aux != GMT_API_cuMemAlloc)
        return;
    const struct gmt_rec_alloc_fail *f = (const void *)h;
    o->fails++;
    o->error = f->error;
    o->bytes = f->bytes;
    o->kind = f->kind;
}

Test(intercept, out_of_memory_recorded_and_returned_unchanged)
{
    static struct hook_run traced;
    struct hook_counts c;
    run_both("plt", "0", &c, &traced);
    cr_expect(strstr(traced.out, "cuMemAlloc(out of memory)    r=2 errno=4242") != NULL,
              "error or errno changed:\n%s", traced.out);
    struct oom o = { 0 };
    hook_read(traced.trace, &c, visit_oom, &o);
    cr_expect_eq(o.fails, 1u);
    cr_expect_eq(o.error, 2, "CUDA_ERROR_OUT_OF_MEMORY recorded as %d", o.error);
    cr_expect_eq(o.bytes, 1ull << 40);
    cr_expect_eq(o.kind, (unsigned)GMT_KIND_DEVICE);
    hook_cleanup(&traced);
}

struct vmm {
    uint64_t handle, mapped_handle, pitched_bytes;
    unsigned host_kind, device_kind;
    int device;
};

static void visit_vmm(const struct gmt_rec *h, void *arg)
{
    struct vmm *v = arg;
    struct gmt_rec_alloc_ext x;
    if (!as_alloc(h, &x))
        return;
    const struct gmt_rec_alloc *a = &x.a;
    unsigned api = a->h.aux;
    if (api == GMT_API_cuMemCreate && a->kind == GMT_KIND_PHYSICAL) {
        v->handle = a->address;
        v->device = a->device;
        v->device_kind = a->kind;
    } else if (api == GMT_API_cuMemCreate) {
        v->host_kind = a->kind;
    } else if (api == GMT_API_cuMemMap && h->size >= sizeof(struct gmt_rec_alloc_ext)) {
        v->mapped_handle = x.related;
    } else if (api == GMT_API_cuMemAllocPitch) {
        v->pitched_bytes = a->bytes;
    }
}

Test(intercept, vmm_and_pitch_accounting)
{
    static struct hook_run traced;
    struct hook_counts c;
    run_both("getproc2", "0", &c, &traced);
    struct vmm v = { 0 };
    hook_read(traced.trace, &c, visit_vmm, &v);
    cr_expect_eq(v.device_kind, (unsigned)GMT_KIND_PHYSICAL);
    cr_expect_eq(v.device, 0);
    cr_expect_eq(v.host_kind, (unsigned)GMT_KIND_PHYSICAL_HOST, "host-NUMA cuMemCreate kind %u",
                 v.host_kind);
    cr_expect_neq(v.handle, 0u);
    cr_expect_eq(v.mapped_handle, v.handle, "cuMemMap's related is not the handle");
    cr_expect(strstr(traced.out, "pitch=1024") != NULL, "%s", traced.out);
    cr_expect_eq(v.pitched_bytes, 1024u * 100, "pitched bytes %llu",
                 (unsigned long long)v.pitched_bytes);
    cr_expect_gt(c.cuctx, 0u, "no CUCTX record");
    hook_cleanup(&traced);
}

/* The writer uses ALLOC_SMALL exactly when the short form says it all: no scope, no
 * device of the call's own, no extension. */
struct forms {
    unsigned small, full, full_but_could_be_small;
};

static void visit_forms(const struct gmt_rec *h, void *arg)
{
    struct forms *f = arg;
    struct gmt_rec_alloc_ext x;
    if (!as_alloc(h, &x))
        return;
    if (h->type == GMT_REC_ALLOC_SMALL) {
        f->small++;
        return;
    }
    f->full++;
    bool ext = h->size >= sizeof x && (x.stream || x.related || x.offset);
    if (!ext && x.a.scope_id == 0 && x.a.device == -1)
        f->full_but_could_be_small++;
}

Test(intercept, short_alloc_record_when_nothing_is_lost)
{
    static struct hook_run traced;
    struct hook_counts c;
    run_both("getproc2", "0", &c, &traced);
    struct forms f = { 0 };
    hook_read(traced.trace, &c, visit_forms, &f);
    cr_expect_gt(f.small, 0u, "cuMemAlloc & co. outside NCCL: ALLOC_SMALL");
    cr_expect_gt(f.full, 0u, "cuMemCreate on a device, cuMemMap: the full ALLOC");
    cr_expect_eq(f.full_but_could_be_small, 0u, "%u full ALLOC records could have been short",
                 f.full_but_could_be_small);
    hook_cleanup(&traced);
}

Test(intercept, static_runtime_program_is_traced)
{
    static struct hook_run plain, traced;
    char *argv[] = { HOOK_STATIC_PROG, NULL };
    hook_run(&plain, false, argv);
    hook_run(&traced, true, argv);
    cr_assert_eq(plain.status, 0, "%s", plain.out);
    cr_assert_eq(traced.status, 0, "%s", traced.out);
    cr_expect(strstr(traced.out, "fake_cudart: ok") != NULL, "%s", traced.out);
    struct hook_counts c;
    hook_read(traced.trace, &c, NULL, NULL);
    /* The runtime is inside the program: only its driver calls can be seen. */
    cr_expect_gt(c.alloc[GMT_API_cuMemAlloc], 0u, "no cuMemAlloc recorded");
    cr_expect_eq(c.alloc[GMT_API_cudaMalloc], 0u);
    cr_expect_gt(c.fail[GMT_API_cuMemAlloc], 0u, "the oversized allocation was not recorded");
    hook_cleanup(&traced);
}

/* ---- a freed address taken again while its free is still running ---- */

#define FREE_RACE HOOK_DIR "/free_race"

struct race_ev {
    uint64_t time, address;
    uint32_t tid;
    bool alloc;
};

/* The device ALLOC and the FREE records of the trace, by time. */
static size_t race_events(const char *trace, struct race_ev *ev, size_t max)
{
    struct gmt_reader *rd = NULL;
    char err[256] = "";
    cr_assert_eq(gmt_reader_open(&rd, trace, err, sizeof err), 0, "%s", err);
    struct gmt_event e;
    int k;
    size_t n = 0;
    while ((k = gmt_reader_next(rd, &e, err, sizeof err)) == 1) {
        struct gmt_rec_alloc_ext x;
        bool a = as_alloc(e.rec, &x) && x.a.kind == GMT_KIND_DEVICE;
        if ((!a && e.rec->type != GMT_REC_FREE) || n == max)
            continue;
        uint64_t addr = a ? x.a.address : ((const struct gmt_rec_free *)(const void *)e.rec)->address;
        ev[n++] = (struct race_ev){ e.time_ns, addr, e.tid, a };
    }
    cr_assert_eq(k, 0, "%s", err);
    gmt_reader_close(rd);
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful */
        for (size_t j = i; j > 0 && ev[j].time < ev[j - 1].time; j--) {
            struct race_ev t = ev[j];
            ev[j] = ev[j - 1];
            ev[j - 1] = t;
        }
    return n;
}

/* free_race frees on a second thread while the main thread's next allocation gets the
 * same address inside that free: the FREE must come before the new ALLOC, so that the
 * address is never live twice and no free is left without its allocation. */
static void expect_free_before_reuse(const char *path)
{
    static struct hook_run traced;
    hook_run_paths(FREE_RACE, path, "0", &traced);
    cr_assert(strstr(traced.out, "same address=1") != NULL,
              "%s: the second allocation did not take the freed address:\n%s", path, traced.out);
    struct race_ev ev[8];
    size_t n = race_events(traced.trace, ev, 8);
    cr_assert_eq(n, 4, "%s: %zu device ALLOC and FREE records, want 4", path, n);
    bool live = false;
    for (size_t i = 0; i < n; i++) {
        cr_assert_eq(ev[i].address, ev[0].address, "%s: one address taken twice", path);
        if (ev[i].alloc)
            cr_expect(!live, "%s: record %zu: ALLOC of an address still live (its FREE comes "
                      "after)", path, i);
        else
            cr_expect(live, "%s: record %zu: FREE of an address not live", path, i);
        live = ev[i].alloc;
    }
    cr_expect(!ev[0].alloc || ev[1].alloc || ev[1].tid != ev[0].tid,
              "%s: the first free is the second thread's", path);
    hook_cleanup(&traced);
}

Test(intercept, free_recorded_before_its_address_can_be_reused)
{
    expect_free_before_reuse("driver");
    expect_free_before_reuse("runtime");
}
