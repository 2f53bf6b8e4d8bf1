/* test_arrays.c: CUDA arrays and mipmapped arrays are recorded once on every path, with their kind, their descriptor's bytes and matching frees, and count in the summary's device peak. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "hook_run.h"
#include "trace_format.h"

#define PATHS HOOK_DIR "/hook_paths"
#define MIB (1ull << 20)
#define HUGE_BYTES (65536ull * 65536 * 64 * 16) /* hook_paths' 4 TiB float4 array */

/* What hook_paths records of its arrays: per API, the last ALLOC, FAIL and up to two FREEs. */
struct seen {
    uint64_t address[GMT_API_MAX], bytes[GMT_API_MAX];
    unsigned kind[GMT_API_MAX];
    uint64_t freed[GMT_API_MAX][2];
    unsigned nfreed[GMT_API_MAX];
    uint64_t fail_bytes[GMT_API_MAX];
    int fail_error[GMT_API_MAX];
    unsigned fail_kind[GMT_API_MAX];
    uint64_t addresses[8]; /* of every array ALLOC, in order */
    unsigned naddresses;
};

static bool is_array_kind(unsigned k)
{
    return k == GMT_KIND_ARRAY || k == GMT_KIND_MIPMAPPED_ARRAY;
}

static void visit(const struct gmt_rec *h, void *arg)
{
    struct seen *s = arg;
    struct gmt_rec_alloc_ext x;
    if (as_alloc(h, &x)) {
        unsigned a = x.a.h.aux;
        if (a >= GMT_API_MAX || !is_array_kind(x.a.kind))
            return;
        s->address[a] = x.a.address;
        s->bytes[a] = x.a.bytes;
        s->kind[a] = x.a.kind;
        if (s->naddresses < 8)
            s->addresses[s->naddresses++] = x.a.address;
    } else if (h->type == GMT_REC_FREE && h->aux < GMT_API_MAX) {
        const struct gmt_rec_free *f = (const void *)h;
        if (s->nfreed[h->aux] < 2)
            s->freed[h->aux][s->nfreed[h->aux]] = f->address;
        s->nfreed[h->aux]++;
    } else if (h->type == GMT_REC_ALLOC_FAIL && h->aux < GMT_API_MAX) {
        const struct gmt_rec_alloc_fail *f = (const void *)h;
        s->fail_bytes[h->aux] = f->bytes;
        s->fail_error[h->aux] = f->error;
        s->fail_kind[h->aux] = f->kind;
    }
}

/* Runs hook_paths PATH FLAGS untraced and traced: same output, then what the trace holds. */
static void run_path(const char *path, const char *flags, struct seen *s, struct hook_run *traced)
{
    static struct hook_run plain;
    char *argv[] = { PATHS, (char *)path, (char *)flags, NULL };
    hook_run(&plain, false, argv);
    cr_assert_eq(plain.status, 0, "%s %s failed untraced:\n%s", path, flags, plain.out);
    hook_run(traced, true, argv);
    cr_assert_eq(traced->status, 0, "%s %s failed traced:\n%s", path, flags, traced->out);
    cr_assert_str_eq(traced->out, plain.out, "%s %s: output differs with the tracer", path, flags);
    memset(s, 0, sizeof *s);
    struct hook_counts c;
    hook_read(traced->trace, &c, visit, s);
    cr_expect(c.complete, "trace of %s %s has no END", path, flags);
}

/* Each of `allocs` (the create calls, in hook_paths' order) freed once by its release API. */
static void expect_freed(const struct seen *s, const char *path, enum gmt_api destroy,
                         enum gmt_api destroy_mip)
{
    cr_expect_eq(s->naddresses, 3u, "%s: %u array ALLOCs, want 3", path, s->naddresses);
    cr_expect_eq(s->nfreed[destroy], 2u, "%s: %u array frees", path, s->nfreed[destroy]);
    cr_expect_eq(s->nfreed[destroy_mip], 1u, "%s: %u mipmapped frees", path,
                 s->nfreed[destroy_mip]);
    cr_expect_eq(s->freed[destroy][0], s->addresses[0], "%s: first array freed is not it", path);
    cr_expect_eq(s->freed[destroy][1], s->addresses[1], "%s: second array freed is not it", path);
    cr_expect_eq(s->freed[destroy_mip][0], s->addresses[2], "%s: mipmapped handle differs", path);
    cr_expect_neq(s->addresses[0], 0u, "%s: no array handle recorded", path);
}

static void driver_path(const char *path, const char *flags)
{
    static struct hook_run traced;
    struct seen s;
    run_path(path, flags, &s, &traced);
    cr_expect(strstr(traced.out, "arrays took 85983232 bytes") != NULL,
              "%s: the fake driver did not charge 16 + 64 + 2 MiB:\n%s", path, traced.out);
    cr_expect_eq(s.kind[GMT_API_cuArrayCreate], (unsigned)GMT_KIND_ARRAY, "%s", path);
    cr_expect_eq(s.bytes[GMT_API_cuArrayCreate], 16 * MIB, "%s: 1024² float4 as %llu bytes", path,
                 (unsigned long long)s.bytes[GMT_API_cuArrayCreate]);
    cr_expect_eq(s.kind[GMT_API_cuArray3DCreate], (unsigned)GMT_KIND_ARRAY, "%s", path);
    cr_expect_eq(s.bytes[GMT_API_cuArray3DCreate], 64 * MIB, "%s: 256²×64 float4 as %llu", path,
                 (unsigned long long)s.bytes[GMT_API_cuArray3DCreate]);
    cr_expect_eq(s.kind[GMT_API_cuMipmappedArrayCreate], (unsigned)GMT_KIND_MIPMAPPED_ARRAY, "%s",
                 path);
    cr_expect_eq(s.bytes[GMT_API_cuMipmappedArrayCreate], 4ull * (512 * 512 + 256 * 256 +
                                                                  128 * 128 + 64 * 64),
                 "%s: 4 levels of 512² uchar4 as %llu", path,
                 (unsigned long long)s.bytes[GMT_API_cuMipmappedArrayCreate]);
    cr_expect_eq(s.fail_error[GMT_API_cuArray3DCreate], 2, "%s: CUDA_ERROR_OUT_OF_MEMORY as %d",
                 path, s.fail_error[GMT_API_cuArray3DCreate]);
    cr_expect_eq(s.fail_bytes[GMT_API_cuArray3DCreate], HUGE_BYTES, "%s", path);
    cr_expect_eq(s.fail_kind[GMT_API_cuArray3DCreate], (unsigned)GMT_KIND_ARRAY, "%s", path);
    cr_expect(strstr(traced.out, "cuArray3DCreate(out of memory) r=2 errno=4242") != NULL,
              "%s: error or errno changed:\n%s", path, traced.out);
    expect_freed(&s, path, GMT_API_cuArrayDestroy, GMT_API_cuMipmappedArrayDestroy);
    hook_cleanup(&traced);
}

Test(arrays, driver_through_the_plt)
{
    driver_path("plt", "0");
}

Test(arrays, driver_through_get_proc_address)
{
    driver_path("getproc1", "0");
    driver_path("getproc2", "0");
    driver_path("getproc2", "2");
}

Test(arrays, driver_through_the_runtime_entry_points)
{
    driver_path("entry", "0");
    driver_path("entryver", "0");
}

Test(arrays, driver_through_dlsym_on_libcuda)
{
    driver_path("dlsym", "0");
}

static void runtime_path(const char *path)
{
    static struct hook_run traced;
    struct seen s;
    run_path(path, "0", &s, &traced);
    cr_expect(strstr(traced.out, "arrays took 136314880 bytes") != NULL,
              "%s: the fake driver did not charge 64 + 64 + 2 MiB:\n%s", path, traced.out);
    cr_expect_eq(s.kind[GMT_API_cudaMallocArray], (unsigned)GMT_KIND_ARRAY, "%s", path);
    cr_expect_eq(s.bytes[GMT_API_cudaMallocArray], 64 * MIB, "%s: 2048² float4 as %llu", path,
                 (unsigned long long)s.bytes[GMT_API_cudaMallocArray]);
    cr_expect_eq(s.kind[GMT_API_cudaMalloc3DArray], (unsigned)GMT_KIND_ARRAY, "%s", path);
    cr_expect_eq(s.bytes[GMT_API_cudaMalloc3DArray], 64 * MIB, "%s", path);
    cr_expect_eq(s.kind[GMT_API_cudaMallocMipmappedArray], (unsigned)GMT_KIND_MIPMAPPED_ARRAY,
                 "%s", path);
    cr_expect_eq(s.bytes[GMT_API_cudaMallocMipmappedArray], 4ull * (256 * 256 + 128 * 128 + 64 * 64),
                 "%s: 3 levels of 256² float as %llu", path,
                 (unsigned long long)s.bytes[GMT_API_cudaMallocMipmappedArray]);
    cr_expect_eq(s.fail_error[GMT_API_cudaMalloc3DArray], 2, "%s: cudaErrorMemoryAllocation as %d",
                 path, s.fail_error[GMT_API_cudaMalloc3DArray]);
    cr_expect_eq(s.fail_bytes[GMT_API_cudaMalloc3DArray], HUGE_BYTES, "%s", path);
    cr_expect(strstr(traced.out, "cudaMalloc3DArray(out of memory) r=2 errno=4242") != NULL,
              "%s: error or errno changed:\n%s", path, traced.out);
    expect_freed(&s, path, GMT_API_cudaFreeArray, GMT_API_cudaFreeMipmappedArray);
    /* The runtime reached the driver's array functions: not recorded a second time. */
    for (unsigned a = GMT_API_cuArrayCreate; a <= GMT_API_cuMipmappedArrayDestroy; a++)
        cr_expect(s.address[a] == 0 && s.nfreed[a] == 0 && s.fail_error[a] == 0,
                  "%s: driver api %u recorded under a runtime call", path, a);
    hook_cleanup(&traced);
}

Test(arrays, runtime_through_the_plt)
{
    runtime_path("runtime");
}

Test(arrays, runtime_through_dlsym_on_libcudart)
{
    runtime_path("rtdlsym");
}

/* HOOK_LIB is BUILD/libgpumemtrace.so; the CLI is BUILD/gpumemtrace. */
static unsigned long long summary_peak(const char *trace)
{
    char cli[512], cmd[1024];
    snprintf(cli, sizeof cli, "%s", HOOK_LIB);
    char *slash = strrchr(cli, '/');
    cr_assert_not_null(slash);
    snprintf(slash + 1, sizeof cli - (size_t)(slash + 1 - cli), "gpumemtrace");
    snprintf(cmd, sizeof cmd, "%s summary --json %s", cli, trace);
    FILE *p = popen(cmd, "r");
    cr_assert_not_null(p);
    static char out[1 << 16];
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = 0;
    cr_assert_eq(pclose(p), 0, "%s failed:\n%s", cmd, out);
    const char *k = strstr(out, "\"peak_bytes\":");
    cr_assert_not_null(k, "no peak_bytes in:\n%s", out);
    return strtoull(k + strlen("\"peak_bytes\":"), NULL, 10);
}

Test(arrays, summary_counts_arrays_in_the_device_peak)
{
    static struct hook_run traced;
    struct seen s;
    run_path("runtime", "0", &s, &traced);
    /* The two 64 MiB arrays and the mipmapped array are live together, and nothing else
     * hook_paths allocates is live beside them. */
    unsigned long long peak = summary_peak(traced.trace);
    cr_expect_eq(peak, 128 * MIB + 4ull * (256 * 256 + 128 * 128 + 64 * 64),
                 "device peak %llu bytes", peak);
    hook_cleanup(&traced);
}
