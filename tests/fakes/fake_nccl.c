/* fake_nccl.c: simulated NCCL 2.28.9 (libnccl.so.2): communicators, lazy per-channel cuMem buffers on a proxy thread, correct collectives. */

/* Stands for the real libnccl.so.2 where an interposer can see it (how NCCL 2.28 reaches
 * the driver, and when and where it allocates):
 * - links the CUDA runtime statically and imports no cu* or cuda* symbol: its driver entry
 *   points come from cudaGetDriverEntryPointByVersion (-> the driver's cuGetProcAddress);
 * - ncclCommInitRank*: per-channel metadata (initChannel) and the device comm
 *   (devCommSetup; small buffers, each a cuMemCreate rounded to 2 MiB), a 1 MiB
 *   host-pinned work FIFO (devCommSetup, cudaHostAlloc) and, at
 *   the first init on a device, its kernels loaded into the context (hidden device
 *   memory, FAKENCCL_KERNEL_BYTES, that no allocation call shows);
 * - the first collective connects the channels: the calling thread hands the work to the
 *   communicator's proxy service thread ("NCCL Service <rank>", created at init) and
 *   waits while that thread (ncclProxyService) allocates, per channel, a receive buffer of
 *   roundup(4096 + LL + LL128 + NCCL_BUFFSIZE, 2 MiB) (p2pRecvProxySetup) and a 2 MiB send
 *   buffer (p2pSendProxySetup; with NCCL_P2P_READ_ENABLE=1 Simple moves from the receive
 *   to the send side), each through ncclP2pAllocateShareableBuffer and ncclCuMemAlloc:
 *   cuMemCreate -> cuMemAddressReserve -> cuMemMap -> cuMemSetAccess; the first
 *   collective on a device also loads more kernels (hidden, FAKENCCL_LAZY_BYTES); each
 *   rank then maps the next rank's receive buffers (cuMemExportToShareableHandle there,
 *   cuMemImportFromShareableHandle + reserve + map here: address space, no memory of
 *   this device); later collectives allocate nothing; send/recv connect per peer, and
 *   their kernel's launch grows the context's stack limit to FAKENCCL_P2P_LOCAL_BYTES
 *   per thread (the driver's local-memory reservation grows with it: hidden memory);
 * - inside ncclGroupStart/ncclGroupEnd all of it happens in ncclGroupEnd; a bare call is
 *   a group of one;
 * - ncclCommDestroy frees each buffer with cuMemRetainAllocationHandle, cuMemRelease,
 *   cuMemUnmap, cuMemRelease, cuMemAddressFree;
 * - NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALLOC prints the ALLOC lines of the real one
 *   (requested sizes, not rounded ones);
 * - a non-blocking communicator (config blocking = 0, or left undefined with
 *   NCCL_COMM_BLOCKING=0) initializes on a thread of its own: its init returns
 *   ncclInProgress with the communicator set, ncclCommGetAsyncError says ncclInProgress
 *   until the init ended and its result then; a call on it before (a collective,
 *   ncclCommRegister, ncclCommUserRank & co) fails with ncclInvalidArgument and prints
 *   NCCL's WARN line when NCCL_DEBUG is WARN or INFO, as ncclCommEnsureReady does; a
 *   communicator whose init failed answers every call with that error. A rank that gave
 *   up waiting for its peers takes the clique's shared-memory name with it.
 * Ranks meet in a shared-memory segment named after the unique id (so ranks may be in
 * one process or several) with a barrier in it; collectives run on the host pointers of
 * the simulated device memory and give exact results (sum/prod/max/min/avg on int8,
 * uint8, int32, uint32, int64, uint64, float, double; other types: ncclInvalidArgument).
 * Deviations: a non-blocking init inside a group, and a split, run as blocking ones; 2 channels by default (NCCL_MIN_NCHANNELS/NCCL_MAX_NCHANNELS; the real
 * H200 uses 24); collectives are synchronous (the stream argument is ignored), so one
 * thread driving several ranks must use a group, as NCCL's documentation requires; no
 * NVLS, no work pool, send/recv buffers are not imported; environment variables are read
 * at each communicator init, not once per process; at most 16 ranks per communicator; a
 * rank waiting for absent peers gives up after FAKENCCL_TIMEOUT_S (default 120) seconds
 * with ncclRemoteError. */

#include "fake_nccl.h"
#include "fake_nccl_profiler.h" /* the profiler plugin interface */

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))
#define ALIAS(name, params) __typeof__(name) p##name __attribute__((alias(#name), visibility("default")));
/* The allocation paths carry the names of NCCL's own functions and stay out of line, so a
 * stack recorded in them reads as one recorded in the real library does. */
#define NCCL_FN __attribute__((noinline, noipa))
/* after a call that must keep its caller's frame: no tail call past it */
#define KEEP_FRAME() __asm__ volatile("" ::: "memory")
#define FAKENCCL_DEV_CHANNEL_PEER_BYTES 608 /* sizeof(struct ncclDevChannelPeer), NCCL 2.28 */
#define FAKENCCL_RECV_MEM_BYTES 4096        /* sizeof(struct ncclRecvMem) */
#define FAKENCCL_SEND_MEM_BYTES 4096        /* sizeof(struct ncclSendMem) */
#define MAXR 16
#define CHUNK ((size_t)1 << 20) /* bytes per exchange slot */
#define MIB ((size_t)1 << 20)
#define COMM_MAGIC 0x4d4d4f434c43434eull
#define ID_MAGIC 0x4c43434e454b4146ull

/* ------------------------------------------------------------------ driver entry points */
static struct {
    CUresult (*create)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
    CUresult (*reserve)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);
    CUresult (*map)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
    CUresult (*set_access)(CUdeviceptr, size_t, const CUmemAccessDesc *, size_t);
    CUresult (*unmap)(CUdeviceptr, size_t);
    CUresult (*release)(CUmemGenericAllocationHandle);
    CUresult (*address_free)(CUdeviceptr, size_t);
    CUresult (*retain)(CUmemGenericAllocationHandle *, void *);
    CUresult (*granularity)(size_t *, const CUmemAllocationProp *, CUmemAllocationGranularity_flags);
    CUresult (*export_handle)(void *, CUmemGenericAllocationHandle, CUmemAllocationHandleType, unsigned long long);
    CUresult (*import_handle)(CUmemGenericAllocationHandle *, void *, CUmemAllocationHandleType);
    CUresult (*driver_version)(int *);
} pfn;

static pthread_once_t pfn_once = PTHREAD_ONCE_INIT;
static int pfn_ok;

static void load_pfns(void)
{
    static const struct {
        const char *name;
        void **slot;
    } syms[] = {
        {"cuMemCreate", (void **)&pfn.create},
        {"cuMemAddressReserve", (void **)&pfn.reserve},
        {"cuMemMap", (void **)&pfn.map},
        {"cuMemSetAccess", (void **)&pfn.set_access},
        {"cuMemUnmap", (void **)&pfn.unmap},
        {"cuMemRelease", (void **)&pfn.release},
        {"cuMemAddressFree", (void **)&pfn.address_free},
        {"cuMemRetainAllocationHandle", (void **)&pfn.retain},
        {"cuMemGetAllocationGranularity", (void **)&pfn.granularity},
        {"cuMemExportToShareableHandle", (void **)&pfn.export_handle},
        {"cuMemImportFromShareableHandle", (void **)&pfn.import_handle},
        {"cuDriverGetVersion", (void **)&pfn.driver_version},
    };
    pfn_ok = 1;
    for (size_t i = 0; i < sizeof syms / sizeof syms[0]; i++) {
        enum cudaDriverEntryPointQueryResult st;
        if (cudaGetDriverEntryPointByVersion(syms[i].name, syms[i].slot, 12000, cudaEnableDefault, &st) != cudaSuccess ||
            st != cudaDriverEntryPointSuccess)
            pfn_ok = 0;
    }
}

static int have_pfns(void)
{
    pthread_once(&pfn_once, load_pfns);
    return pfn_ok;
}

/* ------------------------------------------------------------------------- errors, log */
static __thread char last_error[256];

static ncclResult_t fail(ncclResult_t r, const char *fmt, const char *what)
{
    snprintf(last_error, sizeof last_error, fmt, what);
    return r;
}

/* The prefix of the real one's log lines: host:pid:tid [device]. */
static void log_prefix(char *out, size_t n)
{
    char host[64] = "host";
    gethostname(host, sizeof host);
    host[sizeof host - 1] = 0;
    int dev = -1;
    cudaGetDevice(&dev);
    snprintf(out, n, "%s:%d:%d [%d]", host, (int)getpid(), (int)gettid(), dev);
}

/* A WARN line, printed as the real one prints it with NCCL_DEBUG=WARN or INFO. */
static void log_warn(const char *msg)
{
    const char *d = getenv("NCCL_DEBUG");
    if (!d || (strcasecmp(d, "WARN") && strcasecmp(d, "INFO") && strcasecmp(d, "TRACE"))) return;
    char pre[112];
    log_prefix(pre, sizeof pre);
    fprintf(stderr, "%s NCCL WARN %s\n", pre, msg);
}

enum alloc_log { LOG_CUDA, LOG_HOST, LOG_SHAREABLE };

static int debug_alloc = -1;
/* The ALLOC lines of the real NCCL, with the requested size. */
static void log_alloc(enum alloc_log kind, size_t size, const void *p)
{
    if (debug_alloc < 0) {
        const char *d = getenv("NCCL_DEBUG"), *s = getenv("NCCL_DEBUG_SUBSYS");
        debug_alloc = d && !strcasecmp(d, "INFO") && (!s || strcasestr(s, "ALLOC") || !strcasecmp(s, "ALL"));
    }
    if (!debug_alloc) return;
    char pre[112];
    log_prefix(pre, sizeof pre);
    char line[160];
    if (kind == LOG_SHAREABLE) snprintf(line, sizeof line, "Allocated shareable buffer %p size %zu", p, size);
    else snprintf(line, sizeof line, "Cuda %sAlloc Size %zu pointer %p", kind == LOG_HOST ? "Host " : "", size, p);
    printf("%s NCCL INFO %s\n", pre, line);
    fflush(stdout);
}

static long env_long(const char *name, long def, long lo, long hi)
{
    const char *s = getenv(name);
    if (!s || !*s) return def;
    char *end;
    long v = strtol(s, &end, 0);
    return (*end || v < lo || v > hi) ? def : v;
}

/* ---------------------------------------------------------------------- device buffers */
static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

static int cumem_enabled(void)
{
    return env_long("NCCL_CUMEM_ENABLE", 1, 0, 1) == 1;
}

/* NCCL's cuMem path (ncclCuMemAlloc): create, reserve, map, give the device read-write
 * access; with cuMem off, cudaMalloc of the size asked. */
static NCCL_FN ncclResult_t ncclCuMemAlloc(int dev, size_t size, CUdeviceptr *out, size_t *mapped, CUmemGenericAllocationHandle *hout)
{
    if (!cumem_enabled()) {
        void *p = NULL;
        if (cudaMalloc(&p, size) != cudaSuccess) return fail(ncclUnhandledCudaError, "%s", "cudaMalloc failed");
        *out = (CUdeviceptr)(uintptr_t)p;
        *mapped = 0;
        log_alloc(LOG_CUDA, size, p);
        return ncclSuccess;
    }
    if (!have_pfns()) return fail(ncclUnhandledCudaError, "%s", "driver entry points missing");
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                                .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                                .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev}};
    size_t gran = 0;
    if (pfn.granularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) || !gran)
        return fail(ncclUnhandledCudaError, "%s", "cuMemGetAllocationGranularity failed");
    size_t sz = round_up(size, gran);
    CUmemGenericAllocationHandle h;
    CUresult r = pfn.create(&h, sz, &prop, 0);
    if (r) return fail(ncclUnhandledCudaError, "cuMemCreate failed: %s", r == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory" : "error");
    CUdeviceptr p = 0;
    if ((r = pfn.reserve(&p, sz, gran, 0, 0))) {
        pfn.release(h);
        return fail(ncclUnhandledCudaError, "%s", "cuMemAddressReserve failed");
    }
    if ((r = pfn.map(p, sz, 0, h, 0))) {
        pfn.release(h);
        pfn.address_free(p, sz);
        return fail(ncclUnhandledCudaError, "%s", "cuMemMap failed");
    }
    CUmemAccessDesc acc = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev},
                           .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    if ((r = pfn.set_access(p, sz, &acc, 1))) {
        pfn.unmap(p, sz);
        pfn.release(h);
        pfn.address_free(p, sz);
        return fail(ncclUnhandledCudaError, "%s", "cuMemSetAccess failed");
    }
    *out = p;
    *mapped = sz;
    if (hout) *hout = h;
    return ncclSuccess;
}

/* NCCL's ncclCuMemFree sequence. */
static void buf_free(CUdeviceptr p, size_t mapped)
{
    if (!mapped) {
        cudaFree((void *)(uintptr_t)p);
        return;
    }
    CUmemGenericAllocationHandle h;
    if (pfn.retain(&h, (void *)(uintptr_t)p) != CUDA_SUCCESS) return;
    pfn.release(h);
    pfn.unmap(p, mapped);
    pfn.release(h);
    pfn.address_free(p, mapped);
}

struct bufs {
    struct {
        CUdeviceptr p;
        size_t mapped;
        CUmemGenericAllocationHandle h;
        size_t bytes; /* device bytes it holds: mapped (cuMem), else the size asked (cudaMalloc) */
    } *v;
    int n, cap;
    /* device bytes held, for ncclCommMemStats: cuMem buffers (which NCCL can suspend) and
     * the others; read by any thread, written by the one that allocates */
    _Atomic uint64_t cumem_bytes, plain_bytes;
};

/* One device buffer kept in b (ncclCudaCalloc, or ncclP2pAllocateShareableBuffer's
 * allocation when kind is LOG_SHAREABLE). */
static NCCL_FN ncclResult_t bufs_add(struct bufs *b, int dev, size_t size, enum alloc_log kind)
{
    if (b->n == b->cap) {
        int cap = b->cap ? 2 * b->cap : 16;
        void *v = realloc(b->v, (size_t)cap * sizeof *b->v);
        if (!v) return fail(ncclSystemError, "%s", "out of host memory");
        b->v = v;
        b->cap = cap;
    }
    CUdeviceptr p;
    size_t mapped;
    CUmemGenericAllocationHandle h = 0;
    ncclResult_t r = ncclCuMemAlloc(dev, size, &p, &mapped, &h);
    if (r) return r;
    if (mapped) log_alloc(kind, size, (void *)(uintptr_t)p);
    b->v[b->n].p = p;
    b->v[b->n].mapped = mapped;
    b->v[b->n].h = h;
    b->v[b->n].bytes = mapped ? mapped : size;
    b->n++;
    atomic_fetch_add(mapped ? &b->cumem_bytes : &b->plain_bytes, mapped ? mapped : size);
    return ncclSuccess;
}

static void bufs_free(struct bufs *b)
{
    for (int i = 0; i < b->n; i++) buf_free(b->v[i].p, b->v[i].mapped);
    free(b->v);
    b->v = NULL;
    b->n = b->cap = 0;
    atomic_store(&b->cumem_bytes, 0);
    atomic_store(&b->plain_bytes, 0);
}

/* ------------------------------------------------------------------ the shared segment */
struct mbox {
    atomic_ullong put, got; /* chunks written by the sender, read by the receiver */
    atomic_ullong bytes;    /* bytes in the chunk in flight */
};

#define MAXCH 64
/* A rank's receive buffers, offered to the rank before it in the ring to map. */
struct peer_export {
    atomic_int ready;
    int32_t pid;
    int32_t fds[MAXCH]; /* exporter's descriptors; -1: not shareable (cuMem off) */
    uint64_t size;      /* bytes, each */
};

struct seg_hdr {
    atomic_uint bar_count, bar_gen;
    atomic_int detached;
    int color[MAXR], key[MAXR];
    struct peer_export exports[MAXR];
    struct mbox mbox[MAXR][MAXR]; /* [src][dst] */
};

struct id_payload {
    uint64_t magic;
    uint64_t nonce;
    int32_t pid;
};

static size_t seg_size(int nranks)
{
    return round_up(sizeof(struct seg_hdr), 4096) + (size_t)nranks * CHUNK + (size_t)nranks * nranks * CHUNK;
}

/* ------------------------------------------------------------------------ communicators */
enum op_type { OP_ALLREDUCE, OP_BROADCAST, OP_REDUCE, OP_ALLGATHER, OP_REDUCESCATTER, OP_ALLTOALL,
               OP_GATHER, OP_SCATTER, OP_SEND, OP_RECV, OP_SPLIT };

struct op {
    enum op_type type;
    const void *send;
    void *recv;
    size_t count;
    ncclDataType_t dt;
    ncclRedOp_t red;
    int root; /* root, or peer for send/recv */
    /* OP_SPLIT */
    int color, key;
    struct ncclComm *child;
};

enum req { REQ_NONE, REQ_CONNECT, REQ_STOP };

struct ncclComm {
    uint64_t magic;
    int rank, nranks, dev;
    struct id_payload id;
    char shm_name[64];
    struct seg_hdr *hdr;
    size_t shm_size;
    unsigned char *coll_slots, *p2p_slots;
    int nch, p2p_nch;
    size_t recv_bytes, send_bytes; /* per channel, requested */
    int init_pending, ready, revoked;
    atomic_int async;     /* ncclCommGetAsyncError's answer: ncclInProgress while initializing */
    pthread_t init_thread; /* a non-blocking init's */
    int init_started;
    int coll_connected;
    unsigned char p2p_connected[MAXR];
    unsigned split_count;
    struct bufs meta, conn, imports;
    void *fifo;
    /* proxy service thread */
    pthread_t service;
    int service_started;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    enum req req;
    unsigned char req_peers[MAXR]; /* p2p peers to connect; coll: req_coll */
    int req_coll, req_done;
    ncclResult_t req_result;
    /* ops queued in the current group */
    struct op *ops;
    int nops, cap_ops;
    struct fakeprof prof; /* the profiler plugin's context (fake_nccl_profiler.c) */
};

static int comm_ok(const struct ncclComm *c)
{
    return c && c->magic == COMM_MAGIC;
}

static double timeout_s(void)
{
    return (double)env_long("FAKENCCL_TIMEOUT_S", 120, 1, 86400);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Waits politely: a few yields, then short sleeps (ranks may share 2 cores). */
static int backoff(unsigned *spins, double start)
{
    if (++*spins < 64) {
        sched_yield();
        return 0;
    }
    struct timespec ts = {0, 20000};
    nanosleep(&ts, NULL);
    return (*spins & 1023) == 0 && now_s() - start > timeout_s();
}

static ncclResult_t barrier(struct ncclComm *c)
{
    struct seg_hdr *h = c->hdr;
    unsigned gen = atomic_load(&h->bar_gen);
    if (atomic_fetch_add(&h->bar_count, 1) == (unsigned)c->nranks - 1) {
        atomic_store(&h->bar_count, 0);
        atomic_fetch_add(&h->bar_gen, 1);
        return ncclSuccess;
    }
    unsigned spins = 0;
    double start = now_s();
    while (atomic_load(&h->bar_gen) == gen)
        if (backoff(&spins, start)) return fail(ncclRemoteError, "%s", "timed out waiting for peer ranks");
    return ncclSuccess;
}

static ncclResult_t attach(struct ncclComm *c)
{
    snprintf(c->shm_name, sizeof c->shm_name, "/fakenccl-%d-%016llx", (int)c->id.pid, (unsigned long long)c->id.nonce);
    c->shm_size = seg_size(c->nranks);
    int fd = shm_open(c->shm_name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return fail(ncclSystemError, "shm_open failed: %s", strerror(errno));
    if (ftruncate(fd, (off_t)c->shm_size) < 0) {
        close(fd);
        return fail(ncclSystemError, "ftruncate failed: %s", strerror(errno));
    }
    void *p = mmap(NULL, c->shm_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) return fail(ncclSystemError, "mmap failed: %s", strerror(errno));
    c->hdr = p;
    c->coll_slots = (unsigned char *)p + round_up(sizeof(struct seg_hdr), 4096);
    c->p2p_slots = c->coll_slots + (size_t)c->nranks * CHUNK;
    return ncclSuccess;
}

static void detach(struct ncclComm *c)
{
    if (!c->hdr) return;
    /* The name is gone once every rank attached; this covers a failed init. */
    if (atomic_fetch_add(&c->hdr->detached, 1) == c->nranks - 1) shm_unlink(c->shm_name);
    munmap(c->hdr, c->shm_size);
    c->hdr = NULL;
}

/* ------------------------------------------------------------- proxy service thread */
/* Maps the next rank's receive buffers, as NCCL's P2P transport does: an import is a
 * peer's memory, a virtual address here and no memory of this device. */
static ncclResult_t import_next(struct ncclComm *c)
{
    struct peer_export *e = &c->hdr->exports[(c->rank + 1) % c->nranks];
    unsigned spins = 0;
    double start = now_s();
    while (!atomic_load(&e->ready))
        if (backoff(&spins, start)) return fail(ncclRemoteError, "%s", "timed out waiting for a peer's buffers");
    CUmemAccessDesc acc = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = c->dev},
                           .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    for (int ch = 0; ch < c->nch && ch < MAXCH; ch++) {
        if (e->fds[ch] < 0) continue;
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)e->pid, (int)e->fds[ch]);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0) return fail(ncclSystemError, "cannot open a peer's buffer: %s", strerror(errno));
        CUmemGenericAllocationHandle h;
        CUdeviceptr p = 0;
        CUresult r = pfn.import_handle(&h, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR);
        close(fd);
        if (r) return fail(ncclUnhandledCudaError, "%s", "cuMemImportFromShareableHandle failed");
        if (pfn.reserve(&p, e->size, 0, 0, 0) || pfn.map(p, e->size, 0, h, 0) || pfn.set_access(p, e->size, &acc, 1)) {
            pfn.release(h);
            return fail(ncclUnhandledCudaError, "%s", "mapping a peer's buffer failed");
        }
        if (c->imports.n == c->imports.cap) {
            int cap = c->imports.cap ? 2 * c->imports.cap : 16;
            void *v = realloc(c->imports.v, (size_t)cap * sizeof *c->imports.v);
            if (!v) return fail(ncclSystemError, "%s", "out of host memory");
            c->imports.v = v;
            c->imports.cap = cap;
        }
        c->imports.v[c->imports.n].p = p;
        c->imports.v[c->imports.n].mapped = e->size;
        c->imports.v[c->imports.n].h = h;
        c->imports.n++;
    }
    return ncclSuccess;
}

/* NCCL's ncclP2pAllocateShareableBuffer: a transport buffer peers can import. */
static NCCL_FN ncclResult_t ncclP2pAllocateShareableBuffer(struct ncclComm *c, size_t size)
{
    ncclResult_t r = bufs_add(&c->conn, c->dev, size, LOG_SHAREABLE);
    KEEP_FRAME();
    return r;
}

/* The P2P transport's proxy side (p2p.cc): the receive buffer holds the ncclRecvMem
 * header and the LL, LL128 and (unless P2P read) Simple buffers; the send side holds
 * ncclSendMem (and Simple with P2P read). */
static NCCL_FN ncclResult_t p2pRecvProxySetup(struct ncclComm *c)
{
    ncclResult_t r = ncclP2pAllocateShareableBuffer(c, c->recv_bytes);
    KEEP_FRAME();
    return r;
}

static NCCL_FN ncclResult_t p2pSendProxySetup(struct ncclComm *c)
{
    ncclResult_t r = ncclP2pAllocateShareableBuffer(c, c->send_bytes);
    KEEP_FRAME();
    return r;
}

static ncclResult_t connect_channels(struct ncclComm *c, int peer)
{
    struct peer_export *e = &c->hdr->exports[c->rank];
    for (int ch = 0; ch < (peer < 0 ? c->nch : c->p2p_nch); ch++) {
        ncclResult_t r = p2pRecvProxySetup(c);
        if (r) return r;
        if (peer < 0 && ch < MAXCH) {
            int fd = -1;
            if (c->conn.v[c->conn.n - 1].mapped &&
                pfn.export_handle(&fd, c->conn.v[c->conn.n - 1].h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0))
                fd = -1;
            e->fds[ch] = fd;
            e->size = c->conn.v[c->conn.n - 1].mapped;
        }
        if ((r = p2pSendProxySetup(c))) return r;
    }
    if (peer >= 0 || c->nranks == 1) return ncclSuccess;
    e->pid = (int32_t)getpid();
    atomic_store(&e->ready, 1);
    return import_next(c);
}

/* The proxy service thread ("NCCL Service <rank>"), as NCCL's ncclProxyService. */
static NCCL_FN void *ncclProxyService(void *arg)
{
    struct ncclComm *c = arg;
    cudaSetDevice(c->dev);
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (c->req == REQ_NONE) pthread_cond_wait(&c->cv, &c->mu);
        if (c->req == REQ_STOP) break;
        pthread_mutex_unlock(&c->mu);
        ncclResult_t r = ncclSuccess;
        if (c->req_coll && !c->coll_connected) {
            r = connect_channels(c, -1);
            if (!r) c->coll_connected = 1;
        }
        for (int p = 0; p < c->nranks && !r; p++)
            if (c->req_peers[p] && !c->p2p_connected[p]) {
                if (p != c->rank) r = connect_channels(c, p);
                if (!r) c->p2p_connected[p] = 1;
            }
        pthread_mutex_lock(&c->mu);
        c->req_result = r;
        c->req = REQ_NONE;
        c->req_done = 1;
        pthread_cond_broadcast(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    return NULL;
}

/* The caller hands the connection to the service thread and waits for it. */
static ncclResult_t proxy_connect(struct ncclComm *c, int coll, const unsigned char *peers)
{
    pthread_mutex_lock(&c->mu);
    c->req_coll = coll;
    memcpy(c->req_peers, peers, sizeof c->req_peers);
    c->req_done = 0;
    c->req = REQ_CONNECT;
    pthread_cond_broadcast(&c->cv);
    while (!c->req_done) pthread_cond_wait(&c->cv, &c->mu);
    ncclResult_t r = c->req_result;
    pthread_mutex_unlock(&c->mu);
    return r;
}

static void stop_service(struct ncclComm *c)
{
    if (!c->service_started) return;
    pthread_mutex_lock(&c->mu);
    c->req = REQ_STOP;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
    pthread_join(c->service, NULL);
    c->service_started = 0;
}

/* ----------------------------------------------------------------------- init, destroy */
static int nchannels(void)
{
    long n = FAKENCCL_DEFAULT_NCHANNELS;
    long lo = env_long("NCCL_MIN_NCHANNELS", 1, 1, 64), hi = env_long("NCCL_MAX_NCHANNELS", 64, 1, 64);
    if (n < lo) n = lo;
    if (n > hi) n = hi;
    return (int)n;
}

static struct ncclComm *comm_new(int nranks, int rank, const struct id_payload *id, int dev)
{
    struct ncclComm *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->magic = COMM_MAGIC;
    c->nranks = nranks;
    c->rank = rank;
    c->id = *id;
    c->dev = dev;
    c->init_pending = 1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    return c;
}

/* NCCL's initChannel: a channel's device structures. The real one makes three small
 * allocations per channel (the ncclDevChannelPeer array, 608 B per rank; the peer
 * pointers; the ring's user ranks), each its own 2 MiB under cuMem; this one makes the
 * first of them only. */
static NCCL_FN ncclResult_t initChannel(struct ncclComm *c, int channel)
{
    (void)channel;
    ncclResult_t r = bufs_add(&c->meta, c->dev, FAKENCCL_DEV_CHANNEL_PEER_BYTES * (size_t)c->nranks, LOG_CUDA);
    KEEP_FRAME();
    return r;
}

/* NCCL's devCommSetup: the device communicator (ncclDevCommAndChannels, 23,648 B in the
 * real one; 4096 here) and the work FIFO in host-pinned memory (NCCL_WORK_FIFO_BYTES). */
static NCCL_FN ncclResult_t devCommSetup(struct ncclComm *c)
{
    ncclResult_t r = bufs_add(&c->meta, c->dev, 4096, LOG_CUDA);
    if (r) return r;
    size_t fifo = (size_t)env_long("NCCL_WORK_FIFO_BYTES", 1 << 20, 4096, 1L << 30);
    if (cudaHostAlloc(&c->fifo, fifo, cudaHostAllocMapped) != cudaSuccess)
        return fail(ncclUnhandledCudaError, "%s", "cudaHostAlloc failed");
    log_alloc(LOG_HOST, fifo, c->fifo);
    return ncclSuccess;
}

/* Runs on a thread whose current device is c->dev. */
static ncclResult_t comm_init(struct ncclComm *c)
{
    c->init_pending = 0;
    c->nch = nchannels();
    c->p2p_nch = (int)env_long("NCCL_MAX_P2P_NCHANNELS", c->nch, 1, 64);
    if (c->p2p_nch > c->nch) c->p2p_nch = c->nch;
    size_t ll = (size_t)env_long("NCCL_LL_BUFFSIZE", 512 * 1024, 0, 1L << 30);
    size_t ll128 = (size_t)env_long("NCCL_LL128_BUFFSIZE", 4915200, 0, 1L << 30);
    size_t simple = (size_t)env_long("NCCL_BUFFSIZE", 4 << 20, 4096, 1L << 31);
    /* p2p.cc: sizes aligned to CUDA_IPC_MIN (2 MiB) before they are asked for; with P2P
     * read the Simple buffer sits on the send side */
    int read = env_long("NCCL_P2P_READ_ENABLE", 0, 0, 1) == 1;
    c->recv_bytes = round_up(FAKENCCL_RECV_MEM_BYTES + ll + ll128 + (read ? 0 : simple), 2 * MIB);
    c->send_bytes = round_up(FAKENCCL_SEND_MEM_BYTES + (read ? simple : 0), 2 * MIB);
    ncclResult_t r = attach(c);
    if (r) return r;
    if (fakecudart_load_module_once(0, FAKENCCL_KERNEL_BYTES) != cudaSuccess)
        return fail(ncclUnhandledCudaError, "%s", "loading the NCCL kernels failed (out of device memory?)");
    for (int ch = 0; ch < c->nch && !r; ch++)
        r = initChannel(c, ch);
    if (r || (r = devCommSetup(c))) return r;
    fakeprof_init(&c->prof, &c->id, sizeof c->id, 1, c->nranks, c->rank); /* before the proxy thread */
    if (pthread_create(&c->service, NULL, ncclProxyService, c))
        return fail(ncclSystemError, "%s", "pthread_create failed");
    c->service_started = 1;
    char name[16];
    snprintf(name, sizeof name, "NCCL Service %d", c->rank);
    pthread_setname_np(c->service, name);
    if ((r = barrier(c))) {
        shm_unlink(c->shm_name); /* no peer is coming: the name would outlive the clique */
        return r;
    }
    if (c->rank == 0) shm_unlink(c->shm_name);
    if (env_long("NCCL_RUNTIME_CONNECT", 1, 0, 1) == 0) {
        unsigned char none[MAXR] = {0};
        if ((r = proxy_connect(c, 1, none))) return r;
    }
    c->ready = 1;
    return ncclSuccess;
}

static void comm_free(struct ncclComm *c)
{
    if (c->init_started) pthread_join(c->init_thread, NULL); /* a destroy waits for the init */
    stop_service(c);
    for (int i = 0; i < c->imports.n; i++) {
        pfn.unmap(c->imports.v[i].p, c->imports.v[i].mapped);
        pfn.release(c->imports.v[i].h);
        pfn.address_free(c->imports.v[i].p, c->imports.v[i].mapped);
    }
    free(c->imports.v);
    if (c->hdr && c->coll_connected)
        for (int ch = 0; ch < c->nch && ch < MAXCH; ch++)
            if (c->hdr->exports[c->rank].fds[ch] >= 0) close(c->hdr->exports[c->rank].fds[ch]);
    bufs_free(&c->conn);
    bufs_free(&c->meta);
    if (c->fifo) cudaFreeHost(c->fifo);
    detach(c);
    free(c->ops);
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    fakeprof_fini(&c->prof);
    c->magic = 0;
    free(c);
}

/* --------------------------------------------------------------------------- reductions */
static size_t type_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0; /* not supported by the fake */
    }
}

#define REDUCE_LOOP(T)                                                                        \
    do {                                                                                      \
        T *d = dst;                                                                           \
        const T *s = src;                                                                     \
        for (size_t i = 0; i < n; i++)                                                        \
            switch (op) {                                                                     \
            case ncclProd: d[i] = (T)(d[i] * s[i]); break;                                    \
            case ncclMax: d[i] = d[i] > s[i] ? d[i] : s[i]; break;                            \
            case ncclMin: d[i] = d[i] < s[i] ? d[i] : s[i]; break;                            \
            default: d[i] = (T)(d[i] + s[i]); break;                                          \
            }                                                                                 \
    } while (0)

static void reduce(void *dst, const void *src, size_t n, ncclDataType_t t, ncclRedOp_t op)
{
    switch (t) {
    case ncclInt8: REDUCE_LOOP(int8_t); break;
    case ncclUint8: REDUCE_LOOP(uint8_t); break;
    case ncclInt32: REDUCE_LOOP(int32_t); break;
    case ncclUint32: REDUCE_LOOP(uint32_t); break;
    case ncclInt64: REDUCE_LOOP(int64_t); break;
    case ncclUint64: REDUCE_LOOP(uint64_t); break;
    case ncclFloat32: REDUCE_LOOP(float); break;
    case ncclFloat64: REDUCE_LOOP(double); break;
    default: break;
    }
}

#define DIV_LOOP(T)                                                                           \
    do {                                                                                      \
        T *d = dst;                                                                           \
        for (size_t i = 0; i < n; i++) d[i] = (T)(d[i] / (T)k);                               \
    } while (0)

static void divide(void *dst, size_t n, ncclDataType_t t, int k)
{
    switch (t) {
    case ncclInt8: DIV_LOOP(int8_t); break;
    case ncclUint8: DIV_LOOP(uint8_t); break;
    case ncclInt32: DIV_LOOP(int32_t); break;
    case ncclUint32: DIV_LOOP(uint32_t); break;
    case ncclInt64: DIV_LOOP(int64_t); break;
    case ncclUint64: DIV_LOOP(uint64_t); break;
    case ncclFloat32: DIV_LOOP(float); break;
    case ncclFloat64: DIV_LOOP(double); break;
    default: break;
    }
}

/* Every rank's slot holds its chunk: reduce them in rank order (the same result on all
 * ranks), into dst. */
static void reduce_slots(struct ncclComm *c, void *dst, size_t n, ncclDataType_t t, ncclRedOp_t op)
{
    size_t es = type_size(t);
    memcpy(dst, c->coll_slots, n * es);
    for (int r = 1; r < c->nranks; r++) reduce(dst, c->coll_slots + (size_t)r * CHUNK, n, t, op == ncclAvg ? ncclSum : op);
    if (op == ncclAvg) divide(dst, n, t, c->nranks);
}

/* --------------------------------------------------------------------------- collectives */
static unsigned char *slot(struct ncclComm *c, int r)
{
    return c->coll_slots + (size_t)r * CHUNK;
}

#define BAR()                                                                                 \
    do {                                                                                      \
        ncclResult_t br_ = barrier(c);                                                        \
        if (br_) return br_;                                                                  \
    } while (0)

static ncclResult_t run_collective(struct ncclComm *c, const struct op *o)
{
    size_t es = type_size(o->dt), per = CHUNK / es;
    const unsigned char *sb = o->send;
    unsigned char *rb = o->recv;
    int me = c->rank, n = c->nranks;
    for (size_t off = 0; off < o->count; off += per) {
        size_t k = o->count - off < per ? o->count - off : per, bytes = k * es, at = off * es;
        switch (o->type) {
        case OP_ALLREDUCE:
        case OP_REDUCE:
            memcpy(slot(c, me), sb + at, bytes);
            BAR();
            if (o->type == OP_ALLREDUCE || me == o->root) reduce_slots(c, rb + at, k, o->dt, o->red);
            BAR();
            break;
        case OP_BROADCAST:
            if (me == o->root) memcpy(slot(c, me), sb + at, bytes);
            BAR();
            memmove(rb + at, slot(c, o->root), bytes);
            BAR();
            break;
        case OP_ALLGATHER:
        case OP_GATHER:
            memcpy(slot(c, me), sb + at, bytes);
            BAR();
            if (o->type == OP_ALLGATHER || me == o->root)
                for (int r = 0; r < n; r++) memcpy(rb + (size_t)r * o->count * es + at, slot(c, r), bytes);
            BAR();
            break;
        case OP_REDUCESCATTER:
        case OP_ALLTOALL:
        case OP_SCATTER:
            /* One round per destination: each rank offers its part for that rank. */
            for (int d = 0; d < n; d++) {
                if (o->type != OP_SCATTER || me == o->root)
                    memcpy(slot(c, me), sb + (size_t)d * o->count * es + at, bytes);
                BAR();
                if (me == d) {
                    if (o->type == OP_REDUCESCATTER) reduce_slots(c, rb + at, k, o->dt, o->red);
                    else if (o->type == OP_SCATTER) memcpy(rb + at, slot(c, o->root), bytes);
                    else
                        for (int s = 0; s < n; s++) memcpy(rb + (size_t)s * o->count * es + at, slot(c, s), bytes);
                }
                BAR();
            }
            break;
        default:
            return fail(ncclInternalError, "%s", "not a collective");
        }
    }
    return ncclSuccess;
}

/* Sends and receives of a group progress together, chunk by chunk, through the
 * [src][dst] mailboxes, so that any order of sends and receives completes. */
static ncclResult_t run_p2p(struct ncclComm *c, struct op **ops, int nops)
{
    size_t done[64] = {0};
    int left = nops;
    unsigned spins = 0;
    double start = now_s();
    while (left) {
        int progress = 0;
        for (int i = 0; i < nops; i++) {
            struct op *o = ops[i];
            size_t total = o->count * type_size(o->dt);
            if (done[i] == total + 1) continue;
            if (total == 0) {
                done[i] = 1;
                left--;
                continue;
            }
            if (o->type == OP_SEND) {
                struct mbox *m = &c->hdr->mbox[c->rank][o->root];
                if (atomic_load(&m->put) != atomic_load(&m->got)) continue;
                size_t b = total - done[i] < CHUNK ? total - done[i] : CHUNK;
                memcpy(c->p2p_slots + ((size_t)c->rank * c->nranks + o->root) * CHUNK,
                       (const unsigned char *)o->send + done[i], b);
                atomic_store(&m->bytes, b);
                atomic_fetch_add(&m->put, 1);
                done[i] += b;
            } else {
                struct mbox *m = &c->hdr->mbox[o->root][c->rank];
                if (atomic_load(&m->put) == atomic_load(&m->got)) continue;
                size_t b = atomic_load(&m->bytes);
                if (b > total - done[i]) return fail(ncclInvalidUsage, "%s", "send larger than the matching receive");
                memcpy((unsigned char *)o->recv + done[i],
                       c->p2p_slots + ((size_t)o->root * c->nranks + c->rank) * CHUNK, b);
                atomic_fetch_add(&m->got, 1);
                done[i] += b;
            }
            progress = 1;
            if (done[i] == total) {
                done[i] = total + 1;
                left--;
            }
        }
        /* A send completes only when the peer took its last chunk. */
        if (!left)
            for (int i = 0; i < nops; i++)
                if (ops[i]->type == OP_SEND && ops[i]->count) {
                    struct mbox *m = &c->hdr->mbox[c->rank][ops[i]->root];
                    while (atomic_load(&m->put) != atomic_load(&m->got))
                        if (backoff(&spins, start)) return fail(ncclRemoteError, "%s", "timed out waiting for a receive");
                }
        if (!progress && left && backoff(&spins, start)) return fail(ncclRemoteError, "%s", "timed out in send/recv");
    }
    return ncclSuccess;
}

static ncclResult_t run_split(struct ncclComm *c, struct op *o)
{
    c->hdr->color[c->rank] = o->color;
    c->hdr->key[c->rank] = o->key;
    BAR();
    int newrank = 0, newn = 0;
    for (int r = 0; r < c->nranks; r++)
        if (c->hdr->color[r] == o->color) {
            newn++;
            if (c->hdr->key[r] < o->key || (c->hdr->key[r] == o->key && r < c->rank)) newrank++;
        }
    unsigned count = c->split_count++;
    BAR();
    if (!o->child) return ncclSuccess;
    struct id_payload id = c->id;
    id.nonce = c->id.nonce * 1000003u + (uint64_t)count * 7919u + (uint64_t)(unsigned)o->color + 1;
    o->child->id = id;
    o->child->rank = newrank;
    o->child->nranks = newn;
    return comm_init(o->child);
}

/* ------------------------------------------------------------------------------- groups */
static __thread int group_depth;
static __thread struct ncclComm **group_comms;
static __thread int group_ncomms, group_cap;

static ncclResult_t group_add(struct ncclComm *c)
{
    for (int i = 0; i < group_ncomms; i++)
        if (group_comms[i] == c) return ncclSuccess;
    if (group_ncomms == group_cap) {
        int cap = group_cap ? 2 * group_cap : 8;
        void *v = realloc(group_comms, (size_t)cap * sizeof *group_comms);
        if (!v) return fail(ncclSystemError, "%s", "out of host memory");
        group_comms = v;
        group_cap = cap;
    }
    group_comms[group_ncomms++] = c;
    return ncclSuccess;
}

static ncclResult_t enqueue(struct ncclComm *c, const struct op *o)
{
    if (c->nops == c->cap_ops) {
        int cap = c->cap_ops ? 2 * c->cap_ops : 8;
        void *v = realloc(c->ops, (size_t)cap * sizeof *c->ops);
        if (!v) return fail(ncclSystemError, "%s", "out of host memory");
        c->ops = v;
        c->cap_ops = cap;
    }
    c->ops[c->nops++] = *o;
    return group_add(c);
}

/* All a rank does in one group: init if pending, connect what the ops need (on the
 * service thread), then the collectives in order, then the sends and receives. */
static ncclResult_t run_comm(struct ncclComm *c)
{
    int saved = -1;
    cudaGetDevice(&saved);
    cudaSetDevice(c->dev);
    ncclResult_t r = ncclSuccess;
    if (c->init_pending) r = comm_init(c);
    int coll = 0, np2p = 0;
    unsigned char peers[MAXR] = {0}, need_peers = 0;
    for (int i = 0; i < c->nops; i++) {
        struct op *o = &c->ops[i];
        if (o->type == OP_SEND || o->type == OP_RECV) {
            np2p++;
            if (o->count && !c->p2p_connected[o->root]) peers[o->root] = need_peers = 1;
        } else if (o->type != OP_SPLIT && o->count)
            coll = 1;
    }
    if (!r && ((coll && !c->coll_connected) || need_peers)) {
        /* Kernels the first collective loads lazily on the calling thread. */
        if (fakecudart_load_module_once(1, FAKENCCL_LAZY_BYTES) != cudaSuccess)
            r = fail(ncclUnhandledCudaError, "%s", "loading kernels failed (out of device memory?)");
        if (!r) r = proxy_connect(c, coll, peers);
    }
    static const char *const prof_names[] = {"AllReduce", "Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                             "AlltoAll", "Gather", "Scatter", "Send", "Recv"};
    for (int i = 0; i < c->nops && !r; i++) /* launched: the profiler plugin's events */
        if (c->ops[i].type != OP_SPLIT)
            fakeprof_launch(&c->prof, prof_names[c->ops[i].type], c->nranks, c->rank, c->nch, c->p2p_nch,
                            c->ops[i].send, c->ops[i].recv, c->ops[i].count, c->ops[i].dt, c->ops[i].root);
    for (int i = 0; i < c->nops && !r; i++) {
        struct op *o = &c->ops[i];
        if (o->type == OP_SPLIT) r = run_split(c, o);
        else if (o->type != OP_SEND && o->type != OP_RECV && o->count) r = run_collective(c, o);
    }
    /* The send/receive kernel needs more local memory per thread than the default stack
     * limit: its launch grows the context's local-memory reservation, as NCCL 2.28.9's
     * did on an H200 (1024 -> 1984 bytes per thread), with no allocation call. */
    if (!r && np2p && fakecudart_launch_once(2, 0, FAKENCCL_P2P_LOCAL_BYTES) != cudaSuccess)
        r = fail(ncclUnhandledCudaError, "%s", "launching the send/receive kernel failed (out of device memory?)");
    /* FAKENCCL_P2P_LINGER_MS: the group's end takes that long after the launch (3.5 ms on
     * the H200), so that a sample from another thread can fall between the growth and the
     * call's own closing sample */
    long linger = np2p ? env_long("FAKENCCL_P2P_LINGER_MS", 0, 0, 10000) : 0;
    if (!r && linger) usleep((useconds_t)linger * 1000u);
    if (!r && np2p) {
        struct op *p2p[64];
        int k = 0;
        for (int i = 0; i < c->nops && k < 64; i++)
            if (c->ops[i].type == OP_SEND || c->ops[i].type == OP_RECV) p2p[k++] = &c->ops[i];
        r = run_p2p(c, p2p, k);
    }
    c->nops = 0;
    if (saved >= 0) cudaSetDevice(saved);
    return r;
}

struct job {
    struct ncclComm *c;
    ncclResult_t r;
    char err[256];
};

static void *job_main(void *arg)
{
    struct job *j = arg;
    j->r = run_comm(j->c);
    memcpy(j->err, last_error, sizeof j->err);
    return NULL;
}

/* One rank: on the calling thread. Several (one thread driving several devices): one
 * thread per rank, joined, since each blocks until its peers arrive. */
/* Takes the thread's group list (freed here: threads come and go, their lists with them). */
static struct ncclComm **group_take(int *n)
{
    struct ncclComm **list = group_comms;
    *n = group_ncomms;
    group_comms = NULL;
    group_ncomms = group_cap = 0;
    return list;
}

static ncclResult_t run_list(struct ncclComm **list, int n);

static ncclResult_t group_run(void)
{
    int n;
    struct ncclComm **list = group_take(&n);
    ncclResult_t r = run_list(list, n);
    free(list);
    return r;
}

static ncclResult_t run_list(struct ncclComm **list, int n)
{
    if (n == 0) return ncclSuccess;
    if (n == 1) return run_comm(list[0]);
    struct job *jobs = calloc((size_t)n, sizeof *jobs);
    pthread_t *th = calloc((size_t)n, sizeof *th);
    if (!jobs || !th) {
        free(jobs);
        free(th);
        return fail(ncclSystemError, "%s", "out of host memory");
    }
    ncclResult_t r = ncclSuccess;
    for (int i = 0; i < n; i++) {
        jobs[i].c = list[i];
        if (pthread_create(&th[i], NULL, job_main, &jobs[i])) {
            jobs[i].r = run_comm(jobs[i].c); /* cannot wait for peers: best effort */
            th[i] = 0;
        }
    }
    for (int i = 0; i < n; i++) {
        if (th[i]) pthread_join(th[i], NULL);
        if (jobs[i].r && !r) {
            r = jobs[i].r;
            memcpy(last_error, jobs[i].err, sizeof last_error);
        }
    }
    free(jobs);
    free(th);
    return r;
}

API ncclResult_t ncclGroupStart(void)
{
    group_depth++;
    return ncclSuccess;
}

API ncclResult_t ncclGroupEnd(void)
{
    if (group_depth == 0) return fail(ncclInvalidUsage, "%s", "ncclGroupEnd without ncclGroupStart");
    if (--group_depth) return ncclSuccess;
    return group_run();
}

API ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t *info)
{
    if (!info || info->magic != 0x74685283u) return fail(ncclInvalidArgument, "%s", "simInfo not initialized");
    if (group_depth == 0) return fail(ncclInvalidUsage, "%s", "ncclGroupSimulateEnd without ncclGroupStart");
    if (--group_depth) return ncclSuccess;
    int nops = 0, n;
    struct ncclComm **list = group_take(&n);
    for (int i = 0; i < n; i++) {
        nops += list[i]->nops;
        list[i]->nops = 0; /* simulated, not run */
    }
    free(list);
    info->estimatedTime = 10.0f * (float)nops;
    return ncclSuccess;
}

/* A call outside a group is a group of one. */
static ncclResult_t submit(struct ncclComm *c, const struct op *o)
{
    ncclGroupStart();
    ncclResult_t r = enqueue(c, o);
    ncclResult_t e = ncclGroupEnd();
    return r ? r : e;
}

/* --------------------------------------------------------------------------- arguments */
/* NCCL's ncclCommEnsureReady: a communicator still initializing is not to be used, and
 * one whose init failed keeps its error. */
static ncclResult_t ensure_ready(struct ncclComm *c)
{
    ncclResult_t a = (ncclResult_t)atomic_load(&c->async);
    if (a != ncclInProgress) return a;
    log_warn("Attempt to use communicator before the previous operation returned ncclSuccess");
    return fail(ncclInvalidArgument, "%s", "communicator still initializing");
}

static ncclResult_t check_comm(struct ncclComm *c)
{
    if (!comm_ok(c)) return fail(ncclInvalidArgument, "%s", "invalid communicator");
    if (c->revoked) return fail(ncclInvalidUsage, "%s", "communicator revoked");
    return ensure_ready(c);
}

static ncclResult_t check_args(struct ncclComm *c, const struct op *o, int needs_op, int needs_root)
{
    ncclResult_t r = check_comm(c);
    if (r) return r;
    if ((int)o->dt < 0 || o->dt >= ncclNumTypes) return fail(ncclInvalidArgument, "%s", "invalid data type");
    if (!type_size(o->dt)) return fail(ncclInvalidArgument, "%s", "data type not supported by the fake NCCL");
    if (needs_op && ((int)o->red < 0 || o->red >= ncclNumOps)) return fail(ncclInvalidArgument, "%s", "invalid reduction operation");
    if (needs_root && (o->root < 0 || o->root >= c->nranks)) return fail(ncclInvalidArgument, "%s", "invalid root or peer");
    if (o->count && o->type != OP_RECV && !o->send && !(o->type == OP_SCATTER && c->rank != o->root))
        return fail(ncclInvalidArgument, "%s", "sendbuff is NULL");
    if (o->count && o->type != OP_SEND && !o->recv &&
        !((o->type == OP_REDUCE || o->type == OP_GATHER) && c->rank != o->root))
        return fail(ncclInvalidArgument, "%s", "recvbuff is NULL");
    return ncclSuccess;
}

static ncclResult_t coll(enum op_type type, const void *s, void *rv, size_t count, ncclDataType_t dt,
                         ncclRedOp_t red, int root, ncclComm_t comm, int needs_op, int needs_root)
{
    struct op o = {.type = type, .send = s, .recv = rv, .count = count, .dt = dt, .red = red, .root = root};
    ncclResult_t r = check_args(comm, &o, needs_op, needs_root);
    return r ? r : submit(comm, &o);
}

API ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                               ncclComm_t comm, cudaStream_t stream)
{
    return coll(OP_ALLREDUCE, s, r, count, dt, op, 0, comm, 1, 0);
}

API ncclResult_t ncclReduce(const void *s, void *r, size_t count, ncclDataType_t dt, ncclRedOp_t op, int root,
                            ncclComm_t comm, cudaStream_t stream)
{
    return coll(OP_REDUCE, s, r, count, dt, op, root, comm, 1, 1);
}

API ncclResult_t ncclBroadcast(const void *s, void *r, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,
                               cudaStream_t stream)
{
    return coll(OP_BROADCAST, s, r, count, dt, ncclSum, root, comm, 0, 1);
}

API ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t dt, int root, ncclComm_t comm, cudaStream_t stream)
{
    return coll(OP_BROADCAST, buff, buff, count, dt, ncclSum, root, comm, 0, 1);
}

API ncclResult_t ncclAllGather(const void *s, void *r, size_t count, ncclDataType_t dt, ncclComm_t comm,
                               cudaStream_t stream)
{
    return coll(OP_ALLGATHER, s, r, count, dt, ncclSum, 0, comm, 0, 0);
}

API ncclResult_t ncclReduceScatter(const void *s, void *r, size_t count, ncclDataType_t dt, ncclRedOp_t op,
                                   ncclComm_t comm, cudaStream_t stream)
{
    return coll(OP_REDUCESCATTER, s, r, count, dt, op, 0, comm, 1, 0);
}

API ncclResult_t ncclAlltoAll(const void *s, void *r, size_t count, ncclDataType_t dt, ncclComm_t comm,
                              cudaStream_t stream)
{
    return coll(OP_ALLTOALL, s, r, count, dt, ncclSum, 0, comm, 0, 0);
}

API ncclResult_t ncclGather(const void *s, void *r, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,
                            cudaStream_t stream)
{
    return coll(OP_GATHER, s, r, count, dt, ncclSum, root, comm, 0, 1);
}

API ncclResult_t ncclScatter(const void *s, void *r, size_t count, ncclDataType_t dt, int root, ncclComm_t comm,
                             cudaStream_t stream)
{
    return coll(OP_SCATTER, s, r, count, dt, ncclSum, root, comm, 0, 1);
}

API ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm,
                          cudaStream_t stream)
{
    return coll(OP_SEND, s, NULL, count, dt, ncclSum, peer, comm, 0, 1);
}

API ncclResult_t ncclRecv(void *r, size_t count, ncclDataType_t dt, int peer, ncclComm_t comm, cudaStream_t stream)
{
    return coll(OP_RECV, NULL, r, count, dt, ncclSum, peer, comm, 0, 1);
}

/* ------------------------------------------------------------------- communicator API */
API ncclResult_t ncclGetVersion(int *v)
{
    if (!v) return fail(ncclInvalidArgument, "%s", "version is NULL");
#ifdef FAKENCCL_MEMSTATS
    *v = FAKENCCL_MEMSTATS_VERSION_CODE;
#else
    *v = NCCL_VERSION_CODE;
#endif
    return ncclSuccess;
}

#ifdef FAKENCCL_MEMSTATS
/* NCCL 2.29's own count, from what this communicator really holds on its device: the
 * per-channel structures and device comm (meta) and the transport buffers (conn). Its cuMem
 * buffers are what ncclCommSuspend could release; cudaMalloc'd ones (NCCL_CUMEM_ENABLE=0)
 * cannot. The host FIFO and imported peers' buffers are not this device's memory. Answers,
 * as NCCL does, only for a communicator that is ready. FAKENCCL_MEMSTATS_SKEW=N adds N bytes
 * to the persistent count: NCCL counting memory the trace does not show. */
API ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value)
{
    if (!comm_ok(comm) || !value) return fail(ncclInvalidArgument, "%s", "invalid argument");
    ncclResult_t r = ensure_ready(comm);
    if (r) return r;
    uint64_t cumem = atomic_load(&comm->meta.cumem_bytes) + atomic_load(&comm->conn.cumem_bytes);
    uint64_t plain = atomic_load(&comm->meta.plain_bytes) + atomic_load(&comm->conn.plain_bytes) +
                     (uint64_t)env_long("FAKENCCL_MEMSTATS_SKEW", 0, 0, 1L << 40);
    switch (stat) {
    case ncclStatGpuMemSuspend: *value = cumem; return ncclSuccess;
    case ncclStatGpuMemSuspended: *value = 0; return ncclSuccess;
    case ncclStatGpuMemPersist: *value = plain; return ncclSuccess;
    case ncclStatGpuMemTotal: *value = cumem + plain; return ncclSuccess;
    }
    return fail(ncclInvalidArgument, "%s", "unknown statistic");
}
ALIAS(ncclCommMemStats, x)
#endif

API ncclResult_t ncclGetUniqueId(ncclUniqueId *out)
{
    if (!out) return fail(ncclInvalidArgument, "%s", "uniqueId is NULL");
    struct id_payload id = {.magic = ID_MAGIC, .pid = (int32_t)getpid()};
    if (getrandom(&id.nonce, sizeof id.nonce, 0) != (ssize_t)sizeof id.nonce) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        id.nonce = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ (uint64_t)(uintptr_t)out;
    }
    memset(out, 0, sizeof *out);
    memcpy(out->internal, &id, sizeof id);
    return ncclSuccess;
}

/* Whether an init runs in the background: the config's blocking, else NCCL_COMM_BLOCKING. */
static int nonblocking(const ncclConfig_t *config)
{
    int b = config ? config->blocking : NCCL_CONFIG_UNDEF_INT;
    if (b == NCCL_CONFIG_UNDEF_INT) b = (int)env_long("NCCL_COMM_BLOCKING", 1, 0, 1);
    return b == 0;
}

static void *init_main(void *arg)
{
    struct ncclComm *c = arg;
    atomic_store(&c->async, run_comm(c));
    return NULL;
}

/* A non-blocking init: the communicator is handed out now, initialized on a thread of its
 * own (on the calling thread when none can be made). */
static ncclResult_t init_nonblocking(struct ncclComm *c, ncclComm_t *out)
{
    atomic_store(&c->async, ncclInProgress);
    *out = c;
    if (pthread_create(&c->init_thread, NULL, init_main, c) == 0) {
        c->init_started = 1;
        return ncclInProgress;
    }
    ncclResult_t r = run_comm(c);
    atomic_store(&c->async, r);
    return r;
}

static ncclResult_t init_rank(ncclComm_t *out, int nranks, ncclUniqueId uid, int rank, const ncclConfig_t *config)
{
    if (!out) return fail(ncclInvalidArgument, "%s", "comm is NULL");
    *out = NULL;
    if (nranks < 1 || nranks > MAXR) return fail(ncclInvalidArgument, "%s", "invalid nranks (the fake takes 1..16)");
    if (rank < 0 || rank >= nranks) return fail(ncclInvalidArgument, "%s", "invalid rank");
    if (config && config->magic != 0xcafebeefu) return fail(ncclInvalidArgument, "%s", "config not initialized");
    struct id_payload id;
    memcpy(&id, uid.internal, sizeof id);
    if (id.magic != ID_MAGIC) return fail(ncclInvalidArgument, "%s", "invalid unique id");
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return fail(ncclUnhandledCudaError, "%s", "cudaGetDevice failed");
    struct ncclComm *c = comm_new(nranks, rank, &id, dev);
    if (!c) return fail(ncclSystemError, "%s", "out of host memory");
    if (group_depth == 0 && nonblocking(config)) return init_nonblocking(c, out);
    ncclGroupStart();
    ncclResult_t r = group_add(c);
    ncclResult_t e = ncclGroupEnd();
    if (!r) r = e;
    if (r && !c->init_pending && !c->ready) {
        comm_free(c);
        return r;
    }
    *out = c;
    return r;
}

API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    return init_rank(comm, nranks, id, rank, NULL);
}

API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t *config)
{
    return init_rank(comm, nranks, id, rank, config);
}

API ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nid, ncclUniqueId *ids,
                                          ncclConfig_t *config)
{
    if (nid < 1 || !ids) return fail(ncclInvalidArgument, "%s", "no unique id");
    return init_rank(comm, nranks, ids[0], rank, config);
}

API ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
    if (!comms || ndev < 1 || ndev > MAXR) return fail(ncclInvalidArgument, "%s", "invalid arguments");
    int count = 0, saved = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) return fail(ncclUnhandledCudaError, "%s", "no device");
    for (int i = 0; i < ndev; i++) {
        int d = devlist ? devlist[i] : i;
        if (d < 0 || d >= count) return fail(ncclInvalidArgument, "%s", "invalid device in devlist");
    }
    ncclUniqueId id;
    ncclGetUniqueId(&id);
    cudaGetDevice(&saved);
    ncclResult_t r = ncclGroupStart();
    for (int i = 0; i < ndev && !r; i++) {
        cudaSetDevice(devlist ? devlist[i] : i);
        r = ncclCommInitRank(&comms[i], ndev, id, i);
    }
    ncclResult_t e = ncclGroupEnd();
    cudaSetDevice(saved);
    return r ? r : e;
}

static ncclResult_t split(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, const ncclConfig_t *config)
{
    ncclResult_t r = check_comm(comm);
    if (r) return r;
    if (!newcomm) return fail(ncclInvalidArgument, "%s", "newcomm is NULL");
    if (config && config->magic != 0xcafebeefu) return fail(ncclInvalidArgument, "%s", "config not initialized");
    *newcomm = NULL;
    struct op o = {.type = OP_SPLIT, .color = color, .key = key};
    if (color != NCCL_SPLIT_NOCOLOR) {
        o.child = comm_new(1, 0, &comm->id, comm->dev);
        if (!o.child) return fail(ncclSystemError, "%s", "out of host memory");
        *newcomm = o.child;
    }
    return submit(comm, &o);
}

API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)
{
    return split(comm, color, key, newcomm, config);
}

API ncclResult_t ncclCommShrink(ncclComm_t comm, int *exclude, int nexclude, ncclComm_t *newcomm,
                                ncclConfig_t *config, int flags)
{
    ncclResult_t r = check_comm(comm);
    if (r) return r;
    if (nexclude < 0 || (nexclude && !exclude)) return fail(ncclInvalidArgument, "%s", "invalid exclude list");
    int out = 0;
    for (int i = 0; i < nexclude; i++) out |= exclude[i] == comm->rank;
    return split(comm, out ? NCCL_SPLIT_NOCOLOR : 0, comm->rank, newcomm, config);
}

API ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
    return comm_ok(comm) ? ncclSuccess : fail(ncclInvalidArgument, "%s", "invalid communicator");
}

API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
    if (!comm) return ncclSuccess;
    if (!comm_ok(comm)) return fail(ncclInvalidArgument, "%s", "invalid communicator");
    int saved = -1;
    cudaGetDevice(&saved);
    cudaSetDevice(comm->dev);
    comm_free(comm);
    if (saved >= 0) cudaSetDevice(saved);
    return ncclSuccess;
}

API ncclResult_t ncclCommAbort(ncclComm_t comm)
{
    return ncclCommDestroy(comm);
}

API ncclResult_t ncclCommRevoke(ncclComm_t comm, int flags)
{
    if (!comm_ok(comm)) return fail(ncclInvalidArgument, "%s", "invalid communicator");
    comm->revoked = 1;
    return ncclSuccess;
}

API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err)
{
    if (!comm_ok(comm) || !err) return fail(ncclInvalidArgument, "%s", "invalid argument");
    *err = (ncclResult_t)atomic_load(&comm->async);
    return ncclSuccess;
}

API ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    if (!comm_ok(comm) || !count) return fail(ncclInvalidArgument, "%s", "invalid argument");
    ncclResult_t r = ensure_ready(comm);
    if (r) return r;
    *count = comm->nranks;
    return ncclSuccess;
}

API ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *dev)
{
    if (!comm_ok(comm) || !dev) return fail(ncclInvalidArgument, "%s", "invalid argument");
    ncclResult_t r = ensure_ready(comm);
    if (r) return r;
    *dev = comm->dev;
    return ncclSuccess;
}

API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    if (!comm_ok(comm) || !rank) return fail(ncclInvalidArgument, "%s", "invalid argument");
    ncclResult_t r = ensure_ready(comm);
    if (r) return r;
    *rank = comm->rank;
    return ncclSuccess;
}

/* ---------------------------------------------------------------------------- memory */
static pthread_mutex_t mem_lock = PTHREAD_MUTEX_INITIALIZER;
static struct memrec {
    CUdeviceptr p;
    size_t mapped;
    struct memrec *next;
} *mem_list;

API ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
    if (!ptr || !size) return fail(ncclInvalidArgument, "%s", "invalid argument");
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess) return fail(ncclUnhandledCudaError, "%s", "cudaGetDevice failed");
    struct memrec *m = malloc(sizeof *m);
    if (!m) return fail(ncclSystemError, "%s", "out of host memory");
    ncclResult_t r = ncclCuMemAlloc(dev, size, &m->p, &m->mapped, NULL);
    if (r) {
        free(m);
        return r;
    }
    if (m->mapped) log_alloc(LOG_SHAREABLE, size, (void *)(uintptr_t)m->p);
    pthread_mutex_lock(&mem_lock);
    m->next = mem_list;
    mem_list = m;
    pthread_mutex_unlock(&mem_lock);
    *ptr = (void *)(uintptr_t)m->p;
    return ncclSuccess;
}

API ncclResult_t ncclMemFree(void *ptr)
{
    if (!ptr) return ncclSuccess;
    pthread_mutex_lock(&mem_lock);
    struct memrec **pp = &mem_list;
    while (*pp && (*pp)->p != (CUdeviceptr)(uintptr_t)ptr) pp = &(*pp)->next;
    struct memrec *m = *pp;
    if (m) *pp = m->next;
    pthread_mutex_unlock(&mem_lock);
    if (!m) return fail(ncclInvalidArgument, "%s", "pointer not from ncclMemAlloc");
    buf_free(m->p, m->mapped);
    free(m);
    return ncclSuccess;
}

struct reg {
    void *buff;
    size_t size;
};

API ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
    ncclResult_t r = check_comm(comm);
    if (r) return r;
    if (!handle || !buff) return fail(ncclInvalidArgument, "%s", "invalid argument");
    struct reg *g = malloc(sizeof *g);
    if (!g) return fail(ncclSystemError, "%s", "out of host memory");
    *g = (struct reg){buff, size};
    *handle = g;
    return ncclSuccess;
}

API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)
{
    ncclResult_t r = check_comm(comm);
    if (r) return r;
    free(handle);
    return ncclSuccess;
}

API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int flags)
{
    void *h = NULL;
    ncclResult_t r = win ? ncclCommRegister(comm, buff, size, &h) : fail(ncclInvalidArgument, "%s", "win is NULL");
    if (!r) *win = h;
    return r;
}

API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
    return ncclCommDeregister(comm, win);
}

/* ---------------------------------------------------------------------------- errors */
API const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

API const char *ncclGetLastError(ncclComm_t comm)
{
    return last_error;
}

/* pncclX: the profiling names, aliases of the same functions (ALIAS: at the top). */
FAKE_NCCL_API(ALIAS)
ALIAS(ncclGetErrorString, x)
ALIAS(ncclGetLastError, x)
