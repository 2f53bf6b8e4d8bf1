/* fake_torch.c: scenarios of PyTorch's caching allocator on the simulated libc10_cuda.so, for tests/test_torch.c. */
/*
 * fake_torch SCENARIO, each checking its own results (exit 1 and a message when one is
 * wrong), and printing last one line the test compares with the trace:
 *   "allocs=A frees=F allocated=X reserved=Y profiler=E cuda=C ooms=O"
 * (the allocator's own counts and totals, and what reached libc10's report function).
 *   steps N      N steps: a forward pass of temporaries, freed; nothing kept
 *   oom          fills the device with 20 MiB segments of three 6 MiB blocks, frees the
 *                first and third of each, then asks for 10 MiB: no free block is that
 *                large and no segment is empty, so the allocator reports an OOM
 *   thread       a worker thread named pt_autograd_0 allocates and frees blocks while the
 *                main thread does too; the worker keeps one 1 MiB block
 *   fork         a block in the parent; the child allocates, frees and keeps a block
 *                of its own, and exits; the parent waits
 *   cpu          CPU blocks only (reported with device type CPU), and one CUDA block
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_c10.h"
#include "fake_cuda.h"

#define MIB (1024u * 1024u)

static void fail(const char *what)
{
    fprintf(stderr, "fake_torch: %s\n", what);
    exit(1);
}

static void *need(size_t n)
{
    void *p = fake_c10_cuda_malloc(n);
    if (!p)
        fail("an allocation failed");
    return p;
}

static void summary_line(void)
{
    struct fake_c10_profiler pr;
    fake_c10_profiler_stats(&pr);
    printf("allocs=%llu frees=%llu allocated=%llu reserved=%llu profiler=%llu cuda=%llu ooms=%llu\n",
           (unsigned long long)fake_c10_cuda_count_allocs(),
           (unsigned long long)fake_c10_cuda_count_frees(),
           (unsigned long long)fake_c10_cuda_allocated(),
           (unsigned long long)fake_c10_cuda_reserved(), (unsigned long long)pr.events,
           (unsigned long long)pr.cuda_events, (unsigned long long)pr.ooms);
}

static __attribute__((noinline)) void forward_pass(void)
{
    void *t[4];
    for (int i = 0; i < 4; i++)
        t[i] = need((size_t)(2 + i) * MIB);
    void *s = need(4096);
    fake_c10_cuda_free(s);
    for (int i = 3; i >= 0; i--)
        fake_c10_cuda_free(t[i]);
}

static void steps(int n)
{
    for (int i = 0; i < n; i++)
        forward_pass();
}

#define MAX_SEG 256
static void *fill[MAX_SEG][3];

static __attribute__((noinline)) int fill_device(void)
{
    size_t free_b = 0, total = 0;
    if (cudaMemGetInfo(&free_b, &total) != cudaSuccess)
        fail("cudaMemGetInfo");
    int nseg = (int)(free_b / (20 * MIB));
    if (nseg > MAX_SEG)
        nseg = MAX_SEG;
    /* what is left past the segments, taken by someone else: the 10 MiB cannot fit */
    size_t left = free_b - (size_t)nseg * 20 * MIB;
    if (left >= 2 * MIB) {
        void *p;
        if (cudaMalloc(&p, left / (2 * MIB) * (2 * MIB)) != cudaSuccess)
            fail("cudaMalloc of what is left");
    }
    for (int s = 0; s < nseg; s++)
        for (int k = 0; k < 3; k++)
            fill[s][k] = need(6 * MIB);
    return nseg;
}

static void oom(void)
{
    int nseg = fill_device();
    for (int s = 0; s < nseg; s++) {
        fake_c10_cuda_free(fill[s][0]);
        fake_c10_cuda_free(fill[s][2]);
    }
    if (fake_c10_cuda_malloc(10 * MIB))
        fail("the 10 MiB request succeeded");
    printf("segments=%d\n", nseg);
}

static void *worker(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "pt_autograd_0");
    for (int i = 0; i < 50; i++)
        fake_c10_cuda_free(need(512 * 1024));
    return need(MIB);
}

static void thread_scenario(void)
{
    pthread_t th;
    if (pthread_create(&th, NULL, worker, NULL))
        fail("pthread_create");
    for (int i = 0; i < 50; i++)
        fake_c10_cuda_free(need(256 * 1024));
    void *kept;
    pthread_join(th, &kept);
    if (!kept)
        fail("the worker's block");
}

static void fork_scenario(void)
{
    void *a = need(MIB);
    pid_t pid = fork();
    if (pid < 0)
        fail("fork");
    if (pid == 0) {
        fake_c10_cuda_free(need(3 * MIB));
        (void)need(5 * MIB);
        exit(0);
    }
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
        fail("the child");
    fake_c10_cuda_free(a);
}

static void cpu_scenario(void)
{
    for (int i = 0; i < 10; i++)
        fake_c10_cpu_free(fake_c10_cpu_malloc(1000), 1000);
    (void)need(MIB);
}

int main(int argc, char **argv)
{
    if (argc < 2)
        fail("usage: fake_torch steps N | oom | thread | fork | cpu");
    if (!strcmp(argv[1], "steps"))
        steps(argc > 2 ? atoi(argv[2]) : 5);
    else if (!strcmp(argv[1], "oom"))
        oom();
    else if (!strcmp(argv[1], "thread"))
        thread_scenario();
    else if (!strcmp(argv[1], "fork"))
        fork_scenario();
    else if (!strcmp(argv[1], "cpu"))
        cpu_scenario();
    else
        fail("unknown scenario");
    summary_line();
    return 0;
}
