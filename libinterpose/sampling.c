/* sampling.c: device-memory sampling around NCCL calls (MEMINFO records), as the GPUMEMTRACE_MEMINFO policy asks. */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "scope.h"

/* Calls seen per (comm, op, bytes), for the sampling policy. */
#define COUNT_SLOTS 4096
static _Atomic uint64_t count_keys[COUNT_SLOTS];
static _Atomic uint32_t count_vals[COUNT_SLOTS];

/* ---- device-memory sampling policy (GPUMEMTRACE_MEMINFO) ---- */
/* In gmt.h's hot line; gmt_hot.meminfo.first and gmt_hot.meminfo.every are written before gmt_hot.meminfo.kind is
 * published (init.c starts them at 0: GMT_POLICY_UNPARSED, and parse_policy sets both). */

static int parse_uint(const char **s, uint32_t *out)
{
    const char *p = *s;
    uint64_t v = 0;
    if (*p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (uint64_t)(*p++ - '0');
        if (v > 1000000000u)
            return -1;
    }
    *s = p;
    *out = (uint32_t)v;
    return 0;
}

/* "never" | "always" | "first:N[,every:K]"; anything else is warned about once and the
 * default (first:2, never afterwards) is used. */
static int parse_policy(const char *s, uint32_t *first, uint32_t *every)
{
    *first = 2;
    *every = 0;
    if (!s || !*s)
        return GMT_POLICY_FIRST;
    if (strcmp(s, "never") == 0)
        return GMT_POLICY_NEVER;
    if (strcmp(s, "always") == 0)
        return GMT_POLICY_ALWAYS;
    const char *p = s;
    uint32_t n, k = 0;
    if (strncmp(p, "first:", 6) != 0)
        goto bad;
    p += 6;
    if (parse_uint(&p, &n))
        goto bad;
    if (*p == ',') {
        p++;
        if (strncmp(p, "every:", 6) != 0)
            goto bad;
        p += 6;
        if (parse_uint(&p, &k))
            goto bad;
    }
    if (*p)
        goto bad;
    *first = n;
    *every = k;
    return GMT_POLICY_FIRST;
bad:
    gmt_warn("GPUMEMTRACE_MEMINFO=%s not understood (never | always | first:N[,every:K]); "
             "using first:2", s);
    return GMT_POLICY_FIRST;
}

static _Atomic int parsing; /* 1 while a thread parses the policy (cleared in a fork child) */

int gmt_sample_policy_slow(void)
{
    int k;
    /* The first caller parses (so a bad value is warned about once); a racing one waits
     * the few instructions that takes. */
    int zero = 0;
    if (atomic_compare_exchange_strong(&parsing, &zero, 1)) {
        k = parse_policy(gmt_opt.meminfo, &gmt_hot.meminfo.first, &gmt_hot.meminfo.every);
        atomic_store_explicit(&gmt_hot.meminfo.kind, k, memory_order_release);
        return k;
    }
    while ((k = atomic_load_explicit(&gmt_hot.meminfo.kind, memory_order_acquire)) == GMT_POLICY_UNPARSED)
        ;
    return k;
}

/* Whether the call numbered by its key's counter gets sampled. Keys the table can't hold
 * are not sampled: sampling is a cost, never a correctness matter. */
static uint64_t meminfo_key(uint64_t comm, unsigned op, uint64_t bytes);

bool gmt_sample_count(uint64_t comm, unsigned op, uint64_t bytes, struct gmt_comm_memo *m,
                      uint64_t dk)
{
    uint64_t key = gmt_mix(meminfo_key(comm, op, bytes));
    long i = gmt_slot_of(count_keys, COUNT_SLOTS, key);
    if (i < 0)
        return false;
    /* Past the first N with no every:K the answer is no for good: a plain load, no
     * locked increment (the count stays at N, where every later call finds it). */
    if (!gmt_hot.meminfo.every && atomic_load_explicit(&count_vals[i], memory_order_relaxed) >= gmt_hot.meminfo.first) {
        if (m) {
            m->done[m->done_next++ % GMT_MEMO_DONE] = dk;
        }
        return false;
    }
    uint32_t n = atomic_fetch_add_explicit(&count_vals[i], 1, memory_order_relaxed);
    if (n < gmt_hot.meminfo.first)
        return true;
    return gmt_hot.meminfo.every && (n - gmt_hot.meminfo.first + 1) % gmt_hot.meminfo.every == 0;
}

static uint64_t meminfo_key(uint64_t comm, unsigned op, uint64_t bytes)
{
    return gmt_mix(gmt_mix(comm) ^ ((uint64_t)op << 56) ^ gmt_mix(bytes + 0x9e3779b97f4a7c15ull));
}


void gmt_sample(uint32_t scope_id, int device, enum gmt_meminfo_phase phase)
{
    uint64_t f, t;
    int saved_errno = errno; /* the driver's calls may set it */
    gmt_ts.guard.in_lib++;
    int rc = gmt_driver_meminfo(device, &f, &t);
    gmt_ts.guard.in_lib--;
    errno = saved_errno;
    if (rc)
        return;
    struct gmt_rec_meminfo r = {
        .h = {.type = GMT_REC_MEMINFO, .aux = (uint16_t)phase,
              .size = gmt_rec_padded(sizeof r)},
        .scope_id = scope_id,
        .device = device,
        .free_bytes = f,
        .total_bytes = t,
    };
    gmt_emit(&r, offsetof(struct gmt_rec_meminfo, dt));
}


void gmt_sample_fork_child(void)
{
    if (atomic_load_explicit(&gmt_hot.meminfo.kind, memory_order_relaxed) == GMT_POLICY_UNPARSED)
        atomic_store_explicit(&parsing, 0, memory_order_relaxed);
}
