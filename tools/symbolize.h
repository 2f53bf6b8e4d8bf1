/* symbolize.h: turns instruction addresses from a trace into functions, files and lines (elfutils libdwfl). */
#ifndef GMT_SYMBOLIZE_H
#define GMT_SYMBOLIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

/* One source-level frame. An address inside inlined code gives several: the innermost
 * first, each with inlined = true, then the function they were inlined into. */
struct gmt_frame {
    const char *function;  /* symbol as in the binary (C++ names stay mangled), NULL unknown */
    const char *file;      /* source file, NULL without debug info */
    unsigned line;         /* 1-based, 0 unknown */
    const char *module;    /* path of the module from the trace, NULL when no module holds the address */
    uint64_t offset;       /* address minus the module's load bias: what addr2line -e MODULE takes */
    bool inlined;          /* inlined into the next frame */
    bool python;           /* a Python frame: function is the code's qualified name, file
                            * its co_filename, line the line running; module NULL */
};

struct gmt_symbolizer;

/* debug_dirs: NULL, or a NULL-terminated list of directories searched for the trace's
 * modules (by base name and by path below them, for traces made on another machine)
 * and for separate debug info (also as .build-id/xx/rest.debug). Returns NULL when
 * out of memory. GPUMEMTRACE_NO_LOCAL_MODULES=1 in the environment: no module is read
 * at the path the trace names nor from /usr/lib/debug, only the names that travel
 * with the trace and debug_dirs (what a machine without the binaries sees). */
struct gmt_symbolizer *gmt_sym_new(const char *const *debug_dirs);
void gmt_sym_free(struct gmt_symbolizer *s);
/* Offline: no file is ever opened, every address shows as module+offset (fast; for
 * traces from machines whose binaries are not here; stable output for golden tests). */
void gmt_sym_set_offline(struct gmt_symbolizer *s, bool offline);

/* A module as a MODULE_LOAD record describes it. The file is opened only when an
 * address in it is first resolved; when the file found has a different build-id than
 * the trace says, its symbols are not used and addresses show as module+offset.
 * Returns 0, -EINVAL (empty range), -ENOMEM. */
int gmt_sym_add_module(struct gmt_symbolizer *s, uint32_t id, const char *path,
                       const uint8_t *build_id, size_t build_id_len, uint64_t bias,
                       uint64_t start, uint64_t end);
/* The same from a MODULE_LOAD record as read (untrusted: lengths are checked).
 * Returns 0, -EINVAL (malformed), -ENOMEM. */
int gmt_sym_add_module_rec(struct gmt_symbolizer *s, const struct gmt_rec *rec);

/* A Python code object (a PYCODE record): frames GMT_PYFRAME(id, line) in stacks resolve
 * to it. Returns 0, -EINVAL (id 0 or not below 2^24), -ENOMEM. */
int gmt_sym_add_pycode(struct gmt_symbolizer *s, uint32_t id, const char *qualname,
                       const char *file, int32_t firstlineno);

/* Resolves a return address, as stacks hold (or a Python frame, GMT_PYFRAME_IS): the call instruction before it (ip - 1)
 * is what is looked up. *frames (owned by s, valid until gmt_sym_free) gets at least
 * one frame; *n their number. Returns 0 or -ENOMEM. */
int gmt_sym_resolve(struct gmt_symbolizer *s, uint64_t ip, const struct gmt_frame **frames,
                    size_t *n);
/* The same for an exact instruction address (a signal frame, a function's entry). */
int gmt_sym_resolve_pc(struct gmt_symbolizer *s, uint64_t pc, const struct gmt_frame **frames,
                       size_t *n);

/* The path of the module holding ip, NULL when none; cheap (no file is opened).
 * When modules overlap (one unloaded, another loaded there), the one added last wins. */
const char *gmt_sym_module_of(const struct gmt_symbolizer *s, uint64_t ip, uint64_t *offset);
/* The index (from 0, in the order added) of the module holding addr, -1 none. */
long gmt_sym_module_at(const struct gmt_symbolizer *s, uint64_t addr);
/* Whether the module that holds return address ip (as stacks hold it) can name its
 * frames: the names that travel with the trace hold it, or a file with its build-id is
 * here (opened then). */
bool gmt_sym_module_trusted(struct gmt_symbolizer *s, uint64_t ip);
/* Why the module that holds return address ip cannot name its frames, as a short phrase ("not found",
 * another build at its path, or what the host where the trace ran said when it named
 * the trace); NULL when it can, when no module or no file on disk holds ip ([vdso]), or
 * offline. Opens the module's file on first use. */
const char *gmt_sym_unnamed_why(struct gmt_symbolizer *s, uint64_t ip);

/* The names that travel with the trace at trace_path (trace_path + GMT_NAMES_SUFFIX,
 * names_read.h) are consulted first, by module build-id and offset, read when first
 * needed: a trace named on its host reads the same anywhere. Without that file, or for
 * what it does not hold, the files here are read. */
void gmt_sym_use_names(struct gmt_symbolizer *s, const char *trace_path);

/* "function (file:line)", "function (module+0xoffset)", "module+0xoffset" or "0xaddress"
 * into buf, " [inlined]" appended to inlined frames; control characters become '?'. */
const char *gmt_frame_format(const struct gmt_frame *f, char *buf, size_t len);

#endif
