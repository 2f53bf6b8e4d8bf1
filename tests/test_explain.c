/* test_explain.c: `explain` and the NCCL memory model: purposes from NCCL's frames and without them, implied counts, what-if against a second run, diff naming a setting, bad input. */
#include <criterion/criterion.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.h"
#include "args.h"
#include "json.h"
#include "nccl_model.h"
#include "golden/tracebuild.h"

#define MiB (1ull << 20)

#define RUN(res, e, ...) CLI_RUN((res), &(struct cli_io){.env = (e)}, __VA_ARGS__)

/* The fake two-rank NCCL job traced into a new directory, with env set for it. */
static const char *traced(const char *const *env)
{
    char *d = cli_tmpdir();
    char prog[PATH_MAX + 64];
    snprintf(prog, sizeof prog, "%s/fakes/progs/fake_nccl_2proc", cli_build_dir());
    cr_assert_eq(access(prog, X_OK), 0, "%s not built (make test-extras)", prog);
    static struct result res;
    RUN(&res, env, "run", "-q", "-o", d, "--", prog);
    cr_assert_eq(res.status, 0, "%s%s", res.out, res.err);
    return d;
}

static struct gmt_json *parse(const char *text)
{
    struct gmt_json *j;
    char err[256];
    cr_assert_eq(gmt_json_parse(text, strlen(text), &j, err, sizeof err), 0, "%s: %s", err, text);
    return j;
}

static int64_t num(const struct gmt_json *o, const char *key)
{
    int64_t v = -1;
    cr_assert_eq(gmt_json_int64(gmt_json_get(o, key), &v), 0, "no integer \"%s\"", key);
    return v;
}

static const char *str(const struct gmt_json *o, const char *key)
{
    const struct gmt_json *v = gmt_json_get(o, key);
    cr_assert(v && v->type == GMT_JSON_STRING, "no string \"%s\"", key);
    return v->str;
}

/* The first communicator of the first trace of explain's JSON. */
static const struct gmt_json *first_comm(const struct gmt_json *j)
{
    const struct gmt_json *tr = gmt_json_get(j, "traces");
    cr_assert(tr && tr->n >= 1);
    const struct gmt_json *cs = gmt_json_get(&tr->items[0], "communicators");
    cr_assert(cs && cs->n >= 1, "no communicator");
    return &cs->items[0];
}

/* The group of purpose `p` in comm c, made by `func` ("" any), NULL when none. */
static const struct gmt_json *group(const struct gmt_json *c, const char *p, const char *func)
{
    const struct gmt_json *gs = gmt_json_get(c, "groups");
    cr_assert_not_null(gs);
    for (size_t i = 0; i < gs->n; i++)
        if (!strcmp(str(&gs->items[i], "purpose"), p) &&
            (!func[0] || !strcmp(str(&gs->items[i], "function"), func)))
            return &gs->items[i];
    return NULL;
}

static void expect_group(const struct gmt_json *c, const char *p, const char *func, const char *how,
                         int64_t count, int64_t each, const char *cause)
{
    const struct gmt_json *g = group(c, p, func);
    cr_assert_not_null(g, "no %s group by %s", p, func);
    cr_expect_str_eq(str(g, "how"), how, "%s", p);
    cr_expect_eq(num(g, "count"), count, "%s count", p);
    cr_expect_eq(num(g, "each"), each, "%s each", p);
    cr_expect_eq(num(g, "bytes"), count * each, "%s bytes", p);
    cr_expect(strstr(str(g, "cause"), cause) != NULL, "%s cause '%s', want '%s'", p, str(g, "cause"),
              cause);
}

/* ---- NCCL's frames on the stack ---- */

Test(explain, groups_every_buffer_of_the_fake_by_nccl_function, .timeout = 60)
{
    const char *d = traced(NULL);
    static struct result res;
    RUN(&res, NULL, "explain", "--json", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    struct gmt_json *j = parse(res.out);
    const struct gmt_json *tr = &gmt_json_get(j, "traces")->items[0];
    cr_expect_eq(gmt_json_get(tr, "symbols")->type, GMT_JSON_TRUE);
    cr_expect_eq(gmt_json_get(tr, "modelled")->type, GMT_JSON_TRUE);
    cr_expect_eq(num(tr, "nccl_version"), 22809);
    const struct gmt_json *c = first_comm(j);
    /* 2 channels by default: one initChannel structure each, one device comm, the FIFO */
    expect_group(c, "channel", "initChannel", "stack", 2, 2 * MiB, "init (CommInitRank)");
    expect_group(c, "devcomm", "devCommSetup", "stack", 1, 2 * MiB, "init");
    expect_group(c, "fifo", "devCommSetup", "stack", 1, 1 * MiB, "init");
    /* per channel, on the proxy thread: 4 KiB + 512 KiB + 4.6875 MiB + 4 MiB -> 10 MiB, and 2 MiB */
    expect_group(c, "recv", "p2pRecvProxySetup", "stack", 2, 10 * MiB, "first AllReduce");
    expect_group(c, "send", "p2pSendProxySetup", "stack", 2, 2 * MiB, "first AllReduce");
    cr_expect(strstr(str(group(c, "recv", ""), "where"), "fake_nccl.c:") != NULL, "source line");
    cr_expect_eq(num(c, "channels_init"), 2);
    cr_expect_eq(num(c, "channels_collective"), 2);
    cr_expect_eq(num(c, "device_bytes"), (int64_t)(30 * MiB), "2 + 2 + 20 + 4 + 2 MiB");
    cr_expect_eq(num(c, "host_bytes"), (int64_t)MiB);
    const struct gmt_json *z = gmt_json_get(tr, "p2p_sizes");
    cr_expect_eq(num(z, "recv_need"), 4096 + 524288 + 4915200 + 4194304);
    cr_expect_eq(num(z, "recv"), (int64_t)(10 * MiB));
    gmt_json_free(j);
    /* the text names the channel count and the sizing rule */
    RUN(&res, NULL, "explain", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "channels   2 at the first collective") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "= 9.19 MiB needed, 10 MiB each") != NULL, "%s", res.out);
}

Test(explain, more_channels_imply_more_buffers, .timeout = 60)
{
    static const char *const env[] = {"NCCL_MIN_NCHANNELS=5", NULL};
    const char *d = traced(env);
    static struct result res;
    RUN(&res, NULL, "explain", "--json", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    struct gmt_json *j = parse(res.out);
    const struct gmt_json *c = first_comm(j);
    cr_expect_eq(num(c, "channels_init"), 5);
    cr_expect_eq(num(c, "channels_collective"), 5);
    expect_group(c, "recv", "p2pRecvProxySetup", "stack", 5, 10 * MiB, "first AllReduce");
    gmt_json_free(j);
}

/* ---- what-if against what a second run really does ---- */

/* var: "NAME=VALUE[,NAME=VALUE]", the what-if and the second run's environment */
static void expect_prediction(const char *var)
{
    const char *base = traced(NULL);
    static char envs[2][128];
    const char *env[3] = {envs[0], NULL, NULL};
    snprintf(envs[0], sizeof envs[0], "%s", var);
    char *comma = strchr(envs[0], ',');
    if (comma) {
        *comma = 0;
        snprintf(envs[1], sizeof envs[1], "%s", comma + 1);
        env[1] = envs[1];
    }
    const char *other = traced(env);
    static struct result res;
    RUN(&res, NULL, "explain", "--json", "--what-if", var, base);
    cr_assert_eq(res.status, 0, "%s", res.err);
    struct gmt_json *jp = parse(res.out);
    RUN(&res, NULL, "explain", "--json", other);
    cr_assert_eq(res.status, 0, "%s", res.err);
    struct gmt_json *jo = parse(res.out);
    const struct gmt_json *tp = gmt_json_get(jp, "traces"), *to = gmt_json_get(jo, "traces");
    cr_assert_eq(tp->n, 2);
    cr_assert_eq(to->n, 2);
    for (size_t r = 0; r < 2; r++) {
        const struct gmt_json *cp = &gmt_json_get(&tp->items[r], "communicators")->items[0];
        const struct gmt_json *co = &gmt_json_get(&to->items[r], "communicators")->items[0];
        const struct gmt_json *w = &gmt_json_get(cp, "what_if")->items[0];
        cr_expect_str_eq(str(w, "confidence"), "exact", "%s", var);
        cr_expect_eq(num(w, "device_bytes"), num(co, "device_bytes"), "%s rank %zu: predicted vs run", var, r);
        cr_expect_eq(num(w, "host_bytes"), num(co, "host_bytes"), "%s rank %zu", var, r);
        cr_expect_neq(num(w, "device_bytes"), num(cp, "device_bytes"), "%s changes something", var);
    }
    gmt_json_free(jp);
    gmt_json_free(jo);
}

Test(explain, what_if_buffsize_predicts_the_second_run_to_the_byte, .timeout = 90)
{
    expect_prediction("NCCL_BUFFSIZE=1048576");
}

Test(explain, what_if_max_nchannels_predicts_the_second_run_to_the_byte, .timeout = 90)
{
    expect_prediction("NCCL_MAX_NCHANNELS=1");
}

Test(explain, what_if_p2p_read_predicts_the_second_run_to_the_byte, .timeout = 90)
{
    /* read alone moves Simple to the send side: 6 + 6 MiB as 10 + 2; with a smaller
     * Simple buffer the sides differ */
    expect_prediction("NCCL_P2P_READ_ENABLE=1,NCCL_BUFFSIZE=1048576");
}

/* ---- no NCCL symbols ---- */

Test(explain, without_symbols_classifies_by_size_and_timing, .timeout = 60)
{
    const char *d = traced(NULL);
    static struct result res;
    RUN(&res, NULL, "explain", "--json", "--no-symbols", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    struct gmt_json *j = parse(res.out);
    const struct gmt_json *tr = &gmt_json_get(j, "traces")->items[0];
    cr_expect_eq(gmt_json_get(tr, "symbols")->type, GMT_JSON_FALSE);
    const struct gmt_json *c = first_comm(j);
    /* the init structures and the device comm can't be told apart without frames */
    expect_group(c, "channel", "", "timing", 3, 2 * MiB, "init");
    expect_group(c, "fifo", "", "size", 1, 1 * MiB, "init");
    expect_group(c, "recv", "", "size", 2, 10 * MiB, "first AllReduce");
    expect_group(c, "send", "", "size", 2, 2 * MiB, "first AllReduce");
    cr_expect_null(group(c, "devcomm", ""));
    cr_expect_eq(num(c, "channels_init"), 0, "no count without initChannel's frames");
    cr_expect_eq(num(c, "channels_collective"), 2);
    gmt_json_free(j);
}

/* A trace without stacks: init, a registration, ncclMemAlloc, a first and a later collective. */
static void synth(const char *path, bool version)
{
    struct tb b = {0};
    tb_header(&b);
    struct gmt_rec_process p = {.pid = 77, .ppid = 1, .rank = 0, .world_size = 2, .monotonic_ns = TB_T0,
                                .host_len = 2, .cmdline_len = 2};
    tb_rec(&b, GMT_REC_PROCESS, 0, &p, sizeof p, "h\0x\0", 4);
    if (version) {
        struct gmt_rec_version v = {.version = 22809};
        tb_rec(&b, GMT_REC_VERSION, GMT_COMP_NCCL, &v, sizeof v, NULL, 0);
    }
    struct gmt_rec_chunk ch = {.tid = 77};
    tb_rec(&b, GMT_REC_CHUNK, 0, &ch, sizeof ch, NULL, 0);
    struct gmt_rec_thread th = {.time_ns = TB_T0 + 1, .tid = 77, .name = "train"};
    tb_rec(&b, GMT_REC_THREAD, 0, &th, sizeof th, NULL, 0);
    struct gmt_rec_cuctx cx = {.context = 0xc0, .device = 0};
    tb_rec(&b, GMT_REC_CUCTX, 0, &cx, sizeof cx, NULL, 0);
    uint64_t comm = 0x5500, addr = 0x7e0000000000ull;
    uint32_t sid = 0;
#define SCOPE(op, cm, ...)                                                                      \
    do {                                                                                        \
        struct gmt_rec_scope_begin sb = {.dt = 10, .scope_id = ++sid, .comm = (cm), .count = 1024, \
                                         .datatype = 7, .peer = -1};                            \
        tb_rec(&b, GMT_REC_SCOPE_BEGIN, op, &sb, sizeof sb, NULL, 0);                           \
        __VA_ARGS__;                                                                            \
        struct gmt_rec_scope_end se = {.dt = 10, .scope_id = sid};                              \
        tb_rec(&b, GMT_REC_SCOPE_END, op, &se, sizeof se, NULL, 0);                             \
    } while (0)
#define ALLOC(api, k_, n)                                                                       \
    do {                                                                                        \
        struct gmt_rec_alloc a = {.address = addr += 0x1000000, .bytes = (n), .dt = 10,         \
                                  .scope_id = sid, .kind = (k_), .device = 0};                  \
        tb_rec(&b, GMT_REC_ALLOC, api, &a, sizeof a, NULL, 0);                                  \
    } while (0)
    SCOPE(GMT_OP_CommInitRank, 0, {
        for (int i = 0; i < 4; i++)
            ALLOC(GMT_API_cuMemCreate, GMT_KIND_PHYSICAL, 2 * MiB);
        ALLOC(GMT_API_cuMemHostAlloc, GMT_KIND_HOST_PINNED, 1 * MiB);
        ALLOC(GMT_API_cuMemHostAlloc, GMT_KIND_HOST_PINNED, 64 * 1024);
        struct gmt_rec_comm cm = {.comm = comm, .rank = 0, .nranks = 2, .device = 0, .dt = 10};
        tb_rec(&b, GMT_REC_COMM, 0, &cm, sizeof cm, NULL, 0);
    });
    SCOPE(GMT_OP_CommRegister, comm, ALLOC(GMT_API_cuMemCreate, GMT_KIND_PHYSICAL, 2 * MiB));
    SCOPE(GMT_OP_MemAlloc, 0, ALLOC(GMT_API_ncclMemAlloc, GMT_KIND_NCCL_MEM, 3 * MiB));
    SCOPE(GMT_OP_AllReduce, comm, {
        for (int i = 0; i < 3; i++) {
            ALLOC(GMT_API_cuMemCreate, GMT_KIND_PHYSICAL, 10 * MiB);
            ALLOC(GMT_API_cuMemCreate, GMT_KIND_PHYSICAL, 2 * MiB);
        }
    });
    SCOPE(GMT_OP_AllReduce, comm, ALLOC(GMT_API_cuMemCreate, GMT_KIND_PHYSICAL, 6 * MiB));
    struct gmt_rec_end end = {.time_ns = TB_T0 + 1000000};
    tb_rec(&b, GMT_REC_END, 0, &end, sizeof end, NULL, 0);
    cr_assert_eq(tb_write(&b, path), 0);
    tb_free(&b);
#undef SCOPE
#undef ALLOC
}

Test(explain, stackless_trace_falls_back_on_api_size_and_timing)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/synth.gmt", cli_tmpdir());
    synth(path, true);
    static struct result res;
    RUN(&res, NULL, "explain", "--json", "--what-if", "NCCL_MAX_NCHANNELS=1", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    struct gmt_json *j = parse(res.out);
    const struct gmt_json *cs = gmt_json_get(&gmt_json_get(j, "traces")->items[0], "communicators");
    const struct gmt_json *c = NULL, *none = NULL;
    for (size_t i = 0; i < cs->n; i++)
        if (num(&cs->items[i], "index") == 1)
            c = &cs->items[i];
        else
            none = &cs->items[i];
    cr_assert(c && none, "%s", res.out);
    expect_group(c, "channel", "", "timing", 4, 2 * MiB, "init");
    expect_group(c, "fifo", "", "size", 1, 1 * MiB, "init");
    expect_group(c, "proxy", "", "timing", 1, 64 * 1024, "init");
    expect_group(c, "registration", "", "timing", 1, 2 * MiB, "CommRegister");
    expect_group(c, "recv", "", "size", 3, 10 * MiB, "first AllReduce");
    expect_group(c, "send", "", "size", 3, 2 * MiB, "first AllReduce");
    expect_group(c, "other", "", "timing", 1, 6 * MiB, "later AllReduce");
    expect_group(none, "memalloc", "", "api", 1, 3 * MiB, "MemAlloc");
    cr_expect_eq(num(c, "channels_collective"), 3);
    /* one channel left: a third of the transport buffers; the init structures' share is
     * not known without frames: "likely" */
    const struct gmt_json *w = &gmt_json_get(c, "what_if")->items[0];
    cr_expect_eq(num(w, "device_bytes"), (int64_t)((4 + 1 + 5 + 1 + 3) * 2 * MiB));
    cr_expect_str_eq(str(w, "confidence"), "likely");
    gmt_json_free(j);
}

Test(explain, a_version_without_model_shows_only_what_was_observed)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/nover.gmt", cli_tmpdir());
    synth(path, false);
    static struct result res;
    RUN(&res, NULL, "explain", "--what-if", "NCCL_BUFFSIZE=1M", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "version unknown: no model") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "no model for NCCL") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "; observed: no model") != NULL, "%s", res.out);
    /* without a model nothing is classified by size: the transport buffers are "other" */
    cr_expect(strstr(res.out, "transport buffers") == NULL, "%s", res.out);
}

/* A real trace: PyTorch's init_process_group on one H200 (NCCL 2.28.9, 2026-12-01), a
 * single-rank communicator, traced by `gpumemtrace run -- python3 one.py`. The same run
 * with NCCL_MAX_NCHANNELS=8 made init 52 MiB (diff: 388 MiB -> 52 MiB, initChannel's
 * three sites 128 MiB -> 16 MiB each). Read here without NCCL's binary: no frames. */
Test(explain, real_single_rank_init_predicts_max_nchannels)
{
    static struct result res;
    RUN(&res, NULL, "explain", "--json", "--what-if", "NCCL_MAX_NCHANNELS=8",
        "tests/explain/h200-one-rank.gmt");
    cr_assert_eq(res.status, 0, "%s", res.err);
    struct gmt_json *j = parse(res.out);
    const struct gmt_json *c = first_comm(j);
    cr_expect_eq(num(c, "device_bytes"), (int64_t)(388 * MiB));
    cr_expect_eq(num(c, "channels_init"), 64, "194 allocations: 3 per channel and 2");
    const struct gmt_json *w = &gmt_json_get(c, "what_if")->items[0];
    cr_expect_eq(num(w, "device_bytes"), (int64_t)(52 * MiB), "as the rerun measured");
    cr_expect_str_eq(str(w, "confidence"), "likely");
    gmt_json_free(j);
    /* summary's advice: half the channels, 96 of the 192 structures */
    RUN(&res, NULL, "summary", "tests/explain/h200-one-rank.gmt");
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "try NCCL_MAX_NCHANNELS=32 would save 192 MiB") != NULL, "%s", res.out);
}

/* ---- the model's parts ---- */

Test(explain, nccl_functions_name_their_purpose)
{
    cr_expect_eq(gmt_nccl_purpose_of_function("initChannel", false), GMT_NCCL_CHANNEL);
    cr_expect_eq(gmt_nccl_purpose_of_function("devCommSetup", false), GMT_NCCL_DEVCOMM);
    cr_expect_eq(gmt_nccl_purpose_of_function("devCommSetup", true), GMT_NCCL_FIFO);
    cr_expect_eq(gmt_nccl_purpose_of_function("p2pRecvProxySetup", false), GMT_NCCL_RECV);
    cr_expect_eq(gmt_nccl_purpose_of_function("p2pSendSetup", false), GMT_NCCL_SEND);
    cr_expect_eq(gmt_nccl_purpose_of_function("recvProxyConnect", false), GMT_NCCL_RECV);
    cr_expect_eq(gmt_nccl_purpose_of_function("ncclProxyService", false), GMT_NCCL_PROXY);
    cr_expect_eq(gmt_nccl_purpose_of_function("ncclNvlsSetup", false), GMT_NCCL_NVLS);
    cr_expect_eq(gmt_nccl_purpose_of_function("initNvlsChannel", false), GMT_NCCL_NVLS);
    cr_expect_eq(gmt_nccl_purpose_of_function("initCollnetChannel", false), GMT_NCCL_COLLNET);
    cr_expect_eq(gmt_nccl_purpose_of_function("ipcRegisterBuffer", false), GMT_NCCL_REG);
    cr_expect_eq(gmt_nccl_purpose_of_function("ncclCommWindowRegister", false), GMT_NCCL_REG);
    cr_expect_eq(gmt_nccl_purpose_of_function("ncclMemAlloc", false), GMT_NCCL_MEMALLOC);
    cr_expect_eq(gmt_nccl_purpose_of_function("ncclCudaCalloc", false), -1, "a helper names nothing");
    cr_expect_eq(gmt_nccl_purpose_of_function("main", false), -1);
}

Test(explain, p2p_sizes_follow_the_sizing_rule)
{
    struct gmt_nccl_settings s;
    gmt_nccl_settings_of(NULL, &s);
    struct gmt_nccl_p2p_sizes z;
    gmt_nccl_p2p_sizes(&s, &z);
    cr_expect_eq(z.recv, 10 * MiB);
    cr_expect_eq(z.send, 2 * MiB);
    char err[256];
    cr_assert_eq(gmt_nccl_settings_parse(&s, "NCCL_BUFFSIZE=1M", err, sizeof err), 0, "%s", err);
    gmt_nccl_p2p_sizes(&s, &z);
    cr_expect_eq(z.recv, 8 * MiB, "48 MiB less over 24 channels, as measured");
    cr_assert_eq(gmt_nccl_settings_parse(&s, "NCCL_BUFFSIZE=4M,NCCL_P2P_READ_ENABLE=1", err, sizeof err), 0);
    gmt_nccl_p2p_sizes(&s, &z);
    cr_expect_eq(z.recv, 6 * MiB);
    cr_expect_eq(z.send, 6 * MiB);
    cr_expect_neq(gmt_nccl_settings_parse(&s, "NCCL_ALGO=Ring", err, sizeof err), 0);
    cr_expect(strstr(err, "does not size 'NCCL_ALGO'") != NULL, "%s", err);
    cr_expect_neq(gmt_nccl_settings_parse(&s, "NCCL_MAX_NCHANNELS=0", err, sizeof err), 0);
    cr_expect_neq(gmt_nccl_settings_parse(&s, "NCCL_BUFFSIZE=lots", err, sizeof err), 0);
    cr_expect_neq(gmt_nccl_settings_parse(&s, "NCCL_BUFFSIZE", err, sizeof err), 0);
    cr_expect_neq(gmt_nccl_settings_parse(&s, "", err, sizeof err), 0);
}

/* ---- why it changed ---- */

Test(explain, diff_names_the_setting_next_to_the_growth, .timeout = 90)
{
    static const char *const big[] = {"NCCL_BUFFSIZE=8388608", NULL};
    const char *a = traced(NULL), *b = traced(big);
    static struct result res;
    RUN(&res, NULL, "diff", a, b);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "NCCL changed: NCCL_BUFFSIZE unset -> 8388608") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "+8 MiB      24 MiB ->     32 MiB  first_call  AllReduce 2 ranks 4 MiB/call  "
                              "-- NCCL_BUFFSIZE unset -> 8388608") != NULL, "%s", res.out);
    RUN(&res, NULL, "diff", a, a);
    cr_expect(strstr(res.out, "NCCL changed") == NULL, "%s", res.out);
}

Test(explain, check_and_merge_name_the_setting, .timeout = 90)
{
    static const char *const big[] = {"NCCL_BUFFSIZE=8388608", NULL};
    const char *a = traced(NULL), *b = traced(big);
    char bl[PATH_MAX];
    snprintf(bl, sizeof bl, "%s/nccl-baseline.json", a);
    static struct result res;
    RUN(&res, NULL, "check", a, "--write-baseline", bl);
    cr_assert_eq(res.status, 0, "%s", res.err);
    RUN(&res, NULL, "check", b, "--baseline", bl);
    cr_expect_eq(res.status, 1, "%s%s", res.out, res.err);
    cr_expect(strstr(res.out, "NCCL changed since the baseline: NCCL_BUFFSIZE unset -> 8388608\n") != NULL,
              "%s", res.out);
    RUN(&res, NULL, "check", a, "--baseline", bl);
    cr_expect_eq(res.status, 0, "%s", res.out);
    cr_expect(strstr(res.out, "NCCL changed") == NULL, "%s", res.out);
    /* one rank of each run side by side */
    char **fa, **fb;
    size_t na, nb;
    cr_assert_eq(gmt_list_traces(a, &fa, &na), 0);
    cr_assert_eq(gmt_list_traces(b, &fb, &nb), 0);
    cr_assert(na == 2 && nb == 2);
    /* two runs (two job ids): merge takes them only when told */
    RUN(&res, NULL, "merge", fa[0], fb[1]);
    cr_expect_eq(res.status, 2, "%s", res.out);
    RUN(&res, NULL, "merge", "--allow-mixed", fa[0], fb[1]);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "rank 1 stands out: ") != NULL &&
              strstr(res.out, " -- NCCL_BUFFSIZE unset -> 8388608") != NULL, "%s", res.out);
    cr_expect(strstr(res.out, "rank 1's NCCL differs from rank 0's: NCCL_BUFFSIZE unset -> 8388608") != NULL,
              "%s", res.out);
    for (size_t i = 0; i < 2; i++) {
        free(fa[i]);
        free(fb[i]);
    }
    free(fa);
    free(fb);
}

Test(explain, summary_shows_the_short_form, .timeout = 60)
{
    const char *d = traced(NULL);
    static struct result res;
    RUN(&res, NULL, "summary", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "comm #1 rank 0/2: 30 MiB device, 1 MiB host: recv 20 MiB") != NULL, "%s",
              res.out);
    cr_expect(strstr(res.out, "try NCCL_MAX_NCHANNELS=1 would save 14 MiB") != NULL, "%s", res.out);
}

/* ---- ranks alike, the answer first ---- */

/* The line (1-based) where `what` first appears in text, 0 when it does not. */
static int line_of(const char *text, const char *what)
{
    const char *at = strstr(text, what);
    if (!at)
        return 0;
    int n = 1;
    for (const char *p = text; p < at; p++)
        n += *p == '\n';
    return n;
}

/* The trace of job d whose first communicator has rank `rank` (the fake's processes
 * have no RANK: their files do not say it). */
static const char *trace_of_rank(const char *d, int rank)
{
    static struct result res;
    RUN(&res, NULL, "explain", "--json", "--no-symbols", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    struct gmt_json *j = parse(res.out);
    const struct gmt_json *tr = gmt_json_get(j, "traces");
    char *path = NULL;
    for (size_t i = 0; i < tr->n && !path; i++)
        if (num(&gmt_json_get(&tr->items[i], "communicators")->items[0], "rank") == rank)
            path = strdup(str(&tr->items[i], "file"));
    gmt_json_free(j);
    cr_assert_not_null(path, "no rank %d in %s", rank, d);
    return path;
}

/* A new directory with rank 0's trace of job a and rank 1's of job b. */
static const char *mixed(const char *a, const char *b)
{
    char *d = cli_tmpdir();
    char cmd[4 * PATH_MAX];
    snprintf(cmd, sizeof cmd, "cp %s %s.names %s/ && cp %s %s.names %s/", trace_of_rank(a, 0),
             trace_of_rank(a, 0), d, trace_of_rank(b, 1), trace_of_rank(b, 1), d);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
    return d;
}

Test(explain, ranks_alike_are_explained_once_with_their_rank_list, .timeout = 60)
{
    const char *d = traced(NULL);
    static struct result res;
    RUN(&res, NULL, "explain", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect_eq(line_of(res.out, "2 ranks in 1 group of ranks alike"), 1, "%s", res.out);
    cr_expect(strstr(res.out, "\n  ranks 0-1 (2 alike): 30 MiB device, 1 MiB pinned host each\n"), "%s",
              res.out);
    cr_expect(strstr(res.out, "\n== ranks 0-1 (2 alike): the explanation of rank 0 stands for them ==\n"),
              "%s", res.out);
    cr_expect_eq(count_of(res.out, "\ncommunicator #1 "), 1, "one explanation: %s", res.out);
    RUN(&res, NULL, "explain", "--every-rank", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect_eq(count_of(res.out, "\ncommunicator #1 "), 2, "every rank: %s", res.out);
    cr_expect(strstr(res.out, "\n== rank 0 ==\n") && strstr(res.out, "\n== rank 1 ==\n"), "%s", res.out);
    cr_expect(!strstr(res.out, "alike)"), "%s", res.out);
    /* the JSON holds every trace, and the group with its files */
    RUN(&res, NULL, "explain", "--json", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    struct gmt_json *j = parse(res.out);
    cr_expect_eq(gmt_json_get(j, "traces")->n, 2);
    const struct gmt_json *gs = gmt_json_get(j, "groups");
    cr_assert(gs && gs->n == 1, "%s", res.out);
    cr_expect_str_eq(str(&gs->items[0], "ranks"), "0-1");
    cr_expect_eq(num(&gs->items[0], "count"), 2);
    cr_expect_eq(gmt_json_get(&gs->items[0], "files")->n, 2);
    gmt_json_free(j);
}

Test(explain, ranks_that_differ_are_not_merged, .timeout = 90)
{
    static const char *const small[] = {"NCCL_BUFFSIZE=1048576", NULL};
    const char *d = mixed(traced(NULL), traced(small));
    static struct result res;
    RUN(&res, NULL, "explain", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "2 ranks in 2 groups of ranks alike"), "%s", res.out);
    cr_expect(strstr(res.out, "\n  rank 0: 30 MiB device") && strstr(res.out, "\n  rank 1: 26 MiB device"),
              "%s", res.out);
    cr_expect_eq(count_of(res.out, "\ncommunicator #1 "), 2, "%s", res.out);
    cr_expect(!strstr(res.out, "alike)"), "%s", res.out);
    RUN(&res, NULL, "explain", "--json", d);
    struct gmt_json *j = parse(res.out);
    cr_expect_eq(gmt_json_get(j, "groups")->n, 2, "%s", res.out);
    gmt_json_free(j);
}

Test(explain, the_what_if_answer_comes_first, .timeout = 60)
{
    const char *d = traced(NULL);
    static struct result res;
    RUN(&res, NULL, "explain", "--what-if", "NCCL_BUFFSIZE=1M", d);
    cr_assert_eq(res.status, 0, "%s", res.err);
    int at = line_of(res.out, "what if NCCL_BUFFSIZE=1M: saves 4 MiB device each (30 MiB -> 26 MiB), "
                              "8 MiB over the 2, 1 MiB host; exact\n");
    cr_expect(at >= 1 && at <= 3, "line %d: %s", at, res.out);
    cr_expect_lt(at, line_of(res.out, "\ncommunicator #1 "), "%s", res.out);
    /* one trace: the answer under its title */
    static struct result r1;
    RUN(&r1, NULL, "explain", "--json", d);
    struct gmt_json *j = parse(r1.out);
    const char *path = str(&gmt_json_get(j, "traces")->items[0], "file");
    RUN(&res, NULL, "explain", "--what-if", "NCCL_BUFFSIZE=1M", path);
    cr_assert_eq(res.status, 0, "%s", res.err);
    at = line_of(res.out, "  what if NCCL_BUFFSIZE=1M: saves 4 MiB device (30 MiB -> 26 MiB), 1 MiB host; exact\n");
    cr_expect(at >= 2 && at <= 3, "line %d: %s", at, res.out);
    /* without a what-if: the setting that saves the most */
    RUN(&res, NULL, "explain", path);
    cr_expect_eq(line_of(res.out, "  most saved by NCCL_MAX_NCHANNELS=1: 14 MiB\n"), 3, "%s", res.out);
    gmt_json_free(j);
}

Test(explain, diff_gives_the_answer_first_and_pairs_alike_once, .timeout = 90)
{
    static const char *const small[] = {"NCCL_BUFFSIZE=1048576", NULL};
    const char *a = traced(NULL), *b = traced(small);
    static struct result res;
    RUN(&res, NULL, "diff", a, b);
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect_eq(line_of(res.out, "  peak         -4 MiB  (34 MiB -> 30 MiB)  peak device 0; rank 0, "
                                  "one of ranks 0-1 (2 alike)\n"), 2, "%s", res.out);
    cr_expect_eq(line_of(res.out, "  grew most    nothing grew\n"), 3, "%s", res.out);
    cr_expect_eq(line_of(res.out, "  shrank most  -4 MiB  "), 4, "%s", res.out);
    cr_expect(strstr(res.out, "\n== ranks 0-1 (2 alike): the changes of rank 0 stand for them ==\nrank 0: "),
              "%s", res.out);
    cr_expect(!strstr(res.out, "\nrank 1: "), "once: %s", res.out);
    RUN(&res, NULL, "diff", "--every-rank", a, b);
    cr_expect(strstr(res.out, "\nrank 0: ") && strstr(res.out, "\nrank 1: "), "%s", res.out);
    cr_expect(!strstr(res.out, "\n== "), "%s", res.out);
    RUN(&res, NULL, "diff", "--json", a, b);
    struct gmt_json *j = parse(res.out);
    cr_expect_eq(gmt_json_get(j, "pairs")->n, 2, "every pair: %s", res.out);
    const struct gmt_json *gs = gmt_json_get(j, "groups");
    cr_assert(gs && gs->n == 1, "%s", res.out);
    cr_expect_eq(num(&gs->items[0], "count"), 2);
    const struct gmt_json *h = gmt_json_get(gmt_json_get(j, "headline"), "shrank");
    cr_expect_eq(num(h, "delta"), -4 * (int64_t)MiB, "%s", res.out);
    cr_expect_eq(gmt_json_get(gmt_json_get(j, "headline"), "grew")->type, GMT_JSON_NULL);
    gmt_json_free(j);
    /* rank 1 changed, rank 0 did not: two groups, each shown */
    RUN(&res, NULL, "diff", a, mixed(a, b));
    cr_assert_eq(res.status, 0, "%s", res.err);
    cr_expect(strstr(res.out, "\nrank 0: ") && strstr(res.out, "\nrank 1: "), "%s", res.out);
    cr_expect(!strstr(res.out, "alike)"), "%s", res.out);
    cr_expect_eq(line_of(res.out, "  shrank most  -4 MiB  "), 4, "%s", res.out);
    cr_expect(strstr(res.out, "; rank 1\n"), "the change is rank 1's: %s", res.out);
}

/* ---- bad input ---- */

Test(explain, bad_input_exits_2_with_one_line)
{
    static struct result res;
    RUN(&res, NULL, "explain");
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "no trace given") != NULL, "%s", res.err);
    RUN(&res, NULL, "explain", "/nonexistent/x.gmt");
    cr_expect_eq(res.status, 2);
    cr_expect(strchr(res.err, '\n') == res.err + strlen(res.err) - 1, "one line: %s", res.err);
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/junk.gmt", cli_tmpdir());
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs("GMTRACE\nthis is not a trace at all, but it begins like one", f);
    fclose(f);
    RUN(&res, NULL, "explain", path);
    cr_expect_eq(res.status, 2, "%s", res.err);
    RUN(&res, NULL, "explain", "--what-if", "NCCL_ALGO=Tree", path);
    cr_expect_eq(res.status, 2);
    cr_expect(strstr(res.err, "does not size") != NULL, "%s", res.err);
    RUN(&res, NULL, "explain", "--what-if", "NCCL_BUFFSIZE=-1", path);
    cr_expect_eq(res.status, 2);
    RUN(&res, NULL, "explain", "--bogus", path);
    cr_expect_eq(res.status, 2);
}

/* Receive buffers of a size the model does not give the run's settings (a build that
 * sizes them otherwise): a what-if that changes their size scales the run's, and says
 * its confidence is low; the model's own size under the same what-if is exact. */
Test(explain, what_if_on_buffers_the_model_does_not_size_is_low_confidence)
{
    struct gmt_nccl_model m = { .modelled = true };
    gmt_nccl_settings_of(NULL, &m.set);
    struct gmt_nccl_settings to = m.set;
    char err[256];
    cr_assert_eq(gmt_nccl_settings_parse(&to, "NCCL_BUFFSIZE=1M", err, sizeof err), 0, "%s", err);
    struct gmt_nccl_p2p_sizes was, will;
    gmt_nccl_p2p_sizes(&m.set, &was);
    gmt_nccl_p2p_sizes(&to, &will);
    cr_assert_neq(was.recv, will.recv, "the what-if changes the receive buffers' size");
    for (int model_size = 0; model_size < 2; model_size++) {
        struct gmt_nccl_group g = { .purpose = GMT_NCCL_RECV, .how = GMT_NCCL_BY_STACK,
                                    .count = 2, .p2p = true };
        g.each = model_size ? was.recv : was.recv + (1u << 20);
        g.bytes = g.count * g.each;
        struct gmt_nccl_comm c = { .g = &g, .n_g = 1, .nranks = 2, .dev_bytes = g.bytes };
        struct gmt_nccl_prediction p;
        gmt_nccl_predict(&m, &c, &to, &p);
        cr_assert_not_null(p.confidence);
        cr_expect_str_eq(p.confidence, model_size ? "exact" : "low", "%s size: %s (%s)",
                         model_size ? "the model's" : "another", p.confidence, p.note);
    }
}
