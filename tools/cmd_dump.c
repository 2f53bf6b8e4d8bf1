/* cmd_dump.c: `gpumemtrace dump`: every record of a trace, one line each, every field by name. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "cli.h"
#include "idnames.h"
#include "reader.h"
#include "trace.h"
#include "util.h"

const char gmt_help_dump[] =
    "usage: gpumemtrace dump [--help] [--expand] FILE|DIR...\n"
    "\n"
    "Prints every record of each trace (a directory: every *.gmt below it), one line\n"
    "each, in file order:\n"
    "  OFFSET  the record's byte offset in the file\n"
    "  TID     the thread that made it (from the enclosing CHUNK), '-' for none\n"
    "  TIME    seconds since the PROCESS record's monotonic anchor, '-' when the\n"
    "          record carries no time\n"
    "  TYPE    the record type, then every field as name=value: addresses in hex,\n"
    "          sizes in bytes, API/kind/operation names, strings quoted and escaped\n"
    "--expand: the records that stand for others replaced by them, as the other\n"
    "commands read the trace: each GROUP_REPEAT by its group members' records, each\n"
    "SCOPE_END in call form by its SCOPE_BEGIN and plain SCOPE_END, a SCOPE_OPEN by\n"
    "the SCOPE_BEGIN of the call left open (at the end) or by nothing (OFFSET is then\n"
    "in that expanded image, a note on a cut the file's own; FILE must be a file).\n"
    "FILE '-' reads standard input. A trace cut short (crash, kill) is printed up to\n"
    "its last whole record, with a note on stderr saying where it stops; exit 0.\n"
    "A malformed trace: a one-line error naming the file and offset, exit 2.\n";

static void named(FILE *o, const char *key, const char *name, unsigned id)
{
    if (strcmp(name, "?") == 0)
        fprintf(o, " %s=?(%u)", key, id);
    else
        fprintf(o, " %s=%s", key, name);
}

static void hex(FILE *o, const char *key, uint64_t v)
{
    fprintf(o, " %s=0x%" PRIx64, key, v);
}

static void u64(FILE *o, const char *key, uint64_t v)
{
    fprintf(o, " %s=%" PRIu64, key, v);
}

static void i64(FILE *o, const char *key, int64_t v)
{
    fprintf(o, " %s=%" PRId64, key, v);
}

/* A NUL-terminated string inside a record, at most n bytes. */
static void str(FILE *o, const char *key, const char *s, size_t n)
{
    fprintf(o, " %s=", key);
    gmt_fput_quoted(o, s, strnlen(s, n));
}

/* A run of NUL-terminated strings (command line, environment) as a list. */
static void strlist(FILE *o, const char *key, const char *s, size_t n)
{
    fprintf(o, " %s=[", key);
    for (size_t i = 0; i < n;) {
        size_t l = strnlen(s + i, n - i);
        if (i)
            putc(' ', o);
        gmt_fput_quoted(o, s + i, l);
        i += l + 1;
    }
    putc(']', o);
}

/* One printer per record type: prints its fields, returns how many bytes of the record
 * they cover (the rest is padding or fields of a newer version). */
static uint32_t fields_process(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_process *r = (const void *)h;
    uint32_t clen;
    const char *cmd = gmt_process_cmdline(r, &clen);
    u64(o, "pid", r->pid);
    u64(o, "ppid", r->ppid);
    i64(o, "rank", r->rank);
    i64(o, "local_rank", r->local_rank);
    i64(o, "world_size", r->world_size);
    i64(o, "local_world_size", r->local_world_size);
    u64(o, "realtime_ns", r->realtime_ns);
    u64(o, "monotonic_ns", r->monotonic_ns);
    hex(o, "flags", r->flags);
    str(o, "host", gmt_process_host(r), r->host_len);
    strlist(o, "cmdline", cmd, clen);
    return (uint32_t)sizeof *r + r->host_len + clen;
}

static uint32_t fields_env(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_env *r = (const void *)h;
    u64(o, "count", r->count);
    strlist(o, "vars", gmt_env_strings(r), r->bytes);
    return (uint32_t)sizeof *r + r->bytes;
}

static uint32_t fields_version(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_version *r = (const void *)h;
    named(o, "component", gmt_component_name(h->aux), h->aux);
    i64(o, "version", r->version);
    return sizeof *r;
}

static uint32_t fields_module_load(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_module_load *r = (const void *)h;
    const uint8_t *bid = gmt_module_build_id(r);
    u64(o, "time_ns", r->time_ns);
    u64(o, "module", r->module_id);
    hex(o, "load_bias", r->load_bias);
    hex(o, "start", r->start);
    hex(o, "end", r->end);
    fputs(" build_id=", o);
    if (r->build_id_len == 0)
        putc('-', o);
    for (uint32_t i = 0; i < r->build_id_len; i++)
        fprintf(o, "%02x", bid[i]);
    str(o, "path", gmt_module_path(r), r->path_len);
    return (uint32_t)sizeof *r + r->build_id_len + r->path_len;
}

static uint32_t fields_module_unload(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_module_unload *r = (const void *)h;
    u64(o, "time_ns", r->time_ns);
    u64(o, "module", r->module_id);
    return sizeof *r;
}

static uint32_t fields_chunk(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_chunk *r = (const void *)h;
    u64(o, "tid", r->tid);
    return sizeof *r;
}

static uint32_t fields_thread(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_thread *r = (const void *)h;
    u64(o, "time_ns", r->time_ns);
    u64(o, "tid", r->tid);
    str(o, "name", r->name, sizeof r->name);
    return sizeof *r;
}

static uint32_t fields_time(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_time *r = (const void *)h;
    u64(o, "time_ns", r->time_ns);
    return sizeof *r;
}

static uint32_t fields_stack(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_stack *r = (const void *)h;
    u64(o, "stack", r->stack_id);
    u64(o, "depth", r->depth);
    fputs(" ip=[", o);
    for (uint32_t i = 0; i < r->depth; i++) {
        if (GMT_PYFRAME_IS(r->ip[i])) /* a Python frame: py:CODE_ID:LINE */
            fprintf(o, "%spy:%u:%u", i ? " " : "", GMT_PYFRAME_CODE(r->ip[i]),
                    GMT_PYFRAME_LINE(r->ip[i]));
        else
            fprintf(o, i ? " 0x%" PRIx64 : "0x%" PRIx64, r->ip[i]);
    }
    putc(']', o);
    return (uint32_t)sizeof *r + r->depth * 8u;
}

/* PYCODE: the reader checked that the strings lie within the record, NUL-terminated. */
static uint32_t fields_pycode(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_pycode *r = (const void *)h;
    const char *s = (const char *)(r + 1);
    u64(o, "code", r->code_id);
    i64(o, "firstlineno", r->firstlineno);
    str(o, "name", s, r->name_len);
    str(o, "qualname", s + r->name_len, r->qualname_len);
    str(o, "file", s + r->name_len + r->qualname_len, r->filename_len);
    return (uint32_t)sizeof *r + r->name_len + r->qualname_len + r->filename_len;
}

static uint32_t fields_cuctx(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_cuctx *r = (const void *)h;
    hex(o, "context", r->context);
    i64(o, "device", r->device);
    return sizeof *r;
}

static uint32_t fields_alloc(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_alloc *r = (const void *)h;
    const struct gmt_rec_alloc_ext *x = gmt_alloc_ext(r);
    named(o, "api", gmt_api_name(h->aux), h->aux);
    named(o, "kind", gmt_kind_name(r->kind), r->kind);
    hex(o, "address", r->address);
    u64(o, "bytes", r->bytes);
    u64(o, "dt", r->dt);
    u64(o, "stack", r->stack_id);
    u64(o, "scope", r->scope_id);
    hex(o, "flags", r->flags);
    i64(o, "device", r->device);
    if (!x)
        return sizeof *r;
    hex(o, "stream", x->stream);
    hex(o, "related", x->related);
    u64(o, "offset", x->offset);
    return sizeof *x;
}

static uint32_t fields_alloc_small(FILE *o, const struct gmt_rec *h)
{
    /* the fields of the ALLOC it stands for, in the same order */
    const struct gmt_rec_alloc_small *r = (const void *)h;
    unsigned api = GMT_SMALL_API(h->aux), kind = GMT_SMALL_KIND(h->aux);
    named(o, "api", gmt_api_name(api), api);
    named(o, "kind", gmt_kind_name(kind), kind);
    hex(o, "address", r->address);
    u64(o, "bytes", r->bytes);
    u64(o, "dt", r->dt);
    u64(o, "stack", r->stack_id);
    u64(o, "scope", 0);
    hex(o, "flags", GMT_SMALL_FLAGS(h->aux));
    i64(o, "device", -1);
    return sizeof *r;
}

static uint32_t fields_free(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_free *r = (const void *)h;
    const struct gmt_rec_free_ext *x = gmt_free_ext(r);
    named(o, "api", gmt_api_name(h->aux), h->aux);
    hex(o, "address", r->address);
    u64(o, "dt", r->dt);
    u64(o, "scope", r->scope_id);
    if (!x)
        return sizeof *r;
    hex(o, "stream", x->stream);
    u64(o, "stack", x->stack_id);
    i64(o, "result", x->result);
    return sizeof *x;
}

static uint32_t fields_alloc_fail(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_alloc_fail *r = (const void *)h;
    named(o, "api", gmt_api_name(h->aux), h->aux);
    named(o, "kind", gmt_kind_name(r->kind), r->kind);
    u64(o, "bytes", r->bytes);
    i64(o, "error", r->error);
    u64(o, "dt", r->dt);
    u64(o, "stack", r->stack_id);
    u64(o, "scope", r->scope_id);
    i64(o, "device", r->device);
    return sizeof *r;
}

static uint32_t fields_comm(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_comm *r = (const void *)h;
    hex(o, "comm", r->comm);
    hex(o, "parent", r->parent);
    hex(o, "unique_id_hash", r->unique_id_hash);
    i64(o, "rank", r->rank);
    i64(o, "nranks", r->nranks);
    i64(o, "device", r->device);
    u64(o, "dt", r->dt);
    return sizeof *r;
}

static uint32_t fields_scope_begin(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_scope_begin *r = (const void *)h;
    named(o, "op", gmt_op_name(h->aux), h->aux);
    u64(o, "scope", r->scope_id);
    u64(o, "parent", r->parent_id);
    u64(o, "dt", r->dt);
    u64(o, "stack", r->stack_id);
    hex(o, "comm", r->comm);
    u64(o, "count", r->count);
    hex(o, "stream", r->stream);
    i64(o, "datatype", r->datatype);
    i64(o, "peer", r->peer);
    return sizeof *r;
}

static uint32_t fields_scope_end(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_scope_end *r = (const void *)h;
    named(o, "op", gmt_op_name(h->aux), h->aux);
    u64(o, "scope", r->scope_id);
    u64(o, "dt", r->dt);
    i64(o, "result", r->result);
    if (h->size < GMT_SCOPE_CALL_MIN)
        return sizeof *r;
    /* (2.5) the call form: its begin's time and the fields that differ from the last */
    const struct gmt_rec_scope_call *c = (const void *)h;
    u64(o, "duration", r->duration);
    hex(o, "has", c->has);
    if (c->weight)
        u64(o, "weight", c->weight);
    uint32_t used = GMT_SCOPE_CALL_MIN;
    const uint64_t *f = c->field;
    if ((c->has & GMT_CALL_HAS_COMM) && used + 8 <= h->size) {
        hex(o, "comm", *f++);
        used += 8;
    }
    if ((c->has & GMT_CALL_HAS_COUNT) && used + 8 <= h->size) {
        u64(o, "count", *f++);
        used += 8;
    }
    if ((c->has & GMT_CALL_HAS_STREAM) && used + 8 <= h->size) {
        hex(o, "stream", *f++);
        used += 8;
    }
    if ((c->has & GMT_CALL_HAS_TYPE_PEER) && used + 8 <= h->size) {
        int32_t tp[2];
        memcpy(tp, f, sizeof tp);
        i64(o, "datatype", tp[0]);
        i64(o, "peer", tp[1]);
        used += 8;
    }
    return used;
}

static uint32_t fields_scope_open(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_scope_open *r = (const void *)h;
    named(o, "op", gmt_op_name(h->aux), h->aux);
    u64(o, "time_ns", r->time_ns);
    u64(o, "tid", r->tid);
    u64(o, "scope", r->scope_id);
    hex(o, "comm", r->comm);
    u64(o, "count", r->count);
    hex(o, "stream", r->stream);
    i64(o, "datatype", r->datatype);
    i64(o, "peer", r->peer);
    return sizeof *r;
}

static uint32_t fields_group_repeat(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_group_repeat *r = (const void *)h;
    u64(o, "scope", r->scope_id);
    u64(o, "count", r->count);
    u64(o, "like", r->like);
    return sizeof *r;
}

static uint32_t fields_meminfo(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_meminfo *r = (const void *)h;
    named(o, "phase", gmt_meminfo_phase_name(h->aux), h->aux);
    u64(o, "dt", r->dt);
    u64(o, "scope", r->scope_id);
    i64(o, "device", r->device);
    u64(o, "free", r->free_bytes);
    u64(o, "total", r->total_bytes);
    if (r->source)
        named(o, "source", gmt_meminfo_source_name(r->source), r->source);
    const struct gmt_rec_meminfo_ext *x = (const void *)h;
    if (h->size < sizeof *x)
        return sizeof *r;
    if (x->process_bytes != GMT_MEMINFO_UNKNOWN)
        u64(o, "process", x->process_bytes);
    const struct gmt_rec_meminfo_ext2 *x2 = (const void *)h;
    if (h->size < sizeof *x2)
        return sizeof *x;
    if (x2->other_bytes != GMT_MEMINFO_UNKNOWN)
        u64(o, "other", x2->other_bytes);
    u64(o, "other_count", x2->other_count);
    if (x2->other_pid)
        u64(o, "other_pid", x2->other_pid);
    return sizeof *x2;
}

static void stat_u64(FILE *o, const char *name, uint64_t v)
{
    if (v != GMT_MEMSTATS_UNKNOWN)
        u64(o, name, v);
}

static uint32_t fields_nccl_memstats(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_nccl_memstats *r = (const void *)h;
    named(o, "phase", gmt_memstats_phase_name(h->aux), h->aux);
    u64(o, "time", r->time_ns);
    hex(o, "comm", r->comm);
    stat_u64(o, "suspend", r->suspend_bytes);
    stat_u64(o, "suspended", r->suspended);
    stat_u64(o, "persist", r->persist_bytes);
    stat_u64(o, "total", r->total_bytes);
    u64(o, "scope", r->scope_id);
    i64(o, "device", r->device);
    return sizeof *r;
}

static uint32_t fields_modload(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_modload *r = (const void *)h;
    named(o, "api", gmt_modload_api_name(h->aux), h->aux);
    u64(o, "time", r->time_ns);
    u64(o, "duration", r->duration);
    i64(o, "device", r->device);
    i64(o, "result", r->result);
    u64(o, "scope", r->scope_id);
    u64(o, "free_before", r->free_before);
    u64(o, "free_after", r->free_after);
    u64(o, "total", r->total_bytes);
    hex(o, "handle", r->handle);
    return sizeof *r;
}

static uint32_t fields_devlimits(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_devlimits *r = (const void *)h;
    named(o, "phase", gmt_meminfo_phase_name(h->aux), h->aux);
    i64(o, "device", r->device);
    u64(o, "scope", r->scope_id);
    if (r->stack_bytes != GMT_LIMIT_UNKNOWN)
        u64(o, "stack", r->stack_bytes);
    if (r->printf_fifo_bytes != GMT_LIMIT_UNKNOWN)
        u64(o, "printf_fifo", r->printf_fifo_bytes);
    if (r->malloc_heap_bytes != GMT_LIMIT_UNKNOWN)
        u64(o, "malloc_heap", r->malloc_heap_bytes);
    u64(o, "sms", r->sm_count);
    u64(o, "threads_per_sm", r->max_threads_per_sm);
    return sizeof *r;
}

static uint32_t fields_graphmem(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_graphmem *r = (const void *)h;
    named(o, "phase", gmt_graphmem_phase_name(h->aux), h->aux);
    u64(o, "time_ns", r->time_ns);
    i64(o, "device", r->device);
    u64(o, "used", r->used_current);
    u64(o, "used_high", r->used_high);
    u64(o, "reserved", r->reserved_current);
    u64(o, "reserved_high", r->reserved_high);
    return sizeof *r;
}

static uint32_t fields_block(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_block *r = (const void *)h;
    named(o, "op", gmt_block_op_name(h->aux), h->aux);
    u64(o, "time_ns", r->time_ns);
    hex(o, "address", r->address);
    i64(o, "size", r->size);
    u64(o, "allocated", r->total_allocated);
    u64(o, "reserved", r->total_reserved);
    u64(o, "stack", r->stack_id);
    i64(o, "device_type", r->device_type);
    i64(o, "device", r->device_index);
    return sizeof *r;
}

static uint32_t fields_nccl_coll_info(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_nccl_coll_info *r = (const void *)h;
    named(o, "op", gmt_op_name(h->aux), h->aux);
    u64(o, "time_ns", r->time_ns);
    named(o, "kind", r->kind == GMT_NCCL_INFO_COLL ? "coll" : r->kind == GMT_NCCL_INFO_P2P ? "p2p" : "?",
          r->kind);
    u64(o, "scope", r->scope_id);
    hex(o, "comm_hash", r->comm_hash);
    hex(o, "context", r->context);
    i64(o, "rank", r->rank);
    u64(o, "seq", r->seq);
    u64(o, "count", r->count);
    i64(o, "datatype", r->datatype);
    i64(o, r->kind == GMT_NCCL_INFO_P2P ? "peer" : "root", r->root);
    named(o, "algo", gmt_nccl_algo_name(r->algo), r->algo);
    named(o, "proto", gmt_nccl_proto_name(r->proto), r->proto);
    u64(o, "nchannels", r->nchannels);
    u64(o, "nwarps", r->nwarps);
    return sizeof *r;
}

static uint32_t fields_nvtx_string(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_nvtx_string *r = (const void *)h;
    named(o, "kind", gmt_nvtx_string_kind_name(h->aux), h->aux);
    u64(o, "id", r->id);
    str(o, "string", (const char *)(r + 1), r->len);
    return (uint32_t)sizeof *r + r->len;
}

static uint32_t fields_nvtx_range(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_nvtx_range *r = (const void *)h;
    named(o, "op", gmt_nvtx_op_name(h->aux), h->aux);
    u64(o, "time_ns", r->time_ns);
    u64(o, "domain", r->domain);
    u64(o, "name", r->name);
    const struct gmt_rec_nvtx_range_ext *x = (const void *)h;
    if (h->size < sizeof *x)
        return sizeof *r;
    u64(o, "range_id", x->range_id);
    return sizeof *x;
}

static uint32_t fields_end(FILE *o, const struct gmt_rec *h)
{
    const struct gmt_rec_end *r = (const void *)h;
    u64(o, "time_ns", r->time_ns);
    u64(o, "records_dropped", r->records_dropped);
    return sizeof *r;
}

/* A record of a type this dump does not know: its header. */
static uint32_t fields_unknown(FILE *o, const struct gmt_rec *h)
{
    u64(o, "type", h->type);
    u64(o, "aux", h->aux);
    u64(o, "size", h->size);
    return h->size;
}

static uint32_t (*const field_printers[])(FILE *o, const struct gmt_rec *h) = {
    [GMT_REC_PROCESS] = fields_process,
    [GMT_REC_ENV] = fields_env,
    [GMT_REC_VERSION] = fields_version,
    [GMT_REC_MODULE_LOAD] = fields_module_load,
    [GMT_REC_MODULE_UNLOAD] = fields_module_unload,
    [GMT_REC_CHUNK] = fields_chunk,
    [GMT_REC_THREAD] = fields_thread,
    [GMT_REC_TIME] = fields_time,
    [GMT_REC_STACK] = fields_stack,
    [GMT_REC_CUCTX] = fields_cuctx,
    [GMT_REC_PYCODE] = fields_pycode,
    [GMT_REC_ALLOC] = fields_alloc,
    [GMT_REC_ALLOC_SMALL] = fields_alloc_small,
    [GMT_REC_FREE] = fields_free,
    [GMT_REC_ALLOC_FAIL] = fields_alloc_fail,
    [GMT_REC_COMM] = fields_comm,
    [GMT_REC_SCOPE_BEGIN] = fields_scope_begin,
    [GMT_REC_SCOPE_END] = fields_scope_end,
    [GMT_REC_GROUP_REPEAT] = fields_group_repeat,
    [GMT_REC_MEMINFO] = fields_meminfo,
    [GMT_REC_GRAPHMEM] = fields_graphmem,
    [GMT_REC_NCCL_COLL_INFO] = fields_nccl_coll_info,
    [GMT_REC_NVTX_STRING] = fields_nvtx_string,
    [GMT_REC_NVTX_RANGE] = fields_nvtx_range,
    [GMT_REC_SCOPE_OPEN] = fields_scope_open,
    [GMT_REC_BLOCK] = fields_block,
    [GMT_REC_DEVLIMITS] = fields_devlimits,
    [GMT_REC_NCCL_MEMSTATS] = fields_nccl_memstats,
    [GMT_REC_MODLOAD] = fields_modload,
    [GMT_REC_END] = fields_end,
};

/* Prints the fields of a record, returns how many bytes of it they cover. */
static uint32_t fields(FILE *o, const struct gmt_rec *h)
{
    size_t n = sizeof field_printers / sizeof field_printers[0];
    if (h->type < n && field_printers[h->type])
        return field_printers[h->type](o, h);
    return fields_unknown(o, h);
}

void gmt_dump_line(FILE *o, const struct gmt_event *ev, const struct gmt_reader *r)
{
    const struct gmt_rec *h = ev->rec;
    const struct gmt_rec_process *proc = gmt_reader_process(r);
    char t[GMT_FMT_LEN] = "-";
    /* a GROUP_REPEAT's time is its thread's clock, which the record before shows */
    if (ev->time_ns && h->type != GMT_REC_PROCESS && h->type != GMT_REC_GROUP_REPEAT) {
        gmt_fmt_since(t, sizeof t, ev->time_ns, proc ? proc->monotonic_ns : 0);
    } else if (h->type == GMT_REC_PROCESS) {
        gmt_fmt_seconds(t, sizeof t, 0);
    }
    char tid[16] = "-";
    if (ev->tid)
        snprintf(tid, sizeof tid, "%u", ev->tid);
    const char *name = gmt_rec_type_name(h->type);
    fprintf(o, "%10" PRIu64 " %7s %15s %-13s", ev->offset, tid, t,
            strcmp(name, "?") ? name : "UNKNOWN");
    uint32_t used = fields(o, h);
    if (gmt_rec_padded(used) < h->size)
        u64(o, "extra", h->size - gmt_rec_padded(used));
    putc('\n', o);
}

/* What a cut note says of an expanded trace: the file's own offset and records. */
static int dump_one(const char *path, bool expand)
{
    struct gmt_reader *r;
    char err[512];
    uint8_t *buf = NULL;
    struct gmt_file_end fe = {0};
    bool in = path[0] == '-' && path[1] == 0;
    int rc = in && expand ? (snprintf(err, sizeof err, "dump: --expand needs a file, not '-'"), -1)
             : in         ? gmt_reader_fopen(&r, stdin, "(stdin)", err, sizeof err)
             : expand     ? gmt_trace_open_expanded(&r, path, &buf, &fe, err, sizeof err)
                          : gmt_reader_open(&r, path, err, sizeof err);
    if (rc < 0) {
        gmt_err("%s", err);
        free(buf);
        return GMT_EXIT_ERROR;
    }
    if (fe.lost)
        gmt_err("%s: %" PRIu64 " records of repeated groups and calls could not be "
                "restored", path, fe.lost);
    printf("%10s %7s %15s %s\n", "OFFSET", "TID", "TIME", "TYPE / FIELDS");
    struct gmt_event ev;
    while ((rc = gmt_reader_next(r, &ev, err, sizeof err)) > 0) {
        gmt_dump_line(stdout, &ev, r);
        /* Stop at once on a dead output instead of decoding gigabytes into it. */
        if (ferror(stdout))
            break;
    }
    uint64_t cut;
    if (rc < 0) {
        gmt_err("%s", err);
        rc = GMT_EXIT_ERROR;
    } else if (gmt_reader_cut(r, &cut)) {
        gmt_err("%s: trace cut at offset %" PRIu64 " after %" PRIu64 " records",
                gmt_reader_path(r), fe.expanded ? fe.cut_offset : cut,
                fe.expanded ? fe.records : gmt_reader_records(r));
        rc = GMT_EXIT_OK;
    } else if (!gmt_reader_complete(r) && !ferror(stdout)) {
        gmt_err("%s: trace cut at offset %" PRIu64 " after %" PRIu64
                " records (no END record)", gmt_reader_path(r),
                fe.expanded ? fe.end : gmt_reader_offset(r),
                fe.expanded ? fe.records : gmt_reader_records(r));
        rc = GMT_EXIT_OK;
    } else {
        rc = GMT_EXIT_OK;
    }
    gmt_reader_close(r);
    free(buf);
    return rc;
}

/* Options first or mixed with files; after "--" every argument is a file. */
static int is_file_arg(const char *a, int *opts)
{
    if (*opts && strcmp(a, "--") == 0) {
        *opts = 0;
        return 0;
    }
    return !(*opts && a[0] == '-' && a[1] != 0);
}

int gmt_cmd_dump(int argc, char **argv)
{
    int nfiles = 0, opts = 1;
    bool expand = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (is_file_arg(a, &opts)) {
            nfiles++;
            continue;
        }
        if (!opts && strcmp(a, "--") == 0)
            continue;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(gmt_help_dump, stdout);
            return GMT_EXIT_OK;
        }
        if (strcmp(a, "--expand") == 0) {
            expand = true;
            continue;
        }
        return gmt_cli_usage_error("dump", "unknown option '%s'", a);
    }
    if (nfiles == 0)
        return gmt_cli_usage_error("dump", "no trace file given");
    int status = GMT_EXIT_OK, shown = 0;
    if (gmt_safe_stdout())
        return GMT_EXIT_ERROR;
    /* the file operands, a directory standing for the traces in it */
    char **ops = malloc((size_t)nfiles * sizeof *ops);
    if (!ops) {
        gmt_err("gpumemtrace: out of memory");
        return GMT_EXIT_ERROR;
    }
    int k = 0;
    opts = 1;
    for (int i = 1; i < argc; i++)
        if (is_file_arg(argv[i], &opts))
            ops[k++] = argv[i];
    char **files = NULL;
    size_t n = 0;
    struct gmt_msgs msgs = GMT_MSGS_INIT;
    int r = gmt_expand_paths(ops, (size_t)k, &files, &n, &msgs);
    free(ops);
    gmt_msgs_print(&msgs, stderr);
    if (r)
        status = GMT_EXIT_ERROR;
    for (size_t i = 0; i < n && !ferror(stdout); i++) {
        if (n > 1)
            printf("%s==> %s <==\n", shown++ ? "\n" : "", gmt_one_line(files[i]));
        int rc = dump_one(files[i], expand);
        if (rc > status)
            status = rc;
    }
    gmt_free_paths(files, n);
    return status;
}
