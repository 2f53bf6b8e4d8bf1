/* repeat_trace.c: writes a trace whose user groups repeat: one group of M members, then N groups written as GROUP_REPEAT of it, for the CLI's memory checks. */
#include <stdio.h>
#include <stdlib.h>

#include "../golden/tracebuild.h"

/* The records go to the file as they are made: a tb of one record at a time, so that
 * the generator's own memory stays small for any N. */
static void flush(struct tb *b, FILE *f)
{
    if (fwrite(b->p, 1, b->len, f) != b->len) {
        perror("repeat_trace");
        exit(1);
    }
    b->len = 0;
    b->nrec = 0;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: repeat_trace OUT.gmt GROUPS MEMBERS\n");
        return 2;
    }
    long groups = atol(argv[2]);
    long members = atol(argv[3]);
    if (groups < 1 || members < 1 || members > 64 ||
        (groups + 1) * (members + 1) >= (long)UINT32_MAX) {
        fprintf(stderr, "repeat_trace: GROUPS >= 1, MEMBERS 1..64\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "wb");
    if (!f) {
        perror(argv[1]);
        return 1;
    }
    struct tb b = {0};
    tb_header_current(&b);
    struct gmt_rec_process p = {.pid = 1, .ppid = 1, .rank = 0, .monotonic_ns = TB_T0};
    tb_rec(&b, GMT_REC_PROCESS, 0, &p, sizeof p, NULL, 0);
    tb_chunk(&b, 7);
    tb_thread_at(&b, 7, TB_T0 + 100);
    struct gmt_rec_comm c = {.comm = 0xa, .unique_id_hash = 0x1234, .rank = 0, .nranks = 2};
    tb_rec(&b, GMT_REC_COMM, 0, &c, sizeof c, NULL, 0);
    struct gmt_rec_alloc a = {.address = 0x7e0000000000ull, .bytes = 1ull << 20, .dt = 10,
                              .kind = GMT_KIND_DEVICE};
    tb_rec(&b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &a, sizeof a, NULL, 0);
    uint32_t id = 10;
    tb_scope_begin(&b, GMT_OP_Group, id, 0, 0, 0, 10);
    for (long m = 0; m < members; m++) {
        tb_scope_begin(&b, GMT_OP_AllReduce, id + 1 + (uint32_t)m, id, 0xa,
                       256 * (uint64_t)(m + 1), 5);
        tb_scope_end(&b, GMT_OP_AllReduce, id + 1 + (uint32_t)m, 0, 5);
    }
    tb_scope_end(&b, GMT_OP_Group, id, 0, 100);
    flush(&b, f);
    for (long g = 0; g < groups; g++) {
        uint32_t like = id;
        id += (uint32_t)members + 1;
        tb_scope_begin(&b, GMT_OP_Group, id, 0, 0, 0, 1000);
        tb_group_repeat(&b, id, (uint32_t)members, like);
        tb_scope_end(&b, GMT_OP_Group, id, 0, 100);
        if (b.len >= 1 << 16)
            flush(&b, f);
    }
    struct gmt_rec_free fr = {.address = 0x7e0000000000ull, .dt = 10};
    tb_rec(&b, GMT_REC_FREE, GMT_API_cudaFree, &fr, sizeof fr, NULL, 0);
    struct gmt_rec_end e = {.time_ns = TB_T0 + 1000000};
    tb_rec(&b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
    flush(&b, f);
    tb_free(&b);
    return fclose(f) == 0 ? 0 : 1;
}
