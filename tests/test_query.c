/* test_query.c: the process's own figures (query.c): bytes now and at the peak per device and category, handles until their last reference, the reset of the peak, and exact sums under threads and churn. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdint.h>

#include "gmt.h"
#include "gpumemtrace.h"

#define MiB (1ll << 20)

Test(query, counts_per_device_and_category)
{
    gmt_query_alloc(GMT_KIND_DEVICE, 0x7f0000001000, 8 * MiB, 0, false);
    gmt_query_alloc(GMT_KIND_DEVICE, 0x7f0000901000, 2 * MiB, 1, true);
    gmt_query_alloc(GMT_KIND_POOL_ALLOC, 0x7f0000a01000, 3 * MiB, 1, false);
    cr_expect_eq(gpumemtrace_current_bytes(0, GPUMEMTRACE_CAT_ALL), 8 * MiB);
    cr_expect_eq(gpumemtrace_current_bytes(1, GPUMEMTRACE_CAT_ALL), 5 * MiB);
    cr_expect_eq(gpumemtrace_current_bytes(1, GPUMEMTRACE_CAT_NCCL), 2 * MiB);
    cr_expect_eq(gpumemtrace_current_bytes(1, GPUMEMTRACE_CAT_OTHER), 3 * MiB);
    cr_expect_eq(gpumemtrace_current_bytes(GPUMEMTRACE_ALL_DEVICES, GPUMEMTRACE_CAT_ALL), 13 * MiB);
    cr_expect_eq(gpumemtrace_devices(), 3u);
    gmt_query_free(GMT_API_cudaFree, 0x7f0000001000);
    cr_expect_eq(gpumemtrace_current_bytes(0, GPUMEMTRACE_CAT_ALL), 0);
    cr_expect_eq(gpumemtrace_peak_bytes(0, GPUMEMTRACE_CAT_ALL), 8 * MiB);
    /* the largest device's peak, not a sum */
    cr_expect_eq(gpumemtrace_peak_bytes(GPUMEMTRACE_ALL_DEVICES, GPUMEMTRACE_CAT_ALL), 8 * MiB);
    cr_expect_eq(gpumemtrace_peak_bytes(GPUMEMTRACE_ALL_DEVICES, GPUMEMTRACE_CAT_NCCL), 2 * MiB);
    cr_expect_eq(gpumemtrace_current_bytes(5, 7), 0, "a bad category reads as 0");
    cr_expect_eq(gpumemtrace_current_bytes(99, 0), 0, "a bad device reads as 0");
}

Test(query, reset_peak_starts_from_what_is_held)
{
    gmt_query_alloc(GMT_KIND_DEVICE, 0x1000, 10 * MiB, 0, false);
    gmt_query_alloc(GMT_KIND_DEVICE, 0x2000000, 4 * MiB, 0, false);
    gmt_query_free(GMT_API_cuMemFree, 0x1000);
    cr_expect_eq(gpumemtrace_peak_bytes(0, 0), 14 * MiB);
    gpumemtrace_reset_peak();
    cr_expect_eq(gpumemtrace_peak_bytes(0, 0), 4 * MiB);
    gmt_query_alloc(GMT_KIND_DEVICE, 0x3000000, 1 * MiB, 0, false);
    cr_expect_eq(gpumemtrace_peak_bytes(0, 0), 5 * MiB);
}

Test(query, handle_until_last_reference_and_namespaces_apart)
{
    /* a handle and a pointer of the same value are two allocations */
    gmt_query_alloc(GMT_KIND_PHYSICAL, 0x5000, 2 * MiB, 0, false);
    gmt_query_alloc(GMT_KIND_DEVICE, 0x5000, 1 * MiB, 0, false);
    gmt_query_alloc(GMT_KIND_RETAINED, 0x5000, 0, 0, false);
    cr_expect_eq(gpumemtrace_current_bytes(0, 0), 3 * MiB);
    gmt_query_free(GMT_API_cuMemRelease, 0x5000);
    cr_expect_eq(gpumemtrace_current_bytes(0, 0), 3 * MiB, "the retained reference keeps it");
    gmt_query_free(GMT_API_cuMemRelease, 0x5000);
    cr_expect_eq(gpumemtrace_current_bytes(0, 0), 1 * MiB);
    gmt_query_free(GMT_API_cuMemUnmap, 0x5000); /* a mapping's end frees nothing */
    gmt_query_free(GMT_API_cuMemRelease, 0x5000); /* released twice: nothing left to take */
    cr_expect_eq(gpumemtrace_current_bytes(0, 0), 1 * MiB);
    /* what is not device memory is not counted */
    gmt_query_alloc(GMT_KIND_HOST_PINNED, 0x9000, 5 * MiB, 0, false);
    gmt_query_alloc(GMT_KIND_VIRTUAL, 0xa000, 5 * MiB, 0, false);
    gmt_query_alloc(GMT_KIND_NCCL_MEM, 0xb000, 5 * MiB, 0, true); /* its cuMem calls count */
    cr_expect_eq(gpumemtrace_current_bytes(0, 0), 1 * MiB);
    gmt_query_alloc(GMT_KIND_DEVICE, 0xc000, 1 * MiB, -1, false);
    cr_expect_eq(gpumemtrace_current_bytes(GPUMEMTRACE_UNKNOWN_DEVICE, 0), 1 * MiB);
}

/* Threads allocate and free addresses of their own, each keeping a few live: the sums
 * come out exact, and the slots freed are taken again (5 M allocations through a table
 * of 1 M slots, 4096 probes at most: a table that did not reuse its dead slots would
 * run out of probes and say it is not exact). */
#define THREADS 4
#define ROUNDS 1250000
static void *churn(void *arg)
{
    uint64_t base = (uint64_t)(uintptr_t)arg << 40;
    for (uint64_t i = 0; i < ROUNDS; i++) {
        gmt_query_alloc(GMT_KIND_DEVICE, base + (i << 12), 4096 + (i & 7), (int)(i & 1), i & 2);
        if (i >= 8)
            gmt_query_free(GMT_API_cudaFree, base + ((i - 8) << 12));
    }
    return NULL;
}

Test(query, exact_under_threads_and_churn)
{
    pthread_t t[THREADS];
    for (uintptr_t i = 0; i < THREADS; i++)
        cr_assert_eq(pthread_create(&t[i], NULL, churn, (void *)(i + 1)), 0);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    int64_t want = 0;
    for (uint64_t i = ROUNDS - 8; i < ROUNDS; i++)
        want += 4096 + (int64_t)(i & 7);
    cr_expect_eq(gpumemtrace_current_bytes(GPUMEMTRACE_ALL_DEVICES, 0), want * THREADS);
    cr_expect_eq(gpumemtrace_current_bytes(GPUMEMTRACE_ALL_DEVICES, GPUMEMTRACE_CAT_NCCL) +
                 gpumemtrace_current_bytes(GPUMEMTRACE_ALL_DEVICES, GPUMEMTRACE_CAT_OTHER),
                 want * THREADS);
    cr_expect_eq(gpumemtrace_exact(), 1);
    int64_t p = gpumemtrace_peak_bytes(0, 0);
    cr_expect(p >= gpumemtrace_current_bytes(0, 0) && p <= 9 * 4104 * THREADS, "peak %ld", (long)p);
}
