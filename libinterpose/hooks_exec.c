/* hooks_exec.c: the exec family: the old image's records and its END reach the file before the real call. */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <unistd.h>

#include "gmt.h"
#include "resolve.h"
#include "writer_api.h"

/*
 * Each function glibc exports is hooked on its own: glibc's execl, execvp and the rest
 * reach execve by an internal alias, never through the PLT, so a hook on execve alone
 * would miss them. posix_spawn and system are not hooked: their child (a vfork-like
 * clone) execs at once and has traced nothing.
 *
 * The real functions are looked up at library load (gmt_exec_resolve): exec is called
 * from fork children of multithreaded programs, vfork children and signal handlers,
 * where dlsym may wait for a loader lock that a thread that no longer exists held.
 */
#define GMT_EXEC_HOOKS(X)                                                                    \
    X(execve)                                                                                \
    X(execv)                                                                                 \
    X(execvp)                                                                                \
    X(execvpe)                                                                               \
    X(fexecve)                                                                               \
    X(execveat)

enum {
#define GMT_X(name) SLOT_##name,
    GMT_EXEC_HOOKS(GMT_X)
#undef GMT_X
    NSLOTS
};

static const char *const slot_name[NSLOTS] = {
#define GMT_X(name) #name,
    GMT_EXEC_HOOKS(GMT_X)
#undef GMT_X
};

static _Atomic(void *) real_fn[NSLOTS];

typedef void *dlsym_fn(void *, const char *);

static void *lookup(int slot)
{
    dlsym_fn *real_dlsym = (dlsym_fn *)gmt_real_dl(GMT_DL_DLSYM);
    return real_dlsym ? real_dlsym(RTLD_NEXT, slot_name[slot]) : NULL;
}

void gmt_exec_resolve(void)
{
    for (int i = 0; i < NSLOTS; i++)
        if (!atomic_load_explicit(&real_fn[i], memory_order_relaxed))
            atomic_store_explicit(&real_fn[i], lookup(i), memory_order_relaxed);
}

/* The real function; looked up now only if exec comes before the library's constructor
 * ran (from another library's constructor). */
static void *real(int slot)
{
    void *p = atomic_load_explicit(&real_fn[slot], memory_order_relaxed);
    if (GMT_UNLIKELY(!p)) {
        p = lookup(slot);
        atomic_store_explicit(&real_fn[slot], p, memory_order_relaxed);
    }
    return p;
}

typedef int execve_fn(const char *, char *const[], char *const[]);
typedef int execv_fn(const char *, char *const[]);
typedef int fexecve_fn(int, char *const[], char *const[]);
typedef int execveat_fn(int, const char *, char *const[], char *const[], int);

/* The real call between the writer's two steps; its result and errno go back as they are
 * (both writer steps keep errno). A missing real function is ENOSYS, as a libc without
 * it would answer. */
#define EXEC_CALL(slot, type, ...)                                                           \
    do {                                                                                     \
        type *fn_ = (type *)real(slot);                                                      \
        int token_ = gmt_writer_exec_begin();                                                \
        int rc_;                                                                             \
        if (fn_)                                                                             \
            rc_ = fn_(__VA_ARGS__);                                                          \
        else {                                                                               \
            errno = ENOSYS;                                                                  \
            rc_ = -1;                                                                        \
        }                                                                                    \
        gmt_writer_exec_end(token_);                                                         \
        return rc_;                                                                          \
    } while (0)

GMT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    EXEC_CALL(SLOT_execve, execve_fn, path, argv, envp);
}

GMT_EXPORT int execv(const char *path, char *const argv[])
{
    EXEC_CALL(SLOT_execv, execv_fn, path, argv);
}

GMT_EXPORT int execvp(const char *file, char *const argv[])
{
    EXEC_CALL(SLOT_execvp, execv_fn, file, argv);
}

GMT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    EXEC_CALL(SLOT_execvpe, execve_fn, file, argv, envp);
}

GMT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    EXEC_CALL(SLOT_fexecve, fexecve_fn, fd, argv, envp);
}

GMT_EXPORT int execveat(int dirfd, const char *path, char *const argv[], char *const envp[],
                        int flags)
{
    EXEC_CALL(SLOT_execveat, execveat_fn, dirfd, path, argv, envp, flags);
}

/*
 * The list forms build the argument vector on the stack, as glibc's do, and go on as the
 * vector form (its hook included: one flush). An argument count that does not fit an int
 * is E2BIG, glibc's answer.
 */
#define ARGV_FROM_LIST(arg, ap, argv, envp_out)                                              \
    size_t argc_ = 1;                                                                        \
    va_start(ap, arg);                                                                       \
    while (va_arg(ap, char *)) {                                                             \
        if (++argc_ >= (size_t)__INT_MAX__ - 1) {                                            \
            va_end(ap);                                                                      \
            errno = E2BIG;                                                                   \
            return -1;                                                                       \
        }                                                                                    \
    }                                                                                        \
    va_end(ap);                                                                              \
    char *argv[argc_ + 1];                                                                   \
    argv[0] = (char *)arg;                                                                   \
    va_start(ap, arg);                                                                       \
    for (size_t i_ = 1; i_ <= argc_; i_++)                                                   \
        argv[i_] = va_arg(ap, char *);                                                       \
    envp_out;                                                                                \
    va_end(ap)

GMT_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    ARGV_FROM_LIST(arg, ap, argv, (void)0);
    return execv(path, argv);
}

GMT_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    ARGV_FROM_LIST(arg, ap, argv, (void)0);
    return execvp(file, argv);
}

GMT_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    char *const *envp;
    ARGV_FROM_LIST(arg, ap, argv, envp = va_arg(ap, char *const *));
    return execve(path, argv, envp);
}
