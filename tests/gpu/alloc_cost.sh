#!/usr/bin/env bash
# alloc_cost.sh: on one NVIDIA GPU, the CPU the tracer adds per allocation event on the real driver: cudaMalloc/cudaFree through the static and the shared runtime, cuMemAlloc/cuMemFree, and cudaMallocAsync/cudaFreeAsync from the default pool, at call depths 0, 8, 20 and 64.
#
# Usage: bash tests/gpu/alloc_cost.sh [--reps N] [--pairs N] [--async-pairs N] [--probe LIB]
# Needs nvcc and build/libgpumemtrace.so (GPUMEMTRACE_BUILD=DIR for another build).
# Each (program, depth) runs REPS rounds of three variants in rotating order: untraced,
# traced, and traced with GPUMEMTRACE_FAST_UNWIND=0 (libunwind's tracer for every
# stack). --probe LIB (a library built with -DGMT_COST_PROBE, libinterpose/probe.h) adds
# one run per row that reports the library's own nanoseconds per event and per stack.
# Writes $OUT/alloc_cost (or a temp dir): results.jsonl (one line per run), probe.jsonl,
# and table.md (tests/gpu/alloc_cost_report.py: medians of the per-round differences).
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(cd "${GPUMEMTRACE_BUILD:-$repo/build}" && pwd)
lib=$build/libgpumemtrace.so
reps=5 pairs=10000 apairs=200000 probe=
while [ $# -gt 0 ]; do
  case $1 in
    --reps) reps=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --async-pairs) apairs=$2; shift 2 ;;
    --probe) probe=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
    *) echo "alloc_cost.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
w=${OUT:+$OUT/alloc_cost}; w=${w:-$(mktemp -d)}; mkdir -p "$w"
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null) || { echo "alloc_cost.sh: no nvcc" >&2; exit 2; }
cd "$w" || exit 2
"$nvcc" -O2 -o loop_static "$here/alloc_loop.cu" -lcuda >build.txt 2>&1 &&
  "$nvcc" -O2 -cudart shared -o loop_shared "$here/alloc_loop.cu" -lcuda >>build.txt 2>&1 ||
  { cat build.txt >&2; exit 2; }
export GPUMEMTRACE_OUTPUT="$w/t.%p.gmt" GPUMEMTRACE_QUIET=1
: >results.jsonl; : >probe.jsonl
pin=; command -v taskset >/dev/null && pin="taskset -c 2" # one CPU for every run
one() { # one VARIANT PROG MODE N DEPTH ROUND
  local v=$1 prog=$2 mode=$3 n=$4 d=$5 r=$6 line
  case $v in
    plain) line=$($pin "./$prog" "$mode" "$n" "$d") ;;
    traced) line=$(LD_PRELOAD="$lib" $pin "./$prog" "$mode" "$n" "$d") ;;
    libunwind) line=$(GPUMEMTRACE_FAST_UNWIND=0 LD_PRELOAD="$lib" $pin "./$prog" "$mode" "$n" "$d") ;;
  esac
  rm -f "$w"/t.*.gmt
  echo "{\"variant\": \"$v\", \"prog\": \"$prog\", \"round\": $r, \"run\": $line}" >>results.jsonl
}
order=(plain traced libunwind plain traced)
for d in 0 8 20 64; do
  for spec in loop_static:runtime loop_shared:runtime loop_static:driver loop_static:async; do
    prog=${spec%%:*} mode=${spec#*:}
    n=$pairs; [ "$mode" = async ] && n=$apairs
    for r in $(seq 1 "$reps"); do
      for v in "${order[@]:$((r % 3)):3}"; do one "$v" "$prog" "$mode" "$n" "$d" "$r"; done
    done
    if [ -n "$probe" ]; then
      p=$(LD_PRELOAD="$probe" $pin "./$prog" "$mode" "$n" "$d" 2>&1 >/dev/null | grep '"probe"')
      rm -f "$w"/t.*.gmt
      echo "{\"prog\": \"$prog\", \"mode\": \"$mode\", \"depth\": $d, \"pairs\": $n, ${p#\{}" >>probe.jsonl
    fi
    echo "depth $d $prog $mode done" >&2
  done
done
python3 "$here/alloc_cost_report.py" results.jsonl probe.jsonl >table.md
cat table.md
