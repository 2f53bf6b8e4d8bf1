/* names.h: a trace's native frames named where it ran, into TRACE.names (names_read.h reads them); what cannot be named. */
#ifndef GMT_NAMES_H
#define GMT_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "names_read.h" /* GMT_NAMES_SUFFIX */

/* ---- what could not be named, for the summary ---- */

struct gmt_analysis;

/* A module that holds frames of the trace's stacks and cannot name them. */
struct gmt_unnamed {
    const char *path;          /* as the trace names it */
    const char *why;           /* gmt_sym_unnamed_why's phrase */
};

/* The modules whose frames in a's stacks cannot be named (opens their files on first
 * use), in the order the trace loaded them: how many, the first max of them in out.
 * 0 with --no-symbols (nothing is named then, by choice). */
size_t gmt_names_unnamed(struct gmt_analysis *a, struct gmt_unnamed *out, size_t max);
/* The summary's line for them, "  names     not for 2 modules: ...\n", nothing when all
 * are named; and the JSON member `, "unnamed_modules": [{"module", "why"}...]`. */
void gmt_names_text_line(FILE *out, const struct gmt_analysis *a);
void gmt_names_json(FILE *out, const struct gmt_analysis *a);

/* ---- writing (on the host where the trace was made) ---- */

/* What naming one trace found and wrote. */
struct gmt_names_made {
    uint64_t addresses;        /* distinct native addresses the stacks hold */
    uint64_t frames;           /* frames written for them (inlined ones count) */
    uint32_t modules;          /* modules that hold them */
    uint32_t unnamed;          /* of those, modules whose frames could not be named */
    uint64_t bytes;            /* of the names file */
    uint64_t trace_bytes;      /* of the trace */
    bool fresh;                /* the names file was up to date: nothing written */
    char unnamed_list[512];    /* "MODULE (why); ..." of the unnamed ones, cut to fit */
};

/* Names the trace at `trace`: every distinct native address of its stacks, resolved from
 * the modules here (and debug_dirs, a NULL-terminated list or NULL), written atomically
 * to trace + GMT_NAMES_SUFFIX. A names file already made for this trace at its present
 * size is kept, unless force. A trace cut by a crash is named up to its last whole
 * record. 0, or -1 with a one-line message in err (nothing written). */
int gmt_names_make(const char *trace, const char *const *debug_dirs, bool force,
                   struct gmt_names_made *made, char *err, size_t errlen);

/* ---- many traces (cmd_symbolize.c) ---- */

/* Names files[0..n) in worker processes (one per core, at most 32), each trace as
 * gmt_names_make does. verbose: a line per trace on out, else one line for all, and
 * a line per trace whose frames could not all be named. Returns the traces that
 * failed (each said on stderr), or -1 when out of memory. */
long gmt_names_make_all(char **files, size_t n, const char *const *debug_dirs, bool force,
                        bool verbose, FILE *out);
/* `gpumemtrace run`'s end: the traces in dir named as gmt_names_make_all does, its lines
 * on stderr (none when quiet, but for failures). */
void gmt_names_run_dir(const char *dir, bool quiet);

#endif
