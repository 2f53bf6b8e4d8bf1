#!/usr/bin/env bash
# preload_parity.sh: on a GPU host, a plain LD_PRELOAD records what `gpumemtrace run` records (NVTX phases of torch.cuda.nvtx ranges, NCCL's profiler choices in a PyTorch job), and the process keeps its own (stdout closed, a file size limit).
#
# Usage: bash tests/gpu/preload_parity.sh BUILD_DIR OUT_DIR   (builds nothing: BUILD_DIR
# holds gpumemtrace and libgpumemtrace.so). Prints one line per check, PASS or FAIL, and
# exits 1 when one failed. With one GPU the NCCL job has one rank, for which NCCL
# launches nothing: that check then only asks that NCCL loaded the plugin. Last, the
# start-up of a one-rank job three ways, five interleaved rounds (what the parity costs).
set -u
here=$(cd "$(dirname "$0")" && pwd)
b=$(cd "${1:?usage: preload_parity.sh BUILD_DIR OUT_DIR}" && pwd)
out=${2:?usage: preload_parity.sh BUILD_DIR OUT_DIR}
mkdir -p "$out" && out=$(cd "$out" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
unset NVTX_INJECTION64_PATH NCCL_PROFILER_PLUGIN
g=$b/gpumemtrace lib=$b/libgpumemtrace.so
fails=0
check() { if [ "$1" = 0 ]; then echo "PASS $2"; else echo "FAIL $2"; fails=$((fails + 1)); fi; }

echo "== NVTX: torch.cuda.nvtx ranges, plain LD_PRELOAD, NVTX_INJECTION64_PATH unset"
rm -rf "$out/nvtx" && mkdir -p "$out/nvtx"
PYTORCH_NO_CUDA_MEMORY_CACHING=1 LD_PRELOAD=$lib GPUMEMTRACE_OUTPUT="$out/nvtx/t.%p.gmt" \
  python3 "$here/nvtx_phases.py" leak "$out/nvtx.expect.json" >"$out/nvtx.out" 2>&1
"$g" summary --no-symbols --json "$out"/nvtx/*.gmt >"$out/nvtx.json" 2>>"$out/nvtx.out"
python3 "$here/nvtx_phases.py" check "$out/nvtx.expect.json" "$out/nvtx.json" >>"$out/nvtx.out" 2>&1
check $? "the phases of a plain preload are what the script did (nvtx.out)"
"$g" summary --no-symbols "$out"/nvtx/*.gmt | grep -A4 "Device memory by phase"

echo "== NCCL: a PyTorch job (torch.distributed.run), plain LD_PRELOAD in the workers"
ngpu=$(nvidia-smi -L | wc -l); n=$((ngpu < 2 ? ngpu : 2))
cat >"$out/ar.py" <<'PY'
import os, torch, torch.distributed as dist
dist.init_process_group("nccl", device_id=torch.device("cuda", int(os.environ["LOCAL_RANK"])))
x = torch.ones(1 << 18, device="cuda")
for _ in range(3):
    dist.all_reduce(x)
torch.cuda.synchronize()
dist.destroy_process_group()
PY
rm -rf "$out/nccl" && mkdir -p "$out/nccl"
(cd "$out" && NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV LD_PRELOAD=$lib GPUMEMTRACE_OUTPUT="$out/nccl/t.%p.gmt" \
  python3 -m torch.distributed.run --nproc_per_node="$n" ar.py >"$out/nccl.out" 2>"$out/nccl.err")
check $? "the job exits 0 (nccl.err)"
# NCCL's INFO lines go to the workers' stdout unless NCCL_DEBUG_FILE says otherwise
cat "$out/nccl.out" "$out/nccl.err" | grep -qi "profiler.*libgpumemtrace\|libgpumemtrace.*profiler"
check $? "NCCL loaded the library as its profiler plugin"
if [ "$n" -ge 2 ]; then
  k=0; for t in "$out"/nccl/*.gmt; do k=$((k + $("$g" dump "$t" | grep -c NCCL_COLL_INFO))); done
  [ "$k" -gt 0 ]; check $? "NCCL_COLL_INFO records in the ranks' traces ($k)"
  "$g" summary --no-symbols "$out/nccl" | grep -E "job |NCCL chose" | head -4
fi

echo "== stdout closed at start, and a file size limit (2 KiB): the program as untraced"
cat >"$out/small.py" <<'PY'
import os, sys, torch
x = [torch.empty(1 << 20, device="cuda") for _ in range(200)]
try:
    os.write(1, b"x")
    print("stdout write succeeded", file=sys.stderr)
except OSError as e:
    print("stdout write failed", e.errno, file=sys.stderr)
PY
python3 "$out/small.py" >&- 2>"$out/plain.err"
LD_PRELOAD=$lib GPUMEMTRACE_OUTPUT="$out/closed.%p.gmt" python3 "$out/small.py" >&- 2>"$out/traced.err"
[ "$(tail -n 1 "$out/plain.err")" = "$(tail -n 1 "$out/traced.err")" ]
check $? "the write to a closed stdout fails as untraced ($(tail -n 1 "$out/traced.err"))"
"$g" summary --no-symbols "$out"/closed.*.gmt >/dev/null 2>&1
check $? "that trace reads"
(ulimit -f 4; python3 "$out/small.py" 2>/dev/null); plain=$?
(ulimit -f 4; LD_PRELOAD=$lib GPUMEMTRACE_OUTPUT="$out/fsize.%p.gmt" python3 "$out/small.py" 2>"$out/fsize.err"); traced=$?
[ "$plain" = "$traced" ]
check $? "under ulimit -f 4 the traced program exits as untraced ($traced; fsize.err: $(grep -c 'File too large' "$out/fsize.err") warning)"
rm -f "$out"/fsize.*.gmt "$out"/closed.*.gmt

echo "== start-up: a one-rank PyTorch NCCL job, untraced / preloaded / preloaded without the parity (s)"
cat >"$out/start.py" <<'PY'
import os, torch, torch.distributed as dist
os.environ.setdefault("MASTER_ADDR", "127.0.0.1"); os.environ.setdefault("MASTER_PORT", "29611")
dist.init_process_group("nccl", rank=0, world_size=1, device_id=torch.device("cuda", 0))
x = torch.ones(1 << 10, device="cuda"); torch.cuda.nvtx.range_push("step"); dist.all_reduce(x); torch.cuda.nvtx.range_pop()
torch.cuda.synchronize(); dist.destroy_process_group()
PY
secs() { local s; s=$(date +%s.%N); "$@" >/dev/null 2>&1; awk -v a="$s" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'; }
for i in 1 2 3 4 5; do
  a=$(secs python3 "$out/start.py")
  b=$(secs env LD_PRELOAD="$lib" GPUMEMTRACE_OUTPUT="$out/st.%p.gmt" python3 "$out/start.py")
  c=$(secs env LD_PRELOAD="$lib" GPUMEMTRACE_NVTX=0 GPUMEMTRACE_NCCL_PROFILER=0 GPUMEMTRACE_OUTPUT="$out/st0.%p.gmt" python3 "$out/start.py")
  echo "  round $i: $a / $b / $c"
done
rm -f "$out"/st.*.gmt "$out"/st0.*.gmt

echo "== $fails failed"
[ "$fails" = 0 ]
