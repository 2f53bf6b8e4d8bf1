/* cmd_watch.c: `gpumemtrace watch DIR`: a live view of a running job, redrawn in place on a terminal, as lines or JSON otherwise, and as Prometheus metrics. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "cli.h"
#include "util.h"
#include "watch_http.h"
#include "watch_view.h"

const char gmt_help_watch[] =
    "usage: gpumemtrace watch [options] DIR|TRACE...\n"
    "\n"
    "A live view of a job while it runs. Reads the traces in DIR (searched below, as\n"
    "`run -o DIR` writes them; traces that appear later join) or the TRACEs given as they\n"
    "grow, each refresh reading only what was appended since the last. Per rank and\n"
    "device: tracked device memory and NCCL's share of it, untracked memory at the latest\n"
    "device sample, the peak so far, growth per training step (NVTX steps) or per minute,\n"
    "and the NCCL call the rank is in and for how long; a rank in one call for longer than\n"
    "--hang is marked as hanging, failed allocations are listed as they come, and the\n"
    "ranks that stand out with the recorded differences that explain them (docs/live.md).\n"
    "On a terminal the view is redrawn in place (q or Ctrl-C quits), else printed as one\n"
    "block of lines per refresh.\n"
    "\n"
    "options:\n"
    "  --interval SEC    seconds between refreshes (default 1)\n"
    "  --once            one snapshot of everything written so far, then exit\n"
    "  --json            one JSON object per snapshot, one a line (schema\n"
    "                    gpumemtrace.watch/1, docs/live.md)\n"
    "  --hang SEC        a rank in one NCCL call for longer than this hangs (default 60)\n"
    "  --prometheus ADDR serve the figures as Prometheus metrics at http://ADDR/metrics,\n"
    "                    ADDR = HOST:PORT (127.0.0.1:9400, [::1]:9400), bound there only;\n"
    "                    PORT 0: one the kernel picks (said on stderr)\n"
    "  --step REGEX      the NVTX range that marks a training step (as summary's --step)\n"
    "  --category NAME=GLOB  add a category rule for modules matching GLOB (repeatable)\n"
    "\n"
    "Exit status: 0, 2 bad usage, an address that cannot be served, or a trace that could\n"
    "not be read (said on stderr).\n";

#define DEFAULT_INTERVAL_NS 1000000000ull
#define DEFAULT_HANG_NS 60000000000ull
#define LINE_GROUPED 32        /* line output: more ranks than this are shown by group */

struct wopts {
    uint64_t interval_ns, hang_ns;
    bool once;
    const char *prom, *step;
    const char *cats[GMT_MAX_CAT_RULES];
    size_t n_cats;
};

enum { OPT_INTERVAL = 1, OPT_ONCE, OPT_HANG, OPT_PROM, OPT_STEP, OPT_CATEGORY };

static const struct option watch_opts[] = {
    {"interval", required_argument, 0, OPT_INTERVAL}, {"once", no_argument, 0, OPT_ONCE},
    {"hang", required_argument, 0, OPT_HANG},         {"prometheus", required_argument, 0, OPT_PROM},
    {"step", required_argument, 0, OPT_STEP},         {"category", required_argument, 0, OPT_CATEGORY},
    {0, 0, 0, 0}};

static int watch_opt(void *ctx, int c, const char *arg)
{
    struct wopts *o = ctx;
    switch (c) {
    case OPT_INTERVAL:
        if (gmt_cli_seconds(arg, &o->interval_ns) || o->interval_ns < 1000000)
            return gmt_cli_usage_error("watch", "--interval '%s': want seconds, at least 0.001", arg);
        return 0;
    case OPT_HANG:
        if (gmt_cli_seconds(arg, &o->hang_ns))
            return gmt_cli_usage_error("watch", "--hang '%s': want seconds", arg);
        return 0;
    case OPT_ONCE:
        o->once = true;
        return 0;
    case OPT_PROM:
        o->prom = arg;
        return 0;
    case OPT_STEP:
        o->step = arg;
        return 0;
    case OPT_CATEGORY:
        if (o->n_cats == GMT_MAX_CAT_RULES || !strchr(arg, '='))
            return gmt_cli_usage_error("watch", "bad --category '%s' (want NAME=GLOB, at most %d)",
                                       arg, GMT_MAX_CAT_RULES);
        o->cats[o->n_cats++] = arg;
        return 0;
    }
    return GMT_EXIT_ERROR;
}

/* ---- the terminal ---- */

struct term {
    bool tty;                  /* stdout is a terminal: redraw in place */
    bool keys;                 /* stdin is one too, read key by key (q quits) */
    struct termios saved;
    int cols, rows;
};

static void term_open(struct term *t, bool json)
{
    memset(t, 0, sizeof *t);
    t->tty = !json && isatty(STDOUT_FILENO);
    if (!t->tty)
        return;
    struct termios raw;
    if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &t->saved) == 0) {
        raw = t->saved;
        raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO); /* ISIG stays: Ctrl-C is SIGINT */
        raw.c_cc[VMIN] = 0;
        raw.c_cc[VTIME] = 0;
        t->keys = tcsetattr(STDIN_FILENO, TCSANOW, &raw) == 0;
    }
    fputs("\033[?25l\033[2J", stdout); /* no cursor while the view is up */
}

static void term_close(struct term *t)
{
    if (t->keys)
        tcsetattr(STDIN_FILENO, TCSANOW, &t->saved);
    if (t->tty)
        fputs("\033[?25h", stdout);
}

static void term_size(struct term *t)
{
    struct winsize ws;
    t->cols = 100;
    t->rows = 40;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col && ws.ws_row) {
        t->cols = ws.ws_col;
        t->rows = ws.ws_row;
    }
}

/* The frame over the last one, from the top left: each line cut at the terminal's width
 * (counted in characters: what is printed is ASCII or escaped, gmt_fput_safe) and erased
 * to its end, then everything below erased; lines beyond its height are left out. */
static void redraw(const char *text, size_t len, const struct term *t)
{
    fputs("\033[H", stdout);
    int row = 0;
    for (const char *p = text, *end = text + len; p < end && row < t->rows - 1; row++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end, *q = p;
        for (int col = 0; q < le; q++) /* a character starts at any byte but a continuation */
            if (((unsigned char)*q & 0xc0) != 0x80 && col++ == t->cols)
                break;
        fwrite(p, 1, (size_t)(q - p), stdout);
        fputs("\033[K\n", stdout);
        p = nl ? nl + 1 : end;
    }
    fputs("\033[J", stdout);
}

/* ---- the loop ---- */

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct loop {
    const struct wopts *o;
    struct gmt_watch_set set;
    struct term term;
    bool json, serving, unread; /* unread: some trace could not be read */
    struct gmt_http http;
};

/* Each trace's error, said once on stderr (on a terminal: in the view, and at the end). */
static void tell_errors(struct loop *L, bool at_end)
{
    for (size_t i = 0; i < L->set.n; i++) {
        struct gmt_watch_trace *w = L->set.t[i];
        if (!w->error || w->error_said)
            continue;
        L->unread = true;
        if (L->term.tty && !at_end)
            continue;
        gmt_err("gpumemtrace watch: %s", w->error);
        w->error_said = true;
    }
}

static int render_into(struct loop *L, const struct gmt_watch_view *v, bool prom, char **buf,
                       size_t *len)
{
    FILE *m = open_memstream(buf, len);
    if (!m)
        return -ENOMEM;
    if (prom)
        gmt_watch_render_prom(m, v);
    else if (L->json)
        gmt_watch_render_json(m, v);
    else
        gmt_watch_render_text(m, v, L->term.tty ? L->term.rows - 14 : LINE_GROUPED);
    return fclose(m) ? -ENOMEM : 0;
}

/* One refresh: read, view, print, and the metrics' new body. 0 or -ENOMEM. */
static int frame(struct loop *L)
{
    int rc = gmt_watch_set_refresh(&L->set, L->o->once);
    if (rc)
        return rc;
    tell_errors(L, false);
    struct gmt_watch_view v;
    if ((rc = gmt_watch_view_make(&L->set, L->o->hang_ns, clock_ns(CLOCK_REALTIME), &v)))
        return rc;
    char *buf = NULL;
    size_t len = 0;
    if (L->term.tty)
        term_size(&L->term);
    rc = render_into(L, &v, false, &buf, &len);
    if (!rc && L->term.tty)
        redraw(buf, len, &L->term);
    else if (!rc)
        fprintf(stdout, "%s%.*s", L->json || L->set.refreshes == 1 ? "" : "\n", (int)len, buf);
    free(buf);
    if (!rc && L->serving) {
        buf = NULL;
        if (!(rc = render_into(L, &v, true, &buf, &len)))
            gmt_http_set_body(&L->http, buf, len);
        else
            free(buf);
    }
    gmt_watch_view_free(&v);
    fflush(stdout);
    return rc;
}

/* Serves the metrics and reads keys until the next refresh is due, or a stop. */
static void wait_until(struct loop *L, uint64_t deadline)
{
    struct pollfd p[2 + GMT_HTTP_CLIENTS];
    while (!stop_signal) {
        uint64_t now = clock_ns(CLOCK_MONOTONIC);
        if (now >= deadline)
            return;
        size_t n = 0;
        if (L->term.keys)
            p[n++] = (struct pollfd){.fd = STDIN_FILENO, .events = POLLIN};
        size_t first = n;
        if (L->serving)
            n += gmt_http_pollfds(&L->http, p + n);
        uint64_t wait = deadline - now;
        int ms = (int)((wait > 1000000000ull ? 1000000000ull : wait) / 1000000) + 1;
        if (poll(p, (nfds_t)n, ms) < 0)
            continue; /* EINTR: a signal, seen above */
        if (L->term.keys && (p[0].revents & POLLIN)) {
            char k[16];
            ssize_t got = read(STDIN_FILENO, k, sizeof k);
            if (got > 0 && (memchr(k, 'q', (size_t)got) || memchr(k, 'Q', (size_t)got)))
                stop_signal = SIGTERM;
        }
        if (L->serving)
            gmt_http_serve(&L->http, p + first, n - first, clock_ns(CLOCK_MONOTONIC));
    }
}

static int run_loop(struct loop *L)
{
    struct sigaction sa = {.sa_handler = on_signal}, ign = {.sa_handler = SIG_IGN};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGPIPE, &ign, NULL);
    term_open(&L->term, L->json);
    int rc = 0;
    while (!stop_signal) {
        uint64_t start = clock_ns(CLOCK_MONOTONIC);
        if ((rc = frame(L)) || L->o->once || ferror(stdout))
            break;
        wait_until(L, start + L->o->interval_ns);
    }
    term_close(&L->term);
    tell_errors(L, true);
    if (rc)
        gmt_err("gpumemtrace watch: out of memory");
    return rc || L->unread ? GMT_EXIT_ERROR : GMT_EXIT_OK;
}

int gmt_cmd_watch(int argc, char **argv)
{
    struct wopts o = {.interval_ns = DEFAULT_INTERVAL_NS, .hang_ns = DEFAULT_HANG_NS};
    struct gmt_args args;
    gmt_args_init(&args);
    const struct gmt_args_spec spec = {
        .cmd = "watch", .help = gmt_help_watch, .shared = GMT_ARGS_JSON, .own = watch_opts,
        .own_opt = watch_opt, .ctx = &o, .optstring = "", .unknown = "unknown option"};
    int rc = gmt_args_parse(&spec, argc, argv, &args);
    if (rc >= 0)
        return rc;
    if (args.first >= argc)
        return gmt_cli_usage_error("watch", "no directory or trace given");
    if (o.once && o.prom)
        return gmt_cli_usage_error("watch", "--once and --prometheus: a server needs a watch that goes on");
    for (int i = args.first; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            gmt_err("gpumemtrace watch: %s: %s", argv[i], strerror(errno));
            return GMT_EXIT_ERROR;
        }
    }
    static struct loop L; /* the HTTP clients' buffers are large: not on the stack */
    memset(&L, 0, sizeof L);
    L.o = &o;
    L.json = args.output == GMT_OUT_JSON;
    char err[512];
    if (gmt_watch_set_init(&L.set, argv + args.first, (size_t)(argc - args.first), o.step, o.cats,
                           o.n_cats, err, sizeof err)) {
        gmt_err("gpumemtrace watch: %s", err);
        return GMT_EXIT_ERROR;
    }
    if (o.prom) {
        char bound[300];
        if (gmt_http_listen(&L.http, o.prom, bound, sizeof bound, err, sizeof err)) {
            gmt_err("gpumemtrace watch: %s", err);
            gmt_watch_set_free(&L.set);
            return GMT_EXIT_ERROR;
        }
        L.serving = true;
        gmt_err("gpumemtrace watch: serving http://%s/metrics", bound);
    }
    /* one open file per trace: a job of thousands of ranks passes the usual soft limit */
    struct rlimit nofile;
    if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
        nofile.rlim_cur = nofile.rlim_max;
        setrlimit(RLIMIT_NOFILE, &nofile);
    }
    stop_signal = 0;
    rc = run_loop(&L);
    if (L.serving)
        gmt_http_close(&L.http);
    gmt_watch_set_free(&L.set);
    return rc;
}
