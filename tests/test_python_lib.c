/* test_python_lib.c: the library's Python frames where no interpreter is loaded, and its line-table decoders on hand-built tables (the end-to-end checks are tests/python). */
#include <criterion/criterion.h>
#include <stdint.h>

#include "gmt.h"
#include "python.h"
/* The decoders are static to python.c: the test builds its copy of the file, which the
 * linker then takes instead of the archive's (every symbol of python.o is defined here). */
#include "python.c"

/* This test binary has no interpreter: no Python frames, and the library does not fault
 * looking for one (again and again: it asks dlsym again now and then). */
Test(python, no_interpreter_no_frames)
{
    static struct gmt_py_stack py;
    for (int i = 0; i < 10000; i++)
        cr_assert_eq(gmt_python_frames(&py), 0);
    cr_assert_eq(py.n, 0);
    cr_assert(!gmt_python_eval_frame(&py, 0));
    cr_assert(!gmt_python_eval_frame(&py, 1));
    cr_assert(!gmt_python_eval_frame(&py, (uint64_t)(uintptr_t)&py));
}

/* A 3.11+ location table (CPython's Objects/locations.md) of every entry form, first line
 * 10; entries cover [start, start + length) code units. Each entry's first unit is its
 * own, not the previous entry's: a call spread over lines has its CALL there. */
Test(python, location_table_311_entries_start_at_their_first_unit)
{
    static const uint8_t t[] = {
        0x80 | 13 << 3 | 1, 0x04,             /* units 0-1: no columns, line +2: 12 */
        0x80 | 11 << 3 | 0, 0x05, 0x09,       /* unit 2: one-line form, +1: 13 */
        0x80 | 3 << 3 | 2, 0x21,              /* units 3-5: short form, same line: 13 */
        0x80 | 14 << 3 | 1, 0x07, 0x00, 0x01, 0x05, /* units 6-7: long form, -3: 10 */
        0x80 | 15 << 3 | 0,                   /* unit 8: no location */
        0x80 | 13 << 3 | 7, 0x50, 0x06,       /* units 9-16: +200 (a two-byte varint): 210 */
    };
    static const struct { int64_t addr; int line; } want[] = {
        { 0, 12 }, { 1, 12 }, { 2, 13 }, { 3, 13 }, { 5, 13 }, { 6, 10 }, { 7, 10 },
        { 8, -1 }, { 9, 210 }, { 16, 210 }, { 17, -1 }, { 1000, -1 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect_eq(line_311(t, sizeof t, 10, want[i].addr), want[i].line,
                     "unit %lld: line %d, want %d", (long long)want[i].addr,
                     line_311(t, sizeof t, 10, want[i].addr), want[i].line);
    /* cut inside an entry's varint: no line, and nothing read past the table */
    cr_expect_eq(line_311(t, sizeof t - 1, 10, 9), -1);
    cr_expect_eq(line_311(t, 0, 10, 0), -1);
}

/* 3.10's co_linetable: (bytes, line delta) ranges [start, start + bytes); -128 no line. */
Test(python, line_table_310_ranges_start_at_their_first_byte)
{
    static const uint8_t t[] = { 4, 1, 6, 2, 2, 0x80, 2, 1 };
    static const struct { int64_t addr; int line; } want[] = {
        { 0, 11 }, { 3, 11 }, { 4, 13 }, { 9, 13 }, { 10, -1 }, { 11, -1 }, { 12, 14 },
        { 13, 14 }, { 14, -1 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect_eq(line_310(t, sizeof t, 10, want[i].addr), want[i].line,
                     "byte %lld: line %d, want %d", (long long)want[i].addr,
                     line_310(t, sizeof t, 10, want[i].addr), want[i].line);
}

/* 3.9's co_lnotab: (address delta, line delta) pairs; a line starts at its address. */
Test(python, lnotab_39_lines_start_at_their_address)
{
    static const uint8_t t[] = { 4, 1, 6, 2 };
    static const struct { int64_t addr; int line; } want[] = {
        { 0, 10 }, { 3, 10 }, { 4, 11 }, { 9, 11 }, { 10, 13 }, { 500, 13 },
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        cr_expect_eq(line_39(t, sizeof t, 10, want[i].addr), want[i].line,
                     "byte %lld: line %d, want %d", (long long)want[i].addr,
                     line_39(t, sizeof t, 10, want[i].addr), want[i].line);
}

/* A compact ASCII str as CPython lays it out: length at 16, hash at 24 (-1: not yet
 * computed), state at 32 (ASCII, compact, one byte per character), text at 48 (3.11). */
static void fake_str(uint64_t *s, const char *text, int64_t hash)
{
    memset(s, 0, 16 * sizeof *s);
    s[2] = strlen(text);
    s[3] = (uint64_t)hash;
    s[4] = 1u << 2 | 1u << 5 | 1u << 6;
    memcpy((char *)s + 48, text, strlen(text) + 1);
}

/* The thread's memo of frames: a frame it read is the value read before only while
 * the code object at that address still has every field and text it was read from. A
 * new function made where a freed one was (exec in a loop: the same code, string and
 * table addresses, another name) is read again, hashed or not. */
Test(python, frame_memo_is_believed_only_for_the_same_code)
{
    static const struct offsets *o = &tables[2]; /* 3.11 */
    static uint64_t co[64], name[16], file[16], lt[8];
    static struct code_entry e;
    static struct memo_slot m;
    off = o;
    code_type = 0x1000;
    co[1] = code_type;
    fake_str(name, "forward", 1234);
    fake_str(file, "model.py", -1);
    co[o->co_name / 8] = (uint64_t)(uintptr_t)name;
    co[o->co_filename / 8] = (uint64_t)(uintptr_t)file;
    co[o->co_linetable / 8] = (uint64_t)(uintptr_t)lt;
    *(int32_t *)((char *)co + o->co_firstlineno) = 7;
    e.code = (uintptr_t)co;
    e.name = (uintptr_t)name;
    e.filename = (uintptr_t)file;
    e.linetable = (uintptr_t)lt;
    e.firstlineno = 7;
    uintptr_t f = 0x7f0000001000, at = (uintptr_t)co + 200;
    memo_entry = &e;
    memo_put(&m, f, at, 42);
    cr_assert_eq(memo_get(&m, f, (uintptr_t)co, at, o), 42, "the same frame, read before");
    cr_expect_eq(memo_get(&m, f + 64, (uintptr_t)co, at, o), 0, "another frame");
    cr_expect_eq(memo_get(&m, f, (uintptr_t)co, at + 2, o), 0, "another instruction");
    cr_expect_eq(memo_get(&m, f, (uintptr_t)co + 8, at, o), 0, "another code object");
    /* another name at the name's address: hashed ... */
    fake_str(name, "backward", 99);
    cr_expect_eq(memo_get(&m, f, (uintptr_t)co, at, o), 0, "a name hashed otherwise");
    fake_str(name, "forward", 1234);
    /* ... or not hashed: the text's tail tells */
    fake_str(file, "other.py", -1);
    cr_expect_eq(memo_get(&m, f, (uintptr_t)co, at, o), 0, "a file name not hashed, other text");
    fake_str(file, "model.py", -1);
    cr_assert_eq(memo_get(&m, f, (uintptr_t)co, at, o), 42, "all as it was");
    co[o->co_linetable / 8] += 8;
    cr_expect_eq(memo_get(&m, f, (uintptr_t)co, at, o), 0, "another line table");
    co[o->co_linetable / 8] -= 8;
    *(int32_t *)((char *)co + o->co_firstlineno) = 8;
    cr_expect_eq(memo_get(&m, f, (uintptr_t)co, at, o), 0, "another first line");
    *(int32_t *)((char *)co + o->co_firstlineno) = 7;
    co[1] = 0x2000;
    cr_expect_eq(memo_get(&m, f, (uintptr_t)co, at, o), 0, "no longer a code object");
    co[1] = code_type;
    cr_expect_eq(memo_get(&m, f, (uintptr_t)co, at, o), 42);
}
