/* python.h: the calling thread's Python frames (python.c). */
#ifndef GMT_PYTHON_H
#define GMT_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gmt.h"

/* ---- python.c: the calling thread's Python frames (CPython 3.9-3.13) ---- */
#define GMT_PY_DEPTH_MAX 128 /* innermost Python frames kept per stack */
struct gmt_py_stack {
    uint32_t n, ngroups;
    uint64_t eval_lo, eval_span;       /* _PyEval_EvalFrameDefault's code, 0 0 unknown */
    uint64_t ip[GMT_PY_DEPTH_MAX];     /* GMT_PYFRAME values, innermost first */
    uint16_t group[GMT_PY_DEPTH_MAX];  /* frames run by each activation of the interpreter's
                                        * evaluation loop, innermost first (may be 0) */
};
/* Fills *out with the thread's Python frames (interning their code objects: PYCODE
 * records) and returns their number; 0 when the thread runs no Python, the option is
 * off, or anything looks wrong. Never takes the GIL, never faults on a valid chain. */
GMT_HIDDEN uint32_t gmt_python_frames(struct gmt_py_stack *out);
/* Whether a return address (the call is at ip - 1) lies in the interpreter's evaluation
 * loop (_PyEval_EvalFrameDefault), where a group of Python frames belongs. */
static inline bool gmt_python_eval_frame(const struct gmt_py_stack *p, uint64_t ip)
{
    return ip - 1 - p->eval_lo < p->eval_span;
}

#endif
