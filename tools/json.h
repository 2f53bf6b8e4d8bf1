/* json.h: a small, strict, bounded JSON parser (RFC 8259) for inputs a person or CI hands us, such as baselines. */
#ifndef GMT_JSON_H
#define GMT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bounds: input is untrusted, so the parser never recurses or allocates without limit. */
#define GMT_JSON_MAX_DEPTH 64          /* nested arrays/objects */
#define GMT_JSON_MAX_INPUT (16u << 20) /* bytes of text */
#define GMT_JSON_MAX_NUMBER 64         /* characters of one number literal */

enum gmt_json_type {
    GMT_JSON_NULL = 1, GMT_JSON_FALSE, GMT_JSON_TRUE, GMT_JSON_NUMBER, GMT_JSON_STRING,
    GMT_JSON_ARRAY, GMT_JSON_OBJECT
};

struct gmt_json {
    enum gmt_json_type type;
    uint32_t line, col;        /* where the value starts, 1-based; col counts bytes */
    char *str;                 /* STRING: decoded UTF-8, NUL-terminated (\u0000 is refused);
                                * NUMBER: the literal as written */
    size_t len;                /* STRING: bytes of str */
    double num;                /* NUMBER: its value (finite) */
    struct gmt_json *items;    /* ARRAY elements, OBJECT values, in input order */
    char **keys;               /* OBJECT keys, parallel to items; no duplicates */
    size_t n;                  /* ARRAY/OBJECT: number of items */
};

/* Parses exactly one JSON value (surrounded by optional whitespace) from text[0..len).
 * Returns 0 and a tree to free with gmt_json_free, or -EINVAL (malformed, with
 * "LINE:COL: what" in err), -E2BIG (a bound exceeded, same message form), -ENOMEM. */
int gmt_json_parse(const char *text, size_t len, struct gmt_json **out, char *err, size_t errlen);
void gmt_json_free(struct gmt_json *v);

/* The value of `key` in an object, NULL when v is not an object or lacks the key. */
const struct gmt_json *gmt_json_get(const struct gmt_json *v, const char *key);
/* A NUMBER that is an integer written without fraction or exponent and fits: 0, or
 * -EINVAL (not such a number), -ERANGE (does not fit). */
int gmt_json_int64(const struct gmt_json *v, int64_t *out);
/* "object", "array", "string", ... for messages. */
const char *gmt_json_type_name(enum gmt_json_type t);

#endif
