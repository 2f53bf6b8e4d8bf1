/* test_python_lib.c: the library's Python frames where no interpreter is loaded (the end-to-end checks are tests/python). */
#include <criterion/criterion.h>
#include <stdint.h>

#include "gmt.h"

/* This test binary has no interpreter: no Python frames, and the library does not fault
 * looking for one (again and again: it asks dlsym again now and then). */
Test(python, no_interpreter_no_frames)
{
    static struct gmt_py_stack py;
    for (int i = 0; i < 10000; i++)
        cr_assert_eq(gmt_python_frames(&py), 0);
    cr_assert_eq(py.n, 0);
    cr_assert(!gmt_python_eval_frame(&py, 0));
    cr_assert(!gmt_python_eval_frame(&py, 1));
    cr_assert(!gmt_python_eval_frame(&py, (uint64_t)(uintptr_t)&py));
}
