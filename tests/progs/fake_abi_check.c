/* fake_abi_check.c: prints the ABI values the fakes declare by hand (sizes, offsets, enum values); built against tests/fakes or, with USE_REAL_HEADERS, the CUDA toolkit's headers, so a test can compare the two outputs. */
#ifdef USE_REAL_HEADERS
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nccl.h>
#else
#include "fake_nccl.h"
#endif

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define V(x) printf("%s %lld\n", #x, (long long)(x));
#define SZ(t) printf("sizeof(%s) %zu\n", #t, sizeof(t));
#define OFF(t, f) printf("offsetof(%s,%s) %zu\n", #t, #f, offsetof(t, f));

int main(void)
{
    V(CUDA_VERSION) V(CUDART_VERSION) V(NCCL_VERSION_CODE)
    V(CUDA_SUCCESS) V(CUDA_ERROR_INVALID_VALUE) V(CUDA_ERROR_OUT_OF_MEMORY) V(CUDA_ERROR_NOT_INITIALIZED)
    V(CUDA_ERROR_DEINITIALIZED) V(CUDA_ERROR_NO_DEVICE) V(CUDA_ERROR_INVALID_DEVICE) V(CUDA_ERROR_INVALID_IMAGE)
    V(CUDA_ERROR_INVALID_CONTEXT) V(CUDA_ERROR_ALREADY_MAPPED) V(CUDA_ERROR_NOT_MAPPED) V(CUDA_ERROR_INVALID_HANDLE)
    V(CUDA_ERROR_NOT_FOUND) V(CUDA_ERROR_ILLEGAL_ADDRESS) V(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)
    V(CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED) V(CUDA_ERROR_NOT_PERMITTED) V(CUDA_ERROR_NOT_SUPPORTED) V(CUDA_ERROR_UNKNOWN)
    V(CU_GET_PROC_ADDRESS_DEFAULT) V(CU_GET_PROC_ADDRESS_LEGACY_STREAM) V(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
    V(CU_GET_PROC_ADDRESS_SUCCESS) V(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND) V(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT)
    V(CU_MEM_ALLOCATION_TYPE_PINNED) V(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) V(CU_MEM_HANDLE_TYPE_FABRIC)
    V(CU_MEM_LOCATION_TYPE_DEVICE) V(CU_MEM_LOCATION_TYPE_HOST) V(CU_MEM_LOCATION_TYPE_HOST_NUMA)
    V(CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT) V(CU_MEM_ACCESS_FLAGS_PROT_READ) V(CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
    V(CU_MEM_ALLOC_GRANULARITY_MINIMUM) V(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED)
    V(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD) V(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT) V(CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH)
    V(CU_MEMPOOL_ATTR_USED_MEM_CURRENT) V(CU_MEMPOOL_ATTR_USED_MEM_HIGH) V(CU_IPC_HANDLE_SIZE)
    V(CU_MEMHOSTALLOC_PORTABLE) V(CU_MEMHOSTALLOC_DEVICEMAP) V(CU_MEM_ATTACH_GLOBAL)
    SZ(CUdeviceptr) SZ(CUmemGenericAllocationHandle) SZ(CUmemLocation) SZ(CUmemAllocationProp) SZ(CUmemAccessDesc)
    SZ(CUmemPoolProps) SZ(CUipcMemHandle) SZ(CUDA_MEM_ALLOC_NODE_PARAMS)
    OFF(CUmemAllocationProp, location) OFF(CUmemAllocationProp, win32HandleMetaData) OFF(CUmemAllocationProp, allocFlags)
    OFF(CUmemPoolProps, location) OFF(CUmemPoolProps, maxSize) OFF(CUmemPoolProps, usage)
    OFF(CUDA_MEM_ALLOC_NODE_PARAMS, accessDescs) OFF(CUDA_MEM_ALLOC_NODE_PARAMS, bytesize) OFF(CUDA_MEM_ALLOC_NODE_PARAMS, dptr)
    V(cudaSuccess) V(cudaErrorInvalidValue) V(cudaErrorMemoryAllocation) V(cudaErrorInitializationError)
    V(cudaErrorCudartUnloading) V(cudaErrorInsufficientDriver) V(cudaErrorInvalidDevicePointer) V(cudaErrorNoDevice)
    V(cudaErrorInvalidDevice) V(cudaErrorDeviceUninitialized) V(cudaErrorInvalidResourceHandle)
    V(cudaErrorSymbolNotFound) V(cudaErrorIllegalAddress) V(cudaErrorHostMemoryAlreadyRegistered)
    V(cudaErrorHostMemoryNotRegistered) V(cudaErrorNotSupported) V(cudaErrorUnknown)
    V(cudaMemcpyHostToDevice) V(cudaMemcpyDeviceToHost) V(cudaMemcpyDeviceToDevice) V(cudaMemcpyDefault)
    V(cudaDriverEntryPointSuccess) V(cudaDriverEntryPointSymbolNotFound) V(cudaDriverEntryPointVersionNotSufficent)
    V(cudaEnableDefault) V(cudaEnableLegacyStream) V(cudaEnablePerThreadDefaultStream)
    V(cudaHostAllocMapped) V(cudaMemAttachGlobal) V(cudaMemLocationTypeDevice) V(cudaMemAllocationTypePinned)
    SZ(struct cudaMemPoolProps) SZ(struct cudaPitchedPtr) SZ(struct cudaExtent)
    OFF(struct cudaMemPoolProps, maxSize)
    V(CU_AD_FORMAT_UNSIGNED_INT8) V(CU_AD_FORMAT_SIGNED_INT16) V(CU_AD_FORMAT_HALF) V(CU_AD_FORMAT_FLOAT)
    V(CUDA_ARRAY3D_LAYERED) V(CUDA_ARRAY3D_SURFACE_LDST) V(CUDA_ARRAY3D_CUBEMAP)
    SZ(CUDA_ARRAY_DESCRIPTOR) SZ(CUDA_ARRAY3D_DESCRIPTOR) OFF(CUDA_ARRAY_DESCRIPTOR, Format)
    OFF(CUDA_ARRAY3D_DESCRIPTOR, Format) OFF(CUDA_ARRAY3D_DESCRIPTOR, Flags)
    V(cudaChannelFormatKindFloat) V(cudaArrayLayered) V(cudaArrayCubemap) V(cudaArraySurfaceLoadStore)
    SZ(struct cudaChannelFormatDesc) OFF(struct cudaChannelFormatDesc, f)
    V(CUDA_ERROR_ILLEGAL_STATE) V(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) V(cudaErrorIllegalState)
    V(cudaErrorStreamCaptureUnsupported) V(CU_STREAM_CAPTURE_STATUS_ACTIVE) V(CU_STREAM_CAPTURE_MODE_RELAXED)
    V(CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT) V(CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH) V((long long)(uintptr_t)CU_STREAM_PER_THREAD)
    V(cudaStreamCaptureModeRelaxed) V(cudaStreamCaptureStatusActive) V(cudaGraphMemAttrReservedMemCurrent)
    SZ(CUgraphEdgeData) SZ(CUDA_GRAPH_INSTANTIATE_PARAMS) OFF(CUDA_GRAPH_INSTANTIATE_PARAMS, result_out)
    SZ(struct cudaMemAllocNodeParams) OFF(struct cudaMemAllocNodeParams, bytesize) OFF(struct cudaMemAllocNodeParams, dptr)
    SZ(struct cudaMemAccessDesc)
    V(ncclSuccess) V(ncclUnhandledCudaError) V(ncclSystemError) V(ncclInternalError) V(ncclInvalidArgument)
    V(ncclInvalidUsage) V(ncclRemoteError) V(ncclInProgress) V(ncclNumResults)
    V(ncclSum) V(ncclProd) V(ncclMax) V(ncclMin) V(ncclAvg) V(ncclNumOps)
    V(ncclInt8) V(ncclUint8) V(ncclInt32) V(ncclUint32) V(ncclInt64) V(ncclUint64) V(ncclFloat16) V(ncclFloat32)
    V(ncclFloat64) V(ncclBfloat16) V(ncclFloat8e4m3) V(ncclFloat8e5m2) V(ncclNumTypes) V(NCCL_SPLIT_NOCOLOR)
    SZ(ncclUniqueId) SZ(ncclConfig_t) SZ(ncclSimInfo_t) SZ(ncclRedOp_t) SZ(ncclDataType_t)
    OFF(ncclConfig_t, blocking) OFF(ncclConfig_t, netName) OFF(ncclConfig_t, commName) OFF(ncclConfig_t, nvlinkCentricSched)
    OFF(ncclSimInfo_t, estimatedTime)
    {
        ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
        V(c.magic) V(c.version) V(c.size) V(c.blocking)
    }
    return 0;
}
