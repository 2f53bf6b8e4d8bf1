"""torch_check.py: checks a summary's "pytorch" member (docs/summary-json.md) against what a test program of tests/test_torch.c printed, for that suite.

Usage: torch_check.py SCENARIO PROGRAM_OUTPUT SUMMARY.json [SUMMARY2.json]
Prints each difference and exits 1 when there is one. The expected figures come from the
program's own last line (the allocator's counts and totals) and from the scenario's
shape, never written down."""
import json
import re
import sys

MIB = 1 << 20
bad = []


def expect(cond, what):
    if not cond:
        bad.append(what)


def prog_line(path):
    text = open(path).read()
    vals = {}
    for k, v in re.findall(r"(\w+)=(\d+)", text):
        vals[k] = int(v)
    return vals


def pytorch(path):
    d = json.load(open(path))
    return d["traces"][0]["pytorch"]


def counts(p, v):
    dev = p["devices"][0]
    expect(p["mode"] == "events", "mode %s, not events" % p["mode"])
    expect(dev["allocs"] == v["allocs"], "allocs %d, the allocator made %d" % (dev["allocs"], v["allocs"]))
    expect(dev["frees"] == v["frees"], "frees %d, the allocator made %d" % (dev["frees"], v["frees"]))
    expect(dev["allocated_end_bytes"] == v["allocated"],
           "allocated at the end %d, the allocator's %d" % (dev["allocated_end_bytes"], v["allocated"]))
    expect(dev["reserved_end_bytes"] == v["reserved"],
           "reserved at the end %d, the allocator's %d" % (dev["reserved_end_bytes"], v["reserved"]))


def main():
    scen, out, js = sys.argv[1], sys.argv[2], sys.argv[3]
    v = prog_line(out)
    p = pytorch(js)
    if scen == "leak":
        counts(p, v)
        expect(v["profiler"] == v["allocs"] + v["frees"],
               "libc10's report got %d events of %d" % (v["profiler"], v["allocs"] + v["frees"]))
        steps = v["allocs"] // 5
        s = p["steps"]
        expect(s["count"] == steps, "steps %d, not %d" % (s["count"], steps))
        expect(s["grows_every_step"], "growth not flagged: %s" % s)
        expect(s.get("growth_per_step_bytes") == 3 * MIB, "per step %s, not 3 MiB" % s.get("growth_per_step_bytes"))
        site = "keep_for_later (torch_leak.py:%d)" % v["keep_line"]
        expect(s.get("line", "").startswith(site), "growth site %r, not %s" % (s.get("line"), site))
        expect(p["sites"] and p["sites"][0]["line"].startswith(site), "top block site %r" % (p["sites"][:1],))
        expect(len(p["leaks"]) == 1 and p["leaks"][0]["bytes"] == steps * 3 * MIB and
               p["leaks"][0]["line"].startswith(site), "leaks %r" % p["leaks"])
    elif scen == "steps":
        counts(p, v)
        expect(not p["leaks"], "leaks in a loop that keeps nothing: %r" % p["leaks"])
    elif scen == "oom":
        counts(p, v)
        n = v["segments"]
        expect(len(p["ooms"]) == 1, "%d OOMs, not 1" % len(p["ooms"]))
        if p["ooms"]:
            o = p["ooms"][0]
            want = {"request_bytes": 10 * MIB, "largest_free_bytes": 8 * MIB,
                    "allocated_bytes": n * 6 * MIB, "reserved_bytes": n * 20 * MIB,
                    "free_unusable_bytes": n * 14 * MIB, "segments": n}
            for k, w in want.items():
                expect(o[k] == w, "OOM %s %d, not %d" % (k, o[k], w))
            expect(o["live_sites"] and o["live_sites"][0]["bytes"] == n * 6 * MIB and
                   o["live_sites"][0]["blocks"] == n, "live blocks at the OOM %r" % o["live_sites"])
            expect("oom (fake_torch.c" in o["line"], "the OOM's stack %r" % o["stack"])
    elif scen == "thread":
        counts(p, v)
        expect(len(p["leaks"]) == 1 and "worker (fake_torch.c" in p["leaks"][0]["stack"],
               "the worker's block, by the worker's stack: %r" % p["leaks"])
    elif scen == "cpu":
        counts(p, v)
        expect(v["profiler"] == 21 and v["cuda"] == 1, "the profiler's events: %r" % v)
    elif scen == "fork":
        a, b = p, pytorch(sys.argv[4])
        by = sorted([a, b], key=lambda q: q["devices"][0]["allocs"])
        parent, child = by
        expect(parent["devices"][0]["allocs"] == 1 and parent["devices"][0]["frees"] == 1 and
               not parent["leaks"], "the parent's blocks: %r" % parent["devices"][0])
        expect(child["devices"][0]["allocs"] == 2 and child["devices"][0]["frees"] == 1 and
               [l["bytes"] for l in child["leaks"]] == [5 * MIB], "the child's blocks: %r" % child["leaks"])
    elif scen in ("no-caching", "cudaMallocAsync"):
        expect(p["mode"] == scen and not p["devices"], "mode %s with %d devices" % (p["mode"], len(p["devices"])))
    else:
        bad.append("unknown scenario " + scen)
    for b in bad:
        print(b)
    return 1 if bad else 0


sys.exit(main())
