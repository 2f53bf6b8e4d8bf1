#!/usr/bin/env bash
# stacks_both_ways.sh: on a real GPU, the stacks the tracer writes are the same walked by frame rules (GPUMEMTRACE_FAST_UNWIND=1, the default) and by libunwind's tracer (=0): a plain nvcc program (static runtime), the same with the shared runtime, and a PyTorch training loop with its caching allocator off.
#
# Usage: bash tests/gpu/stacks_both_ways.sh
# Needs nvcc, python3 with torch, build/libgpumemtrace.so and build/gpumemtrace
# (GPUMEMTRACE_BUILD=DIR for another build). Both runs of a program are made with
# address-space randomisation off (setarch -R), so a frame has one address in both; the
# traces' STACK records are compared as sets of native frame lists (Python frames carry
# code ids, which depend on the order code objects were first seen). Writes
# $OUT/stacks (or a temp dir); results.txt has one line per program; exit 0 when all
# agree.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(cd "${GPUMEMTRACE_BUILD:-$repo/build}" && pwd)
lib=$build/libgpumemtrace.so cli=$build/gpumemtrace
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
w=${OUT:+$OUT/stacks}; w=${w:-$(mktemp -d)}; mkdir -p "$w"
cd "$w" || exit 2
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
norand="setarch $(uname -m) -R"
failed=0
"$nvcc" -O2 -o loop_static "$here/alloc_loop.cu" -lcuda >build.txt 2>&1 &&
  "$nvcc" -O2 -cudart shared -o loop_shared "$here/alloc_loop.cu" -lcuda >>build.txt 2>&1 || failed=1
stacks() { # NAME MODE CMD... -> NAME.MODE.stacks
  local name=$1 m=$2; shift 2
  rm -rf "$name.$m"; mkdir -p "$name.$m"
  GPUMEMTRACE_FAST_UNWIND=$m GPUMEMTRACE_OUTPUT="$w/$name.$m/t.%p.gmt" LD_PRELOAD="$lib" \
    timeout 300 $norand "$@" >"$name.$m.out" 2>&1
  for f in "$name.$m"/*.gmt; do "$cli" dump "$f"; done |
    awk '$4 == "STACK" { sub(/.*ip=\[/, ""); sub(/\]$/, ""); s = ""
      for (i = 1; i <= NF; i++) if ($i !~ /^0xfffe/) s = s " " $i; print s }' | sort -u >"$name.$m.stacks"
}
both() { # NAME CMD...
  local name=$1; shift
  stacks "$name" 1 "$@"; stacks "$name" 0 "$@"
  local n; n=$(wc -l <"$name.1.stacks")
  if [ "$n" -gt 0 ] && cmp -s "$name.1.stacks" "$name.0.stacks"; then
    echo "ok   $name: $n distinct stacks, the same both ways" | tee -a results.txt
  else
    echo "FAIL $name: $n stacks by frame rules, $(wc -l <"$name.0.stacks") by libunwind, differing" | tee -a results.txt
    diff "$name.1.stacks" "$name.0.stacks" | head -n 20 >>results.txt
    failed=1
  fi
}
both static ./loop_static runtime 2000 20
both shared ./loop_shared runtime 2000 20
both driver ./loop_static driver 2000 8
both async ./loop_static async 2000 64
PYTORCH_NO_CUDA_MEMORY_CACHING=1 both torch python3 "$here/train_loop.py" 3
exit $failed
