/* gmt.h: the preload library's ground floor: shared macros, the per-thread state, the hot words, the guard and the declarations every file needs; each file's inline code lives in its own header. */
#ifndef GMT_GMT_H
#define GMT_GMT_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <string.h>

#include "nccl_types.h"
#include "trace_format.h"

#define GMT_HIDDEN __attribute__((visibility("hidden")))
#define GMT_EXPORT __attribute__((visibility("default")))
#define GMT_TLS __thread __attribute__((tls_model("initial-exec")))
#define GMT_LIKELY(x) __builtin_expect(!!(x), 1)
#define GMT_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* ---- options.c: the one options table, read once from the environment ---- */
#define GMT_OPTIONS(X)                                                                       \
    X(OFF, bool_, off, 0, "GPUMEMTRACE_OFF", "1: load but trace nothing")                    \
    X(OUTPUT, str_, output, 0, "GPUMEMTRACE_OUTPUT",                                         \
      "output pattern; %h host, %p pid, %r rank; default ./gpumemtrace.%h.%p.gmt")           \
    X(STACK_DEPTH, int_, stack_depth, 48, "GPUMEMTRACE_STACK_DEPTH",                         \
      "frames captured per stack, 0..256")                                                   \
    X(FLUSH_BYTES, int_, flush_bytes, 65536, "GPUMEMTRACE_FLUSH_BYTES",                      \
      "per-thread buffer, bytes: flushed when full, 4096..16777216")                         \
    X(FLUSH_MS, int_, flush_ms, 100, "GPUMEMTRACE_FLUSH_MS",                                 \
      "records older than this reach the file, ms, 1..60000")                               \
    X(MEMINFO, str_, meminfo, 0, "GPUMEMTRACE_MEMINFO",                                      \
      "device memory sampling around NCCL calls: never | always | first:N[,every:K]")       \
    X(SAMPLE_MS, int_, sample_ms, 200, "GPUMEMTRACE_SAMPLE_MS",                              \
      "each device with an allocation sampled through NVML by the library's thread, "       \
      "every ms, 0..3600000; 0: never (and NVML is not loaded)")                             \
    X(TSC, bool_, tsc, 1, "GPUMEMTRACE_TSC",                                                 \
      "1: read the clock as the TSC where the kernel's clocksource is tsc; 0: clock_gettime") \
    X(QUIET, bool_, quiet, 0, "GPUMEMTRACE_QUIET", "1: no warnings on stderr")              \
    X(GROUP_REPEAT, bool_, group_repeat, 1, "GPUMEMTRACE_GROUP_REPEAT",                      \
      "1: a user group with the same members as the thread's last one is written as one "   \
      "GROUP_REPEAT record for them; 0: every member's records (readers of format 2.0)")   \
    X(NCCL_COMPACT, bool_, nccl_compact, 1, "GPUMEMTRACE_NCCL_COMPACT",                      \
      "1: a loop's NCCL call outside a group is written as one record at its return "       \
      "(SCOPE_END's call form); 0: SCOPE_BEGIN at the call and SCOPE_END at its return")   \
    X(NCCL_PROFILER, bool_, nccl_profiler, 1, "GPUMEMTRACE_NCCL_PROFILER",                   \
      "1: loaded as NCCL's profiler plugin (gpumemtrace run sets NCCL_PROFILER_PLUGIN), "   \
      "record each collective's algorithm, protocol and channels; 0: ask NCCL for nothing") \
    X(NVTX, bool_, nvtx, 1, "GPUMEMTRACE_NVTX",                                              \
      "1: record NVTX ranges when NVTX loads the library (NVTX_INJECTION64_PATH); 0: decline") \
    X(FAST_UNWIND, bool_, fast_unwind, 1, "GPUMEMTRACE_FAST_UNWIND",                         \
      "1: walk stacks by frame rules read once per return address from .eh_frame (libunwind " \
      "for frames they do not cover); 0: libunwind's tracer for every stack")              \
    X(PYTHON, bool_, python, 1, "GPUMEMTRACE_PYTHON",                                        \
      "1: stacks hold the Python frames of threads that run Python (CPython 3.9-3.13); "    \
      "0: native frames only")

struct gmt_options {
#define GMT_X(ID, type, field, def, env, help) GMT_OPT_FIELD_##type field;
#define GMT_OPT_FIELD_bool_ int
#define GMT_OPT_FIELD_int_ long
#define GMT_OPT_FIELD_str_ const char *
    GMT_OPTIONS(GMT_X)
#undef GMT_X
};
/* gmt.c defines it with the defaults; filled by gmt_options_load(); read-only afterwards. */
GMT_HIDDEN extern struct gmt_options gmt_opt;
GMT_HIDDEN void gmt_options_load(void);
/* The environment's value of name, as glibc's getenv finds it, without the library's own
 * answers (hooks_env.c's getenv): what the library reads for itself. */
GMT_HIDDEN char *gmt_env(const char *name);

/* ---- log.c: never allocates, never recurses, at most a few warnings ---- */
GMT_HIDDEN void gmt_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* writev(2) for the trace and the log: SIGXFSZ never reaches the program (past
 * RLIMIT_FSIZE the call fails with EFBIG), the program's signal mask and pending signals
 * as they were. */
struct iovec;
GMT_HIDDEN long gmt_writev_nosigxfsz(int fd, const struct iovec *iov, int n);


/* ---- the process-wide words every hooked call reads, in one cache line ----
 * Between an application's NCCL calls its own work evicts ours from the CPU's caches: a
 * call that reads a dozen globals scattered over as many lines pays a dozen misses.
 * These live together (gmt.c defines them, with their first values), one member per
 * file that owns its words. */
struct gmt_hot {
    struct {
        _Atomic int state;                   /* enum state; GMT_WRITER_OPEN: open */
    } writer;                                /* the writer (writer_flush.h) */
    struct {
        int off;                             /* a copy of gmt_opt.off */
        int no_repeat;                       /* !gmt_opt.group_repeat */
        int no_compact;                      /* !gmt_opt.nccl_compact */
    } options;                               /* options.c */
    struct {
        _Atomic int kind;                    /* enum gmt_meminfo_kind */
        uint32_t first, every;               /* first:N[,every:K]; written before kind */
    } meminfo;                               /* options.c's parse, read by sampling.c */
    struct {
        _Atomic int ndeferred;               /* communicators not ready yet */
    } nccl;                                  /* hooks_nccl.c */
    struct {
        _Atomic unsigned char noted[4];      /* by enum gmt_component */
    } versions;                              /* versions.c */
    struct {
        /* Generations are compared for equality only: 32 bits wrap after 4 billion
         * dlopen/dlclose calls, harmlessly. */
        _Atomic unsigned dl_generation;      /* dlopen/dlclose generation */
        _Atomic unsigned single_copy_gen[3]; /* by enum gmt_lib, see hooks.h */
    } resolve;                               /* resolve.c */
    struct {
        _Atomic unsigned long comm_gen;      /* communicator cache generation */
    } scope;                                 /* scope.c */
} __attribute__((aligned(64)));
_Static_assert(sizeof(struct gmt_hot) == 64, "one cache line");
/* gmt_hot.meminfo.kind: GPUMEMTRACE_MEMINFO's policy, parsed by options.c (INVALID is
 * the parser's answer for a value it refuses, never a policy). */
enum gmt_meminfo_kind { GMT_POLICY_INVALID, GMT_POLICY_NEVER, GMT_POLICY_ALWAYS, GMT_POLICY_FIRST };
GMT_HIDDEN extern struct gmt_hot gmt_hot;


/* ---- init.c: library load (also the constructor) ---- */
/* Loads options, installs the crash handlers (chaining to the disposition found at
 * the time of the call) and the fork handler. Tests call it again in children. */
GMT_HIDDEN void gmt_init(void);
/* gmt_init once per process, from the constructor or the first hook, whichever is first. */
GMT_HIDDEN void gmt_init_once(void);
/* This library's absolute path (as loaded, made absolute against the directory the
 * process started in), "" when unknown. Set by gmt_init. */
GMT_HIDDEN const char *gmt_self_path(void);
/* What the library's getenv (hooks_env.c) answers for NVTX_INJECTION64_PATH (nvtx.c) and
 * NCCL_PROFILER_PLUGIN (nccl_profiler.c) when the process has no value: its own path, or
 * NULL when tracing, that recording or the path is off or unknown. */
GMT_HIDDEN const char *gmt_nvtx_injection_env(void);
GMT_HIDDEN const char *gmt_nccl_profiler_env(void);

/* ---- tables.c: tables mapped once, at first use ---- */
/* A spinning wait's pause: lets the other hyperthread run. */
static inline void gmt_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}
/* A one-time setup that any thread may reach first. gmt_once_enter returns
 * GMT_ONCE_READY or GMT_ONCE_FAILED when it is done, or GMT_ONCE_BUSY when the caller
 * is the one to do it and then call gmt_once_leave. Another thread waits while one does
 * it; a signal handler on the thread that is doing it gets GMT_ONCE_LATER (not now:
 * waiting there would never end). A fork child calls gmt_once_forked: a setup that
 * another thread was inside starts again there (that thread is gone). */
enum { GMT_ONCE_NEW, GMT_ONCE_BUSY, GMT_ONCE_READY, GMT_ONCE_FAILED, GMT_ONCE_LATER };
/* state: NEW, READY, FAILED, or while busy the address of its thread's marker */
struct gmt_once { _Atomic uintptr_t state; };
GMT_HIDDEN int gmt_once_enter(struct gmt_once *o);
GMT_HIDDEN void gmt_once_leave(struct gmt_once *o, bool ok);
GMT_HIDDEN void gmt_once_forked(struct gmt_once *o);
/* Two tables of reserved address space (pages taken as they are written): both, or
 * neither and false. b NULL: the first alone. */
GMT_HIDDEN bool gmt_map_tables(void **a, size_t a_bytes, void **b, size_t b_bytes);

/* ---- stack.c: stacks captured with libunwind, each written once ---- */
/* Captures a stack, writes a STACK record the first time it is seen, and returns its id
 * (0 when disabled/failed). The stack starts in the caller of the function whose frame is
 * `frame` (GMT_HOOK_FRAME() in that function: the hook the application called), or, with
 * NULL, in the caller of gmt_stack_capture; frames of the library itself are dropped. */
GMT_HIDDEN uint32_t gmt_stack_capture(const void *frame);
/* The same stack as gmt_unwind_walk's, by libunwind's tracer (-1 when it gives up): tests. */
GMT_HIDDEN int gmt_stack_walk_libunwind(const void *frame, uint64_t *out, int max);
/* Captures given a frame that took the slow way (libunwind's tracer gave up): tests. */
GMT_HIDDEN extern _Atomic unsigned long gmt_stack_slow_captures;
/* The frame of the function this is written in, for gmt_stack_capture and the event
 * functions: use it in the hook itself or code always inlined into it, never in a helper
 * that is a function of its own (its frame would be gone or be the wrong one). */
#define GMT_HOOK_FRAME() __builtin_frame_address(0)

/* ---- unwind.c: the fast stack walk ----
 * The return addresses above the frame record `frame` ({saved rbp, return address}, as
 * a function's caller resumes): the return addresses, innermost first, as libunwind's
 * tracer gives them; at most max. -1 when a frame's
 * rule is one this walk does not follow (then libunwind walks the stack). */
GMT_HIDDEN bool gmt_unwind_setup(void); /* once, before the first walk */
GMT_HIDDEN int gmt_unwind_walk(const void *frame, uint64_t *out, int max);
/* Rules decoded so far, and how many of them send the walk to libunwind. */
GMT_HIDDEN void gmt_unwind_counts(unsigned long *decoded, unsigned long *gave_up);

/* ---- events.c: build and emit the allocation records (ALLOC, FREE, ALLOC_FAIL) ---- */
/* Each notes the thread's current CUDA context first (CUCTX record when it changed),
 * captures the stack, and fills scope_id from gmt_current_scope(). */
GMT_HIDDEN void gmt_event_alloc(enum gmt_api api, enum gmt_kind kind, uint64_t address,
                                uint64_t bytes, int device, uint64_t stream,
                                uint64_t related, uint64_t offset, const void *frame);
/* The same with GMT_ALLOC_* flags (a captured allocation), no offset. */
GMT_HIDDEN void gmt_event_alloc_flagged(enum gmt_api api, enum gmt_kind kind, unsigned flags,
                                        uint64_t address, uint64_t bytes, int device,
                                        uint64_t stream, uint64_t related, const void *frame);
GMT_HIDDEN void gmt_event_free(enum gmt_api api, uint64_t address, uint64_t stream);
GMT_HIDDEN void gmt_event_fail(enum gmt_api api, enum gmt_kind kind, uint64_t bytes,
                               int device, int error, const void *frame);
/* Rescans the module map when a dlopen or dlclose happened since the last look. */
GMT_HIDDEN void gmt_events_note_dl(void);

/* ---- query.c: the process's own tracked figures, for the exported gpumemtrace_* API ---- */
/* Called by events.c for each allocation and free it records; device -1 unknown; nccl:
 * made inside an NCCL call or for one. */
GMT_HIDDEN void gmt_query_alloc(enum gmt_kind kind, uint64_t address, uint64_t bytes,
                                int device, bool nccl);
GMT_HIDDEN void gmt_query_free(enum gmt_api api, uint64_t address);

/* ---- claims.c: attribution of other threads' allocations ---- */
/* For an allocation on a thread with no scope of its own (NCCL's proxy and async threads)
 * on `device` (-1 unknown): the innermost open scope registered on that device when exactly
 * one thread has one open there, else 0. Lock-free, no syscalls. */
GMT_HIDDEN uint32_t gmt_scope_for_foreign_thread(int device);

/* ---- hooks_nccl.c: ncclX and pncclX wrappers ---- */
/* Our wrapper for an NCCL entry point name ("ncclAllReduce", "pncclGroupEnd"), or NULL:
 * the dlsym hook hands it out for lookups on a libnccl handle. */
GMT_HIDDEN void *gmt_nccl_wrapper(const char *name);
/* Our own literal for an NCCL entry point's name (resolve caches by address), or NULL. */
GMT_HIDDEN const char *gmt_nccl_name(const char *name);


/* ---- nvtx.c: the NVTX v3 injection (InitializeInjectionNvtx2, exported) ---- */
/* The ranges pushed and not yet popped on this thread (innermost last), for NVTX's
 * per-domain nesting levels and the POP record's name. */
#define GMT_NVTX_DEPTH 32
struct gmt_nvtx_thread {
    uint32_t depth;            /* open push ranges, also those past open[] */
    struct {
        uint32_t domain, name; /* NVTX_STRING ids */
    } open[GMT_NVTX_DEPTH];
};

/* NVTX's entry point (exported): patches the calling NVTX copy's function table through
 * its export-table getter; 1 when it did, 0 to decline (off, or a table we can't use). */
GMT_EXPORT int InitializeInjectionNvtx2(const void *(*get_export_table)(uint32_t id));

/* ---- per thread: gmt_ts, one member per owning file ---- */
struct buf; /* writer_flush.h's */

/* scope.c: an open NCCL scope of the thread (frames[depth]) */
struct gmt_frame {
    uint32_t id;
    uint8_t op;
    int8_t group;       /* depth of the outermost enclosing Group frame, or -1 */
    uint64_t devmask;   /* devices this scope is registered on (foreign-thread table) */
    uint64_t memmask;   /* devices sampled at begin: sampled again at end */
};

/* claims.c: the thread's slots in the foreign-thread table, in one line; claim c (c < n)
 * is dev[c], slot[c], open[c] (arrays, so that a claim is found in one addressing step) */
struct gmt_claims {
    int16_t dev[8];     /* the device */
    int16_t slot[8];    /* its slot in the table */
    uint8_t open[8];    /* the slot names a scope of ours now */
    uint32_t token;
    uint8_t n;
    uint8_t hint[8];    /* by device % 8: the index of its claim, checked at every use */
};

/* group.c: repeated groups (nccl_call.h); the state is the deferred byte's (deferred.h) */
#define GMT_REP_MAX 8
struct gmt_rep_member {            /* what the short way writes of a member, 32 bytes */
    uint64_t comm, count, stream;
    int32_t peer;
    int16_t datatype;
    int8_t result;
    uint8_t op;
};
struct gmt_rep {
    /* the line every group reads */
    uint8_t n;          /* template: members of the previous group, 0 none */
    uint8_t cur;        /* members of the open group begun (matched or recorded) */
    uint8_t done;       /* MATCH: members matched that returned with the template's result */
    uint8_t spilled;    /* members the last spill wrote */
    uint32_t group;     /* the open group's scope id */
    uint32_t like;      /* the group whose members the template holds */
    uint32_t gen;       /* comm_gen the template's devices hold under (equality only) */
    uint64_t devmask;   /* the template's devices */
    int8_t dev[GMT_REP_MAX]; /* each member's device */
    uint32_t repeated;       /* the group whose GROUP_REPEAT is written, until its end */
    struct {
        uint32_t gen;        /* gmt_hot.scope.comm_gen (low half) the bits hold under */
        uint64_t ops;        /* bit op: its first call without a communicator was seen */
    } nocomm;                /* scope.c's, in this line because every group reads it */
    /* the template's members, from the next line */
    struct gmt_rep_member m[GMT_REP_MAX] __attribute__((aligned(64)));
};
_Static_assert(sizeof(struct gmt_rep_member) == 32, "two members a line");
_Static_assert(offsetof(struct gmt_rep_member, peer) == 24 &&
                   offsetof(struct gmt_rep_member, datatype) == 28 &&
                   offsetof(struct gmt_rep_member, result) == 30 &&
                   offsetof(struct gmt_rep_member, op) == 31,
               "gmt_scope_repeat_pre reads peer, datatype, result and op as one word");
_Static_assert(offsetof(struct gmt_rep, m) == 64, "the header in one line");

/* scope.c's words of a loop call written as one record: the held begin's id (also in the
 * held slot, which the fast end does not read for it), whether it is complete, whether a
 * spill wrote it, and the previous call form's fields (format 2.5: the fields a call form
 * leaves out are the previous one's). */
/* scope.c's words of a loop call written as one record (scope.h: gmt_call_timed) */
struct gmt_call_thread {
    uint32_t id;               /* the held call's scope id */
    uint32_t rng;              /* gmt_call_timed's state */
    uint8_t ready;             /* the held slot is complete: a spill may write it */
    uint8_t spills;            /* spills so far, wrapping (gmt_scope_end's handshake) */
    uint8_t has_prev;          /* prev_* hold the thread's previous call form's fields */
    uint64_t prev_comm, prev_count, prev_stream, prev_type_peer;
};

/* the writer's words of the thread (the first line) */
struct gmt_writer_thread {
    struct buf *buf;        /* the thread's ring; NULL until its first record */
    uint64_t clock;         /* the thread's clock as the reader will decode it, ns */
    uint8_t in_emit;        /* inside gmt_emit: a signal handler's record is dropped */
    uint8_t opening;        /* this thread writes the file's preamble */
    uint8_t deferred;       /* deferred records (the writer's contract, writer_api.h): the
                             * client's byte, enum gmt_defer (deferred.h) */
};

/* The re-entrancy guards every hook reads (the first line). */
struct gmt_guard {
    int in_hook;     /* >0 while inside an allocation hook: nested allocations are not events */
    int in_lib;      /* >0 while the library itself runs (dlsym inside hooks, etc.) */
    int in_wrapper;  /* >0 while a wrapper of ours runs the real function (NCCL calls):
                      * its frame is then on the stack of what that function allocates */
    int in_event;    /* events.c recording an allocation (2 when a signal handler's
                      * allocation is recorded inside another: our frames in its stack) */
};

/* hooks_nccl.c's words of the thread (the first line) */
struct gmt_nccl_thread {
    uint8_t in_op;          /* the op of the wrapper inside its real call, 0 none */
    uint8_t group_depth;    /* open user groups with a scope, at most the length of
                             * gmt_ts.nccl_groups.ids */
    uint8_t npending;       /* communicators made inside a group */
    int group_overflow;     /* open user groups beyond those */
};

/* scope.c's words of the thread: the depth and ids in the first line, the open scopes
 * from the second. group.c's short ways for a group (its begin and end, GROUP_REPEAT's
 * ids) push and pop frame 0 and take ids from the block themselves, under the same
 * rules as gmt_scope_begin/gmt_scope_end. */
struct gmt_scope_thread {
    int depth;                   /* open scopes, also those past frames[] */
    uint32_t id_next, id_end;    /* this thread's block of scope ids: id_next+1 .. id_end */
    uint8_t memo_next;           /* the communicator memo a miss overwrites next */
    uint8_t memo_last;           /* the communicator memo the last call found */
    struct gmt_frame frames[32]; /* the open scopes, innermost last: frames[d] at depth d */
};

/*
 * All the library's per-thread state that an NCCL call touches, in one variable: one GOT
 * entry for its TLS offset instead of one per variable, and the parts a call reads laid
 * out in as few cache lines as can be. One member per owning file. The first line is
 * what every hooked call reads (the writer's, the guards, hooks_nccl.c's and the head of
 * scope.c's); frames[0] (a user group's) opens the second.
 */
struct gmt_thread_state {
    struct gmt_writer_thread writer;         /* the writer (writer_flush.h) */
    struct gmt_guard guard;                  /* every hook */
    struct gmt_nccl_thread nccl;             /* hooks_nccl.c */
    struct gmt_scope_thread scope;           /* scope.c */
    struct gmt_rep rep __attribute__((aligned(64)));           /* group.c */
    struct gmt_claims claims __attribute__((aligned(64)));     /* claims.c */
    struct {
        uint32_t ids[32];                    /* open user groups' scopes, innermost last */
    } nccl_groups;                           /* hooks_nccl.c */
    struct gmt_nvtx_thread nvtx;             /* nvtx.c */
    struct gmt_call_thread call __attribute__((aligned(64))); /* scope.c */
} __attribute__((aligned(64)));
_Static_assert(offsetof(struct gmt_thread_state, scope.frames) == 64,
               "the hot part in one line, the frames from the next");
_Static_assert(offsetof(struct gmt_thread_state, rep) == 64 + sizeof(struct gmt_frame[32]),
               "the repeated groups' state right after the frames");
_Static_assert(sizeof(struct gmt_claims) <= 64, "the claims in one line");
GMT_HIDDEN extern GMT_TLS struct gmt_thread_state gmt_ts;

/* The calling thread's slot (struct gmt_writer_slot), NULL before its first record: the
 * head of its buffer. */
static inline struct gmt_writer_slot *gmt_writer_slot(void)
{
    return (struct gmt_writer_slot *)(void *)gmt_ts.writer.buf;
}

#define GMT_COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the guard: the library's own calls into other code ----
 * Around a call the library makes itself (the driver's queries, NCCL's, the loader's):
 * errno stays as the program left it, and a hook of ours that the call reaches passes
 * straight through instead of recording (gmt_ts.guard.in_lib). gmt_lib_enter returns
 * the errno that gmt_lib_leave gives back. The allocation hooks' own guard is hooks.h's
 * gmt_hook_enter/gmt_hook_leave. */
static inline int gmt_lib_enter(void)
{
    int e = errno;
    gmt_ts.guard.in_lib++;
    return e;
}
static inline void gmt_lib_leave(int saved_errno)
{
    gmt_ts.guard.in_lib--;
    errno = saved_errno;
}
/* The guard alone, for a caller that keeps errno itself (saved once around a whole hook,
 * or given back on some paths only): a stack capture per allocation pays no second save. */
static inline void gmt_lib_enter_keep_errno(void)
{
    gmt_ts.guard.in_lib++;
}
static inline void gmt_lib_leave_keep_errno(void)
{
    gmt_ts.guard.in_lib--;
}

static inline uint32_t gmt_current_scope(void)
{
    int d = gmt_ts.scope.depth, n = (int)GMT_COUNTOF(gmt_ts.scope.frames);
    return d > 0 ? gmt_ts.scope.frames[(d > n ? n : d) - 1].id : 0;
}

#endif
