/* nccl_types.h: what the datatype field of an NCCL call record means: NCCL's element types and their sizes. */
#ifndef GMT_NCCL_TYPES_H
#define GMT_NCCL_TYPES_H

#include <stddef.h>

/* NCCL 2.28's element types: X(name, value, bytes per element). The trace carries the
 * value as NCCL defines it, so a reader needs this list to turn a count into bytes. */
#define GMT_NCCL_TYPES(X)                                                     \
    X(ncclInt8, 0, 1) X(ncclUint8, 1, 1) X(ncclInt32, 2, 4) X(ncclUint32, 3, 4) \
    X(ncclInt64, 4, 8) X(ncclUint64, 5, 8) X(ncclFloat16, 6, 2)              \
    X(ncclFloat32, 7, 4) X(ncclFloat64, 8, 8) X(ncclBfloat16, 9, 2)          \
    X(ncclFloat8e4m3, 10, 1) X(ncclFloat8e5m2, 11, 1)

/* Bytes per element; 0 for a value NCCL would reject (the call then fails by itself). */
static inline size_t gmt_nccl_type_size(int datatype)
{
    switch (datatype) {
#define GMT_X(name, val, size) case val: return size;
        GMT_NCCL_TYPES(GMT_X)
#undef GMT_X
    default: return 0;
    }
}

#endif
