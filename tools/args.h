/* args.h: the command line of one command: the options several commands share, parsed in one place. */
#ifndef GMT_ARGS_H
#define GMT_ARGS_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "paths.h" /* gmt_free_paths, for the lists made below */
#include "report.h"
#include "util.h"

/* The shared options, one bit each; a command names those it takes. --help is always
 * taken. Each has the same spelling, meaning and message in every command. */
#define GMT_ARGS_JSON        (1u << 0) /* --json: one JSON document on stdout */
#define GMT_ARGS_NO_SYMBOLS  (1u << 1) /* --no-symbols: module+offset, open no binary */
#define GMT_ARGS_DEBUG_PATHS (1u << 2) /* --debug-dir DIR (or --debug-paths): more places
                                        * for binaries and debug files */
#define GMT_ARGS_TOP         (1u << 3) /* --top N: rows shown, 0..top_max */
#define GMT_ARGS_CSV         (1u << 4) /* --csv: the tables as CSV */
#define GMT_ARGS_FRAMES      (1u << 5) /* --frames N: frames shown per stack from its site;
                                        * --internal GLOB: more allocator-internal frames */
#define GMT_ARGS_OUTPUT      (1u << 6) /* -o, --output OUT: where to write (the command's
                                        * optstring holds "o:") */

/* The output a command renders; of --json and --csv the last given wins. */
enum gmt_output { GMT_OUT_TEXT, GMT_OUT_JSON, GMT_OUT_CSV };

/* What a command's options are. Its own options are getopt_long entries whose values
 * lie below 256 (the shared ones take values above, but for -o), handled by own_opt. */
struct gmt_args_spec {
    const char *cmd;           /* the command's name, for messages */
    const char *help;          /* printed for --help */
    unsigned shared;           /* GMT_ARGS_* */
    long top_max;              /* with GMT_ARGS_TOP */
    const struct option *own;  /* ends with a zero entry; NULL for none */
    /* One of the command's own options (c its value, arg its argument or NULL): 0, or
     * the exit status to return (what gmt_cli_usage_error returned). */
    int (*own_opt)(void *ctx, int c, const char *arg);
    void *ctx;
    const char *optstring;     /* getopt_long's; "+..." stops at the first operand */
    const char *unknown;       /* the start of the message for an option not taken */
};

/* The shared options' settings, and where the operands start. */
struct gmt_args {
    struct gmt_report_opts ro; /* no_symbols, debug_paths, top */
    enum gmt_output output;
    const char *out_path;      /* -o OUT, NULL: not given */
    int first;                 /* argv index of the first operand */
};

/* Defaults: those of gmt_report_opts_init, text output. */
void gmt_args_init(struct gmt_args *a);
/* Parses argv[1..argc) (argv[0] is the command's name) into a, whose defaults the caller
 * has set. Returns -1 when the command goes on, its operands at argv[a->first..argc),
 * else the exit status it returns: GMT_EXIT_OK after printing its help, or what a usage
 * error (reported on stderr) returned. */
int gmt_args_parse(const struct gmt_args_spec *spec, int argc, char **argv, struct gmt_args *a);

/* Trace arguments with each directory replaced by the traces in it (what `run -o DIR`
 * writes), in order; *out and each path are malloc'd (gmt_free_paths). A directory
 * without traces is reported into msgs. Returns 0, -ENOENT (such a directory; the
 * rest is still listed) or -ENOMEM. */
int gmt_expand_paths(char *const *args, size_t n, char ***out, size_t *nout,
                     struct gmt_msgs *msgs);
/* A command's traces: its operands from a->first, expanded as gmt_expand_paths does, its
 * messages printed on stderr. GMT_EXIT_OK, GMT_EXIT_ERROR when an operand could not be
 * listed (the others are in *out: the command goes on and exits with it), or -1 after
 * saying the memory ran out (nothing to free: the command exits GMT_EXIT_ERROR). */
int gmt_args_traces(const struct gmt_args *a, int argc, char **argv, char ***out, size_t *nout);

/* ---- where a command writes (-o OUT) ---- */

/* The file at path, created or truncated for writing; stdout when path is NULL. NULL
 * after saying "gpumemtrace: CMD: cannot create PATH: REASON" on stderr: the command
 * then exits GMT_EXIT_ERROR. */
FILE *gmt_output_open(const char *cmd, const char *path);
/* Closes what gmt_output_open returned: GMT_EXIT_OK, or GMT_EXIT_ERROR after saying
 * "gpumemtrace: CMD: cannot write PATH" when something written to it was lost (a full
 * disk, an I/O error). stdout is left open: main() flushes and checks it at exit. */
int gmt_output_close(const char *cmd, FILE *f, const char *path);
/* The directory dir, made when missing (its parent must exist), for files of a command's
 * output: 0, or GMT_EXIT_ERROR after saying why not on one line (cannot create it, or it
 * is something else than a directory). */
int gmt_output_dir(const char *cmd, const char *dir);

/* Seconds as a decimal number (no sign, hex, inf or nan), 0..1e9, into ns: 0 or -EINVAL. */
int gmt_cli_seconds(const char *s, uint64_t *ns);

#endif
