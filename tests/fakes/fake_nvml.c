/* fake_nvml.c: simulated NVML (libnvidia-ml.so.1): device-wide and per-process memory of the fake driver's devices, found by PCI bus id. */

/* Stands for the real libnvidia-ml.so.1 (driver 580) at the ABI level, for what the
 * tracer asks of it:
 * - nvmlInit_v2, nvmlShutdown, nvmlDeviceGetHandleByPciBusId_v2 (the plain
 *   nvmlDeviceGetHandleByPciBusId as well), nvmlDeviceGetMemoryInfo and
 *   nvmlDeviceGetComputeRunningProcesses_v3; no CUDA context is needed, as with the real
 *   one (it asks the kernel driver);
 * - devices are the fake driver's (libcuda.so.1 must be loaded in the process: its
 *   fakecuda_dev_stats and fakecuda_pci_bus_id are found with dlopen(RTLD_NOLOAD)).
 *   NVML numbers devices in the reverse of CUDA's order (as CUDA_VISIBLE_DEVICES or
 *   CUDA_DEVICE_ORDER can make them differ): only the bus id maps one to the other;
 * - device-wide used = what the fake driver charged (allocations and the hidden context
 *   and module bytes), FAKENVML_OTHER_MB of another process (listed, its pid
 *   FAKENVML_OTHER_PID, default 4242) among them:
 *   the fake driver charges that to each device at its start, so that cuMemGetInfo's
 *   free memory counts it too, as a real device's does;
 *   this process's figure = what the fake charged: its allocations and its context
 *   (the fake's "hidden" bytes), as NVML's per-process figure includes the context.
 *   A process with no context on the device is not listed.
 * Switches (environment): FAKENVML_FAIL=init|handle|meminfo|procs makes that call fail;
 * FAKENVML_UNLISTED=1 leaves this pid out of the list (a container's pid namespace);
 * FAKENVML_STATS=PATH writes the call counts to PATH.<pid> at exit ("name count" lines),
 * also the calls made after nvmlShutdown and those from the tracer's own thread.
 * Built with -DFAKENVML_OLD: an NVML too old for _v2 handles and _v3 process lists.
 * Absent NVML is tested by not putting this library's directory in the search path. */

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "fake_cuda.h"

#define EXPORT __attribute__((visibility("default")))
#define MIB (1ull << 20)
#define MAX_DEVICES 16

typedef int nvmlReturn_t;
enum {
    NVML_SUCCESS = 0, NVML_ERROR_UNINITIALIZED = 1, NVML_ERROR_INVALID_ARGUMENT = 2,
    NVML_ERROR_NOT_FOUND = 6, NVML_ERROR_INSUFFICIENT_SIZE = 7, NVML_ERROR_DRIVER_NOT_LOADED = 9,
    NVML_ERROR_UNKNOWN = 999
};
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

struct fake_dev { int cuda; };                /* an nvmlDevice_t points at one of these */
static struct fake_dev devs[MAX_DEVICES];

#define NVML_FNS(X) X(init) X(shutdown) X(handle) X(meminfo) X(procs) X(after_shutdown)
enum {
#define X(n) C_##n,
    NVML_FNS(X)
#undef X
    C_COUNT
};
static const char *const cnames[C_COUNT] = {
#define X(n) #n,
    NVML_FNS(X)
#undef X
};
static _Atomic unsigned long counts[C_COUNT];
static _Atomic unsigned long from_flusher;    /* calls from the tracer's thread ("gpumemtrace") */
static _Atomic int inits;                     /* nvmlInit_v2 minus nvmlShutdown */
static _Atomic unsigned long flusher_meminfo[MAX_DEVICES]; /* answered, by CUDA device */

typedef int dev_stats_fn(int, struct fakecuda_dev_stats *);
typedef int bus_fn(int, char *, int);

static void note(int c)
{
    atomic_fetch_add(&counts[c], 1);
    char name[17] = "";
    if (prctl(PR_GET_NAME, name, 0, 0, 0) == 0 && !strcmp(name, "gpumemtrace"))
        atomic_fetch_add(&from_flusher, 1);
}

static int failing(const char *what)
{
    const char *f = getenv("FAKENVML_FAIL");
    return f && !strcmp(f, what);
}

static void *driver_sym(const char *name)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOLOAD | RTLD_LAZY);
    void *p = h ? dlsym(h, name) : NULL;
    if (h) dlclose(h);
    return p;
}

static int ready(void)
{
    if (atomic_load(&inits) > 0) return 1;
    atomic_fetch_add(&counts[C_after_shutdown], 1);
    return 0;
}

static __attribute__((unused)) long other_mb(void)
{
    const char *s = getenv("FAKENVML_OTHER_MB");
    return s ? atol(s) : 0;
}

/* The other process's pid (FAKENVML_OTHER_PID, default 4242): it is not this process. */
static __attribute__((unused)) long other_pid(void)
{
    const char *s = getenv("FAKENVML_OTHER_PID");
    long p = s ? atol(s) : 0;
    return p > 0 && p != (long)getpid() ? p : 4242;
}

EXPORT nvmlReturn_t nvmlInit_v2(void)
{
    note(C_init);
    if (failing("init")) return NVML_ERROR_DRIVER_NOT_LOADED;
    atomic_fetch_add(&inits, 1);
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlShutdown(void)
{
    note(C_shutdown);
    if (atomic_load(&inits) <= 0) return NVML_ERROR_UNINITIALIZED;
    atomic_fetch_sub(&inits, 1);
    return NVML_SUCCESS;
}

static nvmlReturn_t by_bus(const char *bus, struct fake_dev **out)
{
    note(C_handle);
    if (!ready()) return NVML_ERROR_UNINITIALIZED;
    if (!bus || !out) return NVML_ERROR_INVALID_ARGUMENT;
    if (failing("handle")) return NVML_ERROR_UNKNOWN;
    bus_fn *f = (bus_fn *)driver_sym("fakecuda_pci_bus_id");
    if (!f) return NVML_ERROR_DRIVER_NOT_LOADED;
    for (int d = 0; d < MAX_DEVICES; d++) {
        char b[32];
        if (f(d, b, sizeof b)) break;
        /* NVML writes an 8-digit domain and accepts a shorter one: compare past it */
        const char *x = strchr(bus, ':'), *y = strchr(b, ':');
        if (x && y && !strcasecmp(x, y)) {
            devs[d].cuda = d;
            *out = &devs[d];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

#ifndef FAKENVML_OLD
EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, struct fake_dev **out)
{
    return by_bus(bus, out);
}
#endif

EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *bus, struct fake_dev **out)
{
    return by_bus(bus, out);
}

/* NVML's index order is the reverse of CUDA's: tests see that the handle, not an index,
 * names the device. */
EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n)
{
    dev_stats_fn *st = (dev_stats_fn *)driver_sym("fakecuda_dev_stats");
    struct fakecuda_dev_stats s;
    unsigned c = 0;
    while (st && c < MAX_DEVICES && st((int)c, &s) == 0) c++;
    if (!n) return NVML_ERROR_INVALID_ARGUMENT;
    *n = c;
    return NVML_SUCCESS;
}

EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, struct fake_dev **out)
{
    unsigned n = 0;
    nvmlDeviceGetCount_v2(&n);
    if (i >= n || !out) return NVML_ERROR_INVALID_ARGUMENT;
    devs[n - 1 - i].cuda = (int)(n - 1 - i);
    *out = &devs[n - 1 - i];
    return NVML_SUCCESS;
}

static int stats_of(struct fake_dev *d, struct fakecuda_dev_stats *s)
{
    dev_stats_fn *st = (dev_stats_fn *)driver_sym("fakecuda_dev_stats");
    return d && st && st(d->cuda, s) == 0 ? 0 : -1;
}

EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo(struct fake_dev *d, nvmlMemory_t *m)
{
    note(C_meminfo);
    if (!ready()) return NVML_ERROR_UNINITIALIZED;
    if (failing("meminfo")) return NVML_ERROR_UNKNOWN;
    struct fakecuda_dev_stats s;
    if (!m || stats_of(d, &s)) return NVML_ERROR_INVALID_ARGUMENT;
    /* the driver charges the other process's memory to the device itself (fake_driver.c),
     * as a real device's free memory counts every process's */
    unsigned long long used = s.used;
    if (used > s.total) used = s.total;
    *m = (nvmlMemory_t){s.total, s.total - used, used};
    char name[17] = "";
    if (prctl(PR_GET_NAME, name, 0, 0, 0) == 0 && !strcmp(name, "gpumemtrace"))
        atomic_fetch_add(&flusher_meminfo[d->cuda], 1);
    return NVML_SUCCESS;
}

/* Not NVML's: how many memory queries about CUDA device `dev` the tracer's thread has had
 * answered, so that a program can wait for a periodic sample instead of sleeping on the
 * chance that one falls in its window. */
EXPORT unsigned long fakenvml_flusher_meminfo(int dev)
{
    return dev >= 0 && dev < MAX_DEVICES ? atomic_load(&flusher_meminfo[dev]) : 0;
}

#ifndef FAKENVML_OLD
EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(struct fake_dev *d, unsigned int *count,
                                                            nvmlProcessInfo_t *infos)
{
    note(C_procs);
    if (!ready()) return NVML_ERROR_UNINITIALIZED;
    if (failing("procs")) return NVML_ERROR_UNKNOWN;
    struct fakecuda_dev_stats s;
    if (!count || stats_of(d, &s)) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlProcessInfo_t list[2];
    unsigned n = 0;
    if (other_mb() > 0)
        list[n++] = (nvmlProcessInfo_t){(unsigned)other_pid(), (unsigned long long)other_mb() * MIB, ~0u, ~0u};
    const char *u = getenv("FAKENVML_UNLISTED");
    if (s.hidden > 0 && !(u && *u == '1'))
        list[n++] = (nvmlProcessInfo_t){(unsigned)getpid(), s.used - (unsigned long long)other_mb() * MIB, ~0u, ~0u};
    unsigned cap = *count;
    *count = n;
    if (cap < n || (n && !infos)) return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(infos, list, n * sizeof list[0]);
    return NVML_SUCCESS;
}
#endif

__attribute__((destructor)) static void write_stats(void)
{
    const char *path = getenv("FAKENVML_STATS");
    if (!path || !*path) return;
    char p[4096];
    snprintf(p, sizeof p, "%s.%d", path, (int)getpid());
    FILE *f = fopen(p, "w");
    if (!f) return;
    for (int i = 0; i < C_COUNT; i++)
        fprintf(f, "%s %lu\n", cnames[i], atomic_load(&counts[i]));
    fprintf(f, "from_flusher %lu\n", atomic_load(&from_flusher));
    fclose(f);
}
