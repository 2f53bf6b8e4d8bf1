#!/usr/bin/env bash
# build_bench.sh: builds tests/gpu/bench_allreduce against the NCCL of PyTorch's wheel, or names the CPUs next to GPU 0.
#
# Usage: bash tests/gpu/build_bench.sh OUT_BINARY     build it (log next to it, OUT_BINARY.log)
#        bash tests/gpu/build_bench.sh --cpus         print GPU 0's local CPU list ("" if unknown)
#        bash tests/gpu/build_bench.sh --nccl-home    print the wheel's nvidia/nccl directory
# Shared by bench.sh, ipr.sh and run.sh. Exit status: 0 done, 2 it could not be done.
set -u
here=$(cd "$(dirname "$0")" && pwd)

if [ "${1:-}" = --cpus ]; then
  bus=$(nvidia-smi --query-gpu=pci.bus_id --format=csv,noheader -i 0 2>/dev/null | tr 'A-F' 'a-f')
  bus=${bus#0000} # nvidia-smi writes an 8-digit PCI domain, sysfs a 4-digit one
  cat "/sys/bus/pci/devices/$bus/local_cpulist" 2>/dev/null || true
  exit 0
fi
py=$(command -v python3 || true)
[ -n "$py" ] || { echo "no python3" >&2; exit 2; }
nccl_home=$("$py" - <<'PYEOF' 2>/dev/null
import os, sys
for p in sys.path:
    d = os.path.join(p, "nvidia", "nccl")
    if os.path.isfile(os.path.join(d, "include", "nccl.h")) and os.path.isfile(os.path.join(d, "lib", "libnccl.so.2")):
        print(d); break
PYEOF
)
if [ "${1:-}" = --nccl-home ]; then
  echo "$nccl_home"
  exit 0
fi
bin=${1:?usage: build_bench.sh OUT_BINARY | --cpus | --nccl-home}
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
cuda_home=${CUDA_HOME:-$( [ -n "$nvcc" ] && cd "$(dirname "$nvcc")/.." && pwd )}
cuda_home=${cuda_home:-/usr/local/cuda}
[ -n "$nccl_home" ] || { echo "no nvidia/nccl in python3's site-packages" >&2; exit 2; }
echo "   NCCL: $nccl_home   CUDA: $cuda_home"
if ! ${CC:-cc} -O2 -std=c11 -D_GNU_SOURCE -Wall -I"$nccl_home/include" -I"$cuda_home/include" -o "$bin" \
     "$here/bench_allreduce.c" -L"$nccl_home/lib" -l:libnccl.so.2 -Wl,-rpath,"$nccl_home/lib" \
     -L"$cuda_home/lib64" -lcudart_static -ldl -lpthread -lrt >"$bin.log" 2>&1; then
  echo "bench_allreduce did not build:" >&2; tail -n 20 "$bin.log" >&2; exit 2
fi
