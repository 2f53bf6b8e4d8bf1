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
 * out of memory. */
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
/* Whether the module that holds ip has a file whose build-id matches (opens it). */
bool gmt_sym_module_trusted(struct gmt_symbolizer *s, uint64_t ip);

/* "function (file:line)", "function (module+0xoffset)", "module+0xoffset" or "0xaddress"
 * into buf, " [inlined]" appended to inlined frames; control characters become '?'. */
const char *gmt_frame_format(const struct gmt_frame *f, char *buf, size_t len);

#endif
