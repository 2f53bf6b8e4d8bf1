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

/*
 * A client: the state whose records it holds back, and its two hooks. Each client places
 * one (GMT_DEFERRED_CLIENT) in the section below, at link time: deferred.c finds them
 * there, so no client is registered late, by a thread, or again in a forked child.
 *   spill  write what the state holds now (gmt_deferred_write, while the byte is `state`).
 *   lost   forget it, whatever the state, returning the records lost with it.
 * group.c: MATCH (the repeated groups: MATCH -> RECORD, the members matched that returned
 *          written; lost forgets the template).
 * scope.c: CALL (a loop call held back: its begin written now, or forgotten: the next call
 *          form carries every field).
 */
struct gmt_deferred_client {
    uint8_t state; /* enum gmt_defer */
    void (*spill)(void);
    unsigned (*lost)(void);
};
#define GMT_DEFERRED_SECTION gmt_deferred_clients
#define GMT_DEFERRED_CLIENT(name, st, spill_fn, lost_fn)                                              \
    static const struct gmt_deferred_client name                                                     \
        __attribute__((used, section("gmt_deferred_clients"), aligned(sizeof(void *)))) = {          \
            .state = (st), .spill = (spill_fn), .lost = (lost_fn)}

#endif
