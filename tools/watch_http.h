/* watch_http.h: the small HTTP/1.0 server of `watch --prometheus`: one thread, poll(2), GET /metrics only. */
#ifndef GMT_WATCH_HTTP_H
#define GMT_WATCH_HTTP_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#define GMT_HTTP_CLIENTS 32        /* connections served at once; more wait in the backlog */
#define GMT_HTTP_REQUEST_MAX 8192  /* bytes of a request's line and headers */
#define GMT_HTTP_TIMEOUT_NS 10000000000ull /* a client that sends no whole request in this */

struct gmt_http_client {
    int fd;                    /* -1: a free slot */
    char req[GMT_HTTP_REQUEST_MAX];
    size_t n;
    char *resp;                /* the response being written, malloc'd */
    size_t len, off;
    uint64_t deadline;         /* CLOCK_MONOTONIC ns */
};

struct gmt_http {
    int lfd;
    char *body;                /* what GET /metrics answers now, malloc'd */
    size_t body_len;
    struct gmt_http_client c[GMT_HTTP_CLIENTS];
    uint64_t served;           /* responses written whole */
};

/* Parses "HOST:PORT" ("[::1]:9400" for IPv6; PORT 0: one the kernel picks) and listens
 * there, only there. 0, or -1 with a one-line message in err. *bound gets what it listens
 * on, "127.0.0.1:9400". */
int gmt_http_listen(struct gmt_http *h, const char *hostport, char *bound, size_t blen,
                    char *err, size_t errlen);
/* What GET /metrics answers from now on; takes body (malloc'd). */
void gmt_http_set_body(struct gmt_http *h, char *body, size_t len);
/* The descriptors to poll, into p (room for 1 + GMT_HTTP_CLIENTS); how many. */
size_t gmt_http_pollfds(const struct gmt_http *h, struct pollfd *p);
/* Serves what poll said of those descriptors, and drops clients past their deadline. */
void gmt_http_serve(struct gmt_http *h, const struct pollfd *p, size_t n, uint64_t now_ns);
void gmt_http_close(struct gmt_http *h);

#endif
