/* job_read.c: the first pass of a summary of many traces: each trace read for its figures only, in worker processes on the machine's cores, into one job. */
#include "job_read.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "metrics.h"
#include "util.h"

/*
 * A worker reads the traces i = k, k + K, ... and writes one message per trace into its
 * pipe: a header, then the strings and collectives of struct gmt_job_rank. The parent
 * takes messages from every pipe as they come (poll), so no worker blocks on a full
 * pipe, and keeps only the figures: memory is a few traces (one per worker) plus the
 * job. Below MIN_PARALLEL traces, or on one core, the parent reads them itself.
 */

#define MIN_PARALLEL 16
#define MAX_WORKERS 32

enum { MSG_RANK = 1, MSG_IDLE = 2, MSG_UNREAD = 3 };

struct msg {
    uint32_t kind, index;
    int32_t rank, world_size;
    uint64_t peak, nccl, untracked, fails, n_dev;
    uint8_t has_used, complete;
    int32_t version[4];
    uint32_t n_env, n_colls;
    uint32_t len_path, len_host, len_job, len_err; /* 0: NULL */
};

struct wbuf {
    char *p;
    size_t len, cap;
    bool bad;
};

static void put(struct wbuf *b, const void *d, size_t n)
{
    if (b->bad)
        return;
    if (b->len + n > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 4096;
        while (nc < b->len + n)
            nc *= 2;
        char *p = realloc(b->p, nc);
        if (!p) {
            b->bad = true;
            return;
        }
        b->p = p;
        b->cap = nc;
    }
    memcpy(b->p + b->len, d, n);
    b->len += n;
}

static void put_str(struct wbuf *b, const char *s)
{
    uint32_t n = s ? (uint32_t)strlen(s) + 1 : 0;
    put(b, &n, sizeof n);
    if (n)
        put(b, s, n);
}

/* One trace, read and serialised into b. */
static void read_one(struct wbuf *b, const char *path, uint32_t index, const struct gmt_report_opts *ro)
{
    struct msg m = {.index = index};
    struct gmt_analysis a;
    char err[512];
    if (gmt_analyze(&a, path, ro, err, sizeof err)) {
        m.kind = MSG_UNREAD;
        put(b, &m, sizeof m);
        put_str(b, err);
        return;
    }
    if (!gmt_analysis_used_gpu(&a)) {
        m.kind = MSG_IDLE;
        put(b, &m, sizeof m);
        gmt_analysis_free(&a);
        return;
    }
    struct gmt_job one;
    gmt_job_init(&one);
    if (gmt_job_add(&one, &a)) {
        m.kind = MSG_UNREAD;
        put(b, &m, sizeof m);
        put_str(b, "out of memory");
        gmt_analysis_free(&a);
        return;
    }
    gmt_analysis_free(&a);
    const struct gmt_job_rank *r = &one.r[0];
    m.kind = MSG_RANK;
    m.rank = r->rank;
    m.world_size = r->world_size;
    m.peak = r->peak;
    m.nccl = r->nccl;
    m.untracked = r->untracked;
    m.fails = r->fails;
    m.n_dev = r->n_dev;
    m.has_used = r->has_used;
    m.complete = r->complete;
    memcpy(m.version, r->version, sizeof m.version);
    m.n_env = (uint32_t)r->n_env;
    m.n_colls = (uint32_t)r->n_colls;
    put(b, &m, sizeof m);
    put_str(b, r->path);
    put_str(b, r->host);
    put_str(b, r->job_id);
    for (size_t e = 0; e < r->n_env; e++)
        put_str(b, r->env[e]);
    put(b, r->colls, r->n_colls * sizeof *r->colls);
    gmt_job_free(&one);
}

static bool write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return false;
        p += w;
        n -= (size_t)w;
    }
    return true;
}

/* ---- the parent's side: messages back into the job ---- */

struct rbuf {
    char *p;
    size_t len, cap;
    bool eof;
};

/* A string at *at of b (bounds-checked); NULL for an absent one. -1: malformed. */
static int get_str(const struct rbuf *b, size_t *at, char **out)
{
    uint32_t n;
    *out = NULL;
    if (*at + sizeof n > b->len)
        return -1;
    memcpy(&n, b->p + *at, sizeof n);
    *at += sizeof n;
    if (!n)
        return 0;
    if (*at + n > b->len || b->p[*at + n - 1])
        return -1;
    *out = strdup(b->p + *at);
    *at += n;
    return *out ? 0 : -1;
}

/* One whole message at the start of b: its length, 0 when incomplete. Decodes it into
 * the job (or the unread/idle marks); -1 on a malformed message or out of memory. */
static long take(struct rbuf *b, struct gmt_job *j, struct gmt_job_read_result *res, size_t n)
{
    struct msg m;
    if (b->len < sizeof m)
        return 0;
    memcpy(&m, b->p, sizeof m);
    if (m.index >= n)
        return -1;
    size_t at = sizeof m;
    char *s;
    if (m.kind == MSG_IDLE) {
        res->idle++;
        return (long)at;
    }
    if (m.kind == MSG_UNREAD) {
        int r = get_str(b, &at, &s);
        if (r)
            return b->eof ? -1 : 0;
        res->unread[m.index] = true;
        res->err[m.index] = s;
        return (long)at;
    }
    if (m.kind != MSG_RANK)
        return -1;
    /* is it all here? walk it first */
    size_t probe = at;
    for (uint32_t k = 0; k < 3 + m.n_env; k++) {
        uint32_t l;
        if (probe + sizeof l > b->len)
            return 0;
        memcpy(&l, b->p + probe, sizeof l);
        probe += sizeof l + l;
    }
    if (probe + (size_t)m.n_colls * sizeof(struct gmt_job_coll) > b->len)
        return 0;
    if (j->n == j->cap) {
        size_t nc = j->cap ? j->cap * 2 : 64;
        void *p = realloc(j->r, nc * sizeof *j->r);
        if (!p)
            return -1;
        j->r = p;
        j->cap = nc;
    }
    struct gmt_job_rank *r = &j->r[j->n];
    memset(r, 0, sizeof *r);
    r->rank = m.rank;
    r->world_size = m.world_size;
    r->peak = m.peak;
    r->nccl = m.nccl;
    r->untracked = m.untracked;
    r->fails = m.fails;
    r->n_dev = (size_t)m.n_dev;
    r->has_used = m.has_used;
    r->complete = m.complete;
    memcpy(r->version, m.version, sizeof r->version);
    r->env = calloc(m.n_env ? m.n_env : 1, sizeof *r->env);
    r->colls = malloc((m.n_colls ? m.n_colls : 1) * sizeof *r->colls);
    bool bad = !r->env || !r->colls || get_str(b, &at, &r->path) || !r->path ||
               get_str(b, &at, &r->host) || get_str(b, &at, &r->job_id);
    for (uint32_t e = 0; !bad && e < m.n_env; e++) {
        bad = get_str(b, &at, &r->env[e]) || !r->env[e];
        r->n_env += !bad;
    }
    if (!bad) {
        memcpy(r->colls, b->p + at, (size_t)m.n_colls * sizeof *r->colls);
        r->n_colls = m.n_colls;
        at += (size_t)m.n_colls * sizeof *r->colls;
    }
    j->n++; /* freed with the job, whole or not */
    return bad ? -1 : (long)at;
}

static void read_serial(struct gmt_job *j, char **files, size_t n, const struct gmt_report_opts *ro,
                        struct gmt_job_read_result *res, bool *oom)
{
    for (size_t i = 0; i < n && !*oom; i++) {
        struct wbuf w = {0};
        read_one(&w, files[i], (uint32_t)i, ro);
        struct rbuf b = {w.p, w.len, w.cap, true};
        if (w.bad || take(&b, j, res, n) < 0)
            *oom = true;
        free(w.p);
    }
}

int gmt_job_read(struct gmt_job *j, char **files, size_t n, const struct gmt_report_opts *ro,
                 struct gmt_job_read_result *res)
{
    memset(res, 0, sizeof *res);
    res->unread = calloc(n ? n : 1, sizeof *res->unread);
    res->err = calloc(n ? n : 1, sizeof *res->err);
    if (!res->unread || !res->err)
        return -ENOMEM;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t k = cores > 1 ? (size_t)cores : 1;
    if (k > MAX_WORKERS)
        k = MAX_WORKERS;
    if (k > n / 4)
        k = n / 4;
    bool oom = false;
    if (n < MIN_PARALLEL || k < 2) {
        read_serial(j, files, n, ro, res, &oom);
        return oom ? -ENOMEM : 0;
    }
    res->workers = k;
    struct pollfd pfd[MAX_WORKERS];
    struct rbuf rb[MAX_WORKERS];
    pid_t pid[MAX_WORKERS];
    memset(rb, 0, sizeof rb);
    fflush(NULL);
    size_t started = 0;
    for (size_t w = 0; w < k; w++) {
        int fd[2];
        if (pipe(fd))
            break;
        pid_t p = fork();
        if (p < 0) {
            close(fd[0]);
            close(fd[1]);
            break;
        }
        if (p == 0) {
            close(fd[0]);
            for (size_t o = 0; o < started; o++)
                close(pfd[o].fd);
            signal(SIGPIPE, SIG_DFL);
            for (size_t i = w; i < n; i += k) {
                struct wbuf b = {0};
                read_one(&b, files[i], (uint32_t)i, ro);
                if (b.bad || !write_all(fd[1], b.p, b.len))
                    _exit(1);
                free(b.p);
            }
            _exit(0);
        }
        close(fd[1]);
        pfd[started] = (struct pollfd){.fd = fd[0], .events = POLLIN};
        pid[started++] = p;
    }
    if (started < k) {
        /* could not start them all: read every trace here, the workers' help unused */
        for (size_t w = 0; w < started; w++) {
            close(pfd[w].fd);
            kill(pid[w], SIGKILL);
            waitpid(pid[w], NULL, 0);
        }
        res->workers = 0;
        read_serial(j, files, n, ro, res, &oom);
        return oom ? -ENOMEM : 0;
    }
    size_t open = k, got = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    bool failed = false;
    while (open && !oom && !failed) {
        if (poll(pfd, k, -1) < 0) {
            if (errno == EINTR)
                continue;
            failed = true;
            break;
        }
        for (size_t w = 0; w < k; w++) {
            if (pfd[w].fd < 0 || !(pfd[w].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            struct rbuf *b = &rb[w];
            if (b->cap - b->len < 65536) {
                size_t nc = b->cap ? b->cap * 2 : 1 << 17;
                char *p = realloc(b->p, nc);
                if (!p) {
                    oom = true;
                    break;
                }
                b->p = p;
                b->cap = nc;
            }
            ssize_t r = read(pfd[w].fd, b->p + b->len, b->cap - b->len);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                b->eof = true;
                close(pfd[w].fd);
                pfd[w].fd = -1;
                open--;
            } else {
                b->len += (size_t)r;
            }
            long used = 0;
            while (b->len && (used = take(b, j, res, n)) > 0) {
                memmove(b->p, b->p + used, b->len - (size_t)used);
                b->len -= (size_t)used;
                got++;
            }
            if (b->len && (used < 0 || b->eof))
                failed = true; /* a worker's message is malformed or cut: it died */
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (res->progress && t.tv_sec - t0.tv_sec >= 1)
            fprintf(stderr, "\rgpumemtrace: read %zu of %zu traces", got, n);
    }
    if (res->progress && t.tv_sec - t0.tv_sec >= 1)
        fprintf(stderr, "\r%*s\r", 60, "");
    for (size_t w = 0; w < k; w++) {
        if (pfd[w].fd >= 0)
            close(pfd[w].fd);
        free(rb[w].p);
        int st = 0;
        if (failed || oom)
            kill(pid[w], SIGKILL);
        while (waitpid(pid[w], &st, 0) < 0 && errno == EINTR)
            ;
        if (!WIFEXITED(st) || WEXITSTATUS(st))
            failed = true;
    }
    if (oom)
        return -ENOMEM;
    if (failed || got != n)
        return -EIO;
    return 0;
}

void gmt_job_read_result_free(struct gmt_job_read_result *res, size_t n)
{
    for (size_t i = 0; res->err && i < n; i++)
        free(res->err[i]);
    free(res->err);
    free(res->unread);
    memset(res, 0, sizeof *res);
}
