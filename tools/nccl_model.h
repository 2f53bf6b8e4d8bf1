/* nccl_model.h: NCCL's device memory explained: each communicator's allocations by purpose, why each has its size, and what other settings would make of it. */
#ifndef GMT_NCCL_MODEL_H
#define GMT_NCCL_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "trace.h"

struct gmt_analysis;

/* What NCCL allocated a buffer for. X(NAME, key, text): key for JSON, text for people. */
#define GMT_NCCL_PURPOSES(X)                                                          \
    X(CHANNEL, "channel", "per-channel device structures")                           \
    X(DEVCOMM, "devcomm", "device communicator")                                     \
    X(RECV, "recv", "transport buffers, receive side")                               \
    X(SEND, "send", "transport buffers, send side")                                  \
    X(PROXY, "proxy", "proxy and host buffers")                                      \
    X(FIFO, "fifo", "work FIFO (host pinned)")                                       \
    X(NVLS, "nvls", "NVLS buffers")                                                  \
    X(COLLNET, "collnet", "CollNet buffers")                                         \
    X(REG, "registration", "buffer registrations")                                   \
    X(MEMALLOC, "memalloc", "ncclMemAlloc buffers")                                  \
    X(OTHER, "other", "other NCCL memory")

enum gmt_nccl_purpose {
#define GMT_X(name, key, text) GMT_NCCL_##name,
    GMT_NCCL_PURPOSES(GMT_X)
#undef GMT_X
    GMT_NCCL_NPURPOSES
};

/* How a group was classified: NCCL's own function on the stack, the API that allocated
 * it, its size against the model's, or when (and on which thread) it was made. */
#define GMT_NCCL_HOWS(X) X(STACK, "stack") X(API, "api") X(SIZE, "size") X(TIMING, "timing")
enum gmt_nccl_how {
#define GMT_X(name, key) GMT_NCCL_BY_##name,
    GMT_NCCL_HOWS(GMT_X)
#undef GMT_X
};

const char *gmt_nccl_purpose_key(int purpose);
const char *gmt_nccl_purpose_text(int purpose);
const char *gmt_nccl_how_key(int how);

/* The purpose NCCL function `name` (plain, demangled without arguments) allocates for,
 * -1 when it is none the model knows; host: the allocation is host memory. */
int gmt_nccl_purpose_of_function(const char *name, bool host);

/* The settings that size NCCL's buffers. A field the run left unset holds NCCL's
 * default and its bit in `set` is clear. */
#define GMT_NCCL_KNOBS(X)                                                             \
    X(BUFFSIZE, "NCCL_BUFFSIZE")                                                      \
    X(LL_BUFFSIZE, "NCCL_LL_BUFFSIZE")                                                \
    X(LL128_BUFFSIZE, "NCCL_LL128_BUFFSIZE")                                          \
    X(MIN_NCHANNELS, "NCCL_MIN_NCHANNELS")                                            \
    X(MAX_NCHANNELS, "NCCL_MAX_NCHANNELS")                                            \
    X(MAX_P2P_NCHANNELS, "NCCL_MAX_P2P_NCHANNELS")                                    \
    X(P2P_READ_ENABLE, "NCCL_P2P_READ_ENABLE")                                        \
    X(WORK_FIFO_BYTES, "NCCL_WORK_FIFO_BYTES")                                        \
    X(CUMEM_ENABLE, "NCCL_CUMEM_ENABLE")
enum gmt_nccl_knob {
#define GMT_X(name, env) GMT_NCCL_K_##name,
    GMT_NCCL_KNOBS(GMT_X)
#undef GMT_X
    GMT_NCCL_NKNOBS
};

struct gmt_nccl_settings {
    int64_t v[GMT_NCCL_NKNOBS];  /* bytes, counts, 0/1; -1: NCCL decides (auto) */
    unsigned set;                /* bit per knob: the run (or a what-if) set it */
};

/* NCCL's defaults, then what the trace's ENV record says. */
void gmt_nccl_settings_of(const struct gmt_trace *t, struct gmt_nccl_settings *s);
/* "NAME=VALUE[,NAME=VALUE...]" (VALUE may end in K, M or G: binary units) applied to s:
 * 0, or -1 with a one-line message (a name the model does not size, a bad value). */
int gmt_nccl_settings_parse(struct gmt_nccl_settings *s, const char *spec, char *err, size_t errlen);
const char *gmt_nccl_knob_name(int knob);

/* The transport buffer sizes of one P2P connection under settings s (p2p.cc): what NCCL
 * asks for before and after aligning to CUDA_IPC_MIN (2 MiB). */
struct gmt_nccl_p2p_sizes {
    uint64_t header_recv, header_send;   /* ncclRecvMem, ncclSendMem */
    uint64_t ll, ll128, simple;          /* per protocol */
    bool read;                           /* P2P read: Simple on the send side */
    uint64_t recv_need, send_need;       /* before alignment */
    uint64_t recv, send;                 /* what the device gives */
};
void gmt_nccl_p2p_sizes(const struct gmt_nccl_settings *s, struct gmt_nccl_p2p_sizes *z);

/* Whether the model covers NCCL version v (the API's integer, 22809). */
bool gmt_nccl_version_modelled(int32_t v);

/* One purpose's allocations of one communicator with one cause, site and size. */
struct gmt_nccl_group {
    uint8_t purpose, how;
    bool host;                 /* pinned host memory, not the device's */
    char cause[80];            /* "init", "first AllReduce 4 MiB/call", "later ...", "outside NCCL calls" */
    char func[96];             /* the NCCL function that asked, "" unknown */
    char where[160];           /* its file:line, or module+offset, "" unknown */
    uint64_t count, bytes;     /* allocations, bytes the device gave */
    uint64_t each;             /* bytes of each (groups hold one size) */
    bool first_coll;           /* made by the first call of a collective (not send/recv) */
    bool p2p;                  /* made by a send/recv (or a group of them) */
};

struct gmt_nccl_comm {
    uint64_t comm;
    int index;                 /* gmt_trace_comm_index, 0: no communicator known */
    int rank, nranks, device;
    struct gmt_nccl_group *g; size_t n_g, cap_g;
    uint64_t dev_bytes, host_bytes, allocs;
    uint64_t by_purpose[GMT_NCCL_NPURPOSES];
    /* counts the buffers imply, 0 unknown */
    int init_channels;         /* channels whose structures initChannel made at init */
    bool init_guessed;         /* init_channels read from the count of init's device
                                * allocations (no frames): NCCL 2.28 makes 3 per channel
                                * (initChannel) and 2 more (devCommSetup) */
    int coll_channels;         /* receive buffers of the first collective, one ring peer each */
    uint64_t recv_each, send_each; /* their sizes, 0 none */
};

/* A setting that would save NCCL memory on this trace: "NAME=VALUE", the bytes it saves
 * over all communicators, and its cost as NCCL documents it. */
struct gmt_nccl_saving {
    char setting[64];
    uint64_t saves;
    const char *cost;
};
#define GMT_NCCL_MAX_SAVINGS 3

struct gmt_nccl_model {
    struct gmt_nccl_comm *c; size_t n_c;
    struct gmt_nccl_settings set;   /* the run's */
    int32_t version;                /* NCCL's, 0 unknown */
    bool modelled;                  /* the model covers that version */
    bool cumem;                     /* every device buffer came from cuMemCreate */
    bool symbols;                   /* some group was classified from NCCL's own frames */
    uint64_t dev_bytes, host_bytes; /* over all communicators */
    struct gmt_nccl_p2p_sizes p2p;  /* one P2P connection's buffers under the run's settings */
    struct gmt_nccl_saving savings[GMT_NCCL_MAX_SAVINGS]; /* best first (gmt_nccl_savings) */
    size_t n_savings;
};

/* Every NCCL allocation of an analysed trace, grouped, and the settings that would save
 * the most. gmt_analyze fills its analysis's (gmt_analysis.nccl). 0 or -ENOMEM. */
int gmt_nccl_model_build(const struct gmt_analysis *a, struct gmt_nccl_model *m);
void gmt_nccl_model_free(struct gmt_nccl_model *m);

/* What communicator c would hold under settings `to`: device and host bytes, per
 * purpose, and how sure the model is ("exact": the sizes the run had follow the
 * model's rule and only sizes change; "likely": a channel count NCCL picks from the
 * topology had to be assumed; "observed": no model, the run's figures unchanged). */
struct gmt_nccl_prediction {
    uint64_t dev_bytes, host_bytes;
    uint64_t by_purpose[GMT_NCCL_NPURPOSES];
    const char *confidence;
    char note[160];
};
void gmt_nccl_predict(const struct gmt_nccl_model *m, const struct gmt_nccl_comm *c,
                      const struct gmt_nccl_settings *to, struct gmt_nccl_prediction *p);

/* The settings that would save the most on this trace, best first: up to max of them,
 * each as "NAME=VALUE", the bytes it saves over all communicators and its cost as
 * NCCL documents it. Returns how many. */
size_t gmt_nccl_savings(const struct gmt_nccl_model *m, struct gmt_nccl_saving *out, size_t max);

#endif
