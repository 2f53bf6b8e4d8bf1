/* reader_parts.c: the records' variable parts: where each lies in its record, and the checks that it lies within it. */
#include "reader_parts.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "reader.h"

/* The one-line message of a refused trace, in err (when there is room): -1. */
int gmt_reader_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* ---- variable parts ---- */

const char *gmt_process_host(const struct gmt_rec_process *p)
{
    return p->host_len ? (const char *)(p + 1) : "";
}

const char *gmt_process_cmdline(const struct gmt_rec_process *p, uint32_t *len)
{
    if (len)
        *len = p->cmdline_len;
    return (const char *)(p + 1) + p->host_len;
}

const char *gmt_env_strings(const struct gmt_rec_env *e)
{
    return (const char *)(e + 1);
}

const uint8_t *gmt_module_build_id(const struct gmt_rec_module_load *m)
{
    return (const uint8_t *)(m + 1);
}

const char *gmt_module_path(const struct gmt_rec_module_load *m)
{
    return (const char *)(m + 1) + m->build_id_len;
}

const struct gmt_rec_alloc_ext *gmt_alloc_ext(const struct gmt_rec_alloc *a)
{
    return a->h.size >= sizeof(struct gmt_rec_alloc_ext) ? (const void *)a : NULL;
}

const struct gmt_rec_free_ext *gmt_free_ext(const struct gmt_rec_free *f)
{
    return f->h.size >= sizeof(struct gmt_rec_free_ext) ? (const void *)f : NULL;
}

/* Checks that a string of `len` bytes (incl. its NUL) ends in NUL; len 0 is allowed
 * only where the spec says the string may be absent. */
static int nul_ended(const uint8_t *s, uint32_t len)
{
    return len > 0 && s[len - 1] == 0;
}

/* Validates the parts of a known record that its size field alone doesn't cover.
 * `rec` holds h.size bytes, at least the fixed part. */
static int check_process(const char *path, const uint8_t *rec, uint64_t off, char *err,
                     size_t errlen)
{
    uint64_t size = ((const struct gmt_rec *)(const void *)rec)->size;
    const struct gmt_rec_process *p = (const void *)rec;
    const uint8_t *v = rec + sizeof *p;
    if ((uint64_t)sizeof *p + p->host_len + p->cmdline_len > size)
        return gmt_reader_fail(err, errlen, "%s: offset %llu: PROCESS host (%u bytes) and command "
                               "line (%u bytes) overflow the %llu-byte record", path,
                               (unsigned long long)off, p->host_len, p->cmdline_len,
                               (unsigned long long)size);
    if (p->host_len && !nul_ended(v, p->host_len))
        return gmt_reader_fail(err, errlen, "%s: offset %llu: PROCESS host is not NUL-terminated",
                               path, (unsigned long long)off);
    if (p->cmdline_len && !nul_ended(v + p->host_len, p->cmdline_len))
        return gmt_reader_fail(err, errlen, "%s: offset %llu: PROCESS command line is not "
                               "NUL-terminated", path, (unsigned long long)off);
    return 0;
}

static int check_env(const char *path, const uint8_t *rec, uint64_t off, char *err,
                     size_t errlen)
{
    uint64_t size = ((const struct gmt_rec *)(const void *)rec)->size;
    const struct gmt_rec_env *e = (const void *)rec;
    const uint8_t *v = rec + sizeof *e;
    if ((uint64_t)sizeof *e + e->bytes > size)
        return gmt_reader_fail(err, errlen, "%s: offset %llu: ENV strings (%u bytes) overflow the "
                               "%llu-byte record", path, (unsigned long long)off, e->bytes,
                               (unsigned long long)size);
    uint64_t nuls = 0;
    for (uint32_t i = 0; i < e->bytes; i++)
        nuls += v[i] == 0;
    if (nuls != e->count || (e->bytes && v[e->bytes - 1] != 0))
        return gmt_reader_fail(err, errlen, "%s: offset %llu: ENV holds %llu NUL-terminated strings "
                               "in %u bytes, count says %u", path, (unsigned long long)off,
                               (unsigned long long)(e->bytes && v[e->bytes - 1] == 0 ? nuls : 0),
                               e->bytes, e->count);
    return 0;
}

static int check_module_load(const char *path, const uint8_t *rec, uint64_t off, char *err,
                     size_t errlen)
{
    uint64_t size = ((const struct gmt_rec *)(const void *)rec)->size;
    const struct gmt_rec_module_load *m = (const void *)rec;
    const uint8_t *v = rec + sizeof *m;
    if ((uint64_t)sizeof *m + m->build_id_len + m->path_len > size)
        return gmt_reader_fail(err, errlen, "%s: offset %llu: MODULE_LOAD build-id (%u bytes) and "
                               "path (%u bytes) overflow the %llu-byte record", path,
                               (unsigned long long)off, m->build_id_len, m->path_len,
                               (unsigned long long)size);
    if (!nul_ended(v + m->build_id_len, m->path_len))
        return gmt_reader_fail(err, errlen, "%s: offset %llu: MODULE_LOAD path is not "
                               "NUL-terminated", path, (unsigned long long)off);
    return 0;
}

static int check_pycode(const char *path, const uint8_t *rec, uint64_t off, char *err,
                     size_t errlen)
{
    uint64_t size = ((const struct gmt_rec *)(const void *)rec)->size;
    const struct gmt_rec_pycode *c = (const void *)rec;
    const uint8_t *v = rec + sizeof *c;
    if ((uint64_t)sizeof *c + c->name_len + c->qualname_len + c->filename_len > size)
        return gmt_reader_fail(err, errlen, "%s: offset %llu: PYCODE strings (%u, %u and %u bytes) "
                               "overflow the %llu-byte record", path, (unsigned long long)off,
                               c->name_len, c->qualname_len, c->filename_len,
                               (unsigned long long)size);
    if (!nul_ended(v, c->name_len) || !nul_ended(v + c->name_len, c->qualname_len) ||
        !nul_ended(v + c->name_len + c->qualname_len, c->filename_len))
        return gmt_reader_fail(err, errlen, "%s: offset %llu: PYCODE strings are not "
                               "NUL-terminated", path, (unsigned long long)off);
    return 0;
}

int gmt_reader_check_payload(const char *path, const uint8_t *rec, uint64_t off,
                             char *err, size_t errlen)
{
    const struct gmt_rec *h = (const void *)rec;
    uint64_t size = h->size;
    switch (h->type) {
    case GMT_REC_PROCESS:
        return check_process(path, rec, off, err, errlen);
    case GMT_REC_NVTX_STRING: {
        const struct gmt_rec_nvtx_string *n = (const void *)rec;
        if ((uint64_t)sizeof *n + n->len > size)
            return gmt_reader_fail(err, errlen, "%s: offset %llu: NVTX_STRING of %u bytes overflows the "
                                   "%llu-byte record", path, (unsigned long long)off, n->len,
                                   (unsigned long long)size);
        if (!n->len || !nul_ended(rec + sizeof *n, n->len))
            return gmt_reader_fail(err, errlen, "%s: offset %llu: NVTX_STRING is not NUL-terminated",
                                   path, (unsigned long long)off);
        break;
    }
    case GMT_REC_ENV:
        return check_env(path, rec, off, err, errlen);
    case GMT_REC_MODULE_LOAD:
        return check_module_load(path, rec, off, err, errlen);
    case GMT_REC_THREAD: {
        const struct gmt_rec_thread *t = (const void *)rec;
        if (!memchr(t->name, 0, sizeof t->name))
            return gmt_reader_fail(err, errlen, "%s: offset %llu: THREAD name is not NUL-terminated",
                                   path, (unsigned long long)off);
        break;
    }
    case GMT_REC_PYCODE:
        return check_pycode(path, rec, off, err, errlen);
    case GMT_REC_STACK: {
        const struct gmt_rec_stack *s = (const void *)rec;
        if ((uint64_t)sizeof *s + (uint64_t)s->depth * sizeof(uint64_t) > size)
            return gmt_reader_fail(err, errlen, "%s: offset %llu: STACK depth %u overflows the "
                                   "%llu-byte record", path, (unsigned long long)off, s->depth,
                                   (unsigned long long)size);
        break;
    }
    }
    return 0;
}
