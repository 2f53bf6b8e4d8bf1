/* cmd_pack.c: `gpumemtrace pack DIR [-o job.gmtpack]`: a job's traces and their names as one file that every command reads like DIR. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "cli.h"
#include "pack.h"
#include "util.h"

const char gmt_help_pack[] =
    "usage: gpumemtrace pack DIR [-o PACK]\n"
    "\n"
    "Writes the traces under DIR (*.gmt, as `run -o DIR` leaves them) and the names\n"
    "beside each (*.gmt.names, from `run` or `symbolize`) into one file, a plain tar\n"
    "(`tar xf PACK` gives DIR back). Every command takes PACK where it takes DIR, and\n"
    "PACK/MEMBER where it takes a trace: copy one file off the cluster, read it\n"
    "anywhere (docs/names.md). Run it on the host where the traces were made after\n"
    "`gpumemtrace symbolize DIR`, so that they carry their names.\n"
    "\n"
    "options:\n"
    "  -o, --output PACK  the file to write (default: DIR.gmtpack)\n";

int gmt_cmd_pack(int argc, char **argv)
{
    struct gmt_args args;
    gmt_args_init(&args);
    const struct gmt_args_spec spec = {.cmd = "pack", .help = gmt_help_pack,
                                       .shared = GMT_ARGS_OUTPUT, .optstring = "o:",
                                       .unknown = "unknown option"};
    int rc = gmt_args_parse(&spec, argc, argv, &args);
    if (rc >= 0)
        return rc;
    if (args.first >= argc)
        return gmt_cli_usage_error("pack", "no directory given");
    if (args.first + 1 < argc)
        return gmt_cli_usage_error("pack", "one directory, not '%s' too", argv[args.first + 1]);
    const char *dir = argv[args.first];
    struct stat st;
    if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
        gmt_err("gpumemtrace: pack: %s: not a directory", dir);
        return GMT_EXIT_ERROR;
    }
    char def[4200];
    const char *out = args.out_path;
    if (!out) {
        size_t l = strlen(dir);
        while (l > 1 && dir[l - 1] == '/')
            l--;
        snprintf(def, sizeof def, "%.*s%s", (int)(l < 4096 ? l : 4096), dir, GMT_PACK_SUFFIX);
        out = def;
    }
    struct gmt_pack_made made;
    char err[512], b1[32];
    if (gmt_pack_write(dir, out, &made, err, sizeof err)) {
        gmt_err("gpumemtrace: pack: %s", err);
        return GMT_EXIT_ERROR;
    }
    printf("gpumemtrace: %s: %zu trace(s), %zu with their names, %s\n", out, made.traces,
           made.named, gmt_fmt_bytes(b1, sizeof b1, made.bytes));
    if (made.named < made.traces)
        gmt_err("gpumemtrace: pack: %zu trace(s) carry no names: their native frames read as "
                "module+offset elsewhere (`gpumemtrace symbolize %s` here first names them)",
                made.traces - made.named, dir);
    return GMT_EXIT_OK;
}
