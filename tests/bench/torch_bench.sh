#!/usr/bin/env bash
# torch_bench.sh: `make bench-torch`: what one PyTorch block event costs traced, with 20 Python frames on the stack: CPU and wall ns (interleaved runs, medians) and instructions (callgrind).
#
# Usage: tests/bench/torch_bench.sh BUILD_DIR   (BENCH_QUICK=1: fewer and shorter runs)
# Each figure is traced minus untraced, from runs made in this one invocation, alternating
# which goes first. "allocs": blocks handed out (each captures the stack, native and
# Python frames); "pairs": a block handed out and freed (a free captures none).
set -u
build=$(cd "${1:?usage: torch_bench.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
lib=$build/libgpumemtrace.so
stub=$build/bench/libtorch_stub.so
py=$(python3 -c 'import sys; print(sys.executable)')
if [ "${BENCH_QUICK:-}" = 1 ]; then reps=3 events=100000; else reps=${BENCH_REPS:-7} events=1000000; fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumemtrace-torch-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export GPUMEMTRACE_OUTPUT="$tmp/t.%p.gmt"
median() { sort -g | awk '{a[NR] = $1} END { if (!NR) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
run() { # TRACED MODE -> "cpu wall"
  if [ "$1" = 1 ]; then LD_PRELOAD="$lib" "$py" "$here/torch_bench.py" "$stub" "$events" 20 "$2"
  else "$py" "$here/torch_bench.py" "$stub" "$events" 20 "$2"; fi
  rm -f "$tmp"/t.*.gmt
}
: >"$tmp/res"
for mode in allocs pairs; do
  for r in $(seq 1 "$reps"); do
    if [ $((r % 2)) = 1 ]; then read -r uc uw <<<"$(run 0 $mode)"; read -r tc tw <<<"$(run 1 $mode)"
    else read -r tc tw <<<"$(run 1 $mode)"; read -r uc uw <<<"$(run 0 $mode)"; fi
    echo "$mode.cpu $(awk -v t="$tc" -v u="$uc" 'BEGIN { print t - u }')" >>"$tmp/res"
    echo "$mode.wall $(awk -v t="$tw" -v u="$uw" 'BEGIN { print t - u }')" >>"$tmp/res"
    echo "$mode.plain $uc" >>"$tmp/res"
  done
done
med() { awk -v k="$1" '$1 == k {print $2}' "$tmp/res" | median; }
# instructions: two traced runs of different length under callgrind, per event of the difference
ir() { # MODE EVENTS
  rm -f "$tmp"/cg.out "$tmp"/t.*.gmt
  LD_PRELOAD="$lib" GPUMEMTRACE_TSC=0 valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
    "$py" "$here/torch_bench.py" "$stub" "$2" 20 "$1" >/dev/null 2>"$tmp/vg.err" || { echo nan; return; }
  awk '/^summary:/ {print $2}' "$tmp/cg.out"
}
irper() { # MODE
  local n1=$((events / 20)) n2=$((events / 10)) a b
  a=$(ir "$1" $n1); b=$(ir "$1" $n2)
  # each run also makes a warm-up of a tenth of its events (torch_bench.py): 1.1 x as many
  awk -v a="$a" -v b="$b" -v x="$n1" -v y="$n2" 'BEGIN { if (a == "nan" || b == "nan") print "nan"; else printf "%.0f", (b - a) / ((y - x) * 1.1) }'
}
have_vg=0; command -v valgrind >/dev/null 2>&1 && have_vg=1
printf '\n%-44s %12s %12s %12s %14s\n' "PyTorch block event, 20 Python frames" "untraced ns" "+CPU ns" "+wall ns" "+instructions"
for mode in allocs pairs; do
  irs=nan; [ $have_vg = 1 ] && irs=$(irper $mode)
  label="block handed out (stack captured)"; [ $mode = pairs ] && label="handed out + freed, per event"
  printf '%-44s %12.1f %12.1f %12.1f %14s\n' "$label" "$(med $mode.plain)" "$(med $mode.cpu)" "$(med $mode.wall)" "$irs"
done
echo "($reps interleaved pairs of runs of $events events each; instructions: callgrind, traced, per event of the difference of two run lengths)"
