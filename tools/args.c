/* args.c: one command's command line: the shared options here, its own through its handler; trace operands. */
#include "args.h"

#include <errno.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "pack.h"
#include "util.h"

enum { OPT_JSON = 256, OPT_CSV, OPT_NO_SYMBOLS, OPT_DEBUG_PATHS, OPT_TOP, OPT_FRAMES, OPT_INTERNAL,
       OPT_HELP };

static const struct {
    unsigned bit;
    struct option opt;
} shared_opts[] = {
    {GMT_ARGS_JSON, {"json", no_argument, 0, OPT_JSON}},
    {GMT_ARGS_CSV, {"csv", no_argument, 0, OPT_CSV}},
    {GMT_ARGS_NO_SYMBOLS, {"no-symbols", no_argument, 0, OPT_NO_SYMBOLS}},
    {GMT_ARGS_DEBUG_PATHS, {"debug-paths", required_argument, 0, OPT_DEBUG_PATHS}},
    {GMT_ARGS_DEBUG_PATHS, {"debug-dir", required_argument, 0, OPT_DEBUG_PATHS}},
    {GMT_ARGS_TOP, {"top", required_argument, 0, OPT_TOP}},
    {GMT_ARGS_FRAMES, {"frames", required_argument, 0, OPT_FRAMES}},
    {GMT_ARGS_FRAMES, {"internal", required_argument, 0, OPT_INTERNAL}},
    {GMT_ARGS_OUTPUT, {"output", required_argument, 0, 'o'}},
    {0, {"help", no_argument, 0, OPT_HELP}},
};
#define N_SHARED (sizeof shared_opts / sizeof shared_opts[0])
#define MAX_OWN 24

void gmt_args_init(struct gmt_args *a)
{
    memset(a, 0, sizeof *a);
    gmt_report_opts_init(&a->ro);
}

/* The command's own options and the shared ones it takes, in one getopt_long table;
 * -1 when its own are more than the table holds. */
static int build_table(const struct gmt_args_spec *spec, struct option *tab)
{
    size_t n = 0;
    for (const struct option *o = spec->own; o && o->name; o++) {
        if (n == MAX_OWN)
            return -1;
        tab[n++] = *o;
    }
    for (size_t i = 0; i < N_SHARED; i++)
        if (!shared_opts[i].bit || (spec->shared & shared_opts[i].bit))
            tab[n++] = shared_opts[i].opt;
    tab[n] = (struct option){0, 0, 0, 0};
    return 0;
}

/* A shared option: -1 when it was taken, else the exit status. */
static int shared_opt(const struct gmt_args_spec *spec, int c, const char *arg, struct gmt_args *a)
{
    long v;
    switch (c) {
    case OPT_JSON:
        a->output = GMT_OUT_JSON;
        return -1;
    case OPT_CSV:
        a->output = GMT_OUT_CSV;
        return -1;
    case OPT_NO_SYMBOLS:
        a->ro.no_symbols = true;
        return -1;
    case OPT_DEBUG_PATHS:
        if (gmt_report_opts_add_debug_path(&a->ro, arg))
            return gmt_cli_usage_error(spec->cmd, "too many --debug-dir (at most %d)",
                                       GMT_MAX_DEBUG_PATHS);
        return -1;
    case OPT_TOP:
        if (gmt_cli_long(arg, 0, spec->top_max, &a->ro.top))
            return gmt_cli_usage_error(spec->cmd, "--top wants a count, not '%s'", arg);
        return -1;
    case OPT_FRAMES:
        if (gmt_cli_long(arg, 1, 64, &v))
            return gmt_cli_usage_error(spec->cmd, "--frames wants 1..64, not '%s'", arg);
        a->ro.frames = (int)v;
        return -1;
    case OPT_INTERNAL:
        if (!arg[0] || gmt_report_opts_add_internal(&a->ro, arg))
            return gmt_cli_usage_error(spec->cmd, "--internal wants a glob (at most %d), not '%s'",
                                       GMT_MAX_INTERNAL_RULES, arg);
        return -1;
    case 'o':
        if (!arg[0])
            return gmt_cli_usage_error(spec->cmd, "-o wants a path");
        a->out_path = arg;
        return -1;
    case OPT_HELP:
        fputs(spec->help, stdout);
        return GMT_EXIT_OK;
    }
    return GMT_EXIT_ERROR;
}

int gmt_args_parse(const struct gmt_args_spec *spec, int argc, char **argv, struct gmt_args *a)
{
    struct option tab[MAX_OWN + N_SHARED + 1];
    if (build_table(spec, tab))
        return gmt_cli_usage_error(spec->cmd, "too many options");
    /* a ':' after any '+' makes getopt_long tell a missing value (':') from an option
     * it does not know ('?') */
    char optstring[32];
    const char *os = spec->optstring;
    if (snprintf(optstring, sizeof optstring, "%s:%s", *os == '+' ? "+" : "",
                 os + (*os == '+')) >= (int)sizeof optstring)
        return gmt_cli_usage_error(spec->cmd, "too many options");
    int c;
    optind = 0; /* 0, not 1: a full reset, so a second parse in one process starts clean */
    opterr = 0;
    while ((c = getopt_long(argc, argv, optstring, tab, NULL)) != -1) {
        int r;
        if (c == ':')
            r = gmt_cli_usage_error(spec->cmd, "option '%s' needs a value", argv[optind - 1]);
        else if (c >= OPT_JSON || (c == 'o' && (spec->shared & GMT_ARGS_OUTPUT)))
            r = shared_opt(spec, c, optarg, a);
        else if (c != '?' && spec->own_opt)
            r = (r = spec->own_opt(spec->ctx, c, optarg)) ? r : -1;
        else
            r = gmt_cli_usage_error(spec->cmd, "%s '%s'", spec->unknown, argv[optind - 1]);
        if (r >= 0)
            return r;
    }
    a->first = optind;
    return -1;
}

/* ---- operands ---- */

/* One operand into v: a directory or a pack as the traces in it, anything else as it
 * is. 0, -ENOENT (a directory or pack without traces: said into msgs) or -ENOMEM. */
static int expand_one(const char *arg, struct gmt_vec *v, struct gmt_msgs *msgs)
{
    struct stat st;
    bool found = stat(arg, &st) == 0;
    bool dir = found && S_ISDIR(st.st_mode);
    bool pack = found && S_ISREG(st.st_mode) && gmt_pack_is(arg);
    if (!dir && !pack) {
        char **slot = gmt_vec_push(v);
        if (!slot || !(*slot = strdup(arg))) {
            if (slot)
                v->len--;
            return -ENOMEM;
        }
        return 0;
    }
    char **list;
    size_t k;
    char err[512];
    int status = 0;
    if (pack && gmt_pack_list(arg, &list, &k, err, sizeof err) == -EINVAL) {
        gmt_msgs_add(msgs, "%s", err);
        return -ENOENT;
    }
    if (pack ? !k : gmt_list_traces(arg, &list, &k) || k == 0) {
        gmt_msgs_add(msgs, "%s: no traces (*.gmt) in this %s", arg, pack ? "pack" : "directory");
        status = -ENOENT;
        if (!k)
            return status;
    }
    for (size_t j = 0; j < k; j++) {
        char **slot = gmt_vec_push(v);
        if (!slot) {
            free(list[j]);
            status = -ENOMEM;
            continue;
        }
        *slot = list[j];
    }
    free(list);
    return status;
}

/* A pattern the shell would have expanded had it not been quoted: an operand that is no
 * file and holds a glob's special characters, matched as glob(3) matches (sorted; no
 * match is said into msgs). Its matches go in as operands of their own. */
static int expand_glob(const char *arg, struct gmt_vec *v, struct gmt_msgs *msgs)
{
    glob_t g;
    int r = glob(arg, 0, NULL, &g);
    if (r == GLOB_NOSPACE)
        return -ENOMEM;
    if (r) {
        gmt_msgs_add(msgs, "%s: no file matches", arg);
        return -ENOENT;
    }
    int status = 0;
    for (size_t i = 0; i < g.gl_pathc && status != -ENOMEM; i++) {
        int x = expand_one(g.gl_pathv[i], v, msgs);
        status = x ? x : status;
    }
    globfree(&g);
    return status;
}

int gmt_expand_paths(char *const *args, size_t n, char ***out, size_t *nout,
                     struct gmt_msgs *msgs)
{
    struct gmt_vec v = GMT_VEC_INIT(char *);
    int status = 0;
    for (size_t i = 0; i < n && status != -ENOMEM; i++) {
        struct stat st;
        bool pattern = strpbrk(args[i], "*?[") && stat(args[i], &st) != 0;
        int r = pattern ? expand_glob(args[i], &v, msgs) : expand_one(args[i], &v, msgs);
        status = r ? r : status;
    }
    *out = v.data;
    *nout = v.len;
    return status;
}

int gmt_args_traces(const struct gmt_args *a, int argc, char **argv, char ***out, size_t *nout)
{
    struct gmt_msgs msgs = GMT_MSGS_INIT;
    *out = NULL;
    *nout = 0;
    int r = gmt_expand_paths(argv + a->first, (size_t)(argc - a->first), out, nout, &msgs);
    gmt_msgs_print(&msgs, stderr);
    if (r == -ENOMEM) {
        gmt_err("gpumemtrace: out of memory");
        return -1;
    }
    return r ? GMT_EXIT_ERROR : GMT_EXIT_OK;
}

/* ---- outputs ---- */

FILE *gmt_output_open(const char *cmd, const char *path)
{
    if (!path)
        return stdout;
    FILE *f = fopen(path, "w");
    if (!f)
        gmt_err("gpumemtrace: %s: cannot create %s: %s", cmd, path, strerror(errno));
    return f;
}

int gmt_output_close(const char *cmd, FILE *f, const char *path)
{
    if (f == stdout || !(ferror(f) | fclose(f)))
        return GMT_EXIT_OK;
    gmt_err("gpumemtrace: %s: cannot write %s", cmd, path);
    return GMT_EXIT_ERROR;
}

int gmt_output_dir(const char *cmd, const char *dir)
{
    struct stat st;
    if (mkdir(dir, 0777) && errno != EEXIST) {
        gmt_err("gpumemtrace: %s: cannot create %s: %s", cmd, dir, strerror(errno));
        return GMT_EXIT_ERROR;
    }
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
        gmt_err("gpumemtrace: %s: %s is not a directory", cmd, dir);
        return GMT_EXIT_ERROR;
    }
    return 0;
}

int gmt_cli_seconds(const char *s, uint64_t *ns)
{
    char *end;
    errno = 0;
    /* decimal digits first: strtod would also take "nan", "inf", hex and blanks */
    if (!((s[0] >= '0' && s[0] <= '9') || (s[0] == '.' && s[1] >= '0' && s[1] <= '9')) ||
        strpbrk(s, "xXpP"))
        return -EINVAL;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= 0 && v <= 1e9))
        return -EINVAL;
    *ns = (uint64_t)(v * 1e9);
    return 0;
}
