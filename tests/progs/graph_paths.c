/* graph_paths.c: captures async allocations into a graph, builds one with a memory node, instantiates, launches, trims and destroys them through one lookup path, printing every result and the device's graph memory. */

/* Usage: graph_paths PATH [FLAGS]
 *   PATH: runtime (cuda* calls through the PLT: the runtime reaches the driver through
 *         cuGetProcAddress), plt, getproc2, entry, dlsym (the driver's calls, looked up with
 *         FLAGS 0 or 2, the per-thread variants), nocapture (the runtime's async
 *         allocations and a graph with a memory node, never a capture), tograph (through
 *         the PLT: a capture into a graph that already holds a memory node,
 *         cuStreamBeginCaptureToGraph, whose captured allocation so names the graph the
 *         node names).
 * The sequence: capture cudaMallocAsync(32 MiB) + cudaFreeAsync on a stream, instantiate,
 * launch twice, trim; a graph captured empty, launched; a graph made with
 * cuGraphAddMemAllocNode (8 MiB), launched, its allocation freed outside it; destroy all.
 * After each step one line: the call results, the device's used memory since the start
 * and cuDeviceGetGraphMemAttribute's four figures, never an address, so runs with and
 * without the tracer compare line by line. nocapture ends with the fake driver's count of
 * cuStreamIsCapturing calls. */
#include "fake_cuda.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB (1ull << 20)

struct drv {
    CUresult (*begin)(CUstream, CUstreamCaptureMode);
    CUresult (*end)(CUstream, CUgraph *);
    CUresult (*alloc_async)(CUdeviceptr *, size_t, CUstream);
    CUresult (*free_async)(CUdeviceptr, CUstream);
    CUresult (*instantiate)(CUgraphExec *, CUgraph, unsigned long long);
    CUresult (*instantiate_params)(CUgraphExec *, CUgraph, CUDA_GRAPH_INSTANTIATE_PARAMS *);
    CUresult (*launch)(CUgraphExec, CUstream);
    CUresult (*exec_destroy)(CUgraphExec);
    CUresult (*graph_destroy)(CUgraph);
    CUresult (*trim)(CUdevice);
    CUresult (*alloc_node)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
                           CUDA_MEM_ALLOC_NODE_PARAMS *);
};

/* field, base name, version asked, ABI name, ABI name of the per-thread variant */
#define DRV_FNS(X)                                                                            \
    X(begin, "cuStreamBeginCapture", 10010, "cuStreamBeginCapture_v2",                        \
      "cuStreamBeginCapture_v2_ptsz")                                                         \
    X(end, "cuStreamEndCapture", 10000, "cuStreamEndCapture", "cuStreamEndCapture_ptsz")      \
    X(alloc_async, "cuMemAllocAsync", 11020, "cuMemAllocAsync", "cuMemAllocAsync_ptsz")       \
    X(free_async, "cuMemFreeAsync", 11020, "cuMemFreeAsync", "cuMemFreeAsync_ptsz")           \
    X(instantiate, "cuGraphInstantiate", 12000, "cuGraphInstantiateWithFlags", NULL)          \
    X(instantiate_params, "cuGraphInstantiateWithParams", 12000,                              \
      "cuGraphInstantiateWithParams", "cuGraphInstantiateWithParams_ptsz")                    \
    X(launch, "cuGraphLaunch", 10000, "cuGraphLaunch", "cuGraphLaunch_ptsz")                  \
    X(exec_destroy, "cuGraphExecDestroy", 10000, "cuGraphExecDestroy", NULL)                  \
    X(graph_destroy, "cuGraphDestroy", 10000, "cuGraphDestroy", NULL)                         \
    X(trim, "cuDeviceGraphMemTrim", 11040, "cuDeviceGraphMemTrim", NULL)                      \
    X(alloc_node, "cuGraphAddMemAllocNode", 11040, "cuGraphAddMemAllocNode", NULL)

static void die(const char *what)
{
    fprintf(stderr, "graph_paths: %s\n", what);
    exit(2);
}

typedef CUresult gpa2_fn(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void *lookup(const char *path, void *h, const char *base, int ver, unsigned flags,
                    const char *abi, const char *abi_ptsz)
{
    void *p = NULL;
    if (!strcmp(path, "dlsym")) {
        p = dlsym(h, flags == 2 && abi_ptsz ? abi_ptsz : abi);
    } else if (!strcmp(path, "getproc2")) {
        gpa2_fn *gpa = (gpa2_fn *)dlsym(h, "cuGetProcAddress_v2");
        void *self = NULL;
        CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        if (!gpa || gpa("cuGetProcAddress", &self, 12000, 0, &st) != CUDA_SUCCESS || !self)
            die("cuGetProcAddress_v2");
        if (((gpa2_fn *)self)(base, &p, ver, flags, &st) != CUDA_SUCCESS ||
            st != CU_GET_PROC_ADDRESS_SUCCESS)
            p = NULL;
    } else if (!strcmp(path, "entry")) {
        enum cudaDriverEntryPointQueryResult st = cudaDriverEntryPointSymbolNotFound;
        if (cudaGetDriverEntryPoint(base, &p, flags, &st) != cudaSuccess ||
            st != cudaDriverEntryPointSuccess)
            p = NULL;
    }
    if (!p) {
        fprintf(stderr, "graph_paths: %s: no %s\n", path, base);
        exit(2);
    }
    return p;
}

static void fill_plt(struct drv *d, unsigned flags)
{
    int pt = flags == 2;
    d->begin = pt ? cuStreamBeginCapture_v2_ptsz : cuStreamBeginCapture_v2;
    d->end = pt ? cuStreamEndCapture_ptsz : cuStreamEndCapture;
    d->alloc_async = pt ? cuMemAllocAsync_ptsz : cuMemAllocAsync;
    d->free_async = pt ? cuMemFreeAsync_ptsz : cuMemFreeAsync;
    d->instantiate = cuGraphInstantiateWithFlags;
    d->instantiate_params = pt ? cuGraphInstantiateWithParams_ptsz : cuGraphInstantiateWithParams;
    d->launch = pt ? cuGraphLaunch_ptsz : cuGraphLaunch;
    d->exec_destroy = cuGraphExecDestroy;
    d->graph_destroy = cuGraphDestroy;
    d->trim = cuDeviceGraphMemTrim;
    d->alloc_node = cuGraphAddMemAllocNode;
}

static void fill_lookup(struct drv *d, const char *path, unsigned flags)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        die("dlopen libcuda.so.1");
#define X(field, base, ver, abi, abi_ptsz)                                                    \
    *(void **)&d->field = lookup(path, h, base, ver, flags, abi, abi_ptsz);
    DRV_FNS(X)
#undef X
}

static size_t used0;

static size_t device_used(void)
{
    size_t f = 0, t = 0;
    if (cuMemGetInfo_v2(&f, &t))
        die("cuMemGetInfo");
    return t - f;
}

/* One line: what was done, its results, and the device as it is now. */
static void show(const char *what, const int *r, int n)
{
    cuuint64_t v[4] = { 0, 0, 0, 0 };
    for (int i = 0; i < 4; i++)
        if (cuDeviceGetGraphMemAttribute(0, (CUgraphMem_attribute)i, &v[i]))
            die("cuDeviceGetGraphMemAttribute");
    printf("%-18s r=", what);
    for (int i = 0; i < n; i++)
        printf("%s%d", i ? "," : "", r[i]);
    printf(" device+%zu used=%llu used_high=%llu reserved=%llu reserved_high=%llu\n",
           device_used() - used0, (unsigned long long)v[0], (unsigned long long)v[1],
           (unsigned long long)v[2], (unsigned long long)v[3]);
}

static void driver_sequence(const struct drv *d)
{
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuStreamCreate(&s, 0))
        die("context");
    used0 = device_used();

    CUgraph g = NULL, empty = NULL, built = NULL;
    CUgraphExec e = NULL, e2 = NULL, e3 = NULL;
    CUdeviceptr p = 0;
    int r[4];
    r[0] = d->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    r[1] = d->alloc_async(&p, 32 * MIB, s);
    r[2] = d->free_async(p, s);
    r[3] = d->end(s, &g);
    show("capture", r, 4);
    r[0] = d->instantiate(&e, g, 0);
    show("instantiate", r, 1);
    r[0] = d->launch(e, s);
    show("launch 1", r, 1);
    r[0] = d->launch(e, s);
    show("launch 2", r, 1);
    r[0] = d->trim(0);
    show("trim", r, 1);
    r[0] = d->exec_destroy(e);
    r[1] = d->graph_destroy(g);
    show("destroy", r, 2);

    r[0] = d->begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
    r[1] = d->end(s, &empty);
    r[2] = d->instantiate(&e2, empty, 0);
    r[3] = d->launch(e2, s);
    show("empty graph", r, 4);
    r[0] = d->exec_destroy(e2);
    r[1] = d->graph_destroy(empty);
    show("empty destroy", r, 2);

    if (cuGraphCreate(&built, 0))
        die("cuGraphCreate");
    CUDA_MEM_ALLOC_NODE_PARAMS np;
    memset(&np, 0, sizeof np);
    np.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    np.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    np.poolProps.location.id = 0;
    np.bytesize = 8 * MIB;
    CUgraphNode node;
    CUDA_GRAPH_INSTANTIATE_PARAMS ip;
    memset(&ip, 0, sizeof ip);
    r[0] = d->alloc_node(&node, built, NULL, 0, &np);
    r[1] = d->instantiate_params(&e3, built, &ip);
    r[2] = d->launch(e3, s);
    show("alloc node", r, 3);
    r[0] = d->free_async(np.dptr, s);
    r[1] = d->exec_destroy(e3);
    r[2] = d->graph_destroy(built);
    show("alloc node freed", r, 3);
}

static void runtime_sequence(void)
{
    cudaStream_t s;
    if (cudaSetDevice(0) || cudaStreamCreate(&s))
        die("runtime setup");
    used0 = device_used();

    cudaGraph_t g = NULL, empty = NULL, built = NULL;
    cudaGraphExec_t e = NULL, e2 = NULL, e3 = NULL;
    void *p = NULL;
    int r[4];
    r[0] = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    r[1] = cudaMallocAsync(&p, 32 * MIB, s);
    r[2] = cudaFreeAsync(p, s);
    r[3] = cudaStreamEndCapture(s, &g);
    show("capture", r, 4);
    r[0] = cudaGraphInstantiate(&e, g, 0);
    show("instantiate", r, 1);
    r[0] = cudaGraphLaunch(e, s);
    show("launch 1", r, 1);
    r[0] = cudaGraphLaunch(e, s);
    show("launch 2", r, 1);
    r[0] = cudaDeviceGraphMemTrim(0);
    show("trim", r, 1);
    r[0] = cudaGraphExecDestroy(e);
    r[1] = cudaGraphDestroy(g);
    show("destroy", r, 2);

    r[0] = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    r[1] = cudaStreamEndCapture(s, &empty);
    r[2] = cudaGraphInstantiate(&e2, empty, 0);
    r[3] = cudaGraphLaunch(e2, s);
    show("empty graph", r, 4);
    r[0] = cudaGraphExecDestroy(e2);
    r[1] = cudaGraphDestroy(empty);
    show("empty destroy", r, 2);

    if (cudaGraphCreate(&built, 0))
        die("cudaGraphCreate");
    struct cudaMemAllocNodeParams np;
    memset(&np, 0, sizeof np);
    np.poolProps.allocType = cudaMemAllocationTypePinned;
    np.poolProps.location.type = cudaMemLocationTypeDevice;
    np.poolProps.location.id = 0;
    np.bytesize = 8 * MIB;
    cudaGraphNode_t node;
    r[0] = cudaGraphAddMemAllocNode(&node, built, NULL, 0, &np);
    r[1] = cudaGraphInstantiate(&e3, built, 0);
    r[2] = cudaGraphLaunch(e3, s);
    show("alloc node", r, 3);
    r[0] = cudaFreeAsync(np.dptr, s);
    r[1] = cudaGraphExecDestroy(e3);
    r[2] = cudaGraphDestroy(built);
    show("alloc node freed", r, 3);
}

/* A capture into a graph made beforehand, which holds an 8 MiB memory node already:
 * the captured allocation is the graph's second. */
static void tograph_sequence(void)
{
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
        cuCtxSetCurrent(ctx) || cuStreamCreate(&s, 0))
        die("context");
    used0 = device_used();
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    printf("cuStreamGetCaptureInfo_v3: %s\n",
           h && dlsym(h, "cuStreamGetCaptureInfo_v3") ? "exported" : "absent");
    CUgraph into = NULL, g = NULL;
    CUgraphExec e = NULL;
    if (cuGraphCreate(&into, 0))
        die("cuGraphCreate");
    CUDA_MEM_ALLOC_NODE_PARAMS np;
    memset(&np, 0, sizeof np);
    np.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    np.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    np.bytesize = 8 * MIB;
    CUgraphNode node;
    CUdeviceptr p = 0;
    int r[4];
    r[0] = cuGraphAddMemAllocNode(&node, into, NULL, 0, &np);
    show("alloc node", r, 1);
    r[0] = cuStreamBeginCaptureToGraph(s, into, NULL, NULL, 0, CU_STREAM_CAPTURE_MODE_GLOBAL);
    r[1] = cuMemAllocAsync(&p, 32 * MIB, s);
    r[2] = cuMemFreeAsync(p, s);
    r[3] = cuStreamEndCapture(s, &g);
    show("capture to graph", r, 4);
    r[0] = g == into ? 0 : -1;
    r[1] = cuGraphInstantiateWithFlags(&e, g, 0);
    r[2] = cuGraphLaunch(e, s);
    show("launch", r, 3);
    r[0] = cuMemFreeAsync(np.dptr, s);
    r[1] = cuGraphExecDestroy(e);
    r[2] = cuGraphDestroy(g);
    show("destroy", r, 3);
}

/* Async allocations and a graph with a memory node, never a capture. */
static void nocapture_sequence(void)
{
    cudaStream_t s;
    if (cudaSetDevice(0) || cudaStreamCreate(&s))
        die("runtime setup");
    used0 = device_used();
    void *p = NULL;
    int r[4];
    for (int i = 0; i < 3; i++) {
        r[0] = cudaMallocAsync(&p, 4 * MIB, s);
        r[1] = cudaFreeAsync(p, s);
        show("async", r, 2);
    }
    cudaGraph_t built = NULL;
    cudaGraphExec_t e = NULL;
    if (cudaGraphCreate(&built, 0))
        die("cudaGraphCreate");
    struct cudaMemAllocNodeParams np;
    memset(&np, 0, sizeof np);
    np.poolProps.allocType = cudaMemAllocationTypePinned;
    np.poolProps.location.type = cudaMemLocationTypeDevice;
    np.bytesize = 2 * MIB;
    cudaGraphNode_t node;
    r[0] = cudaGraphAddMemAllocNode(&node, built, NULL, 0, &np);
    r[1] = cudaGraphInstantiate(&e, built, 0);
    r[2] = cudaGraphLaunch(e, s);
    r[3] = cudaFreeAsync(np.dptr, s);
    show("alloc node", r, 4);
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(built);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        die("usage: graph_paths PATH [FLAGS]");
    const char *path = argv[1];
    unsigned flags = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (!strcmp(path, "runtime")) {
        runtime_sequence();
    } else if (!strcmp(path, "nocapture")) {
        nocapture_sequence();
    } else if (!strcmp(path, "tograph")) {
        tograph_sequence();
    } else {
        struct drv d;
        if (!strcmp(path, "plt"))
            fill_plt(&d, flags);
        else
            fill_lookup(&d, path, flags);
        driver_sequence(&d);
    }
    if (!strcmp(path, "nocapture")) { /* the tracer asks it only once a capture began */
        struct fakecuda_fn_stats a, b;
        fakecuda_fn_stats("cuStreamIsCapturing", &a);
        fakecuda_fn_stats("cuStreamIsCapturing_ptsz", &b);
        printf("cuStreamIsCapturing calls=%lu\n", a.calls + b.calls);
    }
    printf("graph_paths: done\n");
    return 0;
}
