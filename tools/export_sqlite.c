/* export_sqlite.c: the job's tables in one SQLite file, written in one transaction through prepared statements. */
#include "export.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "util.h"

struct db {
    sqlite3 *db;
    sqlite3_stmt *ins[GMT_XT_COUNT];
    const char *path;
    uint64_t traces;           /* rows of the traces table */
};

static int db_fail(const struct db *D, const char *what)
{
    gmt_err("gpumemtrace: export: %s: %s: %s", D->path, what,
            D->db ? sqlite3_errmsg(D->db) : "cannot open");
    return -EIO;
}

static int exec(const struct db *D, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(D->db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return 0;
    gmt_err("gpumemtrace: export: %s: %s", D->path, msg ? msg : "SQL error");
    sqlite3_free(msg);
    return -EIO;
}

static int db_row(void *ctx, enum gmt_xtable t, const struct gmt_xval *v)
{
    struct db *D = ctx;
    sqlite3_stmt *st = D->ins[t];
    D->traces += t == GMT_XT_TRACES;
    const struct gmt_xtable_def *def = &gmt_xtables[t];
    for (size_t c = 0; c < def->n_cols; c++) {
        int rc;
        if (v[c].null)
            rc = sqlite3_bind_null(st, (int)c + 1);
        else if (def->cols[c].type == GMT_XTEXT)
            rc = sqlite3_bind_text(st, (int)c + 1, v[c].s, -1, SQLITE_STATIC);
        else
            rc = sqlite3_bind_int64(st, (int)c + 1, v[c].i);
        if (rc != SQLITE_OK)
            return db_fail(D, "bind");
    }
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    return rc == SQLITE_DONE ? 0 : db_fail(D, "insert");
}

/* CREATE TABLE and the prepared INSERT of every table. */
static int db_schema(struct db *D)
{
    char sql[2048];
    for (int t = 0; t < GMT_XT_COUNT; t++) {
        const struct gmt_xtable_def *def = &gmt_xtables[t];
        size_t k = (size_t)snprintf(sql, sizeof sql, "CREATE TABLE %s(", def->name);
        for (size_t c = 0; c < def->n_cols; c++)
            k += (size_t)snprintf(sql + k, sizeof sql - k, "%s%s %s", c ? ", " : "", def->cols[c].name,
                                  def->cols[c].type == GMT_XTEXT ? "TEXT" : "INTEGER");
        snprintf(sql + k, sizeof sql - k, ")");
        if (exec(D, sql))
            return -EIO;
        k = (size_t)snprintf(sql, sizeof sql, "INSERT INTO %s VALUES(", def->name);
        for (size_t c = 0; c < def->n_cols; c++)
            k += (size_t)snprintf(sql + k, sizeof sql - k, "%s?", c ? "," : "");
        snprintf(sql + k, sizeof sql - k, ")");
        if (sqlite3_prepare_v2(D->db, sql, -1, &D->ins[t], NULL) != SQLITE_OK)
            return db_fail(D, "prepare");
    }
    return 0;
}

int gmt_export_sqlite(char *const *files, size_t n, const struct gmt_report_opts *ro,
                      const char *out)
{
    /* written beside the target and renamed over it when whole: a failed export leaves
     * no half a database behind */
    size_t len = strlen(out) + 16;
    char *tmp = malloc(len);
    if (!tmp) {
        gmt_err("gpumemtrace: out of memory");
        return GMT_EXIT_ERROR;
    }
    snprintf(tmp, len, "%s.tmp%ld", out, (long)getpid());
    unlink(tmp);
    struct db D = {.path = out};
    int status = GMT_EXIT_ERROR;
    if (sqlite3_open_v2(tmp, &D.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        gmt_err("gpumemtrace: export: cannot create %s: %s", out,
                D.db ? sqlite3_errmsg(D.db) : "out of memory");
        goto done;
    }
    /* one writer that makes the file from nothing: no journal to keep */
    if (exec(&D, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA page_size=65536;"
                 "BEGIN") ||
        db_schema(&D))
        goto done;
    const struct gmt_xsink sink = {.row = db_row, .ctx = &D};
    int r = gmt_export_rows(files, n, ro, &sink);
    if (r < 0 || !D.traces) /* no trace could be read: no database */
        goto done;
    for (int t = 0; t < GMT_XT_COUNT; t++)
        if (gmt_xtables[t].indices && exec(&D, gmt_xtables[t].indices))
            goto done;
    if (exec(&D, "COMMIT"))
        goto done;
    /* r: GMT_EXIT_ERROR when some trace could not be read; the others' rows are kept */
    status = r ? -1 : GMT_EXIT_OK;
done:
    for (int t = 0; t < GMT_XT_COUNT; t++)
        sqlite3_finalize(D.ins[t]);
    if (D.db && sqlite3_close(D.db) != SQLITE_OK && status != GMT_EXIT_ERROR) {
        gmt_err("gpumemtrace: export: %s: cannot close", out);
        status = GMT_EXIT_ERROR;
    }
    if (status != GMT_EXIT_ERROR && rename(tmp, out)) {
        gmt_err("gpumemtrace: export: cannot write %s: %s", out, strerror(errno));
        status = GMT_EXIT_ERROR;
    }
    if (status == GMT_EXIT_ERROR)
        unlink(tmp);
    free(tmp);
    return status < 0 ? GMT_EXIT_ERROR : status;
}
