/* gen_trace.c: writes a large synthetic .gmt trace (repeating stacks, NCCL scopes, a proxy thread, frees) for the CLI's throughput benchmark. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace_format.h"

/*
 * Records are laid out as the library's writer lays them out (trace_format.h): PROCESS,
 * the module map, then per-thread CHUNKs of about 64 KiB (the default flush size), each
 * starting with CHUNK and a thread's records. Allocation events come in the shape a
 * training job makes: a live set that grows to a few thousand buffers and churns, about
 * one allocation in eight inside an all_reduce scope, NCCL's proxy thread allocating
 * buffers with cuMemCreate/cuMemMap in the first scopes. Stacks repeat: NSTACKS distinct
 * stacks of depth 20, each defined once before its first use.
 */

#define NSTACKS 512
#define DEPTH 20
#define LIVE_MAX 4096
#define CHUNK_BYTES 65536
#define T0 1000000000000ull

static FILE *out;
static unsigned char chunk[CHUNK_BYTES + 4096];
static size_t chunk_len;
static uint32_t chunk_tid;
static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t events;
static uint64_t records; /* everything after the header, CHUNKs included */

static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void put(const void *p, size_t n)
{
    if (fwrite(p, 1, n, out) != n) {
        perror("gen_trace: write");
        exit(1);
    }
}

static void flush_chunk(void)
{
    if (!chunk_len)
        return;
    struct gmt_rec_chunk c = {.h = {GMT_REC_CHUNK, 0, sizeof c}, .tid = chunk_tid};
    put(&c, sizeof c);
    records++;
    put(chunk, chunk_len);
    chunk_len = 0;
}

/* Appends a record of thread `tid` (its h.size already set and padded). */
static void rec(uint32_t tid, const void *r)
{
    uint32_t size = ((const struct gmt_rec *)r)->size;
    if (tid != chunk_tid || chunk_len + size > CHUNK_BYTES) {
        flush_chunk();
        chunk_tid = tid;
    }
    memcpy(chunk + chunk_len, r, size);
    chunk_len += size;
    records++;
}

/* Records outside any chunk: the file's preamble. */
static void rec_var(uint16_t type, void *fixed, size_t fsize, const void *var, size_t vlen)
{
    static const unsigned char zero[8];
    struct gmt_rec *h = fixed;
    h->type = type;
    h->size = gmt_rec_padded((uint32_t)(fsize + vlen));
    put(fixed, fsize);
    put(var, vlen);
    put(zero, h->size - fsize - vlen);
    records++;
}

static void module(uint32_t id, const char *path, uint64_t start, uint64_t end)
{
    struct gmt_rec_module_load m = {.time_ns = T0, .module_id = id, .load_bias = start,
                                    .start = start, .end = end,
                                    .path_len = (uint32_t)strlen(path) + 1};
    rec_var(GMT_REC_MODULE_LOAD, &m, sizeof m, path, strlen(path) + 1);
}

struct thread {
    uint32_t tid;
    const char *name;
    int started;
};

static void thread_start(struct thread *t, uint64_t now)
{
    struct gmt_rec_thread r = {.h = {GMT_REC_THREAD, 0, sizeof r}, .time_ns = now, .tid = t->tid};
    strncpy(r.name, t->name, sizeof r.name - 1);
    rec(t->tid, &r);
    t->started = 1;
}

static uint64_t stack_ip(uint32_t stack, int frame)
{
    /* Innermost frames vary per stack, outer frames are shared, as real call paths are. */
    if (frame < 4)
        return 0x7f1000000000ull + (uint64_t)stack * 64 + (uint64_t)frame * 8;
    return 0x7f2000000000ull + (uint64_t)(frame * 131 + (int)(stack % 7)) * 16;
}

static uint8_t stack_defined[NSTACKS + 1];

static uint32_t use_stack(uint32_t tid, uint32_t id)
{
    if (!stack_defined[id]) {
        struct {
            struct gmt_rec_stack s;
            uint64_t ip[DEPTH];
        } r = {.s = {.h = {GMT_REC_STACK, 0, sizeof r}, .stack_id = id, .depth = DEPTH}};
        for (int f = 0; f < DEPTH; f++)
            r.ip[f] = stack_ip(id, f);
        rec(tid, &r);
        stack_defined[id] = 1;
    }
    return id;
}

static uint64_t live_addr[LIVE_MAX];
static uint64_t live_n;
static uint64_t next_addr = 0x7e0000000000ull;

static void alloc_event(uint32_t tid, uint32_t scope)
{
    uint64_t bytes = (uint64_t)512 << (next_rand() % 16);
    struct gmt_rec_alloc a = {.h = {GMT_REC_ALLOC, GMT_API_cuMemAlloc, sizeof a},
                              .address = next_addr, .bytes = bytes, .dt = 300,
                              .scope_id = scope, .kind = GMT_KIND_DEVICE, .device = -1};
    a.stack_id = use_stack(tid, 1 + (uint32_t)(next_rand() % NSTACKS));
    next_addr += (bytes + 0xfff) & ~0xfffull;
    live_addr[live_n++] = a.address;
    if (scope) {
        rec(tid, &a);
    } else { /* as the library writes an allocation outside NCCL calls */
        struct gmt_rec_alloc_small s = {
            .h = {GMT_REC_ALLOC_SMALL, GMT_SMALL_AUX(GMT_API_cuMemAlloc, GMT_KIND_DEVICE, 0),
                  sizeof s},
            .address = a.address, .bytes = a.bytes, .dt = a.dt, .stack_id = a.stack_id};
        rec(tid, &s);
    }
    events++;
}

static void free_event(uint32_t tid, uint32_t scope)
{
    uint64_t i = next_rand() % live_n;
    struct gmt_rec_free f = {.h = {GMT_REC_FREE, GMT_API_cuMemFree, sizeof f},
                             .address = live_addr[i], .dt = 250, .scope_id = scope};
    live_addr[i] = live_addr[--live_n];
    rec(tid, &f);
    events++;
}

int main(int argc, char **argv)
{
    if (argc != 3 && argc != 5) {
        fprintf(stderr, "usage: gen_trace EVENTS OUT.gmt [RANK WORLD_SIZE]\n");
        return 2;
    }
    uint64_t want = strtoull(argv[1], NULL, 10);
    int32_t rank = argc == 5 ? (int32_t)atoi(argv[3]) : 0;
    int32_t world = argc == 5 ? (int32_t)atoi(argv[4]) : 2;
    out = fopen(argv[2], "wb");
    if (!out) {
        perror(argv[2]);
        return 1;
    }
    static char iobuf[1 << 20];
    setvbuf(out, iobuf, _IOFBF, sizeof iobuf);

    struct gmt_file_header fh = {.byte_order = GMT_BYTE_ORDER_MARK,
                                 .version_major = GMT_VERSION_MAJOR,
                                 .version_minor = GMT_VERSION_MINOR,
                                 .header_size = sizeof fh};
    memcpy(fh.magic, GMT_MAGIC, 8);
    put(&fh, sizeof fh);
    static const char var[] = "gen-host\0train.py\0--synthetic";
    struct gmt_rec_process p = {.pid = 1000 + (uint32_t)rank, .ppid = 1, .rank = rank,
                                .local_rank = rank % 8, .world_size = world, .local_world_size = 8,
                                .realtime_ns = 1767225600000000000ull, .monotonic_ns = T0,
                                .host_len = 9, .cmdline_len = sizeof var - 9};
    rec_var(GMT_REC_PROCESS, &p, sizeof p, var, sizeof var);
    /* Paths that exist nowhere: the symbolizer falls back to module+offset at once. */
    module(1, "/nonexistent/gen/libc10_cuda.so", 0x7f1000000000ull, 0x7f1000400000ull);
    module(2, "/nonexistent/gen/libtorch_python.so", 0x7f2000000000ull, 0x7f2000800000ull);
    module(3, "/nonexistent/gen/libnccl.so.2", 0x7f3000000000ull, 0x7f3000800000ull);

    struct thread main_t = {1000, "python3", 0}, proxy = {1001, "NCCL Service 0", 0};
    uint64_t now = T0 + 1000;
    thread_start(&main_t, now);
    struct gmt_rec_version v = {.h = {GMT_REC_VERSION, GMT_COMP_DRIVER, sizeof v}, .version = 13000};
    rec(main_t.tid, &v);
    struct gmt_rec_cuctx cx = {.h = {GMT_REC_CUCTX, 0, sizeof cx}, .context = 0x55550000aaaaull};
    rec(main_t.tid, &cx);
    const uint64_t comm = 0x5555deadbeefull;
    struct gmt_rec_comm cm = {.h = {GMT_REC_COMM, 0, sizeof cm}, .comm = comm, .unique_id_hash = 42,
                              .rank = 0, .nranks = 2, .device = 0, .dt = 100};
    rec(main_t.tid, &cm);

    uint32_t scope_id = 0, open = 0;
    uint64_t handle = 0x1000;
    while (events < want) {
        uint64_t r = next_rand();
        if (!open && r % 8 == 0) {
            /* An all_reduce scope, with memory sampled around the first ones. */
            open = ++scope_id;
            struct gmt_rec_scope_begin sb = {.h = {GMT_REC_SCOPE_BEGIN, GMT_OP_AllReduce, sizeof sb},
                                             .dt = 200, .scope_id = open, .comm = comm,
                                             .count = 1u << 20, .stream = 0x99, .datatype = 7,
                                             .peer = -1};
            sb.stack_id = scope_id <= 2 ? use_stack(main_t.tid, 1) : 0;
            rec(main_t.tid, &sb);
            if (scope_id <= 2) {
                struct gmt_rec_meminfo mi = {.h = {GMT_REC_MEMINFO, GMT_MEMINFO_BEGIN, sizeof mi},
                                             .dt = 50, .scope_id = open,
                                             .free_bytes = 100ull << 30,
                                             .total_bytes = 140ull << 30};
                rec(main_t.tid, &mi);
            }
            if (scope_id <= 4) {
                /* NCCL's proxy thread allocates the first collectives' buffers. */
                if (!proxy.started)
                    thread_start(&proxy, now);
                struct gmt_rec_alloc_ext c = {.a = {.h = {GMT_REC_ALLOC, GMT_API_cuMemCreate, sizeof c},
                                                    .address = handle, .bytes = 10u << 20,
                                                    .dt = 400, .scope_id = open,
                                                    .kind = GMT_KIND_PHYSICAL, .device = 0}};
                c.a.stack_id = use_stack(proxy.tid, NSTACKS);
                rec(proxy.tid, &c);
                struct gmt_rec_alloc_ext m = c;
                m.a.h.aux = GMT_API_cuMemMap;
                m.a.address = 0x7d0000000000ull + handle * 0x1000000ull;
                m.a.kind = GMT_KIND_MAPPING;
                m.a.device = -1;
                m.related = handle++;
                rec(proxy.tid, &m);
                events += 2;
            }
        }
        if (live_n == LIVE_MAX || (live_n > LIVE_MAX / 2 && r % 2))
            free_event(main_t.tid, open);
        else
            alloc_event(main_t.tid, open);
        now += 300;
        if (open && (r >> 8) % 4 == 0) {
            struct gmt_rec_scope_end se = {.h = {GMT_REC_SCOPE_END, GMT_OP_AllReduce, sizeof se},
                                           .dt = 100, .scope_id = open};
            rec(main_t.tid, &se);
            open = 0;
        }
    }
    flush_chunk();
    struct gmt_rec_end e = {.h = {GMT_REC_END, 0, sizeof e}, .time_ns = now};
    put(&e, sizeof e);
    records++;
    if (fclose(out) != 0) {
        perror("gen_trace: close");
        return 1;
    }
    /* One line for run.sh: allocation events, then all records. */
    printf("%llu %llu\n", (unsigned long long)events, (unsigned long long)records);
    return 0;
}
