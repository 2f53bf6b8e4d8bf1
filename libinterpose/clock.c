/* clock.c: the one clock of the trace (CLOCK_MONOTONIC, ns), with a skew tests can set. */
#include <time.h>

#include "gmt.h"

/* Lets tests make a thread's clock jump (a gap longer than dt can hold) without
 * sleeping for seconds; always 0 in a traced process. */
int64_t gmt_clock_skew_ns;

uint64_t gmt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + (uint64_t)gmt_clock_skew_ns;
}
