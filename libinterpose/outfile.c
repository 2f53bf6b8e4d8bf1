/* outfile.c: the trace file's name (the output pattern, the rank from the environment) and its preamble (header, PROCESS and ENV records). */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "gmt.h"
#include "outfile.h"

extern char **environ;

static int env_int(const char *const *names, int n)
{
    for (int i = 0; i < n; i++) {
        const char *v = gmt_env(names[i]);
        if (!v || !*v)
            continue;
        char *end;
        errno = 0;
        long x = strtol(v, &end, 10);
        if (!errno && end != v && !*end && x >= 0 && x <= INT32_MAX)
            return (int)x;
    }
    return -1;
}

int gmt_outfile_rank(void)
{
    static const char *const n[] = { "RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                     "SLURM_PROCID" };
    return env_int(n, (int)GMT_COUNTOF(n));
}

struct sbuf {
    char *p;
    size_t len, cap;
};

static void sb_put(struct sbuf *s, const char *src, size_t n)
{
    if (s->len + n >= s->cap) {
        s->len = s->cap; /* mark overflow */
        return;
    }
    memcpy(s->p + s->len, src, n);
    s->len += n;
    s->p[s->len] = 0;
}

static void sb_int(struct sbuf *s, long v)
{
    char tmp[24];
    int n = 0;
    unsigned long u = v < 0 ? 0 - (unsigned long)v : (unsigned long)v;
    do {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[sizeof tmp - 1 - n++] = '-';
    sb_put(s, tmp + sizeof tmp - n, (size_t)n);
}

/* A value from outside (the host name) as one safe file-name component: letters, digits,
 * '.', '-' and '_' kept, any other byte (a '/', a control byte, a space) as '_', and a
 * name of dots only ("." or "..", which would climb out of the directory) as
 * underscores. */
static void sb_name(struct sbuf *s, const char *v)
{
    size_t n = strlen(v), dots = 0;
    for (size_t i = 0; i < n; i++)
        dots += v[i] == '.';
    for (size_t i = 0; i < n; i++) {
        char c = v[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || (c == '.' && dots < n);
        sb_put(s, ok ? &c : "_", 1);
    }
}

void gmt_outfile_host(char *host, size_t len)
{
    if (gethostname(host, len) != 0)
        host[0] = 0;
    host[len - 1] = 0;
    if (!host[0])
        memcpy(host, "unknown", 8);
}

/* Expands the output pattern: %h host, %p pid, %r rank ("x" unknown), %% a '%'; other
 * '%' sequences stay as written. When the rank is known and the pattern has no %r,
 * ".r<rank>" goes before a final ".gmt" (appended when there is none), so the ranks
 * of one job never share a name. `attempt` > 0 adds ".<attempt>" the same way, for a
 * name that exists already. Returns 0, or -ENAMETOOLONG. */
static int expand_path(char *out, size_t cap, const char *pattern, const char *host, long pid,
                       int rank, int attempt)
{
    struct sbuf s = { out, 0, cap };
    out[0] = 0;
    int has_r = 0;
    for (const char *p = pattern; *p; p++) {
        if (*p != '%' || !p[1]) {
            sb_put(&s, p, 1);
            continue;
        }
        switch (*++p) {
        case 'h':
            sb_name(&s, host);
            break;
        case 'p':
            sb_int(&s, pid);
            break;
        case 'r':
            has_r = 1;
            if (rank >= 0)
                sb_int(&s, rank);
            else
                sb_put(&s, "x", 1);
            break;
        case '%':
            sb_put(&s, "%", 1);
            break;
        default:
            sb_put(&s, p - 1, 2);
            break;
        }
    }
    if (s.len >= cap)
        return -ENAMETOOLONG;
    char suffix[64];
    struct sbuf x = { suffix, 0, sizeof suffix };
    suffix[0] = 0;
    if (rank >= 0 && !has_r) {
        sb_put(&x, ".r", 2);
        sb_int(&x, rank);
    }
    if (attempt > 0) {
        sb_put(&x, ".", 1);
        sb_int(&x, attempt);
    }
    if (x.len) {
        size_t at = s.len;
        if (s.len >= 4 && !strcmp(out + s.len - 4, ".gmt"))
            at = s.len - 4;
        if (s.len + x.len >= cap)
            return -ENAMETOOLONG;
        memmove(out + at + x.len, out + at, s.len - at + 1);
        memcpy(out + at, suffix, x.len);
    }
    return 0;
}

/* Appends whole NUL-terminated strings from src[0..n) that fit in `room`. */
static size_t copy_strings(char *dst, size_t room, const char *src, size_t n)
{
    size_t keep = 0;
    for (size_t i = 0; i < n; i++) {
        if (src[i])
            continue;
        if (i + 1 > room)
            break;
        keep = i + 1;
    }
    memcpy(dst, src, keep);
    return keep;
}

static bool env_wanted(const char *e)
{
    /* what changes GPU memory use, and what names the job a process belongs to (the
     * launchers' job ids; GPUMEMTRACE_JOB_ID, which `gpumemtrace run` sets) */
    static const char *const prefixes[] = { "NCCL_", "CUDA_", "GPUMEMTRACE_",
                                            "PYTORCH_CUDA_ALLOC_CONF=", "PYTORCH_NO_CUDA_MEMORY_CACHING=",
                                            "TORCHELASTIC_RUN_ID=",
                                            "SLURM_JOB_ID=", "OMPI_MCA_ess_base_jobid=",
                                            "PMIX_NAMESPACE=" };
    for (size_t i = 0; i < GMT_COUNTOF(prefixes); i++)
        if (!strncmp(e, prefixes[i], strlen(prefixes[i])))
            return true;
    return false;
}

/* What a name that exists is, when it is not a regular file or a link to one: a trace
 * is a regular file, so such a name is refused rather than numbered (/dev/null.1 would
 * be a file in /dev). NULL when a numbered name may be tried. */
static const char *not_a_file(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return NULL;
    if (S_ISLNK(st.st_mode) && stat(path, &st) != 0)
        return NULL; /* a dangling link: never followed, the next name is tried */
    if (S_ISREG(st.st_mode))
        return NULL;
    return S_ISCHR(st.st_mode)    ? "trace output is a character device, not a regular file:"
           : S_ISBLK(st.st_mode)  ? "trace output is a block device, not a regular file:"
           : S_ISFIFO(st.st_mode) ? "trace output is a FIFO, not a regular file:"
           : S_ISSOCK(st.st_mode) ? "trace output is a socket, not a regular file:"
           : S_ISDIR(st.st_mode)  ? "trace output is a directory, not a regular file:"
                                  : "trace output is not a regular file:";
}

int gmt_fd_above_stdio(int fd)
{
    if (fd < 0 || fd > 2)
        return fd;
    /* 0, 1 or 2 was closed when the process started (a daemon, `cmd >&-`): the program's
     * own writes to stdout would land in our file, and its open() would not get the
     * number it expects back */
    int high = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    int e = errno;
    close(fd);
    errno = e;
    return high;
}

int gmt_outfile_create(char *path, size_t cap, const char *host, int rank, const char **what)
{
    const char *pattern = gmt_opt.output && *gmt_opt.output ? gmt_opt.output
                                                            : "./gpumemtrace.%h.%p.gmt";
    int fd = -1;
    /* The name as written, before the rank's suffix: a device, FIFO or directory there is
     * refused as such, not given a file beside it (/dev/null.r0 in /dev) */
    if (rank >= 0 && expand_path(path, cap, pattern, host, (long)getpid(), -1, 0) == 0) {
        const char *kind = not_a_file(path);
        if (kind) {
            *what = kind;
            return -EEXIST;
        }
    }
    for (int attempt = 0; attempt < 100; attempt++) {
        int rc = expand_path(path, cap, pattern, host, (long)getpid(), rank, attempt);
        if (rc) {
            *what = "output path too long:";
            return rc;
        }
        fd = open(path, O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_WRONLY | O_APPEND, 0600);
        if (fd >= 0 || errno != EEXIST)
            break;
        const char *kind = not_a_file(path);
        if (kind) {
            *what = kind;
            return -EEXIST;
        }
    }
    if (fd < 0) {
        *what = "cannot create trace file";
        return -errno;
    }
    fd = gmt_fd_above_stdio(fd);
    if (fd < 0) {
        *what = "cannot create trace file";
        return -errno;
    }
    return fd;
}

size_t gmt_outfile_preamble(unsigned char *scratch, const char *host, int rank, bool forked)
{
    char *m = (char *)scratch;
    struct gmt_file_header *fh = (void *)m;
    memcpy(fh->magic, GMT_MAGIC, 8);
    fh->byte_order = GMT_BYTE_ORDER_MARK;
    fh->version_major = GMT_VERSION_MAJOR;
    fh->version_minor = GMT_VERSION_MINOR;
    fh->header_size = sizeof *fh;
    size_t off = sizeof *fh;

    /* PROCESS: fixed part, host, command line (whole arguments only), padding. */
    struct gmt_rec_process *p = (void *)(m + off);
    static const char *const lrank[] = { "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID" };
    static const char *const wsize[] = { "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS" };
    static const char *const lsize[] = { "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE",
                                         "MPI_LOCALNRANKS", "SLURM_NTASKS_PER_NODE" };
    p->h.type = GMT_REC_PROCESS;
    p->pid = (uint32_t)getpid();
    p->ppid = (uint32_t)getppid();
    p->rank = rank;
    p->local_rank = env_int(lrank, (int)GMT_COUNTOF(lrank));
    p->world_size = env_int(wsize, (int)GMT_COUNTOF(wsize));
    p->local_world_size = env_int(lsize, (int)GMT_COUNTOF(lsize));
    struct timespec rt, mt;
    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mt);
    p->realtime_ns = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    p->monotonic_ns = (uint64_t)mt.tv_sec * 1000000000u + (uint64_t)mt.tv_nsec +
                      (uint64_t)gmt_clock_line.skew_ns;
    p->flags = forked ? GMT_PROC_FORKED : 0;
    size_t at = off + sizeof *p;
    size_t hl = strlen(host) + 1;
    memcpy(m + at, host, hl);
    p->host_len = (uint32_t)hl;
    at += hl;
    /* The command line is capped well under a record's limit: it is context, not data. */
    size_t room = GMT_REC_MAX / 2 - (at - off);
    char *raw = m + GMT_REC_MAX; /* second half of the scratch: read area */
    size_t got = 0;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        for (;;) {
            ssize_t n = read(fd, raw + got, GMT_REC_MAX - 1 - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
            if (got >= GMT_REC_MAX - 1)
                break;
        }
        close(fd);
    }
    size_t cl = copy_strings(m + at, room, raw, got);
    p->cmdline_len = (uint32_t)cl;
    at += cl;
    size_t psize = gmt_rec_padded((uint32_t)(at - off));
    memset(m + at, 0, psize - (at - off));
    p->h.size = (uint32_t)psize;
    off += psize;

    /* ENV: the variables that change GPU memory use; whole strings while they fit. */
    struct gmt_rec_env *e = (void *)(m + off);
    e->h.type = GMT_REC_ENV;
    at = off + sizeof *e;
    size_t eroom = GMT_REC_MAX - sizeof *e - GMT_ALIGN;
    for (char **v = environ; v && *v; v++) {
        if (!env_wanted(*v))
            continue;
        size_t n = strlen(*v) + 1;
        if ((at - off - sizeof *e) + n > eroom)
            break;
        memcpy(m + at, *v, n);
        at += n;
        e->count++;
    }
    e->bytes = (uint32_t)(at - off - sizeof *e);
    size_t esize = gmt_rec_padded((uint32_t)(at - off));
    memset(m + at, 0, esize - (at - off));
    e->h.size = (uint32_t)esize;
    off += esize;

    return off;
}

