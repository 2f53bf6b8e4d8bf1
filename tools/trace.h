/* trace.h: a whole trace loaded into memory: metadata tables plus a time-sorted event list. */
#ifndef GMT_TRACE_H
#define GMT_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader.h"
#include "trace_format.h"
#include "u64map.h"

/* The largest size the CLI believes, of one allocation, one device or the memory live
 * on a device at once: 2^56 bytes (64 PiB). A trace with more is corrupt (docs/
 * trace-format.md, the reader); every sum of such sizes then fits in 64 bits. */
#define GMT_BYTES_MAX (1ull << 56)

/* The latest time the CLI believes: 2^62 ns of CLOCK_MONOTONIC (146 years of uptime).
 * A trace with a later one (the PROCESS anchor, or any record's time) is corrupt
 * (gmt_trace_load says where); the difference and the sum of any two times then fit
 * in an int64_t. */
#define GMT_TIME_MAX (1ull << 62)

/* The highest device ordinal the CLI believes: CUDA numbers a process's devices from 0,
 * and none has thousands. A record's ordinal outside 0..GMT_DEVICE_MAX is read as -1
 * (unknown; for an ALLOC, its thread's context's), so that none overflows a sum or an
 * int16_t on its way. */
#define GMT_DEVICE_MAX 4095
static inline int gmt_device_ordinal(int64_t d)
{
    return d >= 0 && d <= GMT_DEVICE_MAX ? (int)d : -1;
}

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

/* A Python code object (PYCODE), which Python frames in stacks name by id. */
struct gmt_pycode {
    char *name, *qualname, *file; /* NULL when the trace never defined this id */
    int32_t firstlineno;
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
 * calls (about a million in a long run), and several passes stream through them, and
 * each is fresh memory the kernel zeroes: 64 bytes. What few have (MEMINFO samples) lies
 * aside (gmt_trace_scope_mem), what only the first call of a collective or an init
 * shows stays in its record (gmt_trace_scope_stack, gmt_trace_scope_peer), the record's stream is
 * not kept, and whether it ended is t_end and result (0 until then). */
struct gmt_scope {
    uint32_t id, parent_id, tid;
    int32_t result;            /* its SCOPE_END's; 0 while it has none */
    uint64_t offset;           /* of its SCOPE_BEGIN record in the file */
    uint64_t comm, count;
    uint64_t t_begin, t_end;   /* ns; t_end 0 when it never ended (cut trace) */
    int32_t datatype;
    uint8_t op;
    uint8_t host_weight;       /* the calls its host time stands for: a call form timed at
                                * a rate (format 2.5) more than 1; 0 read as 1 */
    int16_t device;            /* from its communicator, or the thread's context; -1 unknown */
};

enum gmt_timed_type { GMT_EV_ALLOC = 1, GMT_EV_FREE, GMT_EV_FAIL, GMT_EV_MEMINFO,
                   GMT_EV_SCOPE_BEGIN, GMT_EV_SCOPE_END };

/* A time-ordered event, decoded from its record when the replay asks for it (events are
 * never stored for the whole trace); the reader's struct gmt_event is a record as it
 * lies in the file, this is what it means in the replay's time order. Field use by type:
 *   ALLOC:   addr, bytes, kind, api, stack, scope, device; a MAPPING's error is the
 *            digest of the handle it maps (gmt_handle_digest), 0 unknown
 *   FREE:    addr, api, scope, device
 *   FAIL:    bytes, kind, api, stack, scope, device, error
 *   MEMINFO: addr = free bytes, bytes = total bytes, scope, device, phase in kind,
 *            source (enum gmt_meminfo_source) in api
 *   SCOPE_*: scope = the scope's index (gmt_trace_scope; not the id) */
struct gmt_timed_event {
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

/* What the device itself said, in time order: the MEMINFO samples that carry a
 * per-process figure (NVML's), and every GRAPHMEM. Kept beside the events, not among
 * them: few, and read once, after the replay's walk (replay.c's device_samples). */
struct gmt_proc_sample {
    uint64_t time;
    uint64_t process_bytes;    /* this process's device memory */
    int16_t device;
    uint32_t other_count;      /* (2.6) other processes NVML listed on the device */
    uint64_t other_bytes;      /* (2.6) their device memory, GMT_MEMINFO_UNKNOWN unknown */
    uint32_t other_pid;        /* (2.8) the pid of the one using the most, 0 unknown */
};
/* (2.6) A DEVLIMITS record with the cuMemGetInfo sample it follows, in file order. */
struct gmt_limits_sample {
    uint64_t time;
    uint64_t used;             /* the device's used bytes in that sample; 0 none paired */
    uint64_t stack, fifo, heap; /* bytes; GMT_LIMIT_UNKNOWN unknown */
    uint32_t sms, threads_per_sm; /* 0 unknown */
    uint32_t scope;
    int16_t device;
    uint8_t phase;             /* enum gmt_meminfo_phase */
};
/* (2.7) NCCL_MEMSTATS: NCCL's own count of a communicator's device memory, in file order.
 * Each value GMT_MEMSTATS_UNKNOWN where NCCL did not answer (or the trace's was past
 * GMT_BYTES_MAX). */
struct gmt_memstats_note {
    uint64_t time, comm;
    uint64_t suspend, suspended, persist, total;
    uint32_t scope;
    int16_t device;
    uint8_t phase;             /* enum gmt_memstats_phase */
};
/* (2.7) MODLOAD: one explicit module or library load and the device used around it. */
struct gmt_modload_note {
    uint64_t time;             /* after the load */
    uint64_t used_before, used_after; /* bytes; both 0 when the samples made no sense */
    uint32_t duration, scope;
    int32_t result;
    int16_t device;
    uint8_t api;               /* enum gmt_modload_api */
};
struct gmt_graph_sample {
    uint64_t time;
    uint64_t used_high, reserved; /* GRAPHMEM's used_high and reserved_current */
    int16_t device;
};

/* What NCCL chose for one collective or send/receive it launched (NCCL_COLL_INFO), in
 * time order. `comm` is the communicator it was tied to (gmt_trace_load: the scope in
 * flight on its thread names it, else the COMM whose ncclComm holds `context`), 0 none. */
struct gmt_nccl_choice {
    uint64_t time;
    uint64_t comm, comm_hash, context, seq, count;
    uint32_t scope_id;         /* the NCCL call in flight on its thread, 0 none */
    int32_t rank, root;
    int16_t datatype;
    uint16_t op;               /* enum gmt_op */
    uint8_t algo, proto, nchannels, nwarps, kind;
};

/* An NVTX record (NVTX_STRING, NVTX_RANGE), whole in the image: phases.c reads them. */
struct gmt_nvtx_note {
    uint64_t offset;           /* of the record in the image */
    uint64_t time;             /* NVTX_RANGE's time_ns; 0 for NVTX_STRING */
    uint32_t tid;
};

/* A block of PyTorch's caching allocator (BLOCK), in file order (blocks.c sorts them). */
struct gmt_block_note {
    uint64_t time;
    uint64_t addr;             /* OOM: 0 */
    int64_t size;              /* as recorded: + ALLOC, - FREE, the request (OOM) */
    uint64_t allocated, reserved; /* the allocator's totals on the device after it */
    uint32_t stack, tid;
    int16_t device;            /* device_index; -1 the current one */
    uint8_t op;                /* enum gmt_block_op */
};

/* A GROUP_REPEAT whose members were restored: their scopes are the `count` indices from
 * first_scope on (in order), made on demand (gmt_trace_scope) from the template they
 * repeat, rep_tmpl[origin_at] onwards, whose SCOPE_BEGINs lie at rep_origin[origin_at]
 * onwards. The count is the loader's, not read again from the record: a file changed
 * since loading cannot take the iteration past the scopes. */
struct gmt_rep_note {
    uint64_t first_scope;      /* index of its first member */
    uint64_t stored_before;    /* the scopes t->scopes holds before it */
    uint64_t origin_at;
    uint64_t offset;           /* of its GROUP_REPEAT */
    uint64_t time;             /* ns: its members begin and end then */
    uint64_t group;            /* the index of scope group_id (gmt_trace_finish_scopes) */
    uint32_t count, group_id, tid;
    int16_t device;            /* its thread's context's device then, -1 unknown */
};
/* A member of the group a repeat stands for, as its SCOPE_BEGIN and SCOPE_END said. */
struct gmt_rep_tmpl {
    uint64_t comm, count;
    int32_t datatype, result;
    int16_t device;            /* its communicator's, -1 unknown (gmt_trace_finish_scopes) */
    uint8_t op;
};

struct gmt_reader;
struct gmt_tstream;            /* one thread's records: its chunks, in file order (trace_runs.h) */
struct gmt_run;                /* a stretch of a thread's events in time order (trace_runs.h) */

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
    struct gmt_pycode *pycodes; size_t n_pycodes;   /* indexed by PYCODE id */
    struct gmt_thread *threads; size_t n_threads;
    struct gmt_comm *comms; size_t n_comms;
    /* Scopes are numbered in file order, 0 to n_scopes: the ones read from SCOPE_BEGIN
     * records are stored (n_stored, in order), the members of repeated groups are not
     * (gmt_trace_scope makes them from their note) */
    size_t n_scopes;
    struct gmt_scope *scopes; size_t n_stored;
    size_t scopes_reserved;    /* bytes of address space reserved for scopes (gmt_reserve);
                                * 0 when they are malloc'd */
    struct gmt_scope_mem *scope_mem; size_t n_scope_mem;
    struct gmt_u64map scope_mem_of; /* scope index -> index in scope_mem + 1 */
    size_t scope_mem_lo, scope_mem_hi; /* the scope indices in it lie in [lo, hi) */
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
    struct gmt_u64map scope_by_id; /* stored scope id -> index in t->scopes */
    uint32_t *scope_dense; size_t n_scope_dense; /* the same for small ids: index + 1, 0 none */
    size_t scope_dense_reserved; /* bytes of address space reserved for it; 0: malloc'd */
    struct gmt_proc_sample *proc_samples; size_t n_proc_samples;
    struct gmt_limits_sample *limits; size_t n_limits; /* in file order */
    struct gmt_graph_sample *graph_samples; size_t n_graph_samples;
    struct gmt_nccl_choice *choices; size_t n_choices; /* NCCL_COLL_INFO, by time */
    struct gmt_nvtx_note *nvtx; size_t n_nvtx; /* in file order */
    struct gmt_block_note *blocks; size_t n_blocks; /* BLOCK records, in file order */
    /* Repeated groups (GROUP_REPEAT) that stood: their members' scopes lie at the
     * record's offset, which rep_at maps to its note + 1 (trace_load.c, trace_iter.c) */
    struct gmt_u64map rep_at;
    struct gmt_rep_note *reps; size_t n_reps;
    uint32_t *rep_by_id;       /* the notes' indices by group id */
    uint64_t *rep_origin; size_t n_rep_origin, cap_rep_origin; /* SCOPE_BEGIN offsets */
    struct gmt_rep_tmpl *rep_tmpl; /* as many */
    struct gmt_u64map member_comm; /* a member's communicator its COMM record named (an
                                    * init inside a group): index -> comm */
    /* trace_load_memstats.c's: (2.7) NCCL_MEMSTATS and MODLOAD records, in file order */
    struct gmt_memstats_note *memstats; size_t n_memstats, cap_memstats;
    struct gmt_modload_note *modloads; size_t n_modloads, cap_modloads;
};

/* A trace's image (len bytes at img, 8-byte aligned) with every GROUP_REPEAT replaced by
 * the member records it stands for, every SCOPE_END in call form by its SCOPE_BEGIN and
 * plain SCOPE_END, and every SCOPE_OPEN dropped (the begin of a call it names restored
 * before END, or after the last whole record, when the file has none), into *out
 * (malloc'd, 8-byte aligned): 0, -ENOMEM, or -1 with the reader's one-line message in
 * err. What follows the last whole record (a cut one) is copied as it is. *records and
 * *cut_offset (UINT64_MAX: not cut) are the file's own; *lost counts the records that
 * could not be restored (their groups are not in the file; a call form lacks a field
 * with no call form before it, or is malformed). For `dump --expand`: gmt_trace_load
 * uses gmt_trace_expand_calls below for a trace that needs it. */
int gmt_trace_expand(const uint8_t *img, size_t len, const char *path, uint8_t **out,
                     size_t *out_len, uint64_t *records, uint64_t *cut_offset, uint64_t *lost,
                     char *err, size_t errlen);
/* The same with each GROUP_REPEAT kept as it is: the loader restores their members
 * itself, as it meets them, and the iteration hands out their events from the record
 * (trace_repeat.h), so that the image stays the size of the file. */
int gmt_trace_expand_calls(const uint8_t *img, size_t len, const char *path, uint8_t **out,
                           size_t *out_len, uint64_t *records, uint64_t *cut_offset,
                           uint64_t *lost, char *err, size_t errlen);

/* gmt_reader_open on a file expanded as gmt_trace_expand does: the reader reads *buf,
 * which the caller frees after gmt_reader_close; *fe says what the file itself holds (its
 * records, where it was cut, its end) and the records lost. 0, or -1 with a one-line
 * message in err. */
struct gmt_file_end {
    bool expanded;
    uint64_t records, cut_offset, end, lost;
};
int gmt_trace_open_expanded(struct gmt_reader **r, const char *path, uint8_t **buf,
                            struct gmt_file_end *fe, char *err, size_t errlen);

/* Loads a trace. Returns 0, or -1 with a one-line message in err. */
int gmt_trace_load(struct gmt_trace *t, const char *path, char *err, size_t errlen);
void gmt_trace_free(struct gmt_trace *t);
/* trace_load_memstats.c: the loader's handlers of NCCL_MEMSTATS and MODLOAD (rec, its time
 * is its own): 0 or -ENOMEM. */
int gmt_load_memstats(struct gmt_trace *t, const struct gmt_rec *rec);
int gmt_load_modload(struct gmt_trace *t, const struct gmt_rec *rec);


/* Inline: the loader asks both once per scope, and there are as many scopes as calls. */
static inline const struct gmt_comm *gmt_trace_comm(const struct gmt_trace *t, uint64_t comm)
{
    for (size_t i = 0; comm && i < t->n_comms; i++)
        if (t->comms[i].comm == comm)
            return &t->comms[i];
    return NULL;
}

/* Where scope i lies: its index in t->scopes (>= 0), or for a member of a repeated group
 * -1 - its note's index in t->reps, with its place among the members in *j. */
long gmt_scope_slot_slow(const struct gmt_trace *t, size_t i, uint32_t *j);
static inline long gmt_scope_slot(const struct gmt_trace *t, size_t i, uint32_t *j)
{
    return t->n_reps ? gmt_scope_slot_slow(t, i, j) : (long)i;
}
/* The index of t->scopes[k]. */
size_t gmt_scope_index_of_stored_slow(const struct gmt_trace *t, size_t k);
static inline size_t gmt_scope_index_of_stored(const struct gmt_trace *t, size_t k)
{
    return t->n_reps ? gmt_scope_index_of_stored_slow(t, k) : k;
}
/* Index in t->scopes of the stored scope `id`, or -1. */
static inline long gmt_trace_stored_index(const struct gmt_trace *t, uint32_t id)
{
    if (id < t->n_scope_dense && t->scope_dense[id])
        return (long)t->scope_dense[id] - 1;
    const uint64_t *idx = gmt_u64map_get(&t->scope_by_id, id);
    return idx ? (long)*idx : -1;
}
/* The index of the member of a repeated group whose id is `id`, or -1. */
long gmt_trace_member_index(const struct gmt_trace *t, uint32_t id);

/* The index of scope s's parent (s is scope i), or -1: for a repeated group's member, its
 * note's group, looked up once. */
long gmt_trace_parent_index_slow(const struct gmt_trace *t, size_t i, uint32_t parent_id);
#define gmt_trace_parent_index(t, i, s)                                                   \
    ((s)->parent_id ? gmt_trace_parent_index_slow((t), (i), (s)->parent_id) : -1L)

/* Index of scope `id` (a stored one when a member has its id too: a corrupt file), or -1. */
static inline long gmt_trace_scope_index(const struct gmt_trace *t, uint32_t id)
{
    long k = gmt_trace_stored_index(t, id);
    if (k >= 0)
        return (long)gmt_scope_index_of_stored(t, (size_t)k);
    return t->n_reps ? gmt_trace_member_index(t, id) : -1;
}

/* The calls scope s's host time stands for: 0 when it was not timed (it begins and ends
 * at one instant: a group member written the short way, a loop call written in call form
 * whose begin the library did not time; or it never ended), else its weight (1, or the
 * rate a call form was sampled at: docs/trace-format.md, SCOPE_END). */
static inline unsigned gmt_scope_weight(const struct gmt_scope *s)
{
    return s->t_end > s->t_begin ? (s->host_weight > 1 ? s->host_weight : 1) : 0;
}

/* Communicators by order of appearance, from 1 (0: not in the trace), to tell rows of
 * two apart. */
int gmt_trace_comm_index(const struct gmt_trace *t, uint64_t comm);

/* Scope i (0 <= i < n_scopes): where the trace keeps it, or, for a member of a repeated
 * group, made into *tmp from its GROUP_REPEAT's note (valid while tmp is). */
const struct gmt_scope *gmt_trace_scope_slow(const struct gmt_trace *t, size_t i,
                                             struct gmt_scope *tmp);
static inline const struct gmt_scope *gmt_trace_scope(const struct gmt_trace *t, size_t i,
                                                      struct gmt_scope *tmp)
{
    return t->n_reps ? gmt_trace_scope_slow(t, i, tmp) : &t->scopes[i];
}
/* Scope `id` (its latest), as gmt_trace_scope gives it; NULL when there is none. */
const struct gmt_scope *gmt_trace_scope_by_id(const struct gmt_trace *t, uint32_t id,
                                              struct gmt_scope *tmp);
/* The device memory sampled around scope i, or NULL when none was. */
const struct gmt_scope_mem *gmt_trace_scope_mem(const struct gmt_trace *t, size_t i);
/* Fields of scope s's SCOPE_BEGIN that only a few rows show, read from the record. */
uint32_t gmt_trace_scope_stack(const struct gmt_trace *t, const struct gmt_scope *s);
int32_t gmt_trace_scope_peer(const struct gmt_trace *t, const struct gmt_scope *s);
const char *gmt_trace_thread_name(const struct gmt_trace *t, uint32_t tid);
const struct gmt_module *gmt_trace_module_at(const struct gmt_trace *t, uint64_t ip);
/* An environment variable recorded in the trace, or NULL. */
const char *gmt_trace_env(const struct gmt_trace *t, const char *name);
/* The job the process belongs to, as "KIND:ID" (run:…, torchelastic:…, slurm:…,
 * openmpi:…, pmix:…) into buf: GPUMEMTRACE_JOB_ID, which `gpumemtrace run` sets, else
 * the launcher's; NULL when the trace names none. */
const char *gmt_trace_job_id(const struct gmt_trace *t, char *buf, size_t len);
/* The same from "NAME=value" strings (an ENV record's), n_env of them. */
const char *gmt_env_job_id(char *const *env, size_t n_env, char *buf, size_t len);

/* The trace's events in time order (ties in file order), decoded in batches from the
 * file's image. new returns NULL when out of memory; next fills up to max events and
 * returns how many, 0 at the end. */
struct gmt_trace_iter;
struct gmt_trace_iter *gmt_trace_iter_new(const struct gmt_trace *t);
size_t gmt_trace_iter_next(struct gmt_trace_iter *it, struct gmt_timed_event *out, size_t max);
void gmt_trace_iter_free(struct gmt_trace_iter *it);

/*
 * The same events for a reader that decodes the common records itself. While more than
 * one run is left, gmt_trace_iter_merge() hands them out as gmt_trace_iter_next() does;
 * it returns 0 once one run (or none) is left. That last run (all of a single-threaded
 * trace) needs no merge: its records are in time order in the file, and
 * gmt_trace_iter_walk() hands out its next event, already decoded, in *head and the
 * records after it as a walk, leaving the iterator at its end (false when nothing is
 * left). The reader then takes the records at [pos, lim) of the image one by one: the
 * common ones with gmt_walk_alloc/_alloc_small/_free/_scope_* below, any other with
 * gmt_walk_decode(), and moves on with gmt_walk_next_seg() when pos reaches lim. Records
 * are only read where the loader found them whole: a record whose size would take the
 * walk outside the segment or is not a multiple of 8 (the file changed since) ends the
 * run, as it ends the iteration, and so must end the reader's walk.
 */
struct gmt_seg;                /* a chunk's records (trace_runs.h) */
struct gmt_walk {
    const uint8_t *img;
    uint64_t pos, lim;         /* the run's records left in the current segment */
    uint64_t clock;            /* the thread's clock before pos, when clock_set */
    bool clock_set;
    int16_t device;            /* its current context's device before pos, -1 unknown */
    uint32_t tid;
    const struct gmt_seg *seg, *seg_last; /* the segment being read, the thread's last */
    uint64_t run_end;          /* file offset where the run ends */
    /* Inside a GROUP_REPEAT (pos stays on it until its last member's end): the events
     * handed out so far, of rep_n, and its members' first scope */
    uint32_t rep_k, rep_n;
    uint64_t rep_first;
};

size_t gmt_trace_iter_merge(struct gmt_trace_iter *it, struct gmt_timed_event *out, size_t max);
bool gmt_trace_iter_walk(struct gmt_trace_iter *it, struct gmt_timed_event *head, struct gmt_walk *w);
/* Moves to the run's next segment when pos has reached lim; false at the run's end. */
bool gmt_walk_next_seg(struct gmt_walk *w);
/* The whole record at pos, of any type, as the iteration decodes it; pos moves past it.
 * Returns 1 with *e filled for an event, 0 for a record that is none (it may still move
 * the clock or the device), -1 when the record is not whole in the segment (pos stays:
 * the run ends there). A GROUP_REPEAT stands for the SCOPE_BEGIN and SCOPE_END events of
 * its members, handed out one a call: pos stays on it until the last. */
int gmt_walk_decode(const struct gmt_trace *t, struct gmt_walk *w, struct gmt_timed_event *e);

/* The time of a record with a dt: the thread's clock moved by it, 0 while the clock is
 * unset (it wraps rather than traps on a corrupt clock, as the reader does). */
static inline uint64_t gmt_walk_tick(struct gmt_walk *w, uint32_t dt)
{
    if (!w->clock_set)
        return 0;
    w->clock += dt;
    return w->clock;
}

/* The scope index a SCOPE_* record at `off` stands for, as the loader saw it then: -1 for
 * an end whose begin was lost or comes later in the file. gmt_walk_scope() answers the
 * common case (the dense array, no duplicate ids, no repeated groups) inline. */
long gmt_trace_scope_at(const struct gmt_trace *t, uint32_t id, uint64_t off);

static inline long gmt_walk_scope(const struct gmt_trace *t, uint32_t id, uint64_t off)
{
    if (!t->scope_dups && !t->n_reps && id < t->n_scope_dense && t->scope_dense[id]) {
        long i = (long)t->scope_dense[id] - 1;
        return t->scopes[i].offset <= off ? i : -1;
    }
    return gmt_trace_scope_at(t, id, off);
}

/* A 32-bit digest of a handle value, never 0 for a handle that is not 0. */
static inline int32_t gmt_handle_digest(uint64_t h)
{
    uint64_t x = h * 0x9e3779b97f4a7c15ull;
    uint32_t d = (uint32_t)(x >> 32);
    return (int32_t)(d ? d : 1);
}

/* The common events, decoded from a whole record of their type at `h` (pos already past
 * it): the iteration decodes them with these too. */
static inline void gmt_walk_alloc(struct gmt_walk *w, const struct gmt_rec_alloc *a,
                                  struct gmt_timed_event *e)
{
    e->time = gmt_walk_tick(w, a->dt);
    e->type = GMT_EV_ALLOC;
    e->addr = a->address;
    e->bytes = a->bytes;
    e->api = a->h.aux;
    e->kind = a->kind;
    e->stack = a->stack_id;
    e->scope = a->scope_id;
    /* a mapping's handle, as a digest: the replay tells a mapping of a peer's imported
     * handle from one of local memory by it (a rare kind: a branch, not a load) */
    e->error = 0;
    if (a->kind == GMT_KIND_MAPPING && a->h.size >= sizeof(struct gmt_rec_alloc_ext))
        e->error = gmt_handle_digest(((const struct gmt_rec_alloc_ext *)(const void *)a)->related);
    e->device = (uint16_t)a->device <= GMT_DEVICE_MAX ? a->device : w->device;
    e->tid = w->tid;
}

/* exactly the ALLOC with scope 0 and device -1 (the thread's context) */
static inline void gmt_walk_alloc_small(struct gmt_walk *w, const struct gmt_rec_alloc_small *a,
                                        struct gmt_timed_event *e)
{
    e->time = gmt_walk_tick(w, a->dt);
    e->type = GMT_EV_ALLOC;
    e->addr = a->address;
    e->bytes = a->bytes;
    e->api = (uint16_t)GMT_SMALL_API(a->h.aux);
    e->kind = (uint8_t)GMT_SMALL_KIND(a->h.aux);
    e->stack = a->stack_id;
    e->scope = 0;
    e->error = 0;
    e->device = w->device;
    e->tid = w->tid;
}

static inline void gmt_walk_free(struct gmt_walk *w, const struct gmt_rec_free *f,
                                 struct gmt_timed_event *e)
{
    e->time = gmt_walk_tick(w, f->dt);
    e->type = GMT_EV_FREE;
    e->addr = f->address;
    e->bytes = 0;
    e->api = f->h.aux;
    e->kind = 0;
    e->stack = f->h.size >= sizeof(struct gmt_rec_free_ext)
                   ? ((const struct gmt_rec_free_ext *)(const void *)f)->stack_id : 0;
    e->scope = f->scope_id;
    e->error = 0;
    e->device = w->device;
    e->tid = w->tid;
}

/* A SCOPE_BEGIN at `off`: its event's scope is the index, not the id. (Fields one by one,
 * not a memset: a reader's event held in registers stays there.) */
static inline void gmt_walk_scope_begin(const struct gmt_trace *t, struct gmt_walk *w,
                                        const struct gmt_rec_scope_begin *b, uint64_t off,
                                        struct gmt_timed_event *e)
{
    e->time = gmt_walk_tick(w, b->dt);
    e->type = GMT_EV_SCOPE_BEGIN;
    e->addr = e->bytes = 0;
    e->api = e->kind = 0;
    e->stack = 0;
    e->scope = (uint32_t)gmt_walk_scope(t, b->scope_id, off);
    e->error = 0;
    e->device = w->device;
    e->tid = 0;
}

/* A SCOPE_END at `off`: false when it is no event (nothing to close, as when loading);
 * the clock moves either way. */
static inline bool gmt_walk_scope_end(const struct gmt_trace *t, struct gmt_walk *w,
                                      const struct gmt_rec_scope_end *x, uint64_t off,
                                      struct gmt_timed_event *e)
{
    uint64_t time = gmt_walk_tick(w, x->dt);
    long i = gmt_walk_scope(t, x->scope_id, off);
    if (i < 0)
        return false;
    e->time = time;
    e->type = GMT_EV_SCOPE_END;
    e->addr = e->bytes = 0;
    e->api = e->kind = 0;
    e->stack = 0;
    e->scope = (uint32_t)i;
    e->error = 0;
    e->device = w->device;
    e->tid = 0;
    return true;
}

#endif
