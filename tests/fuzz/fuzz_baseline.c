/* fuzz_baseline.c: libFuzzer target: the baseline parser (and the JSON parser under it) on any text; what it accepts writes and reads back the same. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "baseline.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gmt_baseline b;
    char err[512];
    if (gmt_baseline_parse(&b, (const char *)data, size, err, sizeof err) != 0) {
        /* a message is a string; it may quote the text (a key with a newline in it):
         * gmt_err escapes it when printing, so it stays one line there */
        if (!memchr(err, 0, sizeof err))
            abort();
        return 0;
    }
    struct fuzz_out o;
    gmt_baseline_write(fuzz_out_open(&o), &b);
    fclose(o.f);
    struct gmt_baseline c;
    if (gmt_baseline_parse(&c, o.buf, o.len, err, sizeof err) != 0) {
        fprintf(stderr, "written baseline does not read back: %s\n%.*s\n", err, (int)o.len, o.buf);
        abort();
    }
    if (c.metrics.n != b.metrics.n || strcmp(c.category, b.category))
        abort();
    for (size_t i = 0; i < b.metrics.n; i++)
        if (gmt_metric_cmp(&b.metrics.v[i], &c.metrics.v[i]) ||
            b.metrics.v[i].value != c.metrics.v[i].value)
            abort();
    free(o.buf);
    gmt_baseline_free(&c);
    gmt_baseline_free(&b);
    return 0;
}
