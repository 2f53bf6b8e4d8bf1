#!/usr/bin/env bash
# nccl_profiler.sh: on a GPU host, the library as the real NCCL's profiler plugin: one process on 2 GPUs (examples/nccl) and a 2-process PyTorch job, traced by `gpumemtrace run`; prints NCCL's plugin lines, the NCCL_COLL_INFO records and summary's choices.
#
# Usage: bash tests/gpu/nccl_profiler.sh BUILD_DIR OUT_DIR   (builds nothing of the tracer:
# BUILD_DIR holds gpumemtrace and libgpumemtrace.so). On one GPU the communicators have one
# rank, for which NCCL launches nothing: NCCL loads the plugin and calls its init, and no
# record is written.
set -u
here=$(cd "$(dirname "$0")" && pwd)
b=$(cd "${1:?usage: nccl_profiler.sh BUILD_DIR OUT_DIR}" && pwd)
out=${2:?usage: nccl_profiler.sh BUILD_DIR OUT_DIR}
mkdir -p "$out" && out=$(cd "$out" && pwd)
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
g=$b/gpumemtrace

nccl_home=$(bash "$here/build_bench.sh" --nccl-home)
nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null || true)
cuda_home=${CUDA_HOME:-$( [ -n "$nvcc" ] && cd "$(dirname "$nvcc")/.." && pwd )}
cuda_home=${cuda_home:-/usr/local/cuda}
ngpu=$(nvidia-smi -L | wc -l); n=$((ngpu < 2 ? ngpu : 2))
echo "== NCCL $nccl_home, CUDA $cuda_home, $ngpu GPU(s), $n used"
cc -O2 -std=c11 -Wall -I"$nccl_home/include" -I"$cuda_home/include" -o "$out/nccl_multi" \
  "$here/../../examples/nccl/nccl_multi.c" -L"$nccl_home/lib" -l:libnccl.so.2 \
  -Wl,-rpath,"$nccl_home/lib" -L"$cuda_home/lib64" -lcudart_static -ldl -lpthread -lrt || exit 2

echo "== one process, $n GPU(s) (ncclCommInitAll), 3 iterations of 1 Mi floats, then of 64 floats"
rm -rf "$out/t1" "$out/t1b"
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV "$g" run -q -o "$out/t1" -- "$out/nccl_multi" "$n" 3 1048576 \
  >"$out/t1.out" 2>"$out/t1.err"
echo "   exit $?; NCCL's lines about the plugin:"
grep -i "profiler" "$out/t1.err" | sed 's/^/   /' | sort | uniq -c | head -8
"$g" run -q -o "$out/t1b" -- "$out/nccl_multi" "$n" 3 64 >/dev/null 2>&1
for t in "$out"/t1/*.gmt "$out"/t1b/*.gmt; do
  echo "   $(basename "$t"): $("$g" dump "$t" | grep -c NCCL_COLL_INFO) NCCL_COLL_INFO records, $("$g" dump "$t" | grep -c 'SCOPE_BEGIN *op=AllReduce') AllReduce scopes"
  "$g" dump "$t" | grep NCCL_COLL_INFO | sed 's/time_ns=[0-9]* //; s/^ *[0-9]* *//' | head -12
  "$g" summary --no-symbols "$t" | grep -B1 "NCCL chose" | head -12
done

echo "== PyTorch, $n process(es) (torch.distributed.run), all_reduce of 8 B, 1 MiB and 64 MiB, 3 each"
cat >"$out/ddp_ar.py" <<'EOF'
import os, torch, torch.distributed as dist
dist.init_process_group("nccl", device_id=torch.device("cuda", int(os.environ["LOCAL_RANK"])))
for n in (2, 1 << 18, 1 << 24):
    x = torch.ones(n, device="cuda")
    for _ in range(3):
        dist.all_reduce(x)
torch.cuda.synchronize()
dist.destroy_process_group()
EOF
rm -rf "$out/t2"
(cd "$out" && NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,ENV "$g" run -q -o "$out/t2" -- python3 -m torch.distributed.run --nproc_per_node="$n" ddp_ar.py \
  >"$out/t2.out" 2>"$out/t2.err")
echo "   exit $?"
for t in "$out"/t2/*.gmt; do
  echo "   $(basename "$t"): $("$g" dump "$t" | grep -c NCCL_COLL_INFO) NCCL_COLL_INFO records"
  "$g" dump "$t" | grep NCCL_COLL_INFO | sed 's/time_ns=[0-9]* //; s/^ *[0-9]* *//' | head -6
  "$g" summary --no-symbols "$t" | grep -B1 "NCCL chose" | head -12
done
grep -i "profiler" "$out/t2.err" | sort | uniq -c | head -4
tail -n 5 "$out/t2.err"
