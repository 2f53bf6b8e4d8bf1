/* nccl_profiler_abi.h: the layouts of NCCL's profiler plugin interface that nccl_profiler.c implements (versions 4 and 5). */
#ifndef GMT_NCCL_PROFILER_ABI_H
#define GMT_NCCL_PROFILER_ABI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Our own declarations of what NCCL passes to a profiler plugin, written from the layouts
 * of NCCL's ext-profiler interface and checked field by field against NCCL 2.27 and
 * 2.28.9. Only the parts the library reads are named; the rest of the event union is
 * padding it never touches.
 *
 * NCCL finds the plugin by dlopen(NCCL_PROFILER_PLUGIN) (RTLD_NOW | RTLD_LOCAL; unset:
 * "libnccl-profiler.so"; "none": no plugin), then dlsym of the newest struct it knows:
 *   NCCL 2.28      "ncclProfiler_v5", else "ncclProfiler_v4", ... "ncclProfiler_v1"
 *   NCCL 2.29 on   "ncclProfiler_v6" first, then "ncclProfiler_v5" (adapted)
 *   NCCL 2.27      "ncclProfiler_v4", ...
 *   NCCL 2.23-2.26 v1-v3 only: their collective layout differs; the library offers none
 *                  of them, so those NCCLs load no plugin from it.
 * One struct serves every communicator: init once per communicator, at its init (before
 * its proxy thread starts), finalize at its destroy.
 *
 * The event descriptor is the same for v4 and v5 where it matters here: v5 widens `type`
 * from uint8_t to uint64_t, which changes no offset (the next field is a pointer), and
 * adds union members (groupApi, collApi, p2pApi, kernelLaunch) that are not
 * collectives; `coll` and `p2p` keep their v4 layout, with one pointer appended.
 */

typedef int gmt_nccl_prof_result_t; /* ncclResult_t: 0 success */

/* Event types (the descriptor's `type`, and the bits of the activation mask). */
enum {
    GMT_NCCL_PROF_GROUP = 1 << 0,
    GMT_NCCL_PROF_COLL = 1 << 1,          /* a collective, as launched: algo, proto, channels */
    GMT_NCCL_PROF_P2P = 1 << 2,           /* a send or receive, as launched: channels */
    GMT_NCCL_PROF_PROXY_OP = 1 << 3,
    GMT_NCCL_PROF_PROXY_STEP = 1 << 4,
    GMT_NCCL_PROF_PROXY_CTRL = 1 << 5,
    GMT_NCCL_PROF_KERNEL_CH = 1 << 6,
    GMT_NCCL_PROF_NET_PLUGIN = 1 << 7,
    GMT_NCCL_PROF_GROUP_API = 1 << 8,     /* v5 */
    GMT_NCCL_PROF_COLL_API = 1 << 9,      /* v5 */
    GMT_NCCL_PROF_P2P_API = 1 << 10,      /* v5 */
    GMT_NCCL_PROF_KERNEL_LAUNCH = 1 << 11 /* v5 */
};

/* The descriptor's collective part (`coll`, the union's member for GMT_NCCL_PROF_COLL). */
struct gmt_nccl_prof_coll {
    uint64_t seq;           /* seqNumber: the communicator's count of this function so far */
    const char *func;       /* "AllReduce", "AllGather", ... */
    const void *send_buff;
    void *recv_buff;
    size_t count;           /* elements (AllGather and Broadcast: as NCCL counts them) */
    int root;
    const char *datatype;   /* "ncclFloat32", ... */
    uint8_t nchannels;
    uint8_t nwarps;
    const char *algo;       /* "RING", "TREE", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS",
                             * "NVLS_TREE", "PAT" */
    const char *proto;      /* "LL", "LL128", "SIMPLE" */
    /* v5 appends parentGroup (a pointer) */
};

/* The point-to-point part (`p2p`, for GMT_NCCL_PROF_P2P). */
struct gmt_nccl_prof_p2p {
    const char *func;       /* "Send", "Recv" */
    void *buff;
    const char *datatype;
    size_t count;
    int peer;
    uint8_t nchannels;
    /* v5 appends parentGroup (a pointer) */
};

/* ncclProfilerEventDescr_v5_t / _v4_t up to their union. */
struct gmt_nccl_prof_descr {
    union {
        uint64_t v5;        /* v5: uint64_t */
        uint8_t v4;         /* v4: uint8_t (little-endian: the low byte of v5's word) */
    } type;
    void *parent;
    int rank;               /* the rank in the communicator that made the event */
    union {
        struct gmt_nccl_prof_coll coll;
        struct gmt_nccl_prof_p2p p2p;
        unsigned char other[96]; /* the members the library does not read */
    } u;
};
_Static_assert(offsetof(struct gmt_nccl_prof_descr, parent) == 8 &&
                   offsetof(struct gmt_nccl_prof_descr, rank) == 16 &&
                   offsetof(struct gmt_nccl_prof_descr, u) == 24,
               "NCCL's descriptor header: type, parentObj, rank, then the union at 24");
_Static_assert(offsetof(struct gmt_nccl_prof_coll, func) == 8 &&
                   offsetof(struct gmt_nccl_prof_coll, count) == 32 &&
                   offsetof(struct gmt_nccl_prof_coll, root) == 40 &&
                   offsetof(struct gmt_nccl_prof_coll, datatype) == 48 &&
                   offsetof(struct gmt_nccl_prof_coll, nchannels) == 56 &&
                   offsetof(struct gmt_nccl_prof_coll, nwarps) == 57 &&
                   offsetof(struct gmt_nccl_prof_coll, algo) == 64 &&
                   offsetof(struct gmt_nccl_prof_coll, proto) == 72,
               "NCCL 2.27/2.28's coll layout");
_Static_assert(offsetof(struct gmt_nccl_prof_p2p, count) == 24 &&
                   offsetof(struct gmt_nccl_prof_p2p, peer) == 32 &&
                   offsetof(struct gmt_nccl_prof_p2p, nchannels) == 36,
               "NCCL 2.27/2.28's p2p layout");

/* NCCL's logger (ncclDebugLogger_t); the library never calls it. */
typedef void (*gmt_nccl_prof_logger_t)(int level, unsigned long flags, const char *file,
                                       int line, const char *fmt, ...);

/* ncclProfiler_v5_t (NCCL 2.28 on). `context` points into NCCL's communicator (its
 * profilerContext field); `comm_id` is NCCL's commHash. */
struct gmt_nccl_profiler_v5 {
    const char *name;
    gmt_nccl_prof_result_t (*init)(void **context, uint64_t comm_id, int *activation_mask,
                                   const char *comm_name, int nnodes, int nranks, int rank,
                                   gmt_nccl_prof_logger_t logfn);
    gmt_nccl_prof_result_t (*start_event)(void *context, void **handle,
                                          struct gmt_nccl_prof_descr *descr);
    gmt_nccl_prof_result_t (*stop_event)(void *handle);
    gmt_nccl_prof_result_t (*record_event_state)(void *handle, int state, void *state_args);
    gmt_nccl_prof_result_t (*finalize)(void *context);
};

/* ncclProfiler_v4_t (NCCL 2.27): init takes the same facts in another order. */
struct gmt_nccl_profiler_v4 {
    const char *name;
    gmt_nccl_prof_result_t (*init)(void **context, int *activation_mask, const char *comm_name,
                                   uint64_t comm_hash, int nnodes, int nranks, int rank,
                                   gmt_nccl_prof_logger_t logfn);
    gmt_nccl_prof_result_t (*start_event)(void *context, void **handle,
                                          struct gmt_nccl_prof_descr *descr);
    gmt_nccl_prof_result_t (*stop_event)(void *handle);
    gmt_nccl_prof_result_t (*record_event_state)(void *handle, int state, void *state_args);
    gmt_nccl_prof_result_t (*finalize)(void *context);
};

#endif
