/* fake_nccl.h: the NCCL 2.28.9 ABI (types, enum values, struct layouts, prototypes) declared by hand for the fake libnccl.so.2 and its users. */
#ifndef FAKE_NCCL_H
#define FAKE_NCCL_H

/* Values and layouts are those of nccl.h from NCCL 2.28.9 (checked against the real
 * header by tests/progs/fake_abi_check.c where one is installed). Each ncclX below is
 * also exported as pncclX by the fake, like the real library. */

#include <limits.h>
#include <stddef.h>

#include "fake_cuda.h"

#ifdef __cplusplus
extern "C" {
#endif

#define NCCL_MAJOR 2
#define NCCL_MINOR 28
#define NCCL_PATCH 9
#define NCCL_VERSION(X, Y, Z) (((X) <= 2 && (Y) <= 8) ? (X) * 1000 + (Y) * 100 + (Z) : (X) * 10000 + (Y) * 100 + (Z))
#define NCCL_VERSION_CODE 22809

typedef struct ncclComm *ncclComm_t;
typedef struct ncclWindow_vidmem *ncclWindow_t;
#define NCCL_COMM_NULL NULL
#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
    char internal[NCCL_UNIQUE_ID_BYTES];
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

#define NCCL_CONFIG_UNDEF_INT INT_MIN
#define NCCL_CONFIG_UNDEF_PTR NULL
#define NCCL_SPLIT_NOCOLOR -1

typedef struct ncclConfig_v22800 {
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

#define NCCL_CONFIG_INITIALIZER                                                               \
    {                                                                                         \
        sizeof(ncclConfig_t), 0xcafebeef, NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH),   \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,              \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,              \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_PTR, NCCL_CONFIG_UNDEF_INT,              \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT,              \
            NCCL_CONFIG_UNDEF_INT, NCCL_CONFIG_UNDEF_INT                                      \
    }

typedef struct ncclSimInfo_v22200 {
    size_t size;
    unsigned int magic;
    unsigned int version;
    float estimatedTime;
} ncclSimInfo_t;

typedef enum {
    ncclSum = 0,
    ncclProd = 1,
    ncclMax = 2,
    ncclMin = 3,
    ncclAvg = 4,
    ncclNumOps = 5,
    ncclMaxRedOp = 0x7fffffff
} ncclRedOp_t;

typedef enum {
    ncclInt8 = 0,
    ncclChar = 0,
    ncclUint8 = 1,
    ncclInt32 = 2,
    ncclInt = 2,
    ncclUint32 = 3,
    ncclInt64 = 4,
    ncclUint64 = 5,
    ncclFloat16 = 6,
    ncclHalf = 6,
    ncclFloat32 = 7,
    ncclFloat = 7,
    ncclFloat64 = 8,
    ncclDouble = 8,
    ncclBfloat16 = 9,
    ncclFloat8e4m3 = 10,
    ncclFloat8e5m2 = 11,
    ncclNumTypes = 12
} ncclDataType_t;

/* X(name, params, args): every entry point of NCCL 2.28.9 we wrap plus the queries; the fake
 * defines ncclX and makes pncclX an alias of it. */
#define FAKE_NCCL_API(X)                                                                      \
    X(ncclGetVersion, (int *version))                                                         \
    X(ncclGetUniqueId, (ncclUniqueId * uniqueId))                                             \
    X(ncclCommInitRank, (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank))       \
    X(ncclCommInitRankConfig,                                                                 \
      (ncclComm_t * comm, int nranks, ncclUniqueId commId, int rank, ncclConfig_t *config))   \
    X(ncclCommInitRankScalable, (ncclComm_t * newcomm, int nranks, int myrank, int nId,       \
                                 ncclUniqueId *commIds, ncclConfig_t *config))                \
    X(ncclCommInitAll, (ncclComm_t * comm, int ndev, const int *devlist))                     \
    X(ncclCommFinalize, (ncclComm_t comm))                                                    \
    X(ncclCommDestroy, (ncclComm_t comm))                                                     \
    X(ncclCommAbort, (ncclComm_t comm))                                                       \
    X(ncclCommRevoke, (ncclComm_t comm, int revokeFlags))                                     \
    X(ncclCommSplit, (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)) \
    X(ncclCommShrink, (ncclComm_t comm, int *excludeRanksList, int excludeRanksCount,         \
                       ncclComm_t *newcomm, ncclConfig_t *config, int shrinkFlags))           \
    X(ncclCommGetAsyncError, (ncclComm_t comm, ncclResult_t * asyncError))                    \
    X(ncclCommCount, (const ncclComm_t comm, int *count))                                     \
    X(ncclCommCuDevice, (const ncclComm_t comm, int *device))                                 \
    X(ncclCommUserRank, (const ncclComm_t comm, int *rank))                                   \
    X(ncclMemAlloc, (void **ptr, size_t size))                                                \
    X(ncclMemFree, (void *ptr))                                                               \
    X(ncclCommRegister, (const ncclComm_t comm, void *buff, size_t size, void **handle))      \
    X(ncclCommDeregister, (const ncclComm_t comm, void *handle))                              \
    X(ncclCommWindowRegister, (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags)) \
    X(ncclCommWindowDeregister, (ncclComm_t comm, ncclWindow_t win))                          \
    X(ncclReduce, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, \
                   ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream))           \
    X(ncclBcast, (void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm, \
                  cudaStream_t stream))                                                       \
    X(ncclBroadcast, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, \
                      int root, ncclComm_t comm, cudaStream_t stream))                        \
    X(ncclAllReduce, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, \
                      ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream))                  \
    X(ncclReduceScatter, (const void *sendbuff, void *recvbuff, size_t recvcount,             \
                          ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)) \
    X(ncclAllGather, (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype, \
                      ncclComm_t comm, cudaStream_t stream))                                  \
    X(ncclAlltoAll, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, \
                     ncclComm_t comm, cudaStream_t stream))                                   \
    X(ncclGather, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, \
                   int root, ncclComm_t comm, cudaStream_t stream))                           \
    X(ncclScatter, (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, \
                    int root, ncclComm_t comm, cudaStream_t stream))                          \
    X(ncclSend, (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,       \
                 ncclComm_t comm, cudaStream_t stream))                                       \
    X(ncclRecv, (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, \
                 cudaStream_t stream))                                                        \
    X(ncclGroupStart, (void))                                                                 \
    X(ncclGroupEnd, (void))                                                                   \
    X(ncclGroupSimulateEnd, (ncclSimInfo_t * simInfo))

#define FAKE_NCCL_DECLARE(name, params) ncclResult_t name params; ncclResult_t p##name params;
FAKE_NCCL_API(FAKE_NCCL_DECLARE)
#undef FAKE_NCCL_DECLARE

/* NCCL 2.29's count of a communicator's device memory. The fake built with
 * -DFAKENCCL_MEMSTATS (build/fakes/nccl-memstats/libnccl.so.2) has it and calls itself
 * 2.29.7; the plain one, like the real 2.28.9, does not export it at all. */
typedef enum {
    ncclStatGpuMemSuspend = 0,   /* allocated GPU memory that can be suspended, bytes */
    ncclStatGpuMemSuspended = 1, /* 0 active, 1 suspended */
    ncclStatGpuMemPersist = 2,   /* allocated GPU memory that cannot be suspended, bytes */
    ncclStatGpuMemTotal = 3      /* total allocated GPU memory tracked by NCCL, bytes */
} ncclCommMemStat_t;
ncclResult_t ncclCommMemStats(ncclComm_t comm, ncclCommMemStat_t stat, uint64_t *value);
#define FAKENCCL_MEMSTATS_VERSION_CODE 22907

const char *ncclGetErrorString(ncclResult_t result);
const char *pncclGetErrorString(ncclResult_t result);
const char *ncclGetLastError(ncclComm_t comm);
const char *pncclGetLastError(ncclComm_t comm);

/* Defaults of the fake (the real H200 uses 24 channels: kept small so tests are fast). */
#define FAKENCCL_DEFAULT_NCHANNELS 2
#define FAKENCCL_KERNEL_BYTES (360ull << 20) /* hidden: kernels loaded at the first init on a device */
#define FAKENCCL_LAZY_BYTES (186ull << 20)   /* hidden: loaded at the first collective on a device */
#define FAKENCCL_P2P_LOCAL_BYTES 1984u     /* local memory per thread of the send/receive kernel */

#ifdef __cplusplus
}
#endif
#endif
