/* fuzz_summary.c: libFuzzer target: the loader, the replay and summary's model on any bytes, rendered as text, JSON (which must parse) and CSV. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "render.h"
#include "report.h"

static void render_all(const struct gmt_analysis *a, const struct gmt_report_opts *ro)
{
    const struct gmt_renderer *rs[2 + GMT_CSV_COUNT] = { &gmt_render_text, &gmt_render_json };
    for (int t = 0; t < GMT_CSV_COUNT; t++)
        rs[2 + t] = &gmt_render_csv[t];
    for (int k = 0; k < 2 + GMT_CSV_COUNT; k++) {
        struct fuzz_out o;
        FILE *f = fuzz_out_open(&o);
        if (rs[k]->begin)
            rs[k]->begin(f, NULL, ro);
        rs[k]->trace(f, a, ro, 0);
        if (rs[k]->end)
            rs[k]->end(f);
        fuzz_out_close(&o, rs[k] == &gmt_render_json);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_file(data, size, path, sizeof path);
    if (fd < 0)
        return 0;
    /* the defaults, then a window, a device, an op and narrow output: the options that
     * change what the replay and the renderers do */
    for (int pass = 0; pass < 2; pass++) {
        struct gmt_report_opts ro;
        gmt_report_opts_init(&ro);
        ro.no_symbols = true;
        ro.width = 100;
        if (pass) {
            ro.top = 2;
            ro.width = 40;
            ro.device = 0;
            ro.from_ns = 1000;
            ro.to_ns = 2000000;
            ro.op = "AllReduce";
            gmt_report_opts_add_category(&ro, "mine=*nccl*");
        }
        struct gmt_analysis a;
        char err[512];
        if (gmt_analyze(&a, path, &ro, err, sizeof err) == 0) {
            render_all(&a, &ro);
            gmt_analysis_free(&a);
        } else if (!memchr(err, 0, sizeof err)) {
            abort(); /* a message is a string (gmt_err escapes it onto one line) */
        }
    }
    close(fd);
    return 0;
}
