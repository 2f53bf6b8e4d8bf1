/* trace_format.h: the on-disk layout of a gpumemtrace trace (.gmt): the one definition in code.
 *
 * docs/trace-format.md is the normative prose spec; change both in the same commit.
 * Shared by the preload library (writer) and the CLI (reader). Plain C11, no dependencies.
 *
 * All integers little-endian. Every record starts with struct gmt_rec and has a total
 * size that is a multiple of 8. Readers skip record types they do not know, ignore
 * bytes past the fields they know (newer minor versions append fields), and treat
 * optional trailing fields that a shorter record lacks as absent.
 */
#ifndef GMT_TRACE_FORMAT_H
#define GMT_TRACE_FORMAT_H

#include <stdint.h>

#define GMT_MAGIC "GMTRACE\n"        /* 8 bytes, no NUL */
#define GMT_BYTE_ORDER_MARK 0x01020304u /* reads 0x04030201 on a host of the other byte order */
#define GMT_VERSION_MAJOR 2           /* incompatible layout changes */
#define GMT_VERSION_MAJOR_MIN 1       /* oldest major version readers still read */
#define GMT_VERSION_MINOR 7           /* compatible additions: new types, appended fields, ids */
#define GMT_ALIGN 8                   /* every record size is a multiple of this, in bytes */
#define GMT_REC_MAX (1u << 20)        /* largest valid record, bytes */
#define GMT_THREAD_NAME_LEN 16

struct gmt_file_header {
    char magic[8];             /* GMT_MAGIC */
    uint32_t byte_order;       /* GMT_BYTE_ORDER_MARK as written by the producer */
    uint16_t version_major;    /* GMT_VERSION_MAJOR */
    uint16_t version_minor;    /* GMT_VERSION_MINOR */
    uint32_t header_size;      /* bytes, this struct; records start here */
    uint32_t flags;            /* reserved, 0 */
    uint64_t reserved;         /* 0 */
};

/* Every record begins with this. `aux` is a small per-type field (API id, op, phase…). */
struct gmt_rec {
    uint16_t type;             /* enum gmt_rec_type */
    uint16_t aux;              /* per type, see each record */
    uint32_t size;             /* bytes, whole record including this header, multiple of 8 */
};

/* Record types: X(NAME, value, struct). Values are stable forever. */
#define GMT_RECORD_TYPES(X)                                         \
    X(PROCESS,       1, gmt_rec_process)                            \
    X(ENV,           2, gmt_rec_env)                                \
    X(VERSION,       3, gmt_rec_version)                            \
    X(MODULE_LOAD,   4, gmt_rec_module_load)                        \
    X(MODULE_UNLOAD, 5, gmt_rec_module_unload)                      \
    X(CHUNK,         6, gmt_rec_chunk)                              \
    X(THREAD,        7, gmt_rec_thread)                             \
    X(TIME,          8, gmt_rec_time)                               \
    X(STACK,         9, gmt_rec_stack)                              \
    X(CUCTX,        10, gmt_rec_cuctx)                              \
    X(ALLOC,        11, gmt_rec_alloc)                              \
    X(FREE,         12, gmt_rec_free)                               \
    X(ALLOC_FAIL,   13, gmt_rec_alloc_fail)                         \
    X(COMM,         14, gmt_rec_comm)                               \
    X(SCOPE_BEGIN,  15, gmt_rec_scope_begin)                        \
    X(SCOPE_END,    16, gmt_rec_scope_end)                          \
    X(MEMINFO,      17, gmt_rec_meminfo)                            \
    X(END,          18, gmt_rec_end)                                \
    X(ALLOC_SMALL,  19, gmt_rec_alloc_small)                        \
    X(GROUP_REPEAT, 20, gmt_rec_group_repeat)                       \
    X(GRAPHMEM,     21, gmt_rec_graphmem)                           \
    X(PYCODE,       22, gmt_rec_pycode)                             \
    X(NVTX_STRING,  24, gmt_rec_nvtx_string)                        \
    X(NVTX_RANGE,   25, gmt_rec_nvtx_range)                         \
    X(NCCL_COLL_INFO, 26, gmt_rec_nccl_coll_info)                   \
    X(SCOPE_OPEN,   27, gmt_rec_scope_open)                         \
    X(BLOCK,        28, gmt_rec_block)                              \
    X(DEVLIMITS,    29, gmt_rec_devlimits)                          \
    X(NCCL_MEMSTATS, 30, gmt_rec_nccl_memstats)                     \
    X(MODLOAD,      31, gmt_rec_modload)

enum gmt_rec_type {
#define GMT_X(name, val, st) GMT_REC_##name = val,
    GMT_RECORD_TYPES(GMT_X)
#undef GMT_X
    GMT_REC_TYPE_MAX
};

/*
 * Threads and time. The writer buffers records per thread and appends each buffer to
 * the file as one CHUNK record followed by that thread's records, in the order the
 * thread made them. Records after a CHUNK (up to the next CHUNK) belong to its tid.
 * Records before the first CHUNK (PROCESS, ENV, the initial MODULE_LOADs) belong to
 * no thread. Event records carry `dt`: nanoseconds since the previous timed record
 * of the same thread (CLOCK_MONOTONIC). A thread's first record is THREAD, which sets
 * its clock absolutely; TIME resets it when a gap would not fit in 32 bits. Records
 * with an absolute time_ns (THREAD, TIME, MODULE_*, END) also set the thread's clock.
 * Only the types named here move a clock (1.0's, and ALLOC_SMALL, which is why it made
 * the format 2.0): a type added later must carry no dt and move no clock, so readers
 * that skip it keep later times right. A record may refer to a STACK that a later
 * chunk (another thread's) defines.
 */

/* PROCESS: one per file, right after the header. Followed by host (NUL-terminated)
 * then the command line (arguments each NUL-terminated), then zero padding. */
struct gmt_rec_process {
    struct gmt_rec h;          /* aux: 0 */
    uint32_t pid;
    uint32_t ppid;
    int32_t rank;              /* RANK/OMPI_COMM_WORLD_RANK/PMI_RANK/SLURM_PROCID, -1 unknown */
    int32_t local_rank;        /* LOCAL_RANK/…, -1 unknown */
    int32_t world_size;        /* WORLD_SIZE/…, -1 unknown */
    int32_t local_world_size;  /* LOCAL_WORLD_SIZE/…, -1 unknown */
    uint64_t realtime_ns;      /* CLOCK_REALTIME, ns since the epoch, same instant as: */
    uint64_t monotonic_ns;     /* CLOCK_MONOTONIC, ns */
    uint32_t host_len;         /* bytes of host incl. its NUL */
    uint32_t cmdline_len;      /* bytes of the command line incl. every NUL */
    uint32_t flags;            /* GMT_PROC_* */
    uint32_t reserved;
};
#define GMT_PROC_FORKED 1u     /* the process is a fork child of a traced process */

/* ENV: the variables that shape GPU memory (NCCL_*, CUDA_*, PYTORCH_CUDA_ALLOC_CONF,
 * GPUMEMTRACE_*), `count` strings "NAME=value" each NUL-terminated, then padding. */
struct gmt_rec_env {
    struct gmt_rec h;          /* aux: 0 */
    uint32_t count;            /* number of strings */
    uint32_t bytes;            /* bytes of all strings incl. NULs */
};

#define GMT_COMPONENTS(X) X(DRIVER, 1) X(RUNTIME, 2) X(NCCL, 3)
enum gmt_component {
#define GMT_X(name, val) GMT_COMP_##name = val,
    GMT_COMPONENTS(GMT_X)
#undef GMT_X
};

/* VERSION: a component's version as its API reports it (13000, 22809). */
struct gmt_rec_version {
    struct gmt_rec h;          /* aux: enum gmt_component */
    int32_t version;           /* the API's integer */
    uint32_t reserved;
};

/* MODULE_LOAD: a loaded ELF object. Followed by the build-id bytes, then the path
 * (NUL-terminated), then padding. Addresses in the process's address space. */
struct gmt_rec_module_load {
    struct gmt_rec h;          /* aux: 0 */
    uint64_t time_ns;          /* CLOCK_MONOTONIC, ns, absolute */
    uint32_t module_id;        /* unique within the file, never reused */
    uint32_t build_id_len;     /* bytes, 0 when the object has none */
    uint64_t load_bias;        /* bytes added to the ELF's virtual addresses (l_addr) */
    uint64_t start;            /* lowest mapped address of its PT_LOAD segments */
    uint64_t end;              /* one past the highest */
    uint32_t path_len;         /* bytes incl. NUL */
    uint32_t reserved;
};

struct gmt_rec_module_unload {
    struct gmt_rec h;          /* aux: 0 */
    uint64_t time_ns;          /* CLOCK_MONOTONIC, ns, absolute */
    uint32_t module_id;
    uint32_t reserved;
};

/* CHUNK: the records that follow, up to the next CHUNK, were made by thread `tid`. */
struct gmt_rec_chunk {
    struct gmt_rec h;          /* aux: 0 */
    uint32_t tid;              /* kernel thread id */
    uint32_t reserved;
};

/* THREAD: first record of each thread's buffer; sets its clock. */
struct gmt_rec_thread {
    struct gmt_rec h;          /* aux: 0 */
    uint64_t time_ns;          /* CLOCK_MONOTONIC, ns, absolute */
    uint32_t tid;              /* kernel thread id */
    uint32_t reserved;
    char name[GMT_THREAD_NAME_LEN]; /* thread name (comm), NUL-padded */
};

/* TIME: sets the thread's clock when a gap exceeds what dt holds. */
struct gmt_rec_time {
    struct gmt_rec h;          /* aux: 0 */
    uint64_t time_ns;          /* CLOCK_MONOTONIC, ns, absolute */
};

/* STACK: defined once, referred to by id. ip[0] is the return address into the code
 * that called the hooked API, then its callers outward. Ids start at 1; 0 = none. */
struct gmt_rec_stack {
    struct gmt_rec h;          /* aux: 0 */
    uint32_t stack_id;
    uint32_t depth;            /* number of ip[] entries */
    uint64_t ip[];             /* instruction addresses */
};

/* CUCTX: the thread's current CUDA context changed; the thread's later records are
 * on that context and device until the next CUCTX. */
struct gmt_rec_cuctx {
    struct gmt_rec h;          /* aux: 0 */
    uint64_t context;          /* CUcontext value, an opaque id; 0 none */
    int32_t device;            /* CUDA device ordinal, -1 unknown */
    uint32_t reserved;
};

/* API ids (stable). aux of ALLOC/FREE/ALLOC_FAIL, and of SCOPE_BEGIN for NCCL.
 * X(name, id). The name is the function as exported or looked up. */
#define GMT_APIS(X)                                                   \
    X(cudaMalloc, 1) X(cudaFree, 2) X(cudaMallocAsync, 3)             \
    X(cudaFreeAsync, 4) X(cudaMallocFromPoolAsync, 5)                 \
    X(cudaMallocManaged, 6) X(cudaMallocPitch, 7) X(cudaMalloc3D, 8)  \
    X(cudaMallocHost, 9) X(cudaHostAlloc, 10) X(cudaFreeHost, 11)     \
    X(cudaHostRegister, 12) X(cudaHostUnregister, 13)                 \
    X(cudaMemPoolCreate, 14) X(cudaMemPoolDestroy, 15)                \
    X(cudaMemPoolTrimTo, 16)                                          \
    X(cudaMallocArray, 17) X(cudaMalloc3DArray, 18)   /* 2.2 */       \
    X(cudaMallocMipmappedArray, 19) X(cudaFreeArray, 20)              \
    X(cudaFreeMipmappedArray, 21)                                     \
    X(cuMemAlloc, 32) X(cuMemFree, 33) X(cuMemAllocPitch, 34)         \
    X(cuMemAllocManaged, 35) X(cuMemAllocHost, 36) X(cuMemHostAlloc, 37) \
    X(cuMemFreeHost, 38) X(cuMemHostRegister, 39)                     \
    X(cuMemHostUnregister, 40) X(cuMemAllocAsync, 41)                 \
    X(cuMemAllocFromPoolAsync, 42) X(cuMemFreeAsync, 43)              \
    X(cuMemPoolCreate, 44) X(cuMemPoolDestroy, 45)                    \
    X(cuMemPoolTrimTo, 46) X(cuMemCreate, 47) X(cuMemRelease, 48)     \
    X(cuMemAddressReserve, 49) X(cuMemAddressFree, 50) X(cuMemMap, 51) \
    X(cuMemUnmap, 52) X(cuMemImportFromShareableHandle, 53)           \
    X(cuMemRetainAllocationHandle, 54) X(cuIpcOpenMemHandle, 55)      \
    X(cuIpcCloseMemHandle, 56) X(cuGraphAddMemAllocNode, 57)          \
    X(cuMulticastCreate, 58)                                          \
    X(cuArrayCreate, 59) X(cuArray3DCreate, 60)       /* 2.2 */       \
    X(cuMipmappedArrayCreate, 61) X(cuArrayDestroy, 62)               \
    X(cuMipmappedArrayDestroy, 63)                                    \
    X(ncclMemAlloc, 96) X(ncclMemFree, 97)

enum gmt_api {
    GMT_API_NONE = 0,
#define GMT_X(name, id) GMT_API_##name = id,
    GMT_APIS(GMT_X)
#undef GMT_X
    GMT_API_MAX
};

/* Memory kinds (ALLOC.kind). Which are charged as local device memory is the CLI's
 * decision (docs/trace-format.md); the library records what the API said. */
#define GMT_KINDS(X)                                                     \
    X(DEVICE, 1)          /* cuMemAlloc/cudaMalloc: device memory */     \
    X(HOST_PINNED, 2)     /* cuMemHostAlloc/cudaHostAlloc/cudaMallocHost */ \
    X(HOST_REGISTERED, 3) /* cuMemHostRegister: the user's pages, pinned */ \
    X(MANAGED, 4)         /* cuMemAllocManaged */                        \
    X(POOL_ALLOC, 5)      /* stream-ordered from a pool; related = pool */ \
    X(POOL, 6)            /* a pool object; address = pool handle, size 0 */ \
    X(VIRTUAL, 7)         /* cuMemAddressReserve: address space only */  \
    X(PHYSICAL, 8)        /* cuMemCreate on a device location; address = handle */ \
    X(PHYSICAL_HOST, 9)   /* cuMemCreate on a host/host-NUMA location */ \
    X(MAPPING, 10)        /* cuMemMap; related = handle, offset */       \
    X(IMPORTED, 11)       /* handle imported from a peer; not local memory */ \
    X(IPC_MAPPING, 12)    /* cuIpcOpenMemHandle; a peer's memory */      \
    X(NCCL_MEM, 13)       /* ncclMemAlloc: device memory (cuMem inside) */ \
    X(GRAPH_MEM, 14)      /* (2.3: address space) a graph's memory node */ \
    X(MULTICAST, 15)      /* cuMulticastCreate; address = handle */      \
    X(RETAINED, 16)       /* cuMemRetainAllocationHandle: a new reference */ \
    X(ARRAY, 17)          /* (2.2) cuArrayCreate/cudaMallocArray…; address = array handle */ \
    X(MIPMAPPED_ARRAY, 18) /* (2.2) cuMipmappedArrayCreate; address = its handle */

enum gmt_kind {
#define GMT_X(name, id) GMT_KIND_##name = id,
    GMT_KINDS(GMT_X)
#undef GMT_X
    GMT_KIND_MAX
};

/* ALLOC: a successful allocation (or reservation, mapping, handle, registration). */
struct gmt_rec_alloc {
    struct gmt_rec h;          /* aux: enum gmt_api */
    uint64_t address;          /* device/host address, or handle value (PHYSICAL, POOL…) */
    uint64_t bytes;            /* bytes as requested (pitch allocations: pitch × height;
                                * arrays: from the descriptor, docs/trace-format.md 6.2) */
    uint32_t dt;               /* ns since the thread's previous timed record */
    uint32_t stack_id;         /* 0 = not captured */
    uint32_t scope_id;         /* innermost open scope on this thread, 0 none */
    uint8_t kind;              /* enum gmt_kind */
    uint8_t flags;             /* GMT_ALLOC_* */
    int16_t device;            /* device ordinal from the API (cuMemCreate location), -1: the thread's CUCTX */
    /* optional, present when h.size >= sizeof(struct gmt_rec_alloc_ext): */
};
struct gmt_rec_alloc_ext {
    struct gmt_rec_alloc a;
    uint64_t stream;           /* CUstream of stream-ordered calls, 0 otherwise */
    uint64_t related;          /* POOL_ALLOC: pool; MAPPING: handle; RETAINED: address asked */
    uint64_t offset;           /* MAPPING: offset into the handle, bytes */
};
#define GMT_ALLOC_PITCHED 1u   /* bytes = pitch × height */
#define GMT_ALLOC_CAPTURED 2u  /* (2.3) made under stream capture: a graph's memory node
                                * (kind GRAPH_MEM), related = the capturing stream's graph */

/* ALLOC_SMALL (2.0): the common ALLOC in 32 bytes instead of 40, written when scope_id
 * is 0, device is -1 (the thread's CUCTX) and there is no extension; it means exactly
 * the ALLOC with these fields, scope_id 0 and device -1. api, kind and flags share aux. */
struct gmt_rec_alloc_small {
    struct gmt_rec h;          /* aux: GMT_SMALL_AUX(api, kind, flags) */
    uint64_t address;
    uint64_t bytes;
    uint32_t dt;               /* ns since the thread's previous timed record */
    uint32_t stack_id;         /* 0 = not captured */
};
#define GMT_SMALL_AUX(api, kind, flags) \
    ((uint16_t)(((unsigned)(api) & 0x7f) | ((unsigned)(kind) & 0x1f) << 7 | ((unsigned)(flags) & 0xf) << 12))
#define GMT_SMALL_API(aux) ((unsigned)(aux) & 0x7f)
#define GMT_SMALL_KIND(aux) (((unsigned)(aux) >> 7) & 0x1f)
#define GMT_SMALL_FLAGS(aux) (((unsigned)(aux) >> 12) & 0xf)

/* FREE: the matching release (cudaFree, cuMemRelease, cuMemUnmap, cuMemAddressFree…),
 * written before the real function runs so the address can't be reused in between. */
struct gmt_rec_free {
    struct gmt_rec h;          /* aux: enum gmt_api */
    uint64_t address;          /* as in the ALLOC record (handle for cuMemRelease) */
    uint32_t dt;               /* ns since the thread's previous timed record */
    uint32_t scope_id;         /* innermost open scope, 0 none */
    /* optional, present when h.size >= sizeof(struct gmt_rec_free_ext): */
};
struct gmt_rec_free_ext {
    struct gmt_rec_free f;
    uint64_t stream;           /* CUstream of stream-ordered frees */
    uint32_t stack_id;         /* 0 = not captured */
    int32_t result;            /* the API's result, 0 success */
};

/* ALLOC_FAIL: an allocation call that returned an error. */
struct gmt_rec_alloc_fail {
    struct gmt_rec h;          /* aux: enum gmt_api */
    uint64_t bytes;            /* requested, bytes */
    int32_t error;             /* the API's error code (CUresult/cudaError_t) */
    uint32_t dt;               /* ns since the thread's previous timed record */
    uint32_t stack_id;
    uint32_t scope_id;
    uint8_t kind;              /* enum gmt_kind that was asked for */
    uint8_t reserved;
    int16_t device;            /* as in ALLOC */
    uint32_t reserved2;
};

/* NCCL operations: aux of SCOPE_BEGIN. X(name, id). */
#define GMT_OPS(X)                                                       \
    X(AllReduce, 1) X(AllGather, 2) X(ReduceScatter, 3) X(Broadcast, 4)  \
    X(Bcast, 5) X(Reduce, 6) X(AlltoAll, 7) X(Gather, 8) X(Scatter, 9)   \
    X(Send, 10) X(Recv, 11)                                              \
    X(Group, 32) X(GroupSimulateEnd, 33)                                 \
    X(CommInitRank, 48) X(CommInitAll, 49) X(CommInitRankConfig, 50)     \
    X(CommInitRankScalable, 51) X(CommSplit, 52) X(CommShrink, 53)       \
    X(CommFinalize, 54) X(CommDestroy, 55) X(CommAbort, 56)              \
    X(CommRevoke, 57)                                                    \
    X(MemAlloc, 64) X(MemFree, 65) X(CommRegister, 66)                   \
    X(CommDeregister, 67) X(CommWindowRegister, 68)                      \
    X(CommWindowDeregister, 69)

enum gmt_op {
    GMT_OP_NONE = 0,
#define GMT_X(name, id) GMT_OP_##name = id,
    GMT_OPS(GMT_X)
#undef GMT_X
    GMT_OP_MAX
};

/* COMM: what a communicator is, written when it becomes known (init returns, split). */
struct gmt_rec_comm {
    struct gmt_rec h;          /* aux: 0 */
    uint64_t comm;             /* ncclComm_t value, an opaque id within the process */
    uint64_t parent;           /* parent communicator for splits, 0 none */
    uint64_t unique_id_hash;   /* FNV-1a of the ncclUniqueId, equal on every rank; 0 unknown */
    int32_t rank;              /* this process's rank in it */
    int32_t nranks;
    int32_t device;            /* CUDA device ordinal */
    uint32_t dt;               /* ns since the thread's previous timed record */
};

/* SCOPE_BEGIN: an NCCL call (or group) opened a context on this thread. */
struct gmt_rec_scope_begin {
    struct gmt_rec h;          /* aux: enum gmt_op */
    uint32_t dt;               /* ns since the thread's previous timed record */
    uint32_t scope_id;         /* unique within the file, from 1 */
    uint32_t parent_id;        /* enclosing scope on this thread (group), 0 none */
    uint32_t stack_id;         /* 0 = not captured */
    uint64_t comm;             /* ncclComm_t, 0 none (group, init before return) */
    uint64_t count;            /* elements */
    uint64_t stream;           /* cudaStream_t */
    int32_t datatype;          /* ncclDataType_t, -1 none */
    int32_t peer;              /* root or peer rank, -1 none */
};

/* SCOPE_END: the call returned. */
struct gmt_rec_scope_end {
    struct gmt_rec h;          /* aux: enum gmt_op */
    uint32_t dt;               /* ns since the thread's previous timed record */
    uint32_t scope_id;
    int32_t result;            /* ncclResult_t */
    uint32_t duration;         /* 2.5, call form only (size >= 32): ns since the begin; else 0 */
};

/*
 * SCOPE_END's call form (2.5): a SCOPE_END of at least 32 bytes also stands for its
 * scope's SCOPE_BEGIN, which the writer did not write: a SCOPE_BEGIN with the END's op
 * (aux) and scope_id, parent_id 0, stack_id 0, dt = the END's dt - duration, and comm,
 * count, stream, datatype and peer from the fields that follow. No record of the thread
 * lies between that begin and this end. Each GMT_CALL_HAS_* bit of `has` says its field
 * follows, in the order of the bits (8 bytes each); a field that does not is the one of
 * the thread's previous call form (since its latest THREAD record), as restored. The
 * record is 32 + 8 x (bits set) bytes. Readers restore both records (trace_expand.c).
 * duration 0: the call was not timed (the library times one loop call in 8, at random):
 * the begin is restored at the end's instant, a scope of length 0, as an untimed group
 * member's. `weight`: a timed call form stands, in host-time statistics, for this many
 * calls (the rate it was sampled at); 0 in an untimed one, and read as 1 when 0 in a
 * timed one. The CLI's expanded image keeps it in the restored SCOPE_END's `duration`.
 */
#define GMT_CALL_HAS_COMM 1u       /* uint64_t comm */
#define GMT_CALL_HAS_COUNT 2u      /* uint64_t count */
#define GMT_CALL_HAS_STREAM 4u     /* uint64_t stream */
#define GMT_CALL_HAS_TYPE_PEER 8u  /* int32_t datatype, then int32_t peer */
#define GMT_CALL_HAS_ALL 15u
struct gmt_rec_scope_call {
    struct gmt_rec_scope_end e; /* h.size = 32 + 8 x popcount(has) */
    uint32_t has;               /* GMT_CALL_HAS_* */
    uint32_t weight;            /* timed: the calls it stands for in host time; untimed: 0 */
    uint64_t field[4];          /* the fields `has` names, in order; the record ends after them */
};
#define GMT_SCOPE_CALL_MIN 32u

/* SCOPE_OPEN (2.5): the NCCL call `scope_id` of thread `tid` began at time_ns (for a call
 * that was not timed: an instant at which it was in progress) and had not returned when
 * this was written (by another thread: the writer's flusher for a call in progress for a
 * while, or the thread that crashed or exits). It carries its own time
 * and moves no clock. It restores the call's SCOPE_BEGIN (parent_id 0, stack_id 0) only
 * when the file has no SCOPE_BEGIN of `scope_id` on `tid`, itself or as restored from a
 * call form: then the call was still in progress when the trace ended. */
struct gmt_rec_scope_open {
    struct gmt_rec h;          /* aux: enum gmt_op */
    uint64_t time_ns;          /* CLOCK_MONOTONIC, ns, absolute: the call's begin */
    uint32_t tid;              /* the thread in the call */
    uint32_t scope_id;
    uint64_t comm;
    uint64_t count;
    uint64_t stream;
    int32_t datatype;
    int32_t peer;
};

/* GROUP_REPEAT (2.1): the user group `scope_id`, open on this thread with no scope around
 * it, has exactly the members of the thread's earlier group `like`, in the same order and
 * with the same results. It stands for `count` pairs of SCOPE_BEGIN/SCOPE_END, those of
 * `like`'s members with dt 0 and stack_id 0, here with scope ids scope_id+1 ..
 * scope_id+count and parent scope_id: members written where this record is, scopes of
 * length 0 at the thread's time. It comes before the group's SCOPE_END (it is written
 * when ncclGroupEnd is called), with no scope record of the thread between the group's
 * SCOPE_BEGIN and it.
 * `like` is one of the thread's last 8 groups with no scope around them that ended since
 * its latest THREAD record (repeated or not), and had `count` members. Carries no dt. */
#define GMT_REPEAT_LIKE_WINDOW 8
struct gmt_rec_group_repeat {
    struct gmt_rec h;          /* aux: 0 */
    uint32_t scope_id;         /* the group */
    uint32_t count;            /* member scopes it stands for, >= 1 */
    uint32_t like;             /* the earlier group whose members it repeats */
    uint32_t reserved;
};

/* MEMINFO: a device-memory sample (cuMemGetInfo on that device, or NVML).
 * FIRST..EXIT (2.3): a device's first allocation, after a failed allocation (on the
 * failing thread), the flusher's periodic sample, at exit. */
#define GMT_MEMINFO_PHASES(X) X(SAMPLE, 0) X(BEGIN, 1) X(END, 2) \
    X(FIRST, 3) X(FAIL, 4) X(PERIODIC, 5) X(EXIT, 6)
enum gmt_meminfo_phase {
#define GMT_X(name, val) GMT_MEMINFO_##name = val,
    GMT_MEMINFO_PHASES(GMT_X)
#undef GMT_X
};
/* Where a sample's figures come from (2.3; the field was reserved, 0, before). */
#define GMT_MEMINFO_SOURCES(X) X(CUMEMGETINFO, 0) X(NVML, 1)
enum gmt_meminfo_source {
#define GMT_X(name, val) GMT_MEMINFO_SRC_##name = val,
    GMT_MEMINFO_SOURCES(GMT_X)
#undef GMT_X
};
#define GMT_MEMINFO_UNKNOWN UINT64_MAX /* process_bytes: the source does not say */
struct gmt_rec_meminfo {
    struct gmt_rec h;          /* aux: enum gmt_meminfo_phase */
    uint32_t dt;               /* ns since the thread's previous timed record */
    uint32_t scope_id;         /* the scope sampled around, 0 none */
    int32_t device;            /* CUDA device ordinal */
    uint32_t source;           /* (2.3) enum gmt_meminfo_source; 0 before */
    uint64_t free_bytes;       /* the device's free bytes */
    uint64_t total_bytes;      /* the device's total bytes */
    /* optional, present when h.size >= sizeof(struct gmt_rec_meminfo_ext): */
};
struct gmt_rec_meminfo_ext {   /* 2.3 */
    struct gmt_rec_meminfo m;
    uint64_t process_bytes;    /* device memory this process uses (NVML's per-process
                                * figure), GMT_MEMINFO_UNKNOWN when the source lacks it */
    /* optional, present when h.size >= sizeof(struct gmt_rec_meminfo_ext2): */
};
struct gmt_rec_meminfo_ext2 {  /* 2.6 */
    struct gmt_rec_meminfo_ext x;
    uint64_t other_bytes;      /* bytes NVML lists as used on the device by the other
                                * processes, summed; GMT_MEMINFO_UNKNOWN when it cannot say */
    uint32_t other_count;      /* how many other processes it lists on the device */
    uint32_t other_pid;        /* the pid NVML gives for the other process using the most
                                * device memory; 0 none or unknown (a writer that left it
                                * reserved wrote 0: no version tells them apart) */
};

/* DEVLIMITS (2.6): the context's limits, read with a cuMemGetInfo sample. Written right
 * after that MEMINFO on the same thread, with the same phase (aux), device and scope; it
 * carries no dt and moves no clock: its instant is that MEMINFO's. The device memory the
 * limits hold is the CLI's to compute (docs/untracked.md): the local-memory reservation
 * is stack_bytes x max_threads_per_sm x sm_count. */
#define GMT_LIMIT_UNKNOWN UINT64_MAX   /* a limit the driver did not answer */
struct gmt_rec_devlimits {
    struct gmt_rec h;          /* aux: enum gmt_meminfo_phase of the MEMINFO it follows */
    int32_t device;            /* CUDA device ordinal */
    uint32_t scope_id;         /* the scope sampled around, 0 none */
    uint64_t stack_bytes;      /* cuCtxGetLimit(CU_LIMIT_STACK_SIZE): bytes per thread */
    uint64_t printf_fifo_bytes; /* CU_LIMIT_PRINTF_FIFO_SIZE, bytes */
    uint64_t malloc_heap_bytes; /* CU_LIMIT_MALLOC_HEAP_SIZE, bytes */
    uint32_t sm_count;         /* CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT; 0 unknown */
    uint32_t max_threads_per_sm; /* CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR; 0 unknown */
};

/* NCCL_MEMSTATS (2.7): NCCL's own count of a communicator's device memory
 * (ncclCommMemStats, NCCL 2.29 and later; a process whose NCCL lacks it has none), asked
 * once the communicator is ready (its COMM record) and right before ncclCommFinalize,
 * ncclCommDestroy and ncclCommAbort run. Never per collective. No dt: its time is its own. */
#define GMT_MEMSTATS_PHASES(X) X(INIT, 1) X(FINALIZE, 2) X(DESTROY, 3) X(ABORT, 4)
enum gmt_memstats_phase {
#define GMT_X(name, val) GMT_MEMSTATS_##name = val,
    GMT_MEMSTATS_PHASES(GMT_X)
#undef GMT_X
};
#define GMT_MEMSTATS_UNKNOWN UINT64_MAX /* a value NCCL did not answer */
struct gmt_rec_nccl_memstats {
    struct gmt_rec h;          /* aux: enum gmt_memstats_phase */
    uint64_t time_ns;          /* CLOCK_MONOTONIC, ns, absolute */
    uint64_t comm;             /* ncclComm_t value, as COMM's comm */
    uint64_t suspend_bytes;    /* ncclStatGpuMemSuspend: device memory that can be suspended, bytes */
    uint64_t suspended;        /* ncclStatGpuMemSuspended: 0 active, 1 suspended */
    uint64_t persist_bytes;    /* ncclStatGpuMemPersist: device memory that cannot, bytes */
    uint64_t total_bytes;      /* ncclStatGpuMemTotal: all device memory NCCL tracks, bytes */
    uint32_t scope_id;         /* the NCCL call in flight on this thread (the destroy), 0 none */
    int32_t device;            /* CUDA device ordinal of the communicator, -1 unknown */
};

/* MODLOAD (2.7): an explicit module or library load (cuModuleLoad, cuModuleLoadData,
 * cuModuleLoadDataEx, cuModuleLoadFatBinary, cuLibraryLoadData, cuLibraryLoadFromFile) or
 * unload (cuModuleUnload, cuLibraryUnload) with cuMemGetInfo of the thread's current device
 * right before and right after it. The
 * device memory the load took is the CLI's to compute (docs/untracked.md). No dt: its
 * time is its own. */
#define GMT_MODLOAD_APIS(X)                                                   \
    X(cuModuleLoad, 1) X(cuModuleLoadData, 2) X(cuModuleLoadDataEx, 3)        \
    X(cuModuleLoadFatBinary, 4) X(cuLibraryLoadData, 5) X(cuLibraryLoadFromFile, 6) \
    X(cuModuleUnload, 7) X(cuLibraryUnload, 8)
enum gmt_modload_api {
#define GMT_X(name, val) GMT_MODLOAD_##name = val,
    GMT_MODLOAD_APIS(GMT_X)
#undef GMT_X
};
struct gmt_rec_modload {
    struct gmt_rec h;          /* aux: enum gmt_modload_api */
    uint64_t time_ns;          /* CLOCK_MONOTONIC, ns, absolute: after the load returned */
    uint32_t duration;         /* ns from the sample before to the sample after (saturates) */
    int32_t device;            /* CUDA device ordinal of the thread's current context */
    int32_t result;            /* the load's CUresult */
    uint32_t scope_id;         /* innermost NCCL scope open on this thread, 0 none */
    uint64_t free_before;      /* cuMemGetInfo free bytes right before the load */
    uint64_t free_after;       /* the same right after it */
    uint64_t total_bytes;      /* the device's total bytes */
    uint64_t handle;           /* CUmodule or CUlibrary value, an opaque id; a failed load: 0 */
};

/* GRAPHMEM (2.3): the device's graph memory (cuDeviceGetGraphMemAttribute), sampled
 * after a launch of a graph that holds memory nodes, a trim, a destroy of such a graph
 * and at exit. Like every type added after 2.0 it moves no clock: its time is its own. */
#define GMT_GRAPHMEM_PHASES(X) X(LAUNCH, 1) X(TRIM, 2) X(DESTROY, 3) X(EXIT, 4)
enum gmt_graphmem_phase {
#define GMT_X(name, val) GMT_GRAPHMEM_##name = val,
    GMT_GRAPHMEM_PHASES(GMT_X)
#undef GMT_X
};
struct gmt_rec_graphmem {
    struct gmt_rec h;          /* aux: enum gmt_graphmem_phase */
    uint64_t time_ns;          /* CLOCK_MONOTONIC, ns, absolute */
    int32_t device;            /* CUDA device ordinal */
    uint32_t reserved;         /* 0 */
    uint64_t used_current;     /* CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT: bytes backing live graph allocations */
    uint64_t used_high;        /* ..._USED_MEM_HIGH */
    uint64_t reserved_current; /* ..._RESERVED_MEM_CURRENT: bytes the device's graph pool holds */
    uint64_t reserved_high;    /* ..._RESERVED_MEM_HIGH */
};

/* PYCODE (2.4): a Python code object, defined once, referred to by id from Python
 * frames in STACK records (GMT_PYFRAME). Followed by name, qualname and filename, each
 * NUL-terminated (UTF-8, cut at GMT_PYCODE_STR_MAX bytes), then zero padding. Ids start
 * at 1 and are below 2^24; one code object can have several ids (its address reused by
 * another code object gets a new id). Carries no dt. */
struct gmt_rec_pycode {
    struct gmt_rec h;          /* aux: 0 */
    uint32_t code_id;          /* 1 .. 2^24 - 1 */
    int32_t firstlineno;       /* co_firstlineno, 1-based */
    uint32_t name_len;         /* bytes of co_name incl. its NUL */
    uint32_t qualname_len;     /* bytes of co_qualname incl. its NUL (co_name before 3.11) */
    uint32_t filename_len;     /* bytes of co_filename incl. its NUL */
    uint32_t reserved;         /* 0 */
};
#define GMT_PYCODE_STR_MAX 1024u
/* A Python frame as a STACK ip[] entry (2.4): no user-space address has these top 16
 * bits. Bits 24..47 the PYCODE id, bits 0..23 the line (0 unknown). */
#define GMT_PYFRAME_TAG 0xfffe000000000000ull
#define GMT_PYFRAME(code_id, line) \
    (GMT_PYFRAME_TAG | (uint64_t)((code_id) & 0xffffffu) << 24 | (uint64_t)((line) & 0xffffffu))
#define GMT_PYFRAME_IS(ip) (((ip) & 0xffff000000000000ull) == GMT_PYFRAME_TAG)
#define GMT_PYFRAME_CODE(ip) ((uint32_t)((ip) >> 24) & 0xffffffu)
#define GMT_PYFRAME_LINE(ip) ((uint32_t)(ip) & 0xffffffu)
/* NCCL_COLL_INFO (2.4): what NCCL chose for one collective or send/receive as it launched
 * it, told to the library loaded as NCCL's profiler plugin (docs/nccl-profiler.md). No dt:
 * its time is its own. The ids below are NCCL's own numbers for its algorithms and
 * protocols; OTHER: a name this list lacks, NONE: NCCL gave none (send/receive). */
#define GMT_NCCL_ALGOS(X)                                                \
    X(TREE, 0) X(RING, 1) X(COLLNET_DIRECT, 2) X(COLLNET_CHAIN, 3)       \
    X(NVLS, 4) X(NVLS_TREE, 5) X(PAT, 6)
#define GMT_NCCL_PROTOS(X) X(LL, 0) X(LL128, 1) X(SIMPLE, 2)
enum gmt_nccl_algo {
#define GMT_X(name, val) GMT_NCCL_ALGO_##name = val,
    GMT_NCCL_ALGOS(GMT_X)
#undef GMT_X
};
enum gmt_nccl_proto {
#define GMT_X(name, val) GMT_NCCL_PROTO_##name = val,
    GMT_NCCL_PROTOS(GMT_X)
#undef GMT_X
};
#define GMT_NCCL_CHOICE_OTHER 254  /* algo/proto: a name not in the lists above */
#define GMT_NCCL_CHOICE_NONE 255   /* algo/proto: none given */
enum gmt_nccl_info_kind { GMT_NCCL_INFO_COLL = 1, GMT_NCCL_INFO_P2P = 2 };
struct gmt_rec_nccl_coll_info {
    struct gmt_rec h;          /* aux: enum gmt_op from NCCL's function name, 0 unknown */
    uint64_t time_ns;          /* CLOCK_MONOTONIC, ns, absolute */
    uint64_t comm_hash;        /* NCCL's commHash of the communicator (not COMM's unique_id_hash) */
    uint64_t context;          /* address of the communicator's profiler-context slot, an
                                * address inside the ncclComm (the CLI ties it to COMM) */
    uint64_t seq;              /* collectives: how many of this function the communicator
                                * launched before; send/receive: 0 */
    uint64_t count;            /* elements, as NCCL counts them */
    uint32_t scope_id;         /* the NCCL call in flight on this thread, 0 none */
    int32_t rank;              /* the rank that launched it */
    int32_t root;              /* collectives: root (-1 none); send/receive: the peer */
    int16_t datatype;          /* ncclDataType_t from NCCL's name for it, -1 unknown */
    uint8_t algo;              /* enum gmt_nccl_algo, or GMT_NCCL_CHOICE_* */
    uint8_t proto;             /* enum gmt_nccl_proto, or GMT_NCCL_CHOICE_* */
    uint8_t nchannels;         /* channels NCCL runs it on */
    uint8_t nwarps;            /* warps per channel's block; 0 unknown (send/receive) */
    uint8_t kind;              /* enum gmt_nccl_info_kind */
    uint8_t reserved;          /* 0 */
    uint32_t reserved2;        /* 0 */
};

/* NVTX (2.4): the process's NVTX ranges, recorded by the library as an NVTX injection.
 * NVTX_STRING defines a name or a domain once (per file), NVTX_RANGE refers to them by
 * id. Like every type added after 2.0 neither moves a clock; NVTX_RANGE has its own
 * time. The thread is the enclosing CHUNK's. */
#define GMT_NVTX_STRING_KINDS(X) X(DOMAIN, 1) X(NAME, 2)
enum gmt_nvtx_string_kind {
#define GMT_X(name, val) GMT_NVTX_STR_##name = val,
    GMT_NVTX_STRING_KINDS(GMT_X)
#undef GMT_X
};
#define GMT_NVTX_STRING_MAX 1024       /* bytes of a name kept, its NUL included */
struct gmt_rec_nvtx_string {
    struct gmt_rec h;          /* aux: enum gmt_nvtx_string_kind */
    uint32_t id;               /* from 1, unique within the file among both kinds */
    uint32_t len;              /* bytes of the string that follows, its NUL included, >= 1 */
};
/* What a range record says happened. PUSH/POP nest per thread and domain; START/END
 * pair by range_id and may be on different threads; MARK is an instant. */
#define GMT_NVTX_OPS(X) X(PUSH, 1) X(POP, 2) X(START, 3) X(END, 4) X(MARK, 5)
enum gmt_nvtx_op {
#define GMT_X(name, val) GMT_NVTX_##name = val,
    GMT_NVTX_OPS(GMT_X)
#undef GMT_X
};
struct gmt_rec_nvtx_range {
    struct gmt_rec h;          /* aux: enum gmt_nvtx_op */
    uint64_t time_ns;          /* CLOCK_MONOTONIC, ns, absolute */
    uint32_t domain;           /* NVTX_STRING id of kind DOMAIN; 0 the default domain */
    uint32_t name;             /* NVTX_STRING id of kind NAME; 0 unnamed (POP: the name of
                                * the range it closed, as the library knew it; END: 0) */
    /* START and END, present when h.size >= sizeof(struct gmt_rec_nvtx_range_ext): */
};
struct gmt_rec_nvtx_range_ext {
    struct gmt_rec_nvtx_range r;
    uint64_t range_id;         /* the id START returned to the program, from 1 */
};

/* BLOCK (2.6): PyTorch's caching allocator handed out or took back one block, or failed a
 * request, as it told c10::reportMemoryUsageToProfiler (reportOutOfMemoryToProfiler for
 * OOM) on the thread that allocates or frees. Blocks lie inside the segments that ALLOC
 * records show (cudaMalloc, cuMemMap); they are not device memory of their own. Only CUDA
 * devices' blocks are written. No dt: its time is its own. */
#define GMT_BLOCK_OPS(X) X(ALLOC, 1) X(FREE, 2) X(OOM, 3)
enum gmt_block_op {
#define GMT_X(name, val) GMT_BLOCK_##name = val,
    GMT_BLOCK_OPS(GMT_X)
#undef GMT_X
};
struct gmt_rec_block {
    struct gmt_rec h;          /* aux: enum gmt_block_op */
    uint64_t time_ns;          /* CLOCK_MONOTONIC, ns, absolute */
    uint64_t address;          /* the block's device address; OOM: 0 */
    int64_t size;              /* bytes, signed as reported: +block size (ALLOC), -block size
                                * (FREE), the request that failed (OOM) */
    uint64_t total_allocated;  /* bytes of live blocks on the device after the change */
    uint64_t total_reserved;   /* bytes of the allocator's segments on the device then */
    uint32_t stack_id;         /* ALLOC, OOM: the thread's stack; FREE: 0 (not captured) */
    int8_t device_type;        /* c10::DeviceType: 1 CUDA */
    int8_t device_index;       /* the device's index, -1 the current one */
    uint16_t reserved;         /* 0 */
};

/* END: clean shutdown. A file without it was cut (crash, kill, exec). */
struct gmt_rec_end {
    struct gmt_rec h;          /* aux: 0 */
    uint64_t time_ns;          /* CLOCK_MONOTONIC, ns, absolute */
    uint64_t records_dropped;  /* records the writer could not keep, 0 normally */
};

/* A record's size: its fixed part plus variable parts (`bytes`), rounded up to GMT_ALIGN. */
static inline uint32_t gmt_rec_padded(uint32_t bytes)
{
    return (bytes + (GMT_ALIGN - 1)) & ~(uint32_t)(GMT_ALIGN - 1);
}

#endif
