/* fake_nccl_profiler.c: the simulated NCCL's profiler plugin interface: loads NCCL_PROFILER_PLUGIN as NCCL 2.28 does and calls it per communicator and per launched operation. */

/* Stands for NCCL 2.28.9's src/plugin/profiler.cc and the calls enqueue.cc and group.cc
 * make into it:
 * - at the first communicator init, dlopen(NCCL_PROFILER_PLUGIN, RTLD_NOW | RTLD_LOCAL)
 *   (unset: "libnccl-profiler.so"; "none": no plugin), then dlsym "ncclProfiler_v5", else
 *   "ncclProfiler_v4" (FAKENCCL_PROFILER_VERSION=4: "ncclProfiler_v4" only, as NCCL 2.27
 *   does); the library is closed again after the last communicator's finalize;
 * - init(&comm->ctx, commHash, &mask, name, nNodes, nRanks, rank, logger) (v4: the
 *   arguments in v4's order), one activation mask for the process, the last init's;
 * - per launched collective, in the order NCCL makes them for a bare call: GroupApi
 *   start, CollApi start and stop, Group start, Coll start and stop, Group stop, GroupApi
 *   stop, each only when the mask asks for it or one of the events under it, and a stop
 *   only for a non-NULL handle; a send or receive likewise with P2pApi and P2p. All-to-all,
 *   gather and scatter are launched as sends and receives, as NCCL does;
 * - a communicator of one rank launches nothing (NCCL copies locally), nor does a
 *   zero-count operation;
 * - v4 events go through NCCL's adapter, which copies `type` into a descriptor whose
 *   other bytes it never initialises: here they are filled with 0xab.
 * The choice of algorithm, protocol and channels is a rule of the fake's own, chosen so
 * tests can predict it (the real tuner weighs bandwidth and latency models):
 *   bytes = count x element size;
 *   protocol: LL up to 64 KiB, LL128 up to 1 MiB, SIMPLE above;
 *   algorithm: TREE for an AllReduce of up to 256 KiB on more than 2 ranks, else RING;
 *   channels: LL 1, LL128 half the communicator's channels (at least 1), SIMPLE all;
 *   sends and receives the communicator's p2p channels;
 *   warps: 16 for SIMPLE, else 8.
 * FAKENCCL_NO_PROFILER=1: an NCCL from before the interface (2.22): no plugin is loaded,
 * whatever NCCL_PROFILER_PLUGIN says. */

#include "fake_nccl_profiler.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* NCCL's event types (ncclProfileGroup ...), as the interface numbers them. */
enum {
    EV_GROUP = 1 << 0, EV_COLL = 1 << 1, EV_P2P = 1 << 2, EV_PROXY_OP = 1 << 3,
    EV_PROXY_STEP = 1 << 4, EV_KERNEL_CH = 1 << 6, EV_NET = 1 << 7, EV_GROUP_API = 1 << 8,
    EV_COLL_API = 1 << 9, EV_P2P_API = 1 << 10, EV_KERNEL_LAUNCH = 1 << 11
};

/* The v5 descriptor as NCCL lays it out (written here independently of the library's
 * declarations, so that a mistake in one shows against the other). */
struct descr {
    uint64_t type;
    void *parentObj;
    int rank;
    union {
        struct { bool graphCaptured; int groupDepth; } groupApi;
        struct { const char *func; size_t count; const char *datatype; int root; void *stream; bool graphCaptured; } collApi;
        struct { const char *func; size_t count; const char *datatype; void *stream; bool graphCaptured; } p2pApi;
        struct {
            uint64_t seqNumber;
            const char *func;
            const void *sendBuff;
            void *recvBuff;
            size_t count;
            int root;
            const char *datatype;
            uint8_t nChannels;
            uint8_t nWarps;
            const char *algo;
            const char *proto;
            void *parentGroup;
        } coll;
        struct {
            const char *func;
            void *buff;
            const char *datatype;
            size_t count;
            int peer;
            uint8_t nChannels;
            void *parentGroup;
        } p2p;
        unsigned char pad[128];
    };
};

typedef void (*logger_t)(int, unsigned long, const char *, int, const char *, ...);
struct plugin_v5 {
    const char *name;
    int (*init)(void **, uint64_t, int *, const char *, int, int, int, logger_t);
    int (*startEvent)(void *, void **, struct descr *);
    int (*stopEvent)(void *);
    int (*recordEventState)(void *, int, void *);
    int (*finalize)(void *);
};
struct plugin_v4 {
    const char *name;
    int (*init)(void **, int *, const char *, uint64_t, int, int, int, logger_t);
    int (*startEvent)(void *, void **, struct descr *);
    int (*stopEvent)(void *);
    int (*recordEventState)(void *, int, void *);
    int (*finalize)(void *);
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *lib;
static int refs, version; /* version: 5 or 4 while loaded */
static struct plugin_v5 *v5;
static struct plugin_v4 *v4;
static int event_mask; /* ncclProfilerEventMask: one for the process */

static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt, ...)
{
    (void)level; (void)flags; (void)file; (void)line; (void)fmt;
}

static bool load(void)
{
    if (refs++ > 0)
        return version != 0;
    const char *no = getenv("FAKENCCL_NO_PROFILER");
    if (no && strcmp(no, "1") == 0)
        return false;
    const char *name = getenv("NCCL_PROFILER_PLUGIN");
    if (name && strcasecmp(name, "none") == 0)
        return false;
    lib = dlopen(name && *name ? name : "libnccl-profiler.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return false;
    const char *want = getenv("FAKENCCL_PROFILER_VERSION");
    if (!(want && strcmp(want, "4") == 0) && (v5 = dlsym(lib, "ncclProfiler_v5")))
        version = 5;
    else if ((v4 = dlsym(lib, "ncclProfiler_v4")))
        version = 4;
    if (!version) {
        dlclose(lib);
        lib = NULL;
    }
    return version != 0;
}

static void unload(void)
{
    if (--refs == 0 && lib) {
        dlclose(lib);
        lib = NULL;
        v5 = NULL;
        v4 = NULL;
        version = 0;
    }
}

static uint64_t hash_of(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0x9e3779b97f4a7c15ull; /* not COMM's FNV-1a: NCCL's commHash is its own */
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull + (h >> 29);
    return h;
}

void fakeprof_init(struct fakeprof *p, const void *id, size_t id_len, int nnodes, int nranks,
                   int rank)
{
    memset(p, 0, sizeof *p);
    p->hash = hash_of(id, id_len);
    pthread_mutex_lock(&mu);
    if (load()) {
        int mask = 0, err = version == 5
            ? v5->init(&p->ctx, p->hash, &mask, "", nnodes, nranks, rank, logger)
            : v4->init(&p->ctx, &mask, "", p->hash, nnodes, nranks, rank, logger);
        /* NCCL hands the plugin the address of its one mask; each init may change it */
        if (!err)
            __atomic_store_n(&event_mask, mask, __ATOMIC_RELAXED);
    }
    p->mask = version ? __atomic_load_n(&event_mask, __ATOMIC_RELAXED) : 0;
    p->inited = 1;
    pthread_mutex_unlock(&mu);
}

void fakeprof_fini(struct fakeprof *p)
{
    if (!p->inited)
        return;
    p->inited = 0;
    pthread_mutex_lock(&mu);
    if (version && p->ctx)
        version == 5 ? v5->finalize(p->ctx) : v4->finalize(p->ctx);
    unload();
    pthread_mutex_unlock(&mu);
    p->ctx = NULL;
}

/* NCCL's v4 adapter: only the fields v4 has, in an uninitialised descriptor. */
static int start(struct fakeprof *p, void **h, struct descr *d)
{
    *h = NULL;
    if (version == 5)
        return v5->startEvent(p->ctx, h, d);
    struct descr x;
    memset(&x, 0xab, sizeof x);
    *(uint8_t *)&x.type = (uint8_t)d->type;
    x.parentObj = d->parentObj;
    x.rank = d->rank;
    if (d->type == EV_COLL) {
        x.coll = d->coll;
        x.coll.parentGroup = (void *)(uintptr_t)0xababababababababull;
    } else if (d->type == EV_P2P) {
        x.p2p = d->p2p;
        x.p2p.parentGroup = (void *)(uintptr_t)0xababababababababull;
    } else if (d->type != EV_GROUP) {
        return 0; /* the API events are v5's: the adapter drops them */
    }
    return v4->startEvent(p->ctx, h, &x);
}
static void stop(void *h)
{
    if (h)
        version == 5 ? v5->stopEvent(h) : v4->stopEvent(h);
}

static size_t type_size(int t)
{
    static const unsigned char sz[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
    return t >= 0 && t < (int)sizeof sz ? sz[t] : 0;
}
static const char *type_name(int t)
{
    static const char *const n[] = {"ncclInt8", "ncclUint8", "ncclInt32", "ncclUint32",
                                    "ncclInt64", "ncclUint64", "ncclFloat16", "ncclFloat32",
                                    "ncclFloat64", "ncclBfloat16", "ncclFloat8e4m3",
                                    "ncclFloat8e5m2"};
    return t >= 0 && t < (int)(sizeof n / sizeof n[0]) ? n[t] : "ncclInt8";
}
static int func_index(const char *f)
{
    static const char *const n[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                    "AllReduce", "SendRecv", "Send", "Recv", "AlltoAll",
                                    "Gather", "Scatter"};
    for (int i = 0; i < (int)(sizeof n / sizeof n[0]); i++)
        if (strcmp(f, n[i]) == 0)
            return i;
    return 15;
}

static void p2p(struct fakeprof *p, const char *func, int rank, int nch, void *buff, size_t count,
                int datatype, int peer)
{
    int m = p->mask;
    void *api = NULL, *grp = NULL, *ev = NULL;
    struct descr d;
    if (m & (EV_P2P_API | EV_P2P | EV_PROXY_OP | EV_PROXY_STEP | EV_KERNEL_CH | EV_NET)) {
        memset(&d, 0, sizeof d);
        d.type = EV_P2P_API;
        d.p2pApi.func = func;
        d.p2pApi.count = count;
        d.p2pApi.datatype = type_name(datatype);
        start(p, &api, &d);
        stop(api);
    }
    if (m & (EV_GROUP | EV_COLL | EV_P2P | EV_PROXY_OP | EV_PROXY_STEP | EV_KERNEL_CH | EV_NET)) {
        memset(&d, 0, sizeof d);
        d.type = EV_GROUP;
        start(p, &grp, &d);
    }
    if (m & (EV_P2P | EV_PROXY_OP | EV_PROXY_STEP | EV_KERNEL_CH | EV_NET)) {
        memset(&d, 0, sizeof d);
        d.type = EV_P2P;
        d.parentObj = api;
        d.rank = rank;
        d.p2p.func = func;
        d.p2p.buff = buff;
        d.p2p.count = count;
        d.p2p.datatype = type_name(datatype);
        d.p2p.peer = peer;
        d.p2p.nChannels = (uint8_t)nch;
        d.p2p.parentGroup = grp;
        start(p, &ev, &d);
        stop(ev);
    }
    stop(grp);
}

void fakeprof_launch(struct fakeprof *p, const char *func, int nranks, int rank, int nchannels,
                     int p2p_nchannels, const void *send, void *recv, size_t count,
                     int datatype, int root)
{
    if (!p->mask || !p->ctx || nranks <= 1 || count == 0)
        return;
    int f = func_index(func);
    size_t es = type_size(datatype);
    if (f == 6 || f == 7) { /* Send, Recv: root is the peer */
        p2p(p, func, rank, p2p_nchannels, f == 6 ? (void *)(uintptr_t)send : recv, count, datatype, root);
        return;
    }
    if (f >= 8) { /* AlltoAll, Gather, Scatter: sends and receives, as NCCL enqueues them */
        for (int r = 0; r < nranks; r++) {
            bool s = f == 8 || (f == 9 && r == root) || (f == 10 && rank == root);
            bool v = f == 8 || (f == 9 && rank == root) || (f == 10 && r == root);
            if (s)
                p2p(p, "Send", rank, p2p_nchannels, (char *)(uintptr_t)send + (f == 9 ? 0 : r * count * es), count, datatype, r);
            if (v)
                p2p(p, "Recv", rank, p2p_nchannels, (char *)recv + (f == 10 ? 0 : r * count * es), count, datatype, r);
        }
        return;
    }
    size_t bytes = count * es;
    const char *proto = bytes <= 64 * 1024 ? "LL" : bytes <= 1024 * 1024 ? "LL128" : "SIMPLE";
    const char *algo = f == 4 && nranks > 2 && bytes <= 256 * 1024 ? "TREE" : "RING";
    int nch = proto[0] == 'S' ? nchannels : proto[2] ? (nchannels / 2 ? nchannels / 2 : 1) : 1;
    int m = p->mask;
    void *gapi = NULL, *capi = NULL, *grp = NULL, *ev = NULL;
    struct descr d;
    if (m & (EV_GROUP_API | EV_COLL_API | EV_P2P_API | EV_KERNEL_LAUNCH | EV_GROUP | EV_COLL |
             EV_P2P | EV_PROXY_OP | EV_PROXY_STEP | EV_KERNEL_CH | EV_NET)) {
        memset(&d, 0, sizeof d);
        d.type = EV_GROUP_API;
        start(p, &gapi, &d);
    }
    if (m & (EV_COLL_API | EV_COLL | EV_PROXY_OP | EV_PROXY_STEP | EV_KERNEL_CH | EV_NET)) {
        memset(&d, 0, sizeof d);
        d.type = EV_COLL_API;
        d.parentObj = gapi;
        d.collApi.func = func;
        d.collApi.count = count;
        d.collApi.datatype = type_name(datatype);
        d.collApi.root = root;
        start(p, &capi, &d);
        stop(capi);
    }
    if (m & (EV_GROUP | EV_COLL | EV_P2P | EV_PROXY_OP | EV_PROXY_STEP | EV_KERNEL_CH | EV_NET)) {
        memset(&d, 0, sizeof d);
        d.type = EV_GROUP;
        start(p, &grp, &d);
    }
    if (m & (EV_COLL | EV_PROXY_OP | EV_PROXY_STEP | EV_KERNEL_CH | EV_NET)) {
        memset(&d, 0, sizeof d);
        d.type = EV_COLL;
        d.parentObj = capi;
        d.rank = rank;
        d.coll.seqNumber = p->seq[f];
        d.coll.func = func;
        d.coll.sendBuff = send;
        d.coll.recvBuff = recv;
        d.coll.count = count;
        d.coll.root = root;
        d.coll.datatype = type_name(datatype);
        d.coll.nChannels = (uint8_t)nch;
        d.coll.nWarps = proto[0] == 'S' ? 16 : 8;
        d.coll.algo = algo;
        d.coll.proto = proto;
        d.coll.parentGroup = grp;
        start(p, &ev, &d);
        stop(ev);
    }
    p->seq[f]++;
    stop(grp);
    stop(gapi);
}
