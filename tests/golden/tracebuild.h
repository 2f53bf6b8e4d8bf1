/* tracebuild.h: a tiny test-only .gmt builder (not the library's writer), for reader tests, golden and fuzz seeds. */
#ifndef GMT_TRACEBUILD_H
#define GMT_TRACEBUILD_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_format.h"

#define TB_MAX_RECS 256

struct tb {
    uint8_t *p;
    size_t len, cap;
    size_t off[TB_MAX_RECS];   /* offset of each record, in order */
    size_t nrec;
};

static inline void tb_put(struct tb *b, const void *data, size_t n)
{
    if (b->len + n > b->cap) {
        size_t ncap = b->cap ? b->cap : 1024;
        while (ncap < b->len + n)
            ncap *= 2;
        uint8_t *np = realloc(b->p, ncap);
        if (!np)
            abort();
        b->p = np;
        b->cap = ncap;
    }
    if (data)
        memcpy(b->p + b->len, data, n);
    else
        memset(b->p + b->len, 0, n);
    b->len += n;
}

static inline void tb_free(struct tb *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

/* A header as the writer makes it; the arguments let tests break it. */
static inline void tb_header_ex(struct tb *b, uint32_t byte_order, uint16_t major, uint16_t minor,
                         uint32_t header_size)
{
    struct gmt_file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, GMT_MAGIC, 8);
    h.byte_order = byte_order;
    h.version_major = major;
    h.version_minor = minor;
    h.header_size = header_size;
    tb_put(b, &h, sizeof h);
    if (header_size > sizeof h)
        tb_put(b, NULL, header_size - sizeof h);
}

/* A 1.0 header: the sample holds no type of 2.0, so the stored traces and seeds made
 * from it stay what a 1.0 writer wrote (readers of 2.x read them as they are). */
static inline void tb_header(struct tb *b)
{
    tb_header_ex(b, GMT_BYTE_ORDER_MARK, 1, 0, sizeof(struct gmt_file_header));
}

/* A header of the current version, for traces that use its types (ALLOC_SMALL). */
static inline void tb_header_current(struct tb *b)
{
    tb_header_ex(b, GMT_BYTE_ORDER_MARK, GMT_VERSION_MAJOR, GMT_VERSION_MINOR,
                 sizeof(struct gmt_file_header));
}

/* Appends a record: `fixed` (fsize bytes, its gmt_rec filled in here), then `var`
 * (vlen bytes), then zero padding to GMT_ALIGN. Returns the record's offset. */
static inline size_t tb_rec(struct tb *b, uint16_t type, uint16_t aux, void *fixed, size_t fsize,
                     const void *var, size_t vlen)
{
    struct gmt_rec *h = fixed;
    size_t at = b->len;
    h->type = type;
    h->aux = aux;
    h->size = gmt_rec_padded((uint32_t)(fsize + vlen));
    tb_put(b, fixed, fsize);
    if (vlen)
        tb_put(b, var, vlen);
    tb_put(b, NULL, h->size - fsize - vlen);
    if (b->nrec < TB_MAX_RECS)
        b->off[b->nrec++] = at;
    return at;
}

static inline int tb_write(const struct tb *b, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t n = fwrite(b->p, 1, b->len, f);
    return (fclose(f) == 0 && n == b->len) ? 0 : -1;
}

/* The sample: a small two-rank-like process with every record type, two threads
 * (main and an NCCL proxy thread), a cuMem mapping, a collective, and END. Times are
 * fixed so output derived from it is byte-for-byte stable. */
#define TB_T0 5000000000ull /* PROCESS monotonic anchor, ns */

static inline void tb_sample(struct tb *b)
{
    tb_header(b);
    {
        static const char host[] = "node-01";
        static const char cmd[] = "python3\0train.py\0--lr=0.1\n\"x\"";
        char var[sizeof host + sizeof cmd];
        memcpy(var, host, sizeof host);
        memcpy(var + sizeof host, cmd, sizeof cmd);
        struct gmt_rec_process r = { .pid = 4242, .ppid = 4200, .rank = 1, .local_rank = 1,
            .world_size = 2, .local_world_size = 2, .realtime_ns = 1767225600123456789ull,
            .monotonic_ns = TB_T0, .host_len = sizeof host, .cmdline_len = sizeof cmd };
        tb_rec(b, GMT_REC_PROCESS, 0, &r, sizeof r, var, sizeof var);
    }
    {
        static const char env[] = "NCCL_BUFFSIZE=4194304\0PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True";
        struct gmt_rec_env r = { .count = 2, .bytes = sizeof env };
        tb_rec(b, GMT_REC_ENV, 0, &r, sizeof r, env, sizeof env);
    }
    {
        static const uint8_t bid[] = { 0xde, 0xad, 0xbe, 0xef, 0x01, 0x02, 0x03, 0x04 };
        static const char path[] = "/usr/lib/libnccl.so.2";
        uint8_t var[sizeof bid + sizeof path];
        memcpy(var, bid, sizeof bid);
        memcpy(var + sizeof bid, path, sizeof path);
        struct gmt_rec_module_load r = { .time_ns = TB_T0 + 1000, .module_id = 1,
            .build_id_len = sizeof bid, .load_bias = 0x7f0000000000ull,
            .start = 0x7f0000000000ull, .end = 0x7f0000400000ull, .path_len = sizeof path };
        tb_rec(b, GMT_REC_MODULE_LOAD, 0, &r, sizeof r, var, sizeof var);
    }
    {
        struct gmt_rec_chunk r = { .tid = 4242 };
        tb_rec(b, GMT_REC_CHUNK, 0, &r, sizeof r, NULL, 0);
    }
    {
        struct gmt_rec_thread r = { .time_ns = TB_T0 + 2000, .tid = 4242, .name = "python3" };
        tb_rec(b, GMT_REC_THREAD, 0, &r, sizeof r, NULL, 0);
    }
    {
        struct gmt_rec_version r = { .version = 13000 };
        tb_rec(b, GMT_REC_VERSION, GMT_COMP_DRIVER, &r, sizeof r, NULL, 0);
        struct gmt_rec_version n = { .version = 22809 };
        tb_rec(b, GMT_REC_VERSION, GMT_COMP_NCCL, &n, sizeof n, NULL, 0);
    }
    {
        static const uint64_t ip[] = { 0x7f0000001234ull, 0x7f0000005678ull, 0x401000ull };
        struct gmt_rec_stack r = { .stack_id = 1, .depth = 3 };
        tb_rec(b, GMT_REC_STACK, 0, &r, sizeof r, ip, sizeof ip);
    }
    {
        struct gmt_rec_cuctx r = { .context = 0x55550000aaaaull, .device = 1 };
        tb_rec(b, GMT_REC_CUCTX, 0, &r, sizeof r, NULL, 0);
    }
    {
        struct gmt_rec_alloc r = { .address = 0x7e0000000000ull, .bytes = 64ull << 20,
            .dt = 500, .stack_id = 1, .kind = GMT_KIND_DEVICE, .device = -1 };
        tb_rec(b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &r, sizeof r, NULL, 0);
    }
    {
        struct gmt_rec_comm r = { .comm = 0x5555deadbeefull, .unique_id_hash = 0x1234abcdull,
            .rank = 1, .nranks = 2, .device = 1, .dt = 1000 };
        tb_rec(b, GMT_REC_COMM, 0, &r, sizeof r, NULL, 0);
    }
    {
        struct gmt_rec_scope_begin r = { .dt = 250, .scope_id = 1, .stack_id = 1,
            .comm = 0x5555deadbeefull, .count = 67108864, .stream = 0x99, .datatype = 7,
            .peer = -1 };
        tb_rec(b, GMT_REC_SCOPE_BEGIN, GMT_OP_AllReduce, &r, sizeof r, NULL, 0);
    }
    {
        struct gmt_rec_meminfo r = { .dt = 100, .scope_id = 1, .device = 1,
            .free_bytes = 140ull << 30, .total_bytes = 143ull << 30 };
        tb_rec(b, GMT_REC_MEMINFO, GMT_MEMINFO_BEGIN, &r, sizeof r, NULL, 0);
    }
    {
        struct gmt_rec_chunk r = { .tid = 4250 };
        tb_rec(b, GMT_REC_CHUNK, 0, &r, sizeof r, NULL, 0);
        struct gmt_rec_thread t = { .time_ns = TB_T0 + 10000, .tid = 4250,
                                    .name = "NCCL Service 1" };
        tb_rec(b, GMT_REC_THREAD, 0, &t, sizeof t, NULL, 0);
        struct gmt_rec_alloc_ext a = { .a = { .address = 0x1001, .bytes = 10ull << 20,
            .dt = 20, .kind = GMT_KIND_PHYSICAL, .device = 1 } };
        tb_rec(b, GMT_REC_ALLOC, GMT_API_cuMemCreate, &a, sizeof a, NULL, 0);
        struct gmt_rec_alloc_ext v = { .a = { .address = 0x7d0000000000ull,
            .bytes = 10ull << 20, .dt = 30, .kind = GMT_KIND_VIRTUAL, .device = -1 } };
        tb_rec(b, GMT_REC_ALLOC, GMT_API_cuMemAddressReserve, &v, sizeof v, NULL, 0);
        struct gmt_rec_alloc_ext m = { .a = { .address = 0x7d0000000000ull,
            .bytes = 10ull << 20, .dt = 40, .kind = GMT_KIND_MAPPING, .device = -1 },
            .related = 0x1001, .offset = 0 };
        tb_rec(b, GMT_REC_ALLOC, GMT_API_cuMemMap, &m, sizeof m, NULL, 0);
        struct gmt_rec_alloc_fail f = { .bytes = 1ull << 40, .error = 2, .dt = 50,
            .kind = GMT_KIND_PHYSICAL, .device = 1 };
        tb_rec(b, GMT_REC_ALLOC_FAIL, GMT_API_cuMemCreate, &f, sizeof f, NULL, 0);
    }
    {
        struct gmt_rec_chunk r = { .tid = 4242 };
        tb_rec(b, GMT_REC_CHUNK, 0, &r, sizeof r, NULL, 0);
        /* A gap too long for dt: TIME resets the clock. */
        struct gmt_rec_time t = { .time_ns = TB_T0 + 7000000000ull };
        tb_rec(b, GMT_REC_TIME, 0, &t, sizeof t, NULL, 0);
        struct gmt_rec_meminfo mi = { .dt = 5, .scope_id = 1, .device = 1,
            .free_bytes = (140ull << 30) - (474ull << 20), .total_bytes = 143ull << 30 };
        tb_rec(b, GMT_REC_MEMINFO, GMT_MEMINFO_END, &mi, sizeof mi, NULL, 0);
        struct gmt_rec_scope_end e = { .dt = 10, .scope_id = 1, .result = 0 };
        tb_rec(b, GMT_REC_SCOPE_END, GMT_OP_AllReduce, &e, sizeof e, NULL, 0);
        struct gmt_rec_free fr = { .address = 0x7e0000000000ull, .dt = 1000 };
        tb_rec(b, GMT_REC_FREE, GMT_API_cudaFree, &fr, sizeof fr, NULL, 0);
        struct gmt_rec_free_ext fx = { .f = { .address = 0x7d0000000000ull, .dt = 7 },
            .stream = 0, .stack_id = 1, .result = 0 };
        tb_rec(b, GMT_REC_FREE, GMT_API_cuMemUnmap, &fx, sizeof fx, NULL, 0);
        struct gmt_rec_module_unload u = { .time_ns = TB_T0 + 8000000000ull, .module_id = 1 };
        tb_rec(b, GMT_REC_MODULE_UNLOAD, 0, &u, sizeof u, NULL, 0);
        struct gmt_rec_end end = { .time_ns = TB_T0 + 8000000500ull, .records_dropped = 0 };
        tb_rec(b, GMT_REC_END, 0, &end, sizeof end, NULL, 0);
    }
}

/* One allocation as a 1.0 writer writes it (ALLOC, scope 0, device -1: the thread's
 * context), or as the equivalent 2.0 ALLOC_SMALL when `small`. */
static inline void tb_alloc_or_small(struct tb *b, int small, uint16_t api, uint8_t kind,
                                     uint8_t flags, uint64_t address, uint64_t bytes,
                                     uint32_t dt, uint32_t stack_id)
{
    if (small) {
        struct gmt_rec_alloc_small r = { .address = address, .bytes = bytes, .dt = dt,
            .stack_id = stack_id };
        tb_rec(b, GMT_REC_ALLOC_SMALL, GMT_SMALL_AUX(api, kind, flags), &r, sizeof r, NULL, 0);
    } else {
        struct gmt_rec_alloc r = { .address = address, .bytes = bytes, .dt = dt,
            .stack_id = stack_id, .scope_id = 0, .kind = kind, .flags = flags, .device = -1 };
        tb_rec(b, GMT_REC_ALLOC, api, &r, sizeof r, NULL, 0);
    }
}

/* A 2.0 trace of two threads on two devices allocating and freeing device, pinned host
 * and virtual memory, with ALLOC records, or with the equivalent ALLOC_SMALLs when
 * `small`; an ALLOC with a device of its own stays an ALLOC in both. Whatever a reader
 * derives from the two must be the same. */
static inline void tb_allocs(struct tb *b, int small)
{
    tb_header_current(b);
    {
        static const char host[] = "node-02";
        static const char cmd[] = "python3\0small.py";
        char var[sizeof host + sizeof cmd];
        memcpy(var, host, sizeof host);
        memcpy(var + sizeof host, cmd, sizeof cmd);
        struct gmt_rec_process r = { .pid = 77, .ppid = 1, .rank = -1, .local_rank = -1,
            .world_size = -1, .local_world_size = -1, .realtime_ns = 1767225600000000000ull,
            .monotonic_ns = TB_T0, .host_len = sizeof host, .cmdline_len = sizeof cmd };
        tb_rec(b, GMT_REC_PROCESS, 0, &r, sizeof r, var, sizeof var);
    }
    {
        static const char path[] = "/opt/app/libtrain.so";
        struct gmt_rec_module_load r = { .time_ns = TB_T0 + 10, .module_id = 1,
            .load_bias = 0x7f0000000000ull, .start = 0x7f0000000000ull,
            .end = 0x7f0000100000ull, .path_len = sizeof path };
        tb_rec(b, GMT_REC_MODULE_LOAD, 0, &r, sizeof r, path, sizeof path);
    }
    for (uint32_t id = 1; id <= 2; id++) {
        uint64_t ip[2] = { 0x7f0000001000ull + id * 0x100, 0x7f0000002000ull };
        struct gmt_rec_stack r = { .stack_id = id, .depth = 2 };
        tb_rec(b, GMT_REC_STACK, 0, &r, sizeof r, ip, sizeof ip);
    }
    struct gmt_rec_chunk c1 = { .tid = 100 };
    tb_rec(b, GMT_REC_CHUNK, 0, &c1, sizeof c1, NULL, 0);
    struct gmt_rec_thread t1 = { .time_ns = TB_T0 + 1000, .tid = 100, .name = "main" };
    tb_rec(b, GMT_REC_THREAD, 0, &t1, sizeof t1, NULL, 0);
    struct gmt_rec_cuctx x1 = { .context = 0xc1, .device = 1 };
    tb_rec(b, GMT_REC_CUCTX, 0, &x1, sizeof x1, NULL, 0);
    tb_alloc_or_small(b, small, GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0, 0x7e0000000000ull,
                      256ull << 20, 500, 1);
    tb_alloc_or_small(b, small, GMT_API_cudaMallocPitch, GMT_KIND_DEVICE, GMT_ALLOC_PITCHED,
                      0x7e0010000000ull, 3ull << 20, 250, 2);
    tb_alloc_or_small(b, small, GMT_API_cudaHostAlloc, GMT_KIND_HOST_PINNED, 0,
                      0x600000000000ull, 1ull << 20, 100, 1);
    tb_alloc_or_small(b, small, GMT_API_cuMemAddressReserve, GMT_KIND_VIRTUAL, 0,
                      0x7d0000000000ull, 1ull << 30, 60, 0);
    {   /* a device of its own: no ALLOC_SMALL can say that */
        struct gmt_rec_alloc r = { .address = 0x7e0020000000ull, .bytes = 8ull << 20,
            .dt = 40, .stack_id = 2, .kind = GMT_KIND_DEVICE, .device = 0 };
        tb_rec(b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &r, sizeof r, NULL, 0);
    }
    struct gmt_rec_chunk c2 = { .tid = 101 };
    tb_rec(b, GMT_REC_CHUNK, 0, &c2, sizeof c2, NULL, 0);
    struct gmt_rec_thread t2 = { .time_ns = TB_T0 + 5000, .tid = 101, .name = "worker" };
    tb_rec(b, GMT_REC_THREAD, 0, &t2, sizeof t2, NULL, 0);
    struct gmt_rec_cuctx x2 = { .context = 0xc0, .device = 0 };
    tb_rec(b, GMT_REC_CUCTX, 0, &x2, sizeof x2, NULL, 0);
    tb_alloc_or_small(b, small, GMT_API_cuMemAlloc, GMT_KIND_DEVICE, 0, 0x7e0030000000ull,
                      512ull << 20, 30, 2);
    tb_alloc_or_small(b, small, GMT_API_cuMemAllocManaged, GMT_KIND_MANAGED, 0,
                      0x7e0050000000ull, 5ull << 20, 2000, 1);
    struct gmt_rec_free f1 = { .address = 0x7e0030000000ull, .dt = 700 };
    tb_rec(b, GMT_REC_FREE, GMT_API_cuMemFree, &f1, sizeof f1, NULL, 0);
    tb_rec(b, GMT_REC_CHUNK, 0, &c1, sizeof c1, NULL, 0);
    struct gmt_rec_free f2 = { .address = 0x7e0000000000ull, .dt = 900 };
    tb_rec(b, GMT_REC_FREE, GMT_API_cudaFree, &f2, sizeof f2, NULL, 0);
    tb_alloc_or_small(b, small, GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0, 0x7e0000000000ull,
                      128ull << 20, 10, 1);
    struct gmt_rec_end end = { .time_ns = TB_T0 + 9000 };
    tb_rec(b, GMT_REC_END, 0, &end, sizeof end, NULL, 0);
}

/* ---- repeated groups (2.1) ---- */
static inline void tb_chunk(struct tb *b, uint32_t tid)
{
    struct gmt_rec_chunk c = { .tid = tid };
    tb_rec(b, GMT_REC_CHUNK, 0, &c, sizeof c, NULL, 0);
}

static inline void tb_thread_at(struct tb *b, uint32_t tid, uint64_t t)
{
    struct gmt_rec_thread th = { .time_ns = t, .tid = tid };
    tb_rec(b, GMT_REC_THREAD, 0, &th, sizeof th, NULL, 0);
}

static inline void tb_scope_begin(struct tb *b, unsigned op, uint32_t id, uint32_t parent,
                                  uint64_t comm, uint64_t count, uint32_t dt)
{
    struct gmt_rec_scope_begin r = { .dt = dt, .scope_id = id, .parent_id = parent,
                                     .stack_id = parent ? 0 : 3, .comm = comm, .count = count,
                                     .stream = 0x77, .datatype = 7, .peer = -1 };
    tb_rec(b, GMT_REC_SCOPE_BEGIN, (uint16_t)op, &r, sizeof r, NULL, 0);
}

static inline void tb_scope_end(struct tb *b, unsigned op, uint32_t id, int result,
                                uint32_t dt)
{
    struct gmt_rec_scope_end r = { .dt = dt, .scope_id = id, .result = result };
    tb_rec(b, GMT_REC_SCOPE_END, (uint16_t)op, &r, sizeof r, NULL, 0);
}

static inline void tb_group_repeat(struct tb *b, uint32_t id, uint32_t count, uint32_t like)
{
    struct gmt_rec_group_repeat r = { .scope_id = id, .count = count, .like = like };
    tb_rec(b, GMT_REC_GROUP_REPEAT, 0, &r, sizeof r, NULL, 0);
}

/* One thread: group 10 with members 11 (comm 0xa) and 12 (comm 0xb, result 3), groups 13
 * and 16 repeating it (16 by way of 13), then GROUP_REPEATs that cannot stand: `like`
 * unknown (19), a count that differs (22), after a THREAD record (25, naming 16), and
 * outside a group. */
static inline void tb_repeats(struct tb *b)
{
    /* 2.1, the version that added GROUP_REPEAT: the stored seed made from it stays as it was */
    tb_header_ex(b, GMT_BYTE_ORDER_MARK, 2, 1, sizeof(struct gmt_file_header));
    struct gmt_rec_process p = { .pid = 1, .ppid = 1, .rank = -1, .monotonic_ns = TB_T0 };
    tb_rec(b, GMT_REC_PROCESS, 0, &p, sizeof p, NULL, 0);
    tb_chunk(b, 7);
    tb_thread_at(b, 7, TB_T0 + 100);
    tb_scope_begin(b, GMT_OP_Group, 10, 0, 0, 0, 10);
    tb_scope_begin(b, GMT_OP_AllReduce, 11, 10, 0xa, 256, 5);
    tb_scope_end(b, GMT_OP_AllReduce, 11, 0, 5);
    tb_scope_begin(b, GMT_OP_AllReduce, 12, 10, 0xb, 128, 0);
    tb_scope_end(b, GMT_OP_AllReduce, 12, 3, 0);
    tb_scope_end(b, GMT_OP_Group, 10, 0, 100);
    tb_scope_begin(b, GMT_OP_Group, 13, 0, 0, 0, 1000);
    tb_group_repeat(b, 13, 2, 10);
    tb_scope_end(b, GMT_OP_Group, 13, 0, 100);
    tb_chunk(b, 8); /* another thread in between: its records change nothing of thread 7's */
    tb_thread_at(b, 8, TB_T0 + 1500);
    tb_scope_begin(b, GMT_OP_Group, 50, 0, 0, 0, 10);
    tb_scope_end(b, GMT_OP_Group, 50, 0, 10);
    tb_chunk(b, 7);
    tb_scope_begin(b, GMT_OP_Group, 16, 0, 0, 0, 1000);
    tb_group_repeat(b, 16, 2, 13);
    tb_scope_end(b, GMT_OP_Group, 16, 0, 100);
    tb_scope_begin(b, GMT_OP_Group, 19, 0, 0, 0, 1000);
    tb_group_repeat(b, 19, 2, 99);
    tb_scope_end(b, GMT_OP_Group, 19, 0, 100);
    tb_scope_begin(b, GMT_OP_Group, 22, 0, 0, 0, 1000);
    tb_group_repeat(b, 22, 3, 16);
    tb_scope_end(b, GMT_OP_Group, 22, 0, 100);
    tb_thread_at(b, 7, TB_T0 + 9000);
    tb_scope_begin(b, GMT_OP_Group, 25, 0, 0, 0, 10);
    tb_group_repeat(b, 25, 2, 16);
    tb_scope_end(b, GMT_OP_Group, 25, 0, 100);
    tb_group_repeat(b, 28, 2, 16);
    struct gmt_rec_end e = { .time_ns = TB_T0 + 10000, .records_dropped = 5 };
    tb_rec(b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
}

/* ---- (2.3) what the device said: samples, graph memory, failures, open calls ---- */
#define TB_MIB (1ull << 20)
#define TB_GIB (1ull << 30)

static inline void tb_alloc_at(struct tb *b, uint16_t api, uint8_t kind, uint8_t flags, uint64_t addr,
                     uint64_t bytes, uint32_t scope, int16_t device, uint32_t dt)
{
    struct gmt_rec_alloc r = { .address = addr, .bytes = bytes, .dt = dt, .stack_id = 0,
                               .scope_id = scope, .kind = kind, .flags = flags, .device = device };
    tb_rec(b, GMT_REC_ALLOC, api, &r, sizeof r, NULL, 0);
}

static inline void tb_meminfo(struct tb *b, unsigned phase, unsigned source, uint64_t used,
                       uint64_t process, uint32_t dt)
{
    struct gmt_rec_meminfo_ext r = { .m = { .dt = dt, .device = 0, .source = source,
                                            .free_bytes = 141 * TB_GIB - used, .total_bytes = 141 * TB_GIB },
                                     .process_bytes = process };
    tb_rec(b, GMT_REC_MEMINFO, (uint16_t)phase, &r, sizeof r, NULL, 0);
}

/* A 2.3 trace's start: header and a PROCESS of pid 9 (no rank). */
static inline void tb_process_min(struct tb *b)
{
    tb_header_current(b);
    struct gmt_rec_process p = { .pid = 9, .ppid = 1, .rank = -1, .local_rank = -1, .world_size = -1,
                                 .local_world_size = -1, .monotonic_ns = TB_T0 };
    tb_rec(b, GMT_REC_PROCESS, 0, &p, sizeof p, NULL, 0);
}

/* Thread `tid`'s first chunk at TB_T0 + t, its context on device 0. */
static inline void tb_thread_on_device0(struct tb *b, uint32_t tid, uint64_t t)
{
    tb_chunk(b, tid);
    tb_thread_at(b, tid, TB_T0 + t);
    struct gmt_rec_cuctx cx = { .context = 0xc1, .device = 0 };
    tb_rec(b, GMT_REC_CUCTX, 0, &cx, sizeof cx, NULL, 0);
}

/* One process on device 0: 64 MiB of cudaMalloc, a captured graph allocation (address
 * space) and its graph launched (32 MiB in the graph pool), a peer's 10 MiB imported, a
 * failed 200 GiB cudaMalloc with the sample after it, and an all_reduce that allocated
 * 8 MiB and never returned (no END: the process was killed). A second thread pinned
 * host memory before any context was current. */
static inline void tb_forensics(struct tb *b)
{
    tb_process_min(b);
    tb_chunk(b, 200);
    tb_thread_at(b, 200, TB_T0 + 100);
    tb_alloc_at(b, GMT_API_cuMemCreate, GMT_KIND_PHYSICAL_HOST, 0, 0x51, 2 * TB_MIB, 0, -1, 10);
    tb_thread_on_device0(b, 100, 1000);
    tb_alloc_at(b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0, 0x1000000, 64 * TB_MIB, 0, -1, 1000);
    tb_meminfo(b, GMT_MEMINFO_FIRST, GMT_MEMINFO_SRC_CUMEMGETINFO, 1 * TB_GIB, GMT_MEMINFO_UNKNOWN, 1000);
    tb_alloc_at(b, GMT_API_cudaMallocAsync, GMT_KIND_GRAPH_MEM, GMT_ALLOC_CAPTURED, 0x9000000, 32 * TB_MIB,
             0, -1, 1000);
    struct gmt_rec_graphmem g = { .time_ns = TB_T0 + 5000, .device = 0, .used_current = 32 * TB_MIB,
                                  .used_high = 32 * TB_MIB, .reserved_current = 32 * TB_MIB,
                                  .reserved_high = 32 * TB_MIB };
    tb_rec(b, GMT_REC_GRAPHMEM, GMT_GRAPHMEM_LAUNCH, &g, sizeof g, NULL, 0);
    tb_meminfo(b, GMT_MEMINFO_PERIODIC, GMT_MEMINFO_SRC_NVML, 2 * TB_GIB, 1 * TB_GIB, 3000);
    tb_alloc_at(b, GMT_API_cuMemImportFromShareableHandle, GMT_KIND_IMPORTED, 0, 0x77, 10 * TB_MIB, 0, -1,
             1000);
    /* a peer's imported handle mapped here (as NCCL maps its peers' buffers) */
    struct gmt_rec_alloc_ext mx = { .a = { .address = 0x7000000, .bytes = 4 * TB_MIB, .dt = 10,
                                           .kind = GMT_KIND_MAPPING, .device = -1 },
                                    .related = 0x77 };
    tb_rec(b, GMT_REC_ALLOC, GMT_API_cuMemMap, &mx, sizeof mx, NULL, 0);
    struct gmt_rec_alloc_fail f = { .bytes = 200 * TB_GIB, .error = 2, .dt = 1000,
                                    .kind = GMT_KIND_DEVICE, .device = -1 };
    tb_rec(b, GMT_REC_ALLOC_FAIL, GMT_API_cudaMalloc, &f, sizeof f, NULL, 0);
    tb_meminfo(b, GMT_MEMINFO_FAIL, GMT_MEMINFO_SRC_CUMEMGETINFO, 1536 * TB_MIB, GMT_MEMINFO_UNKNOWN, 100);
    struct gmt_rec_comm c = { .comm = 0xc0, .rank = 3, .nranks = 8, .device = 0, .dt = 1000 };
    tb_rec(b, GMT_REC_COMM, 0, &c, sizeof c, NULL, 0);
    tb_scope_begin(b, GMT_OP_AllReduce, 1, 0, 0xc0, 1024, 1000);
    tb_alloc_at(b, GMT_API_cuMemCreate, GMT_KIND_PHYSICAL, 0, 0x61, 8 * TB_MIB, 1, 0, 1000);
}


/* ---- (2.5) SCOPE_END's call form and SCOPE_OPEN ---- */

/* A call form: the fields `has` names from f (comm, count, stream, datatype, peer). */
/* A call form with a host-time weight (a timed one sampled at a rate). */
static inline void tb_scope_call_w(struct tb *b, unsigned op, uint32_t id, int result, uint32_t dt,
                                   uint32_t duration, uint32_t has,
                                   const struct gmt_rec_scope_begin *f, uint32_t weight)
{
    struct gmt_rec_scope_call r = { .e = { .dt = dt, .scope_id = id, .result = result,
                                           .duration = duration },
                                    .has = has, .weight = weight };
    int n = 0;
    if (has & GMT_CALL_HAS_COMM)
        r.field[n++] = f->comm;
    if (has & GMT_CALL_HAS_COUNT)
        r.field[n++] = f->count;
    if (has & GMT_CALL_HAS_STREAM)
        r.field[n++] = f->stream;
    if (has & GMT_CALL_HAS_TYPE_PEER) {
        memcpy(&r.field[n], &f->datatype, 4);
        memcpy((uint8_t *)&r.field[n] + 4, &f->peer, 4);
        n++;
    }
    tb_rec(b, GMT_REC_SCOPE_END, (uint16_t)op, &r, GMT_SCOPE_CALL_MIN + 8 * (size_t)n, NULL, 0);
}

static inline void tb_scope_call(struct tb *b, unsigned op, uint32_t id, int result, uint32_t dt,
                                 uint32_t duration, uint32_t has, const struct gmt_rec_scope_begin *f)
{
    tb_scope_call_w(b, op, id, result, dt, duration, has, f, 0);
}

static inline void tb_scope_open(struct tb *b, unsigned op, uint32_t tid, uint32_t id, uint64_t t,
                                 uint64_t comm, uint64_t count)
{
    struct gmt_rec_scope_open r = { .time_ns = t, .tid = tid, .scope_id = id, .comm = comm,
                                    .count = count, .stream = 0x77, .datatype = 7, .peer = -1 };
    tb_rec(b, GMT_REC_SCOPE_OPEN, (uint16_t)op, &r, sizeof r, NULL, 0);
}

/* Two threads' NCCL calls, each as the call form (call = 1) or as SCOPE_BEGIN and plain
 * SCOPE_END (call = 0) with what the call form stands for: the expanded image of the first
 * is the second's bytes. Thread 7: a full call form, one with only the count, one with no
 * field, one with only datatype and peer, around allocations; thread 8 in between, whose
 * own previous call is the one its fields come from. */
static inline void tb_calls(struct tb *b, int call)
{
    tb_header_current(b);
    struct gmt_rec_process p = { .pid = 1, .ppid = 1, .rank = -1, .monotonic_ns = TB_T0 };
    tb_rec(b, GMT_REC_PROCESS, 0, &p, sizeof p, NULL, 0);
    struct gmt_rec_scope_begin f7 = { .comm = 0xa, .count = 256, .stream = 0x77, .datatype = 7,
                                      .peer = -1 };
    struct gmt_rec_scope_begin f8 = { .comm = 0xb, .count = 64, .stream = 0x88, .datatype = 2,
                                      .peer = 3 };
    static const struct { uint32_t tid, id, dt, duration, has; uint64_t count; int32_t dtype, peer;
                          int result; } c[] = {
        { 7, 1, 1000, 300, GMT_CALL_HAS_ALL, 256, 7, -1, 0 },
        { 7, 2, 500, 100, GMT_CALL_HAS_COUNT, 512, 7, -1, 0 },
        { 8, 3, 40, 40, GMT_CALL_HAS_ALL, 64, 2, 3, 5 },
        { 7, 4, 10, 0, 0, 512, 7, -1, 0 },
        { 8, 5, 70, 20, 0, 64, 2, 3, 0 },
        { 7, 6, 90, 60, GMT_CALL_HAS_TYPE_PEER, 512, 3, 5, 1 },
    };
    uint32_t cur = 0;
    int seen[2] = { 0, 0 };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        struct gmt_rec_scope_begin *f = c[i].tid == 7 ? &f7 : &f8;
        if (c[i].tid != cur) {
            tb_chunk(b, c[i].tid);
            if (!seen[c[i].tid - 7]++)
                tb_thread_at(b, c[i].tid, TB_T0 + 100 * c[i].tid);
            cur = c[i].tid;
        }
        tb_alloc_at(b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0, 0x7e00000000ull + (i << 20),
                    TB_MIB, 0, -1, 25);
        f->count = c[i].count;
        f->datatype = c[i].dtype;
        f->peer = c[i].peer;
        if (call) {
            tb_scope_call(b, GMT_OP_AllReduce, c[i].id, c[i].result, c[i].dt, c[i].duration,
                          c[i].has, f);
        } else {
            struct gmt_rec_scope_begin r = *f;
            r.dt = c[i].dt - c[i].duration;
            r.scope_id = c[i].id;
            tb_rec(b, GMT_REC_SCOPE_BEGIN, GMT_OP_AllReduce, &r, sizeof r, NULL, 0);
            tb_scope_end(b, GMT_OP_AllReduce, c[i].id, c[i].result, c[i].duration);
        }
    }
    struct gmt_rec_free fr = { .address = 0x7e00000000ull, .dt = 5 };
    tb_rec(b, GMT_REC_FREE, GMT_API_cudaFree, &fr, sizeof fr, NULL, 0);
    struct gmt_rec_end e = { .time_ns = TB_T0 + 10000 };
    tb_rec(b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
}

/* Thread 7 in calls, thread 9 writing SCOPE_OPENs for them: 1 returned (call form), 2 is
 * open with its SCOPE_BEGIN in the file, 3 is open with none (named twice), and thread 8's
 * call 2 is open with none (the 2 in the file is thread 7's). */
static inline void tb_opens(struct tb *b, int end)
{
    tb_process_min(b);
    struct gmt_rec_scope_begin f = { .comm = 0xa, .count = 256, .stream = 0x77, .datatype = 7,
                                     .peer = -1 };
    tb_chunk(b, 7);
    tb_thread_at(b, 7, TB_T0 + 100);
    tb_scope_call(b, GMT_OP_AllReduce, 1, 0, 100, 50, GMT_CALL_HAS_ALL, &f);
    tb_scope_begin(b, GMT_OP_Broadcast, 2, 0, 0xa, 128, 100);
    tb_chunk(b, 9);
    tb_thread_at(b, 9, TB_T0 + 150);
    tb_scope_open(b, GMT_OP_AllReduce, 7, 1, TB_T0 + 150, 0xa, 256);
    tb_scope_open(b, GMT_OP_Broadcast, 7, 2, TB_T0 + 300, 0xa, 128);
    tb_scope_open(b, GMT_OP_AllGather, 7, 3, TB_T0 + 4000, 0xc, 64);
    tb_scope_open(b, GMT_OP_AllGather, 7, 3, TB_T0 + 4000, 0xc, 64);
    tb_scope_open(b, GMT_OP_AllGather, 8, 2, TB_T0 + 4500, 0xd, 32);
    tb_alloc_at(b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0, 0x7e0000000000ull, TB_MIB, 0, -1, 9000);
    if (end) {
        struct gmt_rec_end e = { .time_ns = TB_T0 + 9500 };
        tb_rec(b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
    }
}


/* ---- (2.6) PyTorch's blocks ---- */
static inline void tb_block(struct tb *b, unsigned op, uint64_t addr, int64_t size, uint64_t allocated,
                            uint64_t reserved, uint64_t t)
{
    struct gmt_rec_block r = { .time_ns = TB_T0 + t, .address = addr, .size = size,
                               .total_allocated = allocated, .total_reserved = reserved,
                               .device_type = 1, .device_index = 0 };
    tb_rec(b, GMT_REC_BLOCK, (uint16_t)op, &r, sizeof r, NULL, 0);
}

/* One 20 MiB segment of PyTorch's on device 0: three 6 MiB blocks, the first and the
 * third freed, then a 10 MiB request that fails (an OOM against an 8 MiB free range). */
static inline void tb_blocks(struct tb *b)
{
    tb_process_min(b);
    tb_thread_on_device0(b, 100, 1000);
    tb_alloc_at(b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0, 0x1000000, 20 * TB_MIB, 0, -1, 1000);
    for (int i = 0; i < 3; i++)
        tb_block(b, GMT_BLOCK_ALLOC, 0x1000000 + (uint64_t)i * 6 * TB_MIB, 6 * (int64_t)TB_MIB,
                 (uint64_t)(i + 1) * 6 * TB_MIB, 20 * TB_MIB, 3000 + (uint64_t)i * 100);
    tb_block(b, GMT_BLOCK_FREE, 0x1000000, -6 * (int64_t)TB_MIB, 12 * TB_MIB, 20 * TB_MIB, 4000);
    tb_block(b, GMT_BLOCK_FREE, 0x1000000 + 12 * TB_MIB, -6 * (int64_t)TB_MIB, 6 * TB_MIB, 20 * TB_MIB, 4100);
    tb_block(b, GMT_BLOCK_OOM, 0, 10 * (int64_t)TB_MIB, 6 * TB_MIB, 20 * TB_MIB, 5000);
}

/* ---- values beyond what a trace can hold (tests/fuzz/regress/summary/) ---- */

/* A process anchored at `anchor` ns, its one thread at `t` ns on device `device` (a
 * CUCTX), with a 64 MiB cudaMalloc and a sample 1 us later. Hostile values: an anchor or
 * a time past 2^63 ns, a device ordinal of 0x7fffffff. */
static inline void tb_beyond(struct tb *b, uint64_t anchor, uint64_t t, int32_t device)
{
    tb_header_current(b);
    struct gmt_rec_process p = { .pid = 9, .ppid = 1, .rank = -1, .local_rank = -1, .world_size = -1,
                                 .local_world_size = -1, .monotonic_ns = anchor };
    tb_rec(b, GMT_REC_PROCESS, 0, &p, sizeof p, NULL, 0);
    tb_chunk(b, 100);
    tb_thread_at(b, 100, t);
    struct gmt_rec_cuctx cx = { .context = 0xc1, .device = device };
    tb_rec(b, GMT_REC_CUCTX, 0, &cx, sizeof cx, NULL, 0);
    tb_alloc_at(b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0, 0x1000000, 64 * TB_MIB, 0, -1, 1000);
    tb_meminfo(b, GMT_MEMINFO_FIRST, GMT_MEMINFO_SRC_CUMEMGETINFO, 1 * TB_GIB, GMT_MEMINFO_UNKNOWN, 1000);
}

#endif
