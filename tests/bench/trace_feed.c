/* trace_feed.c: makes N traces grow at a set rate, as N traced processes would, by appending a source trace's bytes to each, for watch's benchmark. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * Usage: trace_feed SRC BYTES_PER_S SECONDS DIR N
 * Creates DIR/r0.gmt .. DIR/r{N-1}.gmt and every 100 ms appends the next BYTES_PER_S/10
 * bytes of SRC to each, for SECONDS (less when SRC runs out: then the traces are whole
 * and stop growing). The pieces end anywhere, in the middle of a record too, as a reader
 * may find a file the writer is appending to. Prints the bytes each trace got.
 */
int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: trace_feed SRC BYTES_PER_S SECONDS DIR N\n");
        return 2;
    }
    long rate = atol(argv[2]), secs = atol(argv[3]), n = atol(argv[5]);
    FILE *f = fopen(argv[1], "rb");
    if (!f || rate <= 0 || secs <= 0 || n <= 0) {
        fprintf(stderr, "trace_feed: bad arguments or %s: %s\n", argv[1], strerror(errno));
        return 2;
    }
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    rewind(f);
    char *src = malloc((size_t)len);
    if (!src || fread(src, 1, (size_t)len, f) != (size_t)len)
        return 2;
    fclose(f);
    int *fd = calloc((size_t)n, sizeof *fd);
    for (long i = 0; i < n; i++) {
        char p[4096];
        snprintf(p, sizeof p, "%s/r%ld.gmt", argv[4], i);
        if ((fd[i] = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND, 0644)) < 0) {
            perror(p);
            return 2;
        }
    }
    long step = rate / 10, at = 0;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    for (long tick = 0; tick < secs * 10 && at < len; tick++) {
        long k = at + step <= len ? step : len - at;
        for (long i = 0; i < n; i++)
            if (write(fd[i], src + at, (size_t)k) != k) {
                perror("trace_feed: write");
                return 1;
            }
        at += k;
        next.tv_nsec += 100000000;
        if (next.tv_nsec >= 1000000000) {
            next.tv_nsec -= 1000000000;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
    }
    printf("%ld\n", at);
    return 0;
}
