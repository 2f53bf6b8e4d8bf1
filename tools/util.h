/* util.h: what the CLI's commands share: human units, times, escaping, growable arrays, messages. */
#ifndef GMT_UTIL_H
#define GMT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Room for any result of the gmt_fmt_* functions below, NUL included. */
#define GMT_FMT_LEN 32

/* "0 B", "512 B", "1.5 KiB", "288 MiB", "10.3 GiB": three significant digits at most,
 * binary units. Returns buf. */
const char *gmt_fmt_bytes(char *buf, size_t len, uint64_t bytes);
/* A signed delta: "+288 MiB", "-1.5 GiB", "0 B". */
const char *gmt_fmt_sbytes(char *buf, size_t len, int64_t bytes);
/* A duration: "850 ns", "12.3 us", "1.5 ms", "2.35 s", "125 s". */
const char *gmt_fmt_duration(char *buf, size_t len, uint64_t ns);
/* Seconds with nanosecond precision, signed: "0.000123456", "-1.500000000". */
const char *gmt_fmt_seconds(char *buf, size_t len, int64_t ns);
/* Seconds from `base` to `t` (both ns on one clock) like gmt_fmt_seconds, for any two
 * values: untrusted times can be 2^64 apart. */
const char *gmt_fmt_since(char *buf, size_t len, uint64_t t, uint64_t base);

/* A C++ symbol demangled, without its argument list ("c10::cuda::Foo::bar"), into buf;
 * `name` itself when it is not mangled or no demangler is available. */
const char *gmt_demangle(const char *name, char *buf, size_t len);

/* Writes n bytes of s between double quotes, escaping '"', '\\' and every byte that is
 * not printable ASCII (\n \t \r, otherwise \xHH), so untrusted strings can't garble
 * a terminal or split a line. */
void gmt_fput_quoted(FILE *out, const char *s, size_t n);

/* Writes n bytes of s as they are where they are printable text (printable ASCII and
 * valid UTF-8 other than the C1 controls), and every other byte as \xHH: a name in a
 * message then stays on its line and can send no escape sequence to a terminal. */
void gmt_fput_safe(FILE *out, const char *s, size_t n);
/* s with each line end in it written \x0a: s itself when it has none, else a copy in one
 * of 8 buffers that later calls reuse (4 KiB, cut there). For a trace's string within a
 * line of text output, where the text stream below keeps line ends: one in a host name
 * would start a line that looks like the output's own. NULL for NULL. */
const char *gmt_one_line(const char *s);

/* A stream for text a person reads: what is written to it goes on to f as gmt_fput_safe
 * writes it, but for '\n', the line end, which it keeps. The text outputs write through
 * one, so that no control byte from a trace's strings (a host name, a file name, an
 * NVTX or Python name) reaches the terminal or the log, whichever string it came in
 * and whatever printed it; gmt_one_line keeps such a string on its line. Closing it
 * closes f. NULL out of memory (nothing changed). */
FILE *gmt_safe_stream(FILE *f);
/* stdout made such a stream, for a command's text output (main closes it at exit, and
 * with it the real stdout). 0, or -1 out of memory, said on stderr (stdout as it was). */
int gmt_safe_stdout(void);

/* Prints one message on stderr, formatted, through gmt_fput_safe, then a newline: the
 * one way the CLI reports errors, so that every file name and argument in one is
 * escaped. */
void gmt_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Writes s as a JSON string that is always valid UTF-8 JSON: '"' and '\\' escaped,
 * control bytes, DEL and the C1 controls (U+0080 to U+009F) as \u00XX, and each byte
 * that is not part of a valid UTF-8 sequence as \u00XX, its Latin-1 reading
 * (docs/summary-json.md). The n form stops at n bytes or a NUL. */
void gmt_fput_json_string(FILE *out, const char *s);
void gmt_fput_json_stringn(FILE *out, const char *s, size_t n);
/* The length of the valid UTF-8 sequence at s (n bytes left, n >= 1): 1 to 4, or 0 when
 * the byte there does not start one (overlong forms and surrogates included). */
size_t gmt_utf8_len(const unsigned char *s, size_t n);

/* Writes s as one text cell of CSV (RFC 4180): as it is, or between double quotes where it
 * holds a comma, a quote, CR or LF, or starts or ends with a space, a quote inside
 * doubled. A cell that a spreadsheet would run as a formula (one starting with '=', '+',
 * '-', '@', TAB or CR) gets a single quote in front and is quoted ("'=1+2"), unless it
 * is a number ("-5", "+1.5e3" stay as they are). NULL: an empty cell. */
void gmt_fput_csv_cell(FILE *out, const char *s);

/* Opens a file the CLI reads so that it cannot block or feed forever: opened with
 * O_NONBLOCK (a FIFO with no writer does not block the open), O_CLOEXEC and O_NOCTTY, and
 * checked with fstat before use. A regular file is accepted (and made blocking); with
 * `streams`, so is a FIFO or pipe, left non-blocking with *fifo true for the caller to
 * wait on; anything else (directory, device, socket) is refused. A path open() refuses
 * with ENOTDIR (a regular file where a directory would be) goes to `through` when not
 * NULL, which opens it after all or returns -1 with errno set (a member of a pack,
 * PACK/MEMBER: input.h). Returns the fd, or -1 with "PATH: why" in err (err may be NULL). */
int gmt_open_file(const char *path, int streams, int (*through)(const char *path), char *err,
                  size_t errlen, bool *fifo);

/* A growable array of elements of `esize` bytes. */
struct gmt_vec {
    void *data;
    size_t len, cap, esize;
};
#define GMT_VEC_INIT(type) { NULL, 0, 0, sizeof(type) }

/* The one-line messages an engine has for its command (a trace that could not be read,
 * out of memory), in order: engines print nothing, the command prints them. */
struct gmt_msgs {
    struct gmt_vec v;          /* of char * */
    int lost;                  /* messages that could not be kept: out of memory */
};
#define GMT_MSGS_INIT { GMT_VEC_INIT(char *), 0 }
void gmt_msgs_add(struct gmt_msgs *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints each as "gpumemtrace: MESSAGE" on out, then empties m. */
void gmt_msgs_print(struct gmt_msgs *m, FILE *out);
/* Appends one zeroed element and returns it, NULL when out of memory (or the size
 * would overflow); the vector is then unchanged. Earlier element pointers may move. */
void *gmt_vec_push(struct gmt_vec *v);
void gmt_vec_free(struct gmt_vec *v);

/* The same for an array kept as three fields of its owner (*arr, *n, *cap, elements of
 * `elem` bytes): appends one zeroed element and returns it, NULL when out of memory. */
void *gmt_array_push(void **arr, size_t *n, size_t *cap, size_t elem);
/* Makes *p (of *cap elements of elem bytes) hold at least need, doubling from 64: 0 or
 * -ENOMEM (then *p and *cap are as they were). */
int gmt_grow(void **p, size_t *cap, size_t need, size_t elem);

/* qsort for arrays that may be empty: a vector nothing was pushed to has a NULL base,
 * which qsort's nonnull contract forbids even for zero elements. */
static inline void gmt_sort(void *base, size_t n, size_t size,
                            int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}
static inline void gmt_sort_r(void *base, size_t n, size_t size,
                              int (*cmp)(const void *, const void *, void *), void *arg)
{
    if (n > 1)
        qsort_r(base, n, size, cmp, arg);
}

/* a - b, saturated at INT64_MIN and INT64_MAX: byte counts from untrusted traces. */
static inline int64_t gmt_sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* a + b modulo 2^64, for the replay's per-record sums: every size it adds is at most
 * GMT_BYTES_MAX (2^56) and what is live on a device is too, so a valid trace never
 * wraps them; a corrupt one gets a wrong figure, never undefined behaviour. */
static inline int64_t gmt_wrap_add(int64_t a, uint64_t b)
{
    return (int64_t)((uint64_t)a + b);
}

/* a + b, saturated likewise; and for unsigned sums, at UINT64_MAX. */
static inline int64_t gmt_sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static inline uint64_t gmt_sat_addu(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

/* Asks the kernel to back the whole 2 MiB pages inside a large block (n bytes at p) with
 * huge pages, a hint it may ignore. For arrays of tens of megabytes: touching them page
 * by page takes tens of thousands of faults, a tenth of a summary's time. Best called
 * before the block's memory is first written. */
void gmt_hint_huge(void *p, size_t n);

/* Address space for an array that can only grow up to a known bound: n bytes, zeroed,
 * memory taken only as pages are first touched (in huge pages where the kernel can), so
 * the array never moves or copies. NULL when the space cannot be had; the caller then
 * grows a malloc'd array instead. Released with gmt_unreserve(p, n). */
void *gmt_reserve(size_t n);
void gmt_unreserve(void *p, size_t n);

/* Prints "gpumemtrace CMD: MESSAGE (see 'gpumemtrace help CMD')" on stderr and returns
 * GMT_EXIT_ERROR, for a command's usage errors. */
int gmt_cli_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An option's integer value: all of s a decimal integer in lo..hi. 0 and *out set, or -1
 * (empty, trailing text, out of range). */
int gmt_cli_long(const char *s, long lo, long hi, long *out);

#endif
