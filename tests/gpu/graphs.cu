// graphs.cu: on a real GPU, graph memory: a captured cudaMallocAsync + cudaFreeAsync and a cudaGraphAddMemAllocNode graph, with the device's used memory and its graph-memory figures after each step.
//
// Build on the GPU machine: nvcc -o graphs graphs.cu -lcuda (static runtime, nvcc's
// default) or with -cudart shared; tests/gpu/run.sh --only graphs builds and runs it with
// and without the library. Prints one line per step: the results of its calls, the
// cudaMemGetInfo used delta since the start and cudaDeviceGetGraphMemAttribute's four
// figures (used, used high, reserved, reserved high), never an address, so the output is
// the same traced and untraced and the trace's GRAPHMEM records can be checked against
// it. The "check" lines compare the device delta with the reserved figure ("equal" or
// "DIFFERS"): graph memory is device memory the pool holds until trimmed.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

#define MIB (1ull << 20)

__global__ void touch(unsigned char *p, size_t n)
{
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = (unsigned char)i;
}

static int dev;
static size_t used0;

static size_t used(void)
{
    size_t f = 0, t = 0;
    cudaMemGetInfo(&f, &t);
    return t - f;
}

struct figures {
    unsigned long long v[4]; /* cuuint64_t each, as the attributes' value type */
};

static struct figures graph_mem(void)
{
    static const cudaGraphMemAttributeType attrs[4] = {
        cudaGraphMemAttrUsedMemCurrent, cudaGraphMemAttrUsedMemHigh,
        cudaGraphMemAttrReservedMemCurrent, cudaGraphMemAttrReservedMemHigh};
    struct figures f = {{0, 0, 0, 0}};
    for (int i = 0; i < 4; i++)
        if (cudaDeviceGetGraphMemAttribute(dev, attrs[i], &f.v[i]) != cudaSuccess)
            f.v[i] = ~0ull;
    return f;
}

static struct figures step(const char *what, const int *r, int n)
{
    struct figures f = graph_mem();
    long long delta = (long long)used() - (long long)used0;
    printf("%-22s r=", what);
    for (int i = 0; i < n; i++)
        printf("%s%d", i ? "," : "", r[i]);
    printf(" device%+lld used=%llu used_high=%llu reserved=%llu reserved_high=%llu\n", delta,
           f.v[0], f.v[1], f.v[2], f.v[3]);
    return f;
}

/* The device delta against what the graph pool reserves now. */
static void check(const char *what, unsigned long long reserved)
{
    long long delta = (long long)used() - (long long)used0;
    printf("check %-16s device%+lld reserved=%llu %s\n", what, delta, reserved,
           delta == (long long)reserved ? "equal" : "DIFFERS");
}

int main(void)
{
    int r[4];
    cudaFree(0);
    cudaGetDevice(&dev);
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) {
        printf("graphs: no stream\n");
        return 2;
    }
    /* Loads the kernel (lazy loading) and settles the context before the baseline. */
    touch<<<1, 1, 0, s>>>(NULL, 0);
    cudaStreamSynchronize(s);
    used0 = used();

    /* 1. A captured 32 MiB allocation, used by a kernel and freed in the graph. */
    cudaGraph_t g = NULL;
    cudaGraphExec_t e = NULL;
    void *p = NULL;
    r[0] = cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    r[1] = cudaMallocAsync(&p, 32 * MIB, s);
    touch<<<64, 256, 0, s>>>((unsigned char *)p, 32 * MIB);
    r[2] = cudaFreeAsync(p, s);
    r[3] = cudaStreamEndCapture(s, &g);
    step("capture", r, 4);
    r[0] = cudaGraphInstantiate(&e, g, 0);
    step("instantiate", r, 1);
    r[0] = cudaGraphLaunch(e, s);
    r[1] = cudaStreamSynchronize(s);
    struct figures f = step("launch 1", r, 2);
    check("launch 1", f.v[2]);
    r[0] = cudaGraphLaunch(e, s);
    r[1] = cudaStreamSynchronize(s);
    step("launch 2", r, 2);
    r[0] = cudaDeviceGraphMemTrim(dev);
    f = step("trim", r, 1);
    check("trim", f.v[2]);
    r[0] = cudaGraphExecDestroy(e);
    r[1] = cudaGraphDestroy(g);
    step("destroy", r, 2);

    /* 2. A graph built with an 8 MiB memory node and its free node. */
    cudaGraph_t b = NULL;
    cudaGraphExec_t be = NULL;
    cudaGraphNode_t alloc_node, free_node;
    struct cudaMemAllocNodeParams np = {};
    np.poolProps.allocType = cudaMemAllocationTypePinned;
    np.poolProps.location.type = cudaMemLocationTypeDevice;
    np.poolProps.location.id = dev;
    np.bytesize = 8 * MIB;
    r[0] = cudaGraphCreate(&b, 0);
    r[1] = cudaGraphAddMemAllocNode(&alloc_node, b, NULL, 0, &np);
    r[2] = cudaGraphAddMemFreeNode(&free_node, b, &alloc_node, 1, np.dptr);
    step("alloc node graph", r, 3);
    r[0] = cudaGraphInstantiate(&be, b, 0);
    r[1] = cudaGraphLaunch(be, s);
    r[2] = cudaStreamSynchronize(s);
    f = step("alloc node launch", r, 3);
    check("alloc node", f.v[2]);
    r[0] = cudaDeviceGraphMemTrim(dev);
    f = step("alloc node trim", r, 1);
    check("alloc node trim", f.v[2]);
    r[0] = cudaGraphExecDestroy(be);
    r[1] = cudaGraphDestroy(b);
    step("alloc node destroy", r, 2);

    cudaStreamDestroy(s);
    printf("graphs: done\n");
    return 0;
}
