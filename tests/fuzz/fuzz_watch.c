/* fuzz_watch.c: libFuzzer target: `watch`'s follow, fold and apply on any bytes, read as a trace that grows (appended in pieces cut anywhere, now and then cut short and written again), its view rendered as text, JSON (which must parse) and Prometheus metrics. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "watch_view.h"

#define REAL_NS 1767225600000000000ull /* the view's clock: fixed, so a run repeats */

/* The cuts come from the bytes themselves (a hash of them seeds a generator), so that a
 * trace of the seed corpus is an input as it is, and each mutation cuts it elsewhere. */
static uint64_t next_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* What the figures must say whatever the bytes were: a device's tracked bytes are the
 * sum of its categories' and never above its peak; the live set holds what it counts;
 * nothing is left queued once everything was applied; the kept lists stay in bounds. */
static void check_trace(const struct gmt_watch_trace *w, bool applied)
{
    for (size_t i = 0; i < w->n_dev; i++) {
        const struct gmt_watch_dev *d = &w->dev[i];
        uint64_t sum = 0;
        for (size_t c = 0; c < GMT_MAX_CATS; c++)
            sum += d->by_cat[c];
        if (sum != d->tracked || d->peak < d->tracked) {
            fprintf(stderr, "device %d: tracked %llu, by category %llu, peak %llu\n", d->device,
                    (unsigned long long)d->tracked, (unsigned long long)sum,
                    (unsigned long long)d->peak);
            abort();
        }
    }
    size_t live = 0;
    for (size_t i = 0; i < w->live.cap; i++)
        live += w->live.s[i].refs != 0;
    if (live != w->live.n || w->live.n * 2 > w->live.cap ||
        (applied && !w->error && w->n_q) || w->n_open > GMT_WATCH_OPEN_MAX ||
        w->n_dev > GMT_MAX_DEVS || w->n_cats > GMT_MAX_CATS) {
        fprintf(stderr, "live %zu of %zu (cap %zu), queued %zu, open %zu, devices %zu\n", live,
                w->live.n, w->live.cap, w->n_q, w->n_open, w->n_dev);
        abort();
    }
}

static void render(const struct gmt_watch_set *s)
{
    struct gmt_watch_view v;
    if (gmt_watch_view_make(s, 1000000000ull, REAL_NS, &v))
        return;
    struct fuzz_out o;
    gmt_watch_render_text(fuzz_out_open(&o), &v, 8);
    fuzz_out_close(&o, 0);
    gmt_watch_render_json(fuzz_out_open(&o), &v);
    fuzz_out_close(&o, 1);
    gmt_watch_render_prom(fuzz_out_open(&o), &v);
    fuzz_out_close(&o, 0);
    gmt_watch_view_free(&v);
}

static void refresh(struct gmt_watch_set *s, bool final)
{
    if (gmt_watch_set_refresh(s, final))
        return; /* out of memory */
    for (size_t i = 0; i < s->n; i++)
        check_trace(s->t[i], final);
}

/* The bytes written to fd (a memfd) from `from` to `to`; false when a write fails. */
static bool put(int fd, const uint8_t *data, size_t from, size_t to)
{
    while (from < to) {
        ssize_t k = pwrite(fd, data + from, to - from, (off_t)from);
        if (k <= 0)
            return false;
        from += (size_t)k;
    }
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t seed = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < size; i++)
        seed = (seed ^ data[i]) * 0x100000001b3ull;
    char path[64];
    /* an empty file, that grows */
    int fd = fuzz_file(data, 0, path, sizeof path);
    if (fd < 0)
        return 0;
    struct gmt_watch_set s;
    char err[256];
    char *roots[] = {path};
    if (gmt_watch_set_init(&s, roots, 1, NULL, NULL, 0, err, sizeof err)) {
        close(fd);
        return 0;
    }
    /* 1 to 16 pieces, each followed by a refresh, some by a second one that finds no
     * growth (what was held is applied then); one time in eight the file is cut back
     * and written again from there (a restarted rank, or a shrunk file) */
    size_t pieces = 1 + next_rand(&seed) % 16, at = 0;
    for (size_t p = 0; p < pieces && at < size; p++) {
        size_t to = p + 1 == pieces ? size : at + next_rand(&seed) % (size - at + 1);
        if (!put(fd, data, at, to))
            break;
        at = to;
        refresh(&s, false);
        uint64_t r = next_rand(&seed);
        if (r % 3 == 0)
            refresh(&s, false);
        if (r % 8 == 1 && at > 0) {
            at = next_rand(&seed) % at;
            if (ftruncate(fd, (off_t)at))
                break;
            refresh(&s, false);
        }
        if (r % 4 == 2)
            render(&s);
    }
    if (at < size && put(fd, data, at, size))
        at = size;
    refresh(&s, true); /* --once: everything applied */
    render(&s);
    gmt_watch_set_free(&s);
    close(fd);
    return 0;
}
