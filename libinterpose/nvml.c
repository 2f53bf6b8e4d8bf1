/* nvml.c: NVML (libnvidia-ml.so.1), loaded when present, for device memory without a CUDA context: device-wide and this process's figures. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>

#include "gmt.h"
#include "resolve.h"
#include "nvml.h"

/*
 * NVML's ABI as nvml.h declares it (driver 580 and older ones), only what is used here.
 * NVML talks to the kernel driver, not to a CUDA context: it can be asked from a thread
 * that has none, which is what lets the flusher sample at all. Never a link-time
 * dependency: the library links nothing but glibc, and a machine without the driver has
 * no libnvidia-ml.
 */
typedef int nvml_return;
#define NVML_SUCCESS 0
typedef struct nvml_device_st *nvml_device;
struct nvml_memory {                /* nvmlMemory_t */
    unsigned long long total, free, used; /* bytes */
};
struct nvml_process {               /* nvmlProcessInfo_t of nvmlDeviceGetComputeRunningProcesses_v3 */
    unsigned int pid;
    unsigned long long used;        /* usedGpuMemory, bytes; NVML_VALUE_NOT_AVAILABLE */
    unsigned int gpu_instance, compute_instance;
};
#define NVML_VALUE_NOT_AVAILABLE (~0ull)

typedef nvml_return init_fn(void);
typedef nvml_return by_bus_fn(const char *pci_bus_id, nvml_device *dev);
typedef nvml_return meminfo_fn(nvml_device dev, struct nvml_memory *mem);
typedef nvml_return procs_fn(nvml_device dev, unsigned int *count, struct nvml_process *infos);

/* Written once by gmt_nvml_open, read by its caller's later calls (one thread at a time,
 * sampling.c's rule). */
static struct {
    int state;                      /* 0 not tried, 1 ready, -1 not available */
    by_bus_fn *by_bus;
    meminfo_fn *meminfo;
    procs_fn *procs;                /* NULL: NVML too old to list processes this way */
} nv;

/* The process list of one device: a static buffer, since the flusher's stack is small and
 * one thread at a time asks. 256 processes on one GPU is far more than a machine runs;
 * a longer list leaves this process's figure unknown. */
static struct nvml_process procs_buf[256];

int gmt_nvml_open(void)
{
    if (nv.state)
        return nv.state > 0 ? 0 : -1;
    nv.state = -1;
    typedef void *dlopen_fn(const char *, int);
    typedef void *dlsym_fn(void *, const char *);
    dlopen_fn *open_ = (dlopen_fn *)gmt_real_dl(GMT_DL_DLOPEN);
    dlsym_fn *sym = (dlsym_fn *)gmt_real_dl(GMT_DL_DLSYM);
    if (!open_ || !sym)
        return -1;
    int e = gmt_lib_enter(); /* NVML's own dlopen/dlsym calls pass our hooks straight through */
    /* RTLD_LOCAL: none of its names may stand in front of the program's. Kept open for
     * the process's life, and never shut down: nvmlShutdown while another thread samples
     * would be a use after free. */
    void *h = open_("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) {
        init_fn *init = (init_fn *)sym(h, "nvmlInit_v2");
        nv.by_bus = (by_bus_fn *)sym(h, "nvmlDeviceGetHandleByPciBusId_v2");
        if (!nv.by_bus)
            nv.by_bus = (by_bus_fn *)sym(h, "nvmlDeviceGetHandleByPciBusId");
        nv.meminfo = (meminfo_fn *)sym(h, "nvmlDeviceGetMemoryInfo");
        nv.procs = (procs_fn *)sym(h, "nvmlDeviceGetComputeRunningProcesses_v3");
        if (init && nv.by_bus && nv.meminfo && init() == NVML_SUCCESS)
            nv.state = 1;
    }
    gmt_lib_leave(e);
    return nv.state > 0 ? 0 : -1;
}

void *gmt_nvml_device(const char *pci_bus_id)
{
    if (nv.state <= 0 || !pci_bus_id[0])
        return NULL;
    nvml_device d = NULL;
    int e = gmt_lib_enter();
    nvml_return r = nv.by_bus(pci_bus_id, &d);
    gmt_lib_leave(e);
    return r == NVML_SUCCESS ? d : NULL;
}

int gmt_nvml_meminfo(void *device, uint64_t *free_b, uint64_t *total_b, uint64_t *process_b)
{
    if (nv.state <= 0 || !device)
        return -1;
    int e = gmt_lib_enter();
    struct nvml_memory m;
    memset(&m, 0, sizeof m);
    int rc = -1;
    if (nv.meminfo(device, &m) == NVML_SUCCESS) {
        rc = 0;
        *free_b = m.free;
        *total_b = m.total;
        process_b[0] = GMT_MEMINFO_UNKNOWN;
        process_b[1] = GMT_MEMINFO_UNKNOWN;
        process_b[2] = 0;
        process_b[3] = 0;
        uint64_t largest = 0;
        unsigned int n = (unsigned int)GMT_COUNTOF(procs_buf);
        /* pid as the caller's namespace sees it: in a container NVML may list host pids,
         * and this process is then not found (its figure stays unknown) */
        unsigned int me = (unsigned int)getpid();
        if (nv.procs && nv.procs(device, &n, procs_buf) == NVML_SUCCESS) {
            uint64_t others = 0;
            bool others_known = true;
            for (unsigned int i = 0; i < n && i < GMT_COUNTOF(procs_buf); i++) {
                bool known = procs_buf[i].used != NVML_VALUE_NOT_AVAILABLE;
                if (procs_buf[i].pid == me) {
                    if (known)
                        process_b[0] = procs_buf[i].used;
                    continue;
                }
                process_b[2]++;
                others += known ? procs_buf[i].used : 0;
                /* the one to name: a user looks for it in nvidia-smi by this pid */
                if (known && (procs_buf[i].used > largest || !process_b[3])) {
                    largest = procs_buf[i].used;
                    process_b[3] = procs_buf[i].pid;
                }
                others_known = others_known && known;
            }
            /* a process whose figure NVML withholds makes the others' sum unknown, not
             * smaller than it is */
            if (others_known)
                process_b[1] = others;
        }
    }
    gmt_lib_leave(e);
    return rc;
}
