#!/usr/bin/env bash
# user_code.sh: real-GPU checks, on one NVIDIA GPU, that the trace names the user's code and explains NCCL: Python lines and NVTX phases of a PyTorch training loop, `main` of a plain nvcc program, and a single-rank NCCL communicator explained and its what-if predictions against real runs.
#
# Usage: bash tests/gpu/user_code.sh
# Needs build/libgpumemtrace.so and build/gpumemtrace, nvcc, python3 with torch (CUDA)
# and NCCL from PyTorch's wheel. Writes $OUT/user (or a temp dir): each program's output
# with and without the library, its traces, summaries (text, JSON), explain outputs and
# NCCL's own ALLOC log; results.txt says what was checked. Exit status 0 when every
# check passed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(cd "${GPUMEMTRACE_BUILD:-$repo/build}" && pwd)
unset GPUMEMTRACE_BUILD
lib=$build/libgpumemtrace.so
cli=$build/gpumemtrace
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
w=${OUT:+$OUT/user}; w=${w:-$(mktemp -d)}; mkdir -p "$w"
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
py=$(command -v python3)
failed=0
note() { printf '%s\n' "$*" | tee -a "$w/results.txt"; }
check() { # check WHAT COMMAND...: one line ok/FAIL
  local what=$1; shift
  if "$@" >>"$w/checks.log" 2>&1; then note "ok   $what"; else note "FAIL $what"; failed=1; fi
}
cd "$w" || exit 2
note "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)"

# ---- a plain nvcc program: its sites name main
if [ -n "$nvcc" ] && "$nvcc" -o plain "$here/plain.cu" >build.txt 2>&1; then
  ./plain >plain.plain.txt 2>&1
  env LD_PRELOAD="$lib" GPUMEMTRACE_OUTPUT="$w/plain.%p.gmt" ./plain >plain.traced.txt 2>&1
  check "plain nvcc: same output" cmp plain.plain.txt plain.traced.txt
  "$cli" summary plain.*.gmt >plain.summary.txt 2>&1
  "$cli" summary --json plain.*.gmt >plain.summary.json 2>&1
  check "plain nvcc: the top site and the leak name main" \
    "$py" - plain.summary.json <<'PYEOF'
import json, sys
t = json.load(open(sys.argv[1]))["traces"][0]
site = lambda s: s["frames"][s["site"]]
print("top site:", site(t["sites"][0]))
assert site(t["sites"][0]).startswith("main"), site(t["sites"][0])
assert all(site(s).startswith("main") for s in t["sites"] if s["live_at_end_bytes"])
PYEOF
else
  note "FAIL plain nvcc: no nvcc or it did not build"; failed=1
fi

# ---- PyTorch: the sites name the training loop's Python lines; NVTX phases
run_py() { # run_py NAME [VAR=VALUE...] ARGS...: untraced and with `gpumemtrace run`
  local n=$1; shift
  local envs=()
  while [ $# -gt 0 ] && [[ $1 == *=* ]]; do envs+=("$1"); shift; done
  timeout 600 env "${envs[@]}" "$py" "$here/train_loop.py" "$@" >"$n.plain.txt" 2>&1
  note "$n untraced: exit $?"
  rm -rf "$n.traces"
  timeout 600 env "${envs[@]}" "$cli" run -o "$n.traces" -- "$py" "$here/train_loop.py" "$@" >"$n.traced.txt" 2>"$n.run.err"
  note "$n traced: exit $?"
  "$cli" summary "$n.traces" >"$n.summary.txt" 2>&1
  "$cli" summary --json "$n.traces" >"$n.summary.json" 2>&1
  "$cli" export --format folded "$n.traces"/*.gmt >"$n.folded" 2>&1
}
run_py torch 20
# without PyTorch's cache each kept 4 MiB tensor is a cudaMalloc of its own (with it, a
# 20 MiB segment holds five): growth every step is then 4 MiB exactly
run_py torch_grow PYTORCH_NO_CUDA_MEMORY_CACHING=1 20 grow
check "torch: same loss with and without the library" \
  "$py" -c 'import json,sys; a=json.loads(open(sys.argv[1]).read().splitlines()[-1]); b=json.loads(open(sys.argv[2]).read().splitlines()[-1]); print(a["loss"], b["loss"]); assert a["loss"] == b["loss"]' torch.plain.txt torch.traced.txt
check "torch: sites name train_loop.py's lines, phases from torch.cuda.nvtx" \
  "$py" "$here/user_code_check.py" torch.traced.txt torch.summary.json
check "torch grow: the kept tensor's line grows every step" \
  "$py" "$here/user_code_check.py" --grow torch_grow.traced.txt torch_grow.summary.json

# ---- NCCL, one rank: init explained; what-if against real runs
nccl_home=$(bash "$here/build_bench.sh" --nccl-home 2>/dev/null)
if bash "$here/build_bench.sh" "$w/bench_allreduce" >nccl-build.txt 2>&1; then
  for v in default BUFFSIZE=1048576 MAX_NCHANNELS=8; do
    set -- ; [ "$v" = default ] || set -- "NCCL_$v"
    env "$@" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALLOC NCCL_DEBUG_FILE="$w/nccl-$v.%p.log" \
      LD_PRELOAD="$lib" GPUMEMTRACE_OUTPUT="$w/nccl-$v.%p.gmt" ./bench_allreduce 200 5 >"nccl-$v.out" 2>&1
    note "nccl $v: exit $?"
    "$cli" explain nccl-$v.*.gmt >"nccl-$v.explain.txt" 2>&1
    "$cli" explain --json nccl-$v.*.gmt >"nccl-$v.explain.json" 2>&1
    "$cli" summary nccl-$v.*.gmt >"nccl-$v.summary.txt" 2>&1
  done
  "$cli" explain --what-if NCCL_BUFFSIZE=1048576 nccl-default.*.gmt >nccl-whatif-buffsize.txt 2>&1
  "$cli" explain --what-if NCCL_MAX_NCHANNELS=8 nccl-default.*.gmt >nccl-whatif-nchannels.txt 2>&1
  "$cli" explain --json --what-if NCCL_BUFFSIZE=1048576 nccl-default.*.gmt >nccl-whatif-buffsize.json 2>&1
  "$cli" explain --json --what-if NCCL_MAX_NCHANNELS=8 nccl-default.*.gmt >nccl-whatif-nchannels.json 2>&1
  "$cli" diff nccl-default.*.gmt nccl-BUFFSIZE=1048576.*.gmt >nccl-diff-buffsize.txt 2>&1
else
  note "FAIL nccl: bench_allreduce did not build"; tail -n 5 nccl-build.txt; failed=1
fi
note "done $(date -u +%T), failed=$failed"
exit $failed
