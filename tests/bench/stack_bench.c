/* stack_bench.c: ns per stack capture at several recursion depths: gmt_stack_capture and the two libunwind paths. */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gmt.h"
#include "writer_api.h"

enum method { CAPTURE, BACKTRACE, STEP };

static volatile int iterations_v;
static void *frames[512];

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int step_backtrace(void **buf, int max)
{
    unw_context_t uc;
    unw_cursor_t c;
    unw_getcontext(&uc);
    if (unw_init_local(&c, &uc) < 0)
        return 0;
    int n = 0;
    while (n < max && unw_step(&c) > 0) {
        unw_word_t ip;
        unw_get_reg(&c, UNW_REG_IP, &ip);
        buf[n++] = (void *)ip;
    }
    return n;
}

/* Runs the timed loop at the bottom of `depth` frames of recursion; returns ns/op. */
__attribute__((noinline)) static double at_depth(int depth, enum method m)
{
    double r;
    if (depth > 0) {
        r = at_depth(depth - 1, m);
        __asm__ volatile("" ::: "memory");
        return r;
    }
    int iters = iterations_v;
    uint32_t sink = 0;
    uint64_t t0 = now_ns();
    for (int i = 0; i < iters; i++) {
        switch (m) {
        case CAPTURE: sink += gmt_stack_capture(NULL); break;
        case BACKTRACE: sink += (uint32_t)unw_backtrace(frames, 256); break;
        case STEP: sink += (uint32_t)step_backtrace(frames, 256); break;
        }
    }
    uint64_t t1 = now_ns();
    __asm__ volatile("" ::"r"(sink));
    return (double)(t1 - t0) / iters;
}

static double median5(int depth, enum method m)
{
    double v[5];
    for (int i = 0; i < 5; i++)
        v[i] = at_depth(depth, m);
    for (int i = 0; i < 5; i++)
        for (int j = i + 1; j < 5; j++)
            if (v[j] < v[i]) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
            }
    return v[2];
}

int main(int argc, char **argv)
{
    char path[] = "/tmp/gmt-stack-bench-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    unlink(path);
    gmt_opt.output = path;
    gmt_opt.quiet = 1;
    if (!gmt_writer_ready()) {
        fprintf(stderr, "stack_bench: cannot open %s\n", path);
        return 1;
    }
    iterations_v = argc > 1 ? atoi(argv[1]) : 20000;
    static const int depths[] = { 0, 8, 20, 64 };
    printf("%-10s %12s %12s %12s %14s %14s\n", "recursion", "capture-off", "capture-48",
           "capture-256", "unw_backtrace", "unw_step");
    for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
        int d = depths[i];
        gmt_opt.stack_depth = 0;
        double off = median5(d, CAPTURE);
        gmt_opt.stack_depth = 48;
        double c48 = median5(d, CAPTURE);
        gmt_opt.stack_depth = 256;
        double c256 = median5(d, CAPTURE);
        double bt = median5(d, BACKTRACE);
        double st = median5(d, STEP);
        printf("%-10d %9.1f ns %9.1f ns %9.1f ns %11.1f ns %11.1f ns\n", d, off, c48, c256, bt, st);
    }
    gmt_writer_finish();
    unlink(path);
    return 0;
}
