/* gen_golden.c: writes the stored golden traces and the fuzz seed corpus, deterministically, from tracebuild.h. */
#include <stdio.h>
#include <string.h>

#include "tracebuild.h"

static int put(const char *dir, const char *name, const struct tb *b, size_t len)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct tb t = *b;
    t.len = len;
    if (tb_write(&t, path) < 0) {
        fprintf(stderr, "gen_golden: cannot write %s\n", path);
        return -1;
    }
    return 0;
}

/* A copy of the sample with one 32-bit field of record `rec` (at byte `at` in it) set to v. */
static int put_patched(const char *dir, const char *name, const struct tb *b, size_t rec,
                       size_t at, uint32_t v)
{
    struct tb t = *b;
    uint8_t copy[65536];
    if (b->len > sizeof copy)
        return -1;
    memcpy(copy, b->p, b->len);
    memcpy(copy + b->off[rec] + at, &v, sizeof v);
    t.p = copy;
    return put(dir, name, &t, t.len);
}

/* NVTX phases: thread 300 runs 4 train_steps, each keeping 1 MiB and freeing a 2 MiB
 * temporary, with a forward pass in domain "lib" inside; thread 301 ends a start/end
 * range that 300 started. Names are defined after their first use, in the other thread's
 * chunk, as the library may write them. */
static void nvtx_str(struct tb *b, unsigned kind, uint32_t id, const char *s)
{
    struct gmt_rec_nvtx_string r = { .id = id, .len = (uint32_t)strlen(s) + 1 };
    tb_rec(b, GMT_REC_NVTX_STRING, (uint16_t)kind, &r, sizeof r, s, r.len);
}
static void nvtx_range(struct tb *b, unsigned op, uint64_t t, uint32_t domain, uint32_t name,
                       uint64_t id)
{
    struct gmt_rec_nvtx_range_ext r = { .r = { .time_ns = TB_T0 + t, .domain = domain, .name = name },
                                        .range_id = id };
    tb_rec(b, GMT_REC_NVTX_RANGE, (uint16_t)op, &r, id ? sizeof r : sizeof r.r, NULL, 0);
}
static void tb_nvtx(struct tb *b)
{
    tb_process_min(b);
    tb_thread_on_device0(b, 300, 1000);
    uint64_t t = 1000, keep = 0x7000000000;
    nvtx_range(b, GMT_NVTX_START, t + 10, 0, 4, 1);
    for (int i = 0; i < 4; i++) {
        nvtx_range(b, GMT_NVTX_PUSH, t + 100, 0, 1, 0);
        tb_alloc_at(b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0, 0x7100000000, 2u << 20, 0, -1,
                    i ? 400 : 200); /* at t + 200: the thread's clock is at the last free */
        nvtx_range(b, GMT_NVTX_PUSH, t + 400, 2, 3, 0);
        tb_alloc_at(b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0, keep + (uint64_t)i * (1u << 20),
                    1u << 20, 0, -1, 300); /* t + 500, inside forward */
        nvtx_range(b, GMT_NVTX_POP, t + 700, 2, 3, 0);
        struct gmt_rec_free f = { .address = 0x7100000000, .dt = 300 }; /* t + 800 */
        tb_rec(b, GMT_REC_FREE, GMT_API_cudaFree, &f, sizeof f, NULL, 0);
        nvtx_range(b, GMT_NVTX_POP, t + 1000, 0, 1, 0);
        t += 1000;
    }
    nvtx_range(b, GMT_NVTX_MARK, t + 10, 0, 5, 0);
    tb_chunk(b, 301);
    tb_thread_at(b, 301, TB_T0 + t + 50);
    nvtx_str(b, GMT_NVTX_STR_NAME, 1, "train_step");
    nvtx_str(b, GMT_NVTX_STR_DOMAIN, 2, "lib");
    nvtx_str(b, GMT_NVTX_STR_NAME, 3, "forward");
    nvtx_str(b, GMT_NVTX_STR_NAME, 4, "epoch");
    nvtx_range(b, GMT_NVTX_END, t + 100, 0, 0, 1);
    struct gmt_rec_end e = { .time_ns = TB_T0 + t + 200 };
    tb_rec(b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: gen_golden GOLDEN_DIR CORPUS_DIR\n");
        return 2;
    }
    struct tb b = { 0 };
    tb_sample(&b);
    /* The cut file ends 12 bytes into the third record from the end, as a kill would. */
    size_t cut = b.off[b.nrec - 3] + 12;
    int rc = 0;
    rc |= put(argv[1], "sample.gmt", &b, b.len);
    rc |= put(argv[1], "cut.gmt", &b, cut);

    const char *c = argv[2];
    rc |= put(c, "sample.gmt", &b, b.len);
    rc |= put(c, "cut.gmt", &b, cut);
    rc |= put(c, "header-only.gmt", &b, sizeof(struct gmt_file_header));
    {
        struct tb t = { 0 };
        tb_repeats(&t);
        rc |= put(c, "group-repeat.gmt", &t, t.len);
        tb_free(&t);
    }
    {
        struct tb t = { 0 };
        tb_nvtx(&t);
        rc |= put(argv[1], "nvtx.gmt", &t, t.len);
        rc |= put(c, "nvtx.gmt", &t, t.len);
        tb_free(&t);
    }
    {
        struct tb t = { 0 };
        tb_calls(&t, 1);
        rc |= put(c, "scope-call.gmt", &t, t.len);
        tb_free(&t);
        tb_opens(&t, 0);
        rc |= put(c, "scope-open.gmt", &t, t.len);
        tb_free(&t);
    }
    {
        struct tb t = { 0 };
        tb_forensics(&t);
        rc |= put(c, "forensics.gmt", &t, t.len);
        tb_free(&t);
    }
    {
        struct tb t = { 0 };
        tb_blocks(&t);
        rc |= put(c, "blocks.gmt", &t, t.len);
        tb_free(&t);
    }
    {
        struct tb t = { 0 };
        tb_header_ex(&t, 0x04030201u, 1, 0, 32);
        rc |= put(c, "byte-order.gmt", &t, t.len);
        tb_free(&t);
        tb_header_ex(&t, GMT_BYTE_ORDER_MARK, GMT_VERSION_MAJOR + 1, 0, 32);
        rc |= put(c, "newer-major.gmt", &t, t.len);
        tb_free(&t);
        /* A newer minor: a longer header, an unknown type, a longer record. */
        tb_header_ex(&t, GMT_BYTE_ORDER_MARK, 1, 7, 48);
        uint64_t unknown[3] = { 1, 2, 3 };
        uint8_t rec[sizeof(struct gmt_rec) + sizeof unknown];
        memcpy(rec + sizeof(struct gmt_rec), unknown, sizeof unknown);
        tb_rec(&t, 200, 9, rec, sizeof rec, NULL, 0);
        struct gmt_rec_chunk ch = { .tid = 7 };
        tb_rec(&t, GMT_REC_CHUNK, 0, &ch, sizeof ch, unknown, sizeof unknown);
        rc |= put(c, "newer-minor.gmt", &t, t.len);
        tb_free(&t);
    }
    /* The STACK record is the 8th (index 7): depth field at byte 12. */
    rc |= put_patched(c, "stack-overflow.gmt", &b, 7, 12, 1000);
    /* PROCESS host_len at byte 48. */
    rc |= put_patched(c, "process-overflow.gmt", &b, 0, 48, 0xfffffff0u);
    /* A record size of 0. */
    rc |= put_patched(c, "size-zero.gmt", &b, 3, 4, 0);
    tb_free(&b);
    return rc ? 1 : 0;
}
