/* robust_env.c: a traced program's view of its own process: its fds, its file size limit, its environment, and an NVTX client as NVTX v3 initialises one. */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_cuda.h"

extern char **environ;

/* Allocations enough to make records, a stack (the unwinder's first use) and the file. */
static void allocate(int n)
{
    for (int i = 0; i < n; i++) {
        void *p = NULL;
        if (cudaMalloc(&p, 4096) != cudaSuccess)
            exit(3);
        cudaFree(p);
    }
    usleep(20000); /* the library's thread is up */
}

/* NVTX v3's first call, reduced to what a client does (nvtxInitOnce): read the
 * variable with getenv, load the tool, hand its entry point the export table, then call
 * through the slots it filled. */
typedef void (*fn)(void);
static fn core[16];
static fn *core_tab[17];
static int get_module(int module, fn ***out, unsigned *size)
{
    if (module != 1)
        return 0;
    *out = core_tab;
    *size = 16;
    return 1;
}
static struct {
    size_t struct_size;
    int (*get_module)(int, fn ***, unsigned *);
} callbacks = {16, get_module};
static const void *get_table(uint32_t id)
{
    return id == 1 ? (const void *)&callbacks : NULL;
}

static int nvtx_client(void)
{
    for (int i = 1; i < 16; i++)
        core_tab[i] = &core[i];
    const char *tool = getenv("NVTX_INJECTION64_PATH");
    if (tool && *tool) {
        void *h = dlopen(tool, RTLD_LAZY);
        int (*init)(const void *(*)(uint32_t)) =
            h ? (int (*)(const void *(*)(uint32_t)))dlsym(h, "InitializeInjectionNvtx2") : NULL;
        if (init)
            init(get_table);
    }
    int (*push)(const char *) = (int (*)(const char *))core[9];
    int (*pop)(void) = (int (*)(void))core[11];
    for (int step = 0; step < 3; step++) {
        if (push)
            push("train_step");
        allocate(2);
        if (pop)
            pop();
    }
    printf("nvtx: %s\n", push ? "injected" : "no tool");
    return 0;
}

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* What the parity costs: the library's one look at its own path at load (dladdr and
 * realpath, done here the same way on LIB), and getenv, which every call of the program
 * now passes through the library's. */
static int bench(const char *lib)
{
    void *h = lib ? dlopen(lib, RTLD_NOLOAD | RTLD_LAZY) : NULL;
    void *sym = h ? dlsym(h, "InitializeInjectionNvtx2") : (void *)bench;
    char buf[PATH_MAX];
    int n = 2000, m = 2000000;
    volatile long sink = 0;
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
        Dl_info info;
        if (!dladdr(sym, &info) || !realpath(info.dli_fname, buf))
            return 1;
    }
    double t1 = now_ns();
    for (int i = 0; i < m; i++)
        sink += (long)getenv("HOME");
    double t2 = now_ns();
    for (int i = 0; i < m; i++)
        sink += (long)getenv("NCCL_PROFILER_PLUGIN");
    double t3 = now_ns();
    printf("self path %.1f us, getenv(HOME) %.0f ns, getenv(NCCL_PROFILER_PLUGIN) %.0f ns\n",
           (t1 - t0) / n / 1e3, (t2 - t1) / m, (t3 - t2) / m);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "alloc")) {
        allocate(argc > 2 ? atoi(argv[2]) : 1);
        return 0;
    }
    if (!strcmp(mode, "stdout")) {
        /* started with fd 1 closed: the write must fail as it does untraced */
        allocate(1);
        errno = 0;
        ssize_t n = write(1, "hello\n", 6);
        fprintf(stderr, "write to fd 1: %zd errno %d\n", n, n < 0 ? errno : 0);
        return 0;
    }
    if (!strcmp(mode, "fds")) {
        /* every fd above 2 the process holds, whether it survives exec */
        allocate(1);
        DIR *d = opendir("/proc/self/fd");
        int self = d ? dirfd(d) : -1;
        struct dirent *e;
        while (d && (e = readdir(d))) {
            int fd = atoi(e->d_name);
            if (e->d_name[0] == '.' || fd == self)
                continue;
            char link[64], target[256] = "";
            snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
            ssize_t k = readlink(link, target, sizeof target - 1);
            target[k > 0 ? k : 0] = 0;
            int fl = fcntl(fd, F_GETFD);
            printf("fd %d %s %s\n", fd, fl >= 0 && (fl & FD_CLOEXEC) ? "cloexec" : "inherited",
                   strncmp(target, "pipe:", 5) ? target : "pipe");
        }
        if (d)
            closedir(d);
        return 0;
    }
    if (!strcmp(mode, "openmax")) {
        /* how many files the program can still open */
        allocate(1);
        int n = 0;
        while (open("/dev/null", O_RDONLY) >= 0)
            n++;
        printf("opened %d, then errno %d\n", n, errno);
        return 0;
    }
    if (!strcmp(mode, "env")) {
        /* what getenv says, what the environment holds, what a child inherits */
        const char *g = getenv("NVTX_INJECTION64_PATH"), *p = getenv("NCCL_PROFILER_PLUGIN");
        int in_env = 0;
        for (char **e = environ; *e; e++)
            in_env += !strncmp(*e, "NVTX_INJECTION64_PATH=", 22) || !strncmp(*e, "NCCL_PROFILER_PLUGIN=", 21);
        printf("getenv nvtx %s\ngetenv nccl %s\nin environ %d\n", g ? g : "(unset)", p ? p : "(unset)", in_env);
        fflush(stdout);
        return system("echo child ${NVTX_INJECTION64_PATH-unset} ${NCCL_PROFILER_PLUGIN-unset}") ? 4 : 0;
    }
    if (!strcmp(mode, "getenv")) {
        /* what getenv answers for each name given: the same traced as untraced */
        for (int i = 2; i < argc; i++) {
            const char *v = getenv(argv[i]);
            printf("[%s] %s%s\n", argv[i], v ? "=" : "unset", v ? v : "");
        }
        return 0;
    }
    if (!strcmp(mode, "nvtx"))
        return nvtx_client();
    if (!strcmp(mode, "bench"))
        return bench(argc > 2 ? argv[2] : NULL);
    fprintf(stderr, "usage: robust_env alloc N | stdout | fds | openmax | env | getenv NAME... | nvtx | bench [LIB]\n");
    return 2;
}
