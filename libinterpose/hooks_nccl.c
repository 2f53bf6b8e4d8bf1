/* hooks_nccl.c: the exported ncclX/pncclX wrappers: a scope around every call, COMM records for new communicators, ncclMemAlloc/Free as allocations. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>

#include "gmt.h"
#include "hooks.h"
#include "nccl_abi.h"
#include "nccl_call.h"
#include "nccl_memstats.h"
#include "resolve.h"

/* gmt_ts.nccl.in_op: the op of the wrapper currently inside its real call on this thread.
 * A profiler's ncclX that calls pncclX (or the reverse) lands in our twin wrapper: that
 * nested call of the same op passes straight through, so one user call makes one scope. */

/* Open user groups on this thread, innermost last (NCCL lets groups nest). Group scopes
 * beyond GROUPS are not opened; gmt_ts.nccl.group_overflow counts them so ends still pair up. */
#define GROUPS GMT_COUNTOF(gmt_ts.nccl_groups.ids)
_Static_assert(GROUPS <= UINT8_MAX, "gmt_ts.nccl.group_depth counts them");

/* Communicators created inside a group are usable only once the outermost ncclGroupEnd
 * has run: their COMM records (which query NCCL) wait here until then. The handle itself
 * is taken when the init returns (NCCL writes it synchronously, also inside a group):
 * the caller's slot may be a loop variable that is gone by ncclGroupEnd. */
struct pending_comm {
    ncclComm_t comm;
    uint64_t parent;
    uint64_t hash;
    bool nonblocking;
};
static GMT_TLS struct pending_comm pending[64];
#define PENDING GMT_COUNTOF(pending)
_Static_assert(PENDING <= UINT8_MAX, "gmt_ts.nccl.npending counts them");


static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* The real NCCL function for this caller: with two NCCLs loaded side by side (each
 * RTLD_LOCAL behind its own framework), the one the caller's own dependencies name, as
 * the PLT would have bound it without us; with one, a cached pointer (hooks.h). */
static inline void *nccl_real(_Atomic(void *) *cache, const char *name, const void *caller)
{
    void *p = gmt_hook_plt_cached(cache, GMT_LIB_NCCL);
    if (GMT_LIKELY(p != NULL))
        return p;
    gmt_lib_enter_keep_errno();
    p = gmt_hook_plt_slow(cache, GMT_LIB_NCCL, name, caller);
    gmt_lib_leave_keep_errno();
    return p;
}

/* NCCL itself could not be found: say so, call nothing. ncclSystemError is NCCL's
 * "a system or library call failed", which is what happened. */
static ncclResult_t unresolved(const char *name)
{
    gmt_warn("cannot find the real %s; returning ncclSystemError", name);
    return ncclSystemError;
}

/* ---- non-blocking communicators ----
 *
 * While a non-blocking communicator initializes (its init, or the group that made it,
 * returned ncclInProgress; or its config says blocking = 0), NCCL answers
 * ncclCommUserRank & co with an error and a WARN in the program's log. Its COMM record
 * waits here, process-wide (the program may go on on another thread), until a later call
 * of the program's on that communicator returned ncclSuccess: it is ready then. Slots:
 * key 0 free, 1 being filled, else the communicator. */
#define DEFERRED 64
static _Atomic uint64_t deferred_key[DEFERRED];
static _Atomic uint64_t deferred_parent[DEFERRED], deferred_hash[DEFERRED];

static void defer_comm(uint64_t comm, uint64_t parent, uint64_t hash)
{
    for (int i = 0; i < DEFERRED; i++) {
        uint64_t zero = 0;
        if (atomic_load_explicit(&deferred_key[i], memory_order_relaxed) == 0 &&
            atomic_compare_exchange_strong(&deferred_key[i], &zero, 1)) {
            atomic_store_explicit(&deferred_parent[i], parent, memory_order_relaxed);
            atomic_store_explicit(&deferred_hash[i], hash, memory_order_relaxed);
            atomic_store_explicit(&deferred_key[i], comm, memory_order_release);
            atomic_fetch_add_explicit(&gmt_hot.nccl.ndeferred, 1, memory_order_release);
            return;
        }
    }
    /* No room: no COMM record for it, rather than a query NCCL warns about. */
}

/* Takes `comm` off the waiting list; writes its COMM record when `ready`. */
static void settle_comm(ncclComm_t comm, bool ready)
{
    if (GMT_LIKELY(atomic_load_explicit(&gmt_hot.nccl.ndeferred, memory_order_acquire) == 0) || !comm)
        return;
    uint64_t key = (uint64_t)(uintptr_t)comm;
    for (int i = 0; i < DEFERRED; i++) {
        if (atomic_load_explicit(&deferred_key[i], memory_order_acquire) != key)
            continue;
        uint64_t parent = atomic_load_explicit(&deferred_parent[i], memory_order_relaxed);
        uint64_t hash = atomic_load_explicit(&deferred_hash[i], memory_order_relaxed);
        uint64_t expected = key;
        if (!atomic_compare_exchange_strong(&deferred_key[i], &expected, 0))
            continue; /* another thread settled it */
        atomic_fetch_sub_explicit(&gmt_hot.nccl.ndeferred, 1, memory_order_release);
        if (ready)
            gmt_scope_comm(key, parent, hash);
        return;
    }
}

/* Whether NCCL runs this communicator's init in the background: config->blocking 0, or
 * left undefined with NCCL_COMM_BLOCKING=0 in the environment (NCCL's default). */
static bool is_nonblocking(const ncclConfig_t *config)
{
    int blocking = GMT_NCCL_CONFIG_UNDEF_INT;
    if (config && config->magic == GMT_NCCL_CONFIG_MAGIC &&
        config->size >= offsetof(ncclConfig_t, blocking) + sizeof config->blocking)
        blocking = config->blocking;
    if (blocking == GMT_NCCL_CONFIG_UNDEF_INT) {
        const char *env = gmt_env("NCCL_COMM_BLOCKING");
        return env && env[0] == '0' && env[1] == 0;
    }
    return blocking == 0;
}

static void comm_known(ncclComm_t comm, uint64_t parent, uint64_t hash, bool nonblocking)
{
    if (!comm)
        return;
    if (gmt_ts.nccl.group_depth + gmt_ts.nccl.group_overflow > 0) {
        if (gmt_ts.nccl.npending < PENDING) {
            pending[gmt_ts.nccl.npending++] = (struct pending_comm){comm, parent, hash, nonblocking};
            return;
        }
        /* No room: the record goes out now (or once ready), with what NCCL can say. */
    }
    if (nonblocking)
        defer_comm((uint64_t)(uintptr_t)comm, parent, hash);
    else
        gmt_scope_comm((uint64_t)(uintptr_t)comm, parent, hash);
}

static void flush_pending(ncclResult_t r)
{
    int n = gmt_ts.nccl.npending;
    gmt_ts.nccl.npending = 0;
    if (r != ncclSuccess && r != ncclInProgress)
        return;
    for (int i = 0; i < n; i++) {
        uint64_t comm = (uint64_t)(uintptr_t)pending[i].comm;
        if (r == ncclInProgress || pending[i].nonblocking)
            defer_comm(comm, pending[i].parent, pending[i].hash);
        else
            gmt_scope_comm(comm, pending[i].parent, pending[i].hash);
    }
}

/* ---- shapes: what is done before and after each kind of call ---- */

/* Inlined: the calls of the GPU's hot loops. */
#define GMT_ALWAYS_INLINE static inline __attribute__((always_inline))
GMT_ALWAYS_INLINE void coll_pre(struct gmt_call *c, enum gmt_op op, ncclComm_t comm, size_t count,
                                ncclDataType_t datatype, int peer, cudaStream_t stream)
{
    gmt_call_begin(c, op, (uint64_t)(uintptr_t)comm, count, (int)datatype, peer,
                   (uint64_t)(uintptr_t)stream, gmt_ts.nccl.group_depth > 0);
}
GMT_ALWAYS_INLINE void coll_post(struct gmt_call *c, enum gmt_op op, ncclResult_t r, ncclComm_t comm,
                                 size_t count, ncclDataType_t datatype, int peer,
                                 cudaStream_t stream)
{
    if (GMT_LIKELY(r == ncclSuccess))
        settle_comm(comm, true);
    gmt_call_end(c, op, (int)r, (uint64_t)(uintptr_t)comm, count, (int)datatype, peer,
                 (uint64_t)(uintptr_t)stream);
}

/* The Group scope opens at ncclGroupStart and stays open on the thread until the
 * matching ncclGroupEnd: what is enqueued in between is its children. */
static __attribute__((hot)) void group_start_pre(struct gmt_call *c, enum gmt_op op, int unused)
{
    c->scope = 0;
    if (gmt_ts.nccl.group_depth == 0)
        c->scope = gmt_scope_group_begin();
    else if (gmt_ts.nccl.group_depth < GROUPS)
        c->scope = gmt_scope_begin(op, 0, 0, -1, -1, 0);
}
static __attribute__((hot)) void group_start_post(struct gmt_call *c, enum gmt_op op, ncclResult_t r, int unused)
{
    if (r != ncclSuccess) {
        gmt_scope_end(c->scope, op, (int)r);
        return;
    }
    if (gmt_ts.nccl.group_depth < GROUPS)
        gmt_ts.nccl_groups.ids[gmt_ts.nccl.group_depth++] = c->scope;
    else
        gmt_ts.nccl.group_overflow++;
}

/* Takes the innermost open group; an end without a start (a misuse NCCL reports) gets
 * a Group scope of its own so the error is still in the trace. */
static __attribute__((hot)) void group_end_pre(struct gmt_call *c, enum gmt_op op, int unused)
{
    if (gmt_ts.nccl.group_overflow > 0) {
        gmt_ts.nccl.group_overflow--;
        c->scope = 0;
    } else if (gmt_ts.nccl.group_depth > 0) {
        c->scope = gmt_ts.nccl_groups.ids[--gmt_ts.nccl.group_depth];
        if (gmt_ts.nccl.group_depth + gmt_ts.nccl.group_overflow == 0)
            gmt_scope_group_members_done(c->scope);
    } else {
        c->scope = gmt_scope_begin(GMT_OP_Group, 0, 0, -1, -1, 0);
    }
}
static __attribute__((hot)) void group_end_post(struct gmt_call *c, enum gmt_op op, ncclResult_t r, int unused)
{
    if (gmt_ts.nccl.group_depth + gmt_ts.nccl.group_overflow == 0)
        flush_pending(r);
    gmt_scope_group_end(c->scope, (int)r);
}

/* ncclGroupSimulateEnd ends the group like ncclGroupEnd but launches nothing: a scope of
 * its own inside the group, then the group closes. */
static void group_sim_pre(struct gmt_call *c, enum gmt_op op, int unused)
{
    c->scope = gmt_scope_begin(op, 0, 0, -1, -1, 0);
}
static void group_sim_post(struct gmt_call *c, enum gmt_op op, ncclResult_t r, int unused)
{
    gmt_scope_end(c->scope, op, (int)r);
    struct gmt_call g;
    group_end_pre(&g, GMT_OP_Group, 0);
    group_end_post(&g, GMT_OP_Group, r, 0);
}

/* Inits: count = nranks, peer = this rank. The device is the thread's current one; the
 * sampling key is the unique id, so each new communicator's init is sampled. */
static void init_rank_pre(struct gmt_call *c, enum gmt_op op, ncclComm_t *newcomm, int nranks,
                          int rank, int nid, const ncclUniqueId *ids, const ncclConfig_t *config)
{
    c->scope = gmt_scope_begin(op, 0, (uint64_t)(nranks > 0 ? nranks : 0), -1, rank, 0);
    uint64_t hash = nid > 0 && ids ? fnv1a(ids, sizeof *ids) : 0;
    gmt_scope_add_device(c->scope, -1, hash);
}
static void init_rank_post(struct gmt_call *c, enum gmt_op op, ncclResult_t r, ncclComm_t *newcomm,
                           int nranks, int rank, int nid, const ncclUniqueId *ids,
                           const ncclConfig_t *config)
{
    if ((r == ncclSuccess || r == ncclInProgress) && newcomm)
        comm_known(*newcomm, 0, nid > 0 && ids ? fnv1a(ids, sizeof *ids) : 0,
                   r == ncclInProgress || is_nonblocking(config));
    gmt_scope_end(c->scope, op, (int)r);
}

/* One process, ndev devices (devlist, or 0..ndev-1): the scope concerns all of them. */
static void init_all_pre(struct gmt_call *c, enum gmt_op op, ncclComm_t *comms, int ndev,
                         const int *devlist)
{
    c->scope = gmt_scope_begin(op, 0, (uint64_t)(ndev > 0 ? ndev : 0), -1, -1, 0);
    for (int i = 0; i < ndev && i < 64; i++)
        gmt_scope_add_device(c->scope, devlist ? devlist[i] : i, 0);
}
static void init_all_post(struct gmt_call *c, enum gmt_op op, ncclResult_t r, ncclComm_t *comms,
                          int ndev, const int *devlist)
{
    if (r == ncclSuccess && comms)
        for (int i = 0; i < ndev; i++)
            comm_known(comms[i], 0, 0, is_nonblocking(NULL));
    gmt_scope_end(c->scope, op, (int)r);
}

/* Split and shrink: scope on the parent; the child (NULL for NCCL_SPLIT_NOCOLOR) gets
 * a COMM record naming its parent. */
static void split_pre(struct gmt_call *c, enum gmt_op op, ncclComm_t comm, ncclComm_t *newcomm,
                      const ncclConfig_t *config)
{
    c->scope = gmt_scope_begin(op, (uint64_t)(uintptr_t)comm, 0, -1, -1, 0);
}
static void split_post(struct gmt_call *c, enum gmt_op op, ncclResult_t r, ncclComm_t comm,
                       ncclComm_t *newcomm, const ncclConfig_t *config)
{
    if (r == ncclSuccess)
        settle_comm(comm, true);
    /* The child inherits the parent's blocking mode when its config leaves it undefined:
     * ncclInProgress is what tells. */
    if ((r == ncclSuccess || r == ncclInProgress) && newcomm && *newcomm)
        comm_known(*newcomm, (uint64_t)(uintptr_t)comm, 0,
                   r == ncclInProgress || is_nonblocking(config));
    gmt_scope_end(c->scope, op, (int)r);
}

/* Communicator calls without a buffer shape: count carries the bytes registered, if any. */
static void comm_pre(struct gmt_call *c, enum gmt_op op, ncclComm_t comm, size_t bytes)
{
    /* A communicator that goes away before it was ever ready gets no COMM record. */
    if (op == GMT_OP_CommDestroy || op == GMT_OP_CommAbort)
        settle_comm(comm, false);
    c->scope = gmt_scope_begin(op, (uint64_t)(uintptr_t)comm, bytes, -1, -1, 0);
    /* NCCL's own count once more before the communicator's memory goes */
    if (op == GMT_OP_CommFinalize || op == GMT_OP_CommDestroy || op == GMT_OP_CommAbort) {
        uint64_t k = (uint64_t)(uintptr_t)comm;
        gmt_nccl_memstats(k, op == GMT_OP_CommFinalize ? GMT_MEMSTATS_FINALIZE
                             : op == GMT_OP_CommDestroy ? GMT_MEMSTATS_DESTROY : GMT_MEMSTATS_ABORT,
                          gmt_scope_comm_device(k));
    }
}
static void comm_post(struct gmt_call *c, enum gmt_op op, ncclResult_t r, ncclComm_t comm,
                      size_t bytes)
{
    if (r == ncclSuccess && op != GMT_OP_CommFinalize && op != GMT_OP_CommDestroy &&
        op != GMT_OP_CommAbort && op != GMT_OP_CommRevoke)
        settle_comm(comm, true);
    gmt_scope_end(c->scope, op, (int)r);
}

/* ncclMemAlloc/Free are allocations of their own kind. They use cuMem inside: in_hook
 * keeps those inner driver calls from being counted a second time. Other NCCL calls
 * run with in_hook untouched, since their internal allocations are what we trace. */
static void mem_alloc_pre(struct gmt_call *c, enum gmt_op op, void **ptr, size_t size)
{
    c->scope = gmt_scope_begin(op, 0, size, -1, -1, 0);
    gmt_ts.guard.in_hook++;
}
static void mem_alloc_post(struct gmt_call *c, enum gmt_op op, ncclResult_t r, void **ptr,
                           size_t size)
{
    gmt_ts.guard.in_hook--;
    if (r == ncclSuccess && ptr)
        gmt_event_alloc(GMT_API_ncclMemAlloc, GMT_KIND_NCCL_MEM, (uint64_t)(uintptr_t)*ptr, size,
                        -1, 0, 0, 0, NULL);
    else
        gmt_event_fail(GMT_API_ncclMemAlloc, GMT_KIND_NCCL_MEM, size, -1, (int)r, NULL);
    gmt_scope_end(c->scope, op, (int)r);
}

/* The free is recorded before the real call, so the address can't be reused in between. */
static void mem_free_pre(struct gmt_call *c, enum gmt_op op, void *ptr)
{
    c->scope = gmt_scope_begin(op, 0, 0, -1, -1, 0);
    if (ptr)
        gmt_event_free(GMT_API_ncclMemFree, (uint64_t)(uintptr_t)ptr, 0);
    gmt_ts.guard.in_hook++;
}
static void mem_free_post(struct gmt_call *c, enum gmt_op op, ncclResult_t r, void *ptr)
{
    gmt_ts.guard.in_hook--;
    gmt_scope_end(c->scope, op, (int)r);
}

/* ---- the wrappers, expanded from the one list in nccl_abi.h ---- */
#define GMT_UNPAREN(...) __VA_ARGS__

/* The real functions, once looked up: the ncclX ones together, in the order of
 * GMT_NCCL_ENTRIES, the group calls and the first collectives in the first line. */
enum {
#define GMT_NCCL_INDEX(name, op, shape, params, args, sargs) GMT_NCCL_INDEX_##name,
    GMT_NCCL_ENTRIES(GMT_NCCL_INDEX)
#undef GMT_NCCL_INDEX
    GMT_NCCL_COUNT
};
static _Atomic(void *) real_fns[2 * GMT_NCCL_COUNT] __attribute__((aligned(64)));
#define GMT_NCCL_REAL_nccl(name) (&real_fns[GMT_NCCL_INDEX_##name])
#define GMT_NCCL_REAL_pnccl(name) (&real_fns[GMT_NCCL_COUNT + GMT_NCCL_INDEX_##name])

/* Where each wrapper's code goes: the ncclX calls of a training loop's hot path (the
 * collectives, the group calls) together in .text.hot, with scope.c's, group.c's and writer.c's
 * functions for them, so that a loop's calls run through few lines of code. */
#define GMT_WRAP_SECTION_nccl_coll __attribute__((hot))
#define GMT_WRAP_SECTION_nccl_group_start __attribute__((hot))
#define GMT_WRAP_SECTION_nccl_group_end __attribute__((hot))
#define GMT_WRAP_SECTION_nccl_group_sim
#define GMT_WRAP_SECTION_nccl_init_rank
#define GMT_WRAP_SECTION_nccl_init_all
#define GMT_WRAP_SECTION_nccl_split
#define GMT_WRAP_SECTION_nccl_comm
#define GMT_WRAP_SECTION_nccl_mem_alloc
#define GMT_WRAP_SECTION_nccl_mem_free
#define GMT_WRAP_SECTION_pnccl_coll
#define GMT_WRAP_SECTION_pnccl_group_start
#define GMT_WRAP_SECTION_pnccl_group_end
#define GMT_WRAP_SECTION_pnccl_group_sim
#define GMT_WRAP_SECTION_pnccl_init_rank
#define GMT_WRAP_SECTION_pnccl_init_all
#define GMT_WRAP_SECTION_pnccl_split
#define GMT_WRAP_SECTION_pnccl_comm
#define GMT_WRAP_SECTION_pnccl_mem_alloc
#define GMT_WRAP_SECTION_pnccl_mem_free

/* Whether a shape's post leaves errno as the real call set it, so the wrapper need not
 * save it around the post: a member of a repeated group (its slow way saves errno
 * itself, as do settle_comm's COMM record and everything else below a group's end), or a
 * full scope (gmt_scope_end saves it on the ways that can change it). */
#define GMT_POST_KEEPS_ERRNO_coll(c) (gmt_call_end_keeps_errno(c) || (c)->member < 0)
#define GMT_POST_KEEPS_ERRNO_group_start(c) 1
#define GMT_POST_KEEPS_ERRNO_group_end(c) 1
#define GMT_POST_KEEPS_ERRNO_group_sim(c) 0
#define GMT_POST_KEEPS_ERRNO_init_rank(c) 0
#define GMT_POST_KEEPS_ERRNO_init_all(c) 0
#define GMT_POST_KEEPS_ERRNO_split(c) 0
#define GMT_POST_KEEPS_ERRNO_comm(c) 0
#define GMT_POST_KEEPS_ERRNO_mem_alloc(c) 0
#define GMT_POST_KEEPS_ERRNO_mem_free(c) 0

#define GMT_NCCL_WRAP(pfx, name, op, shape, params, args, sargs)                 \
    GMT_EXPORT GMT_WRAP_SECTION_##pfx##_##shape ncclResult_t pfx##name params    \
    {                                                                            \
        typedef ncclResult_t(*real_fn) params;                                   \
        real_fn fn = (real_fn)nccl_real(GMT_NCCL_REAL_##pfx(name), #pfx #name,   \
                                        __builtin_return_address(0));            \
        if (GMT_UNLIKELY(!fn))                                                   \
            return unresolved(#pfx #name);                                       \
        if (gmt_ts.nccl.in_op == GMT_OP_##op || gmt_ts.guard.in_lib ||           \
            GMT_UNLIKELY(gmt_hot.options.off))                                   \
            return fn args;                                                      \
        struct gmt_call c;                                                       \
        shape##_pre(&c, GMT_OP_##op, GMT_UNPAREN sargs);                         \
        int outer = gmt_ts.nccl.in_op;                                           \
        gmt_ts.nccl.in_op = GMT_OP_##op;                                         \
        gmt_ts.guard.in_wrapper++;                                               \
        ncclResult_t r = fn args;                                                \
        gmt_ts.guard.in_wrapper--;                                               \
        gmt_ts.nccl.in_op = outer;                                               \
        if (GMT_POST_KEEPS_ERRNO_##shape(&c)) {                                  \
            shape##_post(&c, GMT_OP_##op, r, GMT_UNPAREN sargs);                 \
            return r;                                                            \
        }                                                                        \
        int err = errno;                                                         \
        shape##_post(&c, GMT_OP_##op, r, GMT_UNPAREN sargs);                     \
        errno = err;                                                             \
        return r;                                                                \
    }
#define GMT_NCCL_WRAP_BOTH(name, op, shape, params, args, sargs)                 \
    GMT_NCCL_WRAP(nccl, name, op, shape, params, args, sargs)                    \
    GMT_NCCL_WRAP(pnccl, name, op, shape, params, args, sargs)
GMT_NCCL_ENTRIES(GMT_NCCL_WRAP_BOTH)

/* ---- lookup for the dlsym hook ---- */
static const struct {
    const char *name;
    void *fn;
} wrappers[] = {
#define GMT_NCCL_ROW(name, op, shape, params, args, sargs)                       \
    {"nccl" #name, (void *)nccl##name}, {"pnccl" #name, (void *)pnccl##name},
    GMT_NCCL_ENTRIES(GMT_NCCL_ROW)
#undef GMT_NCCL_ROW
};

const char *gmt_nccl_name(const char *name)
{
    if (!name || (name[0] != 'n' && name[0] != 'p'))
        return NULL;
    for (size_t i = 0; i < sizeof wrappers / sizeof wrappers[0]; i++)
        if (strcmp(wrappers[i].name, name) == 0)
            return wrappers[i].name;
    return NULL;
}

void *gmt_nccl_wrapper(const char *name)
{
    if (!name || (name[0] != 'n' && name[0] != 'p'))
        return NULL;
    for (size_t i = 0; i < sizeof wrappers / sizeof wrappers[0]; i++)
        if (strcmp(wrappers[i].name, name) == 0)
            return wrappers[i].fn;
    return NULL;
}
