/* deferred.c: the owner of the thread's deferred byte: the writer's two hooks, each passed to the client whose state the byte holds. */
#include "deferred.h"
#include "writer_api.h"

/* Cold: the writer calls it only while the byte holds records back. */
__attribute__((cold)) void gmt_deferred_write(void)
{
    switch (gmt_ts.writer.deferred) {
    case GMT_DEFER_MATCH:
        gmt_group_spill();
        break;
    case GMT_DEFER_CALL:
        gmt_scope_call_spill();
        break;
    default:
        break;
    }
}

/* Both clients, whatever the state: the held call's forgets the previous call form's
 * fields even when nothing is held, and the group's forgets its template. */
unsigned gmt_deferred_lost(void)
{
    unsigned call = gmt_scope_call_lost();
    return call + gmt_group_lost();
}
