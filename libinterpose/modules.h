/* modules.h: the module map (modules.c). */
#ifndef GMT_MODULES_H
#define GMT_MODULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gmt.h"

/* ---- modules.c: the module map ---- */
GMT_HIDDEN void gmt_modules_write_all(void); /* at open: every loaded object */
GMT_HIDDEN void gmt_modules_rescan(void);    /* after dlopen/dlclose: the changes */

#endif
