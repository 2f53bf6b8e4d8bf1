/* render_untracked.c: untracked device memory as text: each named part with how it was measured, the rest as unexplained. */
#include "untracked.h"

#include <inttypes.h>
#include <string.h>

#include "report.h"
#include "util.h"

static void part(FILE *out, const char *name, int64_t bytes, const char *how)
{
    char b[32];
    fprintf(out, "           %-26s %10s  %s\n", name, gmt_fmt_sbytes(b, sizeof b, bytes), how);
}

void gmt_untracked_text(FILE *out, const struct gmt_analysis *a, size_t d)
{
    const struct gmt_untracked u = a->untracked[d];
    if (!u.known)
        return;
    char b1[32], how[192];
    fprintf(out, "\n         untracked %s at the largest sample, in parts:\n",
            gmt_fmt_sbytes(b1, sizeof b1, u.total));
    if (u.has_context)
        part(out, "CUDA context", u.context,
             u.lim_first.known ? "device used at the first sample, less tracked, limits, others"
                               : "device used at the first sample, less tracked (limits in it)");
    if (u.has_modules) {
        snprintf(how, sizeof how, "device used around %" PRIu32 " cuModuleLoad*/cuLibraryLoad*/unload call(s)",
                 u.n_modules);
        part(out, "modules loaded", u.modules, how);
    }
    if (u.has_calls) {
        snprintf(how, sizeof how, "modules, kernels: device used around %" PRIu32
                 " NCCL call(s)' first call, less tracked, limits", u.n_calls);
        part(out, "loaded in NCCL calls", u.in_calls, how);
    }
    if (u.lim.known) {
        snprintf(how, sizeof how, "%" PRIu64 " B stack per thread x %" PRIu64 " threads (cuCtxGetLimit)",
                 u.lim.stack, u.lim.threads);
        part(out, "local-memory reservation", (int64_t)u.lim.reservation, how);
        char lb[32];
        snprintf(how, sizeof how, "CU_LIMIT_PRINTF_FIFO_SIZE %s: its size never moves device used",
                 gmt_fmt_bytes(lb, sizeof lb, u.lim.fifo));
        part(out, "printf FIFO", 0, how);
        snprintf(how, sizeof how, "CU_LIMIT_MALLOC_HEAP_SIZE %s: charged at a kernel's first malloc, "
                 "which no call shows; in unexplained then", gmt_fmt_bytes(lb, sizeof lb, u.lim.heap));
        fprintf(out, "           %-26s %10s  %s\n", "device malloc heap", "?", how);
    } else {
        fprintf(out, "           %-26s %10s  %s\n", "limits", "?", "no limits in the trace (format < 2.6)");
    }
    if (u.has_other) {
        if (u.other_pid)
            snprintf(how, sizeof how, "NVML: %" PRIu32 " other process(es) on the device, not this one's "
                     "(the largest: pid %" PRIu32 ")", u.other_count, u.other_pid);
        else
            snprintf(how, sizeof how, "NVML: %" PRIu32 " other process(es) on the device, not this one's",
                     u.other_count);
        part(out, "other processes", (int64_t)u.other, how);
    } else {
        fprintf(out, "           %-26s %10s  %s\n", "other processes", "?", "no NVML process list in the trace");
    }
    snprintf(how, sizeof how, "%.1f %% of device used: what no measurement names (kernels loaded lazily at "
             "a first launch, modules the runtime loads itself, printf's and malloc's device runtime, pools)",
             u.unexplained_pct);
    part(out, "unexplained", u.unexplained, how);
}

void gmt_untracked_whatif_text(FILE *out, const struct gmt_analysis *a)
{
    bool head = false;
    for (size_t d = 0; d < a->rep.n_dev; d++) {
        const struct gmt_untracked *u = &a->untracked[d];
        if (!u->stack_whatif)
            continue;
        if (!head)
            fprintf(out, "\nuntracked memory beside NCCL's (docs/untracked.md)\n");
        head = true;
        char b[32];
        fprintf(out, "  device %d: what if the stack limit went back to %u B once the kernels needing %" PRIu64
                     " B ran (cudaDeviceSetLimit(cudaLimitStackSize, %u)): %s device, exact; the next "
                     "launch of such a kernel grows it again\n",
                a->rep.dev[d].device, GMT_STACK_DEFAULT, u->lim.stack, GMT_STACK_DEFAULT,
                gmt_fmt_sbytes(b, sizeof b, u->stack_whatif_bytes));
    }
    if (a->eager_loading) {
        if (!head)
            fprintf(out, "\nuntracked memory beside NCCL's (docs/untracked.md)\n");
        fprintf(out, "  what if CUDA_MODULE_LOADING=LAZY (the default): each kernel loaded at its first launch, "
                     "not every kernel at its module's load; less context memory, by how much the trace "
                     "cannot predict\n");
    }
}

void gmt_untracked_whatif_json(FILE *out, const struct gmt_analysis *a)
{
    fputs("\"untracked_what_if\": [", out);
    size_t n = 0;
    for (size_t d = 0; d < a->rep.n_dev; d++) {
        const struct gmt_untracked *u = &a->untracked[d];
        if (!u->stack_whatif)
            continue;
        fprintf(out, "%s{\"device\": %d, \"settings\": \"cudaLimitStackSize=%u\", \"stack_bytes_per_thread\": %"
                     PRIu64 ", \"device_bytes\": %" PRId64 ", \"confidence\": \"exact\"}",
                n++ ? ", " : "", a->rep.dev[d].device, GMT_STACK_DEFAULT, u->lim.stack, u->stack_whatif_bytes);
    }
    if (a->eager_loading)
        fprintf(out, "%s{\"device\": null, \"settings\": \"CUDA_MODULE_LOADING=LAZY\", "
                     "\"stack_bytes_per_thread\": null, \"device_bytes\": null, \"confidence\": \"not predicted\"}",
                n++ ? ", " : "");
    fputc(']', out);
}

void gmt_untracked_call_text(FILE *out, const struct gmt_analysis *a, size_t i)
{
    const struct gmt_untracked_call *u = &a->untracked_calls[i];
    if (!u->known)
        return;
    char b1[32], b2[32], b3[32];
    if (u->after.stack != u->before.stack) {
        fprintf(out, "    1st call: %s device beyond tracked; local memory reservation grew: %" PRIu64
                     " B -> %" PRIu64 " B of stack per thread x %" PRIu64 " threads = %s",
                gmt_fmt_sbytes(b1, sizeof b1, u->jump), u->before.stack, u->after.stack, u->after.threads,
                gmt_fmt_sbytes(b2, sizeof b2, u->grew));
        if (u->unnamed != 0)
            fprintf(out, "; the rest, %s, not named", gmt_fmt_sbytes(b3, sizeof b3, u->unnamed));
        fprintf(out, "\n");
    } else {
        fprintf(out, "    1st call: %s device beyond tracked, limits unchanged (stack %" PRIu64
                     " B per thread): kernels or modules loaded in the call, which no call names\n",
                gmt_fmt_sbytes(b1, sizeof b1, u->jump), u->after.stack);
    }
}
