/* util.c: what the CLI's commands share: human units, times, escaping, growable arrays, messages. */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "util.h"

/* Prints v (>= 0.9995) with at most three significant digits and no trailing zeros, so
 * columns of sizes read at a glance: rounded half away from zero (1.625 -> "1.63"), in
 * whole steps of the last digit shown, so that the report's page, whose bytes() does
 * the same arithmetic on the same doubles, prints the same figure. */
static void fmt_sig3(char *buf, size_t len, double v, const char *unit)
{
    unsigned scale = v >= 100 ? 1 : v >= 10 ? 10 : 100;
    uint64_t n = (uint64_t)(v * scale + 0.5), whole = n / scale, part = n % scale;
    if (scale == 100 && part % 10 == 0) {
        part /= 10;
        scale = 10;
    }
    if (!part)
        snprintf(buf, len, "%" PRIu64 " %s", whole, unit);
    else
        snprintf(buf, len, "%" PRIu64 ".%0*u %s", whole, scale == 100 ? 2 : 1, (unsigned)part, unit);
}

const char *gmt_fmt_bytes(char *buf, size_t len, uint64_t bytes)
{
    static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
    if (bytes < 1024) {
        snprintf(buf, len, "%" PRIu64 " B", bytes);
        return buf;
    }
    double v = (double)bytes / 1024.0;
    size_t u = 0;
    /* Switch units before rounding would print "1024 KiB". */
    while (v >= 1023.5 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    fmt_sig3(buf, len, v, units[u]);
    return buf;
}

const char *gmt_fmt_sbytes(char *buf, size_t len, int64_t bytes)
{
    char tmp[GMT_FMT_LEN];
    if (bytes == 0) {
        snprintf(buf, len, "0 B");
        return buf;
    }
    /* Through uint64_t so INT64_MIN has a magnitude. */
    uint64_t mag = bytes < 0 ? (uint64_t)0 - (uint64_t)bytes : (uint64_t)bytes;
    snprintf(buf, len, "%c%s", bytes < 0 ? '-' : '+', gmt_fmt_bytes(tmp, sizeof tmp, mag));
    return buf;
}

const char *gmt_fmt_duration(char *buf, size_t len, uint64_t ns)
{
    if (ns < 1000) {
        snprintf(buf, len, "%" PRIu64 " ns", ns);
        return buf;
    }
    double v = (double)ns;
    if (v < 999.5e3)
        fmt_sig3(buf, len, v / 1e3, "us");
    else if (v < 999.5e6)
        fmt_sig3(buf, len, v / 1e6, "ms");
    else if (v < 999.5e9)
        fmt_sig3(buf, len, v / 1e9, "s");
    else
        snprintf(buf, len, "%" PRIu64 " s", (ns + 500000000u) / 1000000000u);
    return buf;
}

static const char *fmt_secs(char *buf, size_t len, int neg, uint64_t mag)
{
    snprintf(buf, len, "%s%" PRIu64 ".%09" PRIu64, neg ? "-" : "", mag / 1000000000u,
             mag % 1000000000u);
    return buf;
}

const char *gmt_fmt_seconds(char *buf, size_t len, int64_t ns)
{
    return fmt_secs(buf, len, ns < 0, ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns);
}

const char *gmt_fmt_since(char *buf, size_t len, uint64_t t, uint64_t base)
{
    return fmt_secs(buf, len, t < base, t < base ? base - t : t - base);
}

void gmt_fput_quoted(FILE *out, const char *s, size_t n)
{
    putc('"', out);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': fputs("\\\"", out); break;
        case '\\': fputs("\\\\", out); break;
        case '\n': fputs("\\n", out); break;
        case '\t': fputs("\\t", out); break;
        case '\r': fputs("\\r", out); break;
        default:
            if (c >= 0x20 && c < 0x7f)
                putc(c, out);
            else
                fprintf(out, "\\x%02x", c);
        }
    }
    putc('"', out);
}

void *gmt_vec_push(struct gmt_vec *v)
{
    if (v->len == v->cap) {
        size_t ncap = v->cap ? v->cap * 2 : 16;
        if (ncap < v->cap || v->esize == 0 || ncap > SIZE_MAX / v->esize)
            return NULL;
        void *n = realloc(v->data, ncap * v->esize);
        if (!n)
            return NULL;
        v->data = n;
        v->cap = ncap;
    }
    void *e = (char *)v->data + v->len * v->esize;
    memset(e, 0, v->esize);
    v->len++;
    return e;
}

void *gmt_array_push(void **arr, size_t *n, size_t *cap, size_t elem)
{
    if (*n == *cap) {
        size_t ncap = *cap ? *cap * 2 : 16;
        void *p = realloc(*arr, ncap * elem);
        if (!p)
            return NULL;
        *arr = p;
        *cap = ncap;
    }
    void *slot = (char *)*arr + (*n)++ * elem;
    memset(slot, 0, elem);
    return slot;
}

int gmt_open_file(const char *path, int streams, int (*through)(const char *path), char *err,
                  size_t errlen, bool *fifo)
{
    *fifo = false;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0 && errno == ENOTDIR && through)
        fd = through(path); /* a file where a directory would be: PACK/MEMBER, say */
    if (fd < 0) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) < 0)
        why = strerror(errno);
    else if (S_ISDIR(st.st_mode))
        why = "is a directory";
    else if (!S_ISREG(st.st_mode) && !(streams && S_ISFIFO(st.st_mode)))
        why = streams ? "not a regular file or a pipe" : "not a regular file";
    else if (S_ISFIFO(st.st_mode))
        *fifo = true;
    else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
        why = strerror(errno);
    if (why) {
        if (err && errlen)
            snprintf(err, errlen, "%s: %s", path, why);
        close(fd);
        return -1;
    }
    return fd;
}

void gmt_msgs_add(struct gmt_msgs *m, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    char **slot = gmt_vec_push(&m->v);
    if (!slot || !(*slot = strdup(buf))) {
        if (slot)
            m->v.len--;
        m->lost++;
    }
}

void gmt_msgs_print(struct gmt_msgs *m, FILE *out)
{
    char **s = m->v.data;
    for (size_t i = 0; i < m->v.len; i++) {
        fputs("gpumemtrace: ", out);
        gmt_fput_safe(out, s[i], strlen(s[i]));
        fputc('\n', out);
        free(s[i]);
    }
    if (m->lost)
        fprintf(out, "gpumemtrace: out of memory (%d messages lost)\n", m->lost);
    gmt_vec_free(&m->v);
    m->lost = 0;
}

void gmt_vec_free(struct gmt_vec *v)
{
    free(v->data);
    v->data = NULL;
    v->len = v->cap = 0;
}

void gmt_hint_huge(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t a = ((uintptr_t)p + huge - 1) & ~(huge - 1), b = ((uintptr_t)p + n) & ~(huge - 1);
    if (p && b > a)
        (void)madvise((void *)a, b - a, MADV_HUGEPAGE); /* only a hint: errors don't matter */
#else
    (void)p;
    (void)n;
#endif
}

void *gmt_reserve(size_t n)
{
    if (!n)
        return NULL;
    /* MAP_NORESERVE: only the pages touched count against the commit limit, so a bound
     * of several times what a trace will use costs nothing */
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    gmt_hint_huge(p, n);
    return p;
}

void gmt_unreserve(void *p, size_t n)
{
    if (p)
        munmap(p, n);
}

int gmt_cli_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    /* digits (and a minus where negatives are allowed) only: no blanks, no '+' */
    if (!((s[0] >= '0' && s[0] <= '9') || (s[0] == '-' && lo < 0 && s[1] >= '0' && s[1] <= '9')))
        return -1;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

int gmt_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    gmt_err("gpumemtrace %s: %s (see 'gpumemtrace help %s')", cmd, buf, cmd);
    return GMT_EXIT_ERROR;
}

/* C++ names through libstdc++'s demangler when that library can be loaded: the CLI
 * stays plain C and runs where there is no C++ runtime (names then stay mangled). */
typedef char *gmt_cxa_demangle_fn(const char *, char *, size_t *, int *);

static gmt_cxa_demangle_fn *demangler(void)
{
    static gmt_cxa_demangle_fn *fn;
    static int tried;
    if (!tried) {
        tried = 1;
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (h)
            fn = (gmt_cxa_demangle_fn *)dlsym(h, "__cxa_demangle");
    }
    return fn;
}

/* Drops argument lists (and what follows them: const, clone suffixes) at nesting depth
 * 0, keeping "(anonymous namespace)": a person reads the function's name. */
static void drop_arguments(char *s)
{
    int angle = 0;
    for (char *p = s; *p; p++) {
        if (*p == '<')
            angle++;
        else if (*p == '>' && angle > 0)
            angle--;
        else if (*p == '(' && angle == 0 && strncmp(p, "(anonymous namespace)", 21) != 0) {
            *p = 0;
            return;
        }
    }
}

const char *gmt_demangle(const char *name, char *buf, size_t len)
{
    if (!name || strncmp(name, "_Z", 2) != 0 || !len)
        return name;
    gmt_cxa_demangle_fn *fn = demangler();
    if (!fn)
        return name;
    int status = -1;
    char *out = fn(name, NULL, NULL, &status);
    if (!out || status != 0) {
        free(out);
        return name;
    }
    drop_arguments(out);
    snprintf(buf, len, "%s", out);
    free(out);
    return buf;
}

size_t gmt_utf8_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    uint32_t cp, min;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2, cp = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3, cp = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4, cp = c & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    /* no overlong forms, no surrogates, nothing above U+10FFFF */
    if (cp < min || (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
        return 0;
    return len;
}

void gmt_fput_json_stringn(FILE *out, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    fputc('"', out);
    for (size_t i = 0; p && i < n && p[i];) {
        unsigned char ch = p[i];
        size_t k = gmt_utf8_len(p + i, n - i);
        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f || k == 0)
            fprintf(out, "\\u%04x", ch); /* a control byte, or a byte read as Latin-1 */
        else if (k == 2 && ch == 0xc2 && p[i + 1] < 0xa0)
            fprintf(out, "\\u%04x", p[i + 1]); /* a C1 control, U+0080 to U+009F */
        else
            fwrite(p + i, 1, k, out);
        i += k ? k : 1;
    }
    fputc('"', out);
}

/* Whether the n bytes at s (n < the sequence's length) can begin a valid UTF-8 sequence. */
static bool utf8_prefix(const unsigned char *s, size_t n)
{
    size_t len = s[0] >= 0xc2 && s[0] <= 0xdf ? 2 : s[0] >= 0xe0 && s[0] <= 0xef ? 3
               : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;
    if (n >= len)
        return false;
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return false;
    return true;
}

/* gmt_fput_safe's work, '\n' kept where lines: of the n bytes at p, what is printable
 * as it is, every other byte as \xHH. Returns the bytes taken: all of them at_end, else
 * all but a UTF-8 sequence cut at the end (the caller has the rest of it next). */
static size_t put_safe(FILE *out, const unsigned char *p, size_t n, bool lines, bool at_end)
{
    size_t i = 0;
    while (i < n) {
        /* a run of printable ASCII (most of any text) in one write */
        size_t run = 0;
        while (i + run < n && ((p[i + run] >= 0x20 && p[i + run] < 0x7f) || (lines && p[i + run] == '\n')))
            run++;
        if (run) {
            fwrite(p + i, 1, run, out);
            i += run;
            continue;
        }
        size_t k = gmt_utf8_len(p + i, n - i);
        if (!k && !at_end && utf8_prefix(p + i, n - i))
            break;
        bool c1 = k == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0;
        if ((k == 0 || c1 || p[i] < 0x20 || p[i] == 0x7f) && !(lines && p[i] == '\n')) {
            fprintf(out, "\\x%02x", p[i]);
            i++;
        } else {
            fwrite(p + i, 1, k, out);
            i += k;
        }
    }
    return i;
}

void gmt_fput_safe(FILE *out, const char *s, size_t n)
{
    put_safe(out, (const unsigned char *)s, n, false, true);
}

const char *gmt_one_line(const char *s)
{
    if (!s || !strchr(s, '\n'))
        return s; /* the common case: no copy */
    static char ring[8][4096];
    static unsigned next;
    char *buf = ring[next++ % 8];
    size_t n = 0;
    for (; *s && n + 5 < sizeof ring[0]; s++) {
        if (*s == '\n') {
            memcpy(buf + n, "\\x0a", 4);
            n += 4;
        } else {
            buf[n++] = *s;
        }
    }
    buf[n] = 0;
    return buf;
}

/* ---- a text stream that lets no control byte through but line ends ---- */

struct safe_stream {
    FILE *f;
    unsigned char tail[4];     /* a UTF-8 sequence cut at the end of a write */
    size_t n_tail;
};

static ssize_t safe_write(void *cookie, const char *buf, size_t n)
{
    struct safe_stream *S = cookie;
    const unsigned char *p = (const unsigned char *)buf;
    size_t used = 0;
    while (S->n_tail && used < n) {
        S->tail[S->n_tail++] = p[used++];
        size_t k = put_safe(S->f, S->tail, S->n_tail, true, false);
        memmove(S->tail, S->tail + k, S->n_tail - k);
        S->n_tail -= k;
    }
    if (used < n) {
        size_t k = used + put_safe(S->f, p + used, n - used, true, false);
        memcpy(S->tail, p + k, n - k); /* fewer than 4: a sequence's start */
        S->n_tail = n - k;
    }
    /* on to the file at once: a program `run` starts writes there too */
    return fflush(S->f) || ferror(S->f) ? -1 : (ssize_t)n;
}

static int safe_close(void *cookie)
{
    struct safe_stream *S = cookie;
    put_safe(S->f, S->tail, S->n_tail, true, true);
    int r = fclose(S->f);
    free(S);
    return r;
}

static FILE *safe_open(FILE *f, struct safe_stream **sp)
{
    struct safe_stream *S = calloc(1, sizeof *S);
    FILE *w = S ? fopencookie(S, "w", (cookie_io_functions_t){.write = safe_write, .close = safe_close})
                : NULL;
    if (!w) {
        free(S);
        return NULL;
    }
    S->f = f;
    if (isatty(fileno(f)))
        setvbuf(w, NULL, _IOLBF, 0);
    else
        setvbuf(w, NULL, _IOFBF, 1 << 16);
    *sp = S;
    return w;
}

FILE *gmt_safe_stream(FILE *f)
{
    struct safe_stream *S;
    return safe_open(f, &S);
}

int gmt_safe_stdout(void)
{
    /* one safe stdout per process: a second command in it (a test harness) reuses it,
     * in front of whatever stdout is by then */
    static FILE *made;
    static struct safe_stream *made_s;
    if (made) {
        if (stdout != made) {
            fflush(made);
            made_s->f = stdout;
            stdout = made;
        }
        return 0;
    }
    FILE *w = safe_open(stdout, &made_s);
    if (!w) {
        gmt_err("gpumemtrace: out of memory");
        return -1;
    }
    stdout = made = w;
    return 0;
}

/* A decimal number as a spreadsheet reads one: [+-] digits [. digits] [e [+-] digits]. */
static bool csv_number(const char *s)
{
    const char *p = s + (*s == '+' || *s == '-');
    size_t digits = strspn(p, "0123456789");
    p += digits;
    if (*p == '.') {
        size_t frac = strspn(p + 1, "0123456789");
        digits += frac;
        p += 1 + frac;
    }
    if (digits && (*p == 'e' || *p == 'E')) {
        const char *q = p + 1 + (p[1] == '+' || p[1] == '-');
        size_t exp = strspn(q, "0123456789");
        p = exp ? q + exp : p;
    }
    return digits && !*p;
}

void gmt_fput_csv_cell(FILE *out, const char *s)
{
    if (!s)
        return;
    size_t n = strlen(s);
    bool formula = n && strchr("=+-@\t\r", s[0]) && !csv_number(s);
    if (!formula && !strpbrk(s, ",\"\r\n") && !(n && (s[0] == ' ' || s[n - 1] == ' '))) {
        fputs(s, out);
        return;
    }
    fputs(formula ? "\"'" : "\"", out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

void gmt_err(const char *fmt, ...)
{
    char buf[8192];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    gmt_fput_safe(stderr, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
    fputc('\n', stderr);
}

void gmt_fput_json_string(FILE *out, const char *s)
{
    gmt_fput_json_stringn(out, s, s ? strlen(s) : 0);
}

int gmt_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 0;
    size_t n = *cap ? *cap : 64;
    while (n < need)
        n *= 2;
    if (elem && n > SIZE_MAX / elem)
        return -ENOMEM;
    void *q = realloc(*p, n * elem);
    if (!q)
        return -ENOMEM;
    *p = q;
    *cap = n;
    return 0;
}
