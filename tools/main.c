/* main.c: the gpumemtrace command line: the command table, help, version, and the output check at exit. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "trace_format.h"
#include "util.h"

struct command {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
    const char *help;
};

static const struct command commands[] = {
#define GMT_X(name, summary) { #name, gmt_cmd_##name, summary, gmt_help_##name },
    GMT_COMMANDS(GMT_X)
#undef GMT_X
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static const struct command *find(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i].name, name) == 0)
            return &commands[i];
    return NULL;
}

static void usage(FILE *out)
{
    fputs("usage: gpumemtrace [--help] [--version] COMMAND [ARGS]\n"
          "\n" GMT_CLI_ABOUT "\n"
          "Commands:\n", out);
    for (size_t i = 0; i < NCOMMANDS; i++)
        fprintf(out, "   %-10s %s\n", commands[i].name, commands[i].summary);
    fputs("\n"
          "'gpumemtrace help COMMAND' or 'gpumemtrace COMMAND --help' describes one.\n"
          "A TRACE is a file, a directory (the *.gmt in it and below), a pack, or a\n"
          "glob such as 'run/*.r0.gmt', matched here when the shell left it unexpanded.\n"
          GMT_CLI_EXIT_STATUS, out);
}

/* Output that did not reach its file is a failure, not a success with a short
 * report: a full disk or a closed pipe must not exit 0. */
static int finish(int rc)
{
    int bad = fflush(stdout) != 0 || ferror(stdout);
    int saved = errno;
    if (fclose(stdout) != 0 && !bad) {
        bad = 1;
        saved = errno;
    }
    if (bad) {
        gmt_err("gpumemtrace: error writing output: %s", strerror(saved));
        return GMT_EXIT_ERROR;
    }
    return rc;
}

static int help_command(const char *name)
{
    const struct command *c = find(name);
    if (!c) {
        gmt_err("gpumemtrace: unknown command '%s' (see 'gpumemtrace --help')", name);
        return GMT_EXIT_ERROR;
    }
    fputs(c->help, stdout);
    return GMT_EXIT_OK;
}

int main(int argc, char **argv)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage(stdout);
            return finish(GMT_EXIT_OK);
        }
        if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0) {
            printf("gpumemtrace %s (trace format %u.%u)\n", GMT_CLI_VERSION,
                   GMT_VERSION_MAJOR, GMT_VERSION_MINOR);
            return finish(GMT_EXIT_OK);
        }
        gmt_err("gpumemtrace: unknown option '%s' (see 'gpumemtrace --help')", a);
        return GMT_EXIT_ERROR;
    }
    if (i >= argc) {
        usage(stderr);
        return GMT_EXIT_ERROR;
    }
    const char *name = argv[i];
    if (strcmp(name, "help") == 0) {
        if (i + 1 >= argc) {
            usage(stdout);
            return finish(GMT_EXIT_OK);
        }
        if (i + 2 < argc) {
            gmt_err("gpumemtrace help: one command at a time (see 'gpumemtrace --help')");
            return GMT_EXIT_ERROR;
        }
        return finish(help_command(argv[i + 1]));
    }
    /* the build's own commands (man pages, completion), not listed */
    if (strcmp(name, "__man") == 0 || strcmp(name, "__complete") == 0)
        return finish(gmt_help_generate(argc - i, argv + i));
    const struct command *c = find(name);
    if (!c) {
        gmt_err("gpumemtrace: unknown command '%s' (see 'gpumemtrace --help')", name);
        return GMT_EXIT_ERROR;
    }
    /* Only the first argument: later ones may belong to a program the command runs. */
    if (i + 1 < argc && (strcmp(argv[i + 1], "--help") == 0 || strcmp(argv[i + 1], "-h") == 0))
        return finish(help_command(name));
    return finish(c->fn(argc - i, argv + i));
}
