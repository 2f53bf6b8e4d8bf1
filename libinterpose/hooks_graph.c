/* hooks_graph.c: stream capture and CUDA graphs: allocations captured into graphs, which graphs hold memory nodes, and the device's graph memory (GRAPHMEM) after their launches, trims and destroys. */
#include <errno.h>
#include <stddef.h>

#include "clock.h"
#include "hooks.h"
#include "driver.h"
#include "intern.h"
#include "sampling.h"
#include "writer_api.h"

#define U64(x) ((uint64_t)(uintptr_t)(x))
#define ALWAYS static inline __attribute__((always_inline))

/*
 * What a graph's memory costs, and when. An async allocation captured into a graph
 * (cudaMallocAsync on a capturing stream) allocates nothing: it returns the virtual
 * address the allocation will have when the graph runs, and so does
 * cuGraphAddMemAllocNode. A launch of the instantiated graph backs its allocations from
 * the device's graph memory pool, which keeps the memory reserved after the graph's free
 * nodes ran, until cuDeviceGraphMemTrim (on an H200 a captured 32 MiB alloc and free
 * raised device use by 32 MiB at the first launch, and it stayed there). So:
 *
 * - a captured allocation is an ALLOC of kind GRAPH_MEM, flag GMT_ALLOC_CAPTURED (address
 *   space, not memory); its free under capture is the usual FREE;
 * - the device's graph memory itself is sampled (cuDeviceGetGraphMemAttribute) after a
 *   launch of an executable graph instantiated from a graph that holds memory nodes,
 *   written as GRAPHMEM only when the figures changed since that device's last record;
 *   after such an executable is destroyed, after a trim and at exit it is always written.
 *
 * Cost. Whether a stream is capturing is asked of the driver only once some stream
 * capture was begun in the process (gmt_graph_capture_seen, set by the capture hooks):
 * a program that never captures pays one load per async allocation. A launch of a graph
 * without memory nodes costs one lookup in the table of executables (none while it is
 * empty); a steady launch of one with memory nodes costs the four attribute queries and
 * no record.
 *
 * The runtime reaches these driver functions through cuGetProcAddress (cudaStreamBeginCapture
 * asks for "cuStreamBeginCapture", cudaGraphInstantiate for "cuGraphInstantiate" at 12000,
 * which the driver answers with cuGraphInstantiateWithFlags, cudaGraphLaunch for
 * "cuGraphLaunch", …), so their wrappers see the runtime's graphs as well as the driver
 * API's. An allocation seen at both layers (cudaMallocAsync, then cuMemAllocAsync inside
 * it) is recorded once, by the outer hook, as any other allocation.
 */

_Atomic int gmt_graph_capture_seen;

/* ---- small tables of handles ----
 * Key tables (intern.h) on handle values (pointers, never 0 or 1) with deletion. Each key
 * carries a value (the device of its memory), stored once its slot is claimed: a handle
 * is looked up only by code that got it from the call that put it, which stored the
 * value first. `live` counts the keys present, raised before a key is published and
 * lowered after it is gone, so 0 means the table holds none. */
#define TABLE_SLOTS 1024
struct table {
    _Atomic uint64_t keys[TABLE_SLOTS];
    _Atomic int vals[TABLE_SLOTS];
    _Atomic uint32_t live;
};
static struct table graphs; /* CUgraph that holds memory nodes -> device */
static struct table execs;  /* CUgraphExec instantiated from one -> device */

static long table_find(struct table *t, uint64_t key)
{
    return gmt_key_slot(t->keys, TABLE_SLOTS, (uint32_t)gmt_mix(key), key, GMT_KEY_FIND);
}

static void table_put(struct table *t, uint64_t key, int val)
{
    if (key <= GMT_KEY_TOMB)
        return;
    long i = table_find(t, key);
    if (i < 0) {
        atomic_fetch_add_explicit(&t->live, 1, memory_order_acq_rel);
        i = gmt_key_slot(t->keys, TABLE_SLOTS, (uint32_t)gmt_mix(key), key, GMT_KEY_ADD);
    }
    if (i >= 0) {
        atomic_store_explicit(&t->vals[i], val, memory_order_relaxed);
        return;
    }
    /* The probe window is full: the handle goes untracked (its launches unsampled). */
    atomic_fetch_sub_explicit(&t->live, 1, memory_order_acq_rel);
}

/* Forgets `key`: true, with its value, when it was there. */
static bool table_take(struct table *t, uint64_t key, int *val)
{
    if (key <= GMT_KEY_TOMB || atomic_load_explicit(&t->live, memory_order_acquire) == 0)
        return false;
    long i = table_find(t, key);
    if (i < 0)
        return false;
    *val = atomic_load_explicit(&t->vals[i], memory_order_relaxed);
    if (!gmt_key_drop(t->keys, i, key))
        return false;
    atomic_fetch_sub_explicit(&t->live, 1, memory_order_acq_rel);
    return true;
}

static bool table_get(struct table *t, uint64_t key, int *val)
{
    long i = table_find(t, key);
    if (i < 0)
        return false;
    *val = atomic_load_explicit(&t->vals[i], memory_order_relaxed);
    return true;
}

/* ---- captures in flight ----
 * One slot per capturing stream (0: the per-thread default stream, whichever thread's):
 * the graph it captures into when the begin named it (cuStreamBeginCaptureToGraph), and
 * how many captured allocations the process had made when it began. At the end, a
 * capture during which any allocation was captured marks its graph: also one whose
 * allocations were made on another stream that joined it (an event wait), which no
 * other record names. Concurrent captures may so mark a graph that holds none: that
 * costs its launches their sampling, never a record. */
#define CAPTURES 64
static struct {
    _Atomic uint64_t stream; /* 0 free */
    _Atomic uint64_t graph;
    _Atomic uint64_t allocs;
} captures[CAPTURES];
static _Atomic uint64_t captured_allocs;

static uint64_t capture_key(uint64_t stream)
{
    return stream ? stream : U64(CU_STREAM_PER_THREAD);
}

static int capture_slot(uint64_t key)
{
    for (int i = 0; i < CAPTURES; i++)
        if (atomic_load_explicit(&captures[i].stream, memory_order_acquire) == key)
            return i;
    return -1;
}

static void capture_begin(uint64_t stream, uint64_t graph)
{
    uint64_t key = capture_key(stream);
    int i = capture_slot(key);
    for (int j = 0; i < 0 && j < CAPTURES; j++) {
        uint64_t free_ = 0;
        if (atomic_compare_exchange_strong_explicit(&captures[j].stream, &free_, key,
                                                    memory_order_acq_rel, memory_order_acquire))
            i = j;
    }
    if (i < 0)
        return; /* untracked: its end marks its graph if any allocation was ever captured */
    atomic_store_explicit(&captures[i].graph, graph, memory_order_relaxed);
    atomic_store_explicit(&captures[i].allocs,
                          atomic_load_explicit(&captured_allocs, memory_order_acquire),
                          memory_order_release);
}

static void capture_end(uint64_t stream, uint64_t graph, bool ok)
{
    uint64_t key = capture_key(stream);
    int i = capture_slot(key);
    uint64_t now = atomic_load_explicit(&captured_allocs, memory_order_acquire);
    uint64_t then = 0;
    if (i >= 0) {
        then = atomic_load_explicit(&captures[i].allocs, memory_order_acquire);
        atomic_store_explicit(&captures[i].graph, 0, memory_order_relaxed);
        atomic_store_explicit(&captures[i].stream, 0, memory_order_release);
    }
    if (ok && graph && now != then)
        gmt_graph_note_memory(graph, -1);
}

bool gmt_graph_capturing(uint64_t stream, uint64_t *graph)
{
    if (gmt_hot.options.off)
        return false; /* nothing is recorded: the driver need not be asked */
    int e = gmt_lib_enter();
    bool capturing = gmt_driver_capturing(stream, graph) != 0;
    gmt_lib_leave(e);
    if (capturing && !*graph) {
        int i = capture_slot(capture_key(stream));
        if (i >= 0)
            *graph = atomic_load_explicit(&captures[i].graph, memory_order_relaxed);
    }
    return capturing;
}

void gmt_graph_note_memory(uint64_t graph, int device)
{
    if (device < 0) {
        int e = gmt_lib_enter();
        device = gmt_driver_current_device();
        gmt_lib_leave(e);
    }
    table_put(&graphs, graph, device);
}

/* A captured allocation: noted for its graph, then recorded as a memory node. Its device
 * is named in the record (the capturing context's). */
__attribute__((noinline)) void gmt_graph_event_captured(enum gmt_api api, uint64_t address,
                                                        uint64_t bytes, uint64_t stream,
                                                        uint64_t graph, const void *frame)
{
    atomic_fetch_add_explicit(&captured_allocs, 1, memory_order_acq_rel);
    int e = gmt_lib_enter();
    int device = gmt_driver_current_device();
    gmt_lib_leave(e);
    if (graph)
        table_put(&graphs, graph, device);
    gmt_event_alloc_flagged(api, GMT_KIND_GRAPH_MEM, GMT_ALLOC_CAPTURED, address, bytes, device,
                            stream, graph, frame);
}

/* ---- GRAPHMEM ---- */
#define GRAPH_DEVICES 64
static struct {
    _Atomic uint64_t fig[4]; /* the figures of the device's last record */
    _Atomic int written;     /* a record was written for it */
} last[GRAPH_DEVICES];

/* Samples `device`'s graph memory and writes it as `phase`: always, or (`changed_only`)
 * when the figures differ from its last record. Two threads sampling at once may both
 * write: a record too many, never one missing. */
static void graphmem(int device, enum gmt_graphmem_phase phase, bool changed_only)
{
    if (device < 0 || device >= GRAPH_DEVICES)
        return;
    int e = gmt_lib_enter();
    uint64_t f[4];
    bool ok = gmt_writer_ready() && gmt_driver_graph_mem(device, f) == 0;
    gmt_lib_leave(e);
    if (!ok)
        return;
    if (changed_only && atomic_load_explicit(&last[device].written, memory_order_acquire)) {
        bool same = true;
        for (int i = 0; i < 4; i++)
            same = same && atomic_load_explicit(&last[device].fig[i], memory_order_relaxed) == f[i];
        if (same)
            return;
    }
    for (int i = 0; i < 4; i++)
        atomic_store_explicit(&last[device].fig[i], f[i], memory_order_relaxed);
    atomic_store_explicit(&last[device].written, 1, memory_order_release);
    struct gmt_rec_graphmem r = {
        .h = {.type = GMT_REC_GRAPHMEM, .aux = (uint16_t)phase, .size = sizeof r},
        .time_ns = gmt_now_ns(),
        .device = device,
        .used_current = f[0],
        .used_high = f[1],
        .reserved_current = f[2],
        .reserved_high = f[3],
    };
    gmt_emit(&r, 0);
    /* graph memory is device memory: a program whose only memory is a graph's gets its
     * device sampled too (FIRST here, then periodically) */
    if (phase == GMT_GRAPHMEM_LAUNCH)
        gmt_sample_first(device);
    errno = e;
}
_Static_assert(sizeof(struct gmt_rec_graphmem) % GMT_ALIGN == 0, "GRAPHMEM needs no padding");

void gmt_graph_exit(void)
{
    for (int d = 0; d < GRAPH_DEVICES; d++)
        if (atomic_load_explicit(&last[d].written, memory_order_acquire))
            graphmem(d, GMT_GRAPHMEM_EXIT, false);
}

/* ---- the hooks ---- */

ALWAYS CUresult gmt_body_cuStreamBeginCapture(gmt_fn_cuStreamBeginCapture_v2 *real, CUstream s,
                                              CUstreamCaptureMode mode)
{
    /* Set before the call: from its return on, allocations on the stream are captured. */
    atomic_store_explicit(&gmt_graph_capture_seen, 1, memory_order_relaxed);
    CUresult r = real(s, mode);
    if (r == CUDA_SUCCESS) {
        int e = errno;
        capture_begin(U64(s), 0);
        errno = e;
    }
    return r;
}

ALWAYS CUresult gmt_body_cuStreamBeginCaptureToGraph(gmt_fn_cuStreamBeginCaptureToGraph *real,
                                                     CUstream s, CUgraph g,
                                                     const CUgraphNode *deps,
                                                     const CUgraphEdgeData *edges, size_t ndeps,
                                                     CUstreamCaptureMode mode)
{
    atomic_store_explicit(&gmt_graph_capture_seen, 1, memory_order_relaxed);
    CUresult r = real(s, g, deps, edges, ndeps, mode);
    if (r == CUDA_SUCCESS) {
        int e = errno;
        capture_begin(U64(s), U64(g));
        errno = e;
    }
    return r;
}

ALWAYS CUresult gmt_body_cuStreamEndCapture(gmt_fn_cuStreamEndCapture *real, CUstream s,
                                            CUgraph *g)
{
    CUresult r = real(s, g);
    int e = errno;
    capture_end(U64(s), r == CUDA_SUCCESS && g ? U64(*g) : 0, r == CUDA_SUCCESS);
    errno = e;
    return r;
}

/* An executable of a graph with memory nodes is tracked with the graph's device. */
static void instantiated(uint64_t exec, uint64_t graph)
{
    int device;
    if (atomic_load_explicit(&graphs.live, memory_order_acquire) == 0 ||
        !table_get(&graphs, graph, &device))
        return;
    int e = errno;
    table_put(&execs, exec, device);
    errno = e;
}

ALWAYS CUresult gmt_body_cuGraphInstantiate(gmt_fn_cuGraphInstantiate *real, CUgraphExec *exec,
                                            CUgraph g, CUgraphNode *err, char *log, size_t len)
{
    CUresult r = real(exec, g, err, log, len);
    if (r == CUDA_SUCCESS && exec)
        instantiated(U64(*exec), U64(g));
    return r;
}

ALWAYS CUresult gmt_body_cuGraphInstantiateWithFlags(gmt_fn_cuGraphInstantiateWithFlags *real,
                                                     CUgraphExec *exec, CUgraph g,
                                                     unsigned long long flags)
{
    CUresult r = real(exec, g, flags);
    if (r == CUDA_SUCCESS && exec)
        instantiated(U64(*exec), U64(g));
    return r;
}

ALWAYS CUresult gmt_body_cuGraphInstantiateWithParams(gmt_fn_cuGraphInstantiateWithParams *real,
                                                      CUgraphExec *exec, CUgraph g,
                                                      CUDA_GRAPH_INSTANTIATE_PARAMS *params)
{
    CUresult r = real(exec, g, params);
    if (r == CUDA_SUCCESS && exec)
        instantiated(U64(*exec), U64(g));
    return r;
}

static void launched(uint64_t exec)
{
    int device;
    if (!table_get(&execs, exec, &device))
        return;
    int e = gmt_lib_enter();
    int cur = gmt_driver_current_device();
    gmt_lib_leave(e);
    graphmem(cur >= 0 ? cur : device, GMT_GRAPHMEM_LAUNCH, true);
}

ALWAYS CUresult gmt_body_cuGraphLaunch(gmt_fn_cuGraphLaunch *real, CUgraphExec exec, CUstream s)
{
    CUresult r = real(exec, s);
    if (r == CUDA_SUCCESS &&
        GMT_UNLIKELY(atomic_load_explicit(&execs.live, memory_order_relaxed) != 0))
        launched(U64(exec));
    return r;
}

ALWAYS CUresult gmt_body_cuGraphExecDestroy(gmt_fn_cuGraphExecDestroy *real, CUgraphExec exec)
{
    /* Forgotten before the call: once it returns, the handle's value may be reused. */
    int device = -1;
    int e = errno;
    bool had = table_take(&execs, U64(exec), &device);
    errno = e;
    CUresult r = real(exec);
    if (had && r == CUDA_SUCCESS)
        graphmem(device, GMT_GRAPHMEM_DESTROY, false);
    return r;
}

ALWAYS CUresult gmt_body_cuGraphDestroy(gmt_fn_cuGraphDestroy *real, CUgraph g)
{
    int device, e = errno;
    table_take(&graphs, U64(g), &device);
    errno = e;
    return real(g);
}

ALWAYS CUresult gmt_body_cuDeviceGraphMemTrim(gmt_fn_cuDeviceGraphMemTrim *real, CUdevice dev)
{
    CUresult r = real(dev);
    if (r == CUDA_SUCCESS)
        graphmem(dev, GMT_GRAPHMEM_TRIM, false);
    return r;
}

#define GMT_X(file, ...) GMT_HOOKS_OF_GR_##file(GMT_HOOK_DEFINE, file, __VA_ARGS__)
GMT_HOOKS(GMT_X)
#undef GMT_X
