/* null_profiler.c: an NCCL profiler plugin that asks for the same events as libgpumemtrace.so and does nothing with them, so make bench can tell NCCL's calls into a plugin from what the library does in them. */
#include <stddef.h>
#include <stdint.h>

#define EXPORT __attribute__((visibility("default")))

static int init(void **context, uint64_t comm_id, int *mask, const char *name, int nnodes,
                int nranks, int rank, void *logfn)
{
    static int ctx;
    (void)comm_id; (void)name; (void)nnodes; (void)nranks; (void)rank; (void)logfn;
    *context = &ctx;
    *mask = (1 << 1) | (1 << 2); /* collectives and send/receive, as the library asks */
    return 0;
}
static int start(void *context, void **handle, void *descr)
{
    (void)context; (void)descr;
    *handle = NULL;
    return 0;
}
static int stop(void *handle) { (void)handle; return 0; }
static int state(void *handle, int s, void *args) { (void)handle; (void)s; (void)args; return 0; }
static int finalize(void *context) { (void)context; return 0; }

/* ncclProfiler_v5's layout: name, then the five functions */
EXPORT struct {
    const char *name;
    int (*init)(void **, uint64_t, int *, const char *, int, int, int, void *);
    int (*start)(void *, void **, void *);
    int (*stop)(void *);
    int (*state)(void *, int, void *);
    int (*finalize)(void *);
} ncclProfiler_v5 = {"null", init, start, stop, state, finalize};
