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
    long pa = -1, pb = -1;
    for (int s = 0; s < 12; s++) {
        struct timespec ts = {0, 250 * 1000 * 1000};
        nanosleep(&ts, NULL);
        if (na == pa || nb == pb) {
            printf("no progress: calls %ld loads %ld\n", na, nb);
            fflush(stdout);
            _exit(3);
        }
        pa = na;
        pb = nb;
    }
    printf("progress: calls %ld loads %ld\n", na, nb);
    fflush(stdout);
    _exit(0);
}
