/* trace_repeat.h: repeated groups (GROUP_REPEAT): each thread's latest groups, and the members a repeat stands for. */
#ifndef GMT_TRACE_REPEAT_H
#define GMT_TRACE_REPEAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"
#include "u64map.h"

/*
 * A GROUP_REPEAT stands for the member scopes of one of its thread's latest groups
 * (docs/trace-format.md): exactly what the library writes for those members when it
 * writes them one by one (GPUMEMTRACE_GROUP_REPEAT=0). Both readers of them use this:
 * the loader, which notes the record (its members' template, ids, thread and time) and
 * leaves it in the image, the members' scopes made from the note when asked for and
 * their events handed out by the iteration one at a time (so memory follows the file,
 * not the calls it stands for), and the expander, which writes the members' records for
 * `dump --expand`. One that cannot be restored (its group
 * or the one it names is not in the file, or their members differ in number) counts its
 * members' records as dropped.
 */
struct gmt_rep_member {
    struct gmt_rec_scope_begin b;
    int32_t result;
    uint64_t origin;                   /* offset of the SCOPE_BEGIN it was first read from */
};
#define GMT_REP_MAX_CLI 64             /* members kept per group; a larger one is not kept */
struct gmt_rep_group {
    uint32_t id;                       /* 0: none */
    int n;                             /* members; -1: more than GMT_REP_MAX_CLI */
    uint64_t tmpl;                     /* the loader's note of its members' origins + 1, 0 none */
    struct gmt_rep_member *m;
};
struct gmt_rep_thread {
    struct gmt_rep_group cur;          /* the group open with no scope around it (id 0: none) */
    struct gmt_rep_group last[GMT_REPEAT_LIKE_WINDOW]; /* the latest that ended, a ring */
    unsigned next;                     /* the ring's slot the next one takes */
};

/* Every thread's, by tid. */
struct gmt_repeats {
    struct gmt_u64map of_tid;          /* tid -> index in th + 1 */
    struct gmt_rep_thread *th;
    size_t n_th, cap_th;
};

void gmt_repeats_init(struct gmt_repeats *rs);
void gmt_repeats_free(struct gmt_repeats *rs);
/* Thread tid's (made when new): NULL when out of memory. */
struct gmt_rep_thread *gmt_repeats_thread(struct gmt_repeats *rs, uint32_t tid);
/* A THREAD record: the thread's records start afresh. */
void gmt_rep_restart(struct gmt_rep_thread *rt);
/* A SCOPE_BEGIN or plain SCOPE_END of the thread (as read, or restored from a call form),
 * at `origin` in the image. */
void gmt_rep_note(struct gmt_rep_thread *rt, const struct gmt_rec *r, uint64_t origin);
/* The members GROUP_REPEAT g stands for, made the open group's (their SCOPE_BEGINs with
 * their ids, parent, dt 0 and stack 0; each one's result): how many, into *m (valid
 * until the thread's next note), and the group it repeats into *like; 0 when it cannot
 * stand. */
int gmt_rep_apply(struct gmt_rep_thread *rt, const struct gmt_rec_group_repeat *g,
                  const struct gmt_rep_member **m, struct gmt_rep_group **like);

#endif
