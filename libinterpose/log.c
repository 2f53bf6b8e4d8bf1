/* log.c: warnings on stderr that never allocate, never recurse and stop after a few. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <unistd.h>

#include "gmt.h"

/* The trace's and the log's writev (gmt.h): here, below both of its callers (the log's
 * stderr line, the writer's flush), since it needs nothing of the output file. */
long gmt_writev_nosigxfsz(int fd, const struct iovec *iov, int n)
{
    /* Past RLIMIT_FSIZE the kernel sends SIGXFSZ to the writer, whose default action
     * kills the process: blocked here, the write fails with EFBIG instead, and the signal
     * that write left pending is taken back so that it never reaches the program. One
     * the program had pending already is left alone. */
    sigset_t xfsz, old, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, &old);
    bool had = sigismember(&old, SIGXFSZ) && sigpending(&pending) == 0 &&
               sigismember(&pending, SIGXFSZ);
    ssize_t w = writev(fd, iov, n);
    int e = errno;
    if (w < 0 && e == EFBIG && !had) {
        struct timespec now = { 0, 0 };
        while (sigtimedwait(&xfsz, NULL, &now) < 0 && errno == EINTR) {
        }
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = e;
    return w;
}

/* A process that hits the same problem in every hook would otherwise flood the
 * user's stderr: after this many, one last line says the rest are suppressed. */
#define WARN_MAX 8
#define LINE_MAX_BYTES 512

static _Atomic unsigned warn_count;
static GMT_TLS int in_warn;

struct out {
    char *p;
    char *end;
};

static void put_char(struct out *o, char c)
{
    if (o->p < o->end)
        *o->p++ = c;
}

static void put_str(struct out *o, const char *s, long prec)
{
    if (!s)
        s = "(null)";
    for (long i = 0; s[i] && (prec < 0 || i < prec); i++)
        put_char(o, s[i]);
}

/* The length of the UTF-8 sequence at s (at most n bytes), 0 when it is not one or is a
 * C1 control (U+0080..U+009F: some terminals act on them as on ESC). */
static long utf8_len(const unsigned char *s, long n)
{
    unsigned char c = s[0];
    long k;
    unsigned char lo = 0x80, hi = 0xbf;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        k = 2, lo = c == 0xc2 ? 0xa0 : 0x80;
    else if (c >= 0xe0 && c <= 0xef)
        k = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
    else if (c >= 0xf0 && c <= 0xf4)
        k = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
    else
        return 0;
    if (n < k || s[1] < lo || s[1] > hi)
        return 0;
    for (long i = 2; i < k; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return k;
}

/* A value (an option's text, a path, a host name) as the terminal should show it: control
 * bytes and bytes that are not UTF-8 as \xHH, so a value can neither move the cursor,
 * recolour the terminal nor start a line that looks like another warning. */
static void put_value(struct out *o, const char *s, long prec)
{
    static const char hex[] = "0123456789abcdef";
    if (!s)
        s = "(null)";
    long n = 0;
    while ((prec < 0 || n < prec) && s[n])
        n++;
    const unsigned char *u = (const unsigned char *)s;
    for (long i = 0; i < n;) {
        long k = utf8_len(u + i, n - i);
        if (k == 0 || u[i] < 0x20 || u[i] == 0x7f) {
            put_char(o, '\\');
            put_char(o, 'x');
            put_char(o, hex[u[i] >> 4]);
            put_char(o, hex[u[i] & 15]);
            i++;
            continue;
        }
        for (long j = 0; j < k; j++)
            put_char(o, s[i + j]);
        i += k;
    }
}

static void put_uint(struct out *o, unsigned long long v, unsigned base)
{
    char tmp[24];
    int n = 0;
    do {
        unsigned d = (unsigned)(v % base);
        tmp[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
        v /= base;
    } while (v);
    while (n)
        put_char(o, tmp[--n]);
}

/* A printf subset (%d %i %u %x %s %c %p %%, with l/ll/z and ".*" for strings): glibc's
 * vsnprintf may allocate and is not async-signal-safe, and warnings come from hooks
 * and crash handlers. */
static void format(struct out *o, const char *fmt, va_list ap)
{
    for (const char *f = fmt; *f; f++) {
        if (*f != '%') {
            put_char(o, *f);
            continue;
        }
        const char *start = f++;
        long prec = -1;
        int lng = 0, size = 0;
        if (f[0] == '.' && f[1] == '*') {
            prec = va_arg(ap, int);
            f += 2;
        }
        while (*f == 'l') {
            lng++;
            f++;
        }
        if (*f == 'z') {
            size = 1;
            f++;
        }
        switch (*f) {
        case 'd':
        case 'i': {
            long long v = size ? (long long)va_arg(ap, ssize_t)
                          : lng >= 2 ? va_arg(ap, long long)
                          : lng == 1 ? va_arg(ap, long)
                                     : va_arg(ap, int);
            unsigned long long u = (unsigned long long)v;
            if (v < 0) {
                put_char(o, '-');
                u = 0 - u;
            }
            put_uint(o, u, 10);
            break;
        }
        case 'u':
        case 'x': {
            unsigned long long v = size ? va_arg(ap, size_t)
                                   : lng >= 2 ? va_arg(ap, unsigned long long)
                                   : lng == 1 ? va_arg(ap, unsigned long)
                                              : va_arg(ap, unsigned);
            put_uint(o, v, *f == 'x' ? 16 : 10);
            break;
        }
        case 'p':
            put_str(o, "0x", -1);
            put_uint(o, (uintptr_t)va_arg(ap, void *), 16);
            break;
        case 's':
            put_value(o, va_arg(ap, const char *), prec);
            break;
        case 'c': {
            char c[2] = { (char)va_arg(ap, int), 0 };
            put_value(o, c, 1);
            break;
        }
        case '%':
            put_char(o, '%');
            break;
        default:
            /* Unknown conversion: print it as written rather than guess its argument. */
            for (const char *c = start; c <= f && *c; c++)
                put_char(o, *c);
            if (!*f)
                return;
            break;
        }
    }
}

static void write_all(const char *buf, size_t len)
{
    while (len > 0) {
        /* stderr may be a file past RLIMIT_FSIZE: no SIGXFSZ for our line either */
        struct iovec iov = { (void *)buf, len };
        ssize_t n = gmt_writev_nosigxfsz(STDERR_FILENO, &iov, 1);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        buf += n;
        len -= (size_t)n;
    }
}

void gmt_warn(const char *fmt, ...)
{
    if (gmt_opt.quiet || in_warn)
        return;
    int saved = errno;
    in_warn = 1;
    unsigned n = atomic_fetch_add_explicit(&warn_count, 1, memory_order_relaxed);
    if (n <= WARN_MAX) {
        char line[LINE_MAX_BYTES];
        static const char prefix[] = "gpumemtrace: warning: ";
        struct out o = { line, line + sizeof line - 1 };
        put_str(&o, prefix, -1);
        if (n < WARN_MAX) {
            va_list ap;
            va_start(ap, fmt);
            format(&o, fmt, ap);
            va_end(ap);
        } else {
            put_str(&o, "further warnings suppressed", -1);
        }
        *o.p++ = '\n';
        write_all(line, (size_t)(o.p - line));
    }
    in_warn = 0;
    errno = saved;
}
