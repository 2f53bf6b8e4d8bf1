/* early_ctor_main.c: links early_ctor_lib (DT_NEEDED), whose constructor runs before main; also allocates once itself. */
#include <stdio.h>

#include "fake_cuda.h"

int main(void)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, 1 << 20);
    printf("early_ctor_main: %d\n", (int)e);
    return e == cudaSuccess && cudaFree(p) == cudaSuccess ? 0 : 1;
}
