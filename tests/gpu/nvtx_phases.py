"""nvtx_phases.py: on a real GPU, torch.cuda.nvtx ranges around PyTorch allocations, for NVTX phases; and the cost of a range push/pop pair.

Usage:
  python3 nvtx_phases.py leak|steady EXPECT.json   five "train_step" ranges, each making a
        16 MiB temporary and (leak) keeping 4 MiB, inside a "load" range that makes the
        weights; writes what `summary --json` must say into EXPECT.json
  python3 nvtx_phases.py cost PAIRS                 ns per torch.cuda.nvtx.range_push/pop
        pair, one JSON line
  python3 nvtx_phases.py check EXPECT.json SUMMARY.json   compare; prints what differs

Run with PYTORCH_NO_CUDA_MEMORY_CACHING=1 so that every tensor is its own cudaMalloc
and freed when dropped, under `gpumemtrace run` (which sets NVTX_INJECTION64_PATH).
The expectations are the sizes of the tensors this script makes and drops.
"""
import json
import sys
import time


def run(mode, out):
    import torch
    nvtx = torch.cuda.nvtx
    dev = "cuda"
    torch.cuda.init()
    live = [0]                  # the bytes this script's tensors hold
    rows = {}

    def tensor(n):
        live[0] += n
        return torch.empty(n, dtype=torch.uint8, device=dev)

    def drop(t):
        live[0] -= t.numel()

    def begin(name):
        nvtx.range_push(name)
        return (name, live[0])

    def end(b, growths=None):
        torch.cuda.synchronize()
        name, start = b
        g = live[0] - start
        r = rows.setdefault(name, {"count": 0, "growth": 0})
        r["count"] += 1
        r["growth"] += g
        if growths is not None:
            growths.append(g)
        nvtx.range_pop()

    b = begin("load")
    w = tensor(32 << 20)
    end(b)
    keep, steps = [], []
    for _ in range(5):
        b = begin("train_step")
        t = tensor(16 << 20)
        t.fill_(1)
        if mode == "leak":
            keep.append(tensor(4 << 20))
        drop(t)
        del t
        end(b, steps)
    torch.cuda.synchronize()
    json.dump({"rows": rows, "steps": steps, "weights": w.numel(),
               "torch_allocated": torch.cuda.memory_allocated()}, open(out, "w"))


def cost(pairs):
    import torch
    nvtx = torch.cuda.nvtx
    torch.cuda.init()
    for _ in range(pairs // 10 + 1000):
        nvtx.range_push("train_step")
        nvtx.range_pop()
    t0 = time.process_time_ns()
    for _ in range(pairs):
        nvtx.range_push("train_step")
        nvtx.range_pop()
    ns = (time.process_time_ns() - t0) / pairs
    print(json.dumps({"ns_per_pair": round(ns, 1), "pairs": pairs}))


def check(expect_path, summary_path):
    want = json.load(open(expect_path))
    ph = json.load(open(summary_path))["traces"][0]["phases"]
    rows = {r["name"]: r for r in ph["rows"]}
    bad = []
    for name, w in want["rows"].items():
        got = rows.get(name)
        if not got:
            bad.append("no row %r in %s" % (name, sorted(rows)))
            continue
        if got["count"] != w["count"] or got["growth_bytes"] != w["growth"]:
            bad.append("%s: count %d growth %d, want %d and %d" % (
                name, got["count"], got["growth_bytes"], w["count"], w["growth"]))
    steps = want["steps"]
    st = ph["steps"]
    grows = len(steps) >= 3 and all(g > 0 for g in steps[1:])
    if st["count"] != len(steps) or st["grows_every_step"] != grows:
        bad.append("steps %s, want %d steps, grows %s" % (st, len(steps), grows))
    if grows and st["growth_per_step_bytes"] != sum(steps[1:]) // (len(steps) - 1):
        bad.append("growth per step %s, want %d" % (st["growth_per_step_bytes"],
                                                   sum(steps[1:]) // (len(steps) - 1)))
    for b in bad:
        print(b)
    print("phases: %s" % ("ok" if not bad else "DIFFER"))
    return 1 if bad else 0


if __name__ == "__main__":
    if sys.argv[1] in ("leak", "steady"):
        run(sys.argv[1], sys.argv[2])
    elif sys.argv[1] == "cost":
        cost(int(sys.argv[2]))
    else:
        sys.exit(check(sys.argv[2], sys.argv[3]))
