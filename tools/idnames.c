/* idnames.c: the names of the trace's ids (record types, APIs, kinds, NCCL ops, ...) and of the errors an allocation call returns. */
#include <stdio.h>

#include "idnames.h"

/* The name of an id of one of trace_format.h's X(name, id) lists, "?" for one it lacks. */
#define NAME_CASE(name, id) case id: return #name;
#define NAME_OF(fn, LIST)                                                                  \
    const char *fn(unsigned id)                                                            \
    {                                                                                      \
        switch (id) {                                                                      \
            LIST(NAME_CASE)                                                                \
        }                                                                                  \
        return "?";                                                                        \
    }

const char *gmt_rec_type_name(unsigned type)
{
    switch (type) {
#define GMT_X(name, val, st) case val: return #name;
    GMT_RECORD_TYPES(GMT_X)
#undef GMT_X
    }
    return "?";
}

NAME_OF(gmt_api_name, GMT_APIS)

/* The errors an allocation call returns, by family (the API's id says which): the values
 * are the CUDA and NCCL ABI's, stable across versions. */
#define GMT_CU_ERRORS(X)                                                                 \
    X(CUDA_SUCCESS, 0) X(CUDA_ERROR_INVALID_VALUE, 1) X(CUDA_ERROR_OUT_OF_MEMORY, 2)       \
    X(CUDA_ERROR_NOT_INITIALIZED, 3) X(CUDA_ERROR_DEINITIALIZED, 4)                        \
    X(CUDA_ERROR_NO_DEVICE, 100) X(CUDA_ERROR_INVALID_DEVICE, 101)                         \
    X(CUDA_ERROR_INVALID_CONTEXT, 201) X(CUDA_ERROR_INVALID_HANDLE, 400)                   \
    X(CUDA_ERROR_NOT_FOUND, 500) X(CUDA_ERROR_NOT_READY, 600)                              \
    X(CUDA_ERROR_ILLEGAL_ADDRESS, 700) X(CUDA_ERROR_CONTEXT_IS_DESTROYED, 709)             \
    X(CUDA_ERROR_LAUNCH_FAILED, 719) X(CUDA_ERROR_NOT_PERMITTED, 800)                      \
    X(CUDA_ERROR_NOT_SUPPORTED, 801) X(CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, 900)         \
    X(CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, 901) X(CUDA_ERROR_UNKNOWN, 999)
#define GMT_CUDART_ERRORS(X)                                                             \
    X(cudaSuccess, 0) X(cudaErrorInvalidValue, 1) X(cudaErrorMemoryAllocation, 2)          \
    X(cudaErrorInitializationError, 3) X(cudaErrorCudartUnloading, 4)                     \
    X(cudaErrorInvalidDevicePointer, 17) X(cudaErrorInsufficientDriver, 35)                \
    X(cudaErrorNoDevice, 100) X(cudaErrorInvalidDevice, 101)                               \
    X(cudaErrorDeviceUninitialized, 201) X(cudaErrorInvalidResourceHandle, 400)            \
    X(cudaErrorSymbolNotFound, 500) X(cudaErrorNotReady, 600)                              \
    X(cudaErrorIllegalAddress, 700) X(cudaErrorContextIsDestroyed, 709)                    \
    X(cudaErrorLaunchFailure, 719) X(cudaErrorNotPermitted, 800)                           \
    X(cudaErrorNotSupported, 801) X(cudaErrorStreamCaptureUnsupported, 900)                \
    X(cudaErrorStreamCaptureInvalidated, 901) X(cudaErrorUnknown, 999)
#define GMT_NCCL_ERRORS(X)                                                               \
    X(ncclSuccess, 0) X(ncclUnhandledCudaError, 1) X(ncclSystemError, 2)                   \
    X(ncclInternalError, 3) X(ncclInvalidArgument, 4) X(ncclInvalidUsage, 5)               \
    X(ncclRemoteError, 6) X(ncclInProgress, 7)

const char *gmt_error_name(unsigned api, int32_t error)
{
    if (api >= GMT_API_ncclMemAlloc) {
        switch (error) {
        GMT_NCCL_ERRORS(NAME_CASE)
        }
    } else if (api >= GMT_API_cuMemAlloc) {
        switch (error) {
        GMT_CU_ERRORS(NAME_CASE)
        }
    } else {
        switch (error) {
        GMT_CUDART_ERRORS(NAME_CASE)
        }
    }
    return NULL;
}

const char *gmt_error_text(unsigned api, int32_t error, char *buf, size_t len)
{
    const char *name = gmt_error_name(api, error);
    if (name)
        snprintf(buf, len, "%s", name);
    else
        snprintf(buf, len, "error %d", (int)error);
    return buf;
}

NAME_OF(gmt_kind_name, GMT_KINDS)

NAME_OF(gmt_op_name, GMT_OPS)

bool gmt_op_is_comm_init(unsigned op)
{
    switch (op) {
    case GMT_OP_CommInitRank: case GMT_OP_CommInitAll: case GMT_OP_CommInitRankConfig:
    case GMT_OP_CommInitRankScalable: case GMT_OP_CommSplit: case GMT_OP_CommShrink:
        return true;
    default:
        return false;
    }
}

NAME_OF(gmt_component_name, GMT_COMPONENTS)

NAME_OF(gmt_meminfo_phase_name, GMT_MEMINFO_PHASES)

NAME_OF(gmt_meminfo_source_name, GMT_MEMINFO_SOURCES)

NAME_OF(gmt_graphmem_phase_name, GMT_GRAPHMEM_PHASES)
NAME_OF(gmt_memstats_phase_name, GMT_MEMSTATS_PHASES)
NAME_OF(gmt_modload_api_name, GMT_MODLOAD_APIS)
NAME_OF(gmt_block_op_name, GMT_BLOCK_OPS)

/* NCCL_COLL_INFO's algorithm and protocol: NCCL's names, "other" and "none" beyond them. */
#define CHOICE_NAME(fn, LIST)                                                              \
    const char *fn(unsigned id)                                                            \
    {                                                                                      \
        switch (id) {                                                                      \
            LIST(NAME_CASE)                                                                \
        case GMT_NCCL_CHOICE_OTHER: return "other";                                        \
        case GMT_NCCL_CHOICE_NONE: return "none";                                          \
        }                                                                                  \
        return "?";                                                                        \
    }
CHOICE_NAME(gmt_nccl_algo_name, GMT_NCCL_ALGOS)
CHOICE_NAME(gmt_nccl_proto_name, GMT_NCCL_PROTOS)
#undef CHOICE_NAME
NAME_OF(gmt_nvtx_op_name, GMT_NVTX_OPS)

NAME_OF(gmt_nvtx_string_kind_name, GMT_NVTX_STRING_KINDS)
