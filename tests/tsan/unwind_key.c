/* tests/tsan/unwind_key.c: libunwind's pthread_key_create in the ThreadSanitizer build (mk/tsan.mk), without the destructor that TSan can't survive. */
#include <pthread.h>

/*
 * libunwind's per-thread trace cache (unw_backtrace) frees itself in a key destructor
 * that re-arms itself until the last destructor round; TSan's thread finaliser does the
 * same and, created first, runs first in that round. libunwind's destructor then locks
 * its mempool mutex through TSan's interceptor for a thread TSan has already finished,
 * and the process dies in __tsan::MutexPreLock. The TSan build's copy of libunwind.a
 * calls this instead of pthread_key_create (objcopy --redefine-sym): the key has no
 * destructor, and an exiting thread's cache (a few KiB) is left behind, in tests only.
 */
int gmt_tsan_unwind_key_create(pthread_key_t *key, void (*destructor)(void *));

int gmt_tsan_unwind_key_create(pthread_key_t *key, void (*destructor)(void *))
{
    (void)destructor;
    return pthread_key_create(key, NULL);
}
