#!/usr/bin/env bash
# every_byte.sh: real-GPU validation on one NVIDIA GPU of what the device itself says: every allocation path against cudaMemGetInfo, graph memory, device samples without NCCL (NVML and cuMemGetInfo), OOM and hang forensics, PyTorch with and without CUDA graphs, and the periodic sample's cost.
#
# Usage: bash tests/gpu/every_byte.sh
# Needs build/libgpumemtrace.so and build/gpumemtrace from the development machine, nvcc,
# python3 with torch (CUDA) and NCCL from PyTorch's wheel. Writes everything to
# $OUT/every (or a temp dir): each program's output with and without the library, its
# trace's summary (text and JSON) and dump; prints what to compare. Exit status 0 when
# every program ran (the figures are compared by the reader, see docs/gpu-validation.md).
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(cd "${GPUMEMTRACE_BUILD:-$repo/build}" && pwd)
unset GPUMEMTRACE_BUILD # ours, not the library's: it would warn of an unknown option
lib=$build/libgpumemtrace.so
cli=$build/gpumemtrace
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
w=${OUT:+$OUT/every}; w=${w:-$(mktemp -d)}; mkdir -p "$w"
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
py=$(command -v python3)
nccl_home=$(bash "$here/build_bench.sh" --nccl-home 2>/dev/null)
failed=0
note() { printf '%s\n' "$*" | tee -a "$w/results.txt"; }
# traced NAME CMD...: CMD under the library, its trace into $w/NAME.%p.gmt
traced() { local n=$1; shift; env LD_PRELOAD="$lib" GPUMEMTRACE_OUTPUT="$w/$n.%p.gmt" "$@"; }
# report NAME: summary (text, JSON) and dump of NAME's trace(s)
report() {
  local t
  for t in "$w/$1".*.gmt; do
    [ -f "$t" ] || { note "$1: no trace"; failed=1; return; }
    "$cli" summary "$t" >"${t%.gmt}.summary.txt" 2>&1
    "$cli" summary --json "$t" >"${t%.gmt}.summary.json" 2>&1
    "$cli" dump "$t" >"${t%.gmt}.dump.txt" 2>&1
  done
}
# both NAME CMD...: CMD without and with the library; outputs compared line by line
both() {
  local n=$1; shift
  timeout 300 "$@" >"$w/$n.plain.txt" 2>&1; local a=$?
  timeout 300 env LD_PRELOAD="$lib" GPUMEMTRACE_OUTPUT="$w/$n.%p.gmt" "$@" >"$w/$n.traced.txt" 2>&1; local b=$?
  note "$n: exit $a untraced, $b traced"
  [ $a -eq 0 ] && [ $b -eq 0 ] || failed=1
  report "$n"
}

note "== $(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -n 1)"
cd "$w" || exit 2
if [ -n "$nvcc" ]; then
  "$nvcc" -O2 -o devmem "$here/devmem.cu" -lcuda >build.txt 2>&1 &&
    "$nvcc" -O2 -cudart shared -o devmem_shared "$here/devmem.cu" -lcuda >>build.txt 2>&1 &&
    "$nvcc" -O2 -o arrays "$here/arrays.cu" -lcuda >>build.txt 2>&1 &&
    { [ ! -f "$here/graphs.cu" ] || "$nvcc" -O2 -o graphs "$here/graphs.cu" -lcuda >>build.txt 2>&1; } &&
    { [ -z "$nccl_home" ] || "$nvcc" -O2 -o hang "$here/hang.cu" -I"$nccl_home/include" -L"$nccl_home/lib" -lnccl >>build.txt 2>&1; } ||
    { note "build failed:"; tail -n 20 build.txt; failed=1; }
fi

[ -x devmem ] && both devmem ./devmem 1500
[ -x devmem_shared ] && both devmem_shared ./devmem_shared 1500
[ -x devmem ] && both devmem_nosample env GPUMEMTRACE_SAMPLE_MS=0 ./devmem 300
[ -x arrays ] && both arrays ./arrays
[ -x graphs ] && both graphs ./graphs
if [ -x hang ]; then
  # killed while ncclCommInitRank waits for a rank that never comes
  LD_LIBRARY_PATH="$nccl_home/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout -s KILL 15 \
    env LD_PRELOAD="$lib" GPUMEMTRACE_OUTPUT="$w/hang.%p.gmt" ./hang >hang.traced.txt 2>&1
  note "hang: exit $? (137: killed as meant)"
  report hang
fi

# PyTorch, single GPU: eager, a CUDA graph from PyTorch's pool, a CUDA graph of stream-ordered allocations
note "torch $(date -u +%T)"
both torch_eager "$py" "$here/torch_mem.py" eager 200
both torch_graph "$py" "$here/torch_mem.py" graph 200
both torch_graph_async env PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync "$py" "$here/torch_mem.py" graph 200

# the periodic sample's cost: step times, interleaved pairs in this one run
for i in 1 2 3; do
  note "cost round $i $(date -u +%T)"
  for ms in off 0 10 default; do
    case $ms in
      off) "$py" "$here/torch_mem.py" eager 400 ;;
      default) traced cost_${i}_default "$py" "$here/torch_mem.py" eager 400 ;;
      *) traced cost_${i}_$ms env GPUMEMTRACE_SAMPLE_MS=$ms "$py" "$here/torch_mem.py" eager 400 ;;
    esac 2>&1 | sed "s/^/cost $i $ms /" >>cost.txt
  done
done
rm -f cost_*.gmt

# NVML and cuMemGetInfo, each call's cost and what each says
"$py" - >nvml.txt 2>&1 <<'EOF'
import ctypes, time, os, json
import torch
torch.cuda.init(); torch.zeros(1, device="cuda")
n = ctypes.CDLL("libnvidia-ml.so.1")
n.nvmlInit_v2()
h = ctypes.c_void_p()
n.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h))
class Mem(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]
class Proc(ctypes.Structure):
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong), ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]
m = Mem()
N = 2000
t0 = time.perf_counter()
for _ in range(N): n.nvmlDeviceGetMemoryInfo(h, ctypes.byref(m))
t_info = (time.perf_counter() - t0) / N * 1e6
procs = (Proc * 64)(); cnt = ctypes.c_uint(64)
t0 = time.perf_counter()
for _ in range(N):
    cnt.value = 64
    n.nvmlDeviceGetComputeRunningProcesses_v3(h, ctypes.byref(cnt), procs)
t_procs = (time.perf_counter() - t0) / N * 1e6
mine = [p.usedGpuMemory for p in procs[:cnt.value] if p.pid == os.getpid()]
t0 = time.perf_counter()
for _ in range(N): f, t = torch.cuda.mem_get_info()
t_cu = (time.perf_counter() - t0) / N * 1e6
print(json.dumps({"nvml_meminfo_us": t_info, "nvml_procs_us": t_procs, "cudaMemGetInfo_us": t_cu,
                  "nvml_used": m.used, "nvml_free": m.free, "nvml_total": m.total,
                  "nvml_process": mine, "cuda_used": t - f, "cuda_total": t,
                  "torch_reserved": torch.cuda.memory_reserved()}))
EOF
note "nvml: $(tail -n 1 nvml.txt)"
rm -f devmem devmem_shared arrays graphs hang
tar czf "$w/../every.tgz" -C "$w/.." "$(basename "$w")" 2>/dev/null
note "== done; failed=$failed"
exit $failed
