/* fuzz_args.c: libFuzzer target: each command's option parsing (and what follows it) on an argv made of the input bytes. */
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "fuzz_common.h"

/*
 * The input: a command (first byte, modulo the commands but run, which would exec
 * programs the input names), then its arguments separated by NUL bytes, at most 16 of
 * up to 64 bytes. A '/' becomes '_' and an argument that could reach ".." becomes "d"
 * (leaves_dir): every name is relative to a directory of its own holding t.gmt (a
 * trace), b.json (its baseline) and d/, so the CLI reads what it is given and writes
 * nowhere else (--write-baseline, --junit, -o); reset() puts the directory back before
 * each input.
 */
static int (*const cmds[])(int, char **) = { gmt_cmd_summary, gmt_cmd_merge, gmt_cmd_diff,
                                             gmt_cmd_check, gmt_cmd_dump };
static const char *const names[] = { "summary", "merge", "diff", "check", "dump" };

/* Whether an operand could name something outside the directory: "..", or what the CLI
 * expands it to (gmt_expand_paths: ".?" and ".*" are patterns matching ".."). No '/'
 * is left in it, so ".." is the one way out. */
static bool leaves_dir(char *a)
{
    if (strstr(a, ".."))
        return true;
    char **paths;
    size_t n;
    struct gmt_msgs msgs = GMT_MSGS_INIT;
    gmt_expand_paths(&a, 1, &paths, &n, &msgs);
    bool out = false;
    for (size_t i = 0; i < n && !out; i++)
        out = strstr(paths[i], "..") != NULL;
    gmt_free_paths(paths, n);
    gmt_msgs_print(&msgs, stdout); /* /dev/null: only to free them */
    return out;
}

static uint8_t trace[1 << 16];
static size_t trace_len;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    if (ftw->level > 0)
        remove(path);
    return 0;
}

/* The directory as each input finds it: t.gmt, b.json and an empty d/, whatever the last
 * input wrote there (an output named t.gmt, a directory of CSV tables): an input's run
 * depends on it alone, and reruns alike from its file. */
static void reset(void)
{
    nftw(".", remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    FILE *f = fopen("t.gmt", "wb");
    if (f) {
        fwrite(trace, 1, trace_len, f);
        fclose(f);
    }
    if ((f = fopen("b.json", "w"))) {
        fputs("{\"metrics\": [{\"bytes\": 1, \"check\": \"peak\", \"device\": 1, \"rank\": 1}], "
              "\"schema\": \"gpumemtrace.baseline/1\"}", f);
        fclose(f);
    }
    mkdir("d", 0755);
}

static void setup(void)
{
    static int done;
    if (done++)
        return;
    FILE *f = fopen("tests/golden/sample.gmt", "rb");
    if (f) {
        trace_len = fread(trace, 1, sizeof trace, f);
        fclose(f);
    }
    /* under $TMPDIR: golden/fuzz-regress gives it a parent that must not be read */
    const char *tmp = getenv("TMPDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/gmt-fuzz-args-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir) || chdir(dir))
        abort();
    if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "r", stdin))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size == 0)
        return 0;
    reset();
    size_t c = data[0] % (sizeof cmds / sizeof cmds[0]);
    char store[16][65];
    char *argv[18];
    int argc = 0;
    argv[argc++] = (char *)names[c];
    size_t i = 1;
    while (i < size && argc < 17) {
        size_t k = 0;
        char *a = store[argc - 1];
        while (i < size && data[i] != 0 && k < 64) {
            a[k++] = data[i] == '/' ? '_' : (char)data[i];
            i++;
        }
        a[k] = 0;
        if (leaves_dir(a)) /* and no way out of it */
            strcpy(a, "d");
        argv[argc++] = a;
        while (i < size && data[i] != 0)
            i++;
        i++; /* the NUL */
    }
    argv[argc] = NULL;
    int rc = cmds[c](argc, argv);
    if (rc < 0 || rc > 2)
        abort();
    fflush(stdout);
    clearerr(stdout);
    return 0;
}
