/* jobs.c: the one driver of every command that reads several traces: each analysed once, here or in worker processes, a failure reported and skipped. */
#include "jobs.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

/*
 * A worker analyses the traces i = w, w + K, ... and writes one message per trace into
 * its pipe: a header, then what trace() wrote (or the message of its failure). The
 * parent takes messages from every pipe as they come (poll), so no worker blocks on a
 * full pipe, and hands them on in the order of the files: a message that comes early
 * waits, and as each worker goes through the files in order, at most about one per
 * worker does. Below MIN_PARALLEL traces, or on one core, the parent does it all.
 */

#define MIN_PARALLEL 16
#define MAX_WORKERS 32

struct hdr {
    uint32_t index;
    uint32_t ok;               /* 0: the payload is the failure's message, NUL-ended */
    uint64_t len;              /* bytes of payload */
};

/* One trace: its message (header and payload) into *buf, malloc'd. 0, or -ENOMEM. */
static int produce(const struct gmt_jobs *J, size_t i, char **buf, size_t *len)
{
    struct gmt_analysis a;
    char err[512];
    struct hdr h = {.index = (uint32_t)i, .ok = 1};
    *buf = NULL;
    *len = 0;
    FILE *m = open_memstream(buf, len);
    if (!m)
        return -ENOMEM;
    fwrite(&h, sizeof h, 1, m);
    if (gmt_analyze(&a, J->files[i], J->ro, err, sizeof err)) {
        h.ok = 0;
    } else {
        if (J->trace(J->ctx, i, &a, m, err, sizeof err))
            h.ok = 0;
        gmt_analysis_free(&a);
    }
    if (!h.ok) {
        /* what trace() wrote before it failed is dropped */
        fflush(m);
        fseek(m, (long)sizeof h, SEEK_SET);
        fwrite(err, strlen(err) + 1, 1, m);
        fflush(m);
        *len = sizeof h + strlen(err) + 1;
    }
    if (ferror(m) | fclose(m)) {
        free(*buf);
        *buf = NULL;
        return -ENOMEM;
    }
    h.len = *len - sizeof h;
    memcpy(*buf, &h, sizeof h);
    return 0;
}

struct run {
    const struct gmt_jobs *J;
    struct gmt_jobs_result *res;
    char **pending;            /* [n]: a whole message come before its turn */
    size_t next;               /* the next trace to hand on */
};

static void skip(struct run *R, size_t i, const char *msg)
{
    if (R->J->skipped)
        R->J->skipped(R->J->ctx, i, msg);
    else
        gmt_err("gpumemtrace: %s", msg);
    if (R->J->unread)
        R->J->unread[i] = true;
    R->res->skipped++;
}

/* Message p of trace i, whole (checked by the caller), handed on. 0, or -ENOMEM. */
static int deliver(struct run *R, size_t i, const char *p)
{
    struct hdr h;
    memcpy(&h, p, sizeof h);
    if (!h.ok) {
        skip(R, i, p + sizeof h);
        return 0;
    }
    R->res->done++;
    return R->J->take(R->J->ctx, i, p + sizeof h, (size_t)h.len);
}

/* Takes a whole message of the one with index i: now if its turn has come, else later.
 * p is malloc'd and becomes the run's. 0, or -ENOMEM. */
static int arrive(struct run *R, size_t i, char *p)
{
    R->pending[i] = p;
    int rc = 0;
    while (!rc && R->next < R->J->n && R->pending[R->next]) {
        rc = deliver(R, R->next, R->pending[R->next]);
        free(R->pending[R->next]);
        R->pending[R->next++] = NULL;
    }
    return rc;
}

static int run_serial(const struct gmt_jobs *J, struct gmt_jobs_result *res)
{
    struct run R = {J, res, NULL, 0};
    for (size_t i = 0; i < J->n; i++) {
        if (J->take) {
            char *buf;
            size_t len;
            int rc = produce(J, i, &buf, &len);
            rc = rc ? rc : deliver(&R, i, buf);
            free(buf);
            if (rc)
                return rc;
            continue;
        }
        struct gmt_analysis a;
        char err[512];
        if (gmt_analyze(&a, J->files[i], J->ro, err, sizeof err)) {
            skip(&R, i, err);
            continue;
        }
        int r = J->trace(J->ctx, i, &a, NULL, err, sizeof err);
        if (r || !J->keep)
            gmt_analysis_free(&a);
        if (r == -1)
            skip(&R, i, err);
        else if (r)
            return r;
        else
            res->done++;
    }
    return 0;
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

static void __attribute__((noreturn)) worker(const struct gmt_jobs *J, size_t w, size_t k, int fd)
{
    signal(SIGPIPE, SIG_DFL);
    for (size_t i = w; i < J->n; i += k) {
        char *buf;
        size_t len;
        if (produce(J, i, &buf, &len) || !write_all(fd, buf, len))
            _exit(1);
        free(buf);
    }
    _exit(0);
}

struct inbuf {
    char *p;
    size_t len, cap;
};

struct pipes {
    struct pollfd pfd[MAX_WORKERS];
    pid_t pid[MAX_WORKERS];
    struct inbuf in[MAX_WORKERS];
    size_t k;
};

/* Starts k workers; false (none left running) when one could not be started. */
static bool start(const struct gmt_jobs *J, struct pipes *P, size_t k)
{
    fflush(NULL);
    for (P->k = 0; P->k < k; P->k++) {
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
            for (size_t o = 0; o < P->k; o++)
                close(P->pfd[o].fd);
            worker(J, P->k, k, fd[1]);
        }
        close(fd[1]);
        P->pfd[P->k] = (struct pollfd){.fd = fd[0], .events = POLLIN};
        P->pid[P->k] = p;
    }
    if (P->k == k)
        return true;
    for (size_t w = 0; w < P->k; w++) {
        close(P->pfd[w].fd);
        kill(P->pid[w], SIGKILL);
        waitpid(P->pid[w], NULL, 0);
    }
    return false;
}

/* What worker w sent: read once, and every whole message in it handed on. 0; -ENOMEM;
 * -EIO: what it sent is malformed or cut (it died). *open drops when its pipe ends. */
static int drain(struct run *R, struct pipes *P, size_t w, size_t *open)
{
    struct inbuf *b = &P->in[w];
    if (b->cap - b->len < 65536) {
        size_t nc = b->cap ? b->cap * 2 : 1 << 17;
        char *p = realloc(b->p, nc);
        if (!p)
            return -ENOMEM;
        b->p = p;
        b->cap = nc;
    }
    ssize_t r = read(P->pfd[w].fd, b->p + b->len, b->cap - b->len);
    if (r < 0 && errno == EINTR)
        return 0;
    bool eof = r <= 0;
    if (eof) {
        close(P->pfd[w].fd);
        P->pfd[w].fd = -1;
        (*open)--;
    } else {
        b->len += (size_t)r;
    }
    size_t at = 0;
    int rc = 0;
    while (!rc && b->len - at >= sizeof(struct hdr)) {
        struct hdr h;
        memcpy(&h, b->p + at, sizeof h);
        if (h.index >= R->J->n || R->pending[h.index] || h.index < R->next)
            return -EIO;
        if (b->len - at - sizeof h < h.len)
            break;
        size_t whole = sizeof h + (size_t)h.len;
        char *m = malloc(whole + 1);
        if (!m)
            return -ENOMEM;
        memcpy(m, b->p + at, whole);
        m[whole] = 0; /* a failure's message ends for sure */
        at += whole;
        rc = arrive(R, h.index, m);
    }
    memmove(b->p, b->p + at, b->len - at);
    b->len -= at;
    if (!rc && eof && b->len)
        rc = -EIO;
    return rc;
}

/* Collects every worker's messages, then ends them: 0, -ENOMEM or -EIO. */
static int collect(struct run *R, struct pipes *P)
{
    size_t open = P->k;
    struct timespec t0, t = {0, 0};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int rc = 0;
    while (open && !rc) {
        if (poll(P->pfd, P->k, -1) < 0) {
            if (errno != EINTR)
                rc = -EIO;
            continue;
        }
        for (size_t w = 0; w < P->k && !rc; w++)
            if (P->pfd[w].fd >= 0 && (P->pfd[w].revents & (POLLIN | POLLHUP | POLLERR)))
                rc = drain(R, P, w, &open);
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (R->J->progress && t.tv_sec - t0.tv_sec >= 1)
            fprintf(stderr, "\rgpumemtrace: read %zu of %zu traces", R->next, R->J->n);
    }
    if (R->J->progress && t.tv_sec - t0.tv_sec >= 1)
        fprintf(stderr, "\r%*s\r", 60, "");
    for (size_t w = 0; w < P->k; w++) {
        if (P->pfd[w].fd >= 0)
            close(P->pfd[w].fd);
        free(P->in[w].p);
        int st = 0;
        if (rc)
            kill(P->pid[w], SIGKILL);
        while (waitpid(P->pid[w], &st, 0) < 0 && errno == EINTR)
            ;
        if (!rc && (!WIFEXITED(st) || WEXITSTATUS(st)))
            rc = -EIO;
    }
    if (!rc && R->next != R->J->n)
        rc = -EIO;
    return rc;
}

int gmt_jobs_run(const struct gmt_jobs *J, struct gmt_jobs_result *res)
{
    memset(res, 0, sizeof *res);
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    size_t k = cores > 1 ? (size_t)cores : 1;
    if (k > MAX_WORKERS)
        k = MAX_WORKERS;
    if (k > J->n / 4)
        k = J->n / 4;
    struct pipes *P = NULL;
    if (!J->take || J->n < MIN_PARALLEL || k < 2 || !(P = calloc(1, sizeof *P)) || !start(J, P, k)) {
        free(P);
        return run_serial(J, res);
    }
    res->workers = k;
    struct run R = {J, res, calloc(J->n, sizeof(char *)), 0};
    int rc = R.pending ? collect(&R, P) : -ENOMEM;
    if (!R.pending) {
        /* the workers were started: end them before doing it all here */
        for (size_t w = 0; w < P->k; w++) {
            close(P->pfd[w].fd);
            kill(P->pid[w], SIGKILL);
            waitpid(P->pid[w], NULL, 0);
        }
    }
    for (size_t i = 0; R.pending && i < J->n; i++)
        free(R.pending[i]);
    free(R.pending);
    free(P);
    return rc;
}
