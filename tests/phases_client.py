"""phases_client.py: a real NVTX client (the PyPI nvtx package) pushing ranges around allocations made through the simulated runtime, for test_phases.

Usage:
  phases_client.py run LIBCUDART EXPECT.json MODE   allocate under ranges; write what the
                                                    summary must say into EXPECT.json
  phases_client.py check EXPECT.json SUMMARY.json   compare; prints what differs, exit 1

MODE: "phases" (nested ranges, a domain, start/end), "leak" (5 steps, each keeps
LEAK bytes), "steady" (5 steps that give back all they take). The expectations are
computed here, from the sizes this script allocates and frees, never written down.
"""
import ctypes
import json
import sys

LEAK = 3 << 20


class Model:
    """What the tracer must find: device bytes live, each range's peak and growth."""

    def __init__(self, rt):
        self.rt = rt
        self.live = 0
        self.open = []          # (name, live at start, [peak], pushed) innermost last
        self.rows = {}          # name -> {count, peak, growth, allocs, alloc_bytes}
        self.stacks = {}        # "a > b" -> [allocs, bytes]
        self.steps = []         # growth of each step

    def malloc(self, n):
        p = ctypes.c_void_p()
        assert self.rt.cudaMalloc(ctypes.byref(p), ctypes.c_size_t(n)) == 0
        self.live += n
        for o in self.open:
            o[2][0] = max(o[2][0], self.live)
        # allocations go to the thread's pushed ranges; a start/end range may end on
        # another thread, so it has a peak and a growth but no allocations of its own
        pushed = [o for o in self.open if o[3]]
        if pushed:
            inner = self.rows.setdefault(pushed[-1][0], new_row())
            inner["allocs"] += 1
            inner["alloc_bytes"] += n
            s = self.stacks.setdefault(" > ".join(o[0] for o in pushed), [0, 0])
            s[0] += 1
            s[1] += n
        return (p, n)

    def free(self, a):
        assert self.rt.cudaFree(a[0]) == 0
        self.live -= a[1]

    def begin(self, name, pushed=True):
        self.open.append((name, self.live, [self.live], pushed))

    def end(self, name, step=False):
        o = self.open.pop()
        assert o[0] == name
        r = self.rows.setdefault(name, new_row())
        r["count"] += 1
        r["peak"] = max(r["peak"], o[2][0])
        r["growth"] += self.live - o[1]
        if step:
            self.steps.append(self.live - o[1])


def new_row():
    return {"count": 0, "peak": 0, "growth": 0, "allocs": 0, "alloc_bytes": 0}


def run(lib, out, mode):
    import nvtx
    m = Model(ctypes.CDLL(lib))
    keep = []
    if mode == "phases":
        nvtx.push_range("load")
        m.begin("load")
        keep.append(m.malloc(8 << 20))
        with nvtx.annotate("weights"):
            m.begin("weights")
            t = m.malloc(2 << 20)
            keep.append(m.malloc(1 << 20))
            m.free(t)
            m.end("weights")
        nvtx.pop_range()
        m.end("load")
        d = nvtx.Domain("mylib") if hasattr(nvtx, "Domain") else None
        with nvtx.annotate("forward", domain="mylib"):
            m.begin("mylib::forward")
            a = m.malloc(5 << 20)
            keep.append(m.malloc(4096))
            m.free(a)
            m.end("mylib::forward")
        r = nvtx.start_range("eval")
        m.begin("eval", pushed=False)
        e = m.malloc(7 << 20)
        m.free(e)
        nvtx.end_range(r)
        m.end("eval")
        del d
    else:
        for i in range(5):
            with nvtx.annotate("train_step"):
                m.begin("train_step")
                act = m.malloc(6 << 20)
                if mode in ("leak", "leak-freed"):
                    keep.append(m.malloc(LEAK))
                m.free(act)
                m.end("train_step", step=True)
        if mode == "leak-freed": # what the steps kept, freed after them (as at exit)
            for k in keep:
                m.free(k)
            keep = []
    json.dump({"rows": m.rows, "stacks": m.stacks, "steps": m.steps,
               "mode": mode}, open(out, "w"))


def check(expect_path, summary_path):
    want = json.load(open(expect_path))
    ph = json.load(open(summary_path))["traces"][0]["phases"]
    bad = []
    rows = {r["name"]: r for r in ph["rows"]}
    for name, w in want["rows"].items():
        got = rows.get(name)
        if not got:
            bad.append("no row %r in %s" % (name, sorted(rows)))
            continue
        for k, gk in (("count", "count"), ("peak", "peak_bytes"), ("growth", "growth_bytes"),
                      ("allocs", "allocs"), ("alloc_bytes", "alloc_bytes")):
            if got[gk] != w[k]:
                bad.append("%s: %s %s, want %s" % (name, gk, got[gk], w[k]))
    if len(rows) != len(want["rows"]):
        bad.append("rows %s, want %s" % (sorted(rows), sorted(want["rows"])))
    stacks = {s["ranges"]: s for s in ph["stacks"]}
    for path, (n, b) in want["stacks"].items():
        got = stacks.get(path)
        if not got or got["allocs"] != n or got["bytes"] != b:
            bad.append("stack %r: %s, want %d allocs %d bytes" % (path, got, n, b))
    st = ph["steps"]
    steps = want["steps"]
    if st["count"] != len(steps):
        bad.append("steps %d, want %d" % (st["count"], len(steps)))
    grows = len(steps) >= 3 and all(g > 0 for g in steps[1:])
    if st["grows_every_step"] != grows:
        bad.append("grows_every_step %s, want %s" % (st["grows_every_step"], grows))
    if grows:
        per = sum(steps[1:]) // (len(steps) - 1)
        if st["growth_per_step_bytes"] != per or st["growth_steps"] != len(steps) - 1:
            bad.append("growth per step %s over %s, want %d over %d" % (
                st["growth_per_step_bytes"], st["growth_steps"], per, len(steps) - 1))
        if st["site_bytes"] != sum(steps[1:]):
            bad.append("site holds %s, want %d" % (st["site_bytes"], sum(steps[1:])))
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.exit(check(sys.argv[2], sys.argv[3]))
