#!/usr/bin/env python3
"""gpucheck.py: the checks behind tests/gpu/run.sh: compare CHECK lines, match NCCL's ALLOC log against trace dumps, compare device-memory deltas; selftest on synthetic input."""
import argparse
import glob
import json
import os
import re
import sys
import tempfile

MiB = 1 << 20
GRANULE = 2 * MiB  # cuMem granularity on the GPU machines: NCCL's sizes are rounded up to it

FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\[[^\]]*\]|\S+)')
NCCL_PREFIX = re.compile(r'^\s*(?P<host>[^:\s]+):(?P<pid>\d+):(?P<tid>\d+) \[(?P<dev>\d+)\]')
NCCL_ALLOCS = [
    # (kind, pattern): NCCL_DEBUG_SUBSYS=ALLOC lines that name an allocation it made
    ("device", re.compile(r'Cuda Alloc Size (?P<size>\d+) pointer (?P<ptr>0x[0-9a-fA-F]+)')),
    ("shareable", re.compile(r'Allocated shareable buffer (?P<ptr>0x[0-9a-fA-F]+) size (?P<size>\d+)')),
    ("host", re.compile(r'Cuda Host Alloc Size (?P<size>\d+) pointer (?P<ptr>0x[0-9a-fA-F]+)')),
]
# ALLOC kinds whose address is a usable address (not a handle) of memory NCCL could name.
ADDRESS_KINDS = {"DEVICE", "HOST_PINNED", "MANAGED", "POOL_ALLOC", "VIRTUAL", "MAPPING",
                 "NCCL_MEM", "HOST_REGISTERED"}


def roundup(n, g):
    return (n + g - 1) // g * g


def human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", MiB), ("KiB", 1024)):
        if abs(n) >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


# ---------------------------------------------------------------- trace dumps

class Trace:
    """What the checks need from one `gpumemtrace dump` output."""

    def __init__(self, path):
        self.path = path
        self.pid = None
        self.rank = None
        self.allocs = {}        # address -> list of (kind, bytes)
        self.nallocs = 0
        self.scopes = []        # SCOPE_BEGIN fields, in file order
        self.scope_by_id = {}
        self.meminfo = {}       # scope id -> {phase: [(device, free)]}
        self.dropped = 0
        self.complete = False
        with open(path, errors="replace") as f:
            for line in f:
                self._line(line)

    def _line(self, line):
        parts = line.split(None, 4)
        if len(parts) < 4 or not parts[0].isdigit():
            return
        rtype = parts[3]
        fields = dict(FIELD.findall(parts[4])) if len(parts) > 4 else {}
        if rtype == "PROCESS":
            self.pid = int(fields.get("pid", "0"))
            self.rank = int(fields.get("rank", "-1"))
        elif rtype in ("ALLOC", "ALLOC_SMALL"):
            addr = int(fields["address"], 16)
            self.allocs.setdefault(addr, []).append((fields.get("kind", "?"), int(fields["bytes"])))
            self.nallocs += 1
        elif rtype == "SCOPE_BEGIN":
            s = {"op": fields.get("op"), "scope": int(fields.get("scope", 0)),
                 "parent": int(fields.get("parent", 0)), "count": int(fields.get("count", 0)),
                 "datatype": int(fields.get("datatype", -1)), "comm": fields.get("comm")}
            self.scopes.append(s)
            self.scope_by_id[s["scope"]] = s
        elif rtype == "MEMINFO":
            sid = int(fields.get("scope", 0))
            ph = fields.get("phase", "?")
            self.meminfo.setdefault(sid, {}).setdefault(ph, []).append(
                (int(fields.get("device", -1)), int(fields.get("free", 0))))
        elif rtype == "END":
            self.complete = True
            self.dropped = int(fields.get("records_dropped", 0))

    def find(self, ptr, size):
        """'found' (same address, size within the cuMem rounding), 'size' (same address,
        other size), 'inside' (inside a traced range), or 'missing'."""
        best = "missing"
        for kind, b in self.allocs.get(ptr, ()):
            if kind not in ADDRESS_KINDS:
                continue
            if size <= b <= max(roundup(size, GRANULE), size):
                return "found"
            best = "size"
        if best == "missing":
            for addr, lst in self.allocs.items():
                if addr < ptr and any(k in ADDRESS_KINDS and addr + b > ptr for k, b in lst):
                    return "inside"
        return best


def load_traces(paths):
    return [Trace(p) for p in paths]


# ---------------------------------------------------------------- NCCL logs

def parse_nccl_log(paths):
    """{pid: [(kind, ptr, size, dev)]} from NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALLOC output."""
    out = {}
    for path in paths:
        guess = re.search(r'\.(\d+)\.log$', path)
        with open(path, errors="replace") as f:
            for line in f:
                if "NCCL INFO" not in line:
                    continue
                for kind, pat in NCCL_ALLOCS:
                    m = pat.search(line)
                    if not m:
                        continue
                    pre = NCCL_PREFIX.match(line)
                    pid = int(pre["pid"]) if pre else int(guess[1]) if guess else 0
                    dev = int(pre["dev"]) if pre else -1
                    out.setdefault(pid, []).append((kind, int(m["ptr"], 16), int(m["size"]), dev))
                    break
    return out


def match_logs(logs, traces):
    """Rows per process: every NCCL-logged allocation looked up in that process's trace."""
    by_pid = {t.pid: t for t in traces}
    rows = []
    for pid in sorted(logs):
        t = by_pid.get(pid)
        entries = logs[pid]
        row = {"pid": pid, "rank": t.rank if t else None, "trace": t.path if t else None,
               "log_count": len(entries), "log_bytes": sum(e[2] for e in entries),
               "found_count": 0, "found_bytes": 0, "missing": []}
        for kind, ptr, size, dev in entries:
            st = t.find(ptr, size) if t else "no trace"
            if st == "found":
                row["found_count"] += 1
                row["found_bytes"] += size
            else:
                row["missing"].append({"kind": kind, "pointer": hex(ptr), "size": size,
                                       "device": dev, "why": st})
        rows.append(row)
    return rows


def print_match(rows, out=sys.stdout):
    print(f"{'rank':>4} {'pid':>8} {'nccl log':>8} {'log bytes':>11} {'in trace':>8} "
          f"{'bytes':>11} {'missing':>7}", file=out)
    for r in rows:
        rank = "-" if r["rank"] is None or r["rank"] < 0 else str(r["rank"])
        print(f"{rank:>4} {r['pid']:>8} {r['log_count']:>8} {human(r['log_bytes']):>11} "
              f"{r['found_count']:>8} {human(r['found_bytes']):>11} {len(r['missing']):>7}",
              file=out)
    for r in rows:
        for m in r["missing"][:10]:
            print(f"  missing pid {r['pid']}: {m['kind']} {m['pointer']} size {m['size']} "
                  f"dev {m['device']}: {m['why']}", file=out)
        if len(r["missing"]) > 10:
            print(f"  … and {len(r['missing']) - 10} more for pid {r['pid']}", file=out)
    c, f = sum(r["log_count"] for r in rows), sum(r["found_count"] for r in rows)
    cb, fb = sum(r["log_bytes"] for r in rows), sum(r["found_bytes"] for r in rows)
    print(f"{f}/{c} NCCL-logged allocations in the trace ({human(fb)}/{human(cb)}), "
          f"{len(rows)} process(es)", file=out)


# ---------------------------------------------------------------- commands

# A CHECK record runs from "CHECK" to the end of its line. Ranks share one stdout, so
# two records can land on one line when their writes interleave: a "CHECK" inside a
# line starts the next record.
CHECK_RE = re.compile(r"CHECK.*?(?=CHECK|\n|$)")


def check_lines(path):
    with open(path, errors="replace") as f:
        return sorted(r.rstrip() for r in CHECK_RE.findall(f.read()))


def cmd_compare(a):
    x, y = check_lines(a.plain), check_lines(a.traced)
    if not x:
        print(f"compare: no CHECK lines in {a.plain}")
        return 1
    if x != y:
        print(f"compare: CHECK lines differ ({len(x)} untraced, {len(y)} traced):")
        for line in sorted(set(x) ^ set(y))[:20]:
            print(("  untraced: " if line in x else "  traced:   ") + line)
        return 1
    print(f"compare: {len(x)} CHECK lines identical")
    return 0


def cmd_parse(a):
    bad = 0
    for t in load_traces(a.dump):
        print(f"parse: {t.path}: pid {t.pid} rank {t.rank}, {t.nallocs} ALLOC, "
              f"{len(t.scopes)} SCOPE_BEGIN, {len(t.meminfo)} sampled scopes, "
              f"{'complete' if t.complete else 'cut'}")
        bad += t.pid is None or t.nallocs == 0
    return 1 if bad else 0


def cmd_allocs(a):
    traces = load_traces(a.dump)
    sizes = {}
    for t in traces:
        for lst in t.allocs.values():
            for kind, b in lst:
                sizes.setdefault(b, set()).add(kind)
    bad = 0
    for want in a.expect:
        size = int(want)
        kinds = sizes.get(size)
        print(f"allocs: {human(size):>10} {'found as ' + ','.join(sorted(kinds)) if kinds else 'MISSING'}")
        bad += kinds is None
    print(f"allocs: {sum(t.nallocs for t in traces)} ALLOC records in {len(traces)} trace(s)")
    return 1 if bad else 0


def cmd_nccl_log(a):
    logs = parse_nccl_log(a.log)
    traces = load_traces(a.dump)
    rows = match_logs(logs, traces)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    if not rows:
        print("nccl-log: no NCCL ALLOC lines found (was NCCL_DEBUG_SUBSYS=ALLOC honoured?)")
        return 1
    print_match(rows)
    missing = sum(len(r["missing"]) for r in rows)
    if a.summary:
        with open(a.summary, "a") as f:
            for r in rows:
                f.write(f"nccl-log rank {r['rank']} pid {r['pid']}: {r['found_count']}/"
                        f"{r['log_count']} allocations, {human(r['found_bytes'])}/"
                        f"{human(r['log_bytes'])}, {len(r['missing'])} missing\n")
    return 1 if missing else 0


# Collective scope ops in the trace for the JSON op names train.py writes.
OPS = {"all_reduce": "AllReduce", "all_gather": "AllGather", "reduce_scatter": "ReduceScatter",
       "init_process_group": "CommInitRankConfig"}


def scope_delta(t, sid):
    """Device used-memory growth over a scope from its MEMINFO pair, or None."""
    m = t.meminfo.get(sid, {})
    b, e = m.get("BEGIN"), m.get("END")
    if not b or not e:
        return None
    return b[0][1] - e[0][1]


def cmd_meminfo(a):
    traces = {t.pid: t for t in load_traces(a.dump)}
    rows, bad = [], 0
    for path in a.json:
        with open(path) as f:
            j = json.load(f)
        t = traces.get(j["pid"])
        if not t:
            print(f"meminfo: no trace for pid {j['pid']} ({path})")
            bad += 1
            continue
        used = {}
        for ev in j["events"]:
            op = OPS.get(ev["op"])
            if not op:
                continue
            # The n-th sampled scope of that op (largest count first: the 256 MiB tensors,
            # not DDP's gradient buckets) stands for step n.
            cands = [s for s in t.scopes if s["op"] == op and scope_delta(t, s["scope"]) is not None]
            if op != "CommInitRankConfig":
                top = max((s["count"] for s in cands), default=None)
                cands = [s for s in cands if s["count"] == top]
            k = used.get(op, 0)
            used[op] = k + 1
            if ev["step"] != k or k >= len(cands):
                continue
            d = scope_delta(t, cands[k]["scope"])
            diff = d - ev["delta_used"]
            ok = abs(diff) <= a.tolerance_mib * MiB
            bad += not ok
            rows.append((j["rank"], ev["op"], ev["step"], ev["delta_used"], d, diff, ok))
    print(f"{'rank':>4} {'collective':<19} {'step':>4} {'torch delta':>12} {'trace delta':>12} "
          f"{'diff':>10}  ok")
    for r in rows:
        print(f"{r[0]:>4} {r[1]:<19} {r[2]:>4} {human(r[3]):>12} {human(r[4]):>12} "
              f"{human(r[5]):>10}  {'yes' if r[6] else 'NO'}")
    if not rows:
        print("meminfo: no sampled scope to compare (GPUMEMTRACE_MEMINFO=never?)")
        return 1
    return 1 if bad else 0


# ---------------------------------------------------------------- selftest

SYN_LOG = """\
gpu1:4242:4250 [0] NCCL INFO Bootstrap: Using eth0:10.0.0.1<0>
gpu1:4242:4250 [0] NCCL INFO init.cc:452 Cuda Alloc Size 4096 pointer 0x7f0000200000
gpu1:4242:4250 [0] NCCL INFO init.cc:470 Cuda Host Alloc Size 1048576 pointer 0x7f1000000000
gpu1:4242:4299 [0] NCCL INFO Allocated shareable buffer 0x7f0002000000 size 10485760 ipcDesc 0x55
gpu1:4242:4299 [0] NCCL INFO Allocated shareable buffer 0x7f0003000000 size 2097152 ipcDesc 0x56
gpu1:4242:4250 [0] NCCL INFO enqueue.cc:99 Cuda Alloc Size 5000000 pointer 0x7f0004000000
gpu1:4242:4250 [0] NCCL INFO enqueue.cc:99 Cuda Alloc Size 8192 pointer 0x7f0005000000
gpu1:4243:4251 [1] NCCL INFO init.cc:452 Cuda Alloc Size 4096 pointer 0x7e0000200000
"""


def syn_dump(pid, rank, allocs):
    lines = ["    OFFSET     TID            TIME TYPE / FIELDS",
             f"        32       -        0.000000 PROCESS       pid={pid} ppid=1 rank={rank} "
             f"local_rank={rank} world_size=2 local_world_size=2 realtime_ns=1 monotonic_ns=1 "
             f'flags=0x0 host="gpu1" cmdline=["python3" "train.py"]']
    off = 200
    for kind, addr, size in allocs:
        lines.append(f"{off:>10} {pid + 8:>7} {0.5:>15.6f} ALLOC         api=cuMemMap kind={kind} "
                     f"address={hex(addr)} bytes={size} dt=10 stack=1 scope=3 flags=0x0 device=0")
        off += 64
    lines.append(f"{off:>10} {pid + 8:>7} {0.6:>15.6f} SCOPE_BEGIN   op=AllReduce scope=3 parent=0 "
                 "dt=5 stack=2 comm=0x55aa count=67108864 stream=0x0 datatype=7 peer=-1")
    lines.append(f"{off + 64:>10} {pid + 8:>7} {0.6:>15.6f} MEMINFO       phase=BEGIN dt=1 scope=3 "
                 "device=0 free=1000000000 total=2000000000")
    lines.append(f"{off + 112:>10} {pid + 8:>7} {0.7:>15.6f} MEMINFO       phase=END dt=1 scope=3 "
                 f"device=0 free={1000000000 - 300 * MiB} total=2000000000")
    lines.append(f"{off + 160:>10} - - END           time_ns=2 records_dropped=0")
    return "\n".join(lines) + "\n"


def cmd_attrib(a):
    """The first all_reduce's NCCL buffers are attributed to it (summary --json of each
    rank's trace): at least --min-mib tracked, allocated on NCCL's proxy thread, and its
    caller-side stack reaches --frame (ProcessGroupNCCL)."""
    ok = True
    doc = json.load(open(a.summary))
    print("rank  first AllReduce: tracked     device   allocs  on proxy  caller stack has %s" % a.frame)
    for t in doc["traces"]:
        rows = [c for c in t["collectives"] if c["op"] == "AllReduce" and c["first_tracked_bytes"] > 0]
        if not rows:
            print("%4s  no AllReduce that allocated" % t["rank"])
            ok = False
            continue
        c = max(rows, key=lambda r: r["first_tracked_bytes"])
        dev = c["first_device_bytes"]
        has = a.frame in (c.get("first_call_stack") or "")
        good = (c["first_tracked_bytes"] >= a.min_mib * MiB and c["allocs_other_thread"] > 0 and has)
        ok &= good
        print("%4s  %26s %10s %8d %9d  %s%s" % (
            t["rank"], human(c["first_tracked_bytes"]), human(dev) if dev is not None else "?",
            c["allocs"], c["allocs_other_thread"], "yes" if has else "NO", "" if good else "   <- FAIL"))
        if not has:
            print("      stack: %s" % c.get("first_call_stack"))
    return 0 if ok else 1


def cmd_selftest(a):
    fails = 0

    def expect(what, got, want):
        nonlocal fails
        ok = got == want
        fails += not ok
        print(f"selftest: {what}: {'ok' if ok else f'got {got!r}, want {want!r}'}")

    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "nccl.4242.log")
        with open(log, "w") as f:
            f.write(SYN_LOG)
        # rank 0: a 2 MiB-rounded mapping, host memory, both shareable buffers (one as a
        # VIRTUAL reservation), the 5 MB buffer mapped at 6 MiB, the 8 KiB one with a wrong size.
        with open(os.path.join(d, "r0.dump"), "w") as f:
            f.write(syn_dump(4242, 0, [
                ("MAPPING", 0x7f0000200000, 2 * MiB), ("PHYSICAL", 0x1, 2 * MiB),
                ("HOST_PINNED", 0x7f1000000000, 1048576),
                ("MAPPING", 0x7f0002000000, 10 * MiB), ("VIRTUAL", 0x7f0003000000, 2 * MiB),
                ("MAPPING", 0x7f0004000000, 6 * MiB), ("MAPPING", 0x7f0005000000, 4 * MiB)]))
        with open(os.path.join(d, "r1.dump"), "w") as f:
            f.write(syn_dump(4243, 1, []))
        logs = parse_nccl_log([log])
        expect("log lines per pid", {p: len(v) for p, v in logs.items()}, {4242: 6, 4243: 1})
        rows = match_logs(logs, load_traces([os.path.join(d, "r0.dump"), os.path.join(d, "r1.dump")]))
        r0, r1 = rows
        expect("rank from PROCESS", (r0["rank"], r1["rank"]), (0, 1))
        expect("rank 0 found", r0["found_count"], 5)
        expect("rank 0 found bytes", r0["found_bytes"], 4096 + 1048576 + 10485760 + 2097152 + 5000000)
        expect("rank 0 wrong size", [m["why"] for m in r0["missing"]], ["size"])
        expect("rank 1 missing", [m["why"] for m in r1["missing"]], ["missing"])
        t = Trace(os.path.join(d, "r0.dump"))
        expect("address inside a mapping", t.find(0x7f0002000000 + 4096, 4096), "inside")
        expect("handle kinds are not addresses", t.find(0x1, 16), "missing")
        expect("scope delta from MEMINFO", scope_delta(t, 3), 300 * MiB)
        expect("complete trace", (t.complete, t.dropped), (True, 0))
        j = os.path.join(d, "m.json")
        with open(j, "w") as f:
            json.dump({"rank": 0, "pid": 4242, "device": 0, "events": [
                {"op": "all_reduce", "step": 0, "delta_used": 300 * MiB + 1024,
                 "free_before": 0, "free_after": 0, "seconds": 0.1}]}, f)
        ns = argparse.Namespace(dump=[os.path.join(d, "r0.dump")], json=[j], tolerance_mib=2)
        expect("meminfo within tolerance", cmd_meminfo(ns), 0)
        ns.tolerance_mib = 0
        expect("meminfo beyond tolerance", cmd_meminfo(ns), 1)
        p, q = os.path.join(d, "p.out"), os.path.join(d, "q.out")
        with open(p, "w") as f:
            f.write("INFO pid 1\nCHECK rank 0 a 1.0\nCHECK rank 1 a 2.0\n")
        with open(q, "w") as f:
            f.write("CHECK rank 1 a 2.0\nINFO pid 2\nCHECK rank 0 a 1.0\n")
        expect("compare equal", cmd_compare(argparse.Namespace(plain=p, traced=q)), 0)
        with open(q, "w") as f:  # two ranks' writes interleaved on one line
            f.write("CHECK rank 1 a 2.0CHECK rank 0 a 1.0\nINFO pid 2\n")
        expect("compare interleaved", cmd_compare(argparse.Namespace(plain=p, traced=q)), 0)
        with open(q, "a") as f:
            f.write("CHECK rank 0 b 3.0\n")
        expect("compare differ", cmd_compare(argparse.Namespace(plain=p, traced=q)), 1)
    print(f"selftest: {'passed' if not fails else f'{fails} FAILED'}")
    return 1 if fails else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("compare", help="CHECK lines of two runs are equal")
    p.add_argument("plain")
    p.add_argument("traced")
    p = sub.add_parser("allocs", help="sizes expected among ALLOC records")
    p.add_argument("--dump", nargs="+", required=True)
    p.add_argument("--expect", nargs="+", required=True)
    p = sub.add_parser("nccl-log", help="every NCCL ALLOC log line is in the trace")
    p.add_argument("--dump", nargs="+", required=True)
    p.add_argument("--log", nargs="+", required=True)
    p.add_argument("--json")
    p.add_argument("--summary")
    p = sub.add_parser("meminfo", help="trace MEMINFO deltas vs torch.cuda.mem_get_info")
    p.add_argument("--dump", nargs="+", required=True)
    p.add_argument("--json", nargs="+", required=True)
    p.add_argument("--tolerance-mib", type=float, default=4)
    p = sub.add_parser("parse", help="what the checks read from dumps (PROCESS and ALLOCs needed)")
    p.add_argument("dump", nargs="+")
    p = sub.add_parser("attrib", help="first all_reduce's buffers attributed to it, with its caller stack")
    p.add_argument("--summary", required=True)
    p.add_argument("--min-mib", type=float, default=288)
    p.add_argument("--frame", default="ProcessGroupNCCL")
    sub.add_parser("selftest", help="the checks on synthetic input")
    a = ap.parse_args()
    for attr in ("dump", "log", "json"):
        v = getattr(a, attr, None)
        if isinstance(v, list):  # let the shell pass globs that matched nothing
            setattr(a, attr, [x for g in v for x in (glob.glob(g) or [g]) if os.path.exists(x)])
    return {"compare": cmd_compare, "allocs": cmd_allocs, "nccl-log": cmd_nccl_log,
            "meminfo": cmd_meminfo, "parse": cmd_parse, "attrib": cmd_attrib,
            "selftest": cmd_selftest}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
