/* test_json.c: the strict JSON parser on good and bad input: values, escapes, bounds, line:col errors. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"

static struct gmt_json *ok(const char *text)
{
    struct gmt_json *v = NULL;
    char err[256];
    int r = gmt_json_parse(text, strlen(text), &v, err, sizeof err);
    cr_assert_eq(r, 0, "parse of %s failed: %s", text, err);
    cr_assert_not_null(v);
    return v;
}

/* Parses text that must fail; returns the code and leaves the message in err. */
static int bad(const char *text, size_t len, char *err, size_t errlen)
{
    struct gmt_json *v = (struct gmt_json *)1;
    int r = gmt_json_parse(text, len, &v, err, errlen);
    cr_assert_lt(r, 0, "parse of '%.*s' should fail", (int)len, text);
    cr_assert_null(v);
    return r;
}

Test(json, parses_every_kind_of_value)
{
    struct gmt_json *v = ok(" {\"a\": [1, -2.5e3, true, false, null], \"b\": {\"c\": \"x\"}, \"d\": []}\n");
    cr_assert_eq(v->type, GMT_JSON_OBJECT);
    cr_assert_eq(v->n, 3);
    const struct gmt_json *a = gmt_json_get(v, "a");
    cr_assert_not_null(a);
    cr_assert_eq(a->type, GMT_JSON_ARRAY);
    cr_assert_eq(a->n, 5);
    cr_expect_eq(a->items[0].type, GMT_JSON_NUMBER);
    cr_expect_float_eq(a->items[1].num, -2500.0, 1e-9);
    cr_expect_eq(a->items[2].type, GMT_JSON_TRUE);
    cr_expect_eq(a->items[3].type, GMT_JSON_FALSE);
    cr_expect_eq(a->items[4].type, GMT_JSON_NULL);
    const struct gmt_json *c = gmt_json_get(gmt_json_get(v, "b"), "c");
    cr_assert_not_null(c);
    cr_expect_str_eq(c->str, "x");
    cr_expect_eq(gmt_json_get(v, "d")->n, 0);
    cr_expect_null(gmt_json_get(v, "nope"));
    cr_expect_null(gmt_json_get(a, "a"), "an array has no keys");
    gmt_json_free(v);
}

Test(json, records_line_and_column_of_values)
{
    struct gmt_json *v = ok("{\n  \"k\":\n     42\n}");
    const struct gmt_json *k = gmt_json_get(v, "k");
    cr_expect_eq(v->line, 1);
    cr_expect_eq(v->col, 1);
    cr_expect_eq(k->line, 3);
    cr_expect_eq(k->col, 6);
    gmt_json_free(v);
}

Test(json, decodes_escapes_and_surrogate_pairs)
{
    struct gmt_json *v = ok("\"q\\\" b\\\\ s\\/ \\b\\f\\n\\r\\t \\u00e9 \\u20AC \\ud83d\\ude00\"");
    cr_assert_eq(v->type, GMT_JSON_STRING);
    const char want[] = "q\" b\\ s/ \b\f\n\r\t \xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
    cr_expect_eq(v->len, sizeof want - 1);
    cr_expect_eq(memcmp(v->str, want, sizeof want), 0);
    gmt_json_free(v);
    v = ok("\"raw \xc3\xa9 utf-8\"");
    cr_expect_str_eq(v->str, "raw \xc3\xa9 utf-8");
    gmt_json_free(v);
}

Test(json, integers_convert_exactly_or_say_why_not)
{
    struct gmt_json *v = ok("[9223372036854775807, -9223372036854775808, 9223372036854775808, 1.0, 1e3, 0]");
    int64_t x;
    cr_expect_eq(gmt_json_int64(&v->items[0], &x), 0);
    cr_expect_eq(x, INT64_MAX);
    cr_expect_eq(gmt_json_int64(&v->items[1], &x), 0);
    cr_expect_eq(x, INT64_MIN);
    cr_expect_eq(gmt_json_int64(&v->items[2], &x), -ERANGE);
    cr_expect_eq(gmt_json_int64(&v->items[3], &x), -EINVAL, "1.0 is not written as an integer");
    cr_expect_eq(gmt_json_int64(&v->items[4], &x), -EINVAL);
    cr_expect_eq(gmt_json_int64(&v->items[5], &x), 0);
    cr_expect_eq(x, 0);
    cr_expect_eq(gmt_json_int64(v, &x), -EINVAL, "an array is no number");
    gmt_json_free(v);
}

Test(json, truncated_input_fails_at_every_length)
{
    const char *doc = "{\"metrics\": [{\"bytes\": 12, \"op\": \"All\\u0052educe\"}, true], \"x\": null}";
    size_t n = strlen(doc);
    for (size_t len = 0; len < n; len++) {
        char err[256];
        int r = bad(doc, len, err, sizeof err);
        cr_expect_eq(r, -EINVAL, "length %zu", len);
        cr_expect(strchr(err, ':') != NULL, "length %zu: message '%s' has line:col", len, err);
    }
    gmt_json_free(ok(doc));
}

Test(json, errors_name_line_and_column)
{
    char err[256];
    bad("{\n  \"a\": 1,\n  \"b\" 2\n}", 20, err, sizeof err);
    cr_expect(strncmp(err, "3:7: ", 5) == 0, "got '%s'", err);
    cr_expect(strstr(err, "':'") != NULL, "got '%s'", err);
    bad("[1,\n2,\n]", 8, err, sizeof err);
    cr_expect(strncmp(err, "3:1: ", 5) == 0, "got '%s'", err);
}

Test(json, deep_nesting_is_refused_not_recursed)
{
    size_t n = 100000;
    char *s = malloc(2 * n + 1);
    cr_assert_not_null(s);
    memset(s, '[', n);
    memset(s + n, ']', n);
    s[2 * n] = 0;
    char err[256];
    cr_expect_eq(bad(s, 2 * n, err, sizeof err), -E2BIG);
    cr_expect(strstr(err, "deeper") != NULL, "got '%s'", err);
    /* exactly at the bound is fine */
    size_t d = GMT_JSON_MAX_DEPTH;
    memset(s, '[', d);
    memset(s + d, ']', d);
    struct gmt_json *v;
    cr_expect_eq(gmt_json_parse(s, 2 * d, &v, err, sizeof err), 0, "%s", err);
    gmt_json_free(v);
    free(s);
}

Test(json, huge_numbers_are_bounded)
{
    char err[256];
    cr_expect_eq(bad("1e999", 5, err, sizeof err), -E2BIG);
    cr_expect(strstr(err, "out of range") != NULL, "got '%s'", err);
    cr_expect_eq(bad("-1e400", 6, err, sizeof err), -E2BIG);
    char digits[200];
    memset(digits, '9', sizeof digits - 1);
    digits[sizeof digits - 1] = 0;
    cr_expect_eq(bad(digits, strlen(digits), err, sizeof err), -E2BIG);
    cr_expect(strstr(err, "longer") != NULL, "got '%s'", err);
    struct gmt_json *v = ok("1e308");
    cr_expect_gt(v->num, 1e307);
    gmt_json_free(v);
}

Test(json, bad_escapes_and_strings_fail)
{
    static const char *const cases[] = {
        "\"\\x41\"", "\"\\u12\"", "\"\\u12G4\"", "\"\\ud800\"", "\"\\udc00\"",
        "\"\\ud800\\u0041\"", "\"\\u0000\"", "\"a\nb\"", "\"\xff\"", "\"\xc0\xaf\"",
        "\"\xed\xa0\x80\"", "\"unterminated", "\"\\",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256];
        cr_expect_eq(bad(cases[i], strlen(cases[i]), err, sizeof err), -EINVAL, "case %zu", i);
        cr_expect(strncmp(err, "1:", 2) == 0, "case %zu: '%s'", i, err);
    }
}

Test(json, strict_grammar)
{
    static const char *const cases[] = {
        "", "   ", "01", "-", "1.", ".5", "1e", "+1", "[1,]", "{\"a\":1,}", "{a:1}",
        "{\"a\" 1}", "[1 2]", "tru", "nul", "True", "1 2", "{} x", "NaN", "Infinity",
        "{\"a\":1,\"a\":2}", "'s'", "[", "{", "{\"a\":",
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[256];
        cr_expect_lt(bad(cases[i], strlen(cases[i]), err, sizeof err), 0, "case '%s'", cases[i]);
    }
}

Test(json, duplicate_key_points_at_the_second)
{
    char err[256];
    bad("{\"a\": 1,\n \"a\": 2}", 17, err, sizeof err);
    cr_expect(strncmp(err, "2:2: duplicate key", 18) == 0, "got '%s'", err);
}

Test(json, embedded_nul_and_oversize_input_fail)
{
    char err[256];
    const char with_nul[] = "[1,\0 2]";
    cr_expect_eq(bad(with_nul, sizeof with_nul - 1, err, sizeof err), -EINVAL);
    cr_expect_eq(bad("[]", (size_t)GMT_JSON_MAX_INPUT + 1, err, sizeof err), -E2BIG);
}
