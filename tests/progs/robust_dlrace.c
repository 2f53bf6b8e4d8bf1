/* robust_dlrace.c: one thread calls a hooked NCCL name whose real definition is missing (each call a failed lookup) while another dlopens and dlcloses: must never deadlock. Usage: robust_dlrace LIBNCCL XLIB1 XLIB2 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

/* Weak: bound to the tracer's export when it is preloaded. */
extern int ncclCommRevoke(void *comm, int flags) __attribute__((weak));

static volatile long na, nb;
static char **libs;

static void *caller(void *arg)
{
    for (;;) {
        if (ncclCommRevoke)
            ncclCommRevoke((void *)0x1, 0);
        na++;
    }
    return NULL;
}

static void *loader(void *arg)
{
    for (int i = 0;; i++) {
        void *h = dlopen(libs[i & 1], RTLD_NOW);
        if (h)
            dlclose(h);
        nb++;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    libs = argv + 2;
    if (!dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))
        return 2;
    pthread_t a, b;
    pthread_create(&a, NULL, caller, NULL);
    pthread_create(&b, NULL, loader, NULL);
    /* A deadlock stops a thread for good; on a busy machine either thread can still be
     * starved of the loader lock for a few hundred ms. So: fail when one has made no
     * progress for 2 s, within 3 s of running; report the longest stall seen. */
    long pa = -1, pb = -1;
    int still_a = 0, still_b = 0, worst = 0;
    for (int s = 0; s < 30; s++) {
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        still_a = na == pa ? still_a + 1 : 0;
        still_b = nb == pb ? still_b + 1 : 0;
        if (still_a > worst)
            worst = still_a;
        if (still_b > worst)
            worst = still_b;
        if (still_a >= 20 || still_b >= 20) {
            printf("no progress for 2 s: calls %ld loads %ld\n", na, nb);
            fflush(stdout);
            _exit(3);
        }
        pa = na;
        pb = nb;
    }
    printf("progress: calls %ld loads %ld, longest stall %d ms\n", na, nb, worst * 100);
    fflush(stdout);
    _exit(0);
}
