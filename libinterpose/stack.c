/* stack.c: captures call stacks with libunwind and interns them, so each distinct stack is written once as a STACK record. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "gmt.h"
#include "intern.h"
#include "probe.h"
#include "python.h"
#include "writer_api.h"

/*
 * Interning (intern.h). A stack is hashed and looked up in one global table of the
 * library's lock-free kind: an entry is complete in the arena before its slot is
 * published, and its id is drawn after, so ids are dense (1, 2, 3…) even when two
 * threads race to insert the same stack.
 *
 * The entry's tail is laid out exactly as a STACK record, so the winner hands it to
 * gmt_emit as it is: no copy, no big buffer on the caller's stack.
 *
 * Ordering across threads: the thread that inserts a stack emits its STACK record
 * before it returns the id, so every thread's own records follow the definitions of
 * the stacks it introduced. Another thread may meanwhile find the id and use it in a
 * record that reaches the file before the first thread's buffer is flushed; the CLI
 * resolves stack ids only after reading the whole file, so that order is fine.
 *
 * Nothing here allocates with malloc, takes a lock or makes a syscall after the
 * one-time setup (two mmaps, one dl_iterate_phdr, one pthread_atfork); libunwind's
 * trace cache makes one mmap per thread the first time that thread unwinds.
 */

#define TABLE_SLOTS (1u << 18)                 /* 262144 slots, 2 MiB of address space */
#define ARENA_BYTES ((size_t)64 << 20)         /* address space; touched pages only */
#define DEPTH_MAX 256                          /* largest GPUMEMTRACE_STACK_DEPTH */
#define SLACK 8                                /* libunwind's and our own frames above the anchor */
#define RAW_MAX (DEPTH_MAX + 32 + SLACK)
#define MERGED_MAX (RAW_MAX + GMT_PY_DEPTH_MAX) /* native frames and the Python frames */

struct entry {
    uint64_t hash;
    /* from here on: a struct gmt_rec_stack */
    struct gmt_rec h;
    uint32_t stack_id;         /* the table's id, drawn once the entry is published */
    uint32_t depth;
    uint64_t ip[];
};

_Static_assert(offsetof(struct entry, stack_id) - offsetof(struct entry, h) ==
                   offsetof(struct gmt_rec_stack, stack_id),
               "entry must end in a STACK record");
_Static_assert(offsetof(struct entry, depth) - offsetof(struct entry, h) ==
                   offsetof(struct gmt_rec_stack, depth),
               "entry must end in a STACK record");
_Static_assert(offsetof(struct entry, ip) - offsetof(struct entry, h) ==
                   offsetof(struct gmt_rec_stack, ip),
               "entry must end in a STACK record");
_Static_assert(offsetof(struct entry, hash) == 0, "an interned entry starts with its hash");

static struct gmt_once setup_once;
static struct gmt_intern stacks = GMT_INTERN_INIT;
static const struct gmt_intern_kind stack_kind;
static uintptr_t own_lo, own_hi; /* our shared object's code, when we are one */
static bool fast_walk;           /* unwind.c's walk is set up and wanted */
/* Captures given a frame that the fast tracer could not finish (then unw_backtrace did). */
_Atomic unsigned long gmt_stack_slow_captures;

/* Frames as libunwind returns them; thread-local because a capture can be 2 KiB and
 * hooks run on stacks we don't own. */
static GMT_TLS union {
    void *p[MERGED_MAX];
    uint64_t u[MERGED_MAX];
} raw;
/* The thread's Python frames, when it runs Python (python.c). */
static GMT_TLS struct gmt_py_stack py;
static GMT_TLS int capturing;
/* The stack this thread interned last: a program allocating in a loop asks for the same
 * stack again and again, and then the compare alone answers, without hash or probe. */
static GMT_TLS struct entry *last;

_Static_assert(sizeof(void *) == sizeof(uint64_t), "64-bit targets only");

struct own_search {
    uintptr_t probe;
    unsigned index;
};

static int find_own(struct dl_phdr_info *info, size_t size, void *data)
{
    struct own_search *s = data;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uintptr_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (s->probe >= lo && s->probe < hi) {
        /* The first object is the main program: when the library is linked into it
         * (tests), its range is the program's code, which must not be dropped. */
        if (s->index > 0) {
            own_lo = lo;
            own_hi = hi;
        }
        return 1;
    }
    s->index++;
    return 0;
}

/* A fork child writes its own file, which must define every stack it uses: it starts
 * with an empty table (the parent's entries would have ids whose STACK records only
 * the parent's file holds). */
static void fork_child(void)
{
    gmt_intern_reset(&stacks, &stack_kind);
    capturing = 0;
    last = NULL;
}

/* A child forked while another thread was inside setup() would wait for it forever:
 * that thread does not exist in the child. It starts the setup again (what the
 * half-done one mapped stays mapped, unused). Registered at load, since fork_child
 * above is registered only once setup is done. */
static void fork_child_setup(void)
{
    gmt_once_forked(&setup_once);
}

__attribute__((constructor)) static void register_fork_child_setup(void)
{
    pthread_atfork(NULL, NULL, fork_child_setup);
}

static bool setup(void)
{
    int st = gmt_once_enter(&setup_once);
    if (GMT_LIKELY(st == GMT_ONCE_READY))
        return true;
    if (st != GMT_ONCE_BUSY) /* failed, or a handler inside our own setup */
        return false;
    if (!gmt_intern_map(&stacks, &stack_kind)) {
        gmt_warn("no memory for the stack table: stacks are not recorded");
        gmt_once_leave(&setup_once, false);
        return false;
    }
    struct own_search s = { (uintptr_t)&gmt_stack_capture, 0 };
    dl_iterate_phdr(find_own, &s);
    /* libunwind's default global cache serialises its slow path (a stack through code not
     * seen before) behind a lock taken with signals blocked, two syscalls each time.
     * Per-thread caches need neither; their TLS is reserved whether used or not. */
    unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
    fast_walk = gmt_opt.fast_unwind && gmt_unwind_setup();
    pthread_atfork(NULL, NULL, fork_child);
    gmt_once_leave(&setup_once, true);
    return true;
}

/* Four independent multiply chains: one chain's latency per frame made hashing a deep
 * stack cost as much as unwinding it. Collisions only cost a compare. */
static uint64_t hash_frames(const uint64_t *ip, uint32_t n)
{
    const uint64_t k = 0x9e3779b97f4a7c15ull;
    uint64_t h0 = n, h1 = 1, h2 = 2, h3 = 3;
    uint32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        h0 = (h0 ^ ip[i]) * k;
        h1 = (h1 ^ ip[i + 1]) * k;
        h2 = (h2 ^ ip[i + 2]) * k;
        h3 = (h3 ^ ip[i + 3]) * k;
    }
    for (; i < n; i++)
        h0 = (h0 ^ ip[i]) * k;
    uint64_t h = h0 ^ (h1 >> 7 | h1 << 57) ^ (h2 >> 19 | h2 << 45) ^ (h3 >> 31 | h3 << 33);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

struct frames {
    const uint64_t *ip;
    uint32_t n;
};

static inline bool same_frames(const void *entry, const void *key)
{
    const struct entry *e = entry;
    const struct frames *f = key;
    return e->depth == f->n && memcmp(e->ip, f->ip, (size_t)f->n * sizeof(uint64_t)) == 0;
}

static inline size_t fill_frames(void *entry, const void *key, size_t bytes)
{
    struct entry *e = entry;
    const struct frames *f = key;
    e->h.type = GMT_REC_STACK;
    e->h.aux = 0;
    e->h.size = (uint32_t)(bytes - offsetof(struct entry, h));
    e->depth = f->n;
    memcpy(e->ip, f->ip, (size_t)f->n * sizeof(uint64_t));
    return bytes;
}

static const struct gmt_intern_kind stack_kind = {
    .slots = TABLE_SLOTS,
    .arena_bytes = ARENA_BYTES,
    .id_at = offsetof(struct entry, stack_id),
    .full_warning = "stack table full: later new stacks are not recorded",
    .same = same_frames,
    .fill = fill_frames,
};

/* The stack's id (0: none), and in *found its entry, when one was found or made. */
static uint32_t intern(const uint64_t *ip, uint32_t n, struct entry **found)
{
    struct frames f = { ip, n };
    uint32_t id;
    bool made;
    struct entry *e = gmt_intern(&stacks, &stack_kind, hash_frames(ip, n), &f,
                                 sizeof(struct entry) + (size_t)n * sizeof(uint64_t), &id, &made);
    if (made)
        gmt_emit(&e->h, 0);
    if (id)
        *found = e;
    return id;
}

#if defined(__x86_64__)
/* libunwind's fast tracer behind unw_backtrace (the member that defines it is linked in
 * because unw_backtrace needs it; weak, so a libunwind without it only costs the fast
 * path). Same contract as in its Gtrace.c: fills addresses, *n in/out, < 0 when a frame
 * needs the slow unwinder. */
extern int _ULx86_64_tdep_trace(unw_cursor_t *cursor, void **addresses, int *n)
    __attribute__((weak));

/* The stack from the caller of the function whose frame record is at `frame`, walked by
 * the same tracer as unw_backtrace but started in the application's frame: the frames of
 * the hook, the event code and this function are never walked. A frame record is
 * {saved rbp, return address}, just below the caller's stack pointer at the call: that is
 * the state the tracer needs (rip, rsp, rbp), exactly as the caller resumes. -1 when the
 * fast tracer is missing or gave up (then the caller unwinds the usual way). */
static int trace_from_frame(const void *frame, void **out, int max)
{
    if (!_ULx86_64_tdep_trace)
        return -1;
    const uintptr_t *fp = frame;
    /* Only the three registers are set: unw_init_local notes where each register lives
     * and reads rip and rsp, the tracer reads rbp too; nothing else is read unless the
     * tracer gives up, and then this cursor is dropped. (Zeroing the ~1 KiB context cost
     * more than a frame's unwinding.) */
    unw_context_t uc;
    uc.uc_mcontext.gregs[REG_RBP] = (greg_t)fp[0];
    uc.uc_mcontext.gregs[REG_RIP] = (greg_t)fp[1];
    uc.uc_mcontext.gregs[REG_RSP] = (greg_t)(uintptr_t)(fp + 2);
    unw_cursor_t c;
    if (max < 1 || unw_init_local(&c, &uc) < 0)
        return -1;
    /* The tracer writes the callers of the context's frame (unw_backtrace's context is
     * its own frame, which it leaves out): the return address itself goes first. */
    out[0] = (void *)fp[1];
    int n = max - 1;
    if (_ULx86_64_tdep_trace(&c, out + 1, &n) < 0)
        return -1;
    return n + 1;
}
#else
static int trace_from_frame(const void *frame, void **out, int max)
{
    (void)frame, (void)out, (void)max;
    return -1;
}
#endif

int gmt_stack_walk_libunwind(const void *frame, uint64_t *out, int max)
{
    if (!setup())
        return -1;
    return trace_from_frame(frame, (void **)out, max);
}

/* Frames inside this library (a hook reached again through the program's callbacks, a
 * wrapper) are dropped; the check is one unsigned compare per frame, and the copy is
 * made only when there is something to drop. */
static uint32_t drop_own(uint64_t *ip, uint32_t n)
{
    uint64_t lo = own_lo, span = own_hi - own_lo;
    bool any = false;
    for (uint32_t i = 0; i < n; i++)
        any |= ip[i] - lo < span || ip[i] == 0;
    if (GMT_LIKELY(!any))
        return n;
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!(ip[i] - lo < span || ip[i] == 0))
            ip[k++] = ip[i];
    return k;
}

/* The Python frames merged into the n native frames of ip (which has room for them all),
 * as py-spy's --native does: each activation of the evaluation loop on the native stack,
 * innermost first, gets the next group of Python frames, just inside it (the frames it
 * runs, innermost first, then its own native frame); groups left over (the native stack
 * was cut at its depth, or the loop's frames were not recognised) go after the native
 * frames, outermost last. Done in place from the end: a native frame only moves out.
 * Returns the new depth. */
static uint32_t merge_python(uint64_t *ip, uint32_t n, const struct gmt_py_stack *p)
{
    uint32_t evals = 0, groups = 0, used = 0;
    for (uint32_t i = 0; i < n; i++)
        if (gmt_python_eval_frame(p, ip[i])) {
            if (groups < p->ngroups)
                used += p->group[groups++];
            evals++;
        }
    if (used > p->n)
        used = p->n; /* cannot be: groups sum to n */
    memcpy(ip + n + used, p->ip + used, (size_t)(p->n - used) * sizeof *ip);
    uint32_t pj = used, e = evals;
    for (uint32_t i = n; i-- > 0 && pj;) {
        ip[i + pj] = ip[i];
        if (gmt_python_eval_frame(p, ip[i]) && --e < groups) {
            uint32_t k = p->group[e] <= pj ? p->group[e] : pj;
            pj -= k;
            memcpy(ip + i + pj, p->ip + pj, (size_t)k * sizeof *ip);
        }
    }
    return n + p->n;
}

__attribute__((noinline)) uint32_t gmt_stack_capture(const void *frame)
{
    long depth = gmt_opt.stack_depth;
    if (depth <= 0 || capturing)
        return 0;
    if (depth > DEPTH_MAX)
        depth = DEPTH_MAX;
    if (!setup())
        return 0;
    capturing = 1;
    gmt_lib_enter_keep_errno();
    GMT_PROBE_BEGIN(t0);

    int got = -1;
    if (frame && fast_walk)
        got = gmt_unwind_walk(frame, raw.u, (int)depth);
    if (got < 0 && frame)
        got = trace_from_frame(frame, raw.p, (int)depth);
    uint32_t n;
    if (got >= 0) {
        n = (uint32_t)got;
        /* From the hook's frame, frames of ours are on the stack only inside a wrapper
         * that runs the real function (an NCCL call allocating), or when a signal handler
         * allocates while this thread records another event: only then look. (A handler
         * that interrupts a hook in the few instructions between its real call and the
         * event code keeps that hook's frame: rare, and it names the right caller.) */
        if (gmt_ts.guard.in_wrapper > 0 || gmt_ts.guard.in_event > 1)
            n = drop_own(raw.u, n);
    } else {
        if (frame)
            atomic_fetch_add_explicit(&gmt_stack_slow_captures, 1, memory_order_relaxed);
        int want = (int)depth + SLACK;
        if (want > RAW_MAX)
            want = RAW_MAX;
        got = unw_backtrace(raw.p, want);
        /* Start at the return address into the code that called the function whose frame
         * was given (or ours), whatever libunwind and the compiler put above it. */
        uintptr_t anchor = frame ? ((const uintptr_t *)frame)[1]
                                 : (uintptr_t)__builtin_return_address(0);
        int first = -1;
        for (int i = 0; i < got && i < SLACK + 4; i++) {
            if ((uintptr_t)raw.p[i] == anchor) {
                first = i;
                break;
            }
        }
        if (first < 0)
            first = 2; /* no anchor: unw_backtrace's own frame and ours */
        n = got > first ? (uint32_t)(got - first) : 0;
        if (n > (uint32_t)depth)
            n = (uint32_t)depth;
        memmove(raw.u, raw.u + first, (size_t)n * sizeof(uint64_t));
        n = drop_own(raw.u, n);
    }
    GMT_PROBE_END(t0, GMT_PROBE_WALK);
    GMT_PROBE_COUNT(GMT_PROBE_NATIVE_FRAMES, n);
    GMT_PROBE_BEGIN(tp);
    if (gmt_opt.python && gmt_python_frames(&py))
        n = merge_python(raw.u, n, &py);
    GMT_PROBE_END(tp, GMT_PROBE_PY);
    GMT_PROBE_COUNT(GMT_PROBE_PY_FRAMES, py.n);
    GMT_PROBE_BEGIN(ti);

    uint32_t id = 0;
    struct entry *e = last;
    if (e && e->depth == n && memcmp(e->ip, raw.u, (size_t)n * sizeof(uint64_t)) == 0)
        id = gmt_intern_id(e, offsetof(struct entry, stack_id));
    else if (n)
        id = intern(raw.u, n, &last);

    GMT_PROBE_END(ti, GMT_PROBE_INTERN);
    GMT_PROBE_END(t0, GMT_PROBE_STACK);
    gmt_lib_leave_keep_errno();
    capturing = 0;
    return id;
}
