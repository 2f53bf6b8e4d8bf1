/* early_ctor_lib.c: a library whose constructor allocates device memory, so a hook runs before the tracer's constructor would. */
#include <stddef.h>

#include "fake_cuda.h"

__attribute__((constructor)) static void early(void)
{
    void *p = NULL;
    if (cudaMalloc(&p, 4096) == cudaSuccess)
        cudaFree(p);
}
