/* cli.h: the CLI's command table; every tools/cmd_<name>.c provides one entry of it. */
#ifndef GMT_CLI_H
#define GMT_CLI_H

#define GMT_CLI_VERSION "0.1.0"

/* What `gpumemtrace --help` and gpumemtrace(1) say of the tool and of its exit status. */
#define GMT_CLI_ABOUT                                                                \
    "Where did the GPU memory go, and which NCCL call took it? Reads the traces\n"   \
    "that libgpumemtrace.so writes (*.gmt).\n"
#define GMT_CLI_EXIT_STATUS \
    "Exit status: 0 success, 1 a check failed, 2 an error (usage, input, output).\n"

/* Exit statuses shared by every command. */
#define GMT_EXIT_OK 0
#define GMT_EXIT_FAIL 1   /* the command ran and its answer is "no" (a check failed) */
#define GMT_EXIT_ERROR 2  /* bad usage, unreadable or malformed input, output error */

/* X(name, one-line summary), in the order `gpumemtrace --help` lists them.
 * Adding a command is one line here plus tools/cmd_<name>.c defining
 *   int gmt_cmd_<name>(int argc, char **argv);   argv[0] is the command's name
 *   const char gmt_help_<name>[];                "usage: gpumemtrace <name> ..." and more
 * main() answers `help <name>` and `<name> --help` from gmt_help_<name>; a command
 * parses the rest of its arguments itself and returns an exit status. */
#define GMT_COMMANDS(X) \
    X(run, "run a command with the tracer preloaded, then summarise its traces") \
    X(summary, "where the device memory went: peak, NCCL calls, sites, leaks, failures") \
    X(merge, "the traces of many ranks side by side: peaks, NCCL calls across ranks") \
    X(explain, "what NCCL's memory is for: buffers by purpose, why that size, what if") \
    X(diff, "what grew or shrank between two runs: categories, collectives, sites, peaks") \
    X(check, "fail CI when NCCL memory grew beyond a baseline's limits; write baselines") \
    X(export, "device memory by call stack for other tools: folded stacks for flame graphs") \
    X(watch, "a live view of a running job, redrawn as it runs; Prometheus metrics of it") \
    X(report, "one offline HTML page: memory over time per rank, NCCL calls, top sites") \
    X(symbolize, "name the traces' native frames here, so they read the same elsewhere") \
    X(pack, "one file for a whole job's traces and their names, read like the directory") \
    X(dump, "print every record of traces, one line each")

#define GMT_X(name, summary)                   \
    int gmt_cmd_##name(int argc, char **argv); \
    extern const char gmt_help_##name[];
GMT_COMMANDS(GMT_X)
#undef GMT_X

/* manpage.c: `gpumemtrace __man [COMMAND]` (roff) and `__complete bash|zsh`, from the
 * table above and each command's help; argv[0] is "__man" or "__complete". */
int gmt_help_generate(int argc, char **argv);

/* cmd_dump.c: one record as dump prints it (also driven by the reader's fuzz target). */
#include <stdio.h>
struct gmt_event;
struct gmt_reader;
void gmt_dump_line(FILE *o, const struct gmt_event *ev, const struct gmt_reader *r);

#endif
