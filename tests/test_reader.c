/* test_reader.c: the trace reader on well-formed, cut, malformed and newer traces built in memory. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "idnames.h"
#include "reader.h"
#include "trace.h"
#include "golden/tracebuild.h"
#include "fuzz/fuzz_reader.c"

/* Opens the first len bytes of b as a trace; the stream lives in *fp. */
/* A loaded trace's scopes, each into a slot of its own among a few: a test holds several
 * at once, and a repeated group's member is made on demand. */
static struct gmt_scope scope_slots[16];
static unsigned scope_slot;
static const struct gmt_scope *scope_of_id(const struct gmt_trace *t, uint32_t id)
{
    return gmt_trace_scope_by_id(t, id, &scope_slots[scope_slot++ % 16]);
}
static const struct gmt_scope *scope_nth(const struct gmt_trace *t, size_t i)
{
    return gmt_trace_scope(t, i, &scope_slots[scope_slot++ % 16]);
}

static int open_mem(const struct tb *b, size_t len, FILE **fp, struct gmt_reader **r,
                    char *err, size_t errlen)
{
    static const uint8_t none[1];
    *fp = fmemopen((void *)(len ? b->p : none), len ? len : 1, "rb");
    cr_assert_not_null(*fp);
    if (len == 0)
        fgetc(*fp);
    return gmt_reader_fopen(r, *fp, "t.gmt", err, errlen);
}

/* Reads a whole trace; returns the last gmt_reader_next() result, records counted in *n. */
static int read_all(struct gmt_reader *r, uint64_t *n, char *err, size_t errlen)
{
    struct gmt_event ev;
    int rc;
    *n = 0;
    while ((rc = gmt_reader_next(r, &ev, err, errlen)) > 0)
        (*n)++;
    return rc;
}

/* Expects reading b to fail with a message containing each of the given parts. */
static void expect_error(const struct tb *b, const char *part1, const char *part2)
{
    FILE *f;
    struct gmt_reader *r;
    char err[512] = "";
    int rc = open_mem(b, b->len, &f, &r, err, sizeof err);
    if (rc == 0) {
        uint64_t n;
        rc = read_all(r, &n, err, sizeof err);
        gmt_reader_close(r);
    }
    fclose(f);
    cr_assert_eq(rc, -1, "expected an error containing '%s', got rc %d", part1, rc);
    cr_expect(strstr(err, part1) != NULL, "'%s' lacks '%s'", err, part1);
    if (part2)
        cr_expect(strstr(err, part2) != NULL, "'%s' lacks '%s'", err, part2);
    cr_expect(strncmp(err, "t.gmt: ", 7) == 0, "'%s' does not name the file", err);
    cr_expect(strchr(err, '\n') == NULL, "'%s' is not one line", err);
}

Test(reader, round_trips_every_record_type)
{
    struct tb b = { 0 };
    tb_sample(&b);
    FILE *f;
    struct gmt_reader *r;
    char err[512];
    cr_assert_eq(open_mem(&b, b.len, &f, &r, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    int seen[GMT_REC_TYPE_MAX] = { 0 };
    size_t i = 0;
    int rc;
    while ((rc = gmt_reader_next(r, &ev, err, sizeof err)) > 0) {
        cr_assert_lt(i, b.nrec);
        const struct gmt_rec *want = (const void *)(b.p + b.off[i]);
        cr_expect_eq(ev.offset, b.off[i]);
        cr_expect_eq(ev.index, i);
        cr_assert_eq(ev.rec->size, want->size, "record %zu", i);
        cr_expect(memcmp(ev.rec, want, want->size) == 0, "record %zu (%s) differs", i,
                  gmt_rec_type_name(want->type));
        if (ev.rec->type < GMT_REC_TYPE_MAX)
            seen[ev.rec->type]++;
        i++;
    }
    cr_expect_eq(rc, 0, "%s", err);
    cr_expect_eq(i, b.nrec);
    /* the sample is a 1.0 trace: every type of 1.0 (2.0's ALLOC_SMALL: tb_allocs) */
    for (unsigned t = 1; t < GMT_REC_ALLOC_SMALL; t++)
        cr_expect(seen[t] > 0, "sample lacks %s", gmt_rec_type_name(t));
    cr_expect(gmt_reader_complete(r));
    uint64_t off;
    cr_expect_not(gmt_reader_cut(r, &off));
    cr_expect_eq(gmt_reader_records(r), b.nrec);
    cr_expect_eq(gmt_reader_offset(r), b.len);
    cr_assert_not_null(gmt_reader_process(r));
    cr_expect_eq(gmt_reader_process(r)->monotonic_ns, TB_T0);
    gmt_reader_close(r);
    fclose(f);
    tb_free(&b);
}

Test(reader, decodes_variable_parts)
{
    struct tb b = { 0 };
    tb_sample(&b);
    FILE *f;
    struct gmt_reader *r;
    char err[512];
    cr_assert_eq(open_mem(&b, b.len, &f, &r, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    int checked = 0;
    while (gmt_reader_next(r, &ev, err, sizeof err) > 0) {
        const void *p = ev.rec;
        if (ev.rec->type == GMT_REC_PROCESS) {
            uint32_t len;
            const char *cmd = gmt_process_cmdline(p, &len);
            cr_expect_str_eq(gmt_process_host(p), "node-01");
            cr_expect_str_eq(cmd, "python3");
            cr_expect_str_eq(cmd + 8, "train.py");
            cr_expect_eq(len, 30);
            checked++;
        } else if (ev.rec->type == GMT_REC_ENV) {
            cr_expect_str_eq(gmt_env_strings(p), "NCCL_BUFFSIZE=4194304");
            checked++;
        } else if (ev.rec->type == GMT_REC_MODULE_LOAD) {
            cr_expect_str_eq(gmt_module_path(p), "/usr/lib/libnccl.so.2");
            cr_expect_eq(gmt_module_build_id(p)[0], 0xde);
            checked++;
        } else if (ev.rec->type == GMT_REC_ALLOC) {
            const struct gmt_rec_alloc *a = p;
            if (a->kind == GMT_KIND_MAPPING) {
                cr_assert_not_null(gmt_alloc_ext(a));
                cr_expect_eq(gmt_alloc_ext(a)->related, 0x1001);
                checked++;
            } else if (a->kind == GMT_KIND_DEVICE) {
                cr_expect_null(gmt_alloc_ext(a));
                checked++;
            }
        } else if (ev.rec->type == GMT_REC_FREE) {
            const struct gmt_rec_free *fr = p;
            if (fr->h.aux == GMT_API_cuMemUnmap)
                cr_expect_eq(gmt_free_ext(fr)->stack_id, 1);
            else
                cr_expect_null(gmt_free_ext(fr));
            checked++;
        }
    }
    cr_expect_eq(checked, 7);
    gmt_reader_close(r);
    fclose(f);
    tb_free(&b);
}

/* Expected (tid, time) of records of the sample, by index. */
Test(reader, decodes_thread_and_time)
{
    static const struct { size_t i; uint32_t tid; uint64_t t; } want[] = {
        { 0, 0, TB_T0 },                        /* PROCESS: its anchor */
        { 1, 0, 0 },                            /* ENV: no time */
        { 2, 0, TB_T0 + 1000 },                 /* MODULE_LOAD: absolute */
        { 3, 4242, 0 },                         /* CHUNK */
        { 4, 4242, TB_T0 + 2000 },              /* THREAD sets the clock */
        { 9, 4242, TB_T0 + 2500 },              /* ALLOC dt 500 */
        { 10, 4242, TB_T0 + 3500 },             /* COMM dt 1000 */
        { 14, 4250, TB_T0 + 10000 },            /* other thread's THREAD */
        { 15, 4250, TB_T0 + 10020 },            /* its own dt chain */
        { 20, 4242, TB_T0 + 7000000000ull },    /* TIME resets */
        { 21, 4242, TB_T0 + 7000000005ull },    /* back on 4242 after 4250's chunk */
        { 26, 4242, TB_T0 + 8000000500ull },    /* END */
    };
    struct tb b = { 0 };
    tb_sample(&b);
    FILE *f;
    struct gmt_reader *r;
    char err[512];
    cr_assert_eq(open_mem(&b, b.len, &f, &r, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    size_t k = 0;
    while (gmt_reader_next(r, &ev, err, sizeof err) > 0) {
        if (k < sizeof want / sizeof want[0] && ev.index == want[k].i) {
            cr_expect_eq(ev.tid, want[k].tid, "record %zu tid %u", want[k].i, ev.tid);
            cr_expect_eq(ev.time_ns, want[k].t, "record %zu (%s) time %llu, want %llu",
                         want[k].i, gmt_rec_type_name(ev.rec->type),
                         (unsigned long long)ev.time_ns, (unsigned long long)want[k].t);
            k++;
        }
    }
    cr_expect_eq(k, sizeof want / sizeof want[0]);
    gmt_reader_close(r);
    fclose(f);
    tb_free(&b);
}

static void chunk(struct tb *b, uint32_t tid)
{
    struct gmt_rec_chunk c = { .tid = tid };
    tb_rec(b, GMT_REC_CHUNK, 0, &c, sizeof c, NULL, 0);
}

static void alloc_dt(struct tb *b, uint32_t dt)
{
    struct gmt_rec_alloc a = { .dt = dt, .kind = GMT_KIND_DEVICE, .bytes = 1 };
    tb_rec(b, GMT_REC_ALLOC, GMT_API_cuMemAlloc, &a, sizeof a, NULL, 0);
}

static void thread_at(struct tb *b, uint32_t tid, uint64_t t)
{
    struct gmt_rec_thread th = { .time_ns = t, .tid = tid };
    tb_rec(b, GMT_REC_THREAD, 0, &th, sizeof th, NULL, 0);
}

/* Times of every record of b, read back, in *t (at most n). Returns the count. */
static size_t times_of(const struct tb *b, uint64_t *t, size_t n)
{
    FILE *f;
    struct gmt_reader *r;
    char err[512];
    cr_assert_eq(open_mem(b, b->len, &f, &r, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    size_t k = 0;
    int rc;
    while ((rc = gmt_reader_next(r, &ev, err, sizeof err)) > 0)
        if (k < n)
            t[k++] = ev.time_ns;
    cr_assert_eq(rc, 0, "%s", err);
    gmt_reader_close(r);
    fclose(f);
    return k;
}

Test(reader, keeps_each_thread_clock_across_chunks)
{
    struct tb b = { 0 };
    tb_header(&b);
    chunk(&b, 1);
    thread_at(&b, 1, 100);
    alloc_dt(&b, 5);
    chunk(&b, 2);
    thread_at(&b, 2, 1000);
    alloc_dt(&b, 1);
    chunk(&b, 1);
    alloc_dt(&b, 7);
    uint64_t t[8];
    cr_assert_eq(times_of(&b, t, 8), 8);
    cr_expect_eq(t[2], 105);
    cr_expect_eq(t[5], 1001);
    cr_expect_eq(t[7], 112, "thread 1's clock went on from 105: got %llu",
                 (unsigned long long)t[7]);
    tb_free(&b);
}

Test(reader, reports_no_time_before_a_thread_clock)
{
    struct tb b = { 0 };
    tb_header(&b);
    chunk(&b, 9);
    alloc_dt(&b, 50);
    thread_at(&b, 9, 400);
    alloc_dt(&b, 50);
    uint64_t t[4];
    cr_assert_eq(times_of(&b, t, 4), 4);
    cr_expect_eq(t[1], 0);
    cr_expect_eq(t[3], 450);
    tb_free(&b);
}

Test(reader, skips_unknown_types_without_touching_clocks)
{
    struct tb b = { 0 };
    tb_header(&b);
    chunk(&b, 3);
    thread_at(&b, 3, 1000);
    struct { struct gmt_rec h; uint32_t dt, x; uint64_t time_ns; } future = { .dt = 999, .time_ns = 7 };
    tb_rec(&b, 250, 17, &future, sizeof future, NULL, 0);
    alloc_dt(&b, 10);
    FILE *f;
    struct gmt_reader *r;
    char err[512];
    cr_assert_eq(open_mem(&b, b.len, &f, &r, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    cr_assert_eq(gmt_reader_next(r, &ev, err, sizeof err), 1);
    cr_assert_eq(gmt_reader_next(r, &ev, err, sizeof err), 1);
    cr_assert_eq(gmt_reader_next(r, &ev, err, sizeof err), 1, "%s", err);
    cr_expect_eq(ev.rec->type, 250);
    cr_expect_eq(ev.rec->size, 24);
    cr_expect_eq(ev.time_ns, 0);
    cr_expect_eq(ev.tid, 3);
    cr_expect_str_eq(gmt_rec_type_name(ev.rec->type), "?");
    cr_assert_eq(gmt_reader_next(r, &ev, err, sizeof err), 1, "%s", err);
    cr_expect_eq(ev.rec->type, GMT_REC_ALLOC);
    cr_expect_eq(ev.time_ns, 1010);
    cr_expect_eq(gmt_reader_next(r, &ev, err, sizeof err), 0);
    gmt_reader_close(r);
    fclose(f);
    tb_free(&b);
}

Test(reader, accepts_records_longer_than_known)
{
    struct tb b = { 0 };
    tb_header_ex(&b, GMT_BYTE_ORDER_MARK, 1, 9, 64); /* a newer minor with a longer header */
    struct { struct gmt_rec_alloc a; uint64_t future; } a48 = { .a = { .bytes = 48 }, .future = ~0ull };
    tb_rec(&b, GMT_REC_ALLOC, GMT_API_cuMemAlloc, &a48, sizeof a48, NULL, 0);
    struct { struct gmt_rec_alloc_ext x; uint64_t future[2]; } a80 = { .x = { .related = 5 } };
    tb_rec(&b, GMT_REC_ALLOC, GMT_API_cuMemAlloc, &a80, sizeof a80, NULL, 0);
    struct { struct gmt_rec_end e; uint64_t future; } e = { .e = { .time_ns = 1 } };
    tb_rec(&b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
    FILE *f;
    struct gmt_reader *r;
    char err[512];
    cr_assert_eq(open_mem(&b, b.len, &f, &r, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    cr_assert_eq(gmt_reader_next(r, &ev, err, sizeof err), 1, "%s", err);
    cr_expect_eq(ev.offset, 64);
    cr_expect_eq(ev.rec->size, 48);
    cr_expect_null(gmt_alloc_ext((const void *)ev.rec), "48 bytes can't hold the 64-byte ext");
    cr_assert_eq(gmt_reader_next(r, &ev, err, sizeof err), 1, "%s", err);
    cr_expect_eq(ev.rec->size, 80);
    cr_assert_not_null(gmt_alloc_ext((const void *)ev.rec));
    cr_expect_eq(gmt_alloc_ext((const void *)ev.rec)->related, 5);
    cr_assert_eq(gmt_reader_next(r, &ev, err, sizeof err), 1, "%s", err);
    cr_expect(gmt_reader_complete(r));
    gmt_reader_close(r);
    fclose(f);
    tb_free(&b);
}

/* The heart of crash safety: a file ending anywhere yields exactly the whole records
 * before that point, and says where the partial one starts. */
Test(reader, handles_a_cut_at_every_byte)
{
    struct tb b = { 0 };
    tb_sample(&b);
    const size_t hs = sizeof(struct gmt_file_header);
    for (size_t len = 0; len < b.len; len++) {
        FILE *f;
        struct gmt_reader *r;
        char err[512] = "";
        int rc = open_mem(&b, len, &f, &r, err, sizeof err);
        if (len < hs) {
            cr_assert_eq(rc, -1, "len %zu: a cut header must not open", len);
            cr_expect(strstr(err, len ? "cut inside its 32-byte file header" : "empty file"),
                      "len %zu: %s", len, err);
            fclose(f);
            continue;
        }
        cr_assert_eq(rc, 0, "len %zu: %s", len, err);
        size_t whole = 0;
        while (whole < b.nrec && b.off[whole] + ((const struct gmt_rec *)(const void *)
                                               (b.p + b.off[whole]))->size <= len)
            whole++;
        uint64_t n;
        rc = read_all(r, &n, err, sizeof err);
        cr_assert_eq(rc, 0, "len %zu: %s", len, err);
        cr_assert_eq(n, whole, "len %zu: %llu records, want %zu", len, (unsigned long long)n,
                     whole);
        uint64_t off = 0;
        cr_assert_lt(whole, b.nrec);
        int boundary = b.off[whole] == len;
        cr_assert_eq(gmt_reader_cut(r, &off), !boundary, "len %zu", len);
        if (!boundary)
            cr_assert_eq(off, b.off[whole], "len %zu: cut at %llu", len, (unsigned long long)off);
        cr_expect_eq(gmt_reader_offset(r), b.off[whole]);
        cr_expect_not(gmt_reader_complete(r));
        cr_expect_eq(gmt_reader_records(r), whole);
        /* Asking again stays at the end. */
        struct gmt_event ev;
        cr_expect_eq(gmt_reader_next(r, &ev, err, sizeof err), 0);
        gmt_reader_close(r);
        fclose(f);
    }
    tb_free(&b);
}

Test(reader, reads_a_file_by_path)
{
    struct tb b = { 0 };
    tb_sample(&b);
    char path[] = "/tmp/gmt-test-reader-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cr_assert_eq(tb_write(&b, path), 0);
    struct gmt_reader *r;
    char err[512];
    cr_assert_eq(gmt_reader_open(&r, path, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(gmt_reader_path(r), path);
    uint64_t n;
    cr_expect_eq(read_all(r, &n, err, sizeof err), 0);
    cr_expect_eq(n, b.nrec);
    gmt_reader_close(r);
    unlink(path);
    cr_expect_eq(gmt_reader_open(&r, path, err, sizeof err), -1);
    cr_expect(strstr(err, "No such file") != NULL, "%s", err);
    tb_free(&b);
}

Test(reader, rejects_bad_magic)
{
    struct tb b = { 0 };
    tb_sample(&b);
    b.p[0] = 'X';
    expect_error(&b, "offset 0: not a gpumemtrace trace", NULL);
    tb_free(&b);
}

Test(reader, rejects_big_endian)
{
    struct tb b = { 0 };
    tb_header_ex(&b, 0x04030201u, 1, 0, 32);
    expect_error(&b, "offset 8:", "big-endian");
    tb_free(&b);
    tb_header_ex(&b, 0x12345678u, 1, 0, 32);
    expect_error(&b, "offset 8: bad byte order mark 0x12345678", NULL);
    tb_free(&b);
}

Test(reader, rejects_newer_and_older_major)
{
    struct tb b = { 0 };
    tb_header_ex(&b, GMT_BYTE_ORDER_MARK, 3, 0, 32);
    expect_error(&b, "t.gmt: trace format 3.0 is newer than this gpumemtrace (reads 1.x and 2.x)",
                 NULL);
    tb_free(&b);
    tb_header_ex(&b, GMT_BYTE_ORDER_MARK, 0, 3, 32);
    expect_error(&b, "offset 12: trace format 0.3 is not supported (reads 1.x and 2.x)", NULL);
    tb_free(&b);
}

Test(reader, accepts_major_1_and_2)
{
    for (uint16_t major = GMT_VERSION_MAJOR_MIN; major <= GMT_VERSION_MAJOR; major++) {
        struct tb b = { 0 };
        tb_header_ex(&b, GMT_BYTE_ORDER_MARK, major, 4, 32);
        chunk(&b, 1);
        thread_at(&b, 1, 100);
        alloc_dt(&b, 5);
        uint64_t t[3];
        cr_expect_eq(times_of(&b, t, 3), 3, "version %u", major);
        cr_expect_eq(t[2], 105, "version %u", major);
        tb_free(&b);
    }
}

/* An ALLOC_SMALL whose size field says `size`, written by hand (tb_rec always writes a
 * valid size): at most its 32 bytes, then zeros up to `size`. */
static void alloc_small(struct tb *b, uint32_t dt, uint32_t size)
{
    struct gmt_rec_alloc_small r = {
        .h = { GMT_REC_ALLOC_SMALL, GMT_SMALL_AUX(GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0), size },
        .address = 0x7e00, .bytes = 4096, .dt = dt, .stack_id = 3 };
    if (b->nrec < TB_MAX_RECS)
        b->off[b->nrec++] = b->len;
    tb_put(b, &r, size < sizeof r ? size : sizeof r);
    if (size > sizeof r)
        tb_put(b, NULL, size - sizeof r);
}

Test(reader, reads_alloc_small_as_a_timed_record)
{
    struct tb b = { 0 };
    tb_header_current(&b);
    chunk(&b, 1);
    thread_at(&b, 1, 100);
    alloc_dt(&b, 5);
    alloc_small(&b, 7, 32);
    alloc_small(&b, 11, 48); /* longer: a newer minor's fields, skipped */
    alloc_dt(&b, 2);
    uint64_t t[6];
    cr_assert_eq(times_of(&b, t, 6), 6);
    cr_expect_eq(t[2], 105);
    cr_expect_eq(t[3], 112, "ALLOC_SMALL moves the clock by its dt: %llu", (unsigned long long)t[3]);
    cr_expect_eq(t[4], 123);
    cr_expect_eq(t[5], 125, "later records go on from it: %llu", (unsigned long long)t[5]);
    FILE *f;
    struct gmt_reader *r;
    char err[512];
    cr_assert_eq(open_mem(&b, b.len, &f, &r, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    for (int i = 0; i < 4; i++)
        cr_assert_eq(gmt_reader_next(r, &ev, err, sizeof err), 1, "%s", err);
    cr_expect_eq(ev.rec->type, GMT_REC_ALLOC_SMALL);
    cr_expect_str_eq(gmt_rec_type_name(ev.rec->type), "ALLOC_SMALL");
    cr_expect_eq(gmt_rec_fixed_size(GMT_REC_ALLOC_SMALL), 32);
    const struct gmt_rec_alloc_small *a = (const void *)ev.rec;
    cr_expect_eq(GMT_SMALL_API(a->h.aux), GMT_API_cudaMalloc);
    cr_expect_eq(GMT_SMALL_KIND(a->h.aux), GMT_KIND_DEVICE);
    cr_expect_eq(a->bytes, 4096);
    cr_expect_eq(a->stack_id, 3);
    uint64_t clock;
    cr_expect(gmt_reader_thread_clock(r, &clock));
    cr_expect_eq(clock, 112);
    gmt_reader_close(r);
    fclose(f);
    tb_free(&b);
}

Test(reader, rejects_a_bad_alloc_small_size)
{
    static const struct { size_t size; const char *want; } bad[] = {
        { 24, "ALLOC_SMALL record of 24 bytes is shorter than its fixed part (32 bytes)" },
        { 8, "ALLOC_SMALL record of 8 bytes is shorter than its fixed part (32 bytes)" },
        { 36, "record size 36 is not a multiple of 8" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tb b = { 0 };
        tb_header_current(&b);
        chunk(&b, 1);
        thread_at(&b, 1, 100);
        size_t at = b.len;
        alloc_small(&b, 7, bad[i].size);
        alloc_dt(&b, 1);
        char want[160];
        snprintf(want, sizeof want, "t.gmt: offset %zu: %s", at, bad[i].want);
        expect_error(&b, want, NULL);
        tb_free(&b);
    }
}

/* b's first len bytes as an image in memory (the caller frees it), opened by two
 * readers, *one and *many, which must agree on whether it opens (*rc: 0 when it does). */
static void *open_twice(const struct tb *b, size_t len, struct gmt_reader **one,
                        struct gmt_reader **many, int *rc)
{
    void *img = aligned_alloc(8, (len + 15) / 8 * 8);
    cr_assert_not_null(img);
    memcpy(img, b->p, len);
    char err[512] = "";
    *rc = gmt_reader_open_mem(one, img, len, "t.gmt", err, sizeof err);
    int rc2 = gmt_reader_open_mem(many, img, len, "t.gmt", err, sizeof err);
    cr_assert_eq(*rc, rc2);
    return img;
}

/* Two readers of one image, at their ends: cut at the same place after as many
 * records, complete alike; both closed. */
static void expect_same_end_and_close(struct gmt_reader *one, struct gmt_reader *many)
{
    uint64_t c1 = 0, c2 = 0;
    cr_expect_eq(gmt_reader_cut(one, &c1), gmt_reader_cut(many, &c2));
    cr_expect_eq(c1, c2);
    cr_expect_eq(gmt_reader_records(one), gmt_reader_records(many));
    cr_expect_eq(gmt_reader_complete(one), gmt_reader_complete(many));
    gmt_reader_close(one);
    gmt_reader_close(many);
}

/* Reads b's first len bytes record by record and in batches of `per`, from an image in
 * memory: both must give the same records, times and threads, and end the same way. */
static void expect_batches_match(const struct tb *b, size_t len, size_t per)
{
    struct gmt_reader *one, *many;
    char err1[512] = "", err2[512] = "";
    int rc1;
    void *img = open_twice(b, len, &one, &many, &rc1);
    if (rc1 == 0) {
        struct gmt_event e1, e2[7];
        size_t got = 0, used = 0;
        int more = 1;
        for (;;) {
            rc1 = gmt_reader_next(one, &e1, err1, sizeof err1);
            if (used == got && more > 0) {
                got = gmt_reader_next_batch(many, e2, per, &more, err2, sizeof err2);
                used = 0;
            }
            if (rc1 <= 0) {
                cr_expect_eq(used, got, "the batches end where the records do");
                cr_expect_eq(more, rc1, "len %zu: %d vs %d (%s)", len, more, rc1, err1);
                cr_expect_str_eq(err2, err1);
                break;
            }
            cr_assert_lt(used, got, "len %zu: record %llu missing from the batches", len,
                         (unsigned long long)e1.index);
            cr_expect_eq(e2[used].rec, e1.rec);
            cr_expect_eq(e2[used].offset, e1.offset);
            cr_expect_eq(e2[used].index, e1.index);
            cr_expect_eq(e2[used].time_ns, e1.time_ns, "record %llu",
                         (unsigned long long)e1.index);
            cr_expect_eq(e2[used].tid, e1.tid);
            used++;
        }
        expect_same_end_and_close(one, many);
    }
    free(img);
}

/* check(trace, length, per) on the sample cut at every 4 bytes, with each record's size
 * broken in turn, and on a trace of ALLOC_SMALL records. */
static void on_cuts_and_broken_sizes(void (*check)(const struct tb *, size_t, size_t))
{
    struct tb b = { 0 };
    tb_sample(&b);
    for (size_t len = 0; len <= b.len; len += 4)
        check(&b, len, 1 + len % 7);
    /* a size of 12 (off the 8-byte grid), and a header of 8 zero bytes (type 0, size 0:
     * a walk that would never move; what a file system leaves after a crash), at every
     * record */
    for (size_t i = 0; i < 2 * b.nrec; i++) {
        struct tb x = { 0 };
        tb_sample(&x);
        uint32_t bad = 12;
        if (i < b.nrec)
            memcpy(x.p + x.off[i] + 4, &bad, 4);
        else
            memset(x.p + x.off[i - b.nrec], 0, 8);
        check(&x, x.len, 5);
        tb_free(&x);
    }
    tb_free(&b);
    tb_allocs(&b, 1);
    check(&b, b.len, 7);
    tb_free(&b);
}

Test(reader, reads_the_same_in_batches, .timeout = 60)
{
    on_cuts_and_broken_sizes(expect_batches_match);
}

/* Reads b's first len bytes record by record, and by skimming (allocations and frees
 * only counted, the rest handed out in batches of `per`, and one record by
 * gmt_reader_next_batch wherever the skim stops; min_time 0, or past every time at each
 * third call): the records handed out must be the others, the counts and times of the
 * skimmed ones those of the allocations and frees between, and both end the same way. */
static void expect_skim_matches(const struct tb *b, size_t len, size_t per)
{
    const uint32_t mask = (1u << GMT_REC_ALLOC) | (1u << GMT_REC_ALLOC_SMALL) |
                          (1u << GMT_REC_FREE);
    struct gmt_reader *one, *many;
    char err1[512] = "", err2[512] = "";
    int rc1;
    void *img = open_twice(b, len, &one, &many, &rc1);
    if (rc1 == 0) {
        struct gmt_event e1, e2[7];
        int more = 1;
        for (unsigned call = 0;; call++) {
            struct gmt_skim sk;
            size_t got = gmt_reader_skim(many, mask, call % 3 == 2 ? UINT64_MAX : 0, e2, per,
                                         &sk);
            uint64_t n = 0, first = 0, last = 0;
            for (size_t used = 0; used < got || n < sk.n;) {
                rc1 = gmt_reader_next(one, &e1, err1, sizeof err1);
                cr_assert_eq(rc1, 1, "len %zu: the skim read past the records (%s)", len, err1);
                if (mask >> e1.rec->type & 1) {
                    first = n++ ? first : e1.time_ns;
                    last = e1.time_ns;
                    continue;
                }
                cr_assert_lt(used, got, "len %zu: record %llu neither skimmed nor handed out",
                             len, (unsigned long long)e1.index);
                cr_expect_eq(e2[used].rec, e1.rec);
                cr_expect_eq(e2[used].offset, e1.offset);
                cr_expect_eq(e2[used].index, e1.index);
                cr_expect_eq(e2[used].time_ns, e1.time_ns);
                cr_expect_eq(e2[used].tid, e1.tid);
                used++;
            }
            cr_expect_eq(n, sk.n);
            cr_expect_eq(first, sk.first, "len %zu", len);
            cr_expect_eq(last, sk.last, "len %zu", len);
            if (got == per)
                continue;
            /* it stopped: the record there, the general way */
            size_t x = gmt_reader_next_batch(many, e2, 1, &more, err2, sizeof err2);
            rc1 = gmt_reader_next(one, &e1, err1, sizeof err1);
            if (!x) {
                cr_expect_eq(more, rc1, "len %zu: %d vs %d (%s)", len, more, rc1, err1);
                cr_expect_str_eq(err2, err1);
                break;
            }
            cr_assert_eq(rc1, 1);
            cr_expect_eq(e2[0].rec, e1.rec);
            cr_expect_eq(e2[0].time_ns, e1.time_ns);
            if (more <= 0) {
                cr_expect_eq(gmt_reader_next(one, &e1, err1, sizeof err1), more);
                break;
            }
        }
        expect_same_end_and_close(one, many);
    }
    free(img);
}

Test(reader, skims_what_it_reads_record_by_record, .timeout = 60)
{
    on_cuts_and_broken_sizes(expect_skim_matches);
}

/* The events a trace yields through gmt_trace_iter, into ev (at most n). */
static size_t trace_events(const struct tb *b, struct gmt_timed_event *ev, size_t n, uint64_t *records)
{
    char path[] = "/tmp/gmt-test-reader-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, b->p, b->len), (ssize_t)b->len);
    close(fd);
    struct gmt_trace t;
    char err[512];
    int rc = gmt_trace_load(&t, path, err, sizeof err);
    unlink(path);
    cr_assert_eq(rc, 0, "%s", err);
    struct gmt_trace_iter *it = gmt_trace_iter_new(&t);
    cr_assert_not_null(it);
    size_t k = 0, got;
    while (k < n && (got = gmt_trace_iter_next(it, ev + k, n - k)) > 0)
        k += got;
    *records = t.records;
    gmt_trace_iter_free(it);
    gmt_trace_free(&t);
    return k;
}

Test(trace, decodes_alloc_small_as_the_same_event_as_alloc)
{
    struct tb big = { 0 }, small = { 0 };
    tb_allocs(&big, 0);
    tb_allocs(&small, 1);
    cr_assert_eq(big.nrec, small.nrec);
    cr_assert_lt(small.len, big.len, "ALLOC_SMALL is shorter");
    struct gmt_timed_event a[32], s[32];
    memset(a, 0, sizeof a);
    memset(s, 0, sizeof s);
    uint64_t ra, rs;
    size_t na = trace_events(&big, a, 32, &ra), ns = trace_events(&small, s, 32, &rs);
    cr_expect_eq(ra, big.nrec);
    cr_expect_eq(rs, small.nrec);
    cr_assert_eq(na, 10);
    cr_assert_eq(ns, na);
    for (size_t i = 0; i < na; i++) {
        cr_expect_eq(s[i].type, a[i].type, "event %zu", i);
        cr_expect_eq(s[i].time, a[i].time, "event %zu", i);
        cr_expect_eq(s[i].addr, a[i].addr, "event %zu", i);
        cr_expect_eq(s[i].bytes, a[i].bytes, "event %zu", i);
        cr_expect_eq(s[i].tid, a[i].tid, "event %zu", i);
        cr_expect_eq(s[i].stack, a[i].stack, "event %zu", i);
        cr_expect_eq(s[i].scope, a[i].scope, "event %zu", i);
        cr_expect_eq(s[i].device, a[i].device, "event %zu", i);
        cr_expect_eq(s[i].api, a[i].api, "event %zu", i);
        cr_expect_eq(s[i].kind, a[i].kind, "event %zu", i);
    }
    /* the thread's context gives the device, as ALLOC's device -1 does */
    cr_expect_eq(s[0].device, 1);
    cr_expect_eq(s[0].api, GMT_API_cudaMalloc);
    cr_expect_eq(s[1].api, GMT_API_cudaMallocPitch);
    cr_expect_eq(s[0].time, TB_T0 + 1500);
    tb_free(&big);
    tb_free(&small);
}

/* The events of t as a reader that decodes the common records itself takes them (the
 * replay's run_walk): merged while more than one run is left, then the last run walked,
 * allocations, frees and scopes decoded with the inline decoders, the rest with
 * gmt_walk_decode, a record not whole in its segment ending the walk. */
static size_t walked_events(const struct gmt_trace *t, struct gmt_timed_event *ev, size_t n)
{
    struct gmt_trace_iter *it = gmt_trace_iter_new(t);
    cr_assert_not_null(it);
    size_t k = 0, got;
    while (k < n && (got = gmt_trace_iter_merge(it, ev + k, n - k)) > 0)
        k += got;
    struct gmt_walk w;
    if (k < n && gmt_trace_iter_walk(it, &ev[k], &w)) {
        k++;
        cr_expect_not(gmt_trace_iter_walk(it, &ev[k], &w), "one walk, then the end");
        do {
            while (k < n && w.pos < w.lim) {
                const struct gmt_rec *h = (const void *)(w.img + w.pos);
                uint64_t off = w.pos;
                if (h->size < sizeof *h || h->size % GMT_ALIGN || h->size > w.lim - w.pos) {
                    cr_expect_eq(gmt_walk_decode(t, &w, &ev[k]), -1);
                    cr_expect_eq(w.pos, off, "a broken record leaves the walk where it is");
                    goto end;
                }
                switch (h->type) {
                case GMT_REC_ALLOC:
                    w.pos += h->size;
                    gmt_walk_alloc(&w, (const void *)h, &ev[k++]);
                    break;
                case GMT_REC_ALLOC_SMALL:
                    w.pos += h->size;
                    gmt_walk_alloc_small(&w, (const void *)h, &ev[k++]);
                    break;
                case GMT_REC_FREE:
                    w.pos += h->size;
                    gmt_walk_free(&w, (const void *)h, &ev[k++]);
                    break;
                case GMT_REC_SCOPE_BEGIN:
                    w.pos += h->size;
                    gmt_walk_scope_begin(t, &w, (const void *)h, off, &ev[k++]);
                    break;
                case GMT_REC_SCOPE_END:
                    w.pos += h->size;
                    k += gmt_walk_scope_end(t, &w, (const void *)h, off, &ev[k]);
                    break;
                default: {
                    int x = gmt_walk_decode(t, &w, &ev[k]);
                    cr_assert_geq(x, 0);
                    /* on, or still on a GROUP_REPEAT with members left to hand out */
                    cr_expect(w.pos > off || (h->type == GMT_REC_GROUP_REPEAT && w.rep_k));
                    k += (size_t)x;
                }
                }
            }
        } while (k < n && gmt_walk_next_seg(&w));
    }
end:
    gmt_trace_iter_free(it);
    return k;
}

static void expect_same_events(const struct gmt_timed_event *a, size_t na, const struct gmt_timed_event *b,
                               size_t nb, const char *what)
{
    cr_expect_eq(na, nb, "%s: %zu events vs %zu", what, na, nb);
    for (size_t i = 0; i < na && i < nb; i++) {
        cr_expect_eq(a[i].type, b[i].type, "%s: event %zu", what, i);
        cr_expect_eq(a[i].time, b[i].time, "%s: event %zu", what, i);
        cr_expect_eq(a[i].addr, b[i].addr, "%s: event %zu", what, i);
        cr_expect_eq(a[i].bytes, b[i].bytes, "%s: event %zu", what, i);
        cr_expect_eq(a[i].tid, b[i].tid, "%s: event %zu", what, i);
        cr_expect_eq(a[i].stack, b[i].stack, "%s: event %zu", what, i);
        cr_expect_eq(a[i].scope, b[i].scope, "%s: event %zu", what, i);
        cr_expect_eq(a[i].error, b[i].error, "%s: event %zu", what, i);
        cr_expect_eq(a[i].device, b[i].device, "%s: event %zu", what, i);
        cr_expect_eq(a[i].api, b[i].api, "%s: event %zu", what, i);
        cr_expect_eq(a[i].kind, b[i].kind, "%s: event %zu", what, i);
    }
}

/* b's first len bytes loaded from a file, then record `patch` (if below b->nrec) given
 * size `size` in the file, as a file changed after loading: the iteration and the walk
 * must give the same events. Traces that don't load are skipped. */
static void expect_walk_matches(const struct tb *b, size_t len, size_t patch, uint32_t size)
{
    char path[] = "/tmp/gmt-test-walk-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, b->p, len), (ssize_t)len);
    struct gmt_trace t;
    char err[512];
    int rc = gmt_trace_load(&t, path, err, sizeof err);
    if (rc == 0 && patch < b->nrec && b->off[patch] + 8 <= len)
        cr_assert_eq(pwrite(fd, &size, 4, (off_t)b->off[patch] + 4), 4);
    close(fd);
    unlink(path);
    if (rc)
        return;
    struct gmt_timed_event a[64], w[64];
    memset(a, 0, sizeof a);
    memset(w, 0, sizeof w);
    struct gmt_trace_iter *it = gmt_trace_iter_new(&t);
    cr_assert_not_null(it);
    size_t na = 0, got;
    while (na < 64 && (got = gmt_trace_iter_next(it, a + na, 64 - na)) > 0)
        na += got;
    gmt_trace_iter_free(it);
    size_t nw = walked_events(&t, w, 64);
    char what[64];
    snprintf(what, sizeof what, "len %zu, record %zu of size %u", len, patch, size);
    expect_same_events(a, na, w, nw, what);
    gmt_trace_free(&t);
}

Test(trace, walks_the_last_run_as_it_iterates)
{
    struct tb b = { 0 };
    tb_sample(&b);
    /* cut anywhere */
    for (size_t len = 0; len <= b.len; len += 8)
        expect_walk_matches(&b, len, SIZE_MAX, 0);
    /* a record broken, or another size, after loading (a file changed since) */
    static const uint32_t sizes[] = { 0, 8, 16, 24, 4096, 0xfffffff8u };
    for (size_t i = 0; i < b.nrec; i++)
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            expect_walk_matches(&b, b.len, i, sizes[s]);
    /* the main thread's time going back (more runs than threads): its TIME record (the
     * third chunk's first record after the CHUNK) set before and between the others */
    static const uint64_t times[] = { 0, TB_T0 + 1, TB_T0 + 2600, TB_T0 + 9000, TB_T0 + 10030 };
    size_t time_rec = 0;
    for (size_t i = 0; i < b.nrec; i++)
        if (((const struct gmt_rec *)(const void *)(b.p + b.off[i]))->type == GMT_REC_TIME)
            time_rec = i;
    cr_assert_gt(time_rec, 0);
    for (size_t i = 0; i < sizeof times / sizeof times[0]; i++) {
        struct tb x = { 0 };
        tb_sample(&x);
        memcpy(x.p + x.off[time_rec] + 8, &times[i], 8);
        expect_walk_matches(&x, x.len, SIZE_MAX, 0);
        tb_free(&x);
    }
    tb_free(&b);
    for (int small = 0; small < 2; small++) {
        tb_allocs(&b, small);
        expect_walk_matches(&b, b.len, SIZE_MAX, 0);
        tb_free(&b);
    }
}

/* ---- GROUP_REPEAT: expanded when loading ---- */

static int load_tb(const struct tb *b, size_t len, struct gmt_trace *t, char *err, size_t errlen)
{
    char path[] = "/tmp/gmt-test-repeat-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, b->p, len), (ssize_t)len);
    close(fd);
    int rc = gmt_trace_load(t, path, err, errlen);
    unlink(path);
    return rc;
}


/* A trace cut anywhere (at every 8 bytes) loads, or fails with a one-line error. */
static void expect_loads_cut_anywhere(struct tb *b)
{
    struct gmt_trace t;
    char err[256];
    for (size_t len = 0; len <= b->len; len += 8) {
        int rc = load_tb(b, len, &t, err, sizeof err);
        if (rc == 0)
            gmt_trace_free(&t);
        else
            cr_expect(strchr(err, '\n') == NULL);
    }
}

Test(trace, expands_group_repeat_into_the_members_it_stands_for)
{
    struct tb b = { 0 };
    tb_repeats(&b);
    struct gmt_trace t;
    char err[512];
    cr_assert_eq(load_tb(&b, b.len, &t, err, sizeof err), 0, "%s", err);
    cr_expect_eq(t.records, b.nrec, "the file's records, not the expanded ones");
    /* 2 + 2 members written as GROUP_REPEAT: 19's (unknown like), 22's (3 members asked
     * of a group of 2), 25's (its like is before a THREAD record), 28's (no group) */
    cr_expect_eq(t.records_dropped, 5 + 4 + 6 + 4 + 4);
    static const struct { uint32_t id, parent; uint64_t comm, count; int result; } want[] = {
        { 14, 13, 0xa, 256, 0 }, { 15, 13, 0xb, 128, 3 },
        { 17, 16, 0xa, 256, 0 }, { 18, 16, 0xb, 128, 3 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const struct gmt_scope *m = scope_of_id(&t, want[i].id);
        cr_assert_not_null(m, "member %u", want[i].id);
        const struct gmt_scope *g = scope_of_id(&t, want[i].parent);
        cr_assert_not_null(g);
        cr_expect_eq(m->parent_id, want[i].parent);
        cr_expect_eq(m->op, GMT_OP_AllReduce);
        cr_expect_eq(m->comm, want[i].comm);
        cr_expect_eq(m->count, want[i].count);
        cr_expect_eq(m->datatype, 7);
        cr_expect_eq(m->result, want[i].result);
        cr_expect_eq(m->tid, 7u);
        cr_expect_eq(gmt_trace_scope_stack(&t, m), 0u);
        cr_expect_eq(m->t_begin, g->t_begin, "member %u at its group's begin", want[i].id);
        cr_expect_eq(m->t_end, g->t_begin);
        cr_expect_gt(g->t_end, g->t_begin);
    }
    /* nothing made up for the ones that cannot stand */
    for (uint32_t id = 20; id < 31; id++)
        if (id != 22 && id != 25 && id != 28)
            cr_expect_null(scope_of_id(&t, id), "scope %u", id);
    cr_expect_eq(t.n_scopes, 7 + 2 + 4, "7 groups, 2 members, 4 repeated members");
    gmt_trace_free(&t);

    /* cut inside the last GROUP_REPEAT's group: the file's offset */
    size_t cut_at = b.off[b.nrec - 3] + 4;
    cr_assert_eq(load_tb(&b, cut_at, &t, err, sizeof err), 0, "%s", err);
    cr_expect(t.cut);
    cr_expect_eq(t.cut_offset, b.off[b.nrec - 3]);
    cr_expect_eq(t.records, b.nrec - 3);
    gmt_trace_free(&t);
    expect_loads_cut_anywhere(&b);
    tb_free(&b);
}

/* ---- SCOPE_END's call form and SCOPE_OPEN (2.5): expanded when loading ---- */

/* The image tb's bytes expand to; lost records into *lost. */
static uint8_t *expand_tb(const struct tb *b, size_t len, size_t *out_len, uint64_t *lost)
{
    uint8_t *img = malloc(len ? len : 8), *out = NULL;
    cr_assert_not_null(img);
    memcpy(img, b->p, len);
    uint64_t records = 0, cut = 0;
    char err[512];
    int rc = gmt_trace_expand(img, len, "mem", &out, out_len, &records, &cut, lost, err,
                              sizeof err);
    free(img);
    cr_assert_eq(rc, 0, "%s", err);
    return out;
}

Test(trace, call_form_expands_to_the_plain_records_it_stands_for)
{
    struct tb call = { 0 }, plain = { 0 };
    tb_calls(&call, 1);
    tb_calls(&plain, 0);
    cr_assert_lt(call.len, plain.len);
    size_t n = 0;
    uint64_t lost = 1;
    uint8_t *out = expand_tb(&call, call.len, &n, &lost);
    cr_expect_eq(lost, 0);
    /* byte for byte: fields (absent ones from the thread's own previous call) and dts */
    cr_assert_eq(n, plain.len);
    for (size_t k = 0; k < plain.nrec; k++) {
        size_t at = plain.off[k];
        const struct gmt_rec *h = (const void *)(plain.p + at);
        cr_expect(memcmp(out + at, plain.p + at, h->size) == 0, "record %zu (type %u) differs",
                  k, h->type);
    }
    free(out);
    /* and loaded: the same scopes at the same times, the file's own record count */
    struct gmt_trace a, b;
    char err[512];
    cr_assert_eq(load_tb(&call, call.len, &a, err, sizeof err), 0, "%s", err);
    cr_assert_eq(load_tb(&plain, plain.len, &b, err, sizeof err), 0, "%s", err);
    cr_expect_eq(a.records, call.nrec);
    cr_expect_eq(a.records_dropped, 0);
    cr_expect(a.complete);
    cr_assert_eq(a.n_scopes, 6);
    cr_assert_eq(b.n_scopes, 6);
    for (size_t i = 0; i < a.n_scopes; i++) {
        const struct gmt_scope *x = scope_nth(&a, i), *y = scope_nth(&b, i);
        cr_expect_eq(x->id, y->id);
        cr_expect_eq(x->tid, y->tid);
        cr_expect_eq(x->comm, y->comm, "scope %u", x->id);
        cr_expect_eq(x->count, y->count, "scope %u", x->id);
        cr_expect_eq(x->datatype, y->datatype, "scope %u", x->id);
        cr_expect_eq(x->result, y->result);
        cr_expect_eq(x->t_begin, y->t_begin, "scope %u", x->id);
        cr_expect_eq(x->t_end, y->t_end, "scope %u", x->id);
        cr_expect_eq(gmt_trace_scope_peer(&a, x), gmt_trace_scope_peer(&b, y));
    }
    /* what the table in tb_calls says, decoded: thread 7 from TB_T0 + 700 */
    const struct gmt_scope *s1 = scope_of_id(&a, 1), *s4 = scope_of_id(&a, 4);
    const struct gmt_scope *s5 = scope_of_id(&a, 5), *s6 = scope_of_id(&a, 6);
    cr_assert(s1 && s4 && s5 && s6);
    cr_expect_eq(s1->t_begin, TB_T0 + 700 + 25 + 700);
    cr_expect_eq(s1->t_end, TB_T0 + 700 + 25 + 1000);
    cr_expect_eq(s4->count, 512, "no field: all the previous call form's");
    cr_expect_eq(s4->comm, 0xa);
    cr_expect_eq(s5->comm, 0xb, "thread 8's own previous call, not thread 7's");
    cr_expect_eq(s5->count, 64);
    cr_expect_eq(s5->result, 0);
    cr_expect_eq(s6->datatype, 3);
    cr_expect_eq(gmt_trace_scope_peer(&a, s6), 5);
    cr_expect_eq(s6->count, 512);
    cr_expect_eq(s6->t_end - s6->t_begin, 60);
    cr_expect_eq(a.t_last, b.t_last);
    gmt_trace_free(&a);
    gmt_trace_free(&b);
    tb_free(&call);
    tb_free(&plain);
}

/* Call forms that cannot be restored: each counts 2 records lost; the rest loads, with the
 * thread's times as its dts say. */
Test(trace, call_form_that_cannot_be_restored_is_dropped_and_counted)
{
    struct tb b = { 0 };
    tb_process_min(&b);
    struct gmt_rec_scope_begin f = { .comm = 0xa, .count = 256, .stream = 0x77, .datatype = 7,
                                     .peer = -1 };
    tb_chunk(&b, 7);
    tb_thread_at(&b, 7, TB_T0 + 100);
    tb_scope_call(&b, GMT_OP_AllReduce, 1, 0, 100, 50, GMT_CALL_HAS_COMM, &f); /* no previous */
    tb_scope_call(&b, GMT_OP_AllReduce, 2, 0, 100, 101, GMT_CALL_HAS_ALL, &f); /* duration > dt */
    size_t bad = tb_rec(&b, GMT_REC_SCOPE_END, GMT_OP_AllReduce,
                        &(struct gmt_rec_scope_call){ .e = { .dt = 100, .scope_id = 3 },
                                                      .has = GMT_CALL_HAS_ALL },
                        GMT_SCOPE_CALL_MIN + 16, NULL, 0); /* 4 fields said, 2 there */
    (void)bad;
    tb_scope_call(&b, GMT_OP_AllReduce, 4, 0, 100, 50, GMT_CALL_HAS_ALL, &f);
    tb_scope_call(&b, GMT_OP_Broadcast, 5, 0, 100, 50, 0, &f); /* from 4's */
    tb_chunk(&b, 8); /* another thread's first call form: thread 7's are not its own */
    tb_thread_at(&b, 8, TB_T0 + 200);
    tb_scope_call(&b, GMT_OP_AllReduce, 6, 0, 10, 10, GMT_CALL_HAS_COUNT, &f);
    tb_chunk(&b, 7);
    tb_thread_at(&b, 7, TB_T0 + 5000); /* the thread starts afresh */
    f.count = 9;
    tb_scope_call(&b, GMT_OP_AllReduce, 7, 0, 100, 50, GMT_CALL_HAS_COUNT, &f);
    tb_alloc_at(&b, GMT_API_cudaMalloc, GMT_KIND_DEVICE, 0, 0x7e0000000000ull, TB_MIB, 0, -1, 30);
    tb_scope_call(&b, GMT_OP_AllReduce, 8, 0, 100, 50, GMT_CALL_HAS_ALL, &f);
    struct gmt_rec_end e = { .time_ns = TB_T0 + 9000, .records_dropped = 1 };
    tb_rec(&b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);

    struct gmt_trace t;
    char err[512];
    cr_assert_eq(load_tb(&b, b.len, &t, err, sizeof err), 0, "%s", err);
    cr_expect_eq(t.records_dropped, 1 + 2 * 5, "1, 2, 3, 6 and 7 lost");
    cr_expect_eq(t.n_scopes, 3);
    for (uint32_t id = 1; id <= 8; id++) {
        bool kept = id == 4 || id == 5 || id == 8;
        cr_expect_eq(scope_of_id(&t, id) != NULL, kept, "scope %u", id);
    }
    const struct gmt_scope *s4 = scope_of_id(&t, 4), *s5 = scope_of_id(&t, 5);
    const struct gmt_scope *s8 = scope_of_id(&t, 8);
    cr_assert(s4 && s5 && s8);
    /* the dropped ones' dts still count: 4 begins 3 x 100 + 50 after the THREAD */
    cr_expect_eq(s4->t_begin, TB_T0 + 100 + 350);
    cr_expect_eq(s4->t_end, TB_T0 + 500);
    cr_expect_eq(s5->op, GMT_OP_Broadcast);
    cr_expect_eq(s5->comm, 0xa);
    cr_expect_eq(s5->count, 256);
    cr_expect_eq(s5->t_end, TB_T0 + 600);
    /* after the second THREAD, 7 is dropped: 8 begins 100 + 30 + 50 after it */
    cr_expect_eq(s8->t_begin, TB_T0 + 5000 + 180);
    cr_expect_eq(s8->count, 9);
    gmt_trace_free(&t);
    expect_loads_cut_anywhere(&b);
    tb_free(&b);
}

Test(trace, scope_open_restores_the_begin_of_a_call_left_open_only)
{
    for (int end = 1; end >= 0; end--) {
        struct tb b = { 0 };
        tb_opens(&b, end);
        struct gmt_trace t;
        char err[512];
        cr_assert_eq(load_tb(&b, b.len, &t, err, sizeof err), 0, "%s", err);
        cr_expect_eq(t.records, b.nrec);
        cr_expect_eq(t.records_dropped, 0);
        cr_expect_eq(t.complete, end);
        cr_assert_eq(t.n_scopes, 4, "1, 2, and 3 and 2 restored");
        const struct gmt_scope *s3 = scope_of_id(&t, 3);
        cr_assert_not_null(s3);
        cr_expect_eq(s3->tid, 7u);
        cr_expect_eq(s3->op, GMT_OP_AllGather);
        cr_expect_eq(s3->t_begin, TB_T0 + 4000);
        cr_expect_eq(s3->t_end, 0, "still in progress");
        cr_expect_eq(s3->comm, 0xc);
        cr_expect_eq(s3->count, 64);
        cr_expect_eq(gmt_trace_scope_stack(&t, s3), 0u);
        size_t on8 = 0, on7 = 0;
        for (size_t i = 0; i < t.n_scopes; i++) {
            const struct gmt_scope *s = scope_nth(&t, i);
            on8 += s->tid == 8;
            on7 += s->tid == 7 && s->id == 2;
        }
        cr_expect_eq(on8, 1, "8 had no scope 2: restored on its thread");
        cr_expect_eq(on7, 1, "7's scope 2 is in the file: not restored again");
        cr_expect_eq(scope_of_id(&t, 1)->t_end, TB_T0 + 200);
        gmt_trace_free(&t);

        /* where they go: before END, with a CHUNK of END's thread after them, or at the
         * end of the records */
        size_t n = 0;
        uint64_t lost = 0;
        uint8_t *out = expand_tb(&b, b.len, &n, &lost);
        struct gmt_reader *r;
        cr_assert_eq(gmt_reader_open_mem(&r, out, n, "mem", err, sizeof err), 0, "%s", err);
        struct gmt_event ev;
        int k = 0;
        uint32_t last_type = 0, end_tid = 0, opens = 0;
        uint64_t alloc_time = 0;
        while (gmt_reader_next(r, &ev, err, sizeof err) > 0) {
            opens += ev.rec->type == GMT_REC_SCOPE_OPEN;
            if (ev.rec->type == GMT_REC_END)
                end_tid = ev.tid;
            if (ev.rec->type == GMT_REC_ALLOC)
                alloc_time = ev.time_ns;
            last_type = ev.rec->type;
            k++;
        }
        cr_expect_eq(opens, 0);
        cr_expect_eq(alloc_time, TB_T0 + 150 + 9000, "thread 9's clock as SCOPE_OPEN left it");
        if (end) {
            cr_expect_eq(end_tid, 9u, "END still belongs to its thread");
            cr_expect_eq(last_type, GMT_REC_END);
        } else {
            cr_expect_eq(last_type, GMT_REC_SCOPE_BEGIN);
        }
        gmt_reader_close(r);
        free(out);

        /* cut inside the last record: the restored begins are kept, before the cut tail */
        size_t cut = b.off[b.nrec - 1] + 8;
        cr_assert_eq(load_tb(&b, cut, &t, err, sizeof err), 0, "%s", err);
        cr_expect(t.cut);
        cr_expect_eq(t.cut_offset, b.off[b.nrec - 1]);
        cr_expect_not_null(scope_of_id(&t, 3));
        gmt_trace_free(&t);
        tb_free(&b);
    }
}

/* The reader's rules for 2.5's records: SCOPE_OPEN is 56 bytes at least, has its own time
 * and moves no clock; a SCOPE_END stays at least 24 bytes, a longer one is read whole. */
Test(reader, scope_open_and_call_form_sizes)
{
    struct tb b = { 0 };
    tb_opens(&b, 1);
    FILE *f;
    struct gmt_reader *r;
    char err[512];
    cr_assert_eq(open_mem(&b, b.len, &f, &r, err, sizeof err), 0, "%s", err);
    struct gmt_event ev;
    int opens = 0;
    while (gmt_reader_next(r, &ev, err, sizeof err) > 0) {
        if (ev.rec->type == GMT_REC_SCOPE_OPEN) {
            const struct gmt_rec_scope_open *o = (const void *)ev.rec;
            cr_expect_eq(ev.time_ns, o->time_ns);
            cr_expect_eq(ev.tid, 9u, "the chunk's thread, which wrote it");
            opens++;
        } else if (ev.rec->type == GMT_REC_ALLOC) {
            cr_expect_eq(ev.time_ns, TB_T0 + 150 + 9000, "no SCOPE_OPEN moved thread 9's clock");
        } else if (ev.rec->type == GMT_REC_SCOPE_END) {
            cr_expect_eq(ev.rec->size, 64u);
            cr_expect_eq(ev.time_ns, TB_T0 + 200, "the call form's dt moved the clock");
        }
    }
    cr_expect(gmt_reader_complete(r));
    cr_expect_eq(opens, 5);
    gmt_reader_close(r);
    fclose(f);
    /* a SCOPE_OPEN (index 7) of 48 bytes, a SCOPE_END (index 3) of 16 */
    uint32_t size = 48;
    memcpy(b.p + b.off[7] + 4, &size, 4);
    expect_error(&b, "SCOPE_OPEN record of 48 bytes is shorter than its fixed part (56 bytes)", NULL);
    tb_free(&b);
    tb_opens(&b, 1);
    size = 16;
    memcpy(b.p + b.off[3] + 4, &size, 4);
    expect_error(&b, "SCOPE_END record of 16 bytes is shorter than its fixed part (24 bytes)", NULL);
    tb_free(&b);
}

Test(reader, rejects_bad_header_size)
{
    static const uint32_t bad[] = { 0, 16, 36, GMT_REC_MAX + 8 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct tb b = { 0 };
        tb_header(&b);
        memcpy(b.p + 16, &bad[i], 4);
        char want[64];
        snprintf(want, sizeof want, "offset 16: bad header_size %u", bad[i]);
        expect_error(&b, want, NULL);
        tb_free(&b);
    }
}

/* The sample with the 32-bit field at byte `at` of record `rec` set to v. */
static void sample_patched(struct tb *b, size_t rec, size_t at, uint32_t v)
{
    tb_sample(b);
    memcpy(b->p + b->off[rec] + at, &v, 4);
}

Test(reader, rejects_bad_record_sizes)
{
    struct tb b = { 0 };
    char want[128];
    sample_patched(&b, 3, 4, 0);
    snprintf(want, sizeof want, "offset %zu: record size 0 is smaller", b.off[3]);
    expect_error(&b, want, NULL);
    tb_free(&b);
    sample_patched(&b, 3, 4, 12);
    snprintf(want, sizeof want, "offset %zu: record size 12 is not a multiple of 8", b.off[3]);
    expect_error(&b, want, NULL);
    tb_free(&b);
    sample_patched(&b, 3, 4, GMT_REC_MAX + 8);
    snprintf(want, sizeof want, "offset %zu: record size %u exceeds", b.off[3], GMT_REC_MAX + 8);
    expect_error(&b, want, NULL);
    tb_free(&b);
    /* An ALLOC (index 9) of 16 bytes: shorter than its 40-byte fixed part. */
    sample_patched(&b, 9, 4, 16);
    snprintf(want, sizeof want, "offset %zu: ALLOC record of 16 bytes is shorter than its "
             "fixed part (40 bytes)", b.off[9]);
    expect_error(&b, want, NULL);
    tb_free(&b);
}

Test(reader, rejects_variable_parts_overflowing)
{
    struct tb b = { 0 };
    char want[128];
    sample_patched(&b, 7, 12, 4); /* STACK depth 4 in a record holding 3 */
    snprintf(want, sizeof want, "offset %zu: STACK depth 4 overflows", b.off[7]);
    expect_error(&b, want, NULL);
    tb_free(&b);
    sample_patched(&b, 7, 12, 0xffffffffu); /* no 32-bit wrap in the check */
    expect_error(&b, "STACK depth 4294967295 overflows", NULL);
    tb_free(&b);
    sample_patched(&b, 0, 48, 0xfffffff8u);
    expect_error(&b, "offset 32: PROCESS host", "overflow");
    tb_free(&b);
    sample_patched(&b, 1, 12, 4096);
    snprintf(want, sizeof want, "offset %zu: ENV strings (4096 bytes) overflow", b.off[1]);
    expect_error(&b, want, NULL);
    tb_free(&b);
    sample_patched(&b, 2, 20, 200); /* MODULE_LOAD build_id_len */
    snprintf(want, sizeof want, "offset %zu: MODULE_LOAD build-id (200 bytes)", b.off[2]);
    expect_error(&b, want, NULL);
    tb_free(&b);
}

Test(reader, rejects_strings_without_nul)
{
    struct tb b = { 0 };
    char want[128];
    tb_sample(&b);
    b.p[b.off[0] + sizeof(struct gmt_rec_process) + 7] = 'x'; /* host "node-01\0" */
    expect_error(&b, "offset 32: PROCESS host is not NUL-terminated", NULL);
    tb_free(&b);
    sample_patched(&b, 0, 52, 5); /* cmdline_len 5: "pytho" */
    expect_error(&b, "offset 32: PROCESS command line is not NUL-terminated", NULL);
    tb_free(&b);
    sample_patched(&b, 1, 8, 3); /* ENV count 3 with 2 strings */
    snprintf(want, sizeof want, "offset %zu: ENV holds 2 NUL-terminated strings", b.off[1]);
    expect_error(&b, want, "count says 3");
    tb_free(&b);
    sample_patched(&b, 2, 48, 5); /* MODULE_LOAD path_len 5: "/usr/" */
    snprintf(want, sizeof want, "offset %zu: MODULE_LOAD path is not NUL-terminated", b.off[2]);
    expect_error(&b, want, NULL);
    tb_free(&b);
    tb_sample(&b);
    memset(b.p + b.off[4] + offsetof(struct gmt_rec_thread, name), 'a', GMT_THREAD_NAME_LEN);
    snprintf(want, sizeof want, "offset %zu: THREAD name is not NUL-terminated", b.off[4]);
    expect_error(&b, want, NULL);
    tb_free(&b);
}

Test(reader, stays_failed_after_an_error)
{
    struct tb b = { 0 };
    sample_patched(&b, 5, 4, 3);
    FILE *f;
    struct gmt_reader *r;
    char err[512];
    cr_assert_eq(open_mem(&b, b.len, &f, &r, err, sizeof err), 0, "%s", err);
    uint64_t n;
    cr_assert_eq(read_all(r, &n, err, sizeof err), -1);
    cr_expect_eq(n, 5);
    struct gmt_event ev;
    cr_expect_eq(gmt_reader_next(r, &ev, err, sizeof err), -1);
    cr_expect_not(gmt_reader_cut(r, NULL));
    gmt_reader_close(r);
    fclose(f);
    tb_free(&b);
}

Test(reader, names_ids_from_the_lists)
{
    cr_expect_str_eq(gmt_rec_type_name(GMT_REC_SCOPE_BEGIN), "SCOPE_BEGIN");
    cr_expect_str_eq(gmt_rec_type_name(0), "?");
    cr_expect_str_eq(gmt_api_name(GMT_API_cuMemMap), "cuMemMap");
    cr_expect_str_eq(gmt_api_name(999), "?");
    cr_expect_str_eq(gmt_kind_name(GMT_KIND_PHYSICAL_HOST), "PHYSICAL_HOST");
    cr_expect_str_eq(gmt_op_name(GMT_OP_CommInitRankConfig), "CommInitRankConfig");
    cr_expect_str_eq(gmt_component_name(GMT_COMP_NCCL), "NCCL");
    cr_expect_str_eq(gmt_meminfo_phase_name(GMT_MEMINFO_END), "END");
    cr_expect_eq(gmt_rec_fixed_size(GMT_REC_ALLOC), 40);
    cr_expect_eq(gmt_rec_fixed_size(GMT_REC_STACK), 16);
    cr_expect_eq(gmt_rec_fixed_size(77), 0);
}

/* The seed corpus of tests/fuzz, through the fuzz target's own entry function: what
 * `make fuzz` found once must keep passing under ASan in `make test`. */
Test(fuzz, replays_seed_corpus)
{
    const char *dir = "tests/fuzz/corpus";
    DIR *d = opendir(dir);
    cr_assert_not_null(d, "run from the repository root: %s missing", dir);
    struct dirent *e;
    int files = 0, read_ok = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        cr_assert_not_null(f, "%s", path);
        static uint8_t buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        if (gmt_fuzz_reader_one(buf, n) >= 0)
            read_ok++;
        files++;
    }
    closedir(d);
    cr_expect_geq(files, 8, "only %d seeds", files);
    cr_expect_geq(read_ok, 3, "sample, cut and newer-minor seeds must read");
    /* The empty input too, which fmemopen can't take directly. */
    cr_expect_eq(gmt_fuzz_reader_one(NULL, 0), -1);
}

/* A second PROCESS record (a corrupt or concatenated file) replaces the first without
 * leaking its strings (the sanitizer build's leak check fails this test otherwise). */
Test(trace, a_second_process_record_replaces_the_first)
{
    struct tb b = { 0 };
    tb_sample(&b);
    struct tb x = { 0 };
    tb_put(&x, b.p, b.off[1]);
    tb_put(&x, b.p + b.off[0], b.off[1] - b.off[0]); /* the PROCESS again */
    tb_put(&x, b.p + b.off[1], b.len - b.off[1]);
    struct gmt_trace t;
    char err[256] = "";
    cr_assert_eq(load_tb(&x, x.len, &t, err, sizeof err), 0, "%s", err);
    cr_expect_str_eq(t.host, "node-01");
    gmt_trace_free(&t);
    tb_free(&x);
    tb_free(&b);
}

/* ---- GROUP_REPEAT read in place ---- */

/* The events of a loaded trace, up to max, and how many there are. */
static size_t all_events(const struct gmt_trace *t, struct gmt_timed_event *ev, size_t max)
{
    struct gmt_trace_iter *it = gmt_trace_iter_new(t);
    cr_assert_not_null(it);
    size_t n = 0, got;
    struct gmt_timed_event more[64];
    while ((got = gmt_trace_iter_next(it, more, 64)) > 0)
        for (size_t i = 0; i < got; i++, n++)
            if (n < max)
                ev[n] = more[i];
    gmt_trace_iter_free(it);
    return n;
}

/* A trace with repeated groups loads from the file's own bytes (no image of the members),
 * and gives the very scopes and events of the trace with the members written out: the
 * iteration hands out each member's begin and end from the GROUP_REPEAT record. */
static void expect_repeats_read_in_place(struct tb *b)
{
    struct gmt_trace lazy, full;
    char err[512];
    cr_assert_eq(load_tb(b, b->len, &lazy, err, sizeof err), 0, "%s", err);
    cr_expect_eq(lazy.image_len, b->len, "the file's bytes, not an expanded image");
    cr_expect_gt(lazy.n_reps, 0);
    size_t n = 0;
    uint64_t lost = 0;
    uint8_t *img = expand_tb(b, b->len, &n, &lost);
    struct tb x = {.p = img, .len = n, .cap = n};
    cr_assert_eq(load_tb(&x, n, &full, err, sizeof err), 0, "%s", err);
    cr_expect_eq(full.n_reps, 0);
    cr_assert_eq(lazy.n_scopes, full.n_scopes);
    for (size_t i = 0; i < lazy.n_scopes; i++) {
        const struct gmt_scope *a = scope_nth(&lazy, i), *f = scope_nth(&full, i);
        cr_expect(a->id == f->id && a->parent_id == f->parent_id && a->tid == f->tid &&
                      a->result == f->result && a->comm == f->comm && a->count == f->count &&
                      a->t_begin == f->t_begin && a->t_end == f->t_end &&
                      a->datatype == f->datatype && a->op == f->op &&
                      a->host_weight == f->host_weight && a->device == f->device,
                  "scope %zu (id %u)", i, f->id);
        cr_expect_eq(gmt_trace_scope_stack(&lazy, a), gmt_trace_scope_stack(&full, f), "scope %u", f->id);
        cr_expect_eq(gmt_trace_scope_peer(&lazy, a), gmt_trace_scope_peer(&full, f), "scope %u", f->id);
        /* found by id as well: a member, whose id no table holds, by its note */
        if (!full.scope_dups)
            cr_expect_eq(gmt_trace_scope_index(&lazy, f->id), gmt_trace_scope_index(&full, f->id),
                         "scope id %u", f->id);
    }
    cr_expect_eq(lazy.n_events, full.n_events);
    static struct gmt_timed_event ea[4096], ef[4096];
    size_t na = all_events(&lazy, ea, 4096), nf = all_events(&full, ef, 4096);
    cr_assert_eq(na, nf);
    cr_assert_eq(na, lazy.n_events, "the events the loader counted");
    expect_same_events(ea, na < 4096 ? na : 4096, ef, nf < 4096 ? nf : 4096, "in place vs expanded");
    /* and the walk of the last run, record by record, as the replay takes it */
    size_t nw = walked_events(&lazy, ef, 4096);
    expect_same_events(ea, na < 4096 ? na : 4096, ef, nw, "walked");
    gmt_trace_free(&lazy);
    gmt_trace_free(&full);
    free(img);
}

/* Two threads whose repeated groups interleave by chunk, the later thread's ids first in
 * the file; a repeated group of inits whose last member a COMM record names the
 * communicator of; devices from a context and from communicators: the members made on
 * demand are those of the trace written out, found by index and by id. */
Test(trace, repeated_groups_of_two_threads_are_made_on_demand)
{
    struct tb b = {0};
    tb_header_current(&b);
    struct gmt_rec_process p = {.pid = 1, .ppid = 1, .rank = 0, .monotonic_ns = TB_T0};
    tb_rec(&b, GMT_REC_PROCESS, 0, &p, sizeof p, NULL, 0);
    tb_chunk(&b, 7);
    tb_thread_at(&b, 7, TB_T0 + 100);
    struct gmt_rec_cuctx cx = {.context = 0x55, .device = 3};
    tb_rec(&b, GMT_REC_CUCTX, 0, &cx, sizeof cx, NULL, 0);
    struct gmt_rec_comm ca = {.comm = 0xa, .rank = 0, .nranks = 2, .device = 1};
    tb_rec(&b, GMT_REC_COMM, 0, &ca, sizeof ca, NULL, 0);
    tb_scope_begin(&b, GMT_OP_Group, 10, 0, 0, 0, 10);
    tb_scope_begin(&b, GMT_OP_AllReduce, 11, 10, 0xa, 256, 5);
    tb_scope_end(&b, GMT_OP_AllReduce, 11, 0, 5);
    tb_scope_begin(&b, GMT_OP_Broadcast, 12, 10, 0xb, 128, 5);
    tb_scope_end(&b, GMT_OP_Broadcast, 12, 3, 5);
    tb_scope_end(&b, GMT_OP_Group, 10, 0, 100);
    tb_chunk(&b, 8);
    tb_thread_at(&b, 8, TB_T0 + 150);
    tb_scope_begin(&b, GMT_OP_Group, 1000, 0, 0, 0, 10);
    tb_scope_begin(&b, GMT_OP_CommInitRank, 1001, 1000, 0, 2, 5);
    tb_scope_end(&b, GMT_OP_CommInitRank, 1001, 0, 5);
    tb_scope_begin(&b, GMT_OP_CommInitRank, 1002, 1000, 0, 2, 5);
    tb_scope_end(&b, GMT_OP_CommInitRank, 1002, 0, 5);
    tb_scope_end(&b, GMT_OP_Group, 1000, 0, 100);
    struct gmt_rec_comm cc = {.comm = 0xc0, .rank = 1, .nranks = 2, .device = 2};
    tb_rec(&b, GMT_REC_COMM, 0, &cc, sizeof cc, NULL, 0);
    for (uint32_t r = 1; r <= 4; r++) {
        tb_chunk(&b, 8);
        tb_scope_begin(&b, GMT_OP_Group, 1000 + 3 * r, 0, 0, 0, 1000);
        tb_group_repeat(&b, 1000 + 3 * r, 2, 1000 + 3 * (r - 1));
        tb_scope_end(&b, GMT_OP_Group, 1000 + 3 * r, 0, 100);
        cc.comm = 0xc0 + r;
        tb_rec(&b, GMT_REC_COMM, 0, &cc, sizeof cc, NULL, 0);
        tb_chunk(&b, 7);
        tb_scope_begin(&b, GMT_OP_Group, 10 + 3 * r, 0, 0, 0, 1000);
        tb_group_repeat(&b, 10 + 3 * r, 2, 10 + 3 * (r - 1));
        tb_scope_end(&b, GMT_OP_Group, 10 + 3 * r, 0, 100);
    }
    struct gmt_rec_end e = {.time_ns = TB_T0 + 1000000};
    tb_rec(&b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
    expect_repeats_read_in_place(&b);
    struct gmt_trace t;
    char err[512];
    cr_assert_eq(load_tb(&b, b.len, &t, err, sizeof err), 0, "%s", err);
    cr_expect_eq(t.n_reps, 8);
    cr_expect_eq(t.n_scopes, 2 * (3 + 4 * 3));
    const struct gmt_scope *m = scope_of_id(&t, 1000 + 3 * 4 + 2);
    cr_assert_not_null(m);
    cr_expect_eq(m->comm, 0xc4, "the COMM record after its group names it");
    cr_expect_eq(m->device, 2);
    const struct gmt_scope *a = scope_of_id(&t, 10 + 3 * 2 + 1), *c = scope_of_id(&t, 10 + 3 * 2 + 2);
    cr_assert(a && c);
    cr_expect_eq(a->device, 1, "its communicator's");
    cr_expect_eq(c->device, 3, "no communicator known: its thread's context's");
    cr_expect_eq(c->result, 3);
    cr_expect_null(scope_of_id(&t, 10 + 3 * 4 + 3));
    cr_expect_null(scope_of_id(&t, 999));
    gmt_trace_free(&t);
    tb_free(&b);
}

Test(trace, reads_group_repeat_in_place_as_its_members)
{
    struct tb b = {0};
    tb_repeats(&b);
    expect_repeats_read_in_place(&b);
    tb_free(&b);
    /* a group repeated many times, with a send whose peer only the first group's
     * SCOPE_BEGIN holds, and an allocation between a repeat and its group's end */
    tb_header_current(&b);
    struct gmt_rec_process p = {.pid = 1, .ppid = 1, .rank = 0, .monotonic_ns = TB_T0};
    tb_rec(&b, GMT_REC_PROCESS, 0, &p, sizeof p, NULL, 0);
    tb_chunk(&b, 7);
    tb_thread_at(&b, 7, TB_T0 + 100);
    tb_scope_begin(&b, GMT_OP_Group, 10, 0, 0, 0, 10);
    tb_scope_begin(&b, GMT_OP_AllReduce, 11, 10, 0xa, 256, 5);
    tb_scope_end(&b, GMT_OP_AllReduce, 11, 0, 5);
    struct gmt_rec_scope_begin send = {.dt = 3, .scope_id = 12, .parent_id = 10, .comm = 0xa,
                                       .count = 64, .datatype = 7, .peer = 5,
                                       .stack_id = 4};
    tb_rec(&b, GMT_REC_SCOPE_BEGIN, GMT_OP_Send, &send, sizeof send, NULL, 0);
    tb_scope_end(&b, GMT_OP_Send, 12, 2, 1);
    tb_scope_end(&b, GMT_OP_Group, 10, 0, 100);
    uint32_t id = 10;
    for (int g = 0; g < 300; g++) {
        uint32_t like = id;
        id += 3;
        tb_scope_begin(&b, GMT_OP_Group, id, 0, 0, 0, 1000);
        tb_group_repeat(&b, id, 2, like);
        if (g % 7 == 3) {
            struct gmt_rec_alloc a = {.address = 0x7e0000000000ull + (uint64_t)g * 4096,
                                      .bytes = 4096, .dt = 4, .kind = GMT_KIND_DEVICE};
            tb_rec(&b, GMT_REC_ALLOC, GMT_API_cudaMalloc, &a, sizeof a, NULL, 0);
        }
        tb_scope_end(&b, GMT_OP_Group, id, 0, 100);
    }
    struct gmt_rec_end e = {.time_ns = TB_T0 + 1000000};
    tb_rec(&b, GMT_REC_END, 0, &e, sizeof e, NULL, 0);
    expect_repeats_read_in_place(&b);

    /* a GROUP_REPEAT's count changed in the file after loading: the iteration keeps to
     * the members the loader made */
    char path[] = "/tmp/gmt-test-repeat-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, b.p, b.len), (ssize_t)b.len);
    struct gmt_trace t;
    char err[512];
    cr_assert_eq(gmt_trace_load(&t, path, err, sizeof err), 0, "%s", err);
    size_t off = sizeof(struct gmt_file_header);
    while (((const struct gmt_rec *)(const void *)(b.p + off))->type != GMT_REC_GROUP_REPEAT)
        off += ((const struct gmt_rec *)(const void *)(b.p + off))->size;
    uint32_t huge = 0xffffffffu;
    cr_assert_eq(pwrite(fd, &huge, 4, (off_t)(off + offsetof(struct gmt_rec_group_repeat, count))), 4);
    close(fd);
    unlink(path);
    static struct gmt_timed_event ev[4096];
    cr_expect_eq(all_events(&t, ev, 4096), t.n_events);
    cr_expect_eq(walked_events(&t, ev, 4096), t.n_events);
    gmt_trace_free(&t);
    tb_free(&b);
}

/* A trace larger than the window, with a record of nearly GMT_REC_MAX across a window's
 * end, appended to a file in pieces cut anywhere (inside records too) and read after
 * each piece through a window (record by record or in batches) or without, in turn,
 * following its growth: the same records, offsets, times and threads as one read of the
 * whole. */
Test(reader, reads_a_growing_file_the_same_through_a_window, .timeout = 60)
{
    struct tb b = { 0 };
    tb_header(&b);
    for (uint32_t i = 0; i < 60000; i++) {
        if (i % 5000 == 0) {
            chunk(&b, 3 + i / 5000 % 2);
            thread_at(&b, 3 + i / 5000 % 2, 1000 + i);
        }
        if (i == 21000) { /* about 1 MB in: it straddles the first window's end */
            static uint8_t big[GMT_REC_MAX - 64];
            struct { struct gmt_rec h; uint32_t dt, x; } future = { .dt = 1 };
            memset(big, 0xab, sizeof big);
            tb_rec(&b, 250, 0, &future, sizeof future, big, sizeof big);
        }
        alloc_dt(&b, i % 7);
    }
    struct gmt_reader *whole;
    char err[512] = "";
    cr_assert_eq(gmt_reader_open_mem(&whole, b.p, b.len, "t.gmt", err, sizeof err), 0, "%s", err);
    char path[] = "/tmp/gmt-window-XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    FILE *in = fopen(path, "rb");
    cr_assert_not_null(in);
    uint8_t *win = malloc(GMT_REC_MAX);
    cr_assert_not_null(win);
    cr_expect_eq(gmt_reader_window(whole, win, GMT_REC_MAX), -EINVAL, "an image has no window");
    struct gmt_reader *r = NULL;
    size_t written = 0, pieces = 0;
    uint64_t seed = 7, n = 0;
    while (written < b.len) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        size_t piece = 1 + (size_t)(seed >> 33) % 400000;
        if (piece > b.len - written)
            piece = b.len - written;
        cr_assert_eq(write(fd, b.p + written, piece), (ssize_t)piece);
        written += piece;
        if (!r && written < sizeof(struct gmt_file_header))
            continue;
        if (!r)
            cr_assert_eq(gmt_reader_fopen(&r, in, "t.gmt", err, sizeof err), 0, "%s", err);
        bool windowed = pieces++ % 2 == 0;
        if (windowed) {
            cr_assert_eq(gmt_reader_window(r, win, GMT_REC_MAX - 8), -EINVAL, "too small");
            cr_assert_eq(gmt_reader_window(r, win, GMT_REC_MAX), 0);
        }
        /* through a window, a batch's records too: all valid until the next call */
        bool batches = windowed && pieces % 3 != 0;
        struct gmt_event e[16], w;
        int rc = 1;
        while (rc > 0) {
            size_t got = batches ? gmt_reader_next_batch(r, e, 16, &rc, err, sizeof err)
                                 : (size_t)((rc = gmt_reader_next(r, e, err, sizeof err)) > 0);
            for (size_t i = 0; i < got; i++) {
                cr_assert_eq(gmt_reader_next(whole, &w, err, sizeof err), 1, "%s", err);
                cr_assert_eq(e[i].offset, w.offset, "record %llu", (unsigned long long)n);
                cr_assert_eq(e[i].rec->type, w.rec->type);
                cr_assert_eq(memcmp(e[i].rec, w.rec, w.rec->size), 0, "record %llu's bytes",
                             (unsigned long long)n);
                cr_assert_eq(e[i].time_ns, w.time_ns);
                cr_assert_eq(e[i].tid, w.tid);
                n++;
            }
        }
        cr_assert_eq(rc, 0, "%s", err);
        if (windowed && pieces % 4 == 1)
            cr_assert_eq(gmt_reader_window(r, NULL, 0), 0); /* then back record by record */
        cr_assert_eq(gmt_reader_follow(r), 0);
    }
    struct gmt_event w;
    cr_expect_eq(gmt_reader_next(whole, &w, err, sizeof err), 0, "every record read");
    cr_expect_eq(gmt_reader_offset(r), b.len);
    cr_expect_eq(n, 60000 + 60000 / 5000 * 2 + 1);
    cr_expect_gt(pieces, 6);
    gmt_reader_close(r);
    gmt_reader_close(whole);
    fclose(in);
    close(fd);
    unlink(path);
    free(win);
    tb_free(&b);
}
