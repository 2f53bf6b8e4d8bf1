/* hooks_env.c: the library's getenv: the variables by which NVTX and NCCL load a tool are answered with the library's own path. */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "gmt.h"

/*
 * NVTX (NVTX_INJECTION64_PATH) and NCCL (NCCL_PROFILER_PLUGIN) load their tool by the path
 * in a variable, each NVTX copy at its own first call and NCCL at each communicator's
 * init, all through getenv via the PLT. A plain LD_PRELOAD records what `gpumemtrace run`
 * records because the library's getenv answers these two names with its own path when
 * the process has no value of its own. The environment itself is not changed: the program
 * and its children see it as it was (a child that is preloaded answers for itself), and
 * the answer holds from the first relocation on, before any constructor (ours included)
 * has run, so no NVTX client can initialise before it. Every other name is
 * answered from the environment as glibc's getenv answers it (gmt_env, options.c).
 */

/* Whether a value set by someone else names this library all the same (another path to
 * the same file: `run`'s, or one the user wrote). */
static bool names_us(const char *v, const char *self)
{
    if (!strcmp(v, self))
        return true;
    struct stat a, b;
    return stat(v, &a) == 0 && stat(self, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static _Atomic int noted_other[2];

static char *answer(int which, const char *name, char *have, const char *ours)
{
    if (have) {
        /* another tool holds it: NVTX or NCCL loads that one, and we say so once */
        if (*have && ours && !names_us(have, ours) &&
            !atomic_exchange_explicit(&noted_other[which], 1, memory_order_relaxed))
            gmt_warn("%s=%s is another tool's: %s", name, have,
                     which == 0 ? "NVTX ranges are not recorded"
                                : "NCCL's algorithm, protocol and channels are not recorded");
        return have;
    }
    return (char *)ours;
}

GMT_EXPORT char *getenv(const char *name)
{
    char *v = gmt_env(name);
    if (GMT_LIKELY(name[0] != 'N' || (name[1] != 'V' && name[1] != 'C')))
        return v;
    int which = !strcmp(name, "NVTX_INJECTION64_PATH") ? 0 : !strcmp(name, "NCCL_PROFILER_PLUGIN") ? 1 : -1;
    if (which < 0)
        return v;
    int e = errno;
    gmt_init_once();
    char *r = answer(which, name, v, which == 0 ? gmt_nvtx_injection_env() : gmt_nccl_profiler_env());
    errno = e;
    return r;
}
