/* fake_nccl_profiler.h: the simulated NCCL's profiler plugin loader (fake_nccl_profiler.c), as fake_nccl.c and the bench's stub NCCL call it. */
#ifndef FAKE_NCCL_PROFILER_H
#define FAKE_NCCL_PROFILER_H

#include <stddef.h>
#include <stdint.h>

/* Per communicator, inside its struct (as NCCL keeps profilerContext inside ncclComm):
 * the plugin's context first, so &ctx is an address inside the communicator. */
struct fakeprof {
    void *ctx;          /* the plugin's context for this communicator */
    uint64_t hash;      /* what NCCL calls commHash: of the unique id, equal on every rank */
    uint64_t seq[16];   /* per function: collectives launched before */
    int mask;           /* the activation mask the plugin asked for; 0: no plugin */
    int inited;         /* fakeprof_init ran: fakeprof_fini undoes it */
};

/* At communicator init, before its proxy thread starts: loads the plugin the first time
 * (NCCL_PROFILER_PLUGIN), calls its init. `id` is hashed into `hash`. */
void fakeprof_init(struct fakeprof *p, const void *id, size_t id_len, int nnodes, int nranks,
                   int rank);
/* One operation of a group as it is launched (fake_nccl.c's run_comm): the events NCCL
 * 2.28 makes for it, with algo, protocol and channels chosen by the rule in
 * fake_nccl_profiler.c. `func` is NCCL's name ("AllReduce", "Send", ...). */
void fakeprof_launch(struct fakeprof *p, const char *func, int nranks, int rank, int nchannels,
                     int p2p_nchannels, const void *send, void *recv, size_t count,
                     int datatype, int root);
/* At communicator destroy: the plugin's finalize; the plugin is closed after the last.
 * Nothing for a communicator whose init never ran (p zeroed). */
void fakeprof_fini(struct fakeprof *p);

#endif
