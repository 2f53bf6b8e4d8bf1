/* test_fakes.c: the simulated driver, runtime and NCCL behave like the real ones where the tracer can see it. */
#include <criterion/criterion.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_nccl.h"

#define MIB ((size_t)1 << 20)

/* Each Criterion test runs in its own process: every test starts with fresh devices. */

static struct fakecuda_fn_stats fn(const char *name)
{
    struct fakecuda_fn_stats s;
    cr_assert_eq(fakecuda_fn_stats(name, &s), 0, "no driver function %s", name);
    return s;
}

static struct fakecuda_dev_stats dev(int d)
{
    struct fakecuda_dev_stats s;
    cr_assert_eq(fakecuda_dev_stats(d, &s), 0);
    return s;
}

static CUcontext driver_ctx(int d)
{
    CUcontext c;
    cr_assert_eq(cuInit(0), CUDA_SUCCESS);
    cr_assert_eq(cuDevicePrimaryCtxRetain(&c, d), CUDA_SUCCESS);
    cr_assert_eq(cuCtxSetCurrent(c), CUDA_SUCCESS);
    return c;
}

/* Runs a command, returns its exit status and (up to n bytes of) its stdout. */
static int run(const char *cmd, char *out, size_t n)
{
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p, "popen %s", cmd);
    size_t got = fread(out, 1, n - 1, p);
    out[got] = 0;
    int st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int was_looked_up(const char *base, int version, unsigned long long flags)
{
    const char *b;
    int v, found;
    unsigned long long f;
    for (unsigned i = 0; fakecuda_lookup(i, &b, &v, &f, &found) == 0; i++)
        if (!strcmp(b, base) && v == version && f == flags) return 1;
    return 0;
}

/* ================================================================== driver */
Test(driver, get_proc_address_returns_v2_by_version)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st = 99;
    cr_assert_eq(cuGetProcAddress_v2("cuMemAlloc", &p, 3020, 0, &st), CUDA_SUCCESS);
    cr_expect_eq(st, CU_GET_PROC_ADDRESS_SUCCESS);
    cr_expect_eq(p, (void *)cuMemAlloc_v2);
    cr_assert_eq(cuGetProcAddress_v2("cuMemHostRegister", &p, 12000, 0, &st), CUDA_SUCCESS);
    cr_expect_eq(p, (void *)cuMemHostRegister_v2);
    cr_assert_eq(cuGetProcAddress_v2("cuIpcOpenMemHandle", &p, 11000, 0, &st), CUDA_SUCCESS);
    cr_expect_eq(p, (void *)cuIpcOpenMemHandle_v2);
}

Test(driver, get_proc_address_flags_select_per_thread_variants)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    cr_assert_eq(cuGetProcAddress_v2("cuMemAllocAsync", &p, 11020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st), 0);
    cr_expect_eq(p, (void *)cuMemAllocAsync_ptsz);
    cr_assert_eq(cuGetProcAddress_v2("cuMemAllocAsync", &p, 11020, 0, &st), 0);
    cr_expect_eq(p, (void *)cuMemAllocAsync);
    cr_assert_eq(cuGetProcAddress_v2("cuMemAllocAsync", &p, 11020, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &st), 0);
    cr_expect_eq(p, (void *)cuMemAllocAsync);
    cr_assert_eq(cuGetProcAddress_v2("cuMemFreeAsync", &p, 12000, 2, &st), 0);
    cr_expect_eq(p, (void *)cuMemFreeAsync_ptsz);
    cr_assert_eq(cuGetProcAddress_v2("cuMemAllocFromPoolAsync", &p, 12000, 2, &st), 0);
    cr_expect_eq(p, (void *)cuMemAllocFromPoolAsync_ptsz);
    /* No per-thread variant: the plain function, as the driver documents. */
    cr_assert_eq(cuGetProcAddress_v2("cuMemAlloc", &p, 12000, 2, &st), 0);
    cr_expect_eq(p, (void *)cuMemAlloc_v2);
}

Test(driver, get_proc_address_of_itself_v1_below_12000)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    cr_assert_eq(cuGetProcAddress_v2("cuGetProcAddress", &p, 11030, 0, &st), 0);
    cr_expect_eq(p, (void *)cuGetProcAddress);
    cr_assert_eq(cuGetProcAddress_v2("cuGetProcAddress", &p, 12000, 0, &st), 0);
    cr_expect_eq(p, (void *)cuGetProcAddress_v2);
    cr_assert_eq(cuGetProcAddress("cuGetProcAddress", &p, 13000, 0), 0);
    cr_expect_eq(p, (void *)cuGetProcAddress_v2);
}

Test(driver, get_proc_address_unknown_or_too_old)
{
    void *p = (void *)1;
    CUdriverProcAddressQueryResult st = 99;
    cr_expect_eq(cuGetProcAddress_v2("cuNoSuchFunction", &p, 13000, 0, &st), CUDA_ERROR_NOT_FOUND);
    cr_expect_eq(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    cr_expect_null(p);
    cr_expect_eq(cuGetProcAddress_v2("cuMemCreate", &p, 9020, 0, &st), CUDA_ERROR_NOT_FOUND);
    cr_expect_eq(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    cr_expect_eq(cuGetProcAddress_v2(NULL, &p, 13000, 0, &st), CUDA_ERROR_INVALID_VALUE);
}

Test(driver, calls_fail_before_init_and_without_context)
{
    CUdeviceptr p;
    cr_expect_eq(cuMemAlloc_v2(&p, 4096), CUDA_ERROR_NOT_INITIALIZED);
    cr_assert_eq(cuInit(0), CUDA_SUCCESS);
    cr_expect_eq(cuMemAlloc_v2(&p, 4096), CUDA_ERROR_INVALID_CONTEXT);
    int v = 0;
    cr_expect_eq(cuDriverGetVersion(&v), CUDA_SUCCESS);
    cr_expect_eq(v, 13000);
}

Test(driver, context_costs_hidden_memory)
{
    cr_assert_eq(dev(0).used, 0);
    driver_ctx(0);
    size_t f, t;
    cr_assert_eq(cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
    cr_expect_eq(t, 4096 * MIB);
    cr_expect_eq(t - f, FAKECUDA_CONTEXT_BYTES);
    cr_expect_eq(dev(0).hidden, FAKECUDA_CONTEXT_BYTES);
    cr_expect_eq(dev(1).used, 0, "device 1 untouched");
    CUcontext again;
    cr_assert_eq(cuDevicePrimaryCtxRetain(&again, 0), CUDA_SUCCESS);
    cr_expect_eq(dev(0).used, FAKECUDA_CONTEXT_BYTES, "the primary context is charged once");
}

Test(driver, alloc_rounds_to_2mib_and_full_device_is_oom)
{
    driver_ctx(0);
    size_t base = dev(0).used;
    CUdeviceptr a, b;
    cr_assert_eq(cuMemAlloc_v2(&a, 1), CUDA_SUCCESS);
    cr_expect_eq(dev(0).used - base, 2 * MIB);
    *(volatile char *)(uintptr_t)a = 7; /* device memory is host-dereferenceable */
    cr_expect_eq(cuMemAlloc_v2(&b, 8192 * MIB), CUDA_ERROR_OUT_OF_MEMORY);
    cr_expect_eq(dev(0).used - base, 2 * MIB, "a failed allocation charges nothing");
    cr_assert_eq(cuMemFree_v2(a), CUDA_SUCCESS);
    cr_expect_eq(dev(0).used, base);
    cr_expect_eq(cuMemFree_v2(a), CUDA_ERROR_INVALID_VALUE, "double free");
    cr_expect_eq(fn("cuMemAlloc_v2").calls, 2);
    cr_expect_eq(fn("cuMemAlloc_v2").bytes, 8192 * MIB + 1);
}

Test(driver, memory_is_charged_per_device)
{
    CUcontext c1 = driver_ctx(1);
    (void)c1;
    CUdeviceptr a;
    cr_assert_eq(cuMemAlloc_v2(&a, 64 * MIB), CUDA_SUCCESS);
    cr_expect_eq(dev(1).used, FAKECUDA_CONTEXT_BYTES + 64 * MIB);
    cr_expect_eq(dev(0).used, 0);
    CUcontext c0;
    cr_assert_eq(cuDevicePrimaryCtxRetain(&c0, 0), CUDA_SUCCESS);
    cr_assert_eq(cuCtxPushCurrent_v2(c0), CUDA_SUCCESS);
    size_t f, t;
    cr_assert_eq(cuMemGetInfo_v2(&f, &t), CUDA_SUCCESS);
    cr_expect_eq(t - f, FAKECUDA_CONTEXT_BYTES, "cuMemGetInfo reports the current context's device");
    CUdevice d = -1;
    cr_assert_eq(cuCtxGetDevice(&d), CUDA_SUCCESS);
    cr_expect_eq(d, 0);
    CUcontext popped;
    cr_assert_eq(cuCtxPopCurrent_v2(&popped), CUDA_SUCCESS);
    cr_expect_eq(popped, c0);
}

Test(driver, module_load_costs_hidden_memory)
{
    driver_ctx(0);
    CUmodule m;
    struct fakecuda_image img = {FAKECUDA_IMAGE_MAGIC, 100 * MIB, 0, 0};
    cr_assert_eq(cuModuleLoadData(&m, &img), CUDA_SUCCESS);
    cr_expect_eq(dev(0).hidden, FAKECUDA_CONTEXT_BYTES + 100 * MIB);
    cr_assert_eq(cuModuleUnload(m), CUDA_SUCCESS);
    cr_expect_eq(dev(0).hidden, FAKECUDA_CONTEXT_BYTES);
}

/* As on an H200: the printf FIFO and the malloc heap cost nothing when set; the first
 * kernel calling printf or malloc charges the device runtime once, the first calling
 * malloc the heap at its limit then, whatever the FIFO's size. */
static CUfunction kernel_using(uint64_t uses)
{
    CUmodule m;
    CUfunction f;
    struct fakecuda_image img = {FAKECUDA_IMAGE_MAGIC, 0, 0, uses};
    cr_assert_eq(cuModuleLoadData(&m, &img), CUDA_SUCCESS);
    cr_assert_eq(cuModuleGetFunction(&f, m, "k"), CUDA_SUCCESS);
    return f;
}

Test(driver, printf_fifo_and_malloc_heap_are_charged_at_first_use)
{
    driver_ctx(0);
    size_t h0 = dev(0).hidden;
    cr_assert_eq(cuCtxSetLimit(CU_LIMIT_PRINTF_FIFO_SIZE, 64 * MIB), CUDA_SUCCESS);
    cr_assert_eq(cuCtxSetLimit(CU_LIMIT_MALLOC_HEAP_SIZE, 256 * MIB), CUDA_SUCCESS);
    cr_expect_eq(dev(0).hidden, h0, "setting the limits charged something");
    CUfunction say = kernel_using(FAKECUDA_USES_PRINTF), get = kernel_using(FAKECUDA_USES_MALLOC);
    cr_assert_eq(cuLaunchKernel(say, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
    cr_expect_eq(dev(0).hidden, h0 + FAKECUDA_DEVRT_BYTES);
    cr_assert_eq(cuLaunchKernel(get, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
    cr_expect_eq(dev(0).hidden, h0 + FAKECUDA_DEVRT_BYTES + 256 * MIB);
    cr_assert_eq(cuLaunchKernel(get, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
    cr_expect_eq(dev(0).hidden, h0 + FAKECUDA_DEVRT_BYTES + 256 * MIB, "charged again");
}

static CUmemAllocationProp prop_on(CUmemLocationType type, int id)
{
    CUmemAllocationProp p = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                             .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                             .location = {.type = type, .id = id}};
    return p;
}

Test(driver, vmm_mappings_share_memory_and_release_refcounts)
{
    driver_ctx(0);
    size_t base = dev(0).used, gran = 0;
    CUmemAllocationProp prop = prop_on(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    cr_assert_eq(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM), 0);
    cr_assert_eq(gran, 2 * MIB);
    CUmemGenericAllocationHandle h, h2;
    cr_assert_eq(cuMemCreate(&h, 4 * MIB, &prop, 0), CUDA_SUCCESS);
    cr_expect_eq(dev(0).used - base, 4 * MIB);
    CUdeviceptr va, vb;
    cr_assert_eq(cuMemAddressReserve(&va, 4 * MIB, 0, 0, 0), 0);
    cr_assert_eq(cuMemAddressReserve(&vb, 4 * MIB, 0, 0, 0), 0);
    cr_expect_neq(va, vb);
    cr_assert_eq(cuMemMap(va, 4 * MIB, 0, h, 0), 0);
    cr_assert_eq(cuMemMap(vb, 4 * MIB, 0, h, 0), 0);
    cr_expect_eq(cuMemMap(va, 2 * MIB, 0, h, 0), CUDA_ERROR_ALREADY_MAPPED);
    CUmemAccessDesc acc = {.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    cr_assert_eq(cuMemSetAccess(va, 4 * MIB, &acc, 1), 0);
    cr_assert_eq(cuMemSetAccess(vb, 4 * MIB, &acc, 1), 0);
    strcpy((char *)(uintptr_t)(va + 3 * MIB), "shared");
    cr_expect_str_eq((char *)(uintptr_t)(vb + 3 * MIB), "shared");
    cr_expect_eq(dev(0).used - base, 4 * MIB, "mapping twice costs nothing more");
    /* NCCL's free sequence: the memory goes back only at the end. */
    cr_assert_eq(cuMemRetainAllocationHandle(&h2, (void *)(uintptr_t)(va + 5)), 0);
    cr_expect_eq(h2, h);
    cr_assert_eq(cuMemRelease(h2), 0);
    cr_assert_eq(cuMemUnmap(va, 4 * MIB), 0);
    cr_assert_eq(cuMemRelease(h), 0);
    cr_expect_eq(dev(0).used - base, 4 * MIB, "still mapped at vb");
    cr_expect_eq(cuMemAddressFree(vb, 4 * MIB), CUDA_ERROR_INVALID_VALUE, "vb still mapped");
    cr_assert_eq(cuMemUnmap(vb, 4 * MIB), 0);
    cr_expect_eq(dev(0).used, base);
    cr_expect_eq(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE, "handle gone");
    cr_assert_eq(cuMemAddressFree(va, 4 * MIB), 0);
    cr_assert_eq(cuMemAddressFree(vb, 4 * MIB), 0);
}

Test(driver, vmm_host_memory_costs_the_device_nothing)
{
    driver_ctx(0);
    size_t base = dev(0).used;
    CUmemGenericAllocationHandle h;
    CUmemAllocationProp numa = prop_on(CU_MEM_LOCATION_TYPE_HOST_NUMA, 0);
    cr_assert_eq(cuMemCreate(&h, 2 * MIB, &numa, 0), 0);
    cr_expect_eq(dev(0).used, base);
    cr_assert_eq(cuMemRelease(h), 0);
    CUmemAllocationProp d = prop_on(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    cr_expect_eq(cuMemCreate(&h, 3 * MIB, &d, 0), CUDA_ERROR_INVALID_VALUE, "not a multiple of the granularity");
    cr_expect_eq(cuMemCreate(&h, 8192 * MIB, &d, 0), CUDA_ERROR_OUT_OF_MEMORY);
}

Test(driver, vmm_export_import_maps_the_same_memory)
{
    driver_ctx(0);
    CUmemAllocationProp prop = prop_on(CU_MEM_LOCATION_TYPE_DEVICE, 0);
    CUmemGenericAllocationHandle h, imp;
    cr_assert_eq(cuMemCreate(&h, 2 * MIB, &prop, 0), 0);
    int fd = -1;
    cr_assert_eq(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), 0);
    cr_assert_geq(fd, 0);
    size_t used = dev(0).used;
    cr_assert_eq(cuMemImportFromShareableHandle(&imp, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), 0);
    cr_expect_eq(dev(0).used, used, "an import is a peer's memory");
    CUdeviceptr a, b;
    CUmemAccessDesc acc = {.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    cr_assert_eq(cuMemAddressReserve(&a, 2 * MIB, 0, 0, 0), 0);
    cr_assert_eq(cuMemAddressReserve(&b, 2 * MIB, 0, 0, 0), 0);
    cr_assert_eq(cuMemMap(a, 2 * MIB, 0, h, 0), 0);
    cr_assert_eq(cuMemMap(b, 2 * MIB, 0, imp, 0), 0);
    cr_assert_eq(cuMemSetAccess(a, 2 * MIB, &acc, 1), 0);
    cr_assert_eq(cuMemSetAccess(b, 2 * MIB, &acc, 1), 0);
    *(int *)(uintptr_t)a = 4242;
    cr_expect_eq(*(int *)(uintptr_t)b, 4242);
    close(fd);
}

Test(driver, pool_keeps_freed_memory_until_synchronize_or_trim)
{
    driver_ctx(0);
    size_t base = dev(0).used;
    CUdeviceptr p, q;
    cr_assert_eq(cuMemAllocAsync(&p, 8 * MIB, NULL), 0);
    cr_expect_eq(dev(0).used - base, 8 * MIB);
    cr_assert_eq(cuMemFreeAsync(p, NULL), 0);
    cr_expect_eq(dev(0).used - base, 8 * MIB, "freed into the pool, still reserved");
    cr_assert_eq(cuMemAllocAsync(&q, 8 * MIB, NULL), 0);
    cr_expect_eq(q, p, "reused");
    cr_assert_eq(cuMemFreeAsync(q, NULL), 0);
    cr_assert_eq(cuStreamSynchronize(NULL), 0);
    cr_expect_eq(dev(0).used, base, "released at synchronisation (threshold 0)");

    CUmemPoolProps props = {.allocType = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_DEVICE, 1}};
    CUmemoryPool pool;
    cr_assert_eq(cuMemPoolCreate(&pool, &props), 0);
    cuuint64_t thr = 64 * MIB, v = 0;
    cr_assert_eq(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &thr), 0);
    cr_assert_eq(cuMemAllocFromPoolAsync(&p, 6 * MIB, pool, NULL), 0);
    cr_expect_eq(dev(1).used, 6 * MIB, "a pool on device 1 charges device 1");
    cr_assert_eq(cuMemFreeAsync(p, NULL), 0);
    cr_assert_eq(cuStreamSynchronize(NULL), 0);
    cr_assert_eq(cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v), 0);
    cr_expect_eq(v, 6 * MIB, "kept below the release threshold");
    cr_assert_eq(cuMemPoolTrimTo(pool, 0), 0);
    cr_expect_eq(dev(1).used, 0);
    cr_assert_eq(cuMemPoolDestroy(pool), 0);
}

Test(driver, multicast_is_not_supported)
{
    cr_assert_eq(cuInit(0), 0);
    CUmemGenericAllocationHandle h;
    cr_expect_eq(cuMulticastCreate(&h, NULL), CUDA_ERROR_NOT_SUPPORTED);
}

Test(driver, ipc_handle_opens_the_same_memory)
{
    driver_ctx(0);
    CUdeviceptr p, q;
    cr_assert_eq(cuMemAlloc_v2(&p, 4 * MIB), 0);
    strcpy((char *)(uintptr_t)p, "before export");
    CUipcMemHandle h;
    cr_assert_eq(cuIpcGetMemHandle(&h, p), 0);
    cr_expect_str_eq((char *)(uintptr_t)p, "before export", "contents survive the export");
    cr_assert_eq(cuIpcOpenMemHandle_v2(&q, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), 0);
    strcpy((char *)(uintptr_t)q, "via ipc");
    cr_expect_str_eq((char *)(uintptr_t)p, "via ipc");
    cr_assert_eq(cuIpcCloseMemHandle(q), 0);
    cr_assert_eq(cuMemFree_v2(p), 0);
}

/* ================================================================== runtime */
Test(runtime, reaches_the_driver_only_through_get_proc_address)
{
    void *p = NULL;
    cr_assert_eq(cudaMalloc(&p, 64 * MIB), cudaSuccess);
    struct fakecudart_resolution res;
    fakecudart_resolution(&res);
    cr_expect_eq(res.used_get_proc_address, 1);
    cr_expect_eq(res.dlsym_fallbacks, 0);
    cr_expect_eq(res.get_proc_address, (void *)cuGetProcAddress_v2, "the 12000 answer replaced the dlsym'd pointer");
    cr_expect_eq(fn("cuMemAlloc_v2").calls, 1);
    cr_expect_eq(fn("cuMemAlloc_v2").bytes, 64 * MIB);
    cr_expect_geq(fn("cuGetProcAddress_v2").calls, (unsigned long)res.lookups);
    cr_expect(was_looked_up("cuGetProcAddress", 11030, 0));
    cr_expect(was_looked_up("cuGetProcAddress", 12000, 0));
    cr_expect(was_looked_up("cuMemAlloc", 3020, 0));
    cr_expect(was_looked_up("cuMemAllocAsync", 11020, 0));
    cr_expect(was_looked_up("cuMemAllocAsync", 11020, 2));
    cr_expect(was_looked_up("cuMemHostAlloc", 2020, 0));
    cr_expect_eq(cudaFree(p), cudaSuccess);
    cr_expect_eq(fn("cuMemFree_v2").calls, 1);
}

static void expect_no_driver_imports(const char *lib, int only_glibc)
{
    char cmd[512], out[65536];
    snprintf(cmd, sizeof cmd, "nm -D --undefined-only %s/%s", FAKES_DIR, lib);
    cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", cmd);
    cr_assert_neq(out[0], 0, "nm printed nothing for %s", lib);
    for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
        char kind = 0, name[256] = "";
        cr_assert_eq(sscanf(line, " %c %255s", &kind, name), 2, "unexpected nm line: %s", line);
        if (kind == 'w') continue; /* weak references the toolchain adds (_ITM_*, __gmon_start__) */
        cr_expect_neq(strncmp(name, "cu", 2), 0, "%s imports %s through the PLT", lib, name);
        if (only_glibc) cr_expect(strstr(name, "@GLIBC_") != NULL, "%s imports %s (not from glibc)", lib, name);
    }
}

Test(runtime, libraries_import_no_driver_or_runtime_symbol)
{
    expect_no_driver_imports("libcudart.so.13", 1);
    expect_no_driver_imports("libnccl.so.2", 1);
}

Test(runtime, per_thread_default_stream_api_uses_ptsz_functions)
{
    void *a = NULL, *b = NULL;
    cr_assert_eq(cudaMallocAsync(&a, 2 * MIB, NULL), cudaSuccess);
    cr_assert_eq(cudaMallocAsync_ptsz(&b, 2 * MIB, NULL), cudaSuccess);
    cr_expect_eq(fn("cuMemAllocAsync").calls, 1);
    cr_expect_eq(fn("cuMemAllocAsync_ptsz").calls, 1);
    cr_assert_eq(cudaFreeAsync_ptsz(b, NULL), cudaSuccess);
    cr_assert_eq(cudaFreeAsync(a, NULL), cudaSuccess);
    cr_expect_eq(fn("cuMemFreeAsync").calls, 1);
    cr_expect_eq(fn("cuMemFreeAsync_ptsz").calls, 1);
}

Test(runtime, out_of_memory_is_memory_allocation_error)
{
    void *p = (void *)1;
    cr_expect_eq(cudaMalloc(&p, 100000 * MIB), cudaErrorMemoryAllocation);
    cr_expect_null(p);
    cr_expect_eq(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
    cr_expect_eq(cudaGetLastError(), cudaErrorMemoryAllocation);
    cr_expect_eq(cudaGetLastError(), cudaSuccess);
    cr_expect_str_eq(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory");
}

Test(runtime, mem_get_info_shows_context_and_allocations)
{
    size_t f0, t, f1;
    cr_assert_eq(cudaMemGetInfo(&f0, &t), cudaSuccess);
    cr_expect_eq(t - f0, FAKECUDA_CONTEXT_BYTES, "the first call created the context: hidden memory");
    void *p;
    cr_assert_eq(cudaMalloc(&p, 64 * MIB), cudaSuccess);
    cr_assert_eq(cudaMemGetInfo(&f1, &t), cudaSuccess);
    cr_expect_eq(f0 - f1, 64 * MIB);
    void *h;
    cr_assert_eq(cudaHostAlloc(&h, 16 * MIB, cudaHostAllocMapped), cudaSuccess);
    cr_assert_eq(cudaMemGetInfo(&f0, &t), cudaSuccess);
    cr_expect_eq(f0, f1, "pinned host memory is not device memory");
    cr_expect_eq(fn("cuMemHostAlloc").calls, 1);
}

static void *on_device_1(void *arg)
{
    void **p = arg;
    if (cudaSetDevice(1) != cudaSuccess || cudaMalloc(p, 32 * MIB) != cudaSuccess) *p = NULL;
    return NULL;
}

Test(runtime, current_device_is_per_thread)
{
    cr_assert_eq(cudaSetDevice(0), cudaSuccess);
    pthread_t t;
    void *p1 = NULL;
    pthread_create(&t, NULL, on_device_1, &p1);
    pthread_join(t, NULL);
    cr_assert_not_null(p1);
    int d = -1;
    cr_assert_eq(cudaGetDevice(&d), cudaSuccess);
    cr_expect_eq(d, 0);
    cr_expect_eq(dev(1).used, FAKECUDA_CONTEXT_BYTES + 32 * MIB);
    cr_expect_eq(dev(0).used, FAKECUDA_CONTEXT_BYTES);
    cr_expect_eq(cudaSetDevice(7), cudaErrorInvalidDevice);
}

Test(runtime, driver_entry_points_forward_to_get_proc_address)
{
    void *p = NULL;
    enum cudaDriverEntryPointQueryResult st = 99;
    cr_assert_eq(cudaGetDriverEntryPointByVersion("cuMemCreate", &p, 12000, cudaEnableDefault, &st), cudaSuccess);
    cr_expect_eq(st, cudaDriverEntryPointSuccess);
    cr_expect_eq(p, (void *)cuMemCreate);
    cr_assert_eq(cudaGetDriverEntryPoint("cuMemAllocAsync", &p, cudaEnablePerThreadDefaultStream, &st), cudaSuccess);
    cr_expect_eq(p, (void *)cuMemAllocAsync_ptsz);
    cr_assert_eq(cudaGetDriverEntryPointByVersion("cuNoSuch", &p, 12000, 0, &st), cudaSuccess);
    cr_expect_eq(st, cudaDriverEntryPointSymbolNotFound);
    cr_expect_eq(cudaGetDriverEntryPointByVersion("cuNoSuch", &p, 12000, 0, NULL), cudaErrorSymbolNotFound);
    cr_expect(was_looked_up("cuMemCreate", 12000, 0));
    int v = 0;
    cr_assert_eq(cudaRuntimeGetVersion(&v), cudaSuccess);
    cr_expect_eq(v, 13000);
    cr_assert_eq(cudaDriverGetVersion(&v), cudaSuccess);
    cr_expect_eq(v, 13000);
}

Test(runtime, falls_back_to_dlsym_without_get_proc_address_v2)
{
    char out[4096];
    const char *env = "LD_LIBRARY_PATH=" FAKES_DIR "/old-driver ";
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s%s", env, FAKES_DIR "/progs/fake_cudart");
    cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "fake_cudart: ok delta=67108864 via=dlsym") != NULL, "%s", out);
    snprintf(cmd, sizeof cmd, "%s%s", env, FAKES_DIR "/progs/fake_cudart_static");
    cr_assert_eq(run(cmd, out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "via=dlsym") != NULL, "%s", out);
}

Test(runtime, programs_with_shared_and_static_runtime_run)
{
    char out[4096];
    cr_assert_eq(run(FAKES_DIR "/progs/fake_cudart", out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "fake_cudart: ok delta=67108864 via=get_proc_address") != NULL, "%s", out);
    cr_assert_eq(run(FAKES_DIR "/progs/fake_cudart_static", out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "fake_cudart: ok delta=67108864 via=get_proc_address") != NULL, "%s", out);
    cr_assert_eq(run("nm -D --undefined-only " FAKES_DIR "/progs/fake_cudart_static | grep -c ' cuda' || true", out,
                     sizeof out), 0);
    cr_expect_eq(atoi(out), 0, "the static runtime is inside the program");
    cr_assert_eq(run(FAKES_DIR "/progs/fake_driver_vmm", out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "fake_driver_vmm: ok mapped=23068672") != NULL, "%s", out);
}

/* ================================================================== NCCL */
static ncclComm_t one_rank_comm(void)
{
    ncclUniqueId id;
    ncclComm_t c = NULL;
    cr_assert_eq(cudaSetDevice(0), cudaSuccess);
    cr_assert_eq(ncclGetUniqueId(&id), ncclSuccess);
    cr_assert_eq(ncclCommInitRank(&c, 1, id, 0), ncclSuccess);
    return c;
}

static int thread_name_is(int tid, const char *want)
{
    char path[64], name[32] = "";
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    if (!fgets(name, sizeof name, f)) name[0] = 0;
    fclose(f);
    name[strcspn(name, "\n")] = 0;
    return !strcmp(name, want);
}

Test(nccl, init_allocates_metadata_fifo_and_loads_kernels)
{
    cr_assert_eq(cudaSetDevice(0), cudaSuccess);
    size_t before = dev(0).used;
    ncclComm_t c = one_rank_comm();
    int n = FAKENCCL_DEFAULT_NCHANNELS;
    cr_expect_eq(fn("cuMemCreate").calls, (unsigned long)n + 1, "per channel and the device comm");
    cr_expect_eq(fn("cuMemHostAlloc").calls, 1);
    cr_expect_eq(fn("cuMemHostAlloc").bytes, 1 * MIB);
    cr_expect_eq(dev(0).used - before, (n + 1) * 2 * MIB + FAKENCCL_KERNEL_BYTES);
    cr_expect_eq(fn("cuMemAlloc_v2").calls, 0);
    cr_expect(was_looked_up("cuMemCreate", 12000, 0), "NCCL got cuMemCreate through the entry-point API");
    int v = 0, count = 0, d = -1, r = -1;
    cr_assert_eq(ncclGetVersion(&v), ncclSuccess);
    cr_expect_eq(v, 22809);
    ncclCommCount(c, &count);
    ncclCommCuDevice(c, &d);
    ncclCommUserRank(c, &r);
    cr_expect(count == 1 && d == 0 && r == 0);
    cr_assert_eq(ncclCommDestroy(c), ncclSuccess);
}

Test(nccl, first_collective_allocates_on_the_service_thread)
{
    ncclComm_t c = one_rank_comm();
    float *buf;
    cr_assert_eq(cudaMalloc((void **)&buf, 4 * MIB), cudaSuccess);
    unsigned long creates = fn("cuMemCreate").calls;
    size_t before = dev(0).used;
    cr_assert_eq(ncclAllReduce(buf, buf, MIB, ncclFloat, ncclSum, c, NULL), ncclSuccess);
    int n = FAKENCCL_DEFAULT_NCHANNELS;
    struct fakecuda_fn_stats s = fn("cuMemCreate");
    cr_expect_eq(s.calls - creates, 2ul * n, "a receive and a send buffer per channel");
    cr_expect_eq(dev(0).used - before, n * (10 + 2) * MIB + FAKENCCL_LAZY_BYTES);
    cr_expect_neq(s.last_tid, gettid(), "allocated by another thread");
    cr_expect(thread_name_is(s.last_tid, "NCCL Service 0"), "by the proxy service thread");
    cr_expect_eq(fn("cuMemMap").last_tid, s.last_tid);
    cr_expect_eq(fn("cuMemSetAccess").last_tid, s.last_tid);
    before = dev(0).used;
    cr_assert_eq(ncclAllReduce(buf, buf, MIB, ncclFloat, ncclSum, c, NULL), ncclSuccess);
    cr_expect_eq(fn("cuMemCreate").calls, s.calls, "later collectives allocate nothing");
    cr_expect_eq(dev(0).used, before);
    cr_assert_eq(ncclCommDestroy(c), ncclSuccess);
}

static unsigned long long first_collective_bytes(void)
{
    ncclComm_t c = one_rank_comm();
    int *buf;
    cr_assert_eq(cudaMalloc((void **)&buf, 4096), cudaSuccess);
    unsigned long long b0 = fn("cuMemCreate").bytes;
    cr_assert_eq(ncclAllReduce(buf, buf, 16, ncclInt32, ncclSum, c, NULL), ncclSuccess);
    unsigned long long b = fn("cuMemCreate").bytes - b0;
    cr_assert_eq(ncclCommDestroy(c), ncclSuccess);
    return b;
}

Test(nccl, receive_buffers_follow_nccl_buffsize)
{
    unsigned long long def = first_collective_bytes();
    cr_expect_eq(def, 2 * (10 + 2) * MIB);
    setenv("NCCL_BUFFSIZE", "8388608", 1);
    /* 4096 + 512 KiB + 4.6875 MiB + 8 MiB rounded up to 2 MiB: 14 MiB. */
    cr_expect_eq(first_collective_bytes(), 2 * (14 + 2) * MIB);
    setenv("NCCL_BUFFSIZE", "1048576", 1);
    cr_expect_eq(first_collective_bytes(), 2 * (8 + 2) * MIB);
    setenv("NCCL_MAX_NCHANNELS", "1", 1);
    cr_expect_eq(first_collective_bytes(), 1 * (8 + 2) * MIB);
}

Test(nccl, destroy_frees_with_retain_release_twice)
{
    ncclComm_t c = one_rank_comm();
    int *buf;
    cr_assert_eq(cudaMalloc((void **)&buf, 4096), cudaSuccess);
    cr_assert_eq(ncclAllReduce(buf, buf, 16, ncclInt32, ncclSum, c, NULL), ncclSuccess);
    unsigned long bufs = fn("cuMemCreate").calls;
    size_t kernels = FAKENCCL_KERNEL_BYTES + FAKENCCL_LAZY_BYTES;
    cr_assert_eq(ncclCommDestroy(c), ncclSuccess);
    cr_expect_eq(fn("cuMemRetainAllocationHandle").calls, bufs);
    cr_expect_eq(fn("cuMemRelease").calls, 2 * bufs);
    cr_expect_eq(fn("cuMemUnmap").calls, bufs);
    cr_expect_eq(fn("cuMemAddressFree").calls, bufs);
    cr_expect_eq(fn("cuMemFreeHost").calls, 1);
    cr_expect_eq(dev(0).used, FAKECUDA_CONTEXT_BYTES + 2 * MIB + kernels, "kernels stay loaded");
}

Test(nccl, group_allocates_in_group_end)
{
    ncclComm_t c = one_rank_comm();
    double *a, *b;
    cr_assert_eq(cudaMalloc((void **)&a, 8 * sizeof *a), cudaSuccess);
    cr_assert_eq(cudaMalloc((void **)&b, 8 * sizeof *b), cudaSuccess);
    for (int i = 0; i < 8; i++) a[i] = b[i] = i;
    unsigned long creates = fn("cuMemCreate").calls;
    cr_assert_eq(ncclGroupStart(), ncclSuccess);
    cr_assert_eq(ncclAllReduce(a, a, 8, ncclDouble, ncclSum, c, NULL), ncclSuccess);
    cr_assert_eq(ncclBroadcast(b, b, 8, ncclDouble, 0, c, NULL), ncclSuccess);
    cr_expect_eq(fn("cuMemCreate").calls, creates, "nothing before ncclGroupEnd");
    cr_assert_eq(ncclGroupEnd(), ncclSuccess);
    cr_expect_eq(fn("cuMemCreate").calls, creates + 2 * FAKENCCL_DEFAULT_NCHANNELS);
    cr_expect_eq(a[7], 7.0);
    cr_expect_eq(ncclGroupEnd(), ncclInvalidUsage);
    cr_assert_eq(ncclCommDestroy(c), ncclSuccess);
}

Test(nccl, invalid_arguments_are_rejected)
{
    ncclComm_t c = one_rank_comm();
    float *buf;
    cr_assert_eq(cudaMalloc((void **)&buf, 4096), cudaSuccess);
    cr_expect_eq(ncclAllReduce(buf, buf, 4, (ncclDataType_t)99, ncclSum, c, NULL), ncclInvalidArgument);
    cr_expect_eq(ncclAllReduce(buf, buf, 4, ncclFloat, (ncclRedOp_t)42, c, NULL), ncclInvalidArgument);
    cr_expect_eq(ncclAllReduce(buf, buf, 4, ncclFloat, ncclSum, NULL, NULL), ncclInvalidArgument);
    cr_expect_eq(ncclBroadcast(buf, buf, 4, ncclFloat, 3, c, NULL), ncclInvalidArgument);
    cr_expect_eq(ncclSend(buf, 4, ncclFloat, -1, c, NULL), ncclInvalidArgument);
    cr_expect_eq(ncclAllReduce(NULL, buf, 4, ncclFloat, ncclSum, c, NULL), ncclInvalidArgument);
    cr_expect_eq(fn("cuMemCreate").calls, 1ul + FAKENCCL_DEFAULT_NCHANNELS, "a failed call connects nothing");
    ncclUniqueId bogus;
    memset(&bogus, 0, sizeof bogus);
    ncclComm_t c2;
    cr_expect_eq(ncclCommInitRank(&c2, 2, bogus, 0), ncclInvalidArgument);
    cr_expect_eq(ncclCommInitRank(&c2, 2, bogus, 5), ncclInvalidArgument);
    cr_expect_str_neq(ncclGetLastError(NULL), "");
    cr_assert_eq(ncclCommDestroy(c), ncclSuccess);
}

Test(nccl, pnccl_names_are_aliases)
{
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    cr_assert_not_null(h);
    const char *names[] = {"AllReduce", "CommInitRank", "GroupEnd", "Send", "MemAlloc", "CommWindowRegister",
                           "GetErrorString", "CommShrink", "GroupSimulateEnd"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char a[64], b[64];
        snprintf(a, sizeof a, "nccl%s", names[i]);
        snprintf(b, sizeof b, "pnccl%s", names[i]);
        cr_expect_not_null(dlsym(h, a), "%s", a);
        cr_expect_eq(dlsym(h, a), dlsym(h, b), "%s", b);
    }
    cr_expect_null(dlsym(h, "cudaMalloc"), "the static runtime is not exported");
    dlclose(h);
}

Test(nccl, mem_alloc_uses_cumem)
{
    cr_assert_eq(cudaSetDevice(1), cudaSuccess);
    void *p = NULL;
    cr_assert_eq(ncclMemAlloc(&p, 3 * MIB), ncclSuccess);
    cr_expect_eq(fn("cuMemCreate").bytes, 4 * MIB, "rounded to the granularity");
    cr_expect_eq(dev(1).used, FAKECUDA_CONTEXT_BYTES + 4 * MIB);
    memset(p, 1, 3 * MIB);
    cr_assert_eq(ncclMemFree(p), ncclSuccess);
    cr_expect_eq(dev(1).used, FAKECUDA_CONTEXT_BYTES);
    cr_expect_eq(ncclMemFree(p), ncclInvalidArgument);
}

/* The collectives every multi-rank test checks, on rank r of n (device r). */
static int check_collectives(ncclComm_t c, int r, int n, size_t count)
{
    int bad = 0;
    float *f;
    int64_t *g, *gr;
    int32_t *rs, *rr;
    if (cudaMalloc((void **)&f, count * sizeof *f) || cudaMalloc((void **)&g, count * sizeof *g) ||
        cudaMalloc((void **)&gr, n * count * sizeof *gr) || cudaMalloc((void **)&rs, n * count * sizeof *rs) ||
        cudaMalloc((void **)&rr, count * sizeof *rr))
        return 100;
    for (size_t i = 0; i < count; i++) {
        f[i] = (float)(r + 1) * (float)(i % 13);
        g[i] = (int64_t)r << 40 | (int64_t)i;
    }
    for (size_t i = 0; i < n * count; i++) rs[i] = (int32_t)(i + r);
    if (ncclAllReduce(f, f, count, ncclFloat, ncclSum, c, NULL)) return 101;
    if (ncclAllGather(g, gr, count, ncclInt64, c, NULL)) return 102;
    if (ncclReduceScatter(rs, rr, count, ncclInt32, ncclSum, c, NULL)) return 103;
    for (size_t i = 0; i < count; i++) {
        bad |= f[i] != (float)(n * (n + 1) / 2) * (float)(i % 13);
        for (int s = 0; s < n; s++) bad |= gr[s * count + i] != ((int64_t)s << 40 | (int64_t)i);
        int32_t want = 0;
        for (int s = 0; s < n; s++) want += (int32_t)(r * count + i + s);
        bad |= rr[i] != want;
    }
    for (size_t i = 0; i < count; i++) g[i] = r == n - 1 ? (int64_t)i * 5 : 0;
    if (ncclBroadcast(g, g, count, ncclInt64, n - 1, c, NULL)) return 104;
    for (size_t i = 0; i < count; i++) bad |= g[i] != (int64_t)i * 5;
    return bad ? 1 : 0;
}

Test(nccl, collectives_across_two_processes)
{
    ncclUniqueId id;
    cr_assert_eq(ncclGetUniqueId(&id), ncclSuccess);
    size_t count = 300000; /* over a chunk: several rounds */
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        ncclComm_t c;
        if (cudaSetDevice(1) || ncclCommInitRank(&c, 2, id, 1)) _exit(50);
        int r = check_collectives(c, 1, 2, count);
        ncclCommDestroy(c);
        _exit(r);
    }
    ncclComm_t c;
    cr_assert_eq(cudaSetDevice(0), cudaSuccess);
    cr_assert_eq(ncclCommInitRank(&c, 2, id, 0), ncclSuccess);
    cr_expect_eq(check_collectives(c, 0, 2, count), 0);
    int st = 0;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank 1 exited with %d", WEXITSTATUS(st));
    cr_assert_eq(ncclCommDestroy(c), ncclSuccess);
}

struct rank_arg {
    ncclComm_t c;
    int r, n, result;
};

static void *rank_thread(void *p)
{
    struct rank_arg *a = p;
    cudaSetDevice(a->r);
    a->result = check_collectives(a->c, a->r, a->n, 5000);
    return NULL;
}

Test(nccl, collectives_across_two_devices_in_one_process)
{
    ncclComm_t comms[2];
    cr_assert_eq(ncclCommInitAll(comms, 2, NULL), ncclSuccess);
    int d = -1;
    ncclCommCuDevice(comms[1], &d);
    cr_expect_eq(d, 1);
    cr_expect_eq(dev(1).hidden, FAKECUDA_CONTEXT_BYTES + FAKENCCL_KERNEL_BYTES);
    /* One thread per device, each a bare collective (no group). */
    struct rank_arg a[2] = {{comms[0], 0, 2, -1}, {comms[1], 1, 2, -1}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++) pthread_create(&t[i], NULL, rank_thread, &a[i]);
    for (int i = 0; i < 2; i++) pthread_join(t[i], NULL);
    cr_expect_eq(a[0].result, 0);
    cr_expect_eq(a[1].result, 0);
    /* One thread, both devices, in a group. */
    int *x[2];
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(cudaSetDevice(r), cudaSuccess);
        cr_assert_eq(cudaMalloc((void **)&x[r], 1000 * sizeof(int)), cudaSuccess);
        for (int i = 0; i < 1000; i++) x[r][i] = (r + 2) * i;
    }
    cr_assert_eq(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < 2; r++) cr_assert_eq(ncclAllReduce(x[r], x[r], 1000, ncclInt32, ncclProd, comms[r], NULL), 0);
    for (int r = 0; r < 2; r++) cr_assert_eq(ncclAllReduce(x[r], x[r], 1000, ncclInt32, ncclMax, comms[r], NULL), 0);
    cr_assert_eq(ncclGroupEnd(), ncclSuccess);
    for (int r = 0; r < 2; r++)
        for (int i = 0; i < 1000; i++) cr_expect_eq(x[r][i], 6 * i * i, "rank %d [%d]", r, i);
    for (int r = 0; r < 2; r++) cr_assert_eq(ncclCommDestroy(comms[r]), ncclSuccess);
}

Test(nccl, peer_buffers_are_imported_not_allocated)
{
    ncclComm_t comms[2];
    cr_assert_eq(ncclCommInitAll(comms, 2, NULL), ncclSuccess);
    float *x[2];
    for (int r = 0; r < 2; r++) {
        cr_assert_eq(cudaSetDevice(r), cudaSuccess);
        cr_assert_eq(cudaMalloc((void **)&x[r], 4096), cudaSuccess);
        x[r][0] = 1.0f + r;
    }
    unsigned long maps = fn("cuMemMap").calls, creates = fn("cuMemCreate").calls;
    size_t used0 = dev(0).used;
    cr_assert_eq(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < 2; r++) cr_assert_eq(ncclAllReduce(x[r], x[r], 1, ncclFloat, ncclSum, comms[r], NULL), 0);
    cr_assert_eq(ncclGroupEnd(), ncclSuccess);
    int n = FAKENCCL_DEFAULT_NCHANNELS;
    cr_expect_eq(fn("cuMemCreate").calls - creates, 2ul * 2 * n);
    cr_expect_eq(fn("cuMemImportFromShareableHandle").calls, 2ul * n, "each rank maps its peer's receive buffers");
    cr_expect_eq(fn("cuMemExportToShareableHandle").calls, 2ul * n);
    cr_expect_eq(fn("cuMemMap").calls - maps, 2ul * 3 * n, "own buffers and imports are all mapped");
    cr_expect_eq(dev(0).used - used0, n * (10 + 2) * MIB + FAKENCCL_LAZY_BYTES, "imports cost no device memory");
    cr_expect_eq(x[0][0], 3.0f);
    unsigned long releases = fn("cuMemRelease").calls;
    for (int r = 0; r < 2; r++) cr_assert_eq(ncclCommDestroy(comms[r]), ncclSuccess);
    unsigned long bufs = 2ul * (n + 1) + 2ul * 2 * n;
    cr_expect_eq(fn("cuMemRelease").calls - releases, 2 * bufs + 2ul * n, "twice per buffer, once per import");
}

Test(nccl, send_recv_pair_connects_per_peer)
{
    ncclComm_t comms[2];
    cr_assert_eq(ncclCommInitAll(comms, 2, NULL), ncclSuccess);
    size_t n = 600000; /* over a chunk */
    double *s, *r;
    cr_assert_eq(cudaSetDevice(0), cudaSuccess);
    cr_assert_eq(cudaMalloc((void **)&s, n * sizeof *s), cudaSuccess);
    cr_assert_eq(cudaSetDevice(1), cudaSuccess);
    cr_assert_eq(cudaMalloc((void **)&r, n * sizeof *r), cudaSuccess);
    for (size_t i = 0; i < n; i++) s[i] = (double)i / 3;
    unsigned long creates = fn("cuMemCreate").calls;
    for (int iter = 0; iter < 2; iter++) {
        cr_assert_eq(ncclGroupStart(), ncclSuccess);
        cr_assert_eq(ncclSend(s, n, ncclDouble, 1, comms[0], NULL), ncclSuccess);
        cr_assert_eq(ncclRecv(r, n, ncclDouble, 0, comms[1], NULL), ncclSuccess);
        cr_assert_eq(ncclGroupEnd(), ncclSuccess);
        cr_expect_eq(fn("cuMemCreate").calls - creates, 2ul * 2 * FAKENCCL_DEFAULT_NCHANNELS,
                     "each side connects its peer once (iteration %d)", iter);
    }
    for (size_t i = 0; i < n; i += 997) cr_expect_eq(r[i], (double)i / 3);
    for (int k = 0; k < 2; k++) cr_assert_eq(ncclCommDestroy(comms[k]), ncclSuccess);
}

Test(nccl, split_makes_working_subcommunicators)
{
    ncclComm_t comms[2], sub[2];
    cr_assert_eq(ncclCommInitAll(comms, 2, NULL), ncclSuccess);
    cr_assert_eq(ncclGroupStart(), ncclSuccess);
    for (int r = 0; r < 2; r++) cr_assert_eq(ncclCommSplit(comms[r], r == 0 ? 5 : NCCL_SPLIT_NOCOLOR, 0, &sub[r], NULL), 0);
    cr_assert_eq(ncclGroupEnd(), ncclSuccess);
    cr_assert_not_null(sub[0]);
    cr_expect_null(sub[1]);
    int n = 0;
    ncclCommCount(sub[0], &n);
    cr_expect_eq(n, 1);
    cr_assert_eq(cudaSetDevice(0), cudaSuccess);
    float *x;
    cr_assert_eq(cudaMalloc((void **)&x, 64), cudaSuccess);
    x[0] = 2.5f;
    cr_expect_eq(ncclAllReduce(x, x, 1, ncclFloat, ncclSum, sub[0], NULL), ncclSuccess);
    cr_expect_eq(x[0], 2.5f);
    cr_assert_eq(ncclCommDestroy(sub[0]), ncclSuccess);
    for (int r = 0; r < 2; r++) cr_assert_eq(ncclCommDestroy(comms[r]), ncclSuccess);
}

Test(nccl, programs_run)
{
    char out[4096];
    cr_assert_eq(run(FAKES_DIR "/progs/fake_nccl_2proc 300000", out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "rank 0: ok init=383778816 first=220200960 second=0") != NULL, "%s", out);
    cr_expect(strstr(out, "rank 1: ok") != NULL, "%s", out);
    cr_assert_eq(run(FAKES_DIR "/progs/fake_nccl_1proc", out, sizeof out), 0, "%s", out);
    cr_expect(strstr(out, "fake_nccl_1proc: ok first=220200960") != NULL, "%s", out);
}

Test(nccl, debug_alloc_log_lists_buffers)
{
    char out[16384];
    cr_assert_eq(run("NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALLOC " FAKES_DIR "/progs/fake_nccl_1proc 1000", out, sizeof out), 0);
    cr_expect(strstr(out, "NCCL INFO Cuda Host Alloc Size 1048576 pointer") != NULL, "%s", out);
    cr_expect(strstr(out, "NCCL INFO Cuda Alloc Size 4096 pointer") != NULL, "%s", out);
    cr_expect(strstr(out, "NCCL INFO Allocated shareable buffer") != NULL, "%s", out);
}

/* ================================================================== ABI */
Test(abi, hand_declared_values_match_the_toolkit_headers)
{
    if (access(FAKES_DIR "/progs/fake_abi_check_real", X_OK) != 0) {
        cr_skip_test("no CUDA toolkit headers on this machine");
    }
    static char fake[65536], real[65536];
    cr_assert_eq(run(FAKES_DIR "/progs/fake_abi_check_fake", fake, sizeof fake), 0);
    cr_assert_eq(run(FAKES_DIR "/progs/fake_abi_check_real", real, sizeof real), 0);
    cr_expect_gt(strlen(fake), 1000);
    cr_expect_str_eq(fake, real);
}
