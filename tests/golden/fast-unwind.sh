#!/bin/sh
# fast-unwind.sh: the stacks of the simulated 2-rank job are the same walked by frame rules (GPUMEMTRACE_FAST_UNWIND=1, the default) and by libunwind's tracer (=0).
# Usage: fast-unwind.sh BUILD_DIR
# Each run's STACK records are compared as a set of frame lists, each frame written as
# its module's file name and offset (from the trace's MODULE_LOAD records), so the
# two runs' address-space layouts do not matter; ids are not compared (they depend on
# which thread interned a stack first).
set -u
b="${1:?usage: fast-unwind.sh BUILD_DIR}"
t=$(mktemp -d "${TMPDIR:-/tmp}/gmt-fast-unwind.XXXXXX")
trap 'rm -rf "$t"' EXIT
py=$(command -v python3) || { echo "no python3 on PATH"; exit 1; }
stacks() { # MODE -> $t/MODE.stacks
  GPUMEMTRACE_FAST_UNWIND=$1 "$b/gpumemtrace" run -o "$t/run$1" -- "$b/examples/train_sim" 3 >"$t/run$1.log" 2>&1 ||
    { echo "traced run with GPUMEMTRACE_FAST_UNWIND=$1 failed:"; cat "$t/run$1.log"; exit 1; }
  for f in "$t/run$1"/*.gmt; do
    "$b/gpumemtrace" dump "$f" | "$py" -c '
import re, sys
mods, out = [], set()
for line in sys.stdin:
    w = line.split()
    if len(w) > 3 and w[3] == "MODULE_LOAD":
        f = dict(x.split("=", 1) for x in w[4:] if "=" in x)
        mods.append((int(f["start"], 16), int(f["end"], 16), f["path"].strip("\"").rsplit("/", 1)[-1]))
    elif len(w) > 3 and w[3] == "STACK":
        ips = re.search(r"ip=\[([^]]*)\]", line).group(1).split()
        def name(ip):
            a = int(ip, 16)
            for lo, hi, p in mods:
                if lo <= a < hi:
                    return "%s+%#x" % (p, a - lo)
            return ip
        out.add(" ".join(name(ip) for ip in ips))
print("\n".join(sorted(out)))'
  done | sort -u >"$t/$1.stacks"
}
stacks 1
stacks 0
n=$(wc -l <"$t/1.stacks")
[ "$n" -ge 5 ] || { echo "only $n distinct stacks: the job did not run as expected"; exit 1; }
if grep -q ' 0x\|^0x' "$t/1.stacks"; then
  echo "a frame outside every module:"; grep -m3 ' 0x\|^0x' "$t/1.stacks"; exit 1
fi
if ! cmp -s "$t/1.stacks" "$t/0.stacks"; then
  echo "the stacks differ (< frame rules, > libunwind):"; diff "$t/1.stacks" "$t/0.stacks" | head -20; exit 1
fi
echo "ok: $n distinct stacks, the same both ways"
