/* nccl_abi.h: the NCCL 2.28 ABI declared by hand (no nccl.h needed to build), and the one list of hooked NCCL entry points. */
#ifndef GMT_NCCL_ABI_H
#define GMT_NCCL_ABI_H

#include <stddef.h>
#include <stdint.h>

#include "nccl_types.h"

/* Handles are opaque pointers; only their values matter to us. */
typedef struct ncclComm *ncclComm_t;
typedef struct ncclWindow_vidmem *ncclWindow_t;
typedef struct CUstream_st *cudaStream_t;

/* NCCL_VERSION(2, 28, 9): versions from 2.9 on are X*10000 + Y*100 + Z. */
#define GMT_NCCL_VERSION_CODE 22809
#define GMT_NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[GMT_NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

typedef enum {
    ncclSuccess = 0,
    ncclUnhandledCudaError = 1,
    ncclSystemError = 2,
    ncclInternalError = 3,
    ncclInvalidArgument = 4,
    ncclInvalidUsage = 5,
    ncclRemoteError = 6,
    ncclInProgress = 7,
    ncclNumResults = 8
} ncclResult_t;

/* Element types (the list is format/nccl_types.h); aliases (ncclChar = ncclInt8, ncclHalf =
 * ncclFloat16, …) share values. */
typedef enum {
#define GMT_X(name, val, size) name = val,
    GMT_NCCL_TYPES(GMT_X)
#undef GMT_X
    ncclNumTypes = 12
} ncclDataType_t;
#define ncclChar ncclInt8
#define ncclInt ncclInt32
#define ncclHalf ncclFloat16
#define ncclFloat ncclFloat32
#define ncclDouble ncclFloat64

/* Reduction ops: built-ins 0..4; values from ncclNumOps up are made by ncclRedOpCreate*.
 * The enum is int-sized, as in NCCL (its largest value is INT_MAX). */
typedef enum {
    ncclSum = 0, ncclProd = 1, ncclMax = 2, ncclMin = 3, ncclAvg = 4,
    ncclNumOps = 5,
    ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

#define GMT_NCCL_CONFIG_MAGIC 0xcafebeefu
#define GMT_NCCL_CONFIG_UNDEF_INT (-2147483647 - 1)
#define GMT_NCCL_SPLIT_NOCOLOR (-1)

/* ncclConfig_t as laid out by NCCL 2.28 (ncclConfig_v22800). Callers set size, magic
 * and version; NCCL reads only what `size` covers, so older layouts still work. */
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    int blocking;
    int cgaClusterSize;
    int minCTAs;
    int maxCTAs;
    const char *netName;
    int splitShare;
    int trafficClass;
    const char *commName;
    int collnetEnable;
    int CTAPolicy;
    int shrinkShare;
    int nvlsCTAs;
    int nChannelsPerNetPeer;
    int nvlinkCentricSched;
} ncclConfig_t;

/* ncclSimInfo_t (v22200): filled by ncclGroupSimulateEnd. */
typedef struct {
    size_t size;
    unsigned int magic;
    unsigned int version;
    float estimatedTime;
} ncclSimInfo_t;

/*
 * The hooked entry points, each exported as ncclNAME and pncclNAME (NCCL defines both;
 * profilers override one and call the other). One row per function:
 *   X(NAME, OP, SHAPE, (parameters), (arguments), (what the SHAPE's handlers get))
 * OP is the gmt_op its scope carries (trace_format.h). SHAPE names the pair of
 * handlers in hooks_nccl.c (SHAPE_pre before the real call, SHAPE_post after). The
 * calls of a training loop's hot path come first (hooks_nccl.c caches the real functions
 * in this order: theirs share a cache line).
 */
#define GMT_NCCL_ENTRIES(X)                                                                    \
    X(GroupStart, Group, group_start, (void), (), (0))                                         \
    X(GroupEnd, Group, group_end, (void), (), (0))                                             \
    X(AllReduce, AllReduce, coll,                                                              \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,            \
       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream),                                  \
      (sendbuff, recvbuff, count, datatype, op, comm, stream),                                 \
      (comm, count, datatype, -1, stream))                                                     \
    X(AllGather, AllGather, coll,                                                              \
      (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,        \
       ncclComm_t comm, cudaStream_t stream),                                                  \
      (sendbuff, recvbuff, sendcount, datatype, comm, stream),                                 \
      (comm, sendcount, datatype, -1, stream))                                                 \
    X(ReduceScatter, ReduceScatter, coll,                                                      \
      (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,        \
       ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream),                                  \
      (sendbuff, recvbuff, recvcount, datatype, op, comm, stream),                             \
      (comm, recvcount, datatype, -1, stream))                                                 \
    X(Broadcast, Broadcast, coll,                                                              \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,  \
       ncclComm_t comm, cudaStream_t stream),                                                  \
      (sendbuff, recvbuff, count, datatype, root, comm, stream),                               \
      (comm, count, datatype, root, stream))                                                   \
    X(Bcast, Bcast, coll,                                                                      \
      (void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,           \
       cudaStream_t stream),                                                                   \
      (buff, count, datatype, root, comm, stream),                                             \
      (comm, count, datatype, root, stream))                                                   \
    X(Reduce, Reduce, coll,                                                                    \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,            \
       ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream),                        \
      (sendbuff, recvbuff, count, datatype, op, root, comm, stream),                           \
      (comm, count, datatype, root, stream))                                                   \
    X(AlltoAll, AlltoAll, coll,                                                                \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,            \
       ncclComm_t comm, cudaStream_t stream),                                                  \
      (sendbuff, recvbuff, count, datatype, comm, stream),                                     \
      (comm, count, datatype, -1, stream))                                                     \
    X(Gather, Gather, coll,                                                                    \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,  \
       ncclComm_t comm, cudaStream_t stream),                                                  \
      (sendbuff, recvbuff, count, datatype, root, comm, stream),                               \
      (comm, count, datatype, root, stream))                                                   \
    X(Scatter, Scatter, coll,                                                                  \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,  \
       ncclComm_t comm, cudaStream_t stream),                                                  \
      (sendbuff, recvbuff, count, datatype, root, comm, stream),                               \
      (comm, count, datatype, root, stream))                                                   \
    X(Send, Send, coll,                                                                        \
      (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, \
       cudaStream_t stream),                                                                   \
      (sendbuff, count, datatype, peer, comm, stream),                                         \
      (comm, count, datatype, peer, stream))                                                   \
    X(Recv, Recv, coll,                                                                        \
      (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,       \
       cudaStream_t stream),                                                                   \
      (recvbuff, count, datatype, peer, comm, stream),                                         \
      (comm, count, datatype, peer, stream))                                                   \
    X(GroupSimulateEnd, GroupSimulateEnd, group_sim, (ncclSimInfo_t *siminfo), (siminfo), (0)) \
    X(CommInitRank, CommInitRank, init_rank,                                                   \
      (ncclComm_t *newcomm, int nranks, ncclUniqueId commId, int rank),                        \
      (newcomm, nranks, commId, rank), (newcomm, nranks, rank, 1, &commId, NULL))              \
    X(CommInitAll, CommInitAll, init_all, (ncclComm_t *comms, int ndev, const int *devlist),   \
      (comms, ndev, devlist), (comms, ndev, devlist))                                          \
    X(CommInitRankConfig, CommInitRankConfig, init_rank,                                       \
      (ncclComm_t *newcomm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config),  \
      (newcomm, nranks, commId, rank, config), (newcomm, nranks, rank, 1, &commId, config))    \
    X(CommInitRankScalable, CommInitRankScalable, init_rank,                                   \
      (ncclComm_t *newcomm, int nranks, int myrank, int nId, ncclUniqueId *commIds,            \
       ncclConfig_t *config),                                                                  \
      (newcomm, nranks, myrank, nId, commIds, config),                                         \
      (newcomm, nranks, myrank, nId, commIds, config))                                         \
    X(CommSplit, CommSplit, split,                                                             \
      (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config),        \
      (comm, color, key, newcomm, config), (comm, newcomm, config))                            \
    X(CommShrink, CommShrink, split,                                                           \
      (ncclComm_t comm, int *excludeRanksList, int excludeRanksCount, ncclComm_t *newcomm,     \
       ncclConfig_t *config, int shrinkFlags),                                                 \
      (comm, excludeRanksList, excludeRanksCount, newcomm, config, shrinkFlags),               \
      (comm, newcomm, config))                                                                 \
    X(CommFinalize, CommFinalize, comm, (ncclComm_t comm), (comm), (comm, 0))                  \
    X(CommDestroy, CommDestroy, comm, (ncclComm_t comm), (comm), (comm, 0))                    \
    X(CommAbort, CommAbort, comm, (ncclComm_t comm), (comm), (comm, 0))                        \
    X(CommRevoke, CommRevoke, comm, (ncclComm_t comm, int revokeFlags), (comm, revokeFlags),   \
      (comm, 0))                                                                               \
    X(MemAlloc, MemAlloc, mem_alloc, (void **ptr, size_t size), (ptr, size), (ptr, size))      \
    X(MemFree, MemFree, mem_free, (void *ptr), (ptr), (ptr))                                   \
    X(CommRegister, CommRegister, comm,                                                        \
      (const ncclComm_t comm, void *buff, size_t size, void **handle),                         \
      (comm, buff, size, handle), (comm, size))                                                \
    X(CommDeregister, CommDeregister, comm, (const ncclComm_t comm, void *handle),             \
      (comm, handle), (comm, 0))                                                               \
    X(CommWindowRegister, CommWindowRegister, comm,                                            \
      (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags),             \
      (comm, buff, size, win, winFlags), (comm, size))                                         \
    X(CommWindowDeregister, CommWindowDeregister, comm, (ncclComm_t comm, ncclWindow_t win),   \
      (comm, win), (comm, 0))

/* Prototypes of every hooked name, both prefixes. */
#define GMT_NCCL_PROTO(name, op, shape, params, args, sargs) \
    ncclResult_t nccl##name params;                          \
    ncclResult_t pnccl##name params;
GMT_NCCL_ENTRIES(GMT_NCCL_PROTO)
#undef GMT_NCCL_PROTO

/* Queried (never hooked) to describe a communicator. */
ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank);
ncclResult_t ncclCommCount(const ncclComm_t comm, int *count);
ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device);
ncclResult_t ncclGetUniqueId(ncclUniqueId *uniqueId);
ncclResult_t ncclGetVersion(int *version);
const char *ncclGetErrorString(ncclResult_t result);

#endif
