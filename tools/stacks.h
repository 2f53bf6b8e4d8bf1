/* stacks.h: a recorded stack as text: folded for people, every frame for machines and matching. */
#ifndef GMT_STACKS_H
#define GMT_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report.h"

/* Frames of a stack that matter to a person, as one line "f1 < f2 < f3" (innermost
 * first, from its site, the CUDA runtime/driver and gpumemtrace left out), into buf:
 * folded (docs/stacks.md: a framework's frames between the user's as "…"), unless the
 * options give a frame count (--frames N): then every frame from the site, N at most. */
const char *gmt_stack_line(const struct gmt_analysis *a, uint32_t stack, int max_frames,
                           char *buf, size_t len);
/* The same for an allocation site, whose records called `api` (enum gmt_api, 0 unknown):
 * a site frame without file and line names it, "main [prog] (calls cudaMallocArray)". */
const char *gmt_site_line(const struct gmt_analysis *a, uint32_t stack, unsigned api,
                          int max_frames, char *buf, size_t len);
/* The same without folding: every frame, for machines (JSON) and for matching. */
const char *gmt_stack_full(const struct gmt_analysis *a, uint32_t stack, int max_frames,
                           char *buf, size_t len);

/* A stack as a folded line's frames: outermost first, ';' between them (flamegraph.pl,
 * inferno, speedscope). The CLI is one thread: the function keeps its scratch static. */
const char *gmt_stack_folded(const struct gmt_analysis *a, uint32_t stack, char *buf, size_t len);

/* Where a stack's site is: the first frame, innermost first, that is not an allocator's
 * or runtime's own (stacks.c's rules and --internal), as the index of its address in the
 * stack and of the frame among those inlined there. False (both 0) when none is. */
bool gmt_stack_site(const struct gmt_analysis *a, uint32_t stack, uint32_t *ip_index,
                    size_t *inline_index);

/* One site to print: its stack, the API its allocations called, and a key that must
 * agree too for two sites to be one (a category, say). */
struct gmt_site_in {
    uint32_t stack;
    uint16_t api;
    uint32_t key;
};

/* Sites as a person reads them: the line of each of in[0..n) (gmt_site_line at `frames`)
 * into lines[i] (each malloc'd: gmt_site_lines_free), and in group[i] the least j whose
 * line and key are i's: sites that print alike are one site. 0, or -1 out of memory
 * (lines then freed). */
int gmt_site_groups(const struct gmt_analysis *a, const struct gmt_site_in *in, size_t n,
                    int frames, char **lines, size_t *group);
void gmt_site_lines_free(char **lines, size_t n);

/* Every frame of a stack (this library's left out), innermost first, as texts kept in
 * buf (len bytes): up to max pointers into frames[]; *site is the site's index among
 * them. Returns their count (0: no stack). */
size_t gmt_stack_frames(const struct gmt_analysis *a, uint32_t stack, char *buf, size_t len,
                        const char **frames, size_t max, size_t *site);

/* A demangled C++ name without the return type a function template's name starts with
 * ("ncclResult_t ncclCudaCallocAsyncDebug<int>(int**, ...)" -> "ncclCudaCallocAsyncDebug
 * <int>(int**, ...)"), as the site rules match it; the name itself when it has none. */
const char *gmt_without_return_type(const char *fn);

#endif
