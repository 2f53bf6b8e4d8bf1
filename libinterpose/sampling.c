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
    int e = gmt_lib_enter(); /* the driver's calls may set errno */
    int rc = gmt_driver_meminfo(device, &f, &t);
    gmt_lib_leave(e);
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


