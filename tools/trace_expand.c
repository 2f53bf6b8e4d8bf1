/* trace_expand.c: a trace's image with each GROUP_REPEAT replaced by the member records it stands for. */
#include "trace.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"
#include "u64map.h"
#include "util.h"

/* ---- repeated groups (GROUP_REPEAT, format 2.1) ----
 *
 * A GROUP_REPEAT stands for the member scopes of its thread's previous group
 * (docs/trace-format.md). Everything after loading works on records in place, so a trace
 * that has them is loaded from an image of the file with each one replaced by the
 * records it stands for: exactly what the library writes for those members when it
 * writes them one by one (GPUMEMTRACE_GROUP_REPEAT=0). One that cannot be expanded (its
 * group or the previous one is not in the file, or their members differ in number)
 * counts its members' records as dropped.
 */
struct rep_member {
    struct gmt_rec_scope_begin b;
    int32_t result;
};
#define GMT_REP_MAX_CLI 64             /* members kept per group; a larger one is not kept */
struct rep_group {
    uint32_t id;                       /* 0: none */
    int n;                             /* members; -1: more than GMT_REP_MAX_CLI */
    struct rep_member *m;
};
struct rep_thread {
    struct rep_group cur;              /* the group open with no scope around it (id 0: none) */
    struct rep_group last[GMT_REPEAT_LIKE_WINDOW]; /* the latest that ended, a ring */
    unsigned next;                     /* the ring's slot the next one takes */
};

struct expander {
    uint8_t *out;
    size_t n, cap;
    struct gmt_u64map of_tid;            /* tid -> index in th + 1 */
    struct rep_thread *th;
    size_t n_th, cap_th;
    uint64_t lost;                       /* records that could not be restored */
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

static void rep_thread_free(struct rep_thread *rt)
{
    free(rt->cur.m);
    for (int i = 0; i < GMT_REPEAT_LIKE_WINDOW; i++)
        free(rt->last[i].m);
}

static struct rep_thread *rep_thread_of(struct expander *x, uint32_t tid)
{
    const uint64_t *v = gmt_u64map_get(&x->of_tid, tid);
    if (v)
        return &x->th[*v - 1];
    struct rep_thread *rt = gmt_array_push((void **)&x->th, &x->n_th, &x->cap_th, sizeof *rt);
    if (!rt)
        return NULL;
    memset(rt, 0, sizeof *rt);
    bool ok = (rt->cur.m = calloc(GMT_REP_MAX_CLI, sizeof *rt->cur.m)) != NULL;
    for (int i = 0; i < GMT_REPEAT_LIKE_WINDOW; i++)
        ok = ok && (rt->last[i].m = calloc(GMT_REP_MAX_CLI, sizeof *rt->last[i].m)) != NULL;
    if (!ok || gmt_u64map_put(&x->of_tid, tid, x->n_th))
        return NULL;
    return rt;
}

/* The members of `like`, one of the thread's latest groups, into `cur` (group g), as
 * their records: NULL when it is not there or had another number of members. */
static const struct rep_group *rep_like(const struct rep_thread *rt, uint32_t like, uint32_t count)
{
    for (int i = 0; i < GMT_REPEAT_LIKE_WINDOW; i++)
        if (like && rt->last[i].id == like)
            return rt->last[i].n >= 1 && (uint32_t)rt->last[i].n == count ? &rt->last[i] : NULL;
    return NULL;
}

static int expand_one(struct expander *x, const struct gmt_event *e)
{
    const struct gmt_rec *r = e->rec;
    if (r->type != GMT_REC_THREAD && r->type != GMT_REC_SCOPE_BEGIN &&
        r->type != GMT_REC_SCOPE_END && r->type != GMT_REC_GROUP_REPEAT)
        return out_put(x, r, r->size);
    struct rep_thread *rt = rep_thread_of(x, e->tid);
    if (!rt)
        return -ENOMEM;
    struct rep_group *cur = &rt->cur;
    if (r->type == GMT_REC_THREAD) { /* the thread's records start afresh */
        cur->id = 0;
        for (int i = 0; i < GMT_REPEAT_LIKE_WINDOW; i++)
            rt->last[i].id = 0;
    } else if (r->type == GMT_REC_SCOPE_BEGIN) {
        const struct gmt_rec_scope_begin *b = (const void *)r;
        if (r->aux == GMT_OP_Group && b->parent_id == 0) {
            cur->id = b->scope_id;
            cur->n = 0;
        } else if (cur->id && b->parent_id == cur->id && cur->n >= 0) {
            if (cur->n == GMT_REP_MAX_CLI) {
                cur->n = -1;
            } else {
                struct rep_member *m = &cur->m[cur->n++];
                memcpy(&m->b, b, sizeof m->b);
                m->result = 0;
            }
        }
    } else if (r->type == GMT_REC_SCOPE_END) {
        const struct gmt_rec_scope_end *en = (const void *)r;
        if (cur->id && en->scope_id == cur->id) {
            /* into the ring; its oldest slot's members array becomes the next cur's */
            struct rep_group *slot = &rt->last[rt->next++ % GMT_REPEAT_LIKE_WINDOW];
            struct rep_member *spare = slot->m;
            *slot = *cur;
            cur->m = spare;
            cur->id = 0;
        } else if (cur->id) {
            for (int i = cur->n; i-- > 0;)
                if (cur->m[i].b.scope_id == en->scope_id) {
                    cur->m[i].result = en->result;
                    break;
                }
        }
    } else { /* GROUP_REPEAT: its members, as their group wrote them one by one */
        const struct gmt_rec_group_repeat *g = (const void *)r;
        const struct rep_group *like = rep_like(rt, g->like, g->count);
        if (!cur->id || g->scope_id != cur->id || cur->n != 0 || !like ||
            g->scope_id > UINT32_MAX - g->count) {
            x->lost += 2 * (uint64_t)g->count;
            return 0;
        }
        for (int i = 0; i < like->n; i++) {
            struct rep_member *m = &cur->m[i];
            m->b = like->m[i].b;
            m->b.h.size = sizeof m->b;
            m->b.dt = 0;
            m->b.scope_id = g->scope_id + 1 + (uint32_t)i;
            m->b.parent_id = g->scope_id;
            m->b.stack_id = 0;
            m->result = like->m[i].result;
            struct gmt_rec_scope_end en = {
                .h = {GMT_REC_SCOPE_END, m->b.h.aux, sizeof en},
                .scope_id = m->b.scope_id,
                .result = m->result,
            };
            if (out_put(x, &m->b, sizeof m->b) || out_put(x, &en, sizeof en))
                return -ENOMEM;
        }
        cur->n = like->n;
        return 0;
    }
    return out_put(x, r, r->size);
}

int gmt_trace_expand(const uint8_t *img, size_t len, const char *path, uint8_t **out,
                     size_t *out_len, uint64_t *records, uint64_t *cut_offset, uint64_t *lost,
                     char *err, size_t errlen)
{
    struct gmt_reader *r;
    if (gmt_reader_open_mem(&r, img, len, path, err, errlen))
        return -1;
    struct expander x = {0};
    gmt_u64map_init(&x.of_tid);
    int rc = out_put(&x, img, gmt_reader_offset(r)) ? -ENOMEM : 0;
    struct gmt_event ev;
    int n = 1;
    while (!rc && (n = gmt_reader_next(r, &ev, err, errlen)) > 0)
        rc = expand_one(&x, &ev);
    if (!rc && n < 0)
        rc = -1;
    uint64_t end = gmt_reader_offset(r);
    if (!rc && end < len && out_put(&x, img + end, len - end))
        rc = -ENOMEM;
    *records = gmt_reader_records(r);
    if (!gmt_reader_cut(r, cut_offset))
        *cut_offset = UINT64_MAX;
    *lost = x.lost;
    gmt_reader_close(r);
    for (size_t i = 0; i < x.n_th; i++)
        rep_thread_free(&x.th[i]);
    free(x.th);
    gmt_u64map_free(&x.of_tid);
    if (rc) {
        free(x.out);
        return rc;
    }
    *out = x.out;
    *out_len = x.n;
    return 0;
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
