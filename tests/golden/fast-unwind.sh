#!/bin/sh
# fast-unwind.sh: the stacks of the simulated 2-rank job are the same walked by frame rules (GPUMEMTRACE_FAST_UNWIND=1, the default) and by libunwind's tracer (=0).
# Usage: fast-unwind.sh BUILD_DIR
# Address-space randomisation is turned off for both runs (setarch -R), so the same frame
# has the same address in both; each run's STACK records are compared as a set of frame
# lists (ids depend on which thread interned a stack first).
set -u
b="${1:?usage: fast-unwind.sh BUILD_DIR}"
t=$(mktemp -d "${TMPDIR:-/tmp}/gmt-fast-unwind.XXXXXX")
trap 'rm -rf "$t"' EXIT
norand="setarch $(uname -m) -R"
$norand true 2>/dev/null || { echo "setarch -R is not allowed here: cannot compare addresses across runs"; exit 1; }
stacks() { # MODE -> $t/MODE.stacks
  GPUMEMTRACE_FAST_UNWIND=$1 $norand "$b/gpumemtrace" run -o "$t/run$1" -- "$b/examples/train_sim" 3 >"$t/run$1.log" 2>&1 ||
    { echo "traced run with GPUMEMTRACE_FAST_UNWIND=$1 failed:"; cat "$t/run$1.log"; exit 1; }
  for f in "$t/run$1"/*.gmt; do "$b/gpumemtrace" dump "$f"; done |
    awk '$4 == "STACK" { sub(/.*ip=/, ""); print }' | sort -u >"$t/$1.stacks"
}
stacks 1
stacks 0
n=$(wc -l <"$t/1.stacks")
[ "$n" -ge 5 ] || { echo "only $n distinct stacks: the job did not run as expected"; exit 1; }
if ! cmp -s "$t/1.stacks" "$t/0.stacks"; then
  echo "the stacks differ (< frame rules, > libunwind):"; diff "$t/1.stacks" "$t/0.stacks" | head -20; exit 1
fi
echo "ok: $n distinct stacks, the same both ways"
