/* versions.c: records the CUDA driver, runtime and NCCL versions once each, as the libraries report them. */
#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "elfsym.h"
#include "gmt.h"
#include "resolve.h"
#include "sampling.h"
#include "versions.h"
#include "writer_api.h"

typedef int gmt_fn_get_version(int *);

/* gmt_hot.versions.noted (gmt.h's hot line): gmt.h reads it inline, one load per event */
/* Generation + 1 of loaded objects in which the query could not be made: the next try
 * waits for a dlopen or dlclose, instead of a lookup (and a CAS) at every event. */
static _Atomic unsigned long failed_gen[4];

static void emit_version(enum gmt_component c, int v)
{
    struct gmt_rec_version rec;
    memset(&rec, 0, sizeof rec);
    rec.h.type = GMT_REC_VERSION;
    rec.h.aux = (uint16_t)c;
    rec.h.size = sizeof rec;
    rec.version = v;
    gmt_emit(&rec, 0);
}

void gmt_version_note_slow(enum gmt_component c)
{
    if ((unsigned)c >= 4 || GMT_LIKELY(atomic_load_explicit(&gmt_hot.versions.noted[c], memory_order_relaxed)))
        return;
    unsigned long gen = atomic_load_explicit(&gmt_hot.resolve.dl_generation, memory_order_acquire);
    if (atomic_load_explicit(&failed_gen[c], memory_order_relaxed) == gen + 1)
        return;
    unsigned char expected = 0;
    if (!atomic_compare_exchange_strong(&gmt_hot.versions.noted[c], &expected, 1))
        return;
    /* each is a plain query of a constant: cuDriverGetVersion needs no cuInit,
     * cudaRuntimeGetVersion no initialised runtime, ncclGetVersion nothing */
    static const struct {
        enum gmt_lib lib;
        const char *name;
    } fn[4] = {
        [GMT_COMP_DRIVER] = {GMT_LIB_DRIVER, "cuDriverGetVersion"},
        [GMT_COMP_RUNTIME] = {GMT_LIB_RUNTIME, "cudaRuntimeGetVersion"},
        [GMT_COMP_NCCL] = {GMT_LIB_NCCL, "ncclGetVersion"},
    };
    if (!fn[c].name)
        return;
    int saved_errno = errno; /* callers' fast paths leave errno alone; the lookup may not */
    gmt_fn_get_version *get = (gmt_fn_get_version *)gmt_resolve(fn[c].lib, fn[c].name);
    int v = 0;
    int rc = get ? get(&v) : -1;
    errno = saved_errno;
    if (rc != 0 || v <= 0) {
        /* not loaded yet: try again at an event after the next dlopen/dlclose */
        atomic_store_explicit(&failed_gen[c], gen + 1, memory_order_relaxed);
        atomic_store_explicit(&gmt_hot.versions.noted[c], 0, memory_order_relaxed);
        return;
    }
    emit_version(c, v);
}

/*
 * The runtime linked into the program itself (plain nvcc links it statically): no shared
 * libcudart answers, and the program's runtime calls reach us only as driver calls, so
 * the runtime's hooks never note it. Its cudaRuntimeGetVersion is then in the
 * executable's own symbol table (elfsym.c). Asked from the library's background thread,
 * never from inside a CUDA call, where the runtime may hold its own locks; once, after
 * the driver was seen (CUDA is in use), and only when no shared runtime is loaded.
 */
void gmt_version_note_static_runtime(void)
{
    static _Atomic int tried;
    if (atomic_load_explicit(&gmt_hot.versions.noted[GMT_COMP_RUNTIME], memory_order_relaxed) ||
        !atomic_load_explicit(&gmt_hot.versions.noted[GMT_COMP_DRIVER], memory_order_relaxed) ||
        atomic_load_explicit(&tried, memory_order_relaxed) || !gmt_writer_ready() ||
        gmt_sampler_exiting())
        return;
    int saved_errno = errno;
    bool shared = gmt_resolve(GMT_LIB_RUNTIME, "cudaRuntimeGetVersion") != NULL;
    errno = saved_errno;
    if (shared || atomic_exchange(&tried, 1))
        return;
    gmt_fn_get_version *get = (gmt_fn_get_version *)gmt_main_program_function("cudaRuntimeGetVersion");
    errno = saved_errno;
    unsigned char expected = 0;
    if (!get || !atomic_compare_exchange_strong(&gmt_hot.versions.noted[GMT_COMP_RUNTIME], &expected, 1))
        return;
    int v = 0;
    if (get(&v) != 0 || v <= 0) {
        errno = saved_errno;
        return; /* noted stays set: the program's runtime has no answer to give */
    }
    errno = saved_errno;
    emit_version(GMT_COMP_RUNTIME, v);
}
