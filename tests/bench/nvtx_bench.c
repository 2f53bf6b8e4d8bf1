/* nvtx_bench.c: CPU ns per NVTX range push/pop pair, as an NVTX copy makes them: through its function slots, with the injection library NVTX_INJECTION64_PATH names, or none. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * What NVTX v3 does, reduced to the part that costs: each call goes through the copy's
 * slot, a no-op when no tool took it (the NULL check an untraced program pays); with a
 * tool, the copy loads NVTX_INJECTION64_PATH at its first call and hands
 * InitializeInjectionNvtx2 its export table (module tables of pointers to its slots).
 * MODE a: nvtxRangePushA/nvtxRangePop (torch.cuda.nvtx); MODE d: nvtxDomainRangePushEx
 * with a registered string and nvtxDomainRangePop (the PyPI nvtx package).
 */
typedef void (*fn)(void);
static fn core[16], core2[16];
static fn *core_tab[17], *core2_tab[17];

static int get_module(int module, fn ***out, unsigned *size)
{
    if (module != 1 && module != 5)
        return 0;
    *out = module == 1 ? core_tab : core2_tab;
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

struct attr {
    uint16_t version, size;
    uint32_t category;
    int32_t color_type;
    uint32_t color;
    int32_t payload_type, reserved0;
    uint64_t payload;
    int32_t message_type, pad;
    const void *message;
};

static double cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile long sink;

int main(int argc, char **argv)
{
    if (argc != 3 || (argv[1][0] != 'a' && argv[1][0] != 'd')) {
        fprintf(stderr, "usage: nvtx_bench a|d PAIRS\n");
        return 2;
    }
    long pairs = atol(argv[2]);
    for (int i = 1; i < 16; i++) {
        core_tab[i] = &core[i];
        core2_tab[i] = &core2[i];
    }
    const char *tool = getenv("NVTX_INJECTION64_PATH");
    if (tool && *tool) {
        void *h = dlopen(tool, RTLD_LAZY);
        int (*init)(const void *(*)(uint32_t)) = h ? (int (*)(const void *(*)(uint32_t)))dlsym(h, "InitializeInjectionNvtx2") : NULL;
        if (!init || !init(get_table)) {
            fprintf(stderr, "nvtx_bench: %s did not take the injection\n", tool);
            return 1;
        }
    }
    int (*push_a)(const char *) = (int (*)(const char *))core[9];
    int (*pop)(void) = (int (*)(void))core[11];
    const void *(*create)(const char *) = (const void *(*)(const char *))core2[12];
    const void *(*reg)(const void *, const char *) = (const void *(*)(const void *, const char *))core2[10];
    int (*d_push)(const void *, const struct attr *) = (int (*)(const void *, const struct attr *))core2[4];
    int (*d_pop)(const void *) = (int (*)(const void *))core2[5];
    const void *dom = create ? create("bench") : NULL;
    struct attr a = {.version = 3, .size = 48, .message_type = 3,
                     .message = reg ? reg(dom, "train_step") : NULL};
    double t0 = 0;
    for (int pass = 0; pass < 2; pass++) { /* a warm-up pass, then the timed one */
        long n = pass ? pairs : pairs / 10 + 1000;
        if (pass)
            t0 = cpu_ns();
        for (long i = 0; i < n; i++) {
            if (argv[1][0] == 'a') {
                sink += push_a ? push_a("train_step") : -2;
                sink += pop ? pop() : -2;
            } else {
                sink += d_push ? d_push(dom, &a) : -2;
                sink += d_pop ? d_pop(dom) : -2;
            }
        }
    }
    printf("%.2f %ld\n", (cpu_ns() - t0) / (double)pairs, pairs);
    return 0;
}
