#!/usr/bin/env python3
"""sweep.py: mutated traces through every CLI command: exit 0, 1 or 2, never a signal, a hang or output that does not parse.

Usage: sweep.py CLI SEED.gmt... [--count N] [--seed S] [--timeout SEC] [--keep DIR] [--jobs N]
                [--replay DIR]

Each mutant is made from one seed trace by one deterministic mutation (bit flips, byte
and word overwrites, truncations, duplicated, dropped, swapped and spliced records,
huge sizes and counts, zero-size and oversize record headers) and run through every
command the CLI has, text and JSON. A command that is killed by a signal, runs past
the time limit, exits with another status, prints a --json document that does not
parse (json.loads, strict UTF-8) or a stderr that is not one line per message fails
the sweep; the mutant is kept (--keep) so that it can become a regression input.
--replay DIR runs the files kept there (tests/fuzz/regress/sweep) through the same
commands and checks.
"""
import concurrent.futures
import json
import os
import random
import struct
import subprocess
import sys
import tempfile

HDR = 32          # struct gmt_file_header
REC = 8           # struct gmt_rec
HUGE = [0x7FFFFFFFFFFFFFFF, 0x8000000000000000, 0xFFFFFFFFFFFFFFFF, 0xFFFFFFFF, 0x80000000,
        0x100000000, 1 << 52]


def records(data):
    """Offsets and sizes of the records a reader would walk, until the walk stops making sense."""
    out, off = [], HDR
    while off + REC <= len(data):
        size = struct.unpack_from('<I', data, off + 4)[0]
        if size < REC or size % 8 or off + size > len(data):
            break
        out.append((off, size))
        off += size
    return out


def mutate(data, other, rng):
    b = bytearray(data)
    recs = records(data)
    kind = rng.randrange(14)
    if kind == 0:      # bit flips
        for _ in range(rng.randint(1, 8)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif kind == 1:    # random bytes over a span
        i = rng.randrange(len(b))
        for j in range(i, min(len(b), i + rng.randint(1, 32))):
            b[j] = rng.randrange(256)
    elif kind == 2:    # truncation anywhere
        b = b[:rng.randrange(len(b) + 1)]
    elif kind == 3:    # zeros over a span: what a file system leaves after a crash
        i = rng.randrange(len(b))
        n = rng.choice([8, 16, 64, 512, 4096])
        b[i:i + n] = bytes(min(n, len(b) - i))
    elif kind == 4 and recs:   # a zero-size or tiny record header at a record boundary
        off, _ = rng.choice(recs)
        struct.pack_into('<HHI', b, off, rng.randrange(0, 25), 0, rng.choice([0, 1, 4, 7, 9]))
    elif kind == 5 and recs:   # an oversize or misaligned record size
        off, _ = rng.choice(recs)
        struct.pack_into('<I', b, off + 4, rng.choice([0xFFFFFFF8, 1 << 20, (1 << 20) + 8,
                                                        len(b), len(b) * 2, 12]))
    elif kind == 6 and recs:   # a huge value in an 8-byte field of a record
        off, size = rng.choice(recs)
        if size >= 16:
            field = off + 8 * rng.randrange(1, size // 8)
            struct.pack_into('<Q', b, field, rng.choice(HUGE))
    elif kind == 7 and recs:   # a huge or negative 4-byte field
        off, size = rng.choice(recs)
        if size >= 12:
            field = off + 8 + 4 * rng.randrange(0, (size - 8) // 4)
            struct.pack_into('<I', b, field, rng.choice([0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 0]))
    elif kind == 8 and recs:   # a record duplicated in place
        off, size = rng.choice(recs)
        b[off:off] = b[off:off + size]
    elif kind == 9 and len(recs) > 1:  # a record dropped
        off, size = rng.choice(recs)
        del b[off:off + size]
    elif kind == 10 and len(recs) > 1:  # two records swapped
        (o1, s1), (o2, s2) = sorted(rng.sample(recs, 2))
        b = b[:o1] + b[o2:o2 + s2] + b[o1 + s1:o2] + b[o1:o1 + s1] + b[o2 + s2:]
    elif kind == 11:   # spliced with another trace: head of one, tail of the other
        orecs = records(other)
        cut1 = rng.choice(recs)[0] if recs else HDR
        cut2 = rng.choice(orecs)[0] if orecs else HDR
        b = b[:cut1] + other[cut2:]
    elif kind == 12 and recs:  # a record's type changed to another known or unknown one
        off, _ = rng.choice(recs)
        struct.pack_into('<H', b, off, rng.choice(list(range(0, 22)) + [255, 0xFFFF]))
    elif kind == 13 and recs:  # a string record's bytes made invalid UTF-8 and control chars
        off, size = rng.choice(recs)
        for j in range(off + REC, off + size):
            if 0x20 <= b[j] < 0x7F and rng.random() < 0.3:
                b[j] = rng.choice([0xFF, 0xC3, 0x80, 0x1B, 0x0A, 0x07, 0xE2])
    else:
        i = rng.randrange(len(b))
        b[i] ^= 0xFF
    return bytes(b)


def commands(t, base, baseline):
    return [
        ['summary', '--no-symbols', '--width', '100', t],
        ['summary', '--no-symbols', '--json', t],
        ['summary', '--no-symbols', '--csv', '-o', t[:-4] + '-tables', t],
        ['summary', '--no-symbols', '--csv', '--table', 'job_ranks', t, t],
        ['summary', '--json', t],
        ['merge', '--no-symbols', t, t],
        ['merge', '--no-symbols', '--json', t],
        ['diff', '--json', t, t],
        ['diff', t, base],
        ['check', t, '--write-baseline', '-'],
        ['check', t, '--baseline', baseline],
        ['diff', '--all', base, t],
        ['dump', t],
        ['dump', '--expand', t],
    ]


# Messages about the traces as a whole, which name none of them.
JOB_MESSAGES = ['no device memory and no NCCL call in the traces']

# A sanitizer's report must fail the sweep, not pass as exit 1 or 2.
SAN_ENV = dict(os.environ,
               ASAN_OPTIONS='exitcode=99:detect_leaks=1:abort_on_error=0',
               UBSAN_OPTIONS='halt_on_error=1:exitcode=98:print_stacktrace=1')


def run(cli, args, timeout):
    try:
        p = subprocess.run([cli] + args, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=timeout, env=SAN_ENV)
    except subprocess.TimeoutExpired:
        return 'hang (over %ss)' % timeout
    if p.returncode < 0:
        return 'signal %d' % -p.returncode
    if p.returncode not in (0, 1, 2):
        return 'exit %d: %s' % (p.returncode, p.stderr.decode('utf-8', 'replace')[-400:])
    try:
        err = p.stderr.decode('utf-8')
    except UnicodeDecodeError:
        return 'stderr is not UTF-8: %r' % p.stderr[:200]
    if any(c in err for c in '\x1b\x07\r\x00') or any(0x80 <= ord(c) < 0xa0 for c in err):
        return 'control characters on stderr: %r' % err[:200]
    if p.returncode == 2:
        if not err.strip():
            return 'exit 2 without a message'
        # every message is one line naming the file it is about (the mutant, or the
        # seed it is compared with); a line of a message cannot be blank
        lines = err.rstrip('\n').split('\n')
        if any(not l.strip() for l in lines):
            return 'blank line in the messages: %r' % err[:300]
        files = [a for a in args[1:] if a.endswith(('.gmt', '.json'))]
        for l in lines:
            if not any(f in l for f in files) and not any(j in l for j in JOB_MESSAGES):
                return 'exit 2, but a message names no file: %r' % err[:300]
    if p.returncode in (0, 1) and ('--json' in args or args[-1] == '-'):
        try:
            json.loads(p.stdout.decode('utf-8'))
        except (UnicodeDecodeError, ValueError) as e:
            return 'invalid JSON: %s' % e
    return None


def one(cli, tmp, n, s, data, base, baseline, timeout):
    """Runs mutant n through every command; (runs, failure message or None)."""
    t = os.path.join(tmp, 'm%d.gmt' % n)
    with open(t, 'wb') as f:
        f.write(data)
    runs = 0
    try:
        for args in commands(t, base, baseline):
            runs += 1
            why = run(cli, args, timeout)
            if why:
                return runs, 'FAIL mutant %d (seed trace %d): %s: %s' % (
                    n, s, ' '.join(args[:-1]), why)
        return runs, None
    finally:
        os.unlink(t)


def main(argv):
    count, seed, timeout, keep, jobs = 300, 1, 10, None, os.cpu_count() or 1
    replay = None
    pos = []
    it = iter(argv)
    for a in it:
        if a == '--count':
            count = int(next(it))
        elif a == '--seed':
            seed = int(next(it))
        elif a == '--timeout':
            timeout = float(next(it))
        elif a == '--keep':
            keep = next(it)
        elif a == '--jobs':
            jobs = int(next(it))
        elif a == '--replay':
            replay = next(it)
        else:
            pos.append(a)
    if len(pos) < 2:
        print('usage: sweep.py CLI SEED.gmt... [--count N] [--seed S] [--timeout SEC] '
              '[--keep DIR] [--jobs N]', file=sys.stderr)
        return 2
    cli, seeds = pos[0], [open(p, 'rb').read() for p in pos[1:]]
    rng = random.Random(seed)
    # the mutants first, from the one generator: the same ones whatever the job count
    mutants = []
    if replay:  # stored regression inputs, each as it is, after the mutants
        for i, name in enumerate(sorted(os.listdir(replay))):
            with open(os.path.join(replay, name), 'rb') as f:
                mutants.append((count + i, -1, f.read()))
    for n in range(count):
        s = rng.randrange(len(seeds))
        mutants.append((n, s, mutate(seeds[s], seeds[rng.randrange(len(seeds))], rng)))
    failures, runs = 0, 0
    with tempfile.TemporaryDirectory(prefix='gmt-sweep.') as tmp:
        base = os.path.join(tmp, 'base.gmt')
        with open(base, 'wb') as f:
            f.write(seeds[0])
        baseline = os.path.join(tmp, 'base.json')
        with open(baseline, 'wb') as f:
            f.write(subprocess.run([cli, 'check', base, '--write-baseline', '-'],
                                   capture_output=True).stdout)
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            results = pool.map(lambda m: one(cli, tmp, m[0], m[1], m[2], base, baseline,
                                             timeout), mutants)
            for (n, s, data), (k, why) in zip(mutants, results):
                runs += k
                if not why:
                    continue
                failures += 1
                print(why)
                if keep:
                    os.makedirs(keep, exist_ok=True)
                    with open(os.path.join(keep, 'sweep-%d-%d.gmt' % (seed, n)), 'wb') as f:
                        f.write(data)
    print('sweep: %d mutants and %d stored inputs, %d command runs, %d failed' %
          (count, len(mutants) - count, runs, failures))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
