/* trace.h: a whole trace loaded into memory: metadata tables plus a time-sorted event list. */
#ifndef GMT_TRACE_H
#define GMT_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"
#include "u64map.h"

struct gmt_module {
    uint32_t id;
    char *path;
    uint8_t *build_id;
    uint32_t build_id_len;
    uint64_t bias, start, end;
    uint64_t t_load, t_unload; /* ns; t_unload 0 while loaded */
};

struct gmt_stack {
    uint32_t depth;
    uint64_t *ip;              /* NULL when the trace never defined this id */
};

struct gmt_thread {
    uint32_t tid;
    char name[GMT_THREAD_NAME_LEN + 1];
};

struct gmt_comm {
    uint64_t comm, parent, unique_id_hash;
    int32_t rank, nranks, device;
};

/* Device memory sampled around a scope (MEMINFO), valid when has_mem_*. */
struct gmt_scope_mem {
    bool has_mem_before, has_mem_after;
    uint64_t used_before, used_after, total; /* bytes */
};

/* One NCCL call or group, from SCOPE_BEGIN to SCOPE_END. There are as many as collective
 * calls (about a million in a long run), and several passes stream through them: what
 * few have (MEMINFO samples) lies aside, and the record's stream is not kept. */
struct gmt_scope {
    uint32_t id, parent_id, stack_id, tid;
    uint64_t offset;           /* of its SCOPE_BEGIN record in the file */
    uint64_t comm, count;
    uint64_t t_begin, t_end;   /* ns; t_end 0 when it never ended (cut trace) */
    int32_t datatype, peer, result;
    uint32_t mem;              /* index + 1 in gmt_trace.scope_mem; 0 none sampled */
    uint16_t op;
    int16_t device;            /* from its communicator, or the thread's context; -1 unknown */
    bool ended;
};

enum gmt_ev_type { GMT_EV_ALLOC = 1, GMT_EV_FREE, GMT_EV_FAIL, GMT_EV_MEMINFO,
                   GMT_EV_SCOPE_BEGIN, GMT_EV_SCOPE_END };

/* A time-ordered event, decoded from its record when the replay asks for it (events are
 * never stored for the whole trace). Field use by type:
 *   ALLOC:   addr, bytes, kind, api, stack, scope, device
 *   FREE:    addr, api, scope, device
 *   FAIL:    bytes, kind, api, stack, scope, device, error
 *   MEMINFO: addr = free bytes, bytes = total bytes, scope, device, phase in kind
 *   SCOPE_*: scope = index into gmt_trace.scopes (not the id) */
struct gmt_ev {
    uint64_t time;
    uint64_t addr;
    uint64_t bytes;
    uint32_t tid;
    uint32_t stack;
    uint32_t scope;
    int32_t error;
    int16_t device;
    uint16_t api;
    uint8_t type;
    uint8_t kind;
};

struct gmt_reader;
struct gmt_tstream;            /* one thread's records: its chunks, in file order (trace.c) */
struct gmt_run;                /* a stretch of a thread's events in time order (trace.c) */

struct gmt_trace {
    char *path;
    struct gmt_rec_process proc;
    bool has_proc;
    char *host;
    char *cmdline;             /* arguments joined by spaces */
    char **env; size_t n_env;
    int32_t version[4];        /* by enum gmt_component; 0 unknown */
    struct gmt_module *modules; size_t n_modules;
    struct gmt_stack *stacks; size_t n_stacks;      /* indexed by stack id */
    struct gmt_thread *threads; size_t n_threads;
    struct gmt_comm *comms; size_t n_comms;
    struct gmt_scope *scopes; size_t n_scopes;
    size_t scopes_reserved;    /* bytes of address space reserved for scopes (gmt_reserve);
                                * 0 when they are malloc'd */
    struct gmt_scope_mem *scope_mem; size_t n_scope_mem; /* by gmt_scope.mem - 1 */
    /* The file's bytes stay in memory (mapped) after loading: events are decoded from
     * them in time order by merging the threads' runs (gmt_trace_iter_*). */
    struct gmt_reader *reader;
    uint8_t *image_buf;        /* the image when it was read from a pipe, else NULL */
    const uint8_t *image; size_t image_len;
    struct gmt_tstream *streams; size_t n_streams;
    struct gmt_run *runs; size_t n_runs;
    uint64_t n_events;         /* events the iteration yields */
    bool scope_dups;           /* two SCOPE_BEGINs share an id (a corrupt file): */
    struct gmt_u64map scope_at; /* then SCOPE_* record offset -> scope index + 1 */
    uint64_t t_first, t_last;  /* ns, over all timed records */
    uint64_t records;
    bool complete;             /* END seen */
    bool cut;                  /* the file ended inside a record */
    uint64_t cut_offset;
    uint64_t records_dropped;
    struct gmt_u64map scope_by_id; /* scope id -> index in scopes */
    uint32_t *scope_dense; size_t n_scope_dense; /* the same for small ids: index + 1, 0 none */
};

/* Loads a trace. Returns 0, or -1 with a one-line message in err. */
int gmt_trace_load(struct gmt_trace *t, const char *path, char *err, size_t errlen);
void gmt_trace_free(struct gmt_trace *t);

const struct gmt_comm *gmt_trace_comm(const struct gmt_trace *t, uint64_t comm);
const struct gmt_scope *gmt_trace_scope_by_id(const struct gmt_trace *t, uint32_t id);
/* The device memory sampled around scope s, or NULL when none was. */
const struct gmt_scope_mem *gmt_trace_scope_mem(const struct gmt_trace *t,
                                                const struct gmt_scope *s);
/* Index in t->scopes of scope `id`, or -1. */
long gmt_trace_scope_index(const struct gmt_trace *t, uint32_t id);
const char *gmt_trace_thread_name(const struct gmt_trace *t, uint32_t tid);
const struct gmt_module *gmt_trace_module_at(const struct gmt_trace *t, uint64_t ip);
/* An environment variable recorded in the trace, or NULL. */
const char *gmt_trace_env(const struct gmt_trace *t, const char *name);

/* The trace's events in time order (ties in file order), decoded in batches from the
 * file's image. new returns NULL when out of memory; next fills up to max events and
 * returns how many, 0 at the end. */
struct gmt_ev_iter;
struct gmt_ev_iter *gmt_trace_iter_new(const struct gmt_trace *t);
size_t gmt_trace_iter_next(struct gmt_ev_iter *it, struct gmt_ev *out, size_t max);
void gmt_trace_iter_free(struct gmt_ev_iter *it);

#endif
