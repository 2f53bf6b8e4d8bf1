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
#include "job.h"

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

/* The stack raised, then given back before the last samples: the largest sample's limits
 * are the latest before it (the raised ones), not the first sample's, which the samples
 * after it share. */
Test(untracked, limits_at_the_largest_are_the_latest_before_it, .timeout = 60)
{
    struct result res;
    summary_json(traced(NULL, "stackback", "8192"), &res);
    cr_expect_eq(json_int(res.out, "stack_bytes_per_thread"), 8192, "%s", res.out);
    cr_expect_eq(json_int(res.out, "local_reservation_bytes"), (long long)(8192 * THREADS), "%s", res.out);
    cr_expect_eq(json_int(res.out, "unexplained_bytes"), 0, "%s", res.out);
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
    cr_expect_eq(json_int(res.out, "other_processes_largest_pid"), 4242, "%s", res.out);
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
    cr_expect(strstr(res.out, "rank 1: peak") &&
                  strstr(res.out, "untracked: another process holds 100 MiB on its GPU (pid 4242)"),
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
    cr_expect(strstr(so, "\"untracked_cause\": \"another process holds 100 MiB on its GPU (pid 4242)\""), "%s", so);
    cr_expect_eq(json_int(so, "other_processes_largest_pid"), 4242, "%s", so);
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

/* ---- a job's ranks in check: each rank's parts shown, never gated; an outlier named ---- */

/* Traces untracked_prog nccl as rank `rank` of 3 on the fake NVML, with one more setting
 * (NULL none): another process on its GPU, or CUDA_MODULE_LOADING=EAGER. */
static const char *rank_traced(int rank, const char *extra)
{
    static char lp[PATH_MAX + 64];
    snprintf(lp, sizeof lp, "LD_LIBRARY_PATH=%s/fakes/nvml", cli_build_dir());
    char rk[32];
    snprintf(rk, sizeof rk, "RANK=%d", rank);
    const char *const env[] = {"FAKECUDA_DEVICES=1", lp, rk, "WORLD_SIZE=3", "GPUMEMTRACE_SAMPLE_MS=5",
                               "UNTRACKED_LINGER_MS=300", extra, NULL};
    return traced(env, "nccl", NULL);
}

/* Rank 0 plain, rank 1 with another process (100 MiB) on its GPU, rank 2 with every kernel
 * loaded at its context's creation: a baseline written from them passes, and the output
 * names ranks 1 and 2, each with its cause, and not rank 0. */
static const char *three_ranks[3];
static const char *bl_path;

static void three_ranks_traced(void)
{
    three_ranks[0] = rank_traced(0, NULL);
    three_ranks[1] = rank_traced(1, "FAKENVML_OTHER_MB=100");
    three_ranks[2] = rank_traced(2, "CUDA_MODULE_LOADING=EAGER");
    static char bl[PATH_MAX];
    snprintf(bl, sizeof bl, "%s/bl.json", cli_tmpdir());
    bl_path = bl;
    struct result res;
    RUN(&res, NULL, "check", three_ranks[0], three_ranks[1], three_ranks[2], "--write-baseline", bl);
    cr_assert_eq(res.status, 0, "%s%s", res.out, res.err);
}

/* The context part's figures: the fake's own, and with CUDA_MODULE_LOADING=EAGER its kernels */
#define CONTEXT_MIB (CONTEXT_OWN / MIB)
#define EAGER_MIB ((CONTEXT_OWN + FAKECUDA_EAGER_BYTES) / MIB)
/* the reservation after NCCL's send/receive kernel grew the stack (a whole number of MiB) */
#define RESERV_MIB (FAKENCCL_P2P_LOCAL_BYTES * THREADS / MIB)

Test(untracked, check_names_the_rank_whose_part_stands_out_and_gates_none, .timeout = 120)
{
    three_ranks_traced();
    struct result res;
    RUN(&res, NULL, "check", three_ranks[0], three_ranks[1], three_ranks[2], "--baseline", bl_path);
    cr_assert_eq(res.status, 0, "untracked memory gates nothing: %s%s", res.out, res.err);
    char want[256];
    cr_expect(strstr(res.out, "NOTE  rank 1: untracked memory stands out, not gated: another process holds 100 MiB "
                              "on its GPU (pid 4242)\n"), "%s", res.out);
    snprintf(want, sizeof want, "NOTE  rank 2: untracked memory stands out, not gated: its CUDA context is %llu MiB, "
             "median %llu MiB\n", (unsigned long long)EAGER_MIB, (unsigned long long)CONTEXT_MIB);
    cr_expect(strstr(res.out, want), "no '%s' in:\n%s", want, res.out);
    cr_expect_null(strstr(res.out, "NOTE  rank 0"), "%s", res.out);
    cr_expect_null(strstr(res.out, "untracked memory per rank"), "the parts only with --verbose: %s", res.out);

    /* --verbose: a row per rank, each part's figure */
    RUN(&res, NULL, "check", three_ranks[0], three_ranks[1], three_ranks[2], "--baseline", bl_path, "--verbose");
    cr_assert_eq(res.status, 0, "%s%s", res.out, res.err);
    cr_expect(strstr(res.out, "untracked memory per rank, not gated (docs/untracked.md):\n"), "%s", res.out);
    snprintf(want, sizeof want, "  rank 1        %llu MiB                     %llu MiB          100 MiB\n",
             (unsigned long long)CONTEXT_MIB, (unsigned long long)RESERV_MIB);
    cr_expect(strstr(res.out, want), "no '%s' in:\n%s", want, res.out);
    snprintf(want, sizeof want, "  rank 2        %llu MiB                     %llu MiB              0 B\n",
             (unsigned long long)EAGER_MIB, (unsigned long long)RESERV_MIB);
    cr_expect(strstr(res.out, want), "no '%s' in:\n%s", want, res.out);

    /* GitHub: each outlier a notice, never an error */
    const char *const gh[] = {"GITHUB_ACTIONS=true", NULL};
    RUN(&res, gh, "check", three_ranks[0], three_ranks[1], three_ranks[2], "--baseline", bl_path);
    cr_assert_eq(res.status, 0, "%s%s", res.out, res.err);
    cr_expect(strstr(res.out, "::notice title=gpumemtrace::rank 1: untracked memory stands out: another process "
                              "holds 100 MiB on its GPU (pid 4242)\n"), "%s", res.out);
    cr_expect_null(strstr(res.out, "::error"), "%s", res.out);
}

/* --aggregate: each part's min, median and max across the ranks, and the three ranks in
 * three groups: alike in every check, they differ in their untracked parts. */
Test(untracked, check_aggregate_spreads_each_part_and_groups_by_parts, .timeout = 120)
{
    three_ranks_traced();
    struct result res;
    RUN(&res, NULL, "check", three_ranks[0], three_ranks[1], three_ranks[2], "--baseline", bl_path, "--aggregate",
        "--verbose");
    cr_assert_eq(res.status, 0, "%s%s", res.out, res.err);
    cr_expect(strstr(res.out, "the traces: 3 ranks in 3 groups of ranks alike: rank 0; rank 1; rank 2\n"), "%s",
              res.out);
    char want[256];
    snprintf(want, sizeof want, "  CUDA context               min %llu MiB (rank 0)  median %llu MiB  max %llu MiB "
             "(rank 2)\n", (unsigned long long)CONTEXT_MIB, (unsigned long long)CONTEXT_MIB,
             (unsigned long long)EAGER_MIB);
    cr_expect(strstr(res.out, want), "no '%s' in:\n%s", want, res.out);
    snprintf(want, sizeof want, "  local-memory reservation   %llu MiB on every rank\n", (unsigned long long)RESERV_MIB);
    cr_expect(strstr(res.out, want), "no '%s' in:\n%s", want, res.out);
    cr_expect(strstr(res.out, "  other processes            min 0 B (rank 0)  median 0 B  max 100 MiB (rank 1)\n"),
              "%s", res.out);
    cr_expect(strstr(res.out, "NOTE  rank 1: "), "%s", res.out);
    cr_expect(strstr(res.out, "NOTE  rank 2: "), "%s", res.out);

    /* summary's job view: the same causes, the setting that explains rank 2, three groups */
    RUN(&res, NULL, "summary", "--no-symbols", "--width", "200", three_ranks[0], three_ranks[1], three_ranks[2]);
    cr_assert_eq(res.status, 0, "%s", res.err);
    snprintf(want, sizeof want, "untracked: its CUDA context is %llu MiB, median %llu MiB; recorded differences: "
             "CUDA_MODULE_LOADING=EAGER (most ranks: unset)", (unsigned long long)EAGER_MIB,
             (unsigned long long)CONTEXT_MIB);
    cr_expect(strstr(res.out, want), "no '%s' in:\n%s", want, res.out);
    cr_expect(strstr(res.out, "Ranks alike: 3 group(s)"), "%s", res.out);
}

/* Two ranks differing only in another process on one's GPU are two groups; the same
 * two ranks without it are one. */
Test(untracked, ranks_alike_only_when_their_parts_agree, .timeout = 120)
{
    const char *a = rank_traced(0, NULL), *b = rank_traced(1, NULL), *c = rank_traced(1, "FAKENVML_OTHER_MB=100");
    struct result res;
    RUN(&res, NULL, "summary", "--no-symbols", a, b);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "Ranks alike: 1 group(s)"), "%s", res.out);
    RUN(&res, NULL, "summary", "--no-symbols", a, c);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "Ranks alike: 2 group(s)"), "%s", res.out);
}

/* Another process on every rank's GPU (a daemon on each): the job's figure, nobody's outlier. */
Test(untracked, other_processes_on_every_gpu_make_no_rank_stand_out, .timeout = 120)
{
    const char *a = rank_traced(0, "FAKENVML_OTHER_MB=100"), *b = rank_traced(1, "FAKENVML_OTHER_MB=100");
    struct result res;
    RUN(&res, NULL, "check", a, b, "--write-baseline", "-");
    cr_assert_eq(res.status, 0, "%s", res.err);
    char bl[PATH_MAX];
    snprintf(bl, sizeof bl, "%s/bl.json", cli_tmpdir());
    FILE *f = fopen(bl, "w");
    cr_assert_not_null(f);
    fputs(res.out, f);
    cr_assert_eq(fclose(f), 0);
    RUN(&res, NULL, "check", a, b, "--baseline", bl, "--aggregate", "--verbose");
    cr_assert_eq(res.status, 0, "%s%s", res.out, res.err);
    cr_expect(strstr(res.out, "  other processes            100 MiB on every rank\n"), "%s", res.out);
    cr_expect_null(strstr(res.out, "NOTE  "), "%s", res.out);
    RUN(&res, NULL, "summary", "--no-symbols", a, b);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect_null(strstr(res.out, "Ranks that stand out"), "%s", res.out);
}

/* The rule: above the median by more than 10 % of it and more than 1 MiB; never below. */
Test(untracked, the_outlier_rule_is_above_the_median_by_10_percent_and_1_mib)
{
    cr_expect(!gmt_job_untracked_above(110 * MIB, 100 * MIB), "10 %% above is not beyond 10 %%");
    cr_expect(gmt_job_untracked_above(110 * MIB + 1, 100 * MIB));
    cr_expect(!gmt_job_untracked_above(MIB, 0), "1 MiB above nothing is not beyond 1 MiB");
    cr_expect(gmt_job_untracked_above(MIB + 1, 0));
    cr_expect(!gmt_job_untracked_above(5 * MIB, 4 * MIB + 1), "25 %% but under 1 MiB");
    cr_expect(!gmt_job_untracked_above(0, 100 * MIB), "below the median never stands out");
}

/* ---- explain's what-if lines for the untracked parts ---- */

/* The stack limit given back: explain predicts (limit - 1024) x threads, and that is what
 * device used shows between a run that raised it and one that did not. At the default
 * limit there is nothing to give back, and no line. */
Test(untracked, explain_stack_given_back_is_what_the_device_shows, .timeout = 60)
{
    const char *plain = traced(NULL, "stack", "1024"), *big = traced(NULL, "stack", "8192");
    struct result p, b, x;
    summary_json(plain, &p);
    summary_json(big, &b);
    long long shown = json_int(b.out, "untracked_bytes") - json_int(p.out, "untracked_bytes");
    RUN(&x, NULL, "explain", "--no-symbols", "--json", big);
    cr_assert_eq(x.status, 0, "%s", x.err);
    const char *w = strstr(x.out, "\"untracked_what_if\": [{\"device\": 0, \"settings\": \"cudaLimitStackSize=1024\"");
    cr_assert(w, "%s", x.out);
    cr_expect_eq(json_int(w, "stack_bytes_per_thread"), 8192, "%s", w);
    cr_expect_eq(json_int(w, "device_bytes"), -(long long)((8192 - 1024) * THREADS), "%s", w);
    cr_expect_eq(json_int(w, "device_bytes"), -shown, "predicted %lld, device used moved by %lld",
                 json_int(w, "device_bytes"), shown);
    cr_expect(strstr(w, "\"confidence\": \"exact\"}]"), "%s", w);

    RUN(&x, NULL, "explain", "--no-symbols", "--json", plain);
    cr_assert_eq(x.status, 0, "%s", x.err);
    cr_expect(strstr(x.out, "\"untracked_what_if\": []"), "the default limit gives nothing back: %s", x.out);
    RUN(&x, NULL, "explain", "--no-symbols", plain);
    cr_assert_eq(x.status, 0, "%s", x.err);
    cr_expect_null(strstr(x.out, "what if the stack limit"), "%s", x.out);
}

/* CUDA_MODULE_LOADING=EAGER: every kernel loaded with the context, FAKECUDA_EAGER_BYTES more
 * of it; explain says what LAZY would do, without a figure it cannot know. LAZY, or unset,
 * gets no such line. */
Test(untracked, explain_names_module_loading_eager_without_a_figure, .timeout = 60)
{
    const char *const eager_env[] = {"FAKECUDA_DEVICES=1", "CUDA_MODULE_LOADING=EAGER", NULL};
    const char *const lazy_env[] = {"FAKECUDA_DEVICES=1", "CUDA_MODULE_LOADING=LAZY", NULL};
    const char *eager = traced(eager_env, "stack", "1024"), *lazy = traced(lazy_env, "stack", "1024");
    struct result e, l;
    summary_json(eager, &e);
    summary_json(lazy, &l);
    cr_expect_eq(json_int(e.out, "context_bytes") - json_int(l.out, "context_bytes"), (long long)FAKECUDA_EAGER_BYTES,
                 "EAGER's context: %s", e.out);
    cr_expect_eq(json_int(e.out, "unexplained_bytes"), 0, "%s", e.out);
    RUN(&e, NULL, "explain", "--no-symbols", eager);
    cr_assert_eq(e.status, 0, "%s", e.err);
    cr_expect(strstr(e.out, "\nuntracked memory beside NCCL's (docs/untracked.md)\n  what if CUDA_MODULE_LOADING=LAZY "
                            "(the default): each kernel loaded at its first launch"), "%s", e.out);
    cr_expect(strstr(e.out, "by how much the trace cannot predict\n"), "%s", e.out);
    RUN(&e, NULL, "explain", "--no-symbols", "--json", eager);
    cr_assert_eq(e.status, 0, "%s", e.err);
    cr_expect(strstr(e.out, "\"untracked_what_if\": [{\"device\": null, \"settings\": \"CUDA_MODULE_LOADING=LAZY\", "
                            "\"stack_bytes_per_thread\": null, \"device_bytes\": null, \"confidence\": \"not predicted\"}]"),
              "%s", e.out);
    RUN(&l, NULL, "explain", "--no-symbols", lazy);
    cr_assert_eq(l.status, 0, "%s", l.err);
    cr_expect_null(strstr(l.out, "CUDA_MODULE_LOADING"), "%s", l.out);
}

/* ---- a non-blocking communicator on the NCCL that has ncclCommMemStats ---- */

/* nccl_scenarios nonblocking: rank 0's communicator initializes in the background while
 * the program's calls on it fail, rank 1's blocking init completes the clique. Both get
 * NCCL's own count beside the trace's, at init (once ready) and at destroy, and the
 * tracer asked nothing NCCL warns about (the program's two calls warn, no more). */
Test(untracked, nccl_own_count_of_a_nonblocking_communicator, .timeout = 60)
{
    static char lp[PATH_MAX + 64];
    snprintf(lp, sizeof lp, "LD_LIBRARY_PATH=%s/fakes/nccl-memstats", cli_build_dir());
    const char *const env[] = {"FAKECUDA_DEVICES=2", lp, "NCCL_DEBUG=WARN", NULL};
    char prog[PATH_MAX + 64];
    snprintf(prog, sizeof prog, "%s/fakes/progs/nccl_scenarios", cli_build_dir());
    cr_assert_eq(access(prog, X_OK), 0, "%s not built", prog);
    char *d = cli_tmpdir();
    struct result res;
    RUN(&res, env, "run", "-q", "-o", d, "--", prog, "nonblocking");
    cr_assert_eq(res.status, 0, "%s%s", res.out, res.err);
    int warns = 0;
    for (const char *p = strstr(res.err, "NCCL WARN"); p; p = strstr(p + 1, "NCCL WARN"))
        warns++;
    for (const char *p = strstr(res.out, "NCCL WARN"); p; p = strstr(p + 1, "NCCL WARN"))
        warns++;
    cr_expect_eq(warns, 2, "the program's two calls warn, no more:\n%s%s", res.out, res.err);
    RUN(&res, NULL, "explain", "--no-symbols", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    const char *c0 = strstr(res.out, "(rank 0 of 2, device 0)");
    cr_assert(c0, "no communicator of rank 0:\n%s", res.out);
    const char *own = strstr(c0, "NCCL's own count (ncclCommMemStats)\n    at init ");
    cr_expect(own, "no own count at init for the non-blocking communicator:\n%s", c0);
    cr_expect(strstr(c0, "\n    at destroy "), "%s", c0);
    RUN(&res, NULL, "explain", "--no-symbols", "--json", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    int counted = 0;
    for (const char *p = strstr(res.out, "\"nccl_own\": {\"source\": \"ncclCommMemStats\", \"init\": {\"phase\": \"INIT\""); p;
         p = strstr(p + 1, "\"nccl_own\": {\"source\": \"ncclCommMemStats\", \"init\": {\"phase\": \"INIT\"")) {
        cr_expect_gt(json_int(p, "total_bytes"), 0, "%s", p);
        counted++;
    }
    cr_expect_eq(counted, 2, "%d communicators with NCCL's own count at init, want 2:\n%s", counted, res.out);
}
