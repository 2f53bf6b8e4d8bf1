#!/usr/bin/env bash
# run.sh: real-GPU validation on a machine with 1 or 2 NVIDIA GPUs: the examples (one GPU: a single-rank communicator) and, on 2 GPUs, a PyTorch DDP job, with and without libgpumemtrace.so; same results, NCCL's own ALLOC log found in the trace.
#
# Usage: bash tests/gpu/run.sh [--dry-run] [--only cuda|graphs|nccl|ddp|gate]...
# Builds nothing of ours: build/libgpumemtrace.so and build/gpumemtrace come from the
# development machine (GPUMEMTRACE_BUILD=DIR to use another). Compiles the examples with
# nvcc/cc here. Writes its outputs to $OUT/gpu when OUT is set, else to a fresh temp dir.
# STEP_TIMEOUT=S bounds each step (300 s); STRICT_MEMINFO=1 fails on device deltas.
# Exit status: 0 all checks passed, 1 a check failed, 2 the machine can't run them.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${GPUMEMTRACE_BUILD:-$repo/build}
[ -d "$build" ] && build=$(cd "$build" && pwd) # LD_PRELOAD must not depend on the cwd
lib=$build/libgpumemtrace.so
cli=$build/gpumemtrace
check="$here/gpucheck.py"
step_timeout=${STEP_TIMEOUT:-300}
dry=0
only=""

usage() { sed -n '4,9p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --only) shift; only="$only ${1:-}" ;;
    -h|--help) usage; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
wanted() { [ -z "$only" ] || case " $only " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# Every process this script starts, directly or not, keeps multicast/NVLS off.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

if [ -n "${OUT:-}" ]; then work="$OUT/gpu"; else work=$(mktemp -d "${TMPDIR:-/tmp}/gpumemtrace-gpu.XXXXXX"); fi
mkdir -p "$work" || { echo "run.sh: cannot create $work" >&2; exit 2; }
summary="$work/summary.txt"
: >"$summary"
failed=0

say() { printf '\n== %s\n' "$*"; }
# result NAME ok|FAIL|skip DETAIL: one line of the closing table.
result() {
  printf '%-28s %-5s %s\n' "$1" "$2" "$3" >>"$summary"
  [ "$2" = FAIL ] && failed=1
  return 0
}
# run_step LOG CMD...: runs with a timeout, stdout+stderr to LOG, tail shown on failure.
run_step() {
  local log=$1; shift
  # through bash -c, so that CMD may be the exported function `traced`
  timeout --kill-after=30 "$step_timeout" bash -c '"$@"' run_step "$@" >"$log" 2>&1
  local rc=$?
  if [ $rc -ne 0 ]; then
    [ $rc -eq 124 ] && echo "   timed out after ${step_timeout}s: $*" || echo "   exit $rc: $*"
    tail -n 25 "$log" | sed 's/^/   | /'
  fi
  return $rc
}
# traced DIR NAME CMD...: CMD with the library preloaded, traces into DIR/NAME.%p.gmt.
traced() {
  local dir=$1 name=$2; shift 2
  env LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}" GPUMEMTRACE_OUTPUT="$dir/$name.%p.gmt" "$@"
}
export -f traced
export lib
# dump_traces PATTERN: one .dump per trace; prints their paths.
dump_traces() {
  local t
  for t in $1; do
    [ -f "$t" ] || continue
    "$cli" dump "$t" >"${t%.gmt}.dump" 2>"${t%.gmt}.dump.err" && echo "${t%.gmt}.dump" ||
      { echo "   gpumemtrace dump $t failed:" >&2; sed 's/^/   | /' "${t%.gmt}.dump.err" >&2; }
  done
}

# ---------------------------------------------------------------- preflight
say "preflight (work dir $work)"
pre_ok=1
need_file() { if [ -e "$1" ]; then echo "   found $1"; else echo "   MISSING $1${2:+ ($2)}"; pre_ok=0; fi; }
bash -n "$0" || { echo "   run.sh has a syntax error"; pre_ok=0; }
need_file "$lib" "build it on the development machine and copy build/ here"
need_file "$cli" "idem"
need_file "$check"
need_file "$repo/examples/cuda_static/memcheck.cu"
need_file "$here/graphs.cu"
need_file "$repo/examples/nccl/nccl_multi.c"
need_file "$repo/examples/pytorch_ddp/train.py"
py=$(command -v python3 || true)
if [ -z "$py" ]; then echo "   MISSING python3"; pre_ok=0; else
  "$py" -m py_compile "$check" "$repo/examples/pytorch_ddp/train.py" || pre_ok=0
  echo "   selftest of the log matcher:"
  "$py" "$check" selftest >"$work/selftest.log" 2>&1 && echo "   selftest passed" ||
    { sed 's/^/   | /' "$work/selftest.log"; pre_ok=0; }
fi
if [ -x "$cli" ] && ! "$cli" dump --help >/dev/null 2>&1; then
  echo "   $cli does not run here:"; ldd "$cli" 2>&1 | grep -E 'not found|error' | sed 's/^/   | /'
  pre_ok=0
elif [ -x "$cli" ] && [ -n "$py" ] && [ -f "$repo/tests/golden/sample.gmt" ]; then
  # The dump format as this CLI prints it must be what gpucheck.py parses.
  "$cli" dump "$repo/tests/golden/sample.gmt" >"$work/sample.dump" 2>&1 &&
    "$py" "$check" parse "$work/sample.dump" | sed 's/^/   /' ||
    { echo "   gpucheck.py cannot read this CLI's dump output"; pre_ok=0; }
fi
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
cuda_home=${CUDA_HOME:-$( [ -n "$nvcc" ] && cd "$(dirname "$nvcc")/.." && pwd )}
[ -n "$nvcc" ] && echo "   nvcc: $nvcc" || echo "   no nvcc: the CUDA examples will be skipped"

gpus=0
if command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
  echo "   nvidia-smi: $gpus GPU(s)"
else
  echo "   no nvidia-smi"
fi
torch_ok=0 nccl_home=""
if [ -n "$py" ]; then
  if "$py" - <<'EOF' >"$work/torch.txt" 2>&1; then torch_ok=1; fi
import torch, sys
print("torch", torch.__version__, "cuda", torch.version.cuda, "devices", torch.cuda.device_count())
sys.exit(0 if torch.cuda.is_available() and torch.cuda.device_count() >= 1 else 1)
EOF
  sed 's/^/   /' "$work/torch.txt" | tail -n 3
  nccl_home=$(bash "$here/build_bench.sh" --nccl-home 2>/dev/null)
  [ -n "$nccl_home" ] && echo "   NCCL from PyTorch's wheel: $nccl_home" || echo "   no nvidia/nccl/{include,lib} in python3's site-packages"
fi

if [ $pre_ok = 0 ]; then
  result preflight FAIL "missing files or a broken helper (see above)"
  echo; cat "$summary"; exit 2
fi
if [ $dry = 1 ]; then
  result preflight ok "dry run: files, syntax and the log matcher's selftest"
  [ "$gpus" -ge 1 ] && [ $torch_ok = 1 ] && result machine ok "$gpus GPUs, torch with CUDA" ||
    result machine skip "no GPU / torch with CUDA here: nothing run"
  echo; echo "== summary"; cat "$summary"; exit 0
fi
if [ "$gpus" -lt 1 ] || [ $torch_ok = 0 ]; then
  result preflight FAIL "need nvidia-smi with a GPU and python3 with torch+CUDA"
  echo; cat "$summary"; exit 2
fi
result preflight ok "$gpus GPUs, $(head -n 1 "$work/torch.txt")"

# ---------------------------------------------------------------- (a) static cudart
if wanted cuda; then
  say "(a) CUDA example, static cudart"
  d="$work/cuda_static"; mkdir -p "$d"
  if [ -z "$nvcc" ]; then result cuda_static skip "no nvcc"
  elif ! run_step "$d/build.log" make -s -C "$repo/examples/cuda_static" NVCC="$nvcc" memcheck; then
    result cuda_static FAIL "nvcc build failed ($d/build.log)"
  else
    cp "$repo/examples/cuda_static/memcheck" "$d/" && rm -f "$repo/examples/cuda_static/memcheck"
    run_step "$d/plain.out" "$d/memcheck"; rc1=$?
    run_step "$d/traced.out" traced "$d" trace "$d/memcheck"; rc2=$?
    if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
      result cuda_static FAIL "exit $rc1 untraced, $rc2 traced"
    elif ! diff -u "$d/plain.out" <(grep -v '^gpumemtrace: ' "$d/traced.out") >"$d/diff.txt"; then
      result cuda_static FAIL "output differs with the library ($d/diff.txt)"; cat "$d/diff.txt"
    else
      dumps=$(dump_traces "$d/trace.*.gmt")
      if [ -z "$dumps" ]; then result cuda_static FAIL "no trace written"
      elif "$py" "$check" allocs --dump $dumps --expect 67108864 33554432 8388608 | tee "$d/allocs.txt"; then
        result cuda_static ok "same output; 64 MiB, 32 MiB async, 8 MiB host in the trace"
      else result cuda_static FAIL "same output, allocations missing in the trace"; fi
    fi
  fi
fi

# ---------------------------------------------------------------- (a2) graph memory
if wanted graphs; then
  say "(a2) graph memory: tests/gpu/graphs.cu, static cudart"
  d="$work/graphs"; mkdir -p "$d"
  if [ -z "$nvcc" ]; then result graphs skip "no nvcc"
  elif ! run_step "$d/build.log" "$nvcc" -o "$d/graphs" "$here/graphs.cu" -lcuda; then
    result graphs FAIL "nvcc build failed ($d/build.log)"
  else
    run_step "$d/plain.out" "$d/graphs"; rc1=$?
    run_step "$d/traced.out" traced "$d" trace "$d/graphs"; rc2=$?
    if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
      result graphs FAIL "exit $rc1 untraced, $rc2 traced"
    elif ! diff -u "$d/plain.out" <(grep -v '^gpumemtrace: ' "$d/traced.out") >"$d/diff.txt"; then
      result graphs FAIL "output differs with the library ($d/diff.txt)"; cat "$d/diff.txt"
    else
      dumps=$(dump_traces "$d/trace.*.gmt")
      if [ -z "$dumps" ]; then result graphs FAIL "no trace written"
      else
        # the captured allocation (flag GMT_ALLOC_CAPTURED), the built graph's node, and
        # GRAPHMEM after launch 1, trim, destroy, the node graph's launch, trim, destroy, exit
        captured=$(cat $dumps | grep -c 'kind=GRAPH_MEM.*flags=0x2')
        nodes=$(cat $dumps | grep -c 'api=cuGraphAddMemAllocNode')
        graphmem=$(cat $dumps | grep -c ' GRAPHMEM ')
        differs=$(grep -c DIFFERS "$d/plain.out")
        cat "$d/plain.out"
        if [ "$captured" -ge 1 ] && [ "$nodes" -ge 1 ] && [ "$graphmem" -ge 5 ]; then
          result graphs ok "same output; captured $captured, nodes $nodes, GRAPHMEM $graphmem; device delta != reserved: $differs of 4"
        else result graphs FAIL "captured $captured, nodes $nodes, GRAPHMEM $graphmem (want >= 1, 1, 5)"; fi
      fi
    fi
  fi
fi

# ---------------------------------------------------------------- (b) NCCL C example
nccl_env=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=ALLOC)
if wanted nccl; then
  nd=$(( gpus < 2 ? gpus : 2 ))
  say "(b) NCCL example: one process, $nd GPU(s)"
  d="$work/nccl"; mkdir -p "$d"
  if [ -z "$nccl_home" ]; then result nccl_example skip "no NCCL headers/library from the wheel"
  elif ! run_step "$d/build.log" make -s -C "$repo/examples/nccl" NCCL_HOME="$nccl_home" \
         CUDA_HOME="${cuda_home:-/usr/local/cuda}" nccl_multi; then
    result nccl_example FAIL "build failed ($d/build.log)"
  else
    cp "$repo/examples/nccl/nccl_multi" "$d/" && rm -f "$repo/examples/nccl/nccl_multi"
    run_step "$d/plain.out" env "${nccl_env[@]}" NCCL_DEBUG_FILE="$d/plain.%p.log" "$d/nccl_multi" "$nd" 5; rc1=$?
    run_step "$d/traced.out" traced "$d" trace env "${nccl_env[@]}" NCCL_DEBUG_FILE="$d/nccl.%p.log" "$d/nccl_multi" "$nd" 5; rc2=$?
    if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
      result nccl_example FAIL "exit $rc1 untraced, $rc2 traced"
    elif ! "$py" "$check" compare "$d/plain.out" "$d/traced.out"; then
      result nccl_example FAIL "CHECK lines differ with the library"
    else
      result nccl_example ok "same checksums with and without the library"
      dumps=$(dump_traces "$d/trace.*.gmt")
      if "$py" "$check" nccl-log --dump $dumps --log "$d"/nccl.*.log --json "$d/nccl_log.json" | tee "$d/nccl_log.txt"; then
        result nccl_example_alloc_log ok "$(tail -n 1 "$d/nccl_log.txt")"
      else result nccl_example_alloc_log FAIL "NCCL-logged allocations missing ($d/nccl_log.txt)"; fi
    fi
  fi
fi

# ---------------------------------------------------------------- (c) PyTorch DDP
if wanted ddp && [ "$gpus" -lt 2 ]; then
  result ddp skip "DDP needs 2 GPUs, this machine has $gpus"
elif wanted ddp; then
  say "(c) PyTorch DDP on 2 GPUs"
  d="$work/ddp"; mkdir -p "$d"
  ddp() { # ddp NAME [traced DIR NAME]: one torchrun, CHECK lines in $d/NAME.out
    local name=$1; shift
    run_step "$d/$name.out" "$@" env "${nccl_env[@]}" NCCL_DEBUG_FILE="$d/$name.nccl.%p.log" \
      "$py" -m torch.distributed.run --nproc_per_node=2 --master_port=$((29500 + RANDOM % 1000)) \
      "$repo/examples/pytorch_ddp/train.py" --json "$d/$name.rank%r.json"
  }
  ddp plain; rc1=$?
  ddp traced traced "$d" trace; rc2=$?
  if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
    result ddp FAIL "exit $rc1 untraced, $rc2 traced"
  elif ! "$py" "$check" compare "$d/plain.out" "$d/traced.out"; then
    result ddp FAIL "CHECK lines (checksums, losses) differ with the library"
  else
    result ddp ok "same checksums and losses with and without the library"
    dumps=$(dump_traces "$d/trace.*.gmt")
    if "$py" "$check" nccl-log --dump $dumps --log "$d"/traced.nccl.*.log --json "$d/nccl_log.json" | tee "$d/nccl_log.txt"; then
      result ddp_alloc_log ok "$(tail -n 1 "$d/nccl_log.txt")"
    else result ddp_alloc_log FAIL "NCCL-logged allocations missing ($d/nccl_log.txt)"; fi
    # Device deltas: informative unless STRICT_MEMINFO=1 (what PyTorch does around a
    # collective besides NCCL's call is not ours to predict).
    if "$py" "$check" meminfo --dump $dumps --json "$d"/traced.rank*.json | tee "$d/meminfo.txt"; then
      result ddp_meminfo ok "trace MEMINFO deltas = torch.cuda.mem_get_info deltas (±4 MiB)"
    elif [ "${STRICT_MEMINFO:-0}" = 1 ]; then result ddp_meminfo FAIL "deltas differ ($d/meminfo.txt)"
    else result ddp_meminfo note "deltas differ, see $d/meminfo.txt (STRICT_MEMINFO=1 fails)"; fi
    ts=$(grep -h -o 'seconds": [0-9.e-]*' "$d"/plain.rank*.json 2>/dev/null | awk '{s+=$2} END {printf "%.3f", s}')
    tt=$(grep -h -o 'seconds": [0-9.e-]*' "$d"/traced.rank*.json 2>/dev/null | awk '{s+=$2} END {printf "%.3f", s}')
    result ddp_collective_time note "sum of measured collectives: ${ts}s untraced, ${tt}s traced (one run each: noisy)"
  fi
fi

# ---------------------------------------------------------------- (d) attribution, summary
d="$work/ddp"
if wanted ddp && ls "$d"/trace.*.gmt >/dev/null 2>&1; then
  say "(d) the DDP job's summary; the first all_reduce's NCCL buffers attributed to it"
  "$cli" summary --width 150 "$d"/trace.*.gmt >"$d/summary.txt" 2>&1; cat "$d/summary.txt"
  if "$cli" summary --json "$d"/trace.*.gmt >"$d/summary.json" &&
     "$py" "$check" attrib --summary "$d/summary.json" | tee "$d/attrib.txt"; then
    result ddp_attribution ok "first all_reduce: >= 288 MiB tracked on NCCL's proxy thread, caller stack in ProcessGroupNCCL"
  else result ddp_attribution FAIL "see $d/attrib.txt"; fi
fi

# ---------------------------------------------------------------- (e) CI gate on real NCCL
if wanted gate && ls "$d"/trace.*.gmt >/dev/null 2>&1; then
  say "(e) gpumemtrace check: baseline from the DDP run, an unchanged rerun, NCCL_BUFFSIZE doubled"
  g="$work/gate"; mkdir -p "$g/same" "$g/big"
  # the limits examples/ci/gpumemtrace.yml ships (PyTorch's cached segments at exit vary)
  "$cli" check "$d"/trace.*.gmt --write-baseline "$g/baseline.json" \
    --max-growth 5%,peak=10%,leak=10%,first_call=0%,steady=0% >"$g/write.log" 2>&1
  gate_run() { # gate_run DIR [ENV...]
    local dir=$1; shift
    run_step "$dir/job.out" traced "$dir" trace env "$@" "$py" -m torch.distributed.run --nproc_per_node=2 \
      --master_port=$((29500 + RANDOM % 1000)) "$repo/examples/pytorch_ddp/train.py" --json "$dir/rank%r.json"
  }
  gate_run "$g/same" NCCL_DEBUG=WARN
  "$cli" check "$g/same"/trace.*.gmt --baseline "$g/baseline.json" >"$g/same.txt" 2>&1; rs=$?
  gate_run "$g/big" NCCL_BUFFSIZE=8388608
  "$cli" check "$g/big"/trace.*.gmt --baseline "$g/baseline.json" >"$g/big.txt" 2>&1; rb=$?
  tail -n 4 "$g/same.txt"; grep -E 'FAIL' "$g/big.txt" | head -n 6; tail -n 1 "$g/big.txt"
  if [ $rs = 0 ] && [ $rb = 1 ] && grep -q 'FAIL.*first_call.*AllReduce' "$g/big.txt"; then
    result ci_gate ok "unchanged rerun passes; NCCL_BUFFSIZE=8 MiB fails on AllReduce's first call"
  else result ci_gate FAIL "check exit $rs (unchanged, want 0) and $rb (doubled, want 1); see $g"; fi
fi

echo
echo "== summary ($work)"
cat "$summary"
exit $failed
