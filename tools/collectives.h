/* collectives.h: the replay's collective rows, made from the scopes before it and finished with what it found. */
#ifndef GMT_COLLECTIVES_H
#define GMT_COLLECTIVES_H

#include <stddef.h>
#include <stdint.h>

#include "replay.h"

/* A collective row's device allocations attributed (n: only those up to --to, its
 * allocation count), their bytes, how many were made on another thread than their
 * call's (bytes and other: all of them, for the byte and thread columns). Counted by
 * row, not by scope: the rows are made before the replay (gmt_colls_build) and a scope only
 * keeps its row's index. A trace has a handful of rows and up to a million scopes, each
 * of whose counters would be 24 bytes of fresh memory for the kernel to zero. */
struct gmt_row_count {
    uint64_t n, bytes, other;
};

/*
 * The collective rows, in two halves around the replay. Before it, gmt_colls_build makes
 * the rows from the scopes alone (the top scopes in begin order; their order in *order_p,
 * NULL when that is the scopes' own) and gives each top scope its row in row_of, where
 * the replay counts allocations (struct gmt_row_count). After it, gmt_colls_finish adds
 * what the replay found: the bytes each call tracked, and the allocation counts. Both
 * return 0 or -ENOMEM.
 */
int gmt_colls_build(const struct gmt_trace *t, struct gmt_report *rep, const int32_t *top,
                    int32_t *row_of, uint32_t **order_p, uint64_t t_from, uint64_t t_to);
int gmt_colls_finish(const struct gmt_trace *t, struct gmt_report *rep, const int32_t *top,
                     const int32_t *row_of, const uint32_t *order, const struct gmt_row_count *rc);

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

/* Per scope index: the outermost call it belongs to below any group (an NCCL call NCCL
 * makes inside another is part of it). One more entry in front, -1: the replay's view by
 * the trace's dense scope ids reads it for id 0. Returns the array past that entry (free
 * it at [-1]), NULL out of memory. */
int32_t *gmt_colls_top_scopes(const struct gmt_trace *t);

/* rep->open: the outermost of the calls still open where the trace ends (open: their
 * scope indices, n_open of them, as the replay left them). 0 or -ENOMEM. */
int gmt_colls_open_at_end(const struct gmt_trace *t, struct gmt_report *rep, const int32_t *open,
                          size_t n_open, const int32_t *top, const int32_t *row_of);

#endif
