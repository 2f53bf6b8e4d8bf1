"""python_query.py: on a real GPU under PyTorch, the Python package's in-process figures (gpumemtrace.current_bytes, peak_bytes, reset_peak, phase) against PyTorch's own and against the trace.

Usage (from the repository root, build/ carried, under the library):
  PYTHONPATH=python PYTORCH_NO_CUDA_MEMORY_CACHING=1 NVTX_INJECTION64_PATH=$PWD/build/libgpumemtrace.so \
    LD_PRELOAD=$PWD/build/libgpumemtrace.so GPUMEMTRACE_OUTPUT=$OUT/q.%p.gmt python3 tests/gpu/python_query.py

With the caching allocator off, every tensor is a cudaMalloc of its own, so the bytes
the library counts on device 0 must equal torch.cuda.memory_reserved() at every step,
and their peak its max_memory_reserved() since the last reset; phase() ranges reach the
trace (`gpumemtrace summary` on it lists "load" and "train_step"). Prints one JSON line
per check and a table last; exit 1 when one differs, 2 when not traced.
"""
import json
import sys

import gpumemtrace as g


def main():
    import torch
    checks = []

    def check(name, got, want):
        checks.append((name, got, want, got == want))
        print(json.dumps({"check": name, "got": got, "want": want, "ok": got == want}))

    if not g.traced():
        print("python_query.py: not traced: run it with LD_PRELOAD=build/libgpumemtrace.so")
        return 2
    torch.cuda.init()
    dev = torch.cuda.current_device()
    base = g.current_bytes(dev)
    keep = []
    with g.phase("load"):
        keep.append(torch.empty(64 << 20, dtype=torch.uint8, device="cuda"))
    check("current after load", g.current_bytes(dev) - base, torch.cuda.memory_reserved(dev))
    g.reset_peak()
    torch.cuda.reset_peak_memory_stats(dev)
    for step in range(3):
        with g.phase("train_step"):
            t = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
            keep.append(torch.empty(8 << 20, dtype=torch.uint8, device="cuda"))
            del t
    check("current after steps", g.current_bytes(dev) - base, torch.cuda.memory_reserved(dev))
    check("peak since reset", g.peak_bytes(dev) - base, torch.cuda.max_memory_reserved(dev))
    check("exact", g.exact(), True)
    nccl_now = g.current_bytes(dev, "nccl")
    check("no NCCL memory without NCCL", nccl_now, 0)
    return checks, g.trace_file()


if __name__ == "__main__":
    r = main()
    if isinstance(r, int):
        sys.exit(r)
    checks, trace = r
    bad = [c for c in checks if not c[3]]
    print("%-28s %14s %14s  %s" % ("check", "gpumemtrace", "expected", "ok"))
    for name, got, want, ok in checks:
        print("%-28s %14s %14s  %s" % (name, got, want, "yes" if ok else "NO"))
    print("trace:", trace)
    sys.exit(1 if bad else 0)
