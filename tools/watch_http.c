/* watch_http.c: the small HTTP/1.0 server of `watch --prometheus`: one thread, poll(2), non-blocking sockets, GET /metrics only, 404 otherwise. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util.h"
#include "watch_http.h"

/* "HOST:PORT" or "[HOST]:PORT" into host and port: 0, or -1 with why in err. */
static int split(const char *hp, char *host, size_t hl, long *port, char *err, size_t errlen)
{
    const char *colon;
    size_t n;
    const char *h = hp;
    if (hp[0] == '[') {
        const char *close = strchr(hp, ']');
        if (!close || close[1] != ':')
            goto bad;
        h = hp + 1;
        n = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(hp, ':');
        if (!colon || memchr(hp, ':', (size_t)(colon - hp)))
            goto bad;
        n = (size_t)(colon - hp);
    }
    if (!n || n >= hl || gmt_cli_long(colon + 1, 0, 65535, port))
        goto bad;
    memcpy(host, h, n);
    host[n] = 0;
    return 0;
bad:
    snprintf(err, errlen, "--prometheus '%s': want HOST:PORT (127.0.0.1:9400, [::1]:9400), "
             "PORT 0..65535", hp);
    return -1;
}

static void describe(const struct sockaddr *sa, socklen_t len, char *out, size_t olen)
{
    char h[NI_MAXHOST], p[NI_MAXSERV];
    if (getnameinfo(sa, len, h, sizeof h, p, sizeof p, NI_NUMERICHOST | NI_NUMERICSERV)) {
        snprintf(out, olen, "?");
        return;
    }
    snprintf(out, olen, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", h, p);
}

int gmt_http_listen(struct gmt_http *h, const char *hostport, char *bound, size_t blen,
                    char *err, size_t errlen)
{
    memset(h, 0, sizeof *h);
    h->lfd = -1;
    for (size_t i = 0; i < GMT_HTTP_CLIENTS; i++)
        h->c[i].fd = -1;
    char host[256], port[16];
    long pn;
    if (split(hostport, host, sizeof host, &pn, err, errlen))
        return -1;
    snprintf(port, sizeof port, "%ld", pn);
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV}, *ai;
    int g = getaddrinfo(host, port, &hints, &ai);
    if (g) {
        snprintf(err, errlen, "--prometheus '%s': %s", hostport, gai_strerror(g));
        return -1;
    }
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 64)) {
        snprintf(err, errlen, "--prometheus '%s': cannot listen there: %s", hostport, strerror(errno));
        if (fd >= 0)
            close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0)
        describe((struct sockaddr *)&ss, sl, bound, blen);
    else
        snprintf(bound, blen, "%s", hostport);
    h->lfd = fd;
    return 0;
}

void gmt_http_set_body(struct gmt_http *h, char *body, size_t len)
{
    free(h->body);
    h->body = body;
    h->body_len = len;
}

size_t gmt_http_pollfds(const struct gmt_http *h, struct pollfd *p)
{
    size_t n = 0;
    p[n++] = (struct pollfd){.fd = h->lfd, .events = POLLIN};
    for (size_t i = 0; i < GMT_HTTP_CLIENTS; i++)
        if (h->c[i].fd >= 0)
            p[n++] = (struct pollfd){.fd = h->c[i].fd, .events = h->c[i].resp ? POLLOUT : POLLIN};
    return n;
}

static void drop(struct gmt_http_client *c)
{
    close(c->fd);
    free(c->resp);
    memset(c, 0, sizeof *c);
    c->fd = -1;
}

static void respond(struct gmt_http *h, struct gmt_http_client *c, int status, const char *what,
                    const char *type, const char *body, size_t len)
{
    char head[256];
    int hn = snprintf(head, sizeof head, "HTTP/1.0 %d %s\r\nContent-Type: %s\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n", status, what, type, len);
    c->resp = malloc((size_t)hn + len);
    if (!c->resp) {
        drop(c);
        return;
    }
    memcpy(c->resp, head, (size_t)hn);
    if (len)
        memcpy(c->resp + hn, body, len);
    c->len = (size_t)hn + len;
    c->off = 0;
}

static void respond_text(struct gmt_http *h, struct gmt_http_client *c, int status,
                         const char *what, const char *text)
{
    respond(h, c, status, what, "text/plain; charset=utf-8", text, strlen(text));
}

/* A whole request in c->req: its first line says what it wants. */
static void answer(struct gmt_http *h, struct gmt_http_client *c)
{
    char method[16], target[256], version[16];
    const char *eol = memchr(c->req, '\n', c->n);
    size_t ln = eol ? (size_t)(eol - c->req) : c->n;
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)(ln < sizeof line ? ln : sizeof line - 1), c->req);
    if (sscanf(line, "%15s %255s %15s", method, target, version) != 3 ||
        strncmp(version, "HTTP/", 5)) {
        respond_text(h, c, 400, "Bad Request", "bad request\n");
        return;
    }
    size_t tl = strcspn(target, "?");
    if (!strcmp(method, "GET") && tl == 8 && !strncmp(target, "/metrics", 8))
        respond(h, c, 200, "OK", "text/plain; version=0.0.4; charset=utf-8",
                h->body ? h->body : "", h->body ? h->body_len : 0);
    else
        respond_text(h, c, 404, "Not Found", "gpumemtrace watch serves GET /metrics only\n");
}

static void take_new(struct gmt_http *h, uint64_t now)
{
    for (;;) {
        int fd = accept4(h->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        size_t i = 0;
        while (i < GMT_HTTP_CLIENTS && h->c[i].fd >= 0)
            i++;
        if (i == GMT_HTTP_CLIENTS) { /* full: this one is told nothing */
            close(fd);
            continue;
        }
        memset(&h->c[i], 0, sizeof h->c[i]);
        h->c[i].fd = fd;
        h->c[i].deadline = now + GMT_HTTP_TIMEOUT_NS;
    }
}

static void on_readable(struct gmt_http *h, struct gmt_http_client *c)
{
    ssize_t k = recv(c->fd, c->req + c->n, sizeof c->req - 1 - c->n, 0);
    if (k <= 0) {
        if (k == 0 || (errno != EAGAIN && errno != EINTR))
            drop(c);
        return;
    }
    c->n += (size_t)k;
    c->req[c->n] = 0;
    if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n"))
        answer(h, c);
    else if (c->n == sizeof c->req - 1)
        respond_text(h, c, 400, "Bad Request", "request too large\n");
}

static void on_writable(struct gmt_http *h, struct gmt_http_client *c)
{
    ssize_t k = send(c->fd, c->resp + c->off, c->len - c->off, MSG_NOSIGNAL);
    if (k < 0) {
        if (errno != EAGAIN && errno != EINTR)
            drop(c);
        return;
    }
    c->off += (size_t)k;
    if (c->off == c->len) {
        h->served++;
        drop(c);
    }
}

void gmt_http_serve(struct gmt_http *h, const struct pollfd *p, size_t n, uint64_t now_ns)
{
    for (size_t k = 0; k < n; k++) {
        if (!p[k].revents)
            continue;
        if (p[k].fd == h->lfd) {
            take_new(h, now_ns);
            continue;
        }
        for (size_t i = 0; i < GMT_HTTP_CLIENTS; i++) {
            struct gmt_http_client *c = &h->c[i];
            if (c->fd != p[k].fd)
                continue;
            if (c->resp && (p[k].revents & (POLLOUT | POLLERR | POLLHUP)))
                on_writable(h, c);
            else if (!c->resp && (p[k].revents & (POLLIN | POLLERR | POLLHUP)))
                on_readable(h, c);
            break;
        }
    }
    for (size_t i = 0; i < GMT_HTTP_CLIENTS; i++)
        if (h->c[i].fd >= 0 && now_ns > h->c[i].deadline)
            drop(&h->c[i]);
}

void gmt_http_close(struct gmt_http *h)
{
    for (size_t i = 0; i < GMT_HTTP_CLIENTS; i++)
        if (h->c[i].fd >= 0)
            drop(&h->c[i]);
    if (h->lfd >= 0)
        close(h->lfd);
    h->lfd = -1;
    free(h->body);
    h->body = NULL;
}
