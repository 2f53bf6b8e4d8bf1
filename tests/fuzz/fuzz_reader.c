/* fuzz_reader.c: libFuzzer target: the reader, dump's printer and the expansion (GROUP_REPEAT, call forms, SCOPE_OPEN) must survive any bytes (no crash, no OOB read). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "reader.h"
#include "trace.h"

/* One input, start to end, as `gpumemtrace dump` would read it. Returns the number of
 * records read, or -1 when the reader rejected the input (both are fine outcomes). */
int gmt_fuzz_reader_one(const uint8_t *data, size_t size);
int gmt_fuzz_reader_one(const uint8_t *data, size_t size)
{
    static FILE *sink;
    if (!sink)
        sink = fopen("/dev/null", "w");
    /* fmemopen refuses a zero-length buffer; one zero byte past the end is still EOF. */
    static const uint8_t none[1];
    FILE *f = fmemopen((void *)(size ? data : none), size ? size : 1, "rb");
    if (!f)
        return -1;
    if (size == 0)
        fgetc(f);
    struct gmt_reader *r;
    char err[512];
    int n = -1;
    if (gmt_reader_fopen(&r, f, "fuzz", err, sizeof err) == 0) {
        struct gmt_event ev;
        int rc;
        n = 0;
        while ((rc = gmt_reader_next(r, &ev, err, sizeof err)) > 0) {
            /* A record the reader hands out lies wholly inside the input. */
            if (ev.offset + ev.rec->size > size || ev.rec->size > GMT_REC_MAX)
                abort();
            if (sink)
                gmt_dump_line(sink, &ev, r);
            n++;
        }
        uint64_t off;
        if (gmt_reader_cut(r, &off) && (rc != 0 || off >= size))
            abort();
        if (rc < 0)
            n = -1;
        gmt_reader_close(r);
    }
    fclose(f);
    /* The expansion (what loading a trace does first): any input; what it makes reads as
     * the input did, with no GROUP_REPEAT, call form or SCOPE_OPEN left. */
    uint64_t *img = malloc(size / 8 * 8 + 8);
    if (img) {
        if (size)
            memcpy(img, data, size);
        uint8_t *out = NULL;
        size_t out_len = 0;
        uint64_t records, cut, lost;
        if (gmt_trace_expand((const uint8_t *)img, size, "fuzz", &out, &out_len, &records, &cut,
                             &lost, err, sizeof err) == 0) {
            struct gmt_reader *x;
            if (gmt_reader_open_mem(&x, out, out_len, "fuzz", err, sizeof err) != 0)
                abort();
            struct gmt_event ev;
            int rc;
            while ((rc = gmt_reader_next(x, &ev, err, sizeof err)) > 0)
                if (ev.rec->type == GMT_REC_GROUP_REPEAT || ev.rec->type == GMT_REC_SCOPE_OPEN ||
                    (ev.rec->type == GMT_REC_SCOPE_END && ev.rec->size >= GMT_SCOPE_CALL_MIN))
                    abort();
            if (rc < 0)
                abort();
            gmt_reader_close(x);
            free(out);
        }
        free(img);
    }
    return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gmt_fuzz_reader_one(data, size);
    return 0;
}
