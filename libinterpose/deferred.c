/* deferred.c: the owner of the thread's deferred byte: the writer's two hooks, each passed to the client whose state the byte holds. */
#include <stddef.h>

#include "deferred.h"
#include "writer_api.h"

/* The clients' entries (GMT_DEFERRED_CLIENT), placed by the linker: in the library from
 * its load on, before init, in every thread and in a forked child alike. Weak: a program
 * built without a client has none. */
extern const struct gmt_deferred_client __start_gmt_deferred_clients[] __attribute__((weak, visibility("hidden")));
extern const struct gmt_deferred_client __stop_gmt_deferred_clients[] __attribute__((weak, visibility("hidden")));

static const struct gmt_deferred_client *client_of(uint8_t state)
{
    for (const struct gmt_deferred_client *c = __start_gmt_deferred_clients; c < __stop_gmt_deferred_clients; c++)
        if (c->state == state)
            return c;
    return NULL;
}

/* Cold: the writer calls it only while the byte holds records back. */
__attribute__((cold)) void gmt_deferred_write(void)
{
    const struct gmt_deferred_client *c = client_of(gmt_ts.writer.deferred);
    if (c) /* none for OFF, RECORD, FORM: nothing held */
        c->spill();
}

/* Both clients, whatever the state: the held call's forgets the previous call form's
 * fields even when nothing is held, and the group's forgets its template. The held
 * call's first: it leaves the byte OFF or a group's state. */
unsigned gmt_deferred_lost(void)
{
    const struct gmt_deferred_client *call = client_of(GMT_DEFER_CALL), *group = client_of(GMT_DEFER_MATCH);
    unsigned n = call ? call->lost() : 0;
    return n + (group ? group->lost() : 0);
}
