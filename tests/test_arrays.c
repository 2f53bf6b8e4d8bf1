/* test_arrays.c: CUDA arrays and mipmapped arrays are recorded once on every path, with their kind, their descriptor's bytes and matching frees, and count in the summary's device peak. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "hook_run.h"
#include "trace_format.h"

#define PATHS HOOK_DIR "/hook_paths"
#define MIB (1ull << 20)
#define HUGE_BYTES (65536ull * 65536 * 64 * 16) /* hook_paths' 4 TiB float4 array */

/* What hook_paths records of its arrays, in order. */
struct rec {
    unsigned api, kind;
    uint64_t bytes, address; /* ALLOC_FAIL: address 0 */
    int error;
};
struct seen {
    struct rec alloc[16], fail[4], free_[16];
    unsigned nalloc, nfail, nfree;
};

static bool is_array_api(unsigned a)
{
    return (a >= GMT_API_cudaMallocArray && a <= GMT_API_cudaFreeMipmappedArray) ||
           (a >= GMT_API_cuArrayCreate && a <= GMT_API_cuMipmappedArrayDestroy);
}

static void visit(const struct gmt_rec *h, void *arg)
{
    struct seen *s = arg;
    struct gmt_rec_alloc_ext x;
    if (as_alloc(h, &x)) {
        if (is_array_api(x.a.h.aux) && s->nalloc < 16)
            s->alloc[s->nalloc++] = (struct rec){ x.a.h.aux, x.a.kind, x.a.bytes, x.a.address, 0 };
    } else if (h->type == GMT_REC_FREE && is_array_api(h->aux) && s->nfree < 16) {
        const struct gmt_rec_free *f = (const void *)h;
        s->free_[s->nfree++] = (struct rec){ h->aux, 0, 0, f->address, 0 };
    } else if (h->type == GMT_REC_ALLOC_FAIL && is_array_api(h->aux) && s->nfail < 4) {
        const struct gmt_rec_alloc_fail *f = (const void *)h;
        s->fail[s->nfail++] = (struct rec){ h->aux, f->kind, f->bytes, 0, f->error };
    }
}

/* Runs hook_paths PATH FLAGS untraced and traced: same output, then what the trace holds. */
static void run_path(const char *path, const char *flags, struct seen *s, struct hook_run *traced)
{
    hook_run_paths(PATHS, path, flags, traced);
    memset(s, 0, sizeof *s);
    struct hook_counts c;
    hook_read(traced->trace, &c, visit, s);
    cr_expect(c.complete, "trace of %s %s has no END", path, flags);
}

/* The trace holds exactly `want` array ALLOCs, then the one failure, then frees of the
 * allocations numbered `freed` (by `free_api[i]`), each naming its ALLOC's handle. */
static void expect_records(const char *path, const struct seen *s, const struct rec *want,
                           unsigned nwant, const struct rec *fail, const unsigned *freed,
                           const unsigned *free_api, unsigned nfreed)
{
    cr_assert_eq(s->nalloc, nwant, "%s: %u array ALLOCs, want %u", path, s->nalloc, nwant);
    for (unsigned i = 0; i < nwant; i++) {
        const struct rec *g = &s->alloc[i], *w = &want[i];
        cr_expect_eq(g->api, w->api, "%s: ALLOC %u: api %u, want %u", path, i, g->api, w->api);
        cr_expect_eq(g->kind, w->kind, "%s: ALLOC %u: kind %u, want %u", path, i, g->kind, w->kind);
        cr_expect_eq(g->bytes, w->bytes, "%s: ALLOC %u (api %u): %llu bytes, want %llu", path, i,
                     g->api, (unsigned long long)g->bytes, (unsigned long long)w->bytes);
        cr_expect_neq(g->address, 0u, "%s: ALLOC %u: no handle", path, i);
    }
    cr_assert_eq(s->nfail, 1u, "%s: %u array failures, want 1", path, s->nfail);
    cr_expect_eq(s->fail[0].api, fail->api, "%s: failure of api %u", path, s->fail[0].api);
    cr_expect_eq(s->fail[0].kind, fail->kind, "%s: failure of kind %u", path, s->fail[0].kind);
    cr_expect_eq(s->fail[0].bytes, fail->bytes, "%s: failure of %llu bytes", path,
                 (unsigned long long)s->fail[0].bytes);
    cr_expect_eq(s->fail[0].error, fail->error, "%s: failure's error %d, want %d", path,
                 s->fail[0].error, fail->error);
    cr_assert_eq(s->nfree, nfreed, "%s: %u array FREEs, want %u", path, s->nfree, nfreed);
    for (unsigned i = 0; i < nfreed; i++) {
        cr_expect_eq(s->free_[i].api, free_api[i], "%s: FREE %u: api %u", path, i,
                     s->free_[i].api);
        cr_expect_eq(s->free_[i].address, s->alloc[freed[i]].address,
                     "%s: FREE %u does not name ALLOC %u's handle", path, i, freed[i]);
    }
}

static void driver_path(const char *path, const char *flags)
{
    static struct hook_run traced;
    struct seen s;
    run_path(path, flags, &s, &traced);
    cr_expect(strstr(traced.out, "arrays took 85983232 bytes") != NULL,
              "%s: the fake driver did not charge 16 + 64 + 2 MiB:\n%s", path, traced.out);
    cr_expect(strstr(traced.out, "cuArray3DCreate(out of memory) r=2 errno=4242") != NULL,
              "%s: error or errno changed:\n%s", path, traced.out);
    const struct rec want[] = {
        { GMT_API_cuArrayCreate, GMT_KIND_ARRAY, 16 * MIB, 0, 0 },  /* 1024² float4 */
        { GMT_API_cuArray3DCreate, GMT_KIND_ARRAY, 64 * MIB, 0, 0 }, /* 256²×64 float4 */
        /* 512² uchar4, 4 levels */
        { GMT_API_cuMipmappedArrayCreate, GMT_KIND_MIPMAPPED_ARRAY,
          4ull * (512 * 512 + 256 * 256 + 128 * 128 + 64 * 64), 0, 0 },
        /* 64² float, 8 layers, 3 levels: every level keeps the layers */
        { GMT_API_cuMipmappedArrayCreate, GMT_KIND_MIPMAPPED_ARRAY,
          4ull * 8 * (64 * 64 + 32 * 32 + 16 * 16), 0, 0 },
        /* 16² ushort2, 99 levels asked, 5 made */
        { GMT_API_cuMipmappedArrayCreate, GMT_KIND_MIPMAPPED_ARRAY,
          4ull * (256 + 64 + 16 + 4 + 1), 0, 0 },
        { GMT_API_cuArray3DCreate, GMT_KIND_ARRAY, 0, 0, 0 }, /* sparse */
    };
    const struct rec fail = { GMT_API_cuArray3DCreate, GMT_KIND_ARRAY, HUGE_BYTES, 0, 2 };
    const unsigned freed[] = { 0, 1, 5, 2, 3, 4 };
    const unsigned free_api[] = { GMT_API_cuArrayDestroy, GMT_API_cuArrayDestroy,
                                  GMT_API_cuArrayDestroy, GMT_API_cuMipmappedArrayDestroy,
                                  GMT_API_cuMipmappedArrayDestroy,
                                  GMT_API_cuMipmappedArrayDestroy };
    expect_records(path, &s, want, 6, &fail, freed, free_api, 6);
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
    cr_expect(strstr(traced.out, "cudaMalloc3DArray(out of memory) r=2 errno=4242") != NULL,
              "%s: error or errno changed:\n%s", path, traced.out);
    /* Runtime calls only: the driver calls the runtime made inside them are not recorded. */
    const struct rec want[] = {
        { GMT_API_cudaMallocArray, GMT_KIND_ARRAY, 64 * MIB, 0, 0 },   /* 2048² float4 */
        { GMT_API_cudaMalloc3DArray, GMT_KIND_ARRAY, 64 * MIB, 0, 0 }, /* 256²×64 float4 */
        { GMT_API_cudaMallocMipmappedArray, GMT_KIND_MIPMAPPED_ARRAY, /* 256² float, 3 levels */
          4ull * (256 * 256 + 128 * 128 + 64 * 64), 0, 0 },
    };
    const struct rec fail = { GMT_API_cudaMalloc3DArray, GMT_KIND_ARRAY, HUGE_BYTES, 0, 2 };
    const unsigned freed[] = { 0, 1, 2 };
    const unsigned free_api[] = { GMT_API_cudaFreeArray, GMT_API_cudaFreeArray,
                                  GMT_API_cudaFreeMipmappedArray };
    expect_records(path, &s, want, 3, &fail, freed, free_api, 3);
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
