// arrays.cu: on a real GPU, CUDA arrays of the runtime and the driver: the device-used delta of each beside the bytes their descriptor gives.
//
// Build on the GPU machine: nvcc -o arrays arrays.cu -lcuda (static runtime, nvcc's
// default) or with -cudart shared. Prints one line per array: its API, the bytes the
// trace format's rule gives (docs/trace-format.md, 6.2) and the cudaMemGetInfo delta;
// then an allocation too large for the device and its error. Every array stays live
// until the end, so no delta is hidden by reuse; all are freed before exit.
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

static size_t used(void)
{
    size_t f = 0, t = 0;
    cudaMemGetInfo(&f, &t);
    return t - f;
}

static unsigned long long level_sum(unsigned long long elem, size_t w, size_t h, size_t d,
                                    unsigned levels, int layered)
{
    unsigned long long s = 0;
    for (unsigned l = 0; l < levels; l++) {
        size_t lw = w >> l ? w >> l : 1, lh = h >> l ? h >> l : 1;
        size_t ld = layered ? (d ? d : 1) : (d >> l ? d >> l : 1);
        s += elem * lw * lh * ld;
    }
    return s;
}

static void line(const char *what, int r, unsigned long long want, size_t before)
{
    long long delta = (long long)used() - (long long)before;
    printf("%-44s r=%d descriptor=%llu delta=%lld %s\n", what, r, want, delta,
           r ? "" : (unsigned long long)delta == want ? "equal" : "DIFFERS");
}

int main(void)
{
    cudaFree(0);
    cudaChannelFormatDesc f4 = cudaCreateChannelDesc<float4>();
    cudaChannelFormatDesc f1 = cudaCreateChannelDesc<float>();
    cudaChannelFormatDesc u1 = cudaCreateChannelDesc<unsigned char>();
    cudaArray_t a[8];
    cudaMipmappedArray_t m[2];
    CUarray da[2];
    CUmipmappedArray dm;
    size_t b0 = used(), b;

    b = used();
    line("cudaMallocArray 2048x2048 float4", cudaMallocArray(&a[0], &f4, 2048, 2048), 64ull << 20, b);
    b = used();
    line("cudaMalloc3DArray 256x256x64 float4",
         cudaMalloc3DArray(&a[1], &f4, make_cudaExtent(256, 256, 64)), 64ull << 20, b);
    b = used();
    line("cudaMallocArray 1000x1000 float", cudaMallocArray(&a[2], &f1, 1000, 1000), 4000000, b);
    b = used();
    line("cudaMallocArray 100 uchar (1D)", cudaMallocArray(&a[3], &u1, 100, 0), 100, b);
    b = used();
    line("cudaMalloc3DArray 512x512 x16 layers float",
         cudaMalloc3DArray(&a[4], &f1, make_cudaExtent(512, 512, 16), cudaArrayLayered),
         4ull * 512 * 512 * 16, b);
    b = used();
    line("cudaMallocMipmappedArray 1024x1024 float4 11",
         cudaMallocMipmappedArray(&m[0], &f4, make_cudaExtent(1024, 1024, 0), 11),
         level_sum(16, 1024, 1024, 0, 11, 0), b);
    b = used();
    line("cudaMallocMipmappedArray 128^3 float 8",
         cudaMallocMipmappedArray(&m[1], &f1, make_cudaExtent(128, 128, 128), 8),
         level_sum(4, 128, 128, 128, 8, 0), b);

    CUDA_ARRAY_DESCRIPTOR d2 = {1024, 1024, CU_AD_FORMAT_FLOAT, 4};
    CUDA_ARRAY3D_DESCRIPTOR d3 = {300, 300, 30, CU_AD_FORMAT_FLOAT, 1, 0};
    CUDA_ARRAY3D_DESCRIPTOR dmip = {2048, 2048, 0, CU_AD_FORMAT_UNSIGNED_INT8, 4, 0};
    b = used();
    line("cuArrayCreate 1024x1024 float4", cuArrayCreate(&da[0], &d2), 16ull << 20, b);
    b = used();
    line("cuArray3DCreate 300x300x30 float", cuArray3DCreate(&da[1], &d3), 4ull * 300 * 300 * 30, b);
    b = used();
    line("cuMipmappedArrayCreate 2048x2048 uchar4 12", cuMipmappedArrayCreate(&dm, &dmip, 12),
         level_sum(4, 2048, 2048, 0, 12, 0), b);

    b = used();
    cudaError_t e = cudaMalloc3DArray(&a[5], &f4, make_cudaExtent(65536, 65536, 64));
    printf("cudaMalloc3DArray 65536x65536x64 float4: %d %s\n", (int)e, cudaGetErrorName(e));
    cudaGetLastError();

    for (int i = 0; i < 5; i++)
        cudaFreeArray(a[i]);
    cudaFreeMipmappedArray(m[0]);
    cudaFreeMipmappedArray(m[1]);
    cuArrayDestroy(da[0]);
    cuArrayDestroy(da[1]);
    cuMipmappedArrayDestroy(dm);
    printf("after freeing all: used - at start = %lld\n", (long long)used() - (long long)b0);
    return 0;
}
