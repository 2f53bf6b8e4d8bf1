/* json.c: a small, strict, bounded JSON parser with line:column errors, for baselines and other untrusted input. */
#include "json.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct parser {
    const char *p, *end;
    uint32_t line, col;
    char *err;
    size_t errlen;
    int rc;                    /* the first error's code; messages after it are dropped */
};

static int fail(struct parser *P, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(struct parser *P, int rc, const char *fmt, ...)
{
    if (P->rc)
        return P->rc;
    P->rc = rc;
    if (P->errlen) {
        int w = snprintf(P->err, P->errlen, "%u:%u: ", P->line, P->col);
        if (w >= 0 && (size_t)w < P->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(P->err + w, P->errlen - (size_t)w, fmt, ap);
            va_end(ap);
        }
    }
    return rc;
}

static void advance(struct parser *P, size_t n)
{
    for (size_t i = 0; i < n && P->p < P->end; i++, P->p++) {
        if (*P->p == '\n') {
            P->line++;
            P->col = 1;
        } else {
            P->col++;
        }
    }
}

static void skip_ws(struct parser *P)
{
    while (P->p < P->end && (*P->p == ' ' || *P->p == '\t' || *P->p == '\n' || *P->p == '\r'))
        advance(P, 1);
}

/* What a person would call the byte at the cursor, for messages. */
static const char *here(const struct parser *P, char *buf, size_t len)
{
    if (P->p >= P->end)
        return "end of input";
    unsigned char c = (unsigned char)*P->p;
    if (c >= 0x21 && c < 0x7f)
        snprintf(buf, len, "'%c'", c);
    else
        snprintf(buf, len, "byte 0x%02x", c);
    return buf;
}

static int parse_value(struct parser *P, struct gmt_json *v, int depth);

static int literal(struct parser *P, struct gmt_json *v, const char *word, enum gmt_json_type t)
{
    size_t n = strlen(word);
    if ((size_t)(P->end - P->p) < n || memcmp(P->p, word, n) != 0) {
        char b[16];
        return fail(P, -EINVAL, "unexpected %s (expected a value)", here(P, b, sizeof b));
    }
    advance(P, n);
    v->type = t;
    return 0;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static int parse_number(struct parser *P, struct gmt_json *v)
{
    const char *s = P->p, *q = P->p;
    if (q < P->end && *q == '-')
        q++;
    if (q >= P->end || !is_digit(*q)) {
        advance(P, (size_t)(q - s));
        return fail(P, -EINVAL, "a number needs a digit here");
    }
    if (*q == '0') {
        q++;
        if (q < P->end && is_digit(*q)) {
            advance(P, (size_t)(q - s));
            return fail(P, -EINVAL, "leading zero in a number");
        }
    } else {
        while (q < P->end && is_digit(*q))
            q++;
    }
    if (q < P->end && *q == '.') {
        q++;
        if (q >= P->end || !is_digit(*q)) {
            advance(P, (size_t)(q - s));
            return fail(P, -EINVAL, "a fraction needs a digit after '.'");
        }
        while (q < P->end && is_digit(*q))
            q++;
    }
    if (q < P->end && (*q == 'e' || *q == 'E')) {
        q++;
        if (q < P->end && (*q == '+' || *q == '-'))
            q++;
        if (q >= P->end || !is_digit(*q)) {
            advance(P, (size_t)(q - s));
            return fail(P, -EINVAL, "an exponent needs a digit");
        }
        while (q < P->end && is_digit(*q))
            q++;
    }
    size_t n = (size_t)(q - s);
    if (n > GMT_JSON_MAX_NUMBER)
        return fail(P, -E2BIG, "number longer than %d characters", GMT_JSON_MAX_NUMBER);
    v->str = malloc(n + 1);
    if (!v->str)
        return fail(P, -ENOMEM, "out of memory");
    memcpy(v->str, s, n);
    v->str[n] = 0;
    errno = 0;
    v->num = strtod(v->str, NULL);
    if (!isfinite(v->num))
        return fail(P, -E2BIG, "number %s is out of range", v->str);
    v->type = GMT_JSON_NUMBER;
    advance(P, n);
    return 0;
}

static int hex4(const char *p, uint32_t *out)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i];
        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xc0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xe0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
        o[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    o[0] = (char)(0xf0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
    o[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Length of a well-formed UTF-8 sequence at p (RFC 3629: no overlongs, no surrogates,
 * nothing past U+10FFFF), 0 when it is not one. */
static size_t utf8_len(const unsigned char *p, const unsigned char *end)
{
    unsigned char c = p[0];
    size_t n;
    uint32_t cp, min;
    if (c < 0x80)
        return 1;
    if ((c & 0xe0) == 0xc0) { n = 2; cp = c & 0x1f; min = 0x80; }
    else if ((c & 0xf0) == 0xe0) { n = 3; cp = c & 0x0f; min = 0x800; }
    else if ((c & 0xf8) == 0xf0) { n = 4; cp = c & 0x07; min = 0x10000; }
    else return 0;
    if ((size_t)(end - p) < n)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (p[i] & 0x3f);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

/* A \uXXXX escape at the cursor (a surrogate pair as one), appended to buf at *n as
 * UTF-8. 0, or what fail() returned. */
static int parse_u_escape(struct parser *P, char *buf, size_t *n)
{
    uint32_t cp;
    if (P->end - P->p < 6 || hex4(P->p + 2, &cp))
        return fail(P, -EINVAL, "\\u needs four hex digits");
    size_t used = 6;
    if (cp >= 0xdc00 && cp <= 0xdfff)
        return fail(P, -EINVAL, "unpaired surrogate \\u%04x in a string", (unsigned)cp);
    if (cp >= 0xd800 && cp <= 0xdbff) {
        uint32_t lo;
        if (P->end - P->p < 12 || P->p[6] != '\\' || P->p[7] != 'u' || hex4(P->p + 8, &lo) ||
            lo < 0xdc00 || lo > 0xdfff)
            return fail(P, -EINVAL, "unpaired surrogate \\u%04x in a string", (unsigned)cp);
        cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
        used = 12;
    }
    if (cp == 0)
        return fail(P, -EINVAL, "\\u0000 is not allowed in a string");
    *n += put_utf8(buf + *n, cp);
    advance(P, used);
    return 0;
}

/* The escape at the cursor (on its backslash), appended to buf at *n. 0, or what fail()
 * returned. */
static int parse_escape(struct parser *P, char *buf, size_t *n)
{
    if (P->p + 1 >= P->end)
        return fail(P, -EINVAL, "unterminated string");
    char e = P->p[1];
    const char *simple = strchr("\"\\/bfnrt", e);
    if (e && simple) {
        static const char map[] = "\"\\/\b\f\n\r\t";
        buf[(*n)++] = map[simple - "\"\\/bfnrt"];
        advance(P, 2);
        return 0;
    }
    if (e != 'u') {
        advance(P, 1);
        if ((unsigned char)e >= 0x21 && (unsigned char)e < 0x7f)
            return fail(P, -EINVAL, "bad escape '\\%c' in a string", e);
        return fail(P, -EINVAL, "bad escape in a string");
    }
    return parse_u_escape(P, buf, n);
}

/* The cursor is on the opening quote. The decoded text is never longer than the raw. */
static int parse_string(struct parser *P, char **out, size_t *outlen)
{
    advance(P, 1);
    const char *s = P->p;
    const char *q = s;
    while (q < P->end && *q != '"') {
        if (*q == '\\' && q + 1 < P->end)
            q++;
        q++;
    }
    char *buf = malloc((size_t)(q - s) + 1);
    if (!buf)
        return fail(P, -ENOMEM, "out of memory");
    size_t n = 0;
    int r = 0;
    for (;;) {
        if (P->p >= P->end) {
            r = fail(P, -EINVAL, "unterminated string");
            break;
        }
        unsigned char c = (unsigned char)*P->p;
        if (c == '"') {
            advance(P, 1);
            break;
        }
        if (c < 0x20) {
            r = fail(P, -EINVAL, "control character 0x%02x in a string (escape it)", c);
            break;
        }
        if (c == '\\') {
            if ((r = parse_escape(P, buf, &n)))
                break;
            continue;
        }
        size_t k = utf8_len((const unsigned char *)P->p, (const unsigned char *)P->end);
        if (!k) {
            r = fail(P, -EINVAL, "invalid UTF-8 in a string");
            break;
        }
        memcpy(buf + n, P->p, k);
        n += k;
        advance(P, k);
    }
    if (r) {
        free(buf);
        return r;
    }
    buf[n] = 0;
    *out = buf;
    *outlen = n;
    return 0;
}

static int grow_items(struct parser *P, struct gmt_json *v, size_t *cap, bool keys)
{
    if (v->n < *cap)
        return 0;
    size_t ncap = *cap ? *cap * 2 : 8;
    struct gmt_json *it = realloc(v->items, ncap * sizeof *it);
    if (!it)
        return fail(P, -ENOMEM, "out of memory");
    v->items = it;
    if (keys) {
        char **k = realloc(v->keys, ncap * sizeof *k);
        if (!k)
            return fail(P, -ENOMEM, "out of memory");
        v->keys = k;
    }
    *cap = ncap;
    return 0;
}

static int parse_array(struct parser *P, struct gmt_json *v, int depth)
{
    v->type = GMT_JSON_ARRAY;
    advance(P, 1);
    size_t cap = 0;
    skip_ws(P);
    if (P->p < P->end && *P->p == ']') {
        advance(P, 1);
        return 0;
    }
    for (;;) {
        int r = grow_items(P, v, &cap, false);
        if (r)
            return r;
        struct gmt_json *it = &v->items[v->n];
        memset(it, 0, sizeof *it);
        v->n++;
        skip_ws(P);
        if ((r = parse_value(P, it, depth + 1)))
            return r;
        skip_ws(P);
        if (P->p < P->end && *P->p == ',') {
            advance(P, 1);
            continue;
        }
        if (P->p < P->end && *P->p == ']') {
            advance(P, 1);
            return 0;
        }
        char b[16];
        return fail(P, -EINVAL, "expected ',' or ']' in an array, found %s", here(P, b, sizeof b));
    }
}

static int parse_object(struct parser *P, struct gmt_json *v, int depth)
{
    v->type = GMT_JSON_OBJECT;
    advance(P, 1);
    size_t cap = 0;
    skip_ws(P);
    if (P->p < P->end && *P->p == '}') {
        advance(P, 1);
        return 0;
    }
    for (;;) {
        char b[16];
        skip_ws(P);
        if (P->p >= P->end || *P->p != '"')
            return fail(P, -EINVAL, "expected a key (a string), found %s", here(P, b, sizeof b));
        int r = grow_items(P, v, &cap, true);
        if (r)
            return r;
        uint32_t kl = P->line, kc = P->col;
        char *key;
        size_t klen;
        if ((r = parse_string(P, &key, &klen)))
            return r;
        for (size_t i = 0; i < v->n; i++)
            if (!strcmp(v->keys[i], key)) {
                P->line = kl;
                P->col = kc;
                free(key);
                return fail(P, -EINVAL, "duplicate key \"%s\"", v->keys[i]);
            }
        v->keys[v->n] = key;
        struct gmt_json *it = &v->items[v->n];
        memset(it, 0, sizeof *it);
        v->n++;
        skip_ws(P);
        if (P->p >= P->end || *P->p != ':')
            return fail(P, -EINVAL, "expected ':' after a key, found %s", here(P, b, sizeof b));
        advance(P, 1);
        skip_ws(P);
        if ((r = parse_value(P, it, depth + 1)))
            return r;
        skip_ws(P);
        if (P->p < P->end && *P->p == ',') {
            advance(P, 1);
            continue;
        }
        if (P->p < P->end && *P->p == '}') {
            advance(P, 1);
            return 0;
        }
        return fail(P, -EINVAL, "expected ',' or '}' in an object, found %s", here(P, b, sizeof b));
    }
}

static int parse_value(struct parser *P, struct gmt_json *v, int depth)
{
    v->line = P->line;
    v->col = P->col;
    if (P->p >= P->end)
        return fail(P, -EINVAL, "unexpected end of input (expected a value)");
    switch (*P->p) {
    case '{':
    case '[':
        if (depth >= GMT_JSON_MAX_DEPTH)
            return fail(P, -E2BIG, "nested deeper than %d levels", GMT_JSON_MAX_DEPTH);
        return *P->p == '{' ? parse_object(P, v, depth) : parse_array(P, v, depth);
    case '"': {
        int r = parse_string(P, &v->str, &v->len);
        if (!r)
            v->type = GMT_JSON_STRING;
        return r;
    }
    case 't': return literal(P, v, "true", GMT_JSON_TRUE);
    case 'f': return literal(P, v, "false", GMT_JSON_FALSE);
    case 'n': return literal(P, v, "null", GMT_JSON_NULL);
    default:
        if (*P->p == '-' || is_digit(*P->p))
            return parse_number(P, v);
        char b[16];
        return fail(P, -EINVAL, "unexpected %s (expected a value)", here(P, b, sizeof b));
    }
}

static void free_inner(struct gmt_json *v)
{
    free(v->str);
    for (size_t i = 0; i < v->n; i++) {
        free_inner(&v->items[i]);
        if (v->keys)
            free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
}

void gmt_json_free(struct gmt_json *v)
{
    if (!v)
        return;
    free_inner(v);
    free(v);
}

int gmt_json_parse(const char *text, size_t len, struct gmt_json **out, char *err, size_t errlen)
{
    *out = NULL;
    struct parser P = {.p = text, .end = text + len, .line = 1, .col = 1, .err = err, .errlen = errlen};
    if (errlen)
        err[0] = 0;
    if (len > GMT_JSON_MAX_INPUT)
        return fail(&P, -E2BIG, "input larger than %u bytes", GMT_JSON_MAX_INPUT);
    struct gmt_json *v = calloc(1, sizeof *v);
    if (!v)
        return fail(&P, -ENOMEM, "out of memory");
    skip_ws(&P);
    int r = parse_value(&P, v, 0);
    if (!r) {
        skip_ws(&P);
        if (P.p < P.end) {
            char b[16];
            r = fail(&P, -EINVAL, "unexpected %s after the value", here(&P, b, sizeof b));
        }
    }
    if (r) {
        gmt_json_free(v);
        return r;
    }
    *out = v;
    return 0;
}

const struct gmt_json *gmt_json_get(const struct gmt_json *v, const char *key)
{
    if (!v || v->type != GMT_JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < v->n; i++)
        if (!strcmp(v->keys[i], key))
            return &v->items[i];
    return NULL;
}

int gmt_json_int64(const struct gmt_json *v, int64_t *out)
{
    if (!v || v->type != GMT_JSON_NUMBER || strpbrk(v->str, ".eE"))
        return -EINVAL;
    char *end;
    errno = 0;
    long long x = strtoll(v->str, &end, 10);
    if (errno == ERANGE)
        return -ERANGE;
    if (*end)
        return -EINVAL;
    *out = (int64_t)x;
    return 0;
}

const char *gmt_json_type_name(enum gmt_json_type t)
{
    switch (t) {
    case GMT_JSON_NULL: return "null";
    case GMT_JSON_FALSE: case GMT_JSON_TRUE: return "a boolean";
    case GMT_JSON_NUMBER: return "a number";
    case GMT_JSON_STRING: return "a string";
    case GMT_JSON_ARRAY: return "an array";
    case GMT_JSON_OBJECT: return "an object";
    }
    return "?";
}
