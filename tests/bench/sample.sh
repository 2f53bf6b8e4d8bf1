#!/usr/bin/env bash
# sample.sh: `make bench-sampling`: what the periodic device samples cost: an allocation loop traced at GPUMEMTRACE_SAMPLE_MS=0, at the default and at 1 ms, interleaved, as ratios.
#
# Usage: tests/bench/sample.sh BUILD_DIR [--gpu] [--reps N] [--secs S]
#   default  the simulated driver and NVML (BUILD_DIR/fakes): shows that the benchmark
#            runs and what the sampler's own code costs; a fake NVML answers in
#            nanoseconds, so its figures say nothing about a GPU
#   --gpu    the machine's own driver and NVML: LD_LIBRARY_PATH=$GPU_LIBDIR (default: the
#            directory of libcuda.so.1 in ld.so's cache) puts them before the fakes that
#            sample_bench was linked against; nothing is built on the GPU host
#   --reps N rounds (default 7), each running the three variants in a rotated order
#   --secs S seconds of allocation loop per run (default 2)
# Every figure is a ratio to the SAMPLE_MS=0 runs of this one invocation (medians).
# "per sample" is the CPU time the tracer's own thread (the flusher, which samples) spent
# in the 1 ms runs beyond the 0 ms runs, divided by the PERIODIC records in their traces:
# what one NVML sample of one device costs. It runs on that thread, not the program's.
set -u
build=$(cd "${1:?usage: sample.sh BUILD_DIR [--gpu] [--reps N] [--secs S]}" && pwd)
shift
gpu=0 reps=7 secs=2
while [ $# -gt 0 ]; do
  case "$1" in
    --gpu) gpu=1 ;;
    --reps) shift; reps=${1:?} ;;
    --secs) shift; secs=${1:?} ;;
    *) echo "sample.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
prog=$build/bench/sample_bench
lib=$build/libgpumemtrace.so
cli=$build/gpumemtrace
for f in "$prog" "$lib" "$cli"; do
  [ -x "$f" ] || [ -f "$f" ] || { echo "sample.sh: $f missing (make bench-progs)" >&2; exit 2; }
done
if [ $gpu = 1 ]; then
  libdir=${GPU_LIBDIR:-$(dirname "$(ldconfig -p | awk '/libcuda\.so\.1 / {print $NF; exit}')")}
  [ -f "$libdir/libcuda.so.1" ] || { echo "sample.sh: no libcuda.so.1 (set GPU_LIBDIR)" >&2; exit 2; }
  [ -f "$libdir/libnvidia-ml.so.1" ] || echo "sample.sh: warning: no libnvidia-ml.so.1 in $libdir: no samples" >&2
  where="the driver and NVML in $libdir"
else
  libdir=$build/fakes/nvml
  export FAKECUDA_DEVICES=2
  where="the simulated driver and NVML (their costs are not a GPU's)"
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumemtrace-samplebench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
res=$tmp/results
: >"$res"

median() { sort -g | awk '{a[NR] = $1} END { if (!NR) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
med() { awk -v k="$1" '$1 == k {print $2}' "$res" | median; }

# one VARIANT: a traced run; records wall/pair, cpu/pair, pairs and the PERIODIC samples
one() {
  local v=$1 ms
  case $v in off) ms=0 ;; default) ms= ;; fast) ms=1 ;; esac
  rm -f "$tmp"/t.*.gmt
  local out
  out=$(env LD_LIBRARY_PATH="$libdir" GPUMEMTRACE_OUTPUT="$tmp/t.%p.gmt" \
        ${ms:+GPUMEMTRACE_SAMPLE_MS=$ms} LD_PRELOAD="$lib" "$prog" "$secs") ||
    { echo "sample.sh: sample_bench failed ($v)" >&2; exit 2; }
  local n; n=$("$cli" dump "$tmp"/t.*.gmt | grep -c 'MEMINFO.*phase=PERIODIC')
  read -r w c p d fl <<<"$out"
  echo "$v.wall $w" >>"$res"; echo "$v.cpu $c" >>"$res"
  echo "$v.pairs $p" >>"$res"; echo "$v.samples $n" >>"$res"; echo "devices $d" >>"$res"
  echo "$v.rate $(awk -v n="$n" -v s="$secs" 'BEGIN { printf "%.1f", n / s }')" >>"$res"
  echo "$v.fl $fl" >>"$tmp/last"; echo "$v.n $n" >>"$tmp/last"
}

echo "== sample_bench, $secs s per run, $reps rounds of SAMPLE_MS=0 / default / 1, on $where"
for r in $(seq 1 "$reps"); do
  : >"$tmp/last"
  for v in $(echo "off default fast off default" | cut -d' ' -f$((r % 3 + 1))-$((r % 3 + 3))); do
    one "$v"
  done
  # this round's cost of one sample of one device, in us of CPU
  awk '{x[$1] = $2} END { if (x["fast.n"] > 0) printf "persample %.3f\n", (x["fast.fl"] - x["off.fl"]) / x["fast.n"] / 1000 }' \
    "$tmp/last" >>"$res"
  echo "   round $r done"
done

echo
echo "gpumemtrace sampling bench: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(med devices) devices, medians of $reps"
row() { printf '%-30s %10s %14s %8s %14s %8s\n' "$@"; }
row "GPUMEMTRACE_SAMPLE_MS" "samples/s" "wall ns/pair" "ratio" "CPU ns/pair" "ratio"
w0=$(med off.wall) c0=$(med off.cpu)
for v in off default fast; do
  case $v in off) name="0 (off)" ;; default) name="unset (the default)" ;; fast) name="1" ;; esac
  w=$(med $v.wall) c=$(med $v.cpu)
  row "$name" "$(med $v.rate)" "$w" "$(awk -v a="$w" -v b="$w0" 'BEGIN { printf "%.4f", a / b }')" \
    "$c" "$(awk -v a="$c" -v b="$c0" 'BEGIN { printf "%.4f", a / b }')"
done
echo "one periodic sample of one device: $(med persample) us of the tracer thread's CPU (1 ms runs over 0 ms runs, per PERIODIC record)"
