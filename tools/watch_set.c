/* watch_set.c: the traces one watch follows, listed again at each refresh, and the view across them: each rank's figures, the calls that hang, the ranks that stand out. */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "category.h"
#include "phases.h"
#include "util.h"
#include "watch_view.h"

#define HOLD_NS 1000000000ull  /* at least: 10 of the writer's default flush intervals */
#define BATCH 65536            /* records read between two releases of a trace's queue */
#define MAX_WORKERS 8          /* threads that refresh traces at once */
#define TRACES_PER_WORKER 16   /* fewer traces than this a thread: not worth one more */

int gmt_watch_set_init(struct gmt_watch_set *s, char *const *roots, size_t n, const char *step,
                       const char *const *cat_rules, size_t n_rules, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    s->ctx.hold_ns = HOLD_NS;
    s->ctx.batch = BATCH;
    const char *re = step ? step : GMT_STEP_REGEX_DEFAULT;
    int rc = regcomp(&s->ctx.step_re, re, REG_EXTENDED | REG_ICASE | REG_NOSUB);
    if (rc) {
        char m[256];
        regerror(rc, &s->ctx.step_re, m, sizeof m);
        snprintf(err, errlen, "--step '%s' is not a regular expression: %s", re, m);
        return -1;
    }
    s->ctx.has_step_re = true;
    if (!(s->ctx.cats = gmt_cat_new()))
        goto nomem;
    for (size_t i = 0; i < n_rules; i++)
        if (gmt_cat_add_rule(s->ctx.cats, cat_rules[i])) {
            snprintf(err, errlen, "bad --category '%s' (want NAME=GLOB)", cat_rules[i]);
            gmt_watch_set_free(s);
            return -1;
        }
    if (!(s->roots = calloc(n ? n : 1, sizeof *s->roots)))
        goto nomem;
    for (; s->n_roots < n; s->n_roots++)
        if (!(s->roots[s->n_roots] = strdup(roots[s->n_roots])))
            goto nomem;
    return 0;
nomem:
    snprintf(err, errlen, "out of memory");
    gmt_watch_set_free(s);
    return -1;
}

void gmt_watch_set_free(struct gmt_watch_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        gmt_watch_trace_free(s->t[i]);
    free(s->t);
    for (size_t i = 0; i < s->n_roots; i++)
        free(s->roots[i]);
    free(s->roots);
    if (s->ctx.cats)
        gmt_cat_free(s->ctx.cats);
    if (s->ctx.has_step_re)
        regfree(&s->ctx.step_re);
    memset(s, 0, sizeof *s);
}

static int cmp_str(const void *x, const void *y)
{
    return strcmp(*(char *const *)x, *(char *const *)y);
}

/* Every trace the roots name now, sorted, each once; *out and its paths malloc'd. A root
 * that cannot be listed (gone) names none. 0 or -ENOMEM. */
static int list_roots(const struct gmt_watch_set *s, char ***out, size_t *n)
{
    struct gmt_vec v = GMT_VEC_INIT(char *);
    int rc = 0;
    for (size_t i = 0; i < s->n_roots && !rc; i++) {
        struct stat st;
        if (stat(s->roots[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            char **list;
            size_t k;
            if (gmt_list_traces(s->roots[i], &list, &k) == -ENOMEM)
                rc = -ENOMEM;
            for (size_t j = 0; !rc && j < k; j++) {
                char **slot = gmt_vec_push(&v);
                if (!slot)
                    rc = -ENOMEM;
                else
                    *slot = list[j];
            }
            if (rc)
                gmt_free_paths(list, k);
            else
                free(list);
            continue;
        }
        char **slot = gmt_vec_push(&v);
        if (!slot || !(*slot = strdup(s->roots[i])))
            rc = -ENOMEM;
    }
    char **p = v.data;
    if (rc) {
        gmt_free_paths(p, v.len);
        return rc;
    }
    gmt_sort(p, v.len, sizeof *p, cmp_str);
    size_t k = 0;
    for (size_t i = 0; i < v.len; i++) {
        if (k && !strcmp(p[k - 1], p[i]))
            free(p[i]);
        else
            p[k++] = p[i];
    }
    *out = p;
    *n = k;
    return 0;
}

/* The traces of the new listing (sorted, as s->t is): those followed already kept as
 * they are, new ones made, the rest freed. 0 or -ENOMEM (then nothing changed). */
static int rejoin(struct gmt_watch_set *s, char **paths, size_t n)
{
    struct gmt_watch_trace **t = calloc(n ? n : 1, sizeof *t);
    bool *made = calloc(n ? n : 1, sizeof *made), *kept = calloc(s->n ? s->n : 1, sizeof *kept);
    int rc = t && made && kept ? 0 : -ENOMEM;
    for (size_t i = 0, k = 0; !rc && i < n; i++) {
        int c = 1;
        while (k < s->n && (c = strcmp(s->t[k]->path, paths[i])) < 0)
            k++;
        if (c == 0) {
            t[i] = s->t[k];
            kept[k++] = true;
        } else if ((t[i] = gmt_watch_trace_new(paths[i]))) {
            made[i] = true;
        } else {
            rc = -ENOMEM;
        }
    }
    for (size_t i = 0; rc && t && made && i < n; i++)
        if (made[i])
            gmt_watch_trace_free(t[i]);
    for (size_t i = 0; !rc && i < s->n; i++)
        if (!kept[i])
            gmt_watch_trace_free(s->t[i]);
    if (!rc) {
        free(s->t);
        s->t = t;
        s->n = n;
    } else {
        free(t);
    }
    free(made);
    free(kept);
    return rc;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The traces are independent (each its own file, reader and figures; the categories and
 * the step regex are only read), so a refresh of many spreads them over the cores: the
 * first refresh of a long job's thousand traces reads everything they hold. */
struct work {
    struct gmt_watch_set *s;
    bool final;
    uint64_t real;
    _Atomic size_t next;
    _Atomic int rc;
};

static void *refresh_some(void *p)
{
    struct work *k = p;
    struct gmt_watch_scratch S;
    gmt_watch_scratch_init(&S);
    size_t i;
    while ((i = atomic_fetch_add(&k->next, 1)) < k->s->n && !atomic_load(&k->rc)) {
        struct gmt_watch_trace *w = k->s->t[i];
        int rc = gmt_watch_trace_refresh(&k->s->ctx, w, k->final, &S);
        if (rc)
            atomic_store(&k->rc, rc);
        if (w->grew)
            w->grew_realtime = k->real;
    }
    gmt_watch_scratch_free(&S);
    return NULL;
}

static size_t workers_for(size_t n)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t k = cpus > 1 ? (size_t)cpus : 1;
    if (k > MAX_WORKERS)
        k = MAX_WORKERS;
    return n / TRACES_PER_WORKER < k ? n / TRACES_PER_WORKER + 1 : k;
}

int gmt_watch_set_refresh(struct gmt_watch_set *s, bool final)
{
    uint64_t t0 = clock_ns(CLOCK_MONOTONIC), before = 0, after = 0;
    char **paths;
    size_t n;
    int rc = list_roots(s, &paths, &n);
    if (rc)
        return rc;
    rc = rejoin(s, paths, n);
    gmt_free_paths(paths, n);
    if (rc)
        return rc;
    for (size_t i = 0; i < s->n; i++)
        before += s->t[i]->bytes_read;
    struct work k = {.s = s, .final = final, .real = clock_ns(CLOCK_REALTIME)};
    pthread_t tid[MAX_WORKERS];
    size_t started = 0, want = workers_for(s->n);
    while (started + 1 < want && pthread_create(&tid[started], NULL, refresh_some, &k) == 0)
        started++;
    refresh_some(&k); /* this thread too; and alone when no other could start */
    for (size_t i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    for (size_t i = 0; i < s->n; i++)
        after += s->t[i]->bytes_read;
    s->refreshes++;
    s->refresh_ns = clock_ns(CLOCK_MONOTONIC) - t0;
    s->bytes = after - before;
    s->bytes_total += s->bytes;
    return atomic_load(&k.rc);
}
