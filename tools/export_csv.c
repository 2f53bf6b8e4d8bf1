/* export_csv.c: the job's tables as CSV, one file per table in a directory (RFC 4180 quoting, formulas made inert). */
#include "export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "util.h"

struct csv {
    FILE *f[GMT_XT_COUNT];
    char *name[GMT_XT_COUNT];
};

static int csv_row(void *ctx, enum gmt_xtable t, const struct gmt_xval *v)
{
    struct csv *C = ctx;
    FILE *f = C->f[t];
    const struct gmt_xtable_def *def = &gmt_xtables[t];
    for (size_t c = 0; c < def->n_cols; c++) {
        if (c)
            fputc(',', f);
        if (v[c].null)
            continue;
        if (def->cols[c].type == GMT_XTEXT)
            gmt_fput_csv_cell(f, v[c].s);
        else
            fprintf(f, "%" PRId64, v[c].i);
    }
    if (fputc('\n', f) == EOF) {
        gmt_err("gpumemtrace: export: cannot write %s: %s", C->name[t], strerror(errno));
        return -EIO;
    }
    return 0;
}

int gmt_export_csv(char *const *files, size_t n, const struct gmt_report_opts *ro,
                   const char *dir)
{
    struct csv C = {0};
    int status = GMT_EXIT_ERROR;
    struct stat st;
    if (mkdir(dir, 0777) && errno != EEXIST) {
        gmt_err("gpumemtrace: export: cannot create %s: %s", dir, strerror(errno));
        return GMT_EXIT_ERROR;
    }
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
        gmt_err("gpumemtrace: export: %s is not a directory", dir);
        return GMT_EXIT_ERROR;
    }
    for (int t = 0; t < GMT_XT_COUNT; t++) {
        const struct gmt_xtable_def *def = &gmt_xtables[t];
        if (asprintf(&C.name[t], "%s/%s.csv", dir, def->name) < 0) {
            C.name[t] = NULL;
            gmt_err("gpumemtrace: out of memory");
            goto done;
        }
        if (!(C.f[t] = fopen(C.name[t], "w"))) {
            gmt_err("gpumemtrace: export: cannot create %s: %s", C.name[t], strerror(errno));
            goto done;
        }
        for (size_t c = 0; c < def->n_cols; c++)
            fprintf(C.f[t], "%s%s", c ? "," : "", def->cols[c].name);
        fputc('\n', C.f[t]);
    }
    const struct gmt_xsink sink = {.row = csv_row, .ctx = &C};
    int r = gmt_export_rows(files, n, ro, &sink);
    status = r < 0 ? GMT_EXIT_ERROR : r;
done:
    for (int t = 0; t < GMT_XT_COUNT; t++) {
        if (C.f[t] && (ferror(C.f[t]) | fclose(C.f[t])) && status == GMT_EXIT_OK) {
            gmt_err("gpumemtrace: export: cannot write %s", C.name[t]);
            status = GMT_EXIT_ERROR;
        }
        free(C.name[t]);
    }
    return status;
}
