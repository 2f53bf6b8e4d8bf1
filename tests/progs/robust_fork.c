/* robust_fork.c: fork while the main thread's context is known and another thread has an NCCL group open on device 0: the child's own trace must describe everything its records refer to. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fake_cuda.h"
#include "fake_nccl.h"

static atomic_int opened, release_;
static ncclComm_t comm;

static void *grouper(void *arg)
{
    cudaSetDevice(0);
    ncclGroupStart();
    ncclAllReduce(NULL, NULL, 0, ncclFloat, ncclSum, comm, 0);
    atomic_store(&opened, 1);
    while (!atomic_load(&release_))
        usleep(1000);
    ncclGroupEnd();
    return NULL;
}

int main(void)
{
    cudaSetDevice(0);
    ncclUniqueId id;
    ncclGetUniqueId(&id);
    if (ncclCommInitRank(&comm, 1, id, 0) != ncclSuccess)
        return 2;
    void *p;
    cudaMalloc(&p, 1 << 20); /* the parent's file gets this thread's context */
    pthread_t t;
    pthread_create(&t, NULL, grouper, NULL);
    while (!atomic_load(&opened))
        usleep(1000);
    pid_t pid = fork();
    if (pid == 0) {
        void *q;
        int r = cudaMalloc(&q, 1 << 20);
        exit(r == 0 ? 0 : 1); /* exit, not _exit: the child's trace is written at exit */
    }
    int st = 0;
    waitpid(pid, &st, 0);
    atomic_store(&release_, 1);
    pthread_join(t, NULL);
    printf("child=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
