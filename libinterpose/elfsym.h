/* elfsym.h: functions of the main program found in its own symbol table (elfsym.c). */
#ifndef GMT_ELFSYM_H
#define GMT_ELFSYM_H

#include "gmt.h"

/* A defined function of the main program's .symtab, relocated; NULL none. */
GMT_HIDDEN void *gmt_main_program_function(const char *name);

#endif
