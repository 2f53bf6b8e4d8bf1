/* collectives.h: the replay's collective rows, made from the scopes before it and finished with what it found. */
#ifndef GMT_COLLECTIVES_H
#define GMT_COLLECTIVES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.h"
#include "u64map.h"

struct gmt_report; /* replay.h: the report whose rows these are */

/* What NCCL chose for the calls of one collective row (its NCCL_COLL_INFO records of the
 * row's communicator, op and bytes per call; the library writes a choice where it first
 * appears and where it changes, not at every launch): the choice most records have, how
 * many have it, of how many, and how many different choices there were. */
struct gmt_nccl_pick {
    uint8_t algo, proto, nchannels, nwarps; /* as in NCCL_COLL_INFO */
    uint64_t calls;                         /* records with this choice */
    uint64_t total;                         /* records of the row */
    uint32_t choices;                       /* different choices among them (up to 8 told apart) */
};

/* One row per (communicator, op, bytes per call): a collective as a person thinks of it. */
struct gmt_coll_row {
    uint64_t comm;
    uint16_t op;
    char label[64];                    /* op name, or "Group(AllReduce+AllGather)" */
    uint64_t bytes_per_call;
    int32_t rank, nranks, device;
    uint64_t calls, failed;
    int64_t first_tracked;             /* tracked device bytes the first call added */
    bool first_has_dev;
    int64_t first_dev;                 /* device-used delta around the first call (MEMINFO) */
    int64_t later_tracked_max, later_tracked_total;
    bool later_has_dev;
    int64_t later_dev_max;
    uint64_t allocs, alloc_bytes;      /* allocations attributed (all calls) */
    uint64_t allocs_other_thread;      /* of them, made on another thread (NCCL's proxy) */
    uint64_t host_ns_first, host_ns_total;
    uint64_t host_calls;               /* calls whose host time was measured: all but group
                                        * members written the short way (zero length at
                                        * their group's time, docs/trace-format.md) */
    uint64_t first_time;
    uint32_t first_scope;              /* the first call's scope id */
    uint32_t first_stack;              /* the first call's stack on the caller's side, 0 none */
    struct gmt_nccl_pick pick;         /* what NCCL chose for its calls; total 0: no record */
};

/* An NCCL call or group still open where the trace ends: the process stopped (hung,
 * killed, crashed) inside it. */
struct gmt_open_row {
    uint32_t scope;                    /* its id */
    uint16_t op;
    char label[64];                    /* its collective row's name ("Group(AllReduce)") */
    uint64_t comm, since;              /* ns */
    uint32_t tid, stack;               /* its caller's stack, 0 none */
    int device;
    int64_t tracked;                   /* device bytes allocated under it so far (its own and
                                        * its inner calls', less what they freed) */
    uint64_t allocs;
};

/* A collective row's device allocations attributed (n: only those up to --to, its
 * allocation count), their bytes, how many were made on another thread than their
 * call's (bytes and other: all of them, for the byte and thread columns). Counted by
 * row, not by scope: the rows are made before the replay (gmt_colls_build) and a scope only
 * keeps its row's index. A trace has a handful of rows and up to a million scopes, each
 * of whose counters would be 24 bytes of fresh memory for the kernel to zero. */
struct gmt_row_count {
    uint64_t n, bytes, other;
};

/* Each scope's top scope (the outermost call it belongs to below any group: an NCCL call
 * NCCL makes inside another is part of it) and each top scope's collective row, -1 none.
 * Kept per scope the trace stores; a member of a repeated group is its own top scope
 * (its parent is a group), and its row is that of the template member it stands for,
 * when it began inside the rows' window (gmt_colls_build). */
struct gmt_colls_map {
    const struct gmt_trace *t;
    int32_t *top_raw;                  /* by scope the trace stores (t->scopes), one more
                                        * in front, -1: the view by the trace's scope_dense
                                        * values reads it for id 0 */
    int32_t *row;                      /* by scope the trace stores */
    int32_t *tmpl_row;                 /* by template member (t->rep_origin's index) */
    struct gmt_u64map member_row;      /* a member whose row is not its template's: index
                                        * -> row (its COMM record named another comm) */
    uint64_t t_from, t_to;             /* the rows' window (t_to 0: none) */
};
/* The tops made, every row -1. 0 or -ENOMEM; free with gmt_colls_map_free. */
int gmt_colls_map_init(struct gmt_colls_map *M, const struct gmt_trace *t);
void gmt_colls_map_free(struct gmt_colls_map *M);
int32_t gmt_colls_top_slow(const struct gmt_colls_map *M, size_t i);
int32_t gmt_colls_row_slow(const struct gmt_colls_map *M, size_t i);
/* Scope i's top scope, and its row (-1 none). */
static inline int32_t gmt_colls_top(const struct gmt_colls_map *M, size_t i)
{
    return M->t->n_reps ? gmt_colls_top_slow(M, i) : M->top_raw[i + 1];
}
static inline int32_t gmt_colls_row(const struct gmt_colls_map *M, size_t i)
{
    return M->t->n_reps ? gmt_colls_row_slow(M, i) : M->row[i];
}

/*
 * The collective rows, in two halves around the replay. Before it, gmt_colls_build makes
 * the rows from the scopes alone (the top scopes in begin order; their order in *order_p,
 * NULL when that is the scopes' own) and gives each top scope its row in M, where the
 * replay counts allocations (struct gmt_row_count). After it, gmt_colls_finish adds
 * what the replay found: the bytes each call tracked, and the allocation counts. Both
 * return 0 or -ENOMEM.
 */
int gmt_colls_build(const struct gmt_trace *t, struct gmt_report *rep, struct gmt_colls_map *M,
                    uint32_t **order_p, uint64_t t_from, uint64_t t_to);
int gmt_colls_finish(const struct gmt_trace *t, struct gmt_report *rep,
                     const struct gmt_colls_map *M, const uint32_t *order,
                     const struct gmt_row_count *rc);

/* A group's name is its members' op names, in the order they were first called, '+'
 * between them, within this many bytes. */
#define GMT_GROUP_MEMBERS 64

/* The name a call goes by in every output (the summary's rows, the exports): its op's
 * name, or for a group "Group(MEMBERS)", members as gmt_colls_group_labels gives them;
 * into buf for a group, else the op's name itself. */
const char *gmt_colls_call_name(const struct gmt_scope *s, const char *members, char *buf, size_t len);
/* Each group's members, found by the group's scope index: kept for the groups alone (a
 * repeated group's members are scopes too, and there are as many as calls). *labels is
 * freed with gmt_colls_group_labels_free. 0 or -ENOMEM. */
struct gmt_group_labels;
int gmt_colls_group_labels(const struct gmt_trace *t, struct gmt_group_labels **labels);
/* Group scope i's members; NULL for a scope that is no group with members. */
const char *gmt_colls_group_label(const struct gmt_group_labels *g, size_t i);
void gmt_colls_group_labels_free(struct gmt_group_labels *g);

/* rep->open: the outermost of the calls still open where the trace ends (open: their
 * scope indices, n_open of them, as the replay left them). 0 or -ENOMEM. */
int gmt_colls_open_at_end(const struct gmt_trace *t, struct gmt_report *rep, const int32_t *open,
                          size_t n_open, const struct gmt_colls_map *M);

/* 0 none (no record: NCCL's profiler interface was not in use), else the pick's total. */
uint64_t gmt_nccl_pick(const struct gmt_trace *t, const struct gmt_coll_row *row,
                       struct gmt_nccl_pick *out);

#endif
