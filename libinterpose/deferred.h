/* deferred.h: the thread's deferred byte (gmt.h's contract with the writer): its states, and the two clients that hold records back behind it. */
#ifndef GMT_DEFERRED_H
#define GMT_DEFERRED_H

#include "gmt.h"
#include "writer_api.h"

/*
 * gmt_ts.writer.deferred, one state at a time. deferred.c owns the byte: it defines the
 * writer's two hooks (gmt_deferred_write, gmt_deferred_lost) and passes each to the
 * client whose state the byte holds. The clients never call each other.
 *   OFF     nothing held back.
 *   MATCH   group.c: the members of an open group that returned, matching the thread's
 *           previous group, wait for its GROUP_REPEAT (group.c, "repeated groups").
 *   RECORD  group.c: an open group is being recorded as a template; nothing is held.
 *   CALL    scope.c: a loop call's SCOPE_BEGIN waits in the thread's slot for the call
 *           form at its return (scope.c, "one record per call").
 *   FORM    scope.c: the call form is being written; nothing is held, but a signal
 *           handler's NCCL calls take the slow way (whole SCOPE_BEGIN and SCOPE_END),
 *           so that no call form of theirs comes between this one's fields and its write.
 * Each client changes the byte only from or to its own states and OFF.
 */
enum gmt_defer { GMT_DEFER_OFF, GMT_DEFER_MATCH, GMT_DEFER_RECORD, GMT_DEFER_CALL, GMT_DEFER_FORM };
_Static_assert(GMT_DEFER_MATCH == GMT_WRITER_DEFERRED && !(GMT_DEFER_RECORD & GMT_WRITER_DEFERRED) &&
                   (GMT_DEFER_CALL & GMT_WRITER_DEFERRED) && !(GMT_DEFER_FORM & GMT_WRITER_DEFERRED),
               "MATCH and CALL alone hold records back");

/* ---- group.c, the repeated groups: MATCH -> RECORD (the members matched that returned
 * are written now); and the template forgotten, returning the records lost with it. */
GMT_HIDDEN void gmt_group_spill(void);
GMT_HIDDEN unsigned gmt_group_lost(void);

/* ---- scope.c, a loop call held back: its begin written now (a spill), or forgotten
 * (lost; the next call form carries every field), returning the records lost with it. */
GMT_HIDDEN void gmt_scope_call_spill(void);
GMT_HIDDEN unsigned gmt_scope_call_lost(void);

#endif
