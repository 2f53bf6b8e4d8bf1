/* test_writer.c: the trace writer, checked by reading its files back with the reader. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "gmt.h"
#include "idnames.h"
#include "modules.h"
#include "reader.h"
#include "writer_api.h"

/* The module map is modules.c's concern (test_modules): this binary links these stubs in
 * its place, so the files it writes hold exactly the records each test makes. */
void gmt_modules_write_all(void)
{
}
void gmt_modules_rescan(void)
{
}

static char dir[64];
static char path[256];

static void rm_dir(void)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[512];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        chmod(p, 0700);
        unlink(p);
        rmdir(p);
    }
    closedir(d);
    rmdir(dir);
}

/* Each test gets its own directory and a trace path in it; options from a clean slate. */
static void setup(void)
{
    strcpy(dir, "/tmp/gmt-writer-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/t.gmt", dir);
    for (char **e = environ; *e;) {
        if (!strncmp(*e, "GPUMEMTRACE_", 12) || !strncmp(*e, "RANK=", 5)) {
            char name[128];
            size_t n = strcspn(*e, "=");
            snprintf(name, sizeof name, "%.*s", (int)n, *e);
            unsetenv(name);
        } else {
            e++;
        }
    }
    setenv("GPUMEMTRACE_OUTPUT", path, 1);
    gmt_options_load();
}

static void teardown(void)
{
    rm_dir();
}

TestSuite(writer, .init = setup, .fini = teardown, .timeout = 60);

static void emit_alloc(uint64_t address, uint64_t bytes)
{
    struct gmt_rec_alloc a = { { GMT_REC_ALLOC, GMT_API_cuMemAlloc, sizeof a }, address, bytes,
                               0, 0, 0, GMT_KIND_DEVICE, 0, -1 };
    gmt_emit(&a, offsetof(struct gmt_rec_alloc, dt));
}

static struct gmt_reader *open_trace(const char *p)
{
    struct gmt_reader *r = NULL;
    char err[256] = "";
    int rc = gmt_reader_open(&r, p, err, sizeof err);
    cr_assert_eq(rc, 0, "open %s: %s", p, err);
    return r;
}

/* Next record, asserting the file is well formed. 0 at the end. */
static int next(struct gmt_reader *r, struct gmt_event *ev)
{
    char err[256] = "";
    int rc = gmt_reader_next(r, ev, err, sizeof err);
    cr_assert_neq(rc, -1, "%s", err);
    return rc;
}

/* Counts the records of `type` in a whole, cleanly ended trace. */
static long count_type(const char *p, unsigned type)
{
    struct gmt_reader *r = open_trace(p);
    struct gmt_event ev;
    long n = 0;
    while (next(r, &ev))
        n += ev.rec->type == type;
    gmt_reader_close(r);
    return n;
}

static bool exists(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0;
}

static uint32_t tid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

/* ---- every record type survives the round trip ---- */

Test(writer, round_trips_every_record_type)
{
    setenv("NCCL_BUFFSIZE", "1048576", 1);
    setenv("CUDA_VISIBLE_DEVICES", "0,1", 1);
    setenv("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True", 1);
    setenv("UNRELATED_VARIABLE", "x", 1);
    prctl(PR_SET_NAME, "roundtrip", 0, 0, 0);

    struct gmt_rec_version ver = { { GMT_REC_VERSION, GMT_COMP_NCCL, sizeof ver }, 22809, 0 };
    gmt_emit(&ver, 0);

    struct {
        struct gmt_rec_module_load m;
        char tail[40];
    } ml;
    memset(&ml, 0, sizeof ml);
    const char mpath[] = "/usr/lib/libcuda.so.1";
    ml.m.h = (struct gmt_rec){ GMT_REC_MODULE_LOAD, 0,
                               gmt_rec_padded(sizeof ml.m + 4 + sizeof mpath) };
    ml.m.time_ns = gmt_now_ns();
    ml.m.module_id = 7;
    ml.m.build_id_len = 4;
    ml.m.load_bias = 0x7f0000000000;
    ml.m.start = 0x7f0000001000;
    ml.m.end = 0x7f0000200000;
    ml.m.path_len = sizeof mpath;
    memcpy(ml.tail, "\xde\xad\xbe\xef", 4);
    memcpy(ml.tail + 4, mpath, sizeof mpath);
    gmt_emit(&ml, 0);

    struct {
        struct gmt_rec_stack s;
        uint64_t ip[3];
    } st = { { { GMT_REC_STACK, 0, sizeof st }, 5, 3 }, { 0x1111, 0x2222, 0x3333 } };
    gmt_emit(&st, 0);

    struct gmt_rec_cuctx cx = { { GMT_REC_CUCTX, 0, sizeof cx }, 0xc0ffee, 1, 0 };
    gmt_emit(&cx, 0);

    struct gmt_rec_alloc_ext ax = { { { GMT_REC_ALLOC, GMT_API_cuMemMap, sizeof ax }, 0x7000, 2 << 20,
                                      0, 5, 3, GMT_KIND_MAPPING, GMT_ALLOC_PITCHED, 1 },
                                    0x5555, 0x6666, 4096 };
    gmt_emit(&ax, offsetof(struct gmt_rec_alloc, dt));

    struct gmt_rec_alloc_small as = {
        { GMT_REC_ALLOC_SMALL, GMT_SMALL_AUX(GMT_API_cudaMallocManaged, GMT_KIND_MANAGED, 1),
          sizeof as }, 0x9000, 3 << 20, 0, 7 };
    gmt_emit(&as, offsetof(struct gmt_rec_alloc_small, dt));

    struct gmt_rec_free_ext fx = { { { GMT_REC_FREE, GMT_API_cuMemUnmap, sizeof fx }, 0x7000, 0, 3 },
                                   0x5555, 5, -2 };
    gmt_emit(&fx, offsetof(struct gmt_rec_free, dt));

    struct gmt_rec_alloc_fail af = { { GMT_REC_ALLOC_FAIL, GMT_API_cudaMalloc, sizeof af }, 1ull << 40,
                                     2, 0, 5, 3, GMT_KIND_DEVICE, 0, 0, 0 };
    gmt_emit(&af, offsetof(struct gmt_rec_alloc_fail, dt));

    struct gmt_rec_comm cm = { { GMT_REC_COMM, 0, sizeof cm }, 0xa0, 0xb0, 0x1234, 1, 2, 1, 0 };
    gmt_emit(&cm, offsetof(struct gmt_rec_comm, dt));

    struct gmt_rec_scope_begin sb = { { GMT_REC_SCOPE_BEGIN, GMT_OP_AllReduce, sizeof sb }, 0, 9, 8, 5,
                                      0xa0, 1024, 0x5555, 7, -1 };
    gmt_emit(&sb, offsetof(struct gmt_rec_scope_begin, dt));

    struct gmt_rec_meminfo mi = { { GMT_REC_MEMINFO, GMT_MEMINFO_BEGIN, sizeof mi }, 0, 9, 1, 0,
                                  100ull << 30, 141ull << 30 };
    gmt_emit(&mi, offsetof(struct gmt_rec_meminfo, dt));

    struct gmt_rec_scope_end se = { { GMT_REC_SCOPE_END, GMT_OP_AllReduce, sizeof se }, 0, 9, 0, 0 };
    gmt_emit(&se, offsetof(struct gmt_rec_scope_end, dt));

    struct gmt_rec_group_repeat gr = { { GMT_REC_GROUP_REPEAT, 0, sizeof gr }, 12, 2, 8, 0 };
    gmt_emit(&gr, 0);

    struct gmt_rec_graphmem gm = { { GMT_REC_GRAPHMEM, GMT_GRAPHMEM_LAUNCH, sizeof gm }, gmt_now_ns(),
                                   1, 0, 32ull << 20, 64ull << 20, 32ull << 20, 64ull << 20 };
    gmt_emit(&gm, 0);

    struct gmt_rec_nccl_coll_info ci = {
        .h = { GMT_REC_NCCL_COLL_INFO, GMT_OP_AllReduce, sizeof ci }, .time_ns = gmt_now_ns(),
        .comm_hash = 0x77, .context = 0xa8, .seq = 3, .count = 1024, .scope_id = 9, .rank = 1,
        .datatype = 7, .algo = GMT_NCCL_ALGO_RING, .proto = GMT_NCCL_PROTO_SIMPLE, .nchannels = 24,
        .nwarps = 16, .kind = GMT_NCCL_INFO_COLL };
    gmt_emit(&ci, 0);
    struct {
        struct gmt_rec_pycode c;
        char s[24];
    } pc = { { { GMT_REC_PYCODE, 0, sizeof pc }, 3, 17, 2, 4, 6, 0 }, "f\0A.f\0m.py\0" };
    gmt_emit(&pc, 0);

    struct gmt_rec_module_unload mu = { { GMT_REC_MODULE_UNLOAD, 0, sizeof mu }, gmt_now_ns(), 7, 0 };
    gmt_emit(&mu, 0);

    struct {
        struct gmt_rec_nvtx_string s;
        char name[16];
    } ns = { { { GMT_REC_NVTX_STRING, GMT_NVTX_STR_NAME, sizeof ns }, 3, 5 }, "step" };
    gmt_emit(&ns, 0);
    struct gmt_rec_nvtx_range_ext nr = { { { GMT_REC_NVTX_RANGE, GMT_NVTX_START, sizeof nr },
                                           gmt_now_ns(), 0, 3 }, 11 };
    gmt_emit(&nr, 0);
    /* (2.5) written by another thread than the one in the call: tid names that one */
    struct gmt_rec_scope_open so = { .h = { GMT_REC_SCOPE_OPEN, GMT_OP_AllReduce, sizeof so },
                                     .time_ns = gmt_now_ns(), .tid = 4321, .scope_id = 9,
                                     .comm = 0xc0, .count = 4, .datatype = 7, .peer = -1 };
    gmt_emit(&so, 0);
    /* (2.6) a PyTorch block handed out */
    struct gmt_rec_block bl = { .h = { GMT_REC_BLOCK, GMT_BLOCK_ALLOC, sizeof bl },
                                .time_ns = gmt_now_ns(), .address = 0xb000, .size = 4096,
                                .total_allocated = 4096, .total_reserved = 2 << 20, .stack_id = 1,
                                .device_type = 1, .device_index = 0 };
    gmt_emit(&bl, 0);
    /* (2.6) after a sample on its thread; no time of its own */
    struct gmt_rec_devlimits dl = { .h = { GMT_REC_DEVLIMITS, GMT_MEMINFO_FIRST, sizeof dl }, .device = 1,
                                    .scope_id = 0, .stack_bytes = 1984, .printf_fifo_bytes = 1u << 20,
                                    .malloc_heap_bytes = 8u << 20, .sm_count = 132, .max_threads_per_sm = 2048 };
    gmt_emit(&dl, 0);
    /* (2.7) NCCL's own count of a communicator, and an explicit module load */
    struct gmt_rec_nccl_memstats nm = { .h = { GMT_REC_NCCL_MEMSTATS, GMT_MEMSTATS_INIT, sizeof nm },
                                        .time_ns = gmt_now_ns(), .comm = 0xc0ffee, .suspend_bytes = 6 << 20,
                                        .suspended = 0, .persist_bytes = 1 << 20, .total_bytes = 7 << 20,
                                        .scope_id = 0, .device = 1 };
    gmt_emit(&nm, 0);
    struct gmt_rec_modload md = { .h = { GMT_REC_MODLOAD, GMT_MODLOAD_cuModuleLoadData, sizeof md },
                                  .time_ns = gmt_now_ns(), .duration = 900, .device = 1, .result = 0,
                                  .scope_id = 0, .free_before = 100u << 20, .free_after = 98u << 20,
                                  .total_bytes = 1u << 30, .handle = 0x5eed };
    gmt_emit(&md, 0);

    gmt_writer_finish();

    struct gmt_reader *r = open_trace(path);
    struct gmt_event ev;
    uint64_t scope_end_time = 0; /* the clock a GROUP_REPEAT after it is at */
    int seen[GMT_REC_TYPE_MAX] = { 0 };
    uint32_t me = tid();
    uint64_t prev_time = 0;
    while (next(r, &ev)) {
        const struct gmt_rec *h = ev.rec;
        cr_assert_lt(h->type, GMT_REC_TYPE_MAX);
        seen[h->type]++;
        if (h->type != GMT_REC_PROCESS && h->type != GMT_REC_ENV) {
            cr_expect_eq(ev.tid, me, "%s not attributed to the emitting thread",
                         gmt_rec_type_name(h->type));
        }
        if (ev.time_ns && h->type != GMT_REC_PROCESS) {
            cr_expect_geq(ev.time_ns, prev_time, "%s goes back in time", gmt_rec_type_name(h->type));
            prev_time = ev.time_ns;
        }
        switch (h->type) {
        case GMT_REC_PROCESS: {
            const struct gmt_rec_process *p = (const void *)h;
            cr_expect_eq(ev.index, 0);
            cr_expect_eq(p->pid, (uint32_t)getpid());
            cr_expect_eq(p->ppid, (uint32_t)getppid());
            cr_expect_eq(p->rank, -1);
            cr_expect_eq(p->flags, 0);
            char host[256] = "";
            gethostname(host, sizeof host);
            cr_expect_str_eq(gmt_process_host(p), host);
            uint32_t len = 0;
            const char *cl = gmt_process_cmdline(p, &len);
            cr_expect_gt(len, 0);
            char want[4096];
            int fd = open("/proc/self/cmdline", O_RDONLY);
            ssize_t n = read(fd, want, sizeof want);
            close(fd);
            cr_expect_eq(len, (uint32_t)n);
            cr_expect_eq(memcmp(cl, want, len), 0, "cmdline %s", cl);
            cr_expect_gt(p->realtime_ns, 1600000000ull * 1000000000ull);
            cr_expect_leq(p->monotonic_ns, gmt_now_ns());
            break;
        }
        case GMT_REC_ENV: {
            const struct gmt_rec_env *e = (const void *)h;
            const char *s = gmt_env_strings(e);
            int nccl = 0, cuda = 0, torch = 0, gmt = 0;
            for (uint32_t i = 0; i < e->count; i++, s += strlen(s) + 1) {
                nccl += !strcmp(s, "NCCL_BUFFSIZE=1048576");
                cuda += !strcmp(s, "CUDA_VISIBLE_DEVICES=0,1");
                torch += !strcmp(s, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True");
                gmt += !strncmp(s, "GPUMEMTRACE_OUTPUT=", 19);
                cr_expect(strncmp(s, "UNRELATED_", 10) && strncmp(s, "PATH=", 5), "ENV has %s", s);
            }
            cr_expect(nccl == 1 && cuda == 1 && torch == 1 && gmt == 1);
            break;
        }
        case GMT_REC_VERSION:
            cr_expect_eq(h->aux, GMT_COMP_NCCL);
            cr_expect_eq(((const struct gmt_rec_version *)(const void *)h)->version, 22809);
            break;
        case GMT_REC_MODULE_LOAD: {
            const struct gmt_rec_module_load *m = (const void *)h;
            cr_expect_eq(m->module_id, 7);
            cr_expect_eq(m->time_ns, ml.m.time_ns);
            cr_expect_eq(ev.time_ns, ml.m.time_ns);
            cr_expect_eq(m->load_bias, 0x7f0000000000);
            cr_expect_eq(m->start, 0x7f0000001000);
            cr_expect_eq(m->end, 0x7f0000200000);
            cr_expect_eq(memcmp(gmt_module_build_id(m), "\xde\xad\xbe\xef", 4), 0);
            cr_expect_str_eq(gmt_module_path(m), mpath);
            break;
        }
        case GMT_REC_MODULE_UNLOAD:
            cr_expect_eq(((const struct gmt_rec_module_unload *)(const void *)h)->module_id, 7);
            cr_expect_eq(ev.time_ns, mu.time_ns);
            break;
        case GMT_REC_CHUNK:
            cr_expect_eq(((const struct gmt_rec_chunk *)(const void *)h)->tid, me);
            break;
        case GMT_REC_THREAD: {
            const struct gmt_rec_thread *t = (const void *)h;
            cr_expect_eq(t->tid, me);
            cr_expect_str_eq(t->name, "roundtrip");
            cr_expect_eq(seen[GMT_REC_CHUNK], 1, "THREAD is the first record of the first chunk");
            break;
        }
        case GMT_REC_STACK: {
            const struct gmt_rec_stack *s = (const void *)h;
            cr_expect_eq(s->stack_id, 5);
            cr_expect_eq(s->depth, 3);
            cr_expect(s->ip[0] == 0x1111 && s->ip[1] == 0x2222 && s->ip[2] == 0x3333);
            break;
        }
        case GMT_REC_CUCTX: {
            const struct gmt_rec_cuctx *c = (const void *)h;
            cr_expect(c->context == 0xc0ffee && c->device == 1);
            break;
        }
        case GMT_REC_ALLOC: {
            const struct gmt_rec_alloc_ext *a = gmt_alloc_ext((const void *)h);
            cr_assert_not_null(a);
            cr_expect_eq(a->a.h.aux, GMT_API_cuMemMap);
            cr_expect(a->a.address == 0x7000 && a->a.bytes == 2 << 20);
            cr_expect(a->a.stack_id == 5 && a->a.scope_id == 3 && a->a.kind == GMT_KIND_MAPPING);
            cr_expect(a->a.flags == GMT_ALLOC_PITCHED && a->a.device == 1);
            cr_expect(a->stream == 0x5555 && a->related == 0x6666 && a->offset == 4096);
            break;
        }
        case GMT_REC_ALLOC_SMALL: {
            const struct gmt_rec_alloc_small *a = (const void *)h;
            cr_expect_eq(GMT_SMALL_API(h->aux), GMT_API_cudaMallocManaged);
            cr_expect_eq(GMT_SMALL_KIND(h->aux), GMT_KIND_MANAGED);
            cr_expect_eq(GMT_SMALL_FLAGS(h->aux), 1);
            cr_expect(a->address == 0x9000 && a->bytes == 3 << 20 && a->stack_id == 7);
            break;
        }
        case GMT_REC_FREE: {
            const struct gmt_rec_free_ext *f = gmt_free_ext((const void *)h);
            cr_assert_not_null(f);
            cr_expect(f->f.address == 0x7000 && f->f.scope_id == 3 && f->f.h.aux == GMT_API_cuMemUnmap);
            cr_expect(f->stream == 0x5555 && f->stack_id == 5 && f->result == -2);
            break;
        }
        case GMT_REC_ALLOC_FAIL: {
            const struct gmt_rec_alloc_fail *a = (const void *)h;
            cr_expect(a->bytes == 1ull << 40 && a->error == 2 && a->stack_id == 5 && a->scope_id == 3);
            cr_expect(a->kind == GMT_KIND_DEVICE && a->device == 0 && h->aux == GMT_API_cudaMalloc);
            break;
        }
        case GMT_REC_COMM: {
            const struct gmt_rec_comm *c = (const void *)h;
            cr_expect(c->comm == 0xa0 && c->parent == 0xb0 && c->unique_id_hash == 0x1234);
            cr_expect(c->rank == 1 && c->nranks == 2 && c->device == 1);
            break;
        }
        case GMT_REC_SCOPE_BEGIN: {
            const struct gmt_rec_scope_begin *s = (const void *)h;
            cr_expect(h->aux == GMT_OP_AllReduce && s->scope_id == 9 && s->parent_id == 8);
            cr_expect(s->stack_id == 5 && s->comm == 0xa0 && s->count == 1024 && s->stream == 0x5555);
            cr_expect(s->datatype == 7 && s->peer == -1);
            break;
        }
        case GMT_REC_SCOPE_END: {
            const struct gmt_rec_scope_end *s = (const void *)h;
            cr_expect(s->scope_id == 9 && s->result == 0 && h->aux == GMT_OP_AllReduce);
            scope_end_time = ev.time_ns;
            break;
        }
        case GMT_REC_GROUP_REPEAT: {
            const struct gmt_rec_group_repeat *g = (const void *)h;
            cr_expect(g->scope_id == 12 && g->count == 2 && g->like == 8);
            /* no time of its own: its thread's clock, where its members are */
            cr_expect(ev.time_ns && ev.time_ns == scope_end_time, "GROUP_REPEAT at the clock");
            break;
        }
        case GMT_REC_MEMINFO: {
            const struct gmt_rec_meminfo *m = (const void *)h;
            cr_expect(h->aux == GMT_MEMINFO_BEGIN && m->scope_id == 9 && m->device == 1);
            cr_expect(m->free_bytes == 100ull << 30 && m->total_bytes == 141ull << 30);
            break;
        }
        case GMT_REC_GRAPHMEM: {
            const struct gmt_rec_graphmem *g = (const void *)h;
            cr_expect(h->aux == GMT_GRAPHMEM_LAUNCH && g->device == 1);
            cr_expect(g->used_current == 32ull << 20 && g->reserved_high == 64ull << 20);
            cr_expect_eq(ev.time_ns, g->time_ns, "GRAPHMEM's time is its own");
            break;
        }
        case GMT_REC_NCCL_COLL_INFO: {
            const struct gmt_rec_nccl_coll_info *c = (const void *)h;
            cr_expect(h->aux == GMT_OP_AllReduce && c->comm_hash == 0x77 && c->seq == 3 &&
                      c->nchannels == 24 && c->proto == GMT_NCCL_PROTO_SIMPLE);
            cr_expect_eq(ev.time_ns, c->time_ns, "NCCL_COLL_INFO's time is its own");
            break;
        }
        case GMT_REC_NVTX_STRING: {
            const struct gmt_rec_nvtx_string *n = (const void *)h;
            cr_expect(n->id == 3 && n->len == 5 && h->aux == GMT_NVTX_STR_NAME);
            cr_expect_str_eq((const char *)(n + 1), "step");
            break;
        }
        case GMT_REC_NVTX_RANGE: {
            const struct gmt_rec_nvtx_range_ext *n = (const void *)h;
            cr_expect(h->aux == GMT_NVTX_START && n->r.name == 3 && n->range_id == 11);
            cr_expect_eq(ev.time_ns, n->r.time_ns, "NVTX_RANGE's time is its own");
            break;
        }
        case GMT_REC_SCOPE_OPEN: {
            const struct gmt_rec_scope_open *o = (const void *)h;
            cr_expect(h->aux == GMT_OP_AllReduce && o->tid == 4321 && o->scope_id == 9 &&
                      o->comm == 0xc0 && o->count == 4 && o->peer == -1);
            cr_expect_eq(ev.time_ns, o->time_ns, "SCOPE_OPEN's time is its own");
            break;
        }
        case GMT_REC_BLOCK: {
            const struct gmt_rec_block *b = (const void *)h;
            cr_expect(h->aux == GMT_BLOCK_ALLOC && b->address == 0xb000 && b->size == 4096 &&
                      b->total_allocated == 4096 && b->total_reserved == 2 << 20 &&
                      b->device_type == 1 && b->device_index == 0);
            cr_expect_eq(ev.time_ns, b->time_ns, "BLOCK's time is its own");
            break;
        }
        case GMT_REC_DEVLIMITS: {
            const struct gmt_rec_devlimits *l = (const void *)h;
            cr_expect(h->aux == GMT_MEMINFO_FIRST && l->device == 1 && l->stack_bytes == 1984 &&
                      l->printf_fifo_bytes == 1u << 20 && l->malloc_heap_bytes == 8u << 20 &&
                      l->sm_count == 132 && l->max_threads_per_sm == 2048);
            break;
        }
        case GMT_REC_NCCL_MEMSTATS: {
            const struct gmt_rec_nccl_memstats *m = (const void *)h;
            cr_expect(h->aux == GMT_MEMSTATS_INIT && m->comm == 0xc0ffee && m->suspend_bytes == 6 << 20 &&
                      m->persist_bytes == 1 << 20 && m->total_bytes == 7 << 20 && m->device == 1);
            break;
        }
        case GMT_REC_MODLOAD: {
            const struct gmt_rec_modload *m = (const void *)h;
            cr_expect(h->aux == GMT_MODLOAD_cuModuleLoadData && m->device == 1 && m->duration == 900 &&
                      m->free_before == 100u << 20 && m->free_after == 98u << 20 && m->handle == 0x5eed);
            break;
        }
        case GMT_REC_END: {
            const struct gmt_rec_end *e = (const void *)h;
            cr_expect_eq(e->records_dropped, 0);
            break;
        }
        case GMT_REC_PYCODE: {
            const struct gmt_rec_pycode *c = (const void *)h;
            cr_expect_eq(c->code_id, 3);
            cr_expect_eq(c->firstlineno, 17);
            cr_expect_str_eq((const char *)(c + 1) + c->name_len + c->qualname_len, "m.py");
            break;
        }
        default:
            break;
        }
    }
    cr_expect(gmt_reader_complete(r));
    uint64_t cut = 0;
    cr_expect_not(gmt_reader_cut(r, &cut));
    gmt_reader_close(r);
    /* TIME has its own test: a gap over 4.29 s. */
    for (int t = 1; t < GMT_REC_TYPE_MAX; t++) {
        if (t == GMT_REC_TIME || !gmt_rec_fixed_size((unsigned)t)) /* no type has the id */
            continue;
        cr_expect_eq(seen[t], 1, "%s seen %d times", gmt_rec_type_name((unsigned)t), seen[t]);
    }
}

/* ---- threads ---- */

#define THREADS 8
#define PER_THREAD 100000

static void *producer(void *arg)
{
    uintptr_t t = (uintptr_t)arg;
    for (uint64_t i = 0; i < PER_THREAD; i++)
        emit_alloc(((uint64_t)t << 32) | i, t);
    return NULL;
}

Test(writer, eight_threads_every_record_once_in_order)
{
    pthread_t th[THREADS];
    for (uintptr_t t = 0; t < THREADS; t++)
        cr_assert_eq(pthread_create(&th[t], NULL, producer, (void *)t), 0);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    gmt_writer_finish();

    struct gmt_reader *r = open_trace(path);
    struct gmt_event ev;
    uint64_t next_seq[THREADS] = { 0 };
    uint32_t owner[THREADS] = { 0 };
    uint64_t last_time[THREADS] = { 0 };
    long total = 0, threads = 0;
    while (next(r, &ev)) {
        if (ev.rec->type == GMT_REC_THREAD)
            threads++;
        if (ev.rec->type != GMT_REC_ALLOC)
            continue;
        const struct gmt_rec_alloc *a = (const void *)ev.rec;
        uint64_t t = a->address >> 32, seq = a->address & 0xffffffffu;
        cr_assert_lt(t, THREADS);
        cr_assert_eq(a->bytes, t);
        cr_assert_eq(seq, next_seq[t], "thread %lu: record %lu where %lu was due", (unsigned long)t,
                     (unsigned long)seq, (unsigned long)next_seq[t]);
        next_seq[t]++;
        if (!owner[t])
            owner[t] = ev.tid;
        cr_assert_eq(ev.tid, owner[t], "a record of one thread in another thread's chunk");
        cr_assert_geq(ev.time_ns, last_time[t]);
        last_time[t] = ev.time_ns;
        total++;
    }
    cr_expect(gmt_reader_complete(r));
    gmt_reader_close(r);
    for (int t = 0; t < THREADS; t++)
        cr_expect_eq(next_seq[t], PER_THREAD, "thread %d: %lu records", t, (unsigned long)next_seq[t]);
    cr_expect_eq(total, (long)THREADS * PER_THREAD);
    /* The main thread writes END: one THREAD more. */
    cr_expect_eq(threads, THREADS + 1);
}

static void *short_lived(void *arg)
{
    emit_alloc((uintptr_t)arg, 1);
    return NULL;
}

Test(writer, thread_exit_flushes_and_buffer_is_reused)
{
    for (uintptr_t i = 0; i < 20; i++) {
        pthread_t th;
        cr_assert_eq(pthread_create(&th, NULL, short_lived, (void *)i), 0);
        pthread_join(th, NULL);
    }
    /* Without finish: what is in the file came from the threads' exit. */
    struct gmt_reader *r = open_trace(path);
    struct gmt_event ev;
    long allocs = 0, threads = 0;
    while (next(r, &ev)) {
        allocs += ev.rec->type == GMT_REC_ALLOC;
        threads += ev.rec->type == GMT_REC_THREAD;
    }
    gmt_reader_close(r);
    cr_expect_eq(allocs, 20);
    cr_expect_eq(threads, 20);
    /* 20 threads one after the other need one buffer, not 20: the map shows it. */
    FILE *f = fopen("/proc/self/maps", "r");
    cr_assert_not_null(f);
    char line[512];
    long anon_64k = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && hi - lo == 69632 && strlen(line) < 80)
            anon_64k++;
    }
    fclose(f);
    cr_expect_leq(anon_64k, 3, "%ld buffer-sized mappings", anon_64k);
}

/* ---- time ---- */

Test(writer, dt_decodes_to_the_time_of_emit)
{
    uint64_t before[200], after[200];
    for (int i = 0; i < 200; i++) {
        before[i] = gmt_now_ns();
        emit_alloc((uint64_t)i, 0);
        after[i] = gmt_now_ns();
        if (i % 50 == 0)
            usleep(2000);
    }
    gmt_writer_finish();
    struct gmt_reader *r = open_trace(path);
    struct gmt_event ev;
    int i = 0;
    while (next(r, &ev)) {
        if (ev.rec->type != GMT_REC_ALLOC)
            continue;
        cr_assert_lt(i, 200);
        cr_expect_geq(ev.time_ns, before[i], "record %d decoded %lu before it was made", i,
                      (unsigned long)(before[i] - ev.time_ns));
        cr_expect_leq(ev.time_ns, after[i], "record %d decoded after its emit returned", i);
        i++;
    }
    gmt_reader_close(r);
    cr_expect_eq(i, 200);
}

Test(writer, time_record_on_gap_over_32_bits)
{
    emit_alloc(1, 0);
    uint64_t t0 = gmt_now_ns();
    gmt_clock_line.skew_ns += 5000000000ll; /* a 5 s pause, without the pause */
    uint64_t before = gmt_now_ns();
    emit_alloc(2, 0);
    uint64_t after = gmt_now_ns();
    emit_alloc(3, 0);
    gmt_writer_finish();

    struct gmt_reader *r = open_trace(path);
    struct gmt_event ev;
    int times = 0, time_before_2 = 0;
    uint64_t t2 = 0;
    while (next(r, &ev)) {
        if (ev.rec->type == GMT_REC_TIME) {
            times++;
            const struct gmt_rec_time *t = (const void *)ev.rec;
            cr_expect_geq(t->time_ns, t0 + 5000000000ull);
            cr_expect_leq(t->time_ns, after);
        }
        if (ev.rec->type == GMT_REC_ALLOC && ((const struct gmt_rec_alloc *)(const void *)ev.rec)->address == 2) {
            time_before_2 = times;
            t2 = ev.time_ns;
        }
    }
    gmt_reader_close(r);
    cr_expect_eq(times, 1);
    cr_expect_eq(time_before_2, 1, "TIME comes right before the record after the gap");
    cr_expect(t2 >= before && t2 <= after, "decoded %lu, made in [%lu, %lu]", (unsigned long)t2,
              (unsigned long)before, (unsigned long)after);
}

Test(writer, absolute_time_records_set_the_thread_clock)
{
    emit_alloc(1, 0);
    /* A module record stamped earlier than the thread's clock: the reader takes its
     * time_ns as the clock, so the writer must count the next dt from it too. */
    usleep(3000);
    struct {
        struct gmt_rec_module_unload m;
    } mu = { { { GMT_REC_MODULE_UNLOAD, 0, sizeof mu }, gmt_now_ns() - 2000000, 1, 0 } };
    gmt_emit(&mu, 0);
    uint64_t before = gmt_now_ns();
    emit_alloc(2, 0);
    uint64_t after = gmt_now_ns();
    gmt_writer_finish();
    struct gmt_reader *r = open_trace(path);
    struct gmt_event ev;
    uint64_t t2 = 0;
    while (next(r, &ev))
        if (ev.rec->type == GMT_REC_ALLOC && ((const struct gmt_rec_alloc *)(const void *)ev.rec)->address == 2)
            t2 = ev.time_ns;
    gmt_reader_close(r);
    cr_expect(t2 >= before && t2 <= after, "decoded %lu, made in [%lu, %lu]", (unsigned long)t2,
              (unsigned long)before, (unsigned long)after);
}

/* ---- flushing ---- */

static off_t file_size(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 ? st.st_size : -1;
}

Test(writer, flushes_when_buffer_full)
{
    setenv("GPUMEMTRACE_FLUSH_BYTES", "4096", 1);
    setenv("GPUMEMTRACE_FLUSH_MS", "60000", 1);
    gmt_options_load();
    emit_alloc(0, 0);
    off_t preamble = file_size(path);
    cr_assert_gt(preamble, 0, "the file is opened at the first event");
    /* 40-byte records: 101 of them fill 4 KiB with THREAD. */
    for (int i = 1; i < 100; i++)
        emit_alloc((uint64_t)i, 0);
    cr_expect_eq(file_size(path), preamble, "nothing written before the buffer is full");
    for (int i = 100; i < 300; i++)
        emit_alloc((uint64_t)i, 0);
    cr_expect_gt(file_size(path), preamble + 4000);
    cr_expect_geq(count_type(path, GMT_REC_ALLOC), 100);
    gmt_writer_finish();
    cr_expect_eq(count_type(path, GMT_REC_ALLOC), 300);
}

Test(writer, record_larger_than_buffer_is_written_whole)
{
    setenv("GPUMEMTRACE_FLUSH_BYTES", "4096", 1);
    gmt_options_load();
    emit_alloc(1, 0);
    static struct {
        struct gmt_rec_stack s;
        uint64_t ip[600];
    } big;
    big.s.h = (struct gmt_rec){ GMT_REC_STACK, 0, sizeof big };
    big.s.stack_id = 1;
    big.s.depth = 600;
    for (int i = 0; i < 600; i++)
        big.ip[i] = 0x400000u + (uint64_t)i;
    gmt_emit(&big, 0);
    emit_alloc(2, 0);
    gmt_writer_finish();
    struct gmt_reader *r = open_trace(path);
    struct gmt_event ev;
    int order = 0;
    while (next(r, &ev)) {
        if (ev.rec->type == GMT_REC_ALLOC)
            order = order * 10 + (int)((const struct gmt_rec_alloc *)(const void *)ev.rec)->address;
        if (ev.rec->type == GMT_REC_STACK) {
            const struct gmt_rec_stack *s = (const void *)ev.rec;
            cr_expect_eq(s->depth, 600);
            cr_expect_eq(s->ip[599], 0x400000u + 599);
            order = order * 10 + 9;
        }
    }
    gmt_reader_close(r);
    cr_expect_eq(order, 192, "records in emit order (got %d)", order);
}

Test(writer, background_flusher_bounds_the_delay)
{
    setenv("GPUMEMTRACE_FLUSH_MS", "50", 1);
    gmt_options_load();
    emit_alloc(1, 0);
    uint64_t t0 = gmt_now_ns();
    long seen = 0;
    /* Poll the file, not the writer: the record must get there on its own. */
    while (gmt_now_ns() - t0 < 2000000000ull && !seen) {
        usleep(5000);
        seen = count_type(path, GMT_REC_ALLOC);
    }
    uint64_t waited_ms = (gmt_now_ns() - t0) / 1000000;
    cr_expect_eq(seen, 1);
    /* flush_ms, plus room for a loaded 2-core CI machine and the 5 ms polling. */
    cr_expect_leq(waited_ms, 50 + 100, "the record took %lu ms to reach the file", (unsigned long)waited_ms);
}

/* ---- the file and its name ---- */

static void expect_file(const char *p)
{
    cr_expect(exists(p), "expected trace %s", p);
    if (exists(p))
        cr_expect_eq(count_type(p, GMT_REC_ALLOC), 1, "%s", p);
}

Test(writer, output_pattern_expansion)
{
    char host[256] = "";
    gethostname(host, sizeof host);
    char pat[300], want[600];
    snprintf(pat, sizeof pat, "%s/a-%%h-%%p-%%%%-%%q.gmt", dir);
    setenv("GPUMEMTRACE_OUTPUT", pat, 1);
    gmt_options_load();
    emit_alloc(1, 1);
    gmt_writer_finish();
    snprintf(want, sizeof want, "%s/a-%s-%d-%%-%%q.gmt", dir, host, (int)getpid());
    expect_file(want);
}

Test(writer, default_name_in_working_directory)
{
    cr_assert_eq(chdir(dir), 0);
    unsetenv("GPUMEMTRACE_OUTPUT");
    gmt_options_load();
    emit_alloc(1, 1);
    gmt_writer_finish();
    char host[256] = "", want[600];
    gethostname(host, sizeof host);
    snprintf(want, sizeof want, "%s/gpumemtrace.%s.%d.gmt", dir, host, (int)getpid());
    expect_file(want);
}

Test(writer, known_rank_goes_before_gmt)
{
    setenv("RANK", "3", 1);
    char pat[300], want[600];
    snprintf(pat, sizeof pat, "%s/job.%%p.gmt", dir);
    setenv("GPUMEMTRACE_OUTPUT", pat, 1);
    gmt_options_load();
    emit_alloc(1, 1);
    gmt_writer_finish();
    snprintf(want, sizeof want, "%s/job.%d.r3.gmt", dir, (int)getpid());
    expect_file(want);
    struct gmt_reader *r = open_trace(want);
    struct gmt_event ev;
    cr_assert(next(r, &ev));
    cr_expect_eq(((const struct gmt_rec_process *)(const void *)ev.rec)->rank, 3);
    gmt_reader_close(r);
}

Test(writer, percent_r_places_the_rank)
{
    setenv("OMPI_COMM_WORLD_RANK", "12", 1);
    char pat[300], want[600];
    snprintf(pat, sizeof pat, "%s/rank%%r.trace", dir);
    setenv("GPUMEMTRACE_OUTPUT", pat, 1);
    gmt_options_load();
    emit_alloc(1, 1);
    gmt_writer_finish();
    snprintf(want, sizeof want, "%s/rank12.trace", dir);
    expect_file(want);
}

Test(writer, unknown_rank_in_percent_r_is_x)
{
    char pat[300], want[600];
    snprintf(pat, sizeof pat, "%s/rank%%r.gmt", dir);
    setenv("GPUMEMTRACE_OUTPUT", pat, 1);
    gmt_options_load();
    emit_alloc(1, 1);
    gmt_writer_finish();
    snprintf(want, sizeof want, "%s/rankx.gmt", dir);
    expect_file(want);
}

Test(writer, existing_file_gets_a_numbered_name)
{
    int fd = open(path, O_CREAT | O_WRONLY, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, "mine", 4), 4);
    close(fd);
    emit_alloc(1, 1);
    gmt_writer_finish();
    char want[300];
    snprintf(want, sizeof want, "%s/t.1.gmt", dir);
    expect_file(want);
    cr_expect_eq(file_size(path), 4, "the existing file is left alone");
}

Test(writer, symlink_is_not_followed)
{
    char target[300];
    snprintf(target, sizeof target, "%s/target", dir);
    cr_assert_eq(symlink(target, path), 0);
    emit_alloc(1, 1);
    gmt_writer_finish();
    cr_expect_not(exists(target), "wrote through a symlink");
}

Test(writer, no_event_no_file)
{
    gmt_writer_finish();
    cr_expect_not(exists(path));
}

Test(writer, off_opens_nothing_and_emits_nothing)
{
    setenv("GPUMEMTRACE_OFF", "1", 1);
    gmt_options_load();
    cr_expect_not(gmt_writer_ready());
    emit_alloc(1, 1);
    gmt_writer_finish();
    cr_expect_not(exists(path));
}

Test(writer, emits_after_finish_are_dropped)
{
    emit_alloc(1, 1);
    gmt_writer_finish();
    off_t size = file_size(path);
    emit_alloc(2, 2);
    gmt_writer_flush_all();
    gmt_writer_finish();
    cr_expect_eq(file_size(path), size);
    cr_expect_not(gmt_writer_ready());
    cr_expect_eq(count_type(path, GMT_REC_END), 1);
}

Test(writer, errno_untouched)
{
    errno = 1234;
    cr_expect(gmt_writer_ready());
    cr_expect_eq(errno, 1234);
    emit_alloc(1, 1);
    cr_expect_eq(errno, 1234);
    gmt_writer_flush_all();
    cr_expect_eq(errno, 1234);
    gmt_writer_finish();
    cr_expect_eq(errno, 1234);
}

/* ---- failures: one warning, the program goes on ---- */

/* Runs fn in a child with stderr in a file; returns the child's stderr. */
static char *in_child(void (*fn)(void), int *status)
{
    static char out[4096];
    char log[300];
    snprintf(log, sizeof log, "%s/stderr", dir);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        int fd = open(log, O_CREAT | O_TRUNC | O_WRONLY, 0600);
        dup2(fd, 2);
        fn();
        _exit(0);
    }
    waitpid(pid, status, 0);
    int fd = open(log, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, out, sizeof out - 1) : 0;
    out[n > 0 ? n : 0] = 0;
    if (fd >= 0)
        close(fd);
    unlink(log);
    return out;
}

static int count_lines(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p++)
        n++;
    return n;
}

static void emit_many_then_exit_77(void)
{
    errno = 42;
    for (int i = 0; i < 5000; i++)
        emit_alloc((uint64_t)i, 0);
    gmt_writer_flush_all();
    gmt_writer_finish();
    _exit(errno == 42 && !gmt_writer_ready() ? 77 : 1);
}

Test(writer, missing_directory_warns_once_and_program_continues)
{
    char pat[300];
    snprintf(pat, sizeof pat, "%s/no/such/dir/t.gmt", dir);
    setenv("GPUMEMTRACE_OUTPUT", pat, 1);
    gmt_options_load();
    int status;
    char *err = in_child(emit_many_then_exit_77, &status);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 77, "status %#x", status);
    cr_expect_eq(count_lines(err, "gpumemtrace: warning:"), 1, "stderr: %s", err);
    cr_expect(strstr(err, pat) && strstr(err, "No such file or directory"), "stderr: %s", err);
}

static void as_nobody(void)
{
    if (setgid(65534) || setuid(65534))
        _exit(3);
    emit_many_then_exit_77();
}

Test(writer, unwritable_directory_warns_once_and_program_continues)
{
    char sub[300], pat[320];
    snprintf(sub, sizeof sub, "%s/ro", dir);
    cr_assert_eq(mkdir(sub, 0555), 0);
    chmod(dir, 0755);
    snprintf(pat, sizeof pat, "%s/t.gmt", sub);
    setenv("GPUMEMTRACE_OUTPUT", pat, 1);
    gmt_options_load();
    int status;
    char *err = in_child(geteuid() == 0 ? as_nobody : emit_many_then_exit_77, &status);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 77, "status %#x", status);
    cr_expect_eq(count_lines(err, "gpumemtrace: warning:"), 1, "stderr: %s", err);
    cr_expect(strstr(err, pat) && strstr(err, "Permission denied"), "stderr: %s", err);
}

static void with_small_file_limit(void)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = { 8192, 8192 };
    setrlimit(RLIMIT_FSIZE, &rl);
    emit_many_then_exit_77();
}

Test(writer, write_failure_warns_once_and_program_continues)
{
    setenv("GPUMEMTRACE_FLUSH_BYTES", "4096", 1);
    gmt_options_load();
    int status;
    char *err = in_child(with_small_file_limit, &status);
    cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 77, "status %#x", status);
    cr_expect_eq(count_lines(err, "gpumemtrace: warning:"), 1, "stderr: %s", err);
    cr_expect(strstr(err, "cannot write") && strstr(err, path), "stderr: %s", err);
    /* What did reach the file is whole records: readable up to where it stops. */
    struct gmt_reader *r = open_trace(path);
    struct gmt_event ev;
    long n = 0;
    while (next(r, &ev))
        n++;
    cr_expect_gt(n, 2);
    gmt_reader_close(r);
}

/* ---- fork ---- */

Test(writer, fork_child_gets_its_own_file)
{
    char pat[300];
    snprintf(pat, sizeof pat, "%s/f.%%p.gmt", dir);
    setenv("GPUMEMTRACE_OUTPUT", pat, 1);
    gmt_init();
    emit_alloc(1, 0);            /* still in the parent's buffer at fork */
    fflush(NULL);
    pid_t pid = fork();
    cr_assert_geq(pid, 0);
    if (pid == 0) {
        emit_alloc(2, 0);
        gmt_writer_finish();
        _exit(0);
    }
    int status;
    waitpid(pid, &status, 0);
    cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    emit_alloc(3, 0);
    gmt_writer_finish();

    char parent[300], child[300];
    snprintf(parent, sizeof parent, "%s/f.%d.gmt", dir, (int)getpid());
    snprintf(child, sizeof child, "%s/f.%d.gmt", dir, (int)pid);
    const char *files[2] = { parent, child };
    for (int k = 0; k < 2; k++) {
        struct gmt_reader *r = open_trace(files[k]);
        struct gmt_event ev;
        int order = 0;
        uint32_t flags = 99, pidrec = 0;
        while (next(r, &ev)) {
            if (ev.rec->type == GMT_REC_PROCESS) {
                flags = ((const struct gmt_rec_process *)(const void *)ev.rec)->flags;
                pidrec = ((const struct gmt_rec_process *)(const void *)ev.rec)->pid;
            }
            if (ev.rec->type == GMT_REC_ALLOC)
                order = order * 10 + (int)((const struct gmt_rec_alloc *)(const void *)ev.rec)->address;
        }
        cr_expect(gmt_reader_complete(r));
        gmt_reader_close(r);
        if (k == 0) {
            cr_expect_eq(order, 13, "parent has its own records only (got %d)", order);
            cr_expect_eq(flags & GMT_PROC_FORKED, 0);
            cr_expect_eq(pidrec, (uint32_t)getpid());
        } else {
            cr_expect_eq(order, 2, "child has its own records only (got %d)", order);
            cr_expect_eq(flags & GMT_PROC_FORKED, GMT_PROC_FORKED);
            cr_expect_eq(pidrec, (uint32_t)pid);
        }
    }
}

/* ---- exec ---- */

/* The type of the file's last record, and how many ENDs it has. */
static unsigned last_type(const char *p, long *ends)
{
    struct gmt_reader *r = open_trace(p);
    struct gmt_event ev;
    unsigned last = 0;
    *ends = 0;
    while (next(r, &ev)) {
        last = ev.rec->type;
        *ends += last == GMT_REC_END;
    }
    gmt_reader_close(r);
    return last;
}

Test(writer, exec_writes_every_record_and_end_and_a_failed_one_takes_end_back)
{
    for (int i = 0; i < 10; i++)
        emit_alloc((uint64_t)i, 1);
    off_t before = file_size(path);
    errno = 1234;
    int token = gmt_writer_exec_begin();
    cr_expect_eq(errno, 1234);
    long ends;
    cr_expect_eq(count_type(path, GMT_REC_ALLOC), 10, "every record is in the file");
    cr_expect_eq(last_type(path, &ends), GMT_REC_END);
    cr_expect_eq(ends, 1);
    off_t with_end = file_size(path);
    cr_expect_gt(with_end, before);
    errno = ENOENT; /* what the failed exec left */
    gmt_writer_exec_end(token);
    cr_expect_eq(errno, ENOENT);
    cr_expect_eq(file_size(path), with_end - (off_t)sizeof(struct gmt_rec_end),
                 "END is cut off again");
    cr_expect(gmt_writer_ready(), "tracing goes on");
    emit_alloc(10, 1);
    gmt_writer_finish();
    cr_expect_eq(count_type(path, GMT_REC_ALLOC), 11);
    cr_expect_eq(last_type(path, &ends), GMT_REC_END);
    cr_expect_eq(ends, 1);
}

static _Atomic int exec_stop;
static _Atomic long exec_made;

static void *exec_producer(void *arg)
{
    (void)arg;
    while (!atomic_load(&exec_stop)) {
        emit_alloc((uint64_t)atomic_load(&exec_made), 2);
        atomic_fetch_add(&exec_made, 1);
    }
    return NULL;
}

/* While one thread is in exec, no other thread writes after its END, and nothing of
 * theirs is lost when the exec fails. */
Test(writer, exec_holds_other_threads_off_the_file_until_it_fails)
{
    setenv("GPUMEMTRACE_FLUSH_BYTES", "4096", 1); /* the producers flush their own often */
    gmt_options_load();
    emit_alloc(~0ull, 1);
    pthread_t th[3];
    for (int i = 0; i < 3; i++)
        pthread_create(&th[i], NULL, exec_producer, NULL);
    for (int round = 0; round < 20; round++) {
        usleep(2000);
        int token = gmt_writer_exec_begin();
        cr_assert(token);
        usleep(2000);
        long ends;
        cr_expect_eq(last_type(path, &ends), GMT_REC_END, "round %d: END is last", round);
        cr_expect_eq(ends, 1);
        gmt_writer_exec_end(token);
    }
    atomic_store(&exec_stop, 1);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    gmt_writer_finish();
    long ends;
    cr_expect_eq(last_type(path, &ends), GMT_REC_END);
    cr_expect_eq(ends, 1);
    cr_expect_eq(count_type(path, GMT_REC_ALLOC), atomic_load(&exec_made) + 1);
}

static _Atomic int second_done;

static void *second_exec(void *arg)
{
    int token = gmt_writer_exec_begin();
    atomic_store(&second_done, 1);
    *(int *)arg = token;
    gmt_writer_exec_end(token);
    return NULL;
}

/* Two threads in exec at once: the second waits for the first to fail, then takes the
 * file itself (had the first succeeded, the second would be gone with the image). */
Test(writer, a_second_exec_waits_for_the_first)
{
    emit_alloc(1, 1);
    int token = gmt_writer_exec_begin();
    cr_assert(token);
    int second_token = -1;
    pthread_t t;
    pthread_create(&t, NULL, second_exec, &second_token);
    usleep(50000);
    cr_expect_eq(atomic_load(&second_done), 0, "the second exec did not wait");
    gmt_writer_exec_end(token);
    pthread_join(t, NULL);
    cr_expect_eq(second_token, 1, "the second exec held the file after the first failed");
    emit_alloc(2, 1);
    gmt_writer_finish();
    long ends;
    cr_expect_eq(last_type(path, &ends), GMT_REC_END);
    cr_expect_eq(ends, 1);
    cr_expect_eq(count_type(path, GMT_REC_ALLOC), 2);
}

Test(writer, exec_without_a_file_does_nothing)
{
    errno = 77;
    int token = gmt_writer_exec_begin();
    cr_expect_eq(token, 0);
    gmt_writer_exec_end(token);
    cr_expect_eq(errno, 77);
    cr_expect_not(exists(path));
}

/* ---- re-entrancy ---- */

static volatile sig_atomic_t handler_calls;

static void emit_from_handler(int sig)
{
    (void)sig;
    handler_calls++;
    emit_alloc(0xffffffffull << 32 | (uint64_t)handler_calls, 0);
}

Test(writer, signal_handler_inside_emit_is_counted_dropped)
{
    setenv("GPUMEMTRACE_FLUSH_BYTES", "4096", 1);
    gmt_options_load();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = emit_from_handler;
    sa.sa_flags = SA_RESTART;
    sigaction(SIGPROF, &sa, NULL);
    struct itimerval it = { { 0, 20 }, { 0, 20 } };
    setitimer(ITIMER_PROF, &it, NULL);
    long made = 0;
    uint64_t t0 = gmt_now_ns();
    while (gmt_now_ns() - t0 < 300000000ull || handler_calls < 50)
        emit_alloc((uint64_t)made++, 0);
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_PROF, &off, NULL);
    signal(SIGPROF, SIG_IGN);
    long calls = handler_calls;
    gmt_writer_finish();

    struct gmt_reader *r = open_trace(path);
    struct gmt_event ev;
    long main_seq = 0, from_handler = 0;
    uint64_t dropped = 0;
    while (next(r, &ev)) {
        if (ev.rec->type == GMT_REC_END)
            dropped = ((const struct gmt_rec_end *)(const void *)ev.rec)->records_dropped;
        if (ev.rec->type != GMT_REC_ALLOC)
            continue;
        uint64_t a = ((const struct gmt_rec_alloc *)(const void *)ev.rec)->address;
        if (a >> 32) {
            from_handler++;
        } else {
            cr_assert_eq((long)a, main_seq, "main record %ld missing or out of order", main_seq);
            main_seq++;
        }
    }
    cr_expect(gmt_reader_complete(r));
    gmt_reader_close(r);
    cr_expect_eq(main_seq, made);
    cr_expect_eq(from_handler + (long)dropped, calls, "%ld in file + %lu dropped != %ld calls",
                 from_handler, (unsigned long)dropped, calls);
    cr_log_info("%ld handler records, %lu dropped", from_handler, (unsigned long)dropped);
}
