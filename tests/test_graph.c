/* test_graph.c: allocations captured into CUDA graphs are recorded once as graph memory nodes, and the device's graph memory is sampled (GRAPHMEM) after launches, trims and destroys, on every lookup path. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "hook_run.h"
#include "trace_format.h"

#define PATHS HOOK_DIR "/graph_paths"
#define MIB (1ull << 20)

/* What graph_paths' trace holds: allocations, async frees, GRAPHMEM records, in order. */
struct seen {
    struct gmt_rec_alloc_ext graph_mem[8];
    unsigned ngraph_mem, pool_alloc, async_alloc_driver, free_async, fail;
    unsigned first;            /* MEMINFO FIRST records */
    struct gmt_rec_graphmem gm[16];
    unsigned ngm;
};

static void visit(const struct gmt_rec *h, void *arg)
{
    struct seen *s = arg;
    struct gmt_rec_alloc_ext x;
    if (as_alloc(h, &x)) {
        if (x.a.kind == GMT_KIND_GRAPH_MEM && s->ngraph_mem < 8)
            s->graph_mem[s->ngraph_mem++] = x;
        if (x.a.kind == GMT_KIND_POOL_ALLOC)
            s->pool_alloc++;
        if (x.a.h.aux == GMT_API_cuMemAllocAsync)
            s->async_alloc_driver++;
    } else if (h->type == GMT_REC_FREE &&
               (h->aux == GMT_API_cudaFreeAsync || h->aux == GMT_API_cuMemFreeAsync)) {
        s->free_async++;
    } else if (h->type == GMT_REC_ALLOC_FAIL) {
        s->fail++;
    } else if (h->type == GMT_REC_MEMINFO && h->aux == GMT_MEMINFO_FIRST) {
        s->first++;
    } else if (h->type == GMT_REC_GRAPHMEM && s->ngm < 16) {
        cr_assert_geq(h->size, sizeof s->gm[0]);
        memcpy(&s->gm[s->ngm++], h, sizeof s->gm[0]);
    }
}

/* Runs graph_paths PATH FLAGS untraced and traced: same output, then what the trace holds. */
static void run_path(const char *path, const char *flags, struct seen *s, struct hook_run *traced)
{
    hook_run_paths(PATHS, path, flags, traced);
    memset(s, 0, sizeof *s);
    struct hook_counts c;
    hook_read(traced->trace, &c, visit, s);
    cr_expect(c.complete, "trace of %s %s has no END", path, flags);
}

static void expect_graphmem(const char *path, const struct seen *s, unsigned i, unsigned phase,
                            uint64_t used, uint64_t used_high, uint64_t reserved,
                            uint64_t reserved_high)
{
    cr_assert_lt(i, s->ngm, "%s: no GRAPHMEM %u", path, i);
    const struct gmt_rec_graphmem *g = &s->gm[i];
    cr_expect_eq(g->h.aux, phase, "%s: GRAPHMEM %u: phase %u, want %u", path, i, g->h.aux, phase);
    cr_expect_eq(g->device, 0, "%s: GRAPHMEM %u: device %d", path, i, g->device);
    cr_expect_neq(g->time_ns, 0u, "%s: GRAPHMEM %u has no time", path, i);
    cr_expect(g->used_current == used && g->used_high == used_high &&
                  g->reserved_current == reserved && g->reserved_high == reserved_high,
              "%s: GRAPHMEM %u (phase %u): used %llu high %llu reserved %llu high %llu, want "
              "%llu %llu %llu %llu",
              path, i, phase, (unsigned long long)g->used_current,
              (unsigned long long)g->used_high, (unsigned long long)g->reserved_current,
              (unsigned long long)g->reserved_high, (unsigned long long)used,
              (unsigned long long)used_high, (unsigned long long)reserved,
              (unsigned long long)reserved_high);
}

/* The sequence graph_paths makes on every path (its header says which). `captured_api`:
 * the API the captured allocation is recorded as (the runtime's, or the driver's). */
static void expect_sequence(const char *path, const char *flags, unsigned captured_api)
{
    static struct hook_run traced;
    struct seen s;
    run_path(path, flags, &s, &traced);
    /* the simulated device behaved as an H200: nothing at capture, 32 MiB at the launch */
    cr_expect(strstr(traced.out, "capture            r=0,0,0,0 device+0 ") != NULL &&
                  strstr(traced.out, "launch 1           r=0 device+33554432 used=0 "
                                     "used_high=33554432 reserved=33554432") != NULL &&
                  strstr(traced.out, "trim               r=0 device+0 used=0") != NULL,
              "%s %s: the fake's graph memory:\n%s", path, flags, traced.out);

    /* two memory nodes: the captured allocation, counted once, and the built graph's */
    cr_assert_eq(s.ngraph_mem, 2u, "%s %s: %u GRAPH_MEM allocations, want 2", path, flags,
                 s.ngraph_mem);
    const struct gmt_rec_alloc_ext *c = &s.graph_mem[0], *n = &s.graph_mem[1];
    cr_expect_eq(c->a.h.aux, captured_api, "%s %s: captured as api %u, want %u", path, flags,
                 c->a.h.aux, captured_api);
    cr_expect_eq(c->a.flags, GMT_ALLOC_CAPTURED, "%s %s: captured flags %#x", path, flags,
                 c->a.flags);
    cr_expect_eq(c->a.bytes, 32 * MIB, "%s %s: captured %llu bytes", path, flags,
                 (unsigned long long)c->a.bytes);
    cr_expect_eq(c->a.device, 0, "%s %s: captured on device %d", path, flags, c->a.device);
    cr_expect_geq(c->a.h.size, sizeof *c, "%s %s: captured ALLOC without extension", path, flags);
    cr_expect_neq(c->stream, 0u, "%s %s: captured ALLOC names no stream", path, flags);
    cr_expect_neq(c->related, 0u, "%s %s: captured ALLOC names no graph", path, flags);
    cr_expect_neq(c->a.address, 0u, "%s %s: captured ALLOC has no address", path, flags);
    cr_expect_eq(n->a.h.aux, GMT_API_cuGraphAddMemAllocNode, "%s %s: node api %u", path, flags,
                 n->a.h.aux);
    cr_expect_eq(n->a.flags, 0u, "%s %s: a built node is not captured", path, flags);
    cr_expect_eq(n->a.bytes, 8 * MIB, "%s %s: node of %llu bytes", path, flags,
                 (unsigned long long)n->a.bytes);
    cr_expect_neq(n->related, 0u, "%s %s: the node names no graph", path, flags);
    cr_expect_neq(n->related, c->related, "%s %s: two graphs, one handle", path, flags);
    cr_expect_eq(s.pool_alloc, 0u, "%s %s: %u POOL_ALLOC records", path, flags, s.pool_alloc);
    /* the graph's memory is the program's only device memory: its launch samples the device */
    cr_expect_eq(s.first, 1u, "%s %s: %u FIRST samples, want 1 (at the first launch)", path, flags,
                 s.first);
    if (captured_api != GMT_API_cuMemAllocAsync)
        cr_expect_eq(s.async_alloc_driver, 0u, "%s %s: the runtime's allocation counted twice",
                     path, flags);
    cr_expect_eq(s.fail, 0u, "%s %s: %u ALLOC_FAIL", path, flags, s.fail);
    /* the captured free and the built node's free outside its graph */
    cr_expect_eq(s.free_async, 2u, "%s %s: %u async FREEs, want 2", path, flags, s.free_async);

    /* launch 1 (launch 2 changed nothing, the empty graph holds no memory), trim, destroy;
     * the built graph's launch, its destroy; exit */
    cr_assert_eq(s.ngm, 6u, "%s %s: %u GRAPHMEM records, want 6", path, flags, s.ngm);
    expect_graphmem(path, &s, 0, GMT_GRAPHMEM_LAUNCH, 0, 32 * MIB, 32 * MIB, 32 * MIB);
    expect_graphmem(path, &s, 1, GMT_GRAPHMEM_TRIM, 0, 32 * MIB, 0, 32 * MIB);
    expect_graphmem(path, &s, 2, GMT_GRAPHMEM_DESTROY, 0, 32 * MIB, 0, 32 * MIB);
    expect_graphmem(path, &s, 3, GMT_GRAPHMEM_LAUNCH, 8 * MIB, 32 * MIB, 8 * MIB, 32 * MIB);
    expect_graphmem(path, &s, 4, GMT_GRAPHMEM_DESTROY, 0, 32 * MIB, 8 * MIB, 32 * MIB);
    expect_graphmem(path, &s, 5, GMT_GRAPHMEM_EXIT, 0, 32 * MIB, 8 * MIB, 32 * MIB);
    hook_cleanup(&traced);
}

Test(graph, runtime_capture_is_one_graph_node_and_launches_are_sampled)
{
    expect_sequence("runtime", "0", GMT_API_cudaMallocAsync);
}

Test(graph, driver_through_the_plt)
{
    expect_sequence("plt", "0", GMT_API_cuMemAllocAsync);
    expect_sequence("plt", "2", GMT_API_cuMemAllocAsync);
}

Test(graph, driver_through_get_proc_address)
{
    expect_sequence("getproc2", "0", GMT_API_cuMemAllocAsync);
    expect_sequence("getproc2", "2", GMT_API_cuMemAllocAsync);
}

Test(graph, driver_through_the_runtime_entry_points)
{
    expect_sequence("entry", "0", GMT_API_cuMemAllocAsync);
}

Test(graph, driver_through_dlsym_on_libcuda)
{
    expect_sequence("dlsym", "0", GMT_API_cuMemAllocAsync);
    expect_sequence("dlsym", "2", GMT_API_cuMemAllocAsync);
}

Test(graph, a_program_that_never_captures_never_asks_whether_it_does)
{
    static struct hook_run traced;
    struct seen s;
    run_path("nocapture", "0", &s, &traced);
    /* the output is the same untraced, so the tracer made no call of its own */
    cr_expect(strstr(traced.out, "cuStreamIsCapturing calls=0\n") != NULL, "%s", traced.out);
    cr_expect_eq(s.pool_alloc, 3u, "%u POOL_ALLOC records, want 3", s.pool_alloc);
    cr_expect_eq(s.ngraph_mem, 1u, "%u GRAPH_MEM records, want 1", s.ngraph_mem);
    cr_expect_eq(s.graph_mem[0].a.flags, 0u, "a built node is not captured");
    /* the built graph's launch, its destroy, exit */
    cr_assert_eq(s.ngm, 3u, "%u GRAPHMEM records, want 3", s.ngm);
    cr_expect_eq(s.gm[0].h.aux, GMT_GRAPHMEM_LAUNCH);
    cr_expect_eq(s.gm[0].reserved_current, 2 * MIB);
    cr_expect_eq(s.gm[1].h.aux, GMT_GRAPHMEM_DESTROY);
    cr_expect_eq(s.gm[2].h.aux, GMT_GRAPHMEM_EXIT);
    hook_cleanup(&traced);
}

/* graph_paths tograph with the driver of `dir` (NULL: the usual one): the captured
 * allocation names the graph that its memory node names. */
static void expect_tograph(const char *dir, const char *v3)
{
    if (dir)
        cr_assert_eq(setenv("LD_LIBRARY_PATH", dir, 1), 0);
    static struct hook_run traced;
    struct seen s;
    run_path("tograph", "0", &s, &traced);
    char line[64];
    snprintf(line, sizeof line, "cuStreamGetCaptureInfo_v3: %s\n", v3);
    cr_assert(strstr(traced.out, line) != NULL, "want %s in:\n%s", line, traced.out);
    cr_expect(strstr(traced.out, "launch             r=0,0,0 device+41943040 ") != NULL,
              "the fake's graph memory:\n%s", traced.out);
    cr_assert_eq(s.ngraph_mem, 2u, "%u GRAPH_MEM allocations, want 2", s.ngraph_mem);
    const struct gmt_rec_alloc_ext *n = &s.graph_mem[0], *c = &s.graph_mem[1];
    cr_expect_eq(n->a.flags, 0u, "the memory node is not captured");
    cr_expect_eq(c->a.flags, GMT_ALLOC_CAPTURED, "captured flags %#x", c->a.flags);
    cr_expect_eq(c->a.bytes, 32 * MIB);
    cr_expect_neq(n->related, 0u, "the memory node names no graph");
    cr_expect_eq(c->related, n->related,
                 "the captured allocation names graph %#llx, its memory node %#llx",
                 (unsigned long long)c->related, (unsigned long long)n->related);
    /* the graph holds memory: its launch (the captured free ran in it), its destroy and the
     * exit are sampled */
    cr_assert_eq(s.ngm, 3u, "%u GRAPHMEM records, want 3", s.ngm);
    expect_graphmem("tograph", &s, 0, GMT_GRAPHMEM_LAUNCH, 8 * MIB, 40 * MIB, 40 * MIB,
                    40 * MIB);
    hook_cleanup(&traced);
}

Test(graph, a_capture_into_a_graph_names_it)
{
    expect_tograph(NULL, "exported");
}

/* A driver that tells whether a stream captures but not into which graph: the graph that
 * cuStreamBeginCaptureToGraph named is the one the tracer remembers. */
Test(graph, a_capture_into_a_graph_names_it_when_the_driver_cannot)
{
    expect_tograph(HOOK_FAKES "/no-capture-info", "absent");
}

/* The same driver and a plain capture: no record can name its graph, yet the graph is
 * known to hold memory when the capture ends, so its launches are sampled. */
Test(graph, a_capture_the_driver_cannot_name_still_samples_its_launches)
{
    cr_assert_eq(setenv("LD_LIBRARY_PATH", HOOK_FAKES "/no-capture-info", 1), 0);
    static struct hook_run traced;
    struct seen s;
    run_path("plt", "0", &s, &traced);
    cr_assert_eq(s.ngraph_mem, 2u, "%u GRAPH_MEM allocations, want 2", s.ngraph_mem);
    cr_expect_eq(s.graph_mem[0].a.flags, GMT_ALLOC_CAPTURED);
    cr_expect_eq(s.graph_mem[0].related, 0u, "a graph no call named: %#llx",
                 (unsigned long long)s.graph_mem[0].related);
    cr_assert_eq(s.ngm, 6u, "%u GRAPHMEM records, want 6", s.ngm);
    expect_graphmem("plt", &s, 0, GMT_GRAPHMEM_LAUNCH, 0, 32 * MIB, 32 * MIB, 32 * MIB);
    expect_graphmem("plt", &s, 1, GMT_GRAPHMEM_TRIM, 0, 32 * MIB, 0, 32 * MIB);
    hook_cleanup(&traced);
}
