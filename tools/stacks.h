/* stacks.h: a recorded stack as text: folded for people, every frame for machines and matching. */
#ifndef GMT_STACKS_H
#define GMT_STACKS_H

#include <stddef.h>
#include <stdint.h>

#include "report.h"

/* Frames of a stack that matter to a person, as one line "f1 < f2 < f3" (innermost
 * first, the CUDA runtime/driver and gpumemtrace left out), into buf. */
const char *gmt_stack_line(const struct gmt_analysis *a, uint32_t stack, int max_frames,
                           char *buf, size_t len);
/* The same without folding: every frame, for machines (JSON) and for matching. */
const char *gmt_stack_full(const struct gmt_analysis *a, uint32_t stack, int max_frames,
                           char *buf, size_t len);

/* A stack as a folded line's frames: outermost first, ';' between them (flamegraph.pl,
 * inferno, speedscope). The CLI is one thread: the function keeps its scratch static. */
const char *gmt_stack_folded(const struct gmt_analysis *a, uint32_t stack, char *buf, size_t len);

#endif
