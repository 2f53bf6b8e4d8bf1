/* phases.h: device memory by NVTX phase: each named range's peak and growth, allocations by the ranges open on their thread, and growth per step. */
#ifndef GMT_PHASES_H
#define GMT_PHASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace.h"

/* The default --step: a range whose whole name is a common training-step name
 * (docs/phases.md), compared without regard to case. */
#define GMT_STEP_REGEX_DEFAULT                                                               \
    "^(profilerstep#?[0-9]*|((train|training|val|eval|optimizer)[_ -]?)?step[_ #-]?[0-9]*|"  \
    "iter(ation)?[_ #-]?[0-9]*|batch[_ #-]?[0-9]*)$"

/* One named range (push/pop or start/end), over all its occurrences. Bytes are the
 * process's tracked device memory (all devices, or --device's), as the replay counts it. */
struct gmt_phase_row {
    char *name;                /* "NAME", or "DOMAIN::NAME" outside the default domain;
                                * a step's trailing number as "N" */
    bool step;                 /* its name matches --step */
    uint64_t count;            /* occurrences that ended */
    uint64_t open_at_end;      /* occurrences still open where the trace ends */
    uint64_t peak;             /* the most device memory live while one was open */
    int64_t growth;            /* sum over occurrences of (live at its end - at its start) */
    int64_t growth_max;        /* the largest of one occurrence */
    uint64_t time_ns;          /* sum of their durations */
    uint64_t allocs, alloc_bytes; /* device allocations it was the innermost range of */
};

/* The ranges open on the allocating thread (outermost first, joined by " > "), and
 * the device allocations made under exactly that stack. */
struct gmt_phase_stack {
    char *path;
    uint64_t allocs, bytes;
};

/* One occurrence of a range on the time line (the report's lane). */
struct gmt_phase_span {
    const char *name;          /* its row's name (gmt_phase_row.name, owned there) */
    uint64_t t_begin, t_end;   /* ns; t_end 0: open where the trace ends */
    uint32_t tid;
    uint32_t depth;            /* push ranges open below it on its thread; 0 start/end */
};

struct gmt_phases {
    struct gmt_phase_row *rows; size_t n_rows;       /* by peak, then name */
    struct gmt_phase_stack *stacks; size_t n_stacks; /* by bytes */
    struct gmt_phase_span *spans; size_t n_spans;    /* every occurrence, as they began */
    uint64_t ranges;           /* NVTX_RANGE records read */
    uint64_t unnamed_allocs;   /* device allocations made with no range open on their thread */
    /* the step marker */
    const char *step_regex;
    uint64_t steps;            /* step occurrences that ended */
    int64_t first_step_growth; /* the first step's (warm-up: caches fill) */
    int64_t later_growth;      /* steps 2..N together */
    int64_t later_min;         /* the least one of them grew */
    bool grows_every_step;     /* at least 3 steps, and each after the first grew */
    int64_t growth_per_step;   /* with grows_every_step: later_growth per step after the first */
    uint32_t grow_stack;       /* the stack holding most of what steps 2..N allocated and
                                * was still live at the end (0: not captured) */
    uint64_t grow_stack_bytes; /* what it holds of that; 0: none of it is live */
};

/* Computes the phases of a loaded trace: 0, -ENOMEM, -EINVAL with a one-line message
 * in err for a --step that is no regular expression. device: -1 all. */
int gmt_phases_compute(const struct gmt_trace *t, const char *step_regex, int device,
                       struct gmt_phases *p, char *err, size_t errlen);
void gmt_phases_free(struct gmt_phases *p);

#endif
