/* unwind.c: the fast stack walk: one frame rule per return address, decoded once from its object's .eh_frame and kept in a lock-free table, so a walk costs a few loads per frame. */
#include <link.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "gmt.h"

/*
 * What a frame rule says. On x86-64 nearly every frame of compiled code has its
 * canonical frame address (CFA: the caller's stack pointer) at a constant offset from
 * rsp or rbp, its return address at CFA - 8, and rbp either untouched or saved at a
 * constant offset from the CFA. Such a frame is walked in four loads; its rule is read
 * once from the DWARF call-frame information (.eh_frame, found through the object's
 * .eh_frame_hdr) and kept, keyed by the address of the call (return address - 1).
 *
 * Anything else — a frame without call-frame information, a CFA given by an
 * expression (stack realignment), a signal trampoline, an unusual register rule —
 * makes the whole walk give up (-1): stack.c then walks that stack with libunwind as
 * before, so such stacks come out exactly as they always did. The walk produces what
 * libunwind's tracer produces for the same stack (the return addresses, innermost
 * first), and stops where it stops (a return address or rbp undefined by the rules: the
 * outermost frame; an address below 0x4000).
 *
 * The table: 2^15 slots of {key, rule}, open addressing. The key holds the address and
 * the dlopen/dlclose generation it was decoded in (an address may belong to another
 * object after a dlclose); a slot of an older generation is free to reuse. A writer
 * claims a slot by CAS (key -> BUSY), writes the rule, then publishes the key; a
 * reader checks the key before and after reading the rule. Nothing waits, nothing
 * allocates; a decode (once per address) walks the loaded objects with
 * dl_iterate_phdr, as libunwind's own lookup does.
 */

#define SLOTS_BITS 15
#define SLOTS (1u << SLOTS_BITS)
#define PROBES 16
#define BUSY UINT64_MAX
#define KEY_ADDR_MASK 0x0000ffffffffffffull
#define GEN_SHIFT 48
#define SPAN_MAX ((uint64_t)1 << 30) /* a frame is less than 1 GiB above the one it called */

/* rule: bits 0-1 kind, bit 2 CFA from rbp, bit 3 rbp saved; bits 16-31 rbp's offset from
 * the CFA (signed); bits 32-63 the CFA's offset from its register (signed) */
enum { R_EMPTY, R_STD, R_LAST, R_GIVE_UP };
#define R_KIND(r) ((unsigned)(r)&3u)
#define R_CFA_RBP 4u
#define R_RBP_SAVED 8u
#define R_RBP_OFF(r) ((int64_t)(int16_t)((r) >> 16))
#define R_CFA_OFF(r) ((int64_t)(int32_t)((r) >> 32))

struct slot {
    _Atomic uint64_t key;
    _Atomic uint64_t rule;
};

static struct slot *slots;
static _Atomic unsigned long decodes, give_ups;

bool gmt_unwind_setup(void)
{
    if (slots)
        return true;
    void *t;
    if (!gmt_map_tables(&t, SLOTS * sizeof(struct slot), NULL, 0))
        return false;
    slots = t;
    return true;
}

static uint64_t make_rule(unsigned kind, bool cfa_rbp, int64_t cfa_off, bool rbp_saved,
                          int64_t rbp_off)
{
    return (uint64_t)kind | (cfa_rbp ? R_CFA_RBP : 0) | (rbp_saved ? R_RBP_SAVED : 0) |
           ((uint64_t)(uint16_t)(int16_t)rbp_off << 16) |
           ((uint64_t)(uint32_t)(int32_t)cfa_off << 32);
}

/* ---- reading DWARF ---- */

struct cursor {
    const uint8_t *p, *end;
    bool bad;
};

static uint8_t u8(struct cursor *c)
{
    if (c->p >= c->end) {
        c->bad = true;
        return 0;
    }
    return *c->p++;
}

static uint64_t fixed(struct cursor *c, size_t n)
{
    if ((size_t)(c->end - c->p) < n) {
        c->bad = true;
        c->p = c->end;
        return 0;
    }
    uint64_t v = 0;
    memcpy(&v, c->p, n); /* little-endian */
    c->p += n;
    return v;
}

static void skip(struct cursor *c, uint64_t n)
{
    if (n > (uint64_t)(c->end - c->p)) {
        c->bad = true;
        c->p = c->end;
    } else {
        c->p += n;
    }
}

static uint64_t uleb(struct cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b = u8(c);
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80) || c->bad)
            return v;
    }
}

static int64_t sleb(struct cursor *c)
{
    int64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        b = u8(c);
        if (shift < 64)
            v |= (int64_t)((uint64_t)(b & 0x7f) << shift);
        shift += 7;
    } while ((b & 0x80) && !c->bad);
    if (shift < 64 && (b & 0x40))
        v |= -((int64_t)1 << shift);
    return v;
}

/* A pointer in a DW_EH_PE encoding; `data` is the base of datarel (the .eh_frame_hdr).
 * false for what is not handled here (indirect, textrel, funcrel, aligned). */
static bool encoded(struct cursor *c, uint8_t enc, uint64_t data, uint64_t *out)
{
    if (enc == 0xff) { /* omit */
        *out = 0;
        return true;
    }
    uint64_t here = (uint64_t)(uintptr_t)c->p, v;
    switch (enc & 0x0f) {
    case 0x00: v = fixed(c, 8); break;
    case 0x01: v = uleb(c); break;
    case 0x02: v = fixed(c, 2); break;
    case 0x03: v = fixed(c, 4); break;
    case 0x04: v = fixed(c, 8); break;
    case 0x09: v = (uint64_t)sleb(c); break;
    case 0x0a: v = (uint64_t)(int64_t)(int16_t)fixed(c, 2); break;
    case 0x0b: v = (uint64_t)(int64_t)(int32_t)fixed(c, 4); break;
    case 0x0c: v = fixed(c, 8); break;
    default: return false;
    }
    switch (enc & 0x70) {
    case 0x00: break;
    case 0x10: v += here; break;
    case 0x30: v += data; break;
    default: return false;
    }
    if (enc & 0x80)
        return false;
    *out = v;
    return !c->bad;
}

/* ---- finding the FDE ---- */

struct find {
    uint64_t pc;
    const uint8_t *hdr; /* the object's .eh_frame_hdr, NULL: not found */
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
    struct find *f = data;
    const ElfW(Phdr) *eh = NULL;
    bool inside = false;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_LOAD) {
            uint64_t lo = info->dlpi_addr + ph->p_vaddr;
            if (f->pc - lo < ph->p_memsz)
                inside = true;
        } else if (ph->p_type == PT_GNU_EH_FRAME) {
            eh = ph;
        }
    }
    if (!inside)
        return 0;
    if (eh)
        f->hdr = (const uint8_t *)(uintptr_t)(info->dlpi_addr + eh->p_vaddr);
    return 1;
}

/* The FDE covering pc through the binary-search table of .eh_frame_hdr, or NULL. */
static const uint8_t *find_fde(const uint8_t *hdr, uint64_t pc)
{
    if (hdr[0] != 1)
        return NULL;
    uint8_t frame_enc = hdr[1], count_enc = hdr[2], table_enc = hdr[3];
    struct cursor c = { hdr + 4, hdr + 4 + 32, false };
    uint64_t eh_frame, count, base = (uint64_t)(uintptr_t)hdr;
    if (!encoded(&c, frame_enc, base, &eh_frame) || !encoded(&c, count_enc, base, &count))
        return NULL;
    if (table_enc != 0x3b || count == 0 || count > (1u << 28)) /* datarel sdata4 */
        return NULL;
    const int32_t *table = (const int32_t *)(const void *)c.p;
    uint64_t lo = 0, hi = count; /* the last entry whose start <= pc */
    if (base + (uint64_t)(int64_t)table[0] > pc)
        return NULL;
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (base + (uint64_t)(int64_t)table[2 * mid] <= pc)
            lo = mid;
        else
            hi = mid;
    }
    return (const uint8_t *)(uintptr_t)(base + (uint64_t)(int64_t)table[2 * lo + 1]);
}

/* ---- running the call-frame program ---- */

enum { REG_RBP = 6, REG_RSP = 7, REG_RA = 16 };
enum { W_SAME, W_UNDEF, W_OFFSET, W_OTHER };

struct row {
    int cfa_reg;   /* 6 or 7; anything else: give up */
    int64_t cfa_off;
    bool cfa_expr; /* CFA by expression */
    int rbp_where, ra_where, rsp_where;
    int64_t rbp_off, ra_off;
};

struct cie {
    uint64_t code_align;
    int64_t data_align;
    uint64_t ra_reg;
    uint8_t fde_enc;
    bool has_z, signal;
    const uint8_t *insns, *insns_end;
};

static void set_reg(struct row *r, uint64_t reg, int where, int64_t off)
{
    if (reg == REG_RBP) {
        r->rbp_where = where;
        r->rbp_off = off;
    } else if (reg == REG_RA) {
        r->ra_where = where;
        r->ra_off = off;
    } else if (reg == REG_RSP) {
        r->rsp_where = where;
    }
}

#define STATE_DEPTH 8

/* Runs the instructions in [p, end) while the location is <= pc (`loc` in/out; for a
 * CIE's initial instructions pc is ~0). `init`: the CIE's row (for DW_CFA_restore).
 * false: an instruction this walker does not handle. */
static bool run(const struct cie *ci, const uint8_t *p, const uint8_t *end, uint64_t *loc,
                uint64_t pc, struct row *r, const struct row *init)
{
    struct cursor c = { p, end, false };
    struct row saved[STATE_DEPTH];
    unsigned depth = 0;
    while (c.p < c.end && !c.bad) {
        uint8_t op = u8(&c), low = op & 0x3f;
        uint64_t reg, delta = 0;
        bool advance = false;
        switch (op >> 6) {
        case 1: delta = low; advance = true; break;
        case 2: set_reg(r, low, W_OFFSET, (int64_t)uleb(&c) * ci->data_align); continue;
        case 3:
            if (!init)
                return false;
            set_reg(r, low, low == REG_RBP ? init->rbp_where : low == REG_RA ? init->ra_where : W_SAME,
                    low == REG_RBP ? init->rbp_off : low == REG_RA ? init->ra_off : 0);
            continue;
        default: break;
        }
        if (!advance) {
            switch (op) {
            case 0x00: continue; /* nop */
            case 0x02: delta = fixed(&c, 1); advance = true; break;
            case 0x03: delta = fixed(&c, 2); advance = true; break;
            case 0x04: delta = fixed(&c, 4); advance = true; break;
            case 0x05: reg = uleb(&c); set_reg(r, reg, W_OFFSET, (int64_t)uleb(&c) * ci->data_align); continue;
            case 0x06: /* restore_extended */
                reg = uleb(&c);
                if (!init)
                    return false;
                set_reg(r, reg, reg == REG_RBP ? init->rbp_where : reg == REG_RA ? init->ra_where : W_SAME,
                        reg == REG_RBP ? init->rbp_off : reg == REG_RA ? init->ra_off : 0);
                continue;
            case 0x07: set_reg(r, uleb(&c), W_UNDEF, 0); continue;
            case 0x08: set_reg(r, uleb(&c), W_SAME, 0); continue;
            case 0x09: reg = uleb(&c); (void)uleb(&c); set_reg(r, reg, W_OTHER, 0); continue;
            case 0x0a:
                if (depth == STATE_DEPTH)
                    return false;
                saved[depth++] = *r;
                continue;
            case 0x0b: {
                if (depth == 0)
                    return false;
                /* the CFA rule is not part of the remembered state in GCC's use, but
                 * DWARF says the whole row: restore it whole, as libunwind does */
                *r = saved[--depth];
                continue;
            }
            case 0x0c: r->cfa_reg = (int)uleb(&c); r->cfa_off = (int64_t)uleb(&c); r->cfa_expr = false; continue;
            case 0x0d: r->cfa_reg = (int)uleb(&c); r->cfa_expr = false; continue;
            case 0x0e: r->cfa_off = (int64_t)uleb(&c); continue;
            case 0x0f: r->cfa_expr = true; skip(&c, uleb(&c)); continue;
            case 0x10: /* expression */
                reg = uleb(&c);
                set_reg(r, reg, W_OTHER, 0);
                skip(&c, uleb(&c));
                continue;
            case 0x11: reg = uleb(&c); set_reg(r, reg, W_OFFSET, sleb(&c) * ci->data_align); continue;
            case 0x12: r->cfa_reg = (int)uleb(&c); r->cfa_off = sleb(&c) * ci->data_align; r->cfa_expr = false; continue;
            case 0x13: r->cfa_off = sleb(&c) * ci->data_align; continue;
            case 0x14: reg = uleb(&c); (void)uleb(&c); set_reg(r, reg, W_OTHER, 0); continue;
            case 0x15: reg = uleb(&c); (void)sleb(&c); set_reg(r, reg, W_OTHER, 0); continue;
            case 0x16: reg = uleb(&c); set_reg(r, reg, W_OTHER, 0); skip(&c, uleb(&c)); continue;
            case 0x2e: (void)uleb(&c); continue; /* GNU_args_size */
            case 0x2f: reg = uleb(&c); set_reg(r, reg, W_OFFSET, -(int64_t)uleb(&c) * ci->data_align); continue;
            default: return false; /* set_loc and anything unknown */
            }
        }
        uint64_t next = *loc + delta * ci->code_align;
        if (next > pc)
            return true;
        *loc = next;
    }
    return !c.bad;
}

static bool parse_cie(const uint8_t *p, struct cie *ci)
{
    struct cursor c = { p, p + 12, false };
    uint64_t len = fixed(&c, 4);
    if (len == 0xffffffffu || len < 8 || len > (1u << 24))
        return false;
    c.end = p + 4 + len;
    if (fixed(&c, 4) != 0) /* CIE id */
        return false;
    uint8_t version = u8(&c);
    if (version != 1 && version != 3)
        return false;
    const char *aug = (const char *)c.p;
    size_t aug_len = strnlen(aug, (size_t)(c.end - c.p));
    if (aug_len == (size_t)(c.end - c.p))
        return false;
    c.p += aug_len + 1;
    ci->code_align = uleb(&c);
    ci->data_align = sleb(&c);
    ci->ra_reg = version == 1 ? u8(&c) : uleb(&c);
    ci->fde_enc = 0; /* absptr */
    ci->has_z = false;
    ci->signal = false;
    const uint8_t *aug_end = NULL;
    for (size_t i = 0; i < aug_len; i++) {
        char a = aug[i];
        if (i == 0 && a == 'z') {
            ci->has_z = true;
            uint64_t n = uleb(&c);
            if (n > (uint64_t)(c.end - c.p))
                return false;
            aug_end = c.p + n;
        } else if (a == 'R') {
            ci->fde_enc = u8(&c);
        } else if (a == 'P') {
            uint64_t ignored;
            uint8_t enc = u8(&c);
            if (!encoded(&c, enc & 0x7f, 0, &ignored)) /* the personality (read, unused) */
                return false;
        } else if (a == 'L') {
            (void)u8(&c);
        } else if (a == 'S') {
            ci->signal = true;
        } else if (!ci->has_z) {
            return false; /* unknown augmentation without a length to skip it */
        } else {
            break; /* 'z' says how much to skip */
        }
    }
    if (aug_end)
        c.p = aug_end;
    if (c.bad || c.p > c.end || ci->code_align == 0)
        return false;
    ci->insns = c.p;
    ci->insns_end = c.end;
    return true;
}

/* The rule for the frame whose call is at pc. */
static __attribute__((noinline)) uint64_t decode(uint64_t pc)
{
    atomic_fetch_add_explicit(&decodes, 1, memory_order_relaxed);
    struct find f = { pc, NULL };
    dl_iterate_phdr(find_object, &f);
    if (!f.hdr)
        return R_GIVE_UP;
    const uint8_t *fde = find_fde(f.hdr, pc);
    if (!fde)
        return R_GIVE_UP;
    struct cursor c = { fde, fde + 8, false };
    uint64_t len = fixed(&c, 4);
    if (len == 0xffffffffu || len < 8 || len > (1u << 24))
        return R_GIVE_UP;
    c.end = fde + 4 + len;
    const uint8_t *id_at = c.p;
    uint32_t cie_off = (uint32_t)fixed(&c, 4);
    if (cie_off == 0)
        return R_GIVE_UP; /* a CIE, not an FDE */
    struct cie ci;
    if (!parse_cie(id_at - cie_off, &ci) || ci.ra_reg != REG_RA || ci.signal)
        return R_GIVE_UP;
    uint64_t start, range;
    if (!encoded(&c, ci.fde_enc, 0, &start) || !encoded(&c, ci.fde_enc & 0x0f, 0, &range))
        return R_GIVE_UP;
    if (pc - start >= range)
        return R_GIVE_UP;
    if (ci.has_z)
        skip(&c, uleb(&c));
    if (c.bad || c.p > c.end)
        return R_GIVE_UP;

    struct row r = { .cfa_reg = -1, .rbp_where = W_SAME, .ra_where = W_SAME, .rsp_where = W_SAME };
    uint64_t loc = start;
    if (!run(&ci, ci.insns, ci.insns_end, &loc, ~0ull, &r, NULL))
        return R_GIVE_UP;
    struct row init = r;
    loc = start;
    if (!run(&ci, c.p, c.end, &loc, pc, &r, &init))
        return R_GIVE_UP;

    /* the outermost frame (_start, a thread's start): as libunwind, an undefined return
     * address or rbp ends the stack */
    if (r.ra_where == W_UNDEF || r.rbp_where == W_UNDEF)
        return R_LAST;
    if (r.cfa_expr || (r.cfa_reg != REG_RSP && r.cfa_reg != REG_RBP) ||
        r.ra_where != W_OFFSET || r.ra_off != -8 || r.rsp_where != W_SAME ||
        (r.rbp_where != W_SAME && r.rbp_where != W_OFFSET) ||
        r.cfa_off <= -(1 << 28) || r.cfa_off >= (1 << 28) ||
        (r.rbp_where == W_OFFSET && (r.rbp_off <= -(1 << 14) || r.rbp_off >= (1 << 14) ||
                                     r.rbp_off == -1)))
        return R_GIVE_UP;
    return make_rule(R_STD, r.cfa_reg == REG_RBP, r.cfa_off, r.rbp_where == W_OFFSET, r.rbp_off);
}

/* ---- the table ---- */

static inline uint32_t slot_of(uint64_t pc)
{
    return (uint32_t)((pc * 0x9e3779b97f4a7c15ull) >> (64 - SLOTS_BITS));
}

static __attribute__((noinline)) uint64_t lookup_slow(uint64_t key, uint64_t gen_bits)
{
    uint64_t pc = key & KEY_ADDR_MASK;
    uint64_t rule = decode(pc);
    if (R_KIND(rule) == R_GIVE_UP)
        atomic_fetch_add_explicit(&give_ups, 1, memory_order_relaxed);
    for (uint32_t i = slot_of(pc), probe = 0; probe < PROBES; probe++, i = (i + 1) & (SLOTS - 1)) {
        uint64_t k = atomic_load_explicit(&slots[i].key, memory_order_relaxed);
        if (k == key)
            return rule; /* another thread got there first */
        if (k == BUSY || (k && (k & ~KEY_ADDR_MASK) == gen_bits))
            continue;
        if (!atomic_compare_exchange_strong_explicit(&slots[i].key, &k, BUSY,
                                                     memory_order_acq_rel, memory_order_relaxed))
            continue;
        atomic_thread_fence(memory_order_release); /* BUSY is seen before the new rule */
        atomic_store_explicit(&slots[i].rule, rule, memory_order_relaxed);
        atomic_store_explicit(&slots[i].key, key, memory_order_release);
        return rule;
    }
    return rule; /* no room near its slot: decoded again next time */
}

static inline uint64_t rule_for(uint64_t pc, uint64_t gen_bits)
{
    uint64_t key = pc | gen_bits;
    for (uint32_t i = slot_of(pc), probe = 0; probe < PROBES; probe++, i = (i + 1) & (SLOTS - 1)) {
        uint64_t k = atomic_load_explicit(&slots[i].key, memory_order_acquire);
        if (GMT_LIKELY(k == key)) {
            uint64_t rule = atomic_load_explicit(&slots[i].rule, memory_order_relaxed);
            atomic_thread_fence(memory_order_acquire);
            if (GMT_LIKELY(atomic_load_explicit(&slots[i].key, memory_order_relaxed) == key))
                return rule;
            break;
        }
        if (k == 0)
            break;
    }
    return lookup_slow(key, gen_bits);
}

/* The thread's last walk: frame i's return address and rule. A loop that allocates from
 * one place walks the same frames each time; it then reads the rules here, in order,
 * without hashing into the shared table. Cleared when the loaded objects change. (A
 * signal handler cannot walk in the middle of a walk: stack.c captures one stack at a
 * time per thread.) */
#define MEMO 64
/* Behind the last walk, the thread's recent return addresses by hash: a program whose
 * stacks change shape from event to event (PyTorch's dispatcher: another op, other
 * frames inside the same outer ones) still meets the same few thousand addresses, at
 * other depths; 8 KiB of the thread's own stay nearer the core than the shared table. */
#define NEAR_BITS 9
static GMT_TLS struct {
    uint64_t gen_bits;
    uint64_t ra[MEMO], rule[MEMO];
    struct { uint64_t ra, rule; } near[1u << NEAR_BITS];
} memo;

/* Frame i's rule when the memo does not have it (kept there for next time); R_GIVE_UP
 * for an address that cannot be a key. Out of line: the walk's loop keeps its registers. */
static __attribute__((noinline)) uint64_t rule_missed(uint64_t ra, unsigned i, uint64_t gen_bits)
{
    if (ra - 1 > KEY_ADDR_MASK)
        return R_GIVE_UP;
    unsigned h = (unsigned)((ra * 0x9e3779b97f4a7c15ull) >> (64 - NEAR_BITS));
    uint64_t rule;
    if (memo.near[h].ra == ra) {
        rule = memo.near[h].rule;
    } else {
        rule = rule_for(ra - 1, gen_bits);
        memo.near[h].ra = ra;
        memo.near[h].rule = rule;
    }
    if (i < MEMO) {
        memo.ra[i] = ra;
        memo.rule[i] = rule;
    }
    return rule;
}

int gmt_unwind_walk(const void *frame, uint64_t *out, int max)
{
    if (!slots || max < 1)
        return -1;
    const uintptr_t *fp = frame;
    uint64_t rbp = fp[0], ra = fp[1], rsp = (uint64_t)(uintptr_t)(fp + 2);
    uint64_t gen_bits = (uint64_t)(atomic_load_explicit(&gmt_hot.resolve.dl_generation,
                                                        memory_order_acquire) & 0xffffu)
                        << GEN_SHIFT;
    if (GMT_UNLIKELY(memo.gen_bits != gen_bits)) {
        memset(memo.ra, 0, sizeof memo.ra);
        memset(memo.near, 0, sizeof memo.near);
        memo.gen_bits = gen_bits;
    }
    int n = 0;
    out[n++] = ra;
    while (n < max) {
        unsigned i = (unsigned)n - 1;
        uint64_t rule = GMT_LIKELY(i < MEMO && memo.ra[i] == ra) ? memo.rule[i]
                                                                 : rule_missed(ra, i, gen_bits);
        if (GMT_UNLIKELY(R_KIND(rule) != R_STD))
            return R_KIND(rule) == R_LAST ? n : -1;
        uint64_t cfa = ((rule & R_CFA_RBP) ? rbp : rsp) + (uint64_t)R_CFA_OFF(rule);
        /* above the last frame, and not far: else libunwind decides */
        if (GMT_UNLIKELY(cfa - rsp - 1 >= SPAN_MAX))
            return -1;
        ra = *(const uint64_t *)(uintptr_t)(cfa - 8);
        if (rule & R_RBP_SAVED)
            rbp = *(const uint64_t *)(uintptr_t)(cfa + (uint64_t)R_RBP_OFF(rule));
        rsp = cfa;
        if (ra < 0x4000)
            return n;
        out[n++] = ra;
    }
    return n;
}

void gmt_unwind_counts(unsigned long *decoded, unsigned long *gave_up)
{
    *decoded = atomic_load_explicit(&decodes, memory_order_relaxed);
    *gave_up = atomic_load_explicit(&give_ups, memory_order_relaxed);
}
