#!/usr/bin/env python3
"""alloc_cost_report.py: the table of tests/gpu/alloc_cost.sh: per program and depth, the
CPU per allocation event untraced, and what the tracer adds (the median over rounds of
traced minus untraced in the same round), with the frame-rule walk and with libunwind's.

Usage: alloc_cost_report.py results.jsonl [probe.jsonl]
"""
import json
import statistics
import sys
from collections import defaultdict


def main():
    runs = defaultdict(dict)  # (prog, mode, depth) -> round -> variant -> run
    for line in open(sys.argv[1]):
        x = json.loads(line)
        r = x["run"]
        if not r.get("ok"):
            sys.exit(f"a run failed: {line.strip()}")
        runs[(x["prog"], r["mode"], r["depth"])].setdefault(x["round"], {})[x["variant"]] = r
    probes = {}
    if len(sys.argv) > 2:
        for line in open(sys.argv[2]):
            p = json.loads(line)
            probes[(p["prog"], p["mode"], p["depth"])] = p["probe"]

    def per_event(r, key):
        return r[key] / (2 * r["pairs"]) * 1e6  # µs

    print("| program | depth | untraced CPU µs/event (user) | added CPU µs/event: frame rules (user) "
          "| added: libunwind (user) | library's own ns/event, stack ns (probe) | rounds |")
    print("|---|---|---|---|---|---|---|")
    for key in sorted(runs, key=lambda k: (k[0], k[1], k[2])):
        prog, mode, depth = key
        rounds = [v for v in runs[key].values() if {"plain", "traced", "libunwind"} <= v.keys()]
        if not rounds:
            continue
        med = lambda f: statistics.median(f(v) for v in rounds)
        base_cpu = med(lambda v: per_event(v["plain"], "cpu_s"))
        base_user = med(lambda v: per_event(v["plain"], "user_s"))
        add = {}
        for var in ("traced", "libunwind"):
            add[var] = (med(lambda v: per_event(v[var], "cpu_s") - per_event(v["plain"], "cpu_s")),
                        med(lambda v: per_event(v[var], "user_s") - per_event(v["plain"], "user_s")))
        p = probes.get(key)
        own = "-"
        if p:
            ev = (p["alloc"]["n"] * p["alloc"]["ns"] + p["free"]["n"] * p["free"]["ns"]) / max(
                1, p["alloc"]["n"] + p["free"]["n"])
            own = f'{ev:.0f}, {p["stack"]["ns"]:.0f} (slow {p["slow_captures"]}, gave up {p["rules_gave_up"]})'
        name = {"loop_static": "static runtime", "loop_shared": "shared runtime"}.get(prog, prog)
        what = "cuMemAlloc (driver)" if mode == "driver" else (
            "cudaMallocAsync, pool" if mode == "async" else f"cudaMalloc, {name}")
        print(f"| {what} | {depth} | {base_cpu:.2f} ({base_user:.2f}) | {add['traced'][0]:+.3f} "
              f"({add['traced'][1]:+.3f}) | {add['libunwind'][0]:+.3f} ({add['libunwind'][1]:+.3f}) "
              f"| {own} | {len(rounds)} |")


if __name__ == "__main__":
    main()
