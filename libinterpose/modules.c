/* modules.c: the module map: MODULE_LOAD for every loaded ELF object, MODULE_UNLOAD when one goes away. */
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

#include "clock.h"
#include "gmt.h"
#include "modules.h"
#include "writer_api.h"

/*
 * The known set lives in mmap'd memory (no malloc in someone else's process) and is
 * changed by one thread at a time. Scans are rare (open, dlopen, dlclose), so instead
 * of a lock there is a `busy` flag and a request counter: a thread that finds the flag
 * taken leaves its request and returns; the holder scans again until no request came
 * in while it scanned. Nobody ever waits, so a dlopen from a signal handler, or from a
 * constructor run while we scan, cannot deadlock.
 *
 * Records are emitted only after dl_iterate_phdr has returned, never under the
 * loader's lock.
 */

#define MOD_MAX 8192
#define PATHS_BYTES ((size_t)8 << 20)
#define BUILD_ID_MAX 64
#define PATH_MAX_LEN 4096

struct mod {
    uint64_t bias, start, end;
    uint32_t id;
    uint32_t path_off;   /* into paths[] */
    uint32_t path_len;   /* incl. NUL */
    uint8_t build_id_len;
    uint8_t seen;        /* found by the current scan */
    uint8_t fresh;       /* added by the current scan: MODULE_LOAD due */
    uint8_t build_id[BUILD_ID_MAX];
};

static struct mod *mods;
static uint32_t nmods;
static char *paths;
static size_t paths_used;
static uint32_t next_module_id = 1;
static bool mapped_ok;
static bool active; /* set by the first write_all: before it nothing is emitted */
static int warned;

static _Atomic int busy;
static _Atomic unsigned requests;
static _Atomic int reset_requested;

static char exe_path[PATH_MAX_LEN];
static unsigned long vdso_base;

/* A MODULE_LOAD record: fixed part, build-id, path, padding. Used under `busy` only. */
static union {
    struct gmt_rec_module_load rec;
    unsigned char bytes[sizeof(struct gmt_rec_module_load) + BUILD_ID_MAX + PATH_MAX_LEN + GMT_ALIGN];
} out;

static void warn_once(const char *what)
{
    if (!warned) {
        warned = 1;
        gmt_warn("module map: %s", what);
    }
}

static bool map_tables(void)
{
    if (mapped_ok)
        return true;
    void *m, *p;
    if (!gmt_map_tables(&m, MOD_MAX * sizeof(struct mod), &p, PATHS_BYTES)) {
        warn_once("no memory for the table: modules are not recorded");
        return false;
    }
    mods = m;
    paths = p;
    ssize_t n = readlink("/proc/self/exe", exe_path, sizeof exe_path - 1);
    exe_path[n > 0 ? n : 0] = '\0';
    vdso_base = getauxval(AT_SYSINFO_EHDR);
    mapped_ok = true;
    return true;
}

/* True when [addr, addr+len) lies inside one of the object's loaded file contents:
 * notes are read from memory, and a malformed header must not make us fault. */
static bool mapped(const struct dl_phdr_info *info, uint64_t vaddr, uint64_t len)
{
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD && vaddr >= ph->p_vaddr && len <= ph->p_filesz &&
            vaddr - ph->p_vaddr <= ph->p_filesz - len)
            return true;
    }
    return false;
}

static size_t build_id(const struct dl_phdr_info *info, uint8_t *dst)
{
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE || !mapped(info, ph->p_vaddr, ph->p_memsz))
            continue;
        uint64_t align = ph->p_align == 8 ? 8 : 4;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        uint64_t left = ph->p_memsz;
        while (left >= sizeof(ElfW(Nhdr))) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
            uint64_t name = (nh->n_namesz + align - 1) & ~(align - 1);
            uint64_t desc = (nh->n_descsz + align - 1) & ~(align - 1);
            uint64_t total = sizeof *nh + name + desc;
            if (name > left || desc > left || total > left)
                break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                memcmp(p + sizeof *nh, "GNU", 4) == 0) {
                size_t n = nh->n_descsz < BUILD_ID_MAX ? nh->n_descsz : BUILD_ID_MAX;
                memcpy(dst, p + sizeof *nh + name, n);
                return n;
            }
            p += total;
            left -= total;
        }
    }
    return 0;
}

struct scan {
    unsigned index;
};

static int scan_one(struct dl_phdr_info *info, size_t size, void *data)
{
    struct scan *s = data;
    unsigned index = s->index++;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        if (a < lo)
            lo = a;
        if (a + ph->p_memsz > hi)
            hi = a + ph->p_memsz;
    }
    if (hi == 0)
        return 0;

    const char *path = info->dlpi_name ? info->dlpi_name : "";
    if (vdso_base && (lo & ~(uint64_t)4095) == vdso_base)
        path = "[vdso]";
    else if (!*path)
        path = index == 0 ? exe_path : "[unknown]";
    size_t len = strnlen(path, PATH_MAX_LEN - 1);

    for (uint32_t i = 0; i < nmods; i++) {
        struct mod *m = &mods[i];
        if (m->bias == info->dlpi_addr && m->path_len == len + 1 &&
            memcmp(paths + m->path_off, path, len) == 0) {
            m->seen = 1;
            return 0;
        }
    }
    if (nmods == MOD_MAX || paths_used + len + 1 > PATHS_BYTES) {
        warn_once("table full: later modules are not recorded");
        return 0;
    }
    struct mod *m = &mods[nmods++];
    m->bias = info->dlpi_addr;
    m->start = lo;
    m->end = hi;
    m->id = 0;
    m->path_off = (uint32_t)paths_used;
    m->path_len = (uint32_t)len + 1;
    memcpy(paths + paths_used, path, len);
    paths[paths_used + len] = '\0';
    paths_used += len + 1;
    m->build_id_len = (uint8_t)build_id(info, m->build_id);
    m->seen = 1;
    m->fresh = 1;
    return 0;
}

static void emit_load(struct mod *m, uint64_t now)
{
    uint32_t fixed = sizeof out.rec;
    uint32_t bytes = fixed + m->build_id_len + m->path_len;
    uint32_t size = gmt_rec_padded(bytes);
    memset(&out, 0, size);
    out.rec.h.type = GMT_REC_MODULE_LOAD;
    out.rec.h.size = size;
    out.rec.time_ns = now;
    out.rec.module_id = m->id;
    out.rec.build_id_len = m->build_id_len;
    out.rec.load_bias = m->bias;
    out.rec.start = m->start;
    out.rec.end = m->end;
    out.rec.path_len = m->path_len;
    memcpy(out.bytes + fixed, m->build_id, m->build_id_len);
    memcpy(out.bytes + fixed + m->build_id_len, paths + m->path_off, m->path_len);
    gmt_emit(&out.rec, 0);
}

static void emit_unload(const struct mod *m, uint64_t now)
{
    struct gmt_rec_module_unload u = { 0 };
    u.h.type = GMT_REC_MODULE_UNLOAD;
    u.h.size = sizeof u;
    u.time_ns = now;
    u.module_id = m->id;
    gmt_emit(&u, 0);
}

static void scan_and_emit(void)
{
    for (uint32_t i = 0; i < nmods; i++)
        mods[i].seen = mods[i].fresh = 0;
    struct scan s = { 0 };
    dl_iterate_phdr(scan_one, &s);

    uint64_t now = gmt_now_ns();
    uint32_t kept = 0;
    for (uint32_t i = 0; i < nmods; i++) {
        struct mod *m = &mods[i];
        if (!m->seen) {
            emit_unload(m, now);
            continue; /* its path bytes stay behind: dlclose is rare */
        }
        if (m->fresh) {
            m->id = next_module_id++;
            emit_load(m, now);
        }
        if (kept != i)
            mods[kept] = *m;
        kept++;
    }
    nmods = kept;
}

/* `busy` holds the holder's pid: a fork child inherits the flag of a parent thread
 * that was scanning, and takes it over instead of waiting for nobody. */
static bool acquire(void)
{
    int me = (int)getpid();
    int cur = 0;
    if (atomic_compare_exchange_strong_explicit(&busy, &cur, me, memory_order_acquire,
                                                memory_order_relaxed))
        return true;
    return cur != me &&
           atomic_compare_exchange_strong_explicit(&busy, &cur, me, memory_order_acquire,
                                                   memory_order_relaxed);
}

static void serve(void)
{
    gmt_lib_enter_keep_errno();
    for (;;) {
        if (!acquire())
            break; /* the holder will see our request */
        unsigned seen;
        do {
            seen = atomic_load(&requests);
            if (atomic_exchange(&reset_requested, 0)) {
                nmods = 0;
                paths_used = 0;
                active = map_tables();
            }
            if (active)
                scan_and_emit();
        } while (atomic_load(&requests) != seen);
        atomic_store_explicit(&busy, 0, memory_order_release);
        if (atomic_load(&requests) == seen)
            break;
    }
    gmt_lib_leave_keep_errno();
}

void gmt_modules_write_all(void)
{
    atomic_store(&reset_requested, 1);
    atomic_fetch_add(&requests, 1);
    serve();
}

void gmt_modules_rescan(void)
{
    atomic_fetch_add(&requests, 1);
    serve();
}
