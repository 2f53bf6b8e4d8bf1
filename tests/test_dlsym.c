/* test_dlsym.c: dlsym under the tracer resolves relative to its caller (RTLD_NEXT, RTLD_DEFAULT from an RTLD_LOCAL plugin), and a plugin loaded the way Python loads PyTorch is traced. */
#include <criterion/criterion.h>
#include <string.h>

#include "hook_run.h"
#include "trace_format.h"

#define SCOPE HOOK_DIR "/hook_scope"

static struct hook_run plain, traced;

/* hook_scope both ways; identical output is the first requirement of every test. */
static void run_scope(void)
{
    char *argv[] = { SCOPE, HOOK_DIR, NULL };
    hook_run(&plain, false, argv);
    cr_assert_eq(plain.status, 0, "untraced:\n%s", plain.out);
    hook_run(&traced, true, argv);
    cr_assert_eq(traced.status, 0, "traced:\n%s", traced.out);
    cr_assert_str_eq(traced.out, plain.out, "output differs with the tracer");
}

Test(dlsym, rtld_next_from_third_library_finds_the_next_definition)
{
    run_scope();
    /* Resolved from our library instead, RTLD_NEXT would find libhook_next_a's own. */
    cr_expect(strstr(traced.out, "hook_probe=1 next=2\n") != NULL, "%s", traced.out);
    hook_cleanup(&traced);
}

Test(dlsym, rtld_next_miss_stays_a_miss_with_dlerror)
{
    run_scope();
    cr_expect(strstr(traced.out, "RTLD_NEXT missing name missing\n") != NULL, "%s", traced.out);
    cr_expect(strstr(traced.out, "dlerror after a miss set\n") != NULL, "%s", traced.out);
    hook_cleanup(&traced);
}

Test(dlsym, rtld_default_from_local_plugin_sees_its_local_scope)
{
    run_scope();
    cr_expect(strstr(traced.out, "global scope cudaStreamCreate hidden\n") != NULL, "%s",
              traced.out);
    cr_expect(strstr(traced.out, "plugin RTLD_DEFAULT cudaStreamCreate found\n") != NULL, "%s",
              traced.out);
    hook_cleanup(&traced);
}

struct seen {
    unsigned cuda_malloc_5, cuda_malloc_6, cu_alloc_11;
};

static void visit(const struct gmt_rec *h, void *arg)
{
    struct seen *s = arg;
    struct gmt_rec_alloc_ext x;
    if (!as_alloc(h, &x))
        return;
    const struct gmt_rec_alloc *a = &x.a;
    unsigned api = a->h.aux;
    if (api == GMT_API_cudaMalloc && a->bytes == (5u << 20))
        s->cuda_malloc_5++;
    if (api == GMT_API_cudaMalloc && a->bytes == (6u << 20))
        s->cuda_malloc_6++;
    if (api == GMT_API_cuMemAlloc && a->bytes == (11u << 20))
        s->cu_alloc_11++;
}

Test(dlsym, rtld_local_plugin_is_traced_once_per_allocation)
{
    run_scope();
    cr_expect(strstr(traced.out, "plugin cudaMalloc r=0\n") != NULL, "%s", traced.out);
    struct hook_counts c;
    struct seen s = { 0 };
    hook_read(traced.trace, &c, visit, &s);
    cr_expect_eq(s.cuda_malloc_5, 1u, "PLT cudaMalloc from the plugin seen %u times",
                 s.cuda_malloc_5);
    cr_expect_eq(s.cuda_malloc_6, 1u, "cudaMalloc via RTLD_DEFAULT seen %u times",
                 s.cuda_malloc_6);
    /* The runtime inside reaches the driver for both: nested, not recorded again. */
    cr_expect_eq(c.alloc[GMT_API_cuMemAlloc], 1u, "%u cuMemAlloc records",
                 c.alloc[GMT_API_cuMemAlloc]);
    hook_cleanup(&traced);
}

Test(dlsym, rtld_next_of_a_hooked_name_gets_a_wrapper)
{
    run_scope();
    cr_expect(strstr(traced.out, "cuMemAlloc_v2 via RTLD_NEXT r=0\n") != NULL, "%s", traced.out);
    struct hook_counts c;
    struct seen s = { 0 };
    hook_read(traced.trace, &c, visit, &s);
    cr_expect_eq(s.cu_alloc_11, 1u, "cuMemAlloc_v2 from RTLD_NEXT seen %u times", s.cu_alloc_11);
    hook_cleanup(&traced);
}

Test(dlsym, nccl_in_rtld_local_plugin_works_and_is_traced)
{
    run_scope();
    cr_expect(strstr(traced.out, "plugin ncclCommInitAll r=0\n") != NULL, "%s", traced.out);
    struct hook_counts c;
    hook_read(traced.trace, &c, NULL, NULL);
    /* NCCL reaches the driver only through the runtime's entry points (cudaGetDriverEntryPoint*,
     * which reach cuGetProcAddress): it links the runtime statically. */
    cr_expect_gt(c.alloc[GMT_API_cuMemCreate], 0u, "NCCL's cuMemCreate not traced");
    cr_expect_eq(c.alloc[GMT_API_cuMemMap], c.alloc[GMT_API_cuMemCreate]);
    cr_expect_eq(c.free_[GMT_API_cuMemRelease], 2 * c.alloc[GMT_API_cuMemCreate],
                 "NCCL releases each handle twice after a retain");
    cr_expect_eq(c.alloc[GMT_API_cuMemRetainAllocationHandle], c.alloc[GMT_API_cuMemCreate]);
    hook_cleanup(&traced);
}
