/* trace_repeat.c: repeated groups (GROUP_REPEAT): each thread's latest groups, and the members a repeat stands for. */
#include "trace_repeat.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

void gmt_repeats_init(struct gmt_repeats *rs)
{
    memset(rs, 0, sizeof *rs);
    gmt_u64map_init(&rs->of_tid);
}

static void thread_free(struct gmt_rep_thread *rt)
{
    free(rt->cur.m);
    for (int i = 0; i < GMT_REPEAT_LIKE_WINDOW; i++)
        free(rt->last[i].m);
}

void gmt_repeats_free(struct gmt_repeats *rs)
{
    for (size_t i = 0; i < rs->n_th; i++)
        thread_free(&rs->th[i]);
    free(rs->th);
    gmt_u64map_free(&rs->of_tid);
    memset(rs, 0, sizeof *rs);
}

struct gmt_rep_thread *gmt_repeats_thread(struct gmt_repeats *rs, uint32_t tid)
{
    const uint64_t *v = gmt_u64map_get(&rs->of_tid, tid);
    if (v)
        return &rs->th[*v - 1];
    struct gmt_rep_thread *rt = gmt_array_push((void **)&rs->th, &rs->n_th, &rs->cap_th, sizeof *rt);
    if (!rt)
        return NULL;
    memset(rt, 0, sizeof *rt);
    bool ok = (rt->cur.m = calloc(GMT_REP_MAX_CLI, sizeof *rt->cur.m)) != NULL;
    for (int i = 0; i < GMT_REPEAT_LIKE_WINDOW; i++)
        ok = ok && (rt->last[i].m = calloc(GMT_REP_MAX_CLI, sizeof *rt->last[i].m)) != NULL;
    if (!ok || gmt_u64map_put(&rs->of_tid, tid, rs->n_th)) {
        thread_free(rt);
        rs->n_th--;
        return NULL;
    }
    return rt;
}

void gmt_rep_restart(struct gmt_rep_thread *rt)
{
    rt->cur.id = 0;
    for (int i = 0; i < GMT_REPEAT_LIKE_WINDOW; i++)
        rt->last[i].id = 0;
}

void gmt_rep_note(struct gmt_rep_thread *rt, const struct gmt_rec *r, uint64_t origin)
{
    struct gmt_rep_group *cur = &rt->cur;
    if (r->type == GMT_REC_SCOPE_BEGIN) {
        const struct gmt_rec_scope_begin *b = (const void *)r;
        if (r->aux == GMT_OP_Group && b->parent_id == 0) {
            cur->id = b->scope_id;
            cur->n = 0;
            cur->tmpl = 0;
        } else if (cur->id && b->parent_id == cur->id && cur->n >= 0) {
            if (cur->n == GMT_REP_MAX_CLI) {
                cur->n = -1;
            } else {
                struct gmt_rep_member *m = &cur->m[cur->n++];
                memcpy(&m->b, b, sizeof m->b);
                m->result = 0;
                m->origin = origin;
            }
        }
    } else {
        const struct gmt_rec_scope_end *en = (const void *)r;
        if (cur->id && en->scope_id == cur->id) {
            /* into the ring; its oldest slot's members array becomes the next cur's */
            struct gmt_rep_group *slot = &rt->last[rt->next++ % GMT_REPEAT_LIKE_WINDOW];
            struct gmt_rep_member *spare = slot->m;
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
    }
}

/* One of the thread's latest groups, `like`, when it had `count` members; else NULL. */
static struct gmt_rep_group *rep_like(struct gmt_rep_thread *rt, uint32_t like, uint32_t count)
{
    for (int i = 0; i < GMT_REPEAT_LIKE_WINDOW; i++)
        if (like && rt->last[i].id == like)
            return rt->last[i].n >= 1 && (uint32_t)rt->last[i].n == count ? &rt->last[i] : NULL;
    return NULL;
}

int gmt_rep_apply(struct gmt_rep_thread *rt, const struct gmt_rec_group_repeat *g,
                  const struct gmt_rep_member **m, struct gmt_rep_group **likep)
{
    struct gmt_rep_group *cur = &rt->cur;
    struct gmt_rep_group *like = rep_like(rt, g->like, g->count);
    if (!cur->id || g->scope_id != cur->id || cur->n != 0 || !like ||
        g->scope_id > UINT32_MAX - g->count)
        return 0;
    for (int i = 0; i < like->n; i++) {
        struct gmt_rep_member *x = &cur->m[i];
        x->b = like->m[i].b;
        x->b.h.size = sizeof x->b;
        x->b.dt = 0;
        x->b.scope_id = g->scope_id + 1 + (uint32_t)i;
        x->b.parent_id = g->scope_id;
        x->b.stack_id = 0;
        x->result = like->m[i].result;
        x->origin = like->m[i].origin;
    }
    cur->n = like->n;
    *m = cur->m;
    *likep = like;
    return like->n;
}
