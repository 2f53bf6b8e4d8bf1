/* trace_expand.c: a trace's image with GROUP_REPEAT, SCOPE_END's call form and SCOPE_OPEN replaced by the records they stand for. */
#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "trace_repeat.h"
#include "u64map.h"
#include "util.h"

/* ---- repeated groups (GROUP_REPEAT, format 2.1): trace_repeat.h ----
 *
 * Everything after loading works on records in place; the loader restores a repeat's
 * members itself (trace_load.c), and the records it cannot take as they are (call forms,
 * SCOPE_OPEN) are replaced here, in an image of the file. For `dump --expand` the
 * repeats are replaced here too (expand_repeats).
 */
struct call_thread {
    bool has_call;                     /* a call form was restored since the latest THREAD */
    struct gmt_rec_scope_begin call;   /* the begin restored from the latest */
};

/* A SCOPE_OPEN's call: restored at the end when the file has no begin of it. */
struct open_call {
    struct gmt_rec_scope_open o;
    bool found;                        /* a SCOPE_BEGIN of it is in the file */
};

struct expander {
    const struct gmt_reader *r;          /* the file's */
    bool expand_repeats;                 /* GROUP_REPEAT replaced too, else kept */
    uint8_t *out;
    size_t n, cap;
    struct gmt_repeats reps;
    struct gmt_u64map of_tid;            /* tid -> index in th + 1 */
    struct call_thread *th;
    size_t n_th, cap_th;
    uint64_t lost;                       /* records that could not be restored */
    struct open_call *open;              /* the SCOPE_OPENs, one per (tid, scope_id) */
    size_t n_open, cap_open;
    struct gmt_u64map open_of;           /* tid << 32 | scope_id -> index in open + 1 */
    bool have_end;                       /* the END record: where the restored begins go */
    size_t end_at;                       /* its offset in out */
    uint32_t end_tid;                    /* its thread */
};

static int out_put(struct expander *x, const void *p, size_t len)
{
    if (x->cap - x->n < len) {
        size_t cap = x->cap ? x->cap : 1 << 16;
        while (cap - x->n < len)
            cap *= 2;
        uint8_t *o = realloc(x->out, cap);
        if (!o)
            return -ENOMEM;
        x->out = o;
        x->cap = cap;
    }
    memcpy(x->out + x->n, p, len);
    x->n += len;
    return 0;
}

static struct call_thread *call_thread_of(struct expander *x, uint32_t tid)
{
    const uint64_t *v = gmt_u64map_get(&x->of_tid, tid);
    if (v)
        return &x->th[*v - 1];
    struct call_thread *ct = gmt_array_push((void **)&x->th, &x->n_th, &x->cap_th, sizeof *ct);
    if (!ct)
        return NULL;
    memset(ct, 0, sizeof *ct);
    if (gmt_u64map_put(&x->of_tid, tid, x->n_th))
        return NULL;
    return ct;
}

/* ---- SCOPE_END's call form (format 2.5) ----
 *
 * A SCOPE_END of at least 32 bytes also stands for its scope's SCOPE_BEGIN: both are
 * restored where it lies, the begin's fields that it lacks from the thread's previous
 * call form. One that cannot be (a field absent with no call form before it since the
 * thread's THREAD record, a duration beyond its dt, a size its `has` does not give)
 * counts its two records as dropped (a TIME in its place keeps the thread's clock where
 * its dt moved it). Returns 1 when restored into b and en, else 0.
 */
static int call_restore(struct call_thread *rt, const struct gmt_rec_scope_call *c,
                        struct gmt_rec_scope_begin *b, struct gmt_rec_scope_end *en)
{
    uint32_t has = c->has;
    if (has > GMT_CALL_HAS_ALL ||
        c->e.h.size != GMT_SCOPE_CALL_MIN + 8u * (uint32_t)__builtin_popcount(has) ||
        c->e.duration > c->e.dt || ((has & GMT_CALL_HAS_ALL) != GMT_CALL_HAS_ALL && !rt->has_call))
        return 0;
    *b = rt->call; /* the absent fields: the previous call form's */
    const uint64_t *f = c->field;
    if (has & GMT_CALL_HAS_COMM)
        b->comm = *f++;
    if (has & GMT_CALL_HAS_COUNT)
        b->count = *f++;
    if (has & GMT_CALL_HAS_STREAM)
        b->stream = *f++;
    if (has & GMT_CALL_HAS_TYPE_PEER) {
        memcpy(&b->datatype, f, sizeof b->datatype);
        memcpy(&b->peer, (const uint8_t *)f + 4, sizeof b->peer);
    }
    b->h = (struct gmt_rec){GMT_REC_SCOPE_BEGIN, c->e.h.aux, sizeof *b};
    b->dt = c->e.dt - c->e.duration;
    b->scope_id = c->e.scope_id;
    b->parent_id = 0;
    b->stack_id = 0;
    /* The image's END keeps the call form's host-time weight where a plain END's
     * duration (0) lies: the loader reads it for the scope (gmt_scope.host_weight). */
    *en = (struct gmt_rec_scope_end){
        .h = {GMT_REC_SCOPE_END, c->e.h.aux, sizeof *en},
        .dt = c->e.duration,
        .scope_id = c->e.scope_id,
        .result = c->e.result,
        .duration = c->e.duration ? c->weight : 0,
    };
    rt->call = *b;
    rt->has_call = true;
    return 1;
}

/* ---- SCOPE_OPEN (format 2.5) ----
 *
 * A call still in progress when another thread wrote it. Dropped from the image; its
 * begin is restored only when the file has no SCOPE_BEGIN of it on its thread (noted at
 * the end, from the image made), as a CHUNK of its thread, a TIME of its begin and the
 * SCOPE_BEGIN with dt 0: before END (then a CHUNK of END's thread again), or after the
 * last whole record when the file has no END.
 */
static int open_note(struct expander *x, const struct gmt_rec_scope_open *o)
{
    uint64_t key = (uint64_t)o->tid << 32 | o->scope_id;
    if (gmt_u64map_get(&x->open_of, key))
        return 0; /* named before: one restore */
    struct open_call *c = gmt_array_push((void **)&x->open, &x->n_open, &x->cap_open, sizeof *c);
    if (!c || gmt_u64map_put_new(&x->open_of, key, x->n_open))
        return -ENOMEM;
    c->o = *o;
    c->found = false;
    return 0;
}

/* Which SCOPE_OPENs' calls have a SCOPE_BEGIN in out[from, to), records all whole. */
static void open_find_begins(struct expander *x, size_t from, size_t to)
{
    uint32_t tid = 0;
    for (size_t off = from; off + sizeof(struct gmt_rec) <= to;) {
        const struct gmt_rec *h = (const void *)(x->out + off);
        if (h->size < sizeof *h || h->size > to - off)
            break; /* cannot be: each was read whole */
        if (h->type == GMT_REC_CHUNK) {
            tid = ((const struct gmt_rec_chunk *)(const void *)h)->tid;
        } else if (h->type == GMT_REC_SCOPE_BEGIN) {
            const struct gmt_rec_scope_begin *b = (const void *)h;
            const uint64_t *v = gmt_u64map_get(&x->open_of, (uint64_t)tid << 32 | b->scope_id);
            if (v)
                x->open[*v - 1].found = true;
        }
        off += h->size;
    }
}

/* The restored begins of the calls left open, put in at `at` of out. */
static int open_restore(struct expander *x, size_t at, bool end_chunk, uint32_t end_tid)
{
    size_t group = sizeof(struct gmt_rec_chunk) + sizeof(struct gmt_rec_time) +
                   sizeof(struct gmt_rec_scope_begin);
    size_t n = 0;
    for (size_t i = 0; i < x->n_open; i++)
        n += !x->open[i].found;
    if (!n)
        return 0;
    size_t len = n * group + (end_chunk ? sizeof(struct gmt_rec_chunk) : 0);
    size_t tail = x->n - at;
    uint8_t pad[8] = {0};
    /* room at the end, then the records after `at` moved past the new ones */
    for (size_t k = 0; k < len; k += sizeof pad)
        if (out_put(x, pad, sizeof pad))
            return -ENOMEM;
    memmove(x->out + at + len, x->out + at, tail);
    uint8_t *p = x->out + at;
    for (size_t i = 0; i < x->n_open; i++) {
        const struct gmt_rec_scope_open *o = &x->open[i].o;
        if (x->open[i].found)
            continue;
        struct gmt_rec_chunk c = {.h = {GMT_REC_CHUNK, 0, sizeof c}, .tid = o->tid};
        struct gmt_rec_time t = {.h = {GMT_REC_TIME, 0, sizeof t}, .time_ns = o->time_ns};
        struct gmt_rec_scope_begin b = {
            .h = {GMT_REC_SCOPE_BEGIN, o->h.aux, sizeof b},
            .scope_id = o->scope_id,
            .comm = o->comm,
            .count = o->count,
            .stream = o->stream,
            .datatype = o->datatype,
            .peer = o->peer,
        };
        memcpy(p, &c, sizeof c);
        memcpy(p + sizeof c, &t, sizeof t);
        memcpy(p + sizeof c + sizeof t, &b, sizeof b);
        p += group;
    }
    if (end_chunk) {
        struct gmt_rec_chunk c = {.h = {GMT_REC_CHUNK, 0, sizeof c}, .tid = end_tid};
        memcpy(p, &c, sizeof c);
    }
    return 0;
}

/* GROUP_REPEAT: its members, as their group wrote them one by one. */
static int expand_repeat(struct expander *x, struct gmt_rep_thread *rt,
                         const struct gmt_rec_group_repeat *g)
{
    const struct gmt_rep_member *m;
    struct gmt_rep_group *like;
    int n = gmt_rep_apply(rt, g, &m, &like);
    if (!n) {
        x->lost += 2 * (uint64_t)g->count;
        return 0;
    }
    for (int i = 0; i < n; i++) {
        struct gmt_rec_scope_end en = {
            .h = {GMT_REC_SCOPE_END, m[i].b.h.aux, sizeof en},
            .scope_id = m[i].b.scope_id,
            .result = m[i].result,
        };
        if (out_put(x, &m[i].b, sizeof m[i].b) || out_put(x, &en, sizeof en))
            return -ENOMEM;
    }
    return 0;
}

static int expand_one(struct expander *x, const struct gmt_event *e)
{
    const struct gmt_rec *r = e->rec;
    if (r->type == GMT_REC_SCOPE_OPEN)
        return open_note(x, (const void *)r);
    if (r->type == GMT_REC_END && !x->have_end) {
        x->have_end = true;
        x->end_at = x->n;
        x->end_tid = e->tid;
    }
    if (r->type != GMT_REC_THREAD && r->type != GMT_REC_SCOPE_BEGIN &&
        r->type != GMT_REC_SCOPE_END &&
        (r->type != GMT_REC_GROUP_REPEAT || !x->expand_repeats))
        return out_put(x, r, r->size);
    struct call_thread *ct = call_thread_of(x, e->tid);
    struct gmt_rep_thread *rt = x->expand_repeats ? gmt_repeats_thread(&x->reps, e->tid) : NULL;
    if (!ct || (x->expand_repeats && !rt))
        return -ENOMEM;
    if (r->type == GMT_REC_THREAD) { /* the thread's records start afresh */
        if (rt)
            gmt_rep_restart(rt);
        ct->has_call = false;
    } else if (r->type == GMT_REC_SCOPE_END && r->size >= GMT_SCOPE_CALL_MIN) {
        struct gmt_rec_scope_begin b;
        struct gmt_rec_scope_end en;
        if (!call_restore(ct, (const void *)r, &b, &en)) {
            /* dropped; its dt moved the thread's clock, which a TIME keeps where it was */
            x->lost += 2;
            uint64_t now;
            if (!gmt_reader_thread_clock(x->r, &now))
                return 0;
            struct gmt_rec_time t = {.h = {GMT_REC_TIME, 0, sizeof t}, .time_ns = now};
            return out_put(x, &t, sizeof t);
        }
        if (rt) {
            gmt_rep_note(rt, &b.h, x->n);
            gmt_rep_note(rt, &en.h, x->n);
        }
        return out_put(x, &b, sizeof b) || out_put(x, &en, sizeof en) ? -ENOMEM : 0;
    } else if (r->type == GMT_REC_SCOPE_BEGIN || r->type == GMT_REC_SCOPE_END) {
        if (rt)
            gmt_rep_note(rt, r, x->n);
    } else {
        return expand_repeat(x, rt, (const void *)r);
    }
    return out_put(x, r, r->size);
}

static int expand(const uint8_t *img, size_t len, const char *path, bool repeats,
                  uint8_t **out, size_t *out_len, uint64_t *records, uint64_t *cut_offset,
                  uint64_t *lost, char *err, size_t errlen)
{
    struct gmt_reader *r;
    if (gmt_reader_open_mem(&r, img, len, path, err, errlen))
        return -1;
    struct expander x = {.r = r, .expand_repeats = repeats};
    gmt_repeats_init(&x.reps);
    gmt_u64map_init(&x.of_tid);
    gmt_u64map_init(&x.open_of);
    size_t first = gmt_reader_offset(r);
    int rc = out_put(&x, img, first) ? -ENOMEM : 0;
    struct gmt_event ev;
    int n = 1;
    while (!rc && (n = gmt_reader_next(r, &ev, err, errlen)) > 0)
        rc = expand_one(&x, &ev);
    if (!rc && n < 0)
        rc = -1;
    if (!rc && x.n_open) {
        /* the calls left open: where the records stop (a cut tail comes after them) */
        open_find_begins(&x, first, x.n);
        rc = open_restore(&x, x.have_end ? x.end_at : x.n, x.have_end, x.end_tid);
    }
    uint64_t end = gmt_reader_offset(r);
    if (!rc && end < len && out_put(&x, img + end, len - end))
        rc = -ENOMEM;
    *records = gmt_reader_records(r);
    if (!gmt_reader_cut(r, cut_offset))
        *cut_offset = UINT64_MAX;
    *lost = x.lost;
    gmt_reader_close(r);
    gmt_repeats_free(&x.reps);
    free(x.th);
    gmt_u64map_free(&x.of_tid);
    free(x.open);
    gmt_u64map_free(&x.open_of);
    if (rc) {
        free(x.out);
        return rc;
    }
    *out = x.out;
    *out_len = x.n;
    return 0;
}

int gmt_trace_expand(const uint8_t *img, size_t len, const char *path, uint8_t **out,
                     size_t *out_len, uint64_t *records, uint64_t *cut_offset, uint64_t *lost,
                     char *err, size_t errlen)
{
    return expand(img, len, path, true, out, out_len, records, cut_offset, lost, err, errlen);
}

int gmt_trace_expand_calls(const uint8_t *img, size_t len, const char *path, uint8_t **out,
                           size_t *out_len, uint64_t *records, uint64_t *cut_offset,
                           uint64_t *lost, char *err, size_t errlen)
{
    return expand(img, len, path, false, out, out_len, records, cut_offset, lost, err, errlen);
}

int gmt_trace_open_expanded(struct gmt_reader **r, const char *path, uint8_t **buf,
                            struct gmt_file_end *fe, char *err, size_t errlen)
{
    *buf = NULL;
    *fe = (struct gmt_file_end){0};
    struct gmt_reader *f;
    if (gmt_reader_open(&f, path, err, errlen) < 0)
        return -1;
    size_t len = 0, out_len = 0;
    const uint8_t *img = gmt_reader_image(f, &len);
    int rc = -1;
    if (!img)
        snprintf(err, errlen, "%s: cannot map the file", path);
    else if ((rc = gmt_trace_expand(img, len, path, buf, &out_len, &fe->records,
                                    &fe->cut_offset, &fe->lost, err, errlen)) == -ENOMEM)
        snprintf(err, errlen, "%s: out of memory", path);
    fe->expanded = true;
    fe->end = len;
    gmt_reader_close(f);
    if (rc)
        return -1;
    return gmt_reader_open_mem(r, *buf, out_len, path, err, errlen);
}
