#!/usr/bin/env bash
# ipr.sh: the 8-byte all_reduce loop's in-process cost of several library builds, side by side on one GPU host.
#
# Usage: bash tests/gpu/ipr.sh [--rounds N] LIB.so...
# Each of N rounds (6) runs tests/gpu/bench_allreduce once plain (the control) and once
# per LIB preloaded, in an order rotating from round to round, pinned to GPU 0's CPUs.
# Each process times its 8-byte loop in alternating blocks through the exported entry
# points (the wrappers) and libnccl's own: its ratio is the wrappers' cost whatever
# latency mode it drew. Prints each variant's median ratio and every round's value.
# Exit status: 0 measured, 2 could not measure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
rounds=6
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) shift; rounds=${1:?} ;;
    -h|--help) sed -n '4,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) echo "ipr.sh: unknown option '$1'" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
[ $# -gt 0 ] || { echo "ipr.sh: no library given" >&2; exit 2; }
libs=()
for l in "$@"; do
  [ -f "$l" ] || { echo "ipr.sh: no $l" >&2; exit 2; }
  libs+=("$(cd "$(dirname "$l")" && pwd)/$(basename "$l")")
done
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
work=$(mktemp -d "${TMPDIR:-/tmp}/gpumemtrace-ipr.XXXXXX")
bin="$work/bench_allreduce"
bash "$here/build_bench.sh" "$bin" || exit 2
cpus=$(bash "$here/build_bench.sh" --cpus)
pin=()
[ -n "$cpus" ] && command -v taskset >/dev/null && pin=(taskset -c "$cpus")
echo "   pinned to: ${cpus:-nothing}"

variants=(plain "${libs[@]}")
nv=${#variants[@]}
for r in $(seq 1 "$rounds"); do
  for k in $(seq 0 $((nv - 1))); do
    v=${variants[$(((k + r) % nv))]}
    if [ "$v" = plain ]; then pre=(); else pre=(env LD_PRELOAD="$v" GPUMEMTRACE_OUTPUT="$work/t.%p.gmt"); fi
    x=$(timeout --kill-after=10 120 "${pre[@]}" "${pin[@]}" "$bin" 2000 1 2>&1 |
        awk '/^allreduce_8B_inproc_ratio /{print $2}')
    echo "$v ${x:-none}" >>"$work/ipr.txt"
    rm -f "$work"/t.*.gmt
  done
  echo "   round $r/$rounds done"
done
echo "$(date -u +%Y-%m-%dT%H:%MZ) $(hostname)"
for v in "${variants[@]}"; do
  awk -v v="$v" '$1 == v && $2 != "none" { x[++n] = $2 }
    END { for (i = 2; i <= n; i++) { t = x[i]; for (j = i - 1; j >= 1 && x[j] > t; j--) x[j + 1] = x[j]; x[j + 1] = t }
          m = n ? (n % 2 ? x[(n + 1) / 2] : (x[n / 2] + x[n / 2 + 1]) / 2) : 0
          printf "%-60s median %.4f of %d:", v, m, n; for (i = 1; i <= n; i++) printf " %s", x[i]; printf "\n" }' "$work/ipr.txt"
done
rm -rf "$work"
