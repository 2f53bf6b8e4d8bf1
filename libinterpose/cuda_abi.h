/* cuda_abi.h: the part of the CUDA driver and runtime ABI the library needs, declared by hand so no toolkit is needed to build. */
#ifndef GMT_CUDA_ABI_H
#define GMT_CUDA_ABI_H

/*
 * Names, values and layouts are those of CUDA 13.0's cuda.h, driver_types.h and
 * cuda_runtime_api.h (64-bit targets), so code written against the toolkit reads the
 * same here. tests/test_conformance.c checks every prototype and layout below against
 * the toolkit's headers where they are installed.
 *
 * With GMT_ABI_TOOLKIT_TYPES defined (the conformance check, after including cuda.h and
 * cuda_runtime_api.h) only the prototypes are declared, so the compiler compares each
 * of them with the toolkit's declaration of the same name.
 */

#include <stddef.h>
#include <stdint.h>

#ifndef GMT_ABI_TOOLKIT_TYPES

/* ---- driver (cuda.h) ---- */

typedef enum cudaError_enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_DEINITIALIZED = 4,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_SUPPORTED = 801,
    CUDA_ERROR_UNKNOWN = 999
} CUresult;

typedef uint64_t cuuint64_t;
typedef unsigned long long CUdeviceptr_v2;
typedef CUdeviceptr_v2 CUdeviceptr;
typedef int CUdevice_v1;
typedef CUdevice_v1 CUdevice;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUgraph_st *CUgraph;
typedef struct CUmod_st *CUmodule;
typedef struct CUlib_st *CUlibrary;
typedef struct CUgraphNode_st *CUgraphNode;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef unsigned long long CUmemGenericAllocationHandle_v1;
typedef CUmemGenericAllocationHandle_v1 CUmemGenericAllocationHandle;

#define CU_IPC_HANDLE_SIZE 64
typedef struct CUipcMemHandle_st {
    char reserved[CU_IPC_HANDLE_SIZE];
} CUipcMemHandle_v1;
typedef CUipcMemHandle_v1 CUipcMemHandle;

typedef enum CUdriverProcAddress_flags_enum {
    CU_GET_PROC_ADDRESS_DEFAULT = 0,
    CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1 << 0,
    CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 1 << 1
} CUdriverProcAddress_flags;

typedef enum CUdriverProcAddressQueryResult_enum {
    CU_GET_PROC_ADDRESS_SUCCESS = 0,
    CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
    CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2
} CUdriverProcAddressQueryResult;

typedef enum CUmemAllocationHandleType_enum {
    CU_MEM_HANDLE_TYPE_NONE = 0x0,
    CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 0x1,
    CU_MEM_HANDLE_TYPE_WIN32 = 0x2,
    CU_MEM_HANDLE_TYPE_WIN32_KMT = 0x4,
    CU_MEM_HANDLE_TYPE_FABRIC = 0x8,
    CU_MEM_HANDLE_TYPE_MAX = 0x7FFFFFFF
} CUmemAllocationHandleType;

typedef enum CUmemAccess_flags_enum {
    CU_MEM_ACCESS_FLAGS_PROT_NONE = 0x0,
    CU_MEM_ACCESS_FLAGS_PROT_READ = 0x1,
    CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 0x3,
    CU_MEM_ACCESS_FLAGS_PROT_MAX = 0x7FFFFFFF
} CUmemAccess_flags;

typedef enum CUmemLocationType_enum {
    CU_MEM_LOCATION_TYPE_INVALID = 0x0,
    CU_MEM_LOCATION_TYPE_NONE = 0x0,
    CU_MEM_LOCATION_TYPE_DEVICE = 0x1,
    CU_MEM_LOCATION_TYPE_HOST = 0x2,
    CU_MEM_LOCATION_TYPE_HOST_NUMA = 0x3,
    CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT = 0x4,
    CU_MEM_LOCATION_TYPE_MAX = 0x7FFFFFFF
} CUmemLocationType;

typedef enum CUmemAllocationType_enum {
    CU_MEM_ALLOCATION_TYPE_INVALID = 0x0,
    CU_MEM_ALLOCATION_TYPE_PINNED = 0x1,
    CU_MEM_ALLOCATION_TYPE_MANAGED = 0x2,
    CU_MEM_ALLOCATION_TYPE_MAX = 0x7FFFFFFF
} CUmemAllocationType;

typedef struct CUmemLocation_st {
    CUmemLocationType type;
    int id;                     /* device ordinal or host NUMA node, per type */
} CUmemLocation_v1;
typedef CUmemLocation_v1 CUmemLocation;

typedef struct CUmemAllocationProp_st {
    CUmemAllocationType type;
    CUmemAllocationHandleType requestedHandleTypes;
    CUmemLocation location;
    void *win32HandleMetaData;
    struct {
        unsigned char compressionType;
        unsigned char gpuDirectRDMACapable;
        unsigned short usage;
        unsigned char reserved[4];
    } allocFlags;
} CUmemAllocationProp_v1;
typedef CUmemAllocationProp_v1 CUmemAllocationProp;

typedef struct CUmemAccessDesc_st {
    CUmemLocation location;
    CUmemAccess_flags flags;
} CUmemAccessDesc_v1;
typedef CUmemAccessDesc_v1 CUmemAccessDesc;

typedef struct CUmemPoolProps_st {
    CUmemAllocationType allocType;
    CUmemAllocationHandleType handleTypes;
    CUmemLocation location;
    void *win32SecurityAttributes;
    size_t maxSize;             /* bytes, 0: the system's default */
    unsigned short usage;
    unsigned char reserved[54];
} CUmemPoolProps_v1;
typedef CUmemPoolProps_v1 CUmemPoolProps;

typedef struct CUDA_MEM_ALLOC_NODE_PARAMS_v1_st {
    CUmemPoolProps poolProps;
    const CUmemAccessDesc *accessDescs;
    size_t accessDescCount;
    size_t bytesize;            /* bytes asked */
    CUdeviceptr dptr;           /* out: the allocation's address */
} CUDA_MEM_ALLOC_NODE_PARAMS_v1;
typedef CUDA_MEM_ALLOC_NODE_PARAMS_v1 CUDA_MEM_ALLOC_NODE_PARAMS;

typedef struct CUmulticastObjectProp_st {
    unsigned int numDevices;
    size_t size;                /* bytes per device */
    unsigned long long handleTypes;
    unsigned long long flags;
} CUmulticastObjectProp_v1;
typedef CUmulticastObjectProp_v1 CUmulticastObjectProp;

/* Graphs and stream capture. */
typedef struct CUgraphExec_st *CUgraphExec;

typedef enum CUstreamCaptureStatus_enum {
    CU_STREAM_CAPTURE_STATUS_NONE = 0,
    CU_STREAM_CAPTURE_STATUS_ACTIVE = 1,
    CU_STREAM_CAPTURE_STATUS_INVALIDATED = 2
} CUstreamCaptureStatus;

typedef enum CUstreamCaptureMode_enum {
    CU_STREAM_CAPTURE_MODE_GLOBAL = 0,
    CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1,
    CU_STREAM_CAPTURE_MODE_RELAXED = 2
} CUstreamCaptureMode;

/* Module and library loads: only the names the prototypes need (options pass through). */
typedef enum CUjit_option_enum { CU_JIT_MAX_REGISTERS = 0 } CUjit_option;
typedef enum CUlibraryOption_enum { CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE = 0 } CUlibraryOption;

typedef enum CUgraphMem_attribute_enum {
    CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT,     /* cuuint64_t, bytes */
    CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
    CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT,
    CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH
} CUgraphMem_attribute;

/* the context's limits and the device properties sampling.c reads beside a sample (only those values) */
typedef enum CUlimit_enum {
    CU_LIMIT_STACK_SIZE = 0x00,
    CU_LIMIT_PRINTF_FIFO_SIZE = 0x01,
    CU_LIMIT_MALLOC_HEAP_SIZE = 0x02,
} CUlimit;
typedef enum CUdevice_attribute_enum {
    CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR = 39,
} CUdevice_attribute;

typedef struct CUgraphEdgeData_st {
    unsigned char from_port;
    unsigned char to_port;
    unsigned char type;
    unsigned char reserved[5];
} CUgraphEdgeData;

typedef enum CUgraphInstantiateResult_enum {
    CUDA_GRAPH_INSTANTIATE_SUCCESS = 0,
    CUDA_GRAPH_INSTANTIATE_ERROR = 1,
    CUDA_GRAPH_INSTANTIATE_INVALID_STRUCTURE = 2,
    CUDA_GRAPH_INSTANTIATE_NODE_OPERATION_NOT_SUPPORTED = 3,
    CUDA_GRAPH_INSTANTIATE_MULTIPLE_CTXS_NOT_SUPPORTED = 4,
    CUDA_GRAPH_INSTANTIATE_CONDITIONAL_HANDLE_UNUSED = 5
} CUgraphInstantiateResult;

typedef struct CUDA_GRAPH_INSTANTIATE_PARAMS_st {
    cuuint64_t flags;
    CUstream hUploadStream;
    CUgraphNode hErrNode_out;
    CUgraphInstantiateResult result_out;
} CUDA_GRAPH_INSTANTIATE_PARAMS;

/* A stream handle naming the calling thread's per-thread default stream. */
#define CU_STREAM_PER_THREAD ((CUstream)0x2)

/* CUDA arrays: opaque handles, their descriptors and what sizes an element. */
typedef struct CUarray_st *CUarray;
typedef struct CUmipmappedArray_st *CUmipmappedArray;

typedef enum CUarray_format_enum {
    CU_AD_FORMAT_UNSIGNED_INT8 = 0x01,
    CU_AD_FORMAT_UNSIGNED_INT16 = 0x02,
    CU_AD_FORMAT_UNSIGNED_INT32 = 0x03,
    CU_AD_FORMAT_SIGNED_INT8 = 0x08,
    CU_AD_FORMAT_SIGNED_INT16 = 0x09,
    CU_AD_FORMAT_SIGNED_INT32 = 0x0a,
    CU_AD_FORMAT_HALF = 0x10,
    CU_AD_FORMAT_FLOAT = 0x20,
    CU_AD_FORMAT_UNORM_INT_101010_2 = 0x50,
    CU_AD_FORMAT_UNORM_INT8X1 = 0xc0,
    CU_AD_FORMAT_UNORM_INT8X2 = 0xc1,
    CU_AD_FORMAT_UNORM_INT8X4 = 0xc2,
    CU_AD_FORMAT_UNORM_INT16X1 = 0xc3,
    CU_AD_FORMAT_UNORM_INT16X2 = 0xc4,
    CU_AD_FORMAT_UNORM_INT16X4 = 0xc5,
    CU_AD_FORMAT_SNORM_INT8X1 = 0xc6,
    CU_AD_FORMAT_SNORM_INT8X2 = 0xc7,
    CU_AD_FORMAT_SNORM_INT8X4 = 0xc8,
    CU_AD_FORMAT_SNORM_INT16X1 = 0xc9,
    CU_AD_FORMAT_SNORM_INT16X2 = 0xca,
    CU_AD_FORMAT_SNORM_INT16X4 = 0xcb,
    CU_AD_FORMAT_MAX = 0x7FFFFFFF   /* others (block-compressed, YUV) exist; not listed */
} CUarray_format;

typedef struct CUDA_ARRAY_DESCRIPTOR_st {
    size_t Width;               /* elements */
    size_t Height;              /* rows, 0: a 1D array */
    CUarray_format Format;
    unsigned int NumChannels;   /* 1, 2 or 4 */
} CUDA_ARRAY_DESCRIPTOR_v2;
typedef CUDA_ARRAY_DESCRIPTOR_v2 CUDA_ARRAY_DESCRIPTOR;

typedef struct CUDA_ARRAY3D_DESCRIPTOR_st {
    size_t Width;               /* elements */
    size_t Height;              /* rows, 0: 1D */
    size_t Depth;               /* slices (layers when LAYERED, 6 faces when CUBEMAP), 0: 1D or 2D */
    CUarray_format Format;
    unsigned int NumChannels;
    unsigned int Flags;         /* CUDA_ARRAY3D_* */
} CUDA_ARRAY3D_DESCRIPTOR_v2;
typedef CUDA_ARRAY3D_DESCRIPTOR_v2 CUDA_ARRAY3D_DESCRIPTOR;

#define CUDA_ARRAY3D_LAYERED 0x01
#define CUDA_ARRAY3D_CUBEMAP 0x04
#define CUDA_ARRAY3D_SPARSE 0x40
#define CUDA_ARRAY3D_DEFERRED_MAPPING 0x80

/* ---- runtime (driver_types.h) ---- */

enum cudaError {
    cudaSuccess = 0,
    cudaErrorInvalidValue = 1,
    cudaErrorMemoryAllocation = 2,
    cudaErrorInitializationError = 3,
    cudaErrorSymbolNotFound = 500,
    cudaErrorNotSupported = 801,
    cudaErrorUnknown = 999
};
typedef enum cudaError cudaError_t;

typedef struct CUstream_st *cudaStream_t;
typedef struct CUmemPoolHandle_st *cudaMemPool_t;

enum cudaMemAllocationType {
    cudaMemAllocationTypeInvalid = 0x0,
    cudaMemAllocationTypePinned = 0x1,
    cudaMemAllocationTypeManaged = 0x2,
    cudaMemAllocationTypeMax = 0x7FFFFFFF
};

enum cudaMemAllocationHandleType {
    cudaMemHandleTypeNone = 0x0,
    cudaMemHandleTypePosixFileDescriptor = 0x1,
    cudaMemHandleTypeWin32 = 0x2,
    cudaMemHandleTypeWin32Kmt = 0x4,
    cudaMemHandleTypeFabric = 0x8
};

enum cudaMemLocationType {
    cudaMemLocationTypeInvalid = 0,
    cudaMemLocationTypeNone = 0,
    cudaMemLocationTypeDevice = 1,
    cudaMemLocationTypeHost = 2,
    cudaMemLocationTypeHostNuma = 3,
    cudaMemLocationTypeHostNumaCurrent = 4
};

struct cudaMemLocation {
    enum cudaMemLocationType type;
    int id;
};

struct cudaMemPoolProps {
    enum cudaMemAllocationType allocType;
    enum cudaMemAllocationHandleType handleTypes;
    struct cudaMemLocation location;
    void *win32SecurityAttributes;
    size_t maxSize;             /* bytes */
    unsigned short usage;
    unsigned char reserved[54];
};

struct cudaPitchedPtr {
    void *ptr;
    size_t pitch;               /* bytes per row */
    size_t xsize;
    size_t ysize;
};

struct cudaExtent {
    size_t width;               /* bytes, for linear memory */
    size_t height;              /* rows */
    size_t depth;               /* slices */
};

enum cudaChannelFormatKind {
    cudaChannelFormatKindSigned = 0,
    cudaChannelFormatKindUnsigned = 1,
    cudaChannelFormatKindFloat = 2,
    cudaChannelFormatKindNone = 3,
    cudaChannelFormatKindNV12 = 4,
    cudaChannelFormatKindUnsignedNormalized8X1 = 5,
    cudaChannelFormatKindSignedNormalized16X4 = 16,
    cudaChannelFormatKindUnsignedBlockCompressed1 = 17,
    cudaChannelFormatKindUnsignedBlockCompressed7SRGB = 30,
    cudaChannelFormatKindUnsignedNormalized1010102 = 31
};

struct cudaChannelFormatDesc {
    int x, y, z, w;             /* bits per channel */
    enum cudaChannelFormatKind f;
};

typedef struct cudaArray *cudaArray_t;
typedef struct cudaMipmappedArray *cudaMipmappedArray_t;

/* cudaMalloc3DArray / cudaMallocMipmappedArray flags: the driver's CUDA_ARRAY3D_* values. */
#define cudaArrayLayered 0x01
#define cudaArrayCubemap 0x04
#define cudaArraySparse 0x40
#define cudaArrayDeferredMapping 0x80

enum cudaDriverEntryPointQueryResult {
    cudaDriverEntryPointSuccess = 0,
    cudaDriverEntryPointSymbolNotFound = 1,
    cudaDriverEntryPointVersionNotSufficent = 2
};

/* cudaGetDriverEntryPoint flags: the same values as CUdriverProcAddress_flags. */
enum {
    cudaEnableDefault = 0x0,
    cudaEnableLegacyStream = 0x1,
    cudaEnablePerThreadDefaultStream = 0x2
};

#endif /* GMT_ABI_TOOLKIT_TYPES */

/* ---- prototypes: every function the library hooks or calls ----
 * As function types named gmt_fn_<ABI name>, not as declarations: the toolkit renames
 * many of these names with macros (cuMemAlloc -> cuMemAlloc_v2, cuMemAllocAsync ->
 * cuMemAllocAsync_ptsz with per-thread streams), so types keep this header usable next
 * to it, and each hook's definition is checked against its type where it is defined. */

/* Called, never hooked: context queries (events.c notes the thread's context per event)
 * and what driver.c needs to sample a device's memory. */
typedef CUresult gmt_fn_cuCtxGetCurrent(CUcontext *pctx);
typedef CUresult gmt_fn_cuCtxGetDevice(CUdevice *device);
typedef CUresult gmt_fn_cuMemGetInfo_v2(size_t *free, size_t *total);
typedef CUresult gmt_fn_cuDeviceGet(CUdevice *device, int ordinal);
typedef CUresult gmt_fn_cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active);
typedef CUresult gmt_fn_cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev);
typedef CUresult gmt_fn_cuDevicePrimaryCtxRelease_v2(CUdevice dev);
typedef CUresult gmt_fn_cuCtxPushCurrent_v2(CUcontext ctx);
typedef CUresult gmt_fn_cuCtxPopCurrent_v2(CUcontext *pctx);
/* sampling.c's device samples outside NCCL calls: the device's PCI bus id (NVML finds
 * the device by it), and the thread's stream-capture mode (a sample is taken in relaxed
 * mode, which no capture on another stream can refuse). */
typedef CUresult gmt_fn_cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev);
typedef CUresult gmt_fn_cuThreadExchangeStreamCaptureMode(int *mode); /* CUstreamCaptureMode */
/* sampling.c's reads beside a cuMemGetInfo sample: the context's limits and the device's
 * properties that size its local-memory reservation. */
typedef CUresult gmt_fn_cuCtxGetLimit(size_t *value, CUlimit limit);
typedef CUresult gmt_fn_cuDeviceGetAttribute(int *value, CUdevice_attribute attrib, CUdevice dev);

typedef CUresult gmt_fn_cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize);
typedef CUresult gmt_fn_cuMemFree_v2(CUdeviceptr dptr);
typedef CUresult gmt_fn_cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                           size_t Height, unsigned int ElementSizeBytes);
typedef CUresult gmt_fn_cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags);
typedef CUresult gmt_fn_cuMemAllocHost_v2(void **pp, size_t bytesize);
typedef CUresult gmt_fn_cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags);
typedef CUresult gmt_fn_cuMemFreeHost(void *p);
typedef CUresult gmt_fn_cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags);
typedef CUresult gmt_fn_cuMemHostUnregister(void *p);
typedef CUresult gmt_fn_cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
typedef CUresult gmt_fn_cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream);
typedef CUresult gmt_fn_cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                                CUstream hStream);
typedef CUresult gmt_fn_cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                                     CUstream hStream);
typedef CUresult gmt_fn_cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream);
typedef CUresult gmt_fn_cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream);
typedef CUresult gmt_fn_cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps);
typedef CUresult gmt_fn_cuMemPoolDestroy(CUmemoryPool pool);
typedef CUresult gmt_fn_cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep);
typedef CUresult gmt_fn_cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                    const CUmemAllocationProp *prop, unsigned long long flags);
typedef CUresult gmt_fn_cuMemRelease(CUmemGenericAllocationHandle handle);
typedef CUresult gmt_fn_cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                                            unsigned long long flags);
typedef CUresult gmt_fn_cuMemAddressFree(CUdeviceptr ptr, size_t size);
typedef CUresult gmt_fn_cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                 CUmemGenericAllocationHandle handle, unsigned long long flags);
typedef CUresult gmt_fn_cuMemUnmap(CUdeviceptr ptr, size_t size);
typedef CUresult gmt_fn_cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                                       CUmemAllocationHandleType shHandleType);
typedef CUresult gmt_fn_cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr);
typedef CUresult gmt_fn_cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags);
typedef CUresult gmt_fn_cuIpcCloseMemHandle(CUdeviceptr dptr);
typedef CUresult gmt_fn_cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
                                               const CUgraphNode *dependencies, size_t numDependencies,
                                               CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams);
typedef CUresult gmt_fn_cuMulticastCreate(CUmemGenericAllocationHandle *mcHandle,
                                          const CUmulticastObjectProp *prop);

/* Stream capture and graphs (hooks_graph.c); cuStreamIsCapturing, cuStreamGetCaptureInfo_v3
 * and cuDeviceGetGraphMemAttribute are called, never hooked. */
typedef CUresult gmt_fn_cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode);
typedef CUresult gmt_fn_cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode);
typedef CUresult gmt_fn_cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                                    const CUgraphNode *dependencies,
                                                    const CUgraphEdgeData *dependencyData,
                                                    size_t numDependencies, CUstreamCaptureMode mode);
typedef CUresult gmt_fn_cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                         const CUgraphNode *dependencies,
                                                         const CUgraphEdgeData *dependencyData,
                                                         size_t numDependencies, CUstreamCaptureMode mode);
typedef CUresult gmt_fn_cuStreamEndCapture(CUstream hStream, CUgraph *phGraph);
typedef CUresult gmt_fn_cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph);
typedef CUresult gmt_fn_cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus);
typedef CUresult gmt_fn_cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                                  cuuint64_t *id_out, CUgraph *graph_out,
                                                  const CUgraphNode **dependencies_out,
                                                  const CUgraphEdgeData **edgeData_out,
                                                  size_t *numDependencies_out);
typedef CUresult gmt_fn_cuGraphInstantiate(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                                           char *logBuffer, size_t bufferSize);
typedef CUresult gmt_fn_cuGraphInstantiate_v2(CUgraphExec *phGraphExec, CUgraph hGraph, CUgraphNode *phErrorNode,
                                              char *logBuffer, size_t bufferSize);
typedef CUresult gmt_fn_cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                    unsigned long long flags);
typedef CUresult gmt_fn_cuGraphInstantiateWithParams(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                     CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams);
typedef CUresult gmt_fn_cuGraphInstantiateWithParams_ptsz(CUgraphExec *phGraphExec, CUgraph hGraph,
                                                          CUDA_GRAPH_INSTANTIATE_PARAMS *instantiateParams);
typedef CUresult gmt_fn_cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream);
typedef CUresult gmt_fn_cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);
typedef CUresult gmt_fn_cuGraphExecDestroy(CUgraphExec hGraphExec);
typedef CUresult gmt_fn_cuGraphDestroy(CUgraph hGraph);
typedef CUresult gmt_fn_cuDeviceGraphMemTrim(CUdevice device);
/* Module and library loads (hooks_driver.c: a device sample before and after each). */
typedef CUresult gmt_fn_cuModuleLoad(CUmodule *module, const char *fname);
typedef CUresult gmt_fn_cuModuleLoadData(CUmodule *module, const void *image);
typedef CUresult gmt_fn_cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                                           CUjit_option *options, void **optionValues);
typedef CUresult gmt_fn_cuModuleLoadFatBinary(CUmodule *module, const void *fatCubin);
typedef CUresult gmt_fn_cuLibraryLoadData(CUlibrary *library, const void *code, CUjit_option *jitOptions,
                                          void **jitOptionsValues, unsigned int numJitOptions,
                                          CUlibraryOption *libraryOptions, void **libraryOptionValues,
                                          unsigned int numLibraryOptions);
typedef CUresult gmt_fn_cuModuleUnload(CUmodule hmod);
typedef CUresult gmt_fn_cuLibraryUnload(CUlibrary library);
typedef CUresult gmt_fn_cuLibraryLoadFromFile(CUlibrary *library, const char *fileName,
                                              CUjit_option *jitOptions, void **jitOptionsValues,
                                              unsigned int numJitOptions, CUlibraryOption *libraryOptions,
                                              void **libraryOptionValues, unsigned int numLibraryOptions);
typedef CUresult gmt_fn_cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value);

typedef CUresult gmt_fn_cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray);
typedef CUresult gmt_fn_cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray);
typedef CUresult gmt_fn_cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                               const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                               unsigned int numMipmapLevels);
typedef CUresult gmt_fn_cuArrayDestroy(CUarray hArray);
typedef CUresult gmt_fn_cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray);

/* The lookup paths. v1 (CUDA 11.3) has no status out-parameter; v2 (CUDA 12.0) has. */
typedef CUresult gmt_fn_cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
typedef CUresult gmt_fn_cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                            CUdriverProcAddressQueryResult *symbolStatus);

typedef cudaError_t gmt_fn_cudaMalloc(void **devPtr, size_t size);
typedef cudaError_t gmt_fn_cudaFree(void *devPtr);
typedef cudaError_t gmt_fn_cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream);
typedef cudaError_t gmt_fn_cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream);
typedef cudaError_t gmt_fn_cudaFreeAsync(void *devPtr, cudaStream_t hStream);
typedef cudaError_t gmt_fn_cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream);
typedef cudaError_t gmt_fn_cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
                                                   cudaStream_t stream);
typedef cudaError_t gmt_fn_cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
                                                        cudaStream_t stream);
typedef cudaError_t gmt_fn_cudaMallocManaged(void **devPtr, size_t size, unsigned int flags);
typedef cudaError_t gmt_fn_cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height);
typedef cudaError_t gmt_fn_cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent);
typedef cudaError_t gmt_fn_cudaMallocHost(void **ptr, size_t size);
typedef cudaError_t gmt_fn_cudaHostAlloc(void **pHost, size_t size, unsigned int flags);
typedef cudaError_t gmt_fn_cudaFreeHost(void *ptr);
typedef cudaError_t gmt_fn_cudaHostRegister(void *ptr, size_t size, unsigned int flags);
typedef cudaError_t gmt_fn_cudaHostUnregister(void *ptr);
typedef cudaError_t gmt_fn_cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps);
typedef cudaError_t gmt_fn_cudaMemPoolDestroy(cudaMemPool_t memPool);
typedef cudaError_t gmt_fn_cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep);

typedef cudaError_t gmt_fn_cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                           size_t width, size_t height, unsigned int flags);
typedef cudaError_t gmt_fn_cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                             struct cudaExtent extent, unsigned int flags);
typedef cudaError_t gmt_fn_cudaMallocMipmappedArray(cudaMipmappedArray_t *mipmappedArray,
                                                    const struct cudaChannelFormatDesc *desc,
                                                    struct cudaExtent extent, unsigned int numLevels,
                                                    unsigned int flags);
typedef cudaError_t gmt_fn_cudaFreeArray(cudaArray_t array);
typedef cudaError_t gmt_fn_cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray);

typedef cudaError_t gmt_fn_cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                                   enum cudaDriverEntryPointQueryResult *driverStatus);
typedef cudaError_t gmt_fn_cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr,
                                                        unsigned long long flags,
                                                        enum cudaDriverEntryPointQueryResult *driverStatus);
typedef cudaError_t gmt_fn_cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr,
                                                            unsigned int cudaVersion, unsigned long long flags,
                                                            enum cudaDriverEntryPointQueryResult *driverStatus);
typedef cudaError_t gmt_fn_cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr,
                                                                 unsigned int cudaVersion,
                                                                 unsigned long long flags,
                                                                 enum cudaDriverEntryPointQueryResult *driverStatus);

#endif
