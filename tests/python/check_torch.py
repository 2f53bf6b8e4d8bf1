#!/usr/bin/env python3
"""check_torch.py: on a GPU host, PyTorch traced: the top sites name the user's Python lines; the step time with and without Python frames.

Usage: check_torch.py BUILD_DIR [PAIRS]. Prints what it found and one line per check;
exit status 0 when every check passes."""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "gpu_torch.py")


def markers():
    out = {}
    for i, line in enumerate(open(PROG), 1):
        m = re.search(r"# SITE (\w+)$", line.rstrip())
        if m:
            out[m.group(1)] = i
    return out


def run(build, python_on, steps, caching):
    tmp = tempfile.mkdtemp(prefix="gmt-torch-")
    trace = os.path.join(tmp, "t.gmt")
    env = dict(os.environ, LD_PRELOAD=os.path.join(build, "libgpumemtrace.so"),
               GPUMEMTRACE_OUTPUT=trace, GPUMEMTRACE_PYTHON="1" if python_on else "0")
    if not caching:
        env["PYTORCH_NO_CUDA_MEMORY_CACHING"] = "1"
    p = subprocess.run([sys.executable, PROG, str(steps)], env=env, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit("gpu_torch.py failed: " + p.stderr[-3000:])
    return float(p.stdout.split()[-1]), trace


def main():
    build = os.path.abspath(sys.argv[1])
    pairs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    L = markers()
    base = os.path.basename(PROG)
    ok = True
    _, trace = run(build, True, 20, True)
    s = json.loads(subprocess.run([os.path.join(build, "gpumemtrace"), "summary", "--json", trace],
                                  capture_output=True, text=True, check=True).stdout)
    sites = s["traces"][0]["sites"]
    for st in sites[:4]:
        print("site %d B: %s" % (st["live_at_peak_bytes"].get("0", 0) if isinstance(
            st["live_at_peak_bytes"], dict) else st["live_at_peak_bytes"], st["frames"][st["site"]]))
    top = sites[0]
    want = "big_buffer (%s:%d)" % (base, L["big_buffer"])
    good = top["frames"][top["site"]] == want
    ok &= good
    print("%s: the top site (256 MiB) is %s" % ("ok" if good else "FAIL", want))
    names = [st["frames"][st["site"]] for st in sites]
    good = any(n.startswith("Net.forward (%s:" % base) or n.startswith("train (%s:" % base) for n in names)
    ok &= good
    print("%s: the model's allocations are at the user's lines, not in torch" % ("ok" if good else "FAIL"))
    good = not any("site-packages/torch" in n or n.startswith("Linear.") for n in names)
    ok &= good
    print("%s: no site inside torch's Python" % ("ok" if good else "FAIL"))
    # cost: the caching allocator off, so every tensor is a cudaMalloc and a cudaFree
    t = {0: [], 1: []}
    for r in range(pairs):
        for v in ((0, 1) if r % 2 == 0 else (1, 0)):
            ms, _ = run(build, v, 100, False)
            t[v].append(ms)
    med = {v: sorted(x)[len(x) // 2] for v, x in t.items()}
    print("step time, caching allocator off, GPUMEMTRACE_PYTHON=0: %.3f ms, =1: %.3f ms (%s / %s)"
          % (med[0], med[1], t[0], t[1]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
