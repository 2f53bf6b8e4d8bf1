/* collectives.c: the collective rows of a replay (one per communicator, op and size), and NCCL's choices for them. */
#include "collectives.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "idnames.h"
#include "nccl_types.h"
#include "reader.h"
#include "replay.h"
#include "util.h"

static bool in_window(const struct gmt_colls_map *M, uint64_t t_begin);
static int set_row(struct gmt_colls_map *M, size_t i, int32_t row);

static int cmp_scope_begin(const void *a, const void *b, void *ctx)
{
    const struct gmt_trace *t = ctx;
    const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    struct gmt_scope tx, ty;
    uint64_t bx = gmt_trace_scope(t, x, &tx)->t_begin, by = gmt_trace_scope(t, y, &ty)->t_begin;
    if (bx != by)
        return bx < by ? -1 : 1;
    return x < y ? -1 : x > y;
}

static uint64_t scope_bytes(const struct gmt_scope *s)
{
    uint64_t n = s->count * gmt_nccl_type_size(s->datatype);
    /* AllGather's count is per rank; the buffer a person thinks of is the input */
    return n;
}

/* Scopes are in file order, which is mostly begin order already: sorted only if not,
 * and only then through an array of indices (as large as the scopes' count, fresh
 * memory written for nothing when they are in order). *order_p is NULL when the scopes'
 * own order is begin order. 0 or -ENOMEM. */
static int begin_order(const struct gmt_trace *t, uint32_t **order_p)
{
    size_t n = t->n_scopes;
    *order_p = NULL;
    bool sorted = true;
    uint64_t last = 0;
    struct gmt_scope tmp;
    for (size_t i = 0; i < n && sorted; i++) {
        uint64_t b = gmt_trace_scope(t, i, &tmp)->t_begin;
        sorted = b >= last;
        last = b;
    }
    if (sorted)
        return 0;
    uint32_t *order = malloc(n * sizeof *order);
    if (!order)
        return -ENOMEM;
    for (size_t i = 0; i < n; i++)
        order[i] = (uint32_t)i;
    gmt_sort_r(order, n, sizeof *order, cmp_scope_begin, (void *)t);
    *order_p = order;
    return 0;
}

/* What a Group row shows, for each group: its members' op names, their bytes and the
 * first member's communicator. Only the groups have one (found by scope index): a
 * repeated group's members are scopes too, 64 for a group, and an array per scope would
 * grow with the calls rather than with the groups. */
struct group_sum {
    char label[GMT_GROUP_MEMBERS];
    uint64_t bytes, comm;
};
struct group_sums {
    struct gmt_u64map of;              /* group scope index -> index in sum + 1 */
    struct group_sum *sum;
    size_t n, cap;
};

static void group_sums_free(struct group_sums *g)
{
    gmt_u64map_free(&g->of);
    free(g->sum);
}

/* Group scope pi's sums, made when new; NULL out of memory. */
static struct group_sum *group_sum_of(struct group_sums *g, long pi)
{
    const uint64_t *v = gmt_u64map_get(&g->of, (uint64_t)pi);
    if (v)
        return &g->sum[*v - 1];
    struct group_sum *x = gmt_array_push((void **)&g->sum, &g->n, &g->cap, sizeof *x);
    if (!x || gmt_u64map_put_new(&g->of, (uint64_t)pi, g->n))
        return NULL;
    memset(x, 0, sizeof *x);
    return x;
}

/* The sums of group scope i, NULL when it has no member. */
static const struct group_sum *group_sum_at(const struct group_sums *g, size_t i)
{
    const uint64_t *v = gmt_u64map_get(&g->of, i);
    return v ? &g->sum[*v - 1] : NULL;
}

/* A member's op name into its group's label, once each, '+' between them. */
static void add_member(char *lab, const struct gmt_scope *s)
{
    const char *name = gmt_op_name(s->op);
    if (!strstr(lab, name)) {
        size_t len = strlen(lab);
        snprintf(lab + len, GMT_GROUP_MEMBERS - len, "%s%s", len ? "+" : "", name);
    }
}

/* The group labels from their members, in begin order. 0 or -ENOMEM. */
static int group_sums_of(const struct gmt_trace *t, const uint32_t *order, struct group_sums *g)
{
    size_t n = t->n_scopes;
    struct gmt_scope tmp, tp;
    for (size_t k = 0; k < n; k++) {
        const struct gmt_scope *s = gmt_trace_scope(t, order ? order[k] : k, &tmp);
        if (!s->parent_id)
            continue;
        long pi = gmt_trace_parent_index(t, order ? order[k] : k, s);
        if (pi < 0 || gmt_trace_scope(t, (size_t)pi, &tp)->op != GMT_OP_Group)
            continue;
        struct group_sum *x = group_sum_of(g, pi);
        if (!x)
            return -ENOMEM;
        add_member(x->label, s);
        x->bytes += scope_bytes(s);
        if (!x->comm)
            x->comm = s->comm;
    }
    return 0;
}

/* The row of (comm, op, bytes): the label of a row of another op than Group is that op's
 * name, so only a group's needs comparing. NULL when there is none yet. */
static struct gmt_coll_row *find_row(struct gmt_report *rep, uint64_t comm, uint16_t op,
                                     uint64_t bytes, const char *label)
{
    struct gmt_coll_row *row = NULL;
    for (size_t r = 0; r < rep->n_colls; r++)
        if (rep->colls[r].comm == comm && rep->colls[r].op == op &&
            rep->colls[r].bytes_per_call == bytes &&
            (op != GMT_OP_Group || !strcmp(rep->colls[r].label, label)))
            row = &rep->colls[r];
    return row;
}

/* One call's device-use delta (MEMINFO around it) and host time. */
struct call_times {
    bool has_dev;
    int64_t dev;
    uint64_t host;
};

/* A new row for scope s, its first call; NULL out of memory. */
static struct gmt_coll_row *new_row(const struct gmt_trace *t, struct gmt_report *rep,
                                    size_t *cap, const struct gmt_scope *s, uint64_t comm,
                                    const char *label, uint64_t bytes, struct call_times ct)
{
    if (gmt_grow((void **)&rep->colls, cap, rep->n_colls + 1, sizeof *rep->colls))
        return NULL;
    struct gmt_coll_row *row = &rep->colls[rep->n_colls++];
    memset(row, 0, sizeof *row);
    row->comm = comm;
    row->op = s->op;
    snprintf(row->label, sizeof row->label, "%s", label);
    row->bytes_per_call = bytes;
    const struct gmt_comm *c = gmt_trace_comm(t, comm);
    row->rank = c ? c->rank : -1;
    row->nranks = c ? c->nranks : -1;
    row->device = c ? c->device : s->device;
    row->first_has_dev = ct.has_dev;
    row->first_dev = ct.dev;
    row->host_ns_first = ct.host;
    row->first_time = s->t_begin;
    row->first_scope = s->id;
    row->first_stack = gmt_trace_scope_stack(t, s);
    return row;
}

/* One top scope's call into its row (made at its first call); 0 or -ENOMEM. */
static int add_call(const struct gmt_trace *t, struct gmt_report *rep, size_t *cap, size_t i,
                    const struct group_sums *g, struct gmt_colls_map *M)
{
    struct gmt_scope tmp;
    const struct gmt_scope *s = gmt_trace_scope(t, i, &tmp);
    /* the op's name itself, not a copy: there are as many scopes as calls */
    char group_label[64];
    const char *label = gmt_op_name(s->op);
    uint64_t bytes = scope_bytes(s), comm = s->comm;
    if (s->op == GMT_OP_Group) {
        const struct group_sum *x = group_sum_at(g, i);
        label = gmt_colls_call_name(s, x ? x->label : "", group_label, sizeof group_label);
        bytes = x ? x->bytes : 0;
        comm = x ? x->comm : 0;
    }
    struct gmt_coll_row *row = find_row(rep, comm, s->op, bytes, label);
    const struct gmt_scope_mem *m = gmt_trace_scope_mem(t, i);
    struct call_times ct = {.has_dev = m && m->has_mem_before && m->has_mem_after};
    ct.dev = ct.has_dev ? (int64_t)m->used_after - (int64_t)m->used_before : 0;
    /* (one that never ended has t_end 0: no time unless it began at 0, and then 0) */
    ct.host = s->t_end >= s->t_begin ? s->t_end - s->t_begin : 0;
    if (!row) {
        if (!(row = new_row(t, rep, cap, s, comm, label, bytes, ct)))
            return -ENOMEM;
    } else if (ct.has_dev) {
        if (!row->later_has_dev || ct.dev > row->later_dev_max)
            row->later_dev_max = ct.dev;
        row->later_has_dev = true;
    }
    if (set_row(M, i, (int32_t)(row - rep->colls)))
        return -ENOMEM;
    row->calls++;
    if (s->result != 0) /* (0 until it ended) */
        row->failed++;
    /* A timed call form stands for the calls it was sampled from (its weight): the
     * row's mean is then that of all of them, not leaning to the calls timed always (the
     * first ones, with their samples); an untimed call counts for none. */
    unsigned w = gmt_scope_weight(s);
    row->host_ns_total += ct.host * w;
    row->host_calls += w;
    return 0;
}

int gmt_colls_build(const struct gmt_trace *t, struct gmt_report *rep, struct gmt_colls_map *M,
                    uint32_t **order_p, uint64_t t_from, uint64_t t_to)
{
    uint32_t *order;
    struct group_sums g = {.sum = NULL};
    gmt_u64map_init(&g.of);
    size_t cap = 0;
    M->t_from = t_from;
    M->t_to = t_to;
    int r = begin_order(t, &order);
    if (!r)
        r = group_sums_of(t, order, &g);
    struct gmt_scope tmp;
    for (size_t k = 0; !r && k < t->n_scopes; k++) {
        size_t i = order ? order[k] : k;
        /* --from/--to: the calls that began in the window (their row stays -1) */
        const struct gmt_scope *sc = gmt_trace_scope(t, i, &tmp);
        if (gmt_colls_top(M, i) == (int32_t)i && in_window(M, sc->t_begin))
            r = add_call(t, rep, &cap, i, &g, M);
    }
    group_sums_free(&g);
    if (r) {
        free(order);
        return r;
    }
    *order_p = order;
    return 0;
}

const char *gmt_colls_call_name(const struct gmt_scope *s, const char *members, char *buf, size_t len)
{
    if (s->op != GMT_OP_Group)
        return gmt_op_name(s->op);
    /* cut to len when the members are many (the return value read: GCC then lets it) */
    int n = snprintf(buf, len, "Group(%s)", members ? members : "");
    return n >= 0 ? buf : "Group";
}

struct gmt_group_labels {
    struct group_sums g;
};

int gmt_colls_group_labels(const struct gmt_trace *t, struct gmt_group_labels **labels)
{
    uint32_t *order;
    *labels = NULL;
    struct gmt_group_labels *l = calloc(1, sizeof *l);
    if (!l)
        return -ENOMEM;
    gmt_u64map_init(&l->g.of);
    if (begin_order(t, &order)) {
        free(l);
        return -ENOMEM;
    }
    int r = group_sums_of(t, order, &l->g);
    free(order);
    if (r) {
        gmt_colls_group_labels_free(l);
        return r;
    }
    *labels = l;
    return 0;
}

const char *gmt_colls_group_label(const struct gmt_group_labels *l, size_t i)
{
    const struct group_sum *x = l ? group_sum_at(&l->g, i) : NULL;
    return x ? x->label : NULL;
}

void gmt_colls_group_labels_free(struct gmt_group_labels *l)
{
    if (!l)
        return;
    group_sums_free(&l->g);
    free(l);
}

/* The replay's share of the rows: each call's tracked bytes (the first call's, and the
 * later ones' largest and total), in the order gmt_colls_build made the rows, and the
 * allocations counted per row. The allocation bytes and other-thread counts of every
 * Group row go to the trace's first Group row, whatever its label or communicator (the
 * rows of other ops keep their own); the JSON and CSV outputs show them so. */
int gmt_colls_finish(const struct gmt_trace *t, struct gmt_report *rep,
                     const struct gmt_colls_map *M, const uint32_t *order,
                     const struct gmt_row_count *rc)
{
    bool *seen = calloc(rep->n_colls ? rep->n_colls : 1, sizeof *seen);
    if (!seen)
        return -ENOMEM;
    for (size_t k = 0; k < t->n_scopes; k++) {
        size_t i = order ? order[k] : k;
        int32_t ri = gmt_colls_row(M, i);
        if (gmt_colls_top(M, i) != (int32_t)i || ri < 0)
            continue;
        struct gmt_coll_row *row = &rep->colls[ri];
        int64_t tracked = gmt_scope_tracked(t, rep, i);
        if (!seen[ri]) {
            seen[ri] = true;
            row->first_tracked = tracked;
        } else {
            if (tracked > row->later_tracked_max)
                row->later_tracked_max = tracked;
            row->later_tracked_total = gmt_sat_add(row->later_tracked_total, tracked);
        }
    }
    free(seen);
    struct gmt_coll_row *first_group = NULL;
    for (size_t r = 0; r < rep->n_colls; r++) {
        struct gmt_coll_row *row = &rep->colls[r];
        row->allocs += rc[r].n;
        if (row->op == GMT_OP_Group && !first_group)
            first_group = row;
        struct gmt_coll_row *to = row->op == GMT_OP_Group ? first_group : row;
        to->alloc_bytes += rc[r].bytes;
        to->allocs_other_thread += rc[r].other;
    }
    for (size_t r = 0; r < rep->n_colls; r++)
        gmt_nccl_pick(t, &rep->colls[r], &rep->colls[r].pick);
    return 0;
}

static bool in_window(const struct gmt_colls_map *M, uint64_t t_begin)
{
    return t_begin >= M->t_from && (!M->t_to || t_begin <= M->t_to);
}

/* An NCCL call that NCCL itself makes inside another (ncclBcast calling ncclBroadcast
 * through its exported name) is part of the outer one: events and rows go to the
 * outermost call below any group. */
/* The outermost call below any group that scope i belongs to. */
static int32_t top_walk(const struct gmt_trace *t, size_t i)
{
    size_t j = i;
    struct gmt_scope tmp, tp;
    for (int hops = 0; hops < 64; hops++) {
        const struct gmt_scope *s = gmt_trace_scope(t, j, &tmp);
        long p = gmt_trace_parent_index(t, j, s);
        if (p < 0 || (size_t)p == j || gmt_trace_scope(t, (size_t)p, &tp)->op == GMT_OP_Group)
            break;
        j = (size_t)p;
    }
    return (int32_t)j;
}

int gmt_colls_map_init(struct gmt_colls_map *M, const struct gmt_trace *t)
{
    memset(M, 0, sizeof *M);
    M->t = t;
    gmt_u64map_init(&M->member_row);
    size_t n = t->n_stored, nt = t->n_rep_origin;
    M->top_raw = malloc((n + 1) * sizeof *M->top_raw);
    M->row = malloc((n ? n : 1) * sizeof *M->row);
    M->tmpl_row = malloc((nt ? nt : 1) * sizeof *M->tmpl_row);
    if (!M->top_raw || !M->row || !M->tmpl_row) {
        gmt_colls_map_free(M);
        return -ENOMEM;
    }
    memset(M->row, 0xff, (n ? n : 1) * sizeof *M->row);
    memset(M->tmpl_row, 0xff, (nt ? nt : 1) * sizeof *M->tmpl_row);
    gmt_hint_huge(M->row, n * sizeof *M->row);
    gmt_hint_huge(M->top_raw, (n + 1) * sizeof *M->top_raw);
    M->top_raw[0] = -1;
    for (size_t k = 0; k < n; k++)
        M->top_raw[k + 1] = top_walk(t, gmt_scope_index_of_stored(t, k));
    return 0;
}

void gmt_colls_map_free(struct gmt_colls_map *M)
{
    free(M->top_raw);
    free(M->row);
    free(M->tmpl_row);
    gmt_u64map_free(&M->member_row);
    memset(M, 0, sizeof *M);
}

int32_t gmt_colls_top_slow(const struct gmt_colls_map *M, size_t i)
{
    uint32_t j;
    long k = gmt_scope_slot(M->t, i, &j);
    if (k >= 0)
        return M->top_raw[k + 1];
    /* a member whose parent is its group, as it is but in an odd file: itself (top_walk
     * finds the same, in more steps) */
    long g = (long)M->t->reps[-1 - k].group;
    struct gmt_scope tmp;
    bool in_group = g >= 0 && gmt_trace_scope(M->t, (size_t)g, &tmp)->op == GMT_OP_Group;
    return in_group ? (int32_t)i : top_walk(M->t, i);
}

int32_t gmt_colls_row_slow(const struct gmt_colls_map *M, size_t i)
{
    uint32_t j;
    long k = gmt_scope_slot(M->t, i, &j);
    if (k >= 0)
        return M->row[k];
    /* a member's: its template member's row, when it is a top scope begun in the window
     * (rows are only given so), unless its own differs (its COMM record named another
     * communicator) */
    const struct gmt_rep_note *n = &M->t->reps[-1 - k];
    if (gmt_colls_top(M, i) != (int32_t)i || !in_window(M, n->time))
        return -1;
    if (M->member_row.used) {
        const uint64_t *v = gmt_u64map_get(&M->member_row, i);
        if (v)
            return (int32_t)*v;
    }
    return M->tmpl_row[n->origin_at + j];
}

/* 0 or -ENOMEM */
static int set_row(struct gmt_colls_map *M, size_t i, int32_t row)
{
    uint32_t j;
    long k = gmt_scope_slot(M->t, i, &j);
    if (k >= 0) {
        M->row[k] = row;
        return 0;
    }
    int32_t *tr = &M->tmpl_row[M->t->reps[-1 - k].origin_at + j];
    if (*tr < 0)
        *tr = row;
    else if (*tr != row)
        return gmt_u64map_put(&M->member_row, i, (uint64_t)row);
    return 0;
}

static int cmp_open(const void *a, const void *b)
{
    const struct gmt_open_row *x = a, *y = b;
    return x->since < y->since ? -1 : x->since > y->since;
}

/* The calls still open where the trace ends (hang forensics), outermost ones: an inner
 * call NCCL makes inside another is part of it, as everywhere in the replay. */
int gmt_colls_open_at_end(const struct gmt_trace *t, struct gmt_report *rep, const int32_t *open,
                          size_t n_open, const struct gmt_colls_map *M)
{
    if (!n_open)
        return 0;
    if (!(rep->open = calloc(n_open, sizeof *rep->open)))
        return -ENOMEM;
    for (size_t i = 0; i < n_open; i++) {
        int32_t si = open[i];
        if (gmt_colls_top(M, (size_t)si) != si)
            continue;
        struct gmt_scope tmp;
        const struct gmt_scope *s = gmt_trace_scope(t, (size_t)si, &tmp);
        struct gmt_open_row *o = &rep->open[rep->n_open++];
        o->scope = s->id;
        o->op = s->op;
        o->comm = s->comm;
        o->since = s->t_begin;
        o->tid = s->tid;
        o->device = s->device;
        o->tracked = gmt_scope_tracked(t, rep, (size_t)si);
        /* its SCOPE_BEGIN, where the loader found it, holds the caller's stack */
        if (s->offset <= t->image_len && t->image_len - s->offset >= sizeof(struct gmt_rec_scope_begin)) {
            struct gmt_rec_scope_begin b;
            memcpy(&b, t->image + s->offset, sizeof b);
            if (b.h.type == GMT_REC_SCOPE_BEGIN && b.scope_id == s->id)
                o->stack = b.stack_id;
        }
        int32_t row = gmt_colls_row(M, (size_t)si);
        snprintf(o->label, sizeof o->label, "%s", row >= 0 ? rep->colls[row].label : gmt_op_name(s->op));
        /* the row's count is every call's; a call's own is what this scope added */
        o->allocs = row >= 0 && rep->colls[row].calls == 1 ? rep->colls[row].allocs : 0;
    }
    if (rep->n_open > 1)
        gmt_sort(rep->open, rep->n_open, sizeof *rep->open, cmp_open);
    return 0;
}

/* ---- NCCL's choices per collective row (NCCL_COLL_INFO, gmt_trace.choices) ---- */

uint64_t gmt_nccl_pick(const struct gmt_trace *t, const struct gmt_coll_row *row,
                       struct gmt_nccl_pick *out)
{
    struct gmt_nccl_pick seen[8];
    size_t n = 0;
    uint64_t total = 0;
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < t->n_choices; i++) {
        const struct gmt_nccl_choice *c = &t->choices[i];
        if (c->kind != GMT_NCCL_INFO_COLL || c->comm != row->comm || c->op != row->op ||
            c->count * gmt_nccl_type_size(c->datatype) != row->bytes_per_call)
            continue;
        total++;
        size_t k = 0;
        while (k < n && !(seen[k].algo == c->algo && seen[k].proto == c->proto &&
                          seen[k].nchannels == c->nchannels && seen[k].nwarps == c->nwarps))
            k++;
        if (k == n && n < sizeof seen / sizeof seen[0])
            seen[n++] = (struct gmt_nccl_pick){c->algo, c->proto, c->nchannels, c->nwarps, 0, 0, 0};
        if (k < n)
            seen[k].calls++;
    }
    for (size_t k = 0; k < n; k++)
        if (seen[k].calls > out->calls)
            *out = seen[k];
    out->total = total;
    out->choices = (uint32_t)n;
    return total;
}
