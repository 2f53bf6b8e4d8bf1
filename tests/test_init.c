/* test_init.c: options hold from the very first hook, also one reached before the tracer's constructor ran. */
#include "shell_test.h"

TestSuite(init, .init = shell_setup, .fini = shell_teardown);

/* early_ctor_main links a library whose constructor calls cudaMalloc before ours runs */
#define EARLY "LD_PRELOAD=\"$B/libgpumemtrace.so\" \"$B/initprogs/early_ctor_main\""

Test(init, off_holds_for_a_hook_before_our_constructor)
{
    cr_expect_eq(sh("GPUMEMTRACE_OFF=1 " EARLY), 0);
    cr_expect_eq(count_traces("."), 0, "GPUMEMTRACE_OFF=1 must leave no trace file");
}

Test(init, output_pattern_holds_for_a_hook_before_our_constructor)
{
    cr_expect_eq(sh("mkdir sub && GPUMEMTRACE_OUTPUT=\"$W/sub/early.%%p.gmt\" " EARLY), 0);
    cr_expect_eq(count_traces("sub"), 1, "the trace goes where GPUMEMTRACE_OUTPUT says");
    cr_expect_eq(count_traces("."), 0, "and not to the default name");
}
