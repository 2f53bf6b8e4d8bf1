/* gmt.c: the ground floor's data that gmt.h declares: the options, the hot line and the per-thread state, with their first values. */
#include "gmt.h"

/* The defaults of the options table, until gmt_options_load (options.c) reads the
 * environment. */
struct gmt_options gmt_opt = {
#define GMT_X(ID, type, field, def, env, help) .field = def,
    GMT_OPTIONS(GMT_X)
#undef GMT_X
};

/* The hot line: every field's first value (writer closed, the default sampling policy,
 * no library known to be loaded once). */
struct gmt_hot gmt_hot = {
    .meminfo = {GMT_POLICY_FIRST, 2, 0}, /* the default, until the options are read */
    .scope.comm_gen = 1,
    .resolve.single_copy_gen = {~0u, ~0u, ~0u},
};

/* Each thread's state, zero at its start: one member per owning file. */
GMT_TLS struct gmt_thread_state gmt_ts __attribute__((aligned(64)));
