/* test_untracked.c: untracked device memory named in parts: one-GPU programs on the simulated driver, whose context, limits, NCCL kernels and other processes the summary must name. */
#include <criterion/criterion.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"
#include "fake_nccl.h"

#define RUN(res, e, ...) CLI_RUN((res), &(struct cli_io){.env = (e)}, __VA_ARGS__)
#define PROG "fakes/progs/untracked_prog"
#define MIB (1ull << 20)
#define THREADS ((uint64_t)FAKECUDA_SMS * FAKECUDA_THREADS_PER_SM)
/* the context's own part: its charge less the reservation its default stack limit holds */
#define CONTEXT_OWN (FAKECUDA_CONTEXT_BYTES - FAKECUDA_STACK_DEFAULT * THREADS)

TestSuite(untracked, .fini = cli_tmpdirs_remove);

/* Traces untracked_prog MODE [ARG] on one simulated device; returns the trace directory. */
static const char *traced(const char *const *env, const char *mode, const char *arg)
{
    char *d = cli_tmpdir();
    char path[2 * PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", cli_build_dir(), PROG);
    cr_assert_eq(access(path, X_OK), 0, "%s not built (make test-extras)", path);
    static const char *const one[] = {"FAKECUDA_DEVICES=1", NULL};
    struct result res;
    if (arg)
        RUN(&res, env ? env : one, "run", "-q", "-o", d, "--", path, mode, arg);
    else
        RUN(&res, env ? env : one, "run", "-q", "-o", d, "--", path, mode);
    cr_assert_eq(res.status, 0, "%s: %s%s", mode, res.out, res.err);
    return d;
}

/* The integer after "key": in s, -1 when absent or null. */
static long long json_int(const char *s, const char *key)
{
    char k[96];
    snprintf(k, sizeof k, "\"%s\": ", key);
    const char *p = strstr(s, k);
    if (!p || !strncmp(p + strlen(k), "null", 4))
        return -1;
    return strtoll(p + strlen(k), NULL, 10);
}

static void summary_json(const char *dir, struct result *res)
{
    RUN(res, NULL, "summary", "--no-symbols", "--json", dir);
    cr_assert_eq(res->status, 0, "%s", res->err);
}

Test(untracked, context_only_is_the_context_and_its_limits, .timeout = 60)
{
    struct result res;
    summary_json(traced(NULL, "ctx", NULL), &res);
    cr_expect_eq(json_int(res.out, "context_bytes"), (long long)CONTEXT_OWN, "%s", res.out);
    cr_expect_eq(json_int(res.out, "stack_bytes_per_thread"), FAKECUDA_STACK_DEFAULT);
    cr_expect_eq(json_int(res.out, "threads"), (long long)THREADS);
    cr_expect_eq(json_int(res.out, "printf_fifo_limit_bytes"), FAKECUDA_PRINTF_FIFO_DEFAULT);
    cr_expect_eq(json_int(res.out, "malloc_heap_limit_bytes"), FAKECUDA_MALLOC_HEAP_DEFAULT);
    cr_expect_eq(json_int(res.out, "unexplained_bytes"), 0, "%s", res.out);
}

/* The printf FIFO and the malloc heap cost nothing when set (as on an H200). A kernel
 * calling printf brings the device runtime, whatever the FIFO's size; one calling malloc
 * brings it and the heap. No call shows either: they are unexplained, the text says so. */
Test(untracked, printf_fifo_costs_nothing_whatever_its_size, .timeout = 60)
{
    struct result res;
    summary_json(traced(NULL, "fifo", "67108864"), &res);
    cr_expect_eq(json_int(res.out, "printf_fifo_limit_bytes"), 64 * MIB, "%s", res.out);
    cr_expect_eq(json_int(res.out, "context_bytes"), (long long)CONTEXT_OWN, "%s", res.out);
    cr_expect_eq(json_int(res.out, "unexplained_bytes"), (long long)FAKECUDA_DEVRT_BYTES, "%s", res.out);
}

Test(untracked, a_malloc_heap_set_and_never_used_costs_nothing, .timeout = 60)
{
    struct result res;
    summary_json(traced(NULL, "heap", "268435456"), &res);
    cr_expect_eq(json_int(res.out, "malloc_heap_limit_bytes"), 256 * MIB, "%s", res.out);
    cr_expect_eq(json_int(res.out, "context_bytes"), (long long)CONTEXT_OWN, "%s", res.out);
    cr_expect_eq(json_int(res.out, "unexplained_bytes"), 0, "%s", res.out);
}

Test(untracked, a_malloc_heap_used_by_a_kernel_is_unexplained_and_said_so, .timeout = 60)
{
    struct result res;
    const char *d = traced(NULL, "heap_use", "268435456");
    summary_json(d, &res);
    cr_expect_eq(json_int(res.out, "unexplained_bytes"), (long long)(256 * MIB + FAKECUDA_DEVRT_BYTES), "%s",
                 res.out);
    RUN(&res, NULL, "summary", "--no-symbols", "--width", "200", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "CU_LIMIT_MALLOC_HEAP_SIZE 256 MiB: charged at a kernel's first malloc"), "%s",
              res.out);
    cr_expect(strstr(res.out, "CU_LIMIT_PRINTF_FIFO_SIZE 1 MiB: its size never moves device used"), "%s",
              res.out);
}

/* NCCL's send/receive kernel grows the stack at its first launch, inside ncclGroupEnd:
 * the group's first call is charged the growth, named, and nothing is left unexplained. */
Test(untracked, send_recv_kernel_growth_is_named_at_the_call, .timeout = 60)
{
    const char *d = traced(NULL, "nccl", NULL);
    struct result res;
    summary_json(d, &res);
    cr_expect_eq(json_int(res.out, "stack_bytes_per_thread"), FAKENCCL_P2P_LOCAL_BYTES, "%s", res.out);
    cr_expect_eq(json_int(res.out, "local_reservation_bytes"), (long long)(FAKENCCL_P2P_LOCAL_BYTES * THREADS));
    cr_expect_eq(json_int(res.out, "loaded_in_nccl_calls_bytes"),
                 (long long)(FAKENCCL_KERNEL_BYTES + FAKENCCL_LAZY_BYTES), "%s", res.out);
    cr_expect_eq(json_int(res.out, "context_bytes"), (long long)CONTEXT_OWN);
    cr_expect_eq(json_int(res.out, "unexplained_bytes"), 0, "%s", res.out);
    RUN(&res, NULL, "summary", "--no-symbols", "--width", "200", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    char want[256];
    snprintf(want, sizeof want, "local memory reservation grew: 1024 B -> %u B of stack per thread x %" PRIu64
             " threads", FAKENCCL_P2P_LOCAL_BYTES, THREADS);
    cr_expect(strstr(res.out, want), "no '%s' in:\n%s", want, res.out);
    cr_expect(strstr(res.out, "CUDA context"), "%s", res.out);
    cr_expect(strstr(res.out, "unexplained"), "%s", res.out);
}

/* The same growth seen first by a sample of the library's own thread (NVML's, which reads
 * no limits) inside the group's end: that sample is the largest, and its parts are read
 * at the call's closing sample, whose device used it equals, not at the call's opening
 * one (before the growth, which would leave the growth unexplained). */
Test(untracked, growth_seen_first_by_an_nvml_sample_inside_the_call_is_named, .timeout = 60)
{
    char lp[PATH_MAX + 64];
    snprintf(lp, sizeof lp, "LD_LIBRARY_PATH=%s/fakes/nvml", cli_build_dir());
    const char *const env[] = {"FAKECUDA_DEVICES=1", lp, "GPUMEMTRACE_SAMPLE_MS=5", "FAKENCCL_P2P_LINGER_MS=200",
                               "UNTRACKED_LINGER_MS=50", NULL};
    const char *d = traced(env, "nccl", NULL);
    struct result res;
    RUN(&res, NULL, "dump", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_assert(strstr(res.out, "source=NVML"), "no NVML sample: the case is not made\n%s", res.out);
    summary_json(d, &res);
    cr_expect_eq(json_int(res.out, "stack_bytes_per_thread"), FAKENCCL_P2P_LOCAL_BYTES, "%s", res.out);
    cr_expect_eq(json_int(res.out, "local_reservation_bytes"), (long long)(FAKENCCL_P2P_LOCAL_BYTES * THREADS));
    cr_expect_eq(json_int(res.out, "unexplained_bytes"), 0, "%s", res.out);
}

/* cuCtxSetLimit by hand moves the reservation part by (new - old) x threads, and nothing
 * else: the context part stays what it was. */
Test(untracked, stack_set_by_hand_moves_only_the_reservation, .timeout = 60)
{
    struct result plain, big;
    summary_json(traced(NULL, "stack", "1024"), &plain);
    summary_json(traced(NULL, "stack", "8192"), &big);
    long long r0 = json_int(plain.out, "local_reservation_bytes"), r1 = json_int(big.out, "local_reservation_bytes");
    cr_expect_eq(r1 - r0, (long long)((8192 - 1024) * THREADS), "%lld -> %lld", r0, r1);
    cr_expect_eq(json_int(big.out, "untracked_bytes") - json_int(plain.out, "untracked_bytes"), r1 - r0);
    cr_expect_eq(json_int(big.out, "context_bytes"), json_int(plain.out, "context_bytes"));
    cr_expect_eq(json_int(big.out, "unexplained_bytes"), 0, "%s", big.out);
}

/* A kernel needing 4 KiB of local memory, launched outside any NCCL call: the driver grows
 * the limit, and the next sample's limits name it (the module's own 2 MiB, loaded outside
 * any sampled call, is what remains unexplained). */
Test(untracked, kernel_launch_growth_is_read_at_the_next_sample, .timeout = 60)
{
    struct result res;
    summary_json(traced(NULL, "launch", "4096"), &res);
    cr_expect_eq(json_int(res.out, "stack_bytes_per_thread"), 4096, "%s", res.out);
    /* the module's own 2 MiB, an explicit cuModuleLoadData, is named */
    cr_expect_eq(json_int(res.out, "modules_loaded_bytes"), (long long)(2 * MIB), "%s", res.out);
    cr_expect_eq(json_int(res.out, "unexplained_bytes"), 0, "%s", res.out);
}

/* Every load call, through the PLT, cuGetProcAddress and dlsym: what stays loaded is the
 * modules part (unloads give theirs back), the load before the first allocation is not the
 * context's, and nothing is left unexplained. */
Test(untracked, explicit_module_loads_are_a_part_of_their_own, .timeout = 60)
{
    const char *d = traced(NULL, "modules", NULL);
    struct result res;
    summary_json(d, &res);
    cr_expect_eq(json_int(res.out, "modules_loaded_bytes"), (long long)(40 * MIB), "%s", res.out);
    cr_expect_eq(json_int(res.out, "modules_loaded"), 9, "%s", res.out);
    cr_expect_eq(json_int(res.out, "context_bytes"), (long long)CONTEXT_OWN, "%s", res.out);
    cr_expect_eq(json_int(res.out, "loaded_in_nccl_calls_bytes"),
                 (long long)(FAKENCCL_KERNEL_BYTES + FAKENCCL_LAZY_BYTES), "%s", res.out);
    cr_expect_eq(json_int(res.out, "unexplained_bytes"), 0, "%s", res.out);
    RUN(&res, NULL, "dump", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    static const char *const apis[] = {"cuModuleLoad ", "cuModuleLoadData ", "cuModuleLoadDataEx ",
                                       "cuModuleLoadFatBinary ", "cuLibraryLoadData ", "cuLibraryLoadFromFile ",
                                       "cuModuleUnload ", "cuLibraryUnload "};
    for (size_t i = 0; i < sizeof apis / sizeof apis[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "api=%s", apis[i]);
        cr_expect(strstr(res.out, want), "no MODLOAD %s in the dump", apis[i]);
    }
}

/* The runtime loads NCCL's kernels through the driver's private table, as the real one does:
 * no MODLOAD, and those kernels stay the NCCL calls' part. */
Test(untracked, runtime_loads_are_not_explicit_loads, .timeout = 60)
{
    struct result res;
    RUN(&res, NULL, "dump", traced(NULL, "nccl", NULL));
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(!strstr(res.out, "MODLOAD"), "%s", res.out);
}

/* The NCCL that has ncclCommMemStats (2.29.7), with N extra bytes counted: explain sets its
 * own count beside the trace's, at init and at destroy. */
static const char *traced_memstats(const char *skew)
{
    static char lp[PATH_MAX + 64], sk[64];
    snprintf(lp, sizeof lp, "LD_LIBRARY_PATH=%s/fakes/nccl-memstats", cli_build_dir());
    snprintf(sk, sizeof sk, "FAKENCCL_MEMSTATS_SKEW=%s", skew);
    const char *const env[] = {"FAKECUDA_DEVICES=1", lp, sk, "NCCL_DEBUG=WARN", NULL};
    return traced(env, "nccl", NULL);
}

Test(untracked, nccl_own_count_is_set_beside_the_trace, .timeout = 60)
{
    const char *d = traced_memstats("0");
    struct result res;
    RUN(&res, NULL, "dump", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "NCCL_MEMSTATS phase=INIT"), "%s", res.out);
    cr_expect(strstr(res.out, "NCCL_MEMSTATS phase=DESTROY"), "%s", res.out);
    RUN(&res, NULL, "explain", "--no-symbols", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "NCCL's own count (ncclCommMemStats)"), "%s", res.out);
    cr_expect(strstr(res.out, "the same"), "%s", res.out);
    cr_expect(!strstr(res.out, "difference"), "%s", res.out);
    RUN(&res, NULL, "explain", "--no-symbols", "--json", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect_eq(json_int(res.out, "difference_bytes"), 0, "%s", res.out);
    cr_expect_eq(json_int(res.out, "total_bytes"), json_int(res.out, "trace_bytes"), "%s", res.out);

    d = traced_memstats("1048576");
    RUN(&res, NULL, "explain", "--no-symbols", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "difference +1 MiB"), "%s", res.out);
    RUN(&res, NULL, "summary", "--no-symbols", "--json", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect_eq(json_int(res.out, "difference_bytes"), (long long)MIB, "%s", res.out);
}

/* NCCL 2.28.9 has no ncclCommMemStats: no record, no call through nothing, and explain says so. */
Test(untracked, nccl_without_memstats_gets_no_own_count, .timeout = 60)
{
    const char *d = traced(NULL, "nccl", NULL);
    struct result res;
    RUN(&res, NULL, "dump", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(!strstr(res.out, "NCCL_MEMSTATS"), "%s", res.out);
    RUN(&res, NULL, "explain", "--no-symbols", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "this NCCL has no ncclCommMemStats (NCCL 2.29 and later)"), "%s", res.out);
    cr_expect(!strstr(res.out, "NCCL's own count ("), "%s", res.out);
}

/* Another process on the device, as NVML lists it: named, and not this process's. */
Test(untracked, other_process_on_the_device_is_named, .timeout = 60)
{
    char lp[PATH_MAX + 64];
    snprintf(lp, sizeof lp, "LD_LIBRARY_PATH=%s/fakes/nvml", cli_build_dir());
    const char *const env[] = {"FAKECUDA_DEVICES=1", lp, "FAKENVML_OTHER_MB=100", "GPUMEMTRACE_SAMPLE_MS=5",
                               "UNTRACKED_LINGER_MS=300", NULL};
    struct result res;
    summary_json(traced(env, "nccl", NULL), &res);
    cr_expect_eq(json_int(res.out, "other_processes_bytes"), (long long)(100 * MIB), "%s", res.out);
    cr_expect_eq(json_int(res.out, "other_processes"), 1);
}

/* explain's what-if for the stack: back to the default gives (limit - 1024) x threads. */
Test(untracked, explain_predicts_the_stack_given_back, .timeout = 60)
{
    struct result res;
    RUN(&res, NULL, "explain", "--no-symbols", traced(NULL, "stack", "4096"));
    cr_assert_eq(res.status, 0, "%s", res.err);
    char want[160], b[32];
    snprintf(b, sizeof b, "-%llu MiB", (unsigned long long)((4096 - 1024) * THREADS / MIB));
    snprintf(want, sizeof want, "once the kernels needing 4096 B ran (cudaDeviceSetLimit(cudaLimitStackSize, 1024)): %s", b);
    cr_expect(strstr(res.out, want), "no '%s' in:\n%s", want, res.out);
}

/* A job of two ranks, another process on rank 1's GPU only: rank 1 stands out, with that
 * cause, and its context is the same as rank 0's (the other process is not in it). */
Test(untracked, job_names_the_rank_with_another_process_on_its_gpu, .timeout = 60)
{
    char lp[PATH_MAX + 64];
    snprintf(lp, sizeof lp, "LD_LIBRARY_PATH=%s/fakes/nvml", cli_build_dir());
    const char *const e0[] = {"FAKECUDA_DEVICES=1", lp, "RANK=0", "WORLD_SIZE=2", "GPUMEMTRACE_SAMPLE_MS=5",
                              "UNTRACKED_LINGER_MS=300", NULL};
    const char *const e1[] = {"FAKECUDA_DEVICES=1", lp, "RANK=1", "WORLD_SIZE=2", "GPUMEMTRACE_SAMPLE_MS=5",
                              "UNTRACKED_LINGER_MS=300", "FAKENVML_OTHER_MB=100", NULL};
    const char *d0 = traced(e0, "nccl", NULL), *d1 = traced(e1, "nccl", NULL);
    struct result res;
    RUN(&res, NULL, "summary", "--no-symbols", "--width", "200", d0, d1);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "rank 1: peak") && strstr(res.out, "untracked: another process on its GPU: 100 MiB"),
              "%s", res.out);
    char ctx[64];
    snprintf(ctx, sizeof ctx, "CUDA context     %llu MiB on every rank", (unsigned long long)(CONTEXT_OWN / MIB));
    cr_expect(strstr(res.out, ctx), "no '%s' in:\n%s", ctx, res.out);
    cr_expect_null(strstr(res.out, "rank 0: peak"), "%s", res.out);
    /* the JSON carries the same: the rank's parts, its cause, the job's spreads */
    RUN(&res, NULL, "summary", "--no-symbols", "--json", d0, d1);
    cr_assert_eq(res.status, 0, "%s", res.err);
    const char *so = strstr(res.out, "\"stand_out\": [{\"rank\": 1,");
    cr_assert(so, "%s", res.out);
    cr_expect_eq(json_int(so, "other_processes_bytes"), (long long)(100 * MIB), "%s", so);
    cr_expect(strstr(so, "\"untracked_cause\": \"another process on its GPU: 100 MiB"), "%s", so);
    const char *parts = strstr(res.out, "\"untracked_parts\": {\"context\": {");
    cr_assert(parts, "%s", res.out);
    cr_expect_eq(json_int(parts, "max_bytes"), json_int(parts, "min_bytes"), "%s", parts);
}

/* Two devices, device 1's stack limit set by hand: its NCCL call is sampled from device 0's
 * thread, in device 1's context pushed for the moment, and the limits beside that sample
 * would be device 0's context's. Every DEVLIMITS of device 1 is its own. */
Test(untracked, a_device_is_given_only_its_own_contexts_limits, .timeout = 60)
{
    static const char *const two[] = {"FAKECUDA_DEVICES=2", NULL};
    const char *d = traced(two, "two", "8192");
    static struct result res;
    RUN(&res, NULL, "dump", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    int own = 0, other = 0;
    for (const char *p = strstr(res.out, " DEVLIMITS "); p; p = strstr(p + 1, " DEVLIMITS ")) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        char line[512];
        snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), p);
        if (!strstr(line, " device=1 "))
            continue;
        if (strstr(line, " stack=8192 "))
            own++;
        else
            other++;
    }
    cr_expect_gt(own, 0, "no limits of device 1 recorded:\n%s", res.out);
    cr_expect_eq(other, 0, "%d DEVLIMITS of device 1 with another context's stack:\n%s", other,
                 res.out);
}
