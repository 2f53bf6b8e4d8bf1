/* test_hooks.c: what each allocation hook records of its call: the kind of memory and the bytes it takes (padded rows included), through the driver's and the runtime's entry points. */
#include "hook_run.h"

#define PATHS HOOK_DIR "/hook_paths"
#define MIB (1024ull * 1024)

struct want {
    unsigned api;
    unsigned kind;
    uint64_t bytes; /* 0: the row pitch the program printed, times 100 rows */
};

struct seen {
    const struct want *w;
    size_t n;
    uint64_t pitch_bytes;
    unsigned matched[64];
};

static void visit(const struct gmt_rec *h, void *arg)
{
    struct seen *s = arg;
    struct gmt_rec_alloc_ext x;
    if (!as_alloc(h, &x))
        return;
    for (size_t i = 0; i < s->n; i++) {
        if (s->w[i].api != x.a.h.aux)
            continue;
        uint64_t bytes = s->w[i].bytes ? s->w[i].bytes : s->pitch_bytes;
        cr_expect_eq(x.a.kind, s->w[i].kind, "api %u: kind %u, want %u", s->w[i].api, x.a.kind,
                     s->w[i].kind);
        cr_expect_eq(x.a.bytes, bytes, "api %u: %llu bytes, want %llu", s->w[i].api,
                     (unsigned long long)x.a.bytes, (unsigned long long)bytes);
        s->matched[i]++;
    }
}

/* Runs hook_paths PATH traced; each API of `w` is recorded once, with its kind and size. */
static void expect_allocs(const char *path, const char *pitch_call, const struct want *w, size_t n)
{
    static struct hook_run traced;
    hook_run_paths(PATHS, path, "0", &traced);
    struct seen s = { .w = w, .n = n };
    char key[64];
    snprintf(key, sizeof key, "%s", pitch_call);
    const char *line = strstr(traced.out, key);
    cr_assert_not_null(line, "%s: no %s line:\n%s", path, pitch_call, traced.out);
    const char *p = strstr(line, "pitch=");
    cr_assert_not_null(p, "%s", line);
    unsigned long long pitch = strtoull(p + 6, NULL, 10);
    cr_assert_gt(pitch, 1000, "the rows of 1000 bytes are padded: %s", line);
    s.pitch_bytes = pitch * 100;
    struct hook_counts c;
    hook_read(traced.trace, &c, visit, &s);
    for (size_t i = 0; i < n; i++)
        cr_expect_eq(s.matched[i], 1u, "%s: api %u recorded %u times", path, w[i].api, s.matched[i]);
    hook_cleanup(&traced);
}

Test(hooks, driver_calls_record_their_kind_and_padded_size)
{
    static const struct want w[] = {
        { GMT_API_cuMemAllocPitch, GMT_KIND_DEVICE, 0 },
        { GMT_API_cuMemAllocManaged, GMT_KIND_MANAGED, 5 * MIB },
        { GMT_API_cuMemAllocHost, GMT_KIND_HOST_PINNED, 1 * MIB },
        { GMT_API_cuMemHostAlloc, GMT_KIND_HOST_PINNED, 2 * MIB },
    };
    expect_allocs("plt", "cuMemAllocPitch", w, sizeof w / sizeof w[0]);
}

Test(hooks, runtime_calls_record_their_kind_and_padded_size)
{
    static const struct want w[] = {
        { GMT_API_cudaMallocPitch, GMT_KIND_DEVICE, 0 },
        { GMT_API_cudaMallocManaged, GMT_KIND_MANAGED, 5 * MIB },
        { GMT_API_cudaMallocHost, GMT_KIND_HOST_PINNED, 1 * MIB },
        { GMT_API_cudaHostAlloc, GMT_KIND_HOST_PINNED, 2 * MIB },
        { GMT_API_cudaHostRegister, GMT_KIND_HOST_REGISTERED, 1 * MIB },
    };
    expect_allocs("runtime", "cudaMallocPitch", w, sizeof w / sizeof w[0]);
}
