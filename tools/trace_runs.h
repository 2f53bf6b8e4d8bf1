/* trace_runs.h: where each thread's records lie in a loaded trace, written by the loader and read by the iteration. */
#ifndef GMT_TRACE_RUNS_H
#define GMT_TRACE_RUNS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Events are not stored. Loading reads the file once in file order (validation, the
 * metadata tables, scopes) and notes where each thread's records lie: the chunks of a
 * thread, and the runs in which its event times never go back. A thread's clock only
 * moves forward, so in a sound file each thread is one run, and the events in time
 * order are a merge of a few sorted sequences read in place from the mapped file
 * (gmt_trace_iter_*): no event array (56 bytes per event, most of the page faults) and
 * no sort. A corrupt file whose times go back just has more runs.
 */
struct gmt_seg {
    uint64_t start, end;       /* file offsets of a chunk's records */
};

struct gmt_tstream {
    uint32_t tid;
    struct gmt_seg *segs; size_t n_segs, cap_segs;
    size_t run;                /* its latest run */
    uint64_t last_time;        /* of its latest event */
    bool has_ev;
};

struct gmt_run {
    size_t stream, seg;        /* the segment where it starts */
    uint64_t start, end;       /* file offsets; end: where the thread's next run starts */
    uint64_t clock;            /* the thread's clock and device before `start` */
    bool clock_set;
    int16_t device;
};

#endif
