#!/usr/bin/env bash
# bench.sh: the tracer's overhead on 2 real GPUs, runs with and without libgpumemtrace.so interleaved in pairs, one table last.
#
# Usage: bash tests/gpu/bench.sh [--dry-run] [--pairs N] [--ddp-pairs N] [--pin CPUS | --no-pin]
#                                [--no-aslr]
#   --pairs N, --ddp-pairs N  pairs of all_reduce runs (20) and of DDP runs (8)
#   --pin CPUS   the CPUs for the all_reduce runs (default: GPU 0's local CPUs);
#   --no-pin     wherever the scheduler puts them
#   --no-aslr    every run with address-space randomization off (setarch -R)
#   --dry-run    no GPU needed: checks the files, prints the table from made-up numbers
# Exit status: 0 measured (targets met or not: read the table), 2 could not measure.
#
# Measures, with the library at its default settings, the 8-byte all_reduce latency and
# the 128 MiB all_reduce bus bandwidth (tests/gpu/bench_allreduce.c, one process,
# ncclCommInitAll over 2 GPUs) and the PyTorch DDP training-step time
# (tests/gpu/bench_ddp.py, 2 ranks). Each pair runs both variants back to back,
# alternating which goes first; ratios are per pair, and the table gives their median.
# Builds only bench_allreduce (cc against NCCL from PyTorch's wheel); the library comes
# from build/ (GPUMEMTRACE_BUILD=DIR for another).
# The all_reduce processes run on the CPUs local to GPU 0 (its PCI device's
# local_cpulist). Their 8-byte latency is bimodal all the same (11-14 or 16-19 us per
# iteration, and a process can switch modes during its life), so a pair's ratio is
# mostly which modes its two processes drew. Each all_reduce process therefore also
# times its 8-byte loop in alternating blocks through the exported entry points and
# through libnccl's own (found in its symbol table, past any wrapper): the same process,
# layout and mode both ways, so that ratio in traced processes, against plain ones as
# the control, is the tracing work's share alone.
set -u

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${GPUMEMTRACE_BUILD:-$repo/build}
[ -d "$build" ] && build=$(cd "$build" && pwd)
lib=$build/libgpumemtrace.so
dry=0 pairs=20 ddp_pairs=8 pin=1 pin_list="" aslr=1
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) dry=1 ;;
    --pairs) shift; pairs=${1:?} ;;
    --ddp-pairs) shift; ddp_pairs=${1:?} ;;
    --no-pin) pin=0 ;;
    --pin) shift; pin_list=${1:?} ;;
    --no-aslr) aslr=0 ;;
    -h|--help) sed -n '4,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done

# Every process started here, directly or not, keeps multicast/NVLS off.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

if [ -n "${OUT:-}" ]; then work="$OUT/bench"; else work=$(mktemp -d "${TMPDIR:-/tmp}/gpumemtrace-bench.XXXXXX"); fi
mkdir -p "$work" || exit 2
data="$work/data.txt" # lines: KIND PAIR VARIANT VALUE
: >"$data"
py=$(command -v python3 || true)
echo "== gpumemtrace GPU overhead benchmark (work dir $work)"

for f in "$here/bench_allreduce.c" "$here/bench_ddp.py"; do
  [ -f "$f" ] || { echo "missing $f" >&2; exit 2; }
done
if [ $dry = 0 ]; then
  [ -f "$lib" ] || { echo "no $lib: copy build/ from the development machine" >&2; exit 2; }
  [ -n "$py" ] || { echo "no python3" >&2; exit 2; }
  bin="$work/bench_allreduce"
  bash "$here/build_bench.sh" "$bin" || exit 2
fi

# The CPUs next to GPU 0, for the all_reduce runs.
cpus=""
if [ $dry = 0 ] && [ $pin = 1 ]; then
  cpus=${pin_list:-$(bash "$here/build_bench.sh" --cpus)}
  if [ -n "$cpus" ] && command -v taskset >/dev/null; then
    echo "   all_reduce runs pinned to GPU 0's CPUs: $cpus"
  else
    echo "   GPU 0's CPUs not found: all_reduce runs unpinned"; cpus=""
  fi
fi
# pinned CMD...: CMD (an exported function too) on those CPUs.
pinned() { if [ -n "$cpus" ]; then taskset -c "$cpus" bash -c '"$@"' pinned "$@"; else "$@"; fi; }

# variant VARIANT CMD...: CMD as is (plain) or with the library preloaded (traced).
variant() {
  local v=$1; shift
  if [ "$aslr" = 0 ]; then set -- setarch "$(uname -m)" -R "$@"; fi
  if [ "$v" = traced ]; then
    env LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}" GPUMEMTRACE_OUTPUT="$work/trace.%p.gmt" "$@"
  else
    "$@"
  fi
}

# Made-up numbers for --dry-run, so the parsing and the table are exercised.
fake_ar() { awk -v s="$RANDOM" -v t="$1" 'BEGIN { srand(s); f = (t == "traced") ? 1.01 : 1;
  printf "allreduce_8B_us %.3f\nallreduce_8B_host_us %.3f\nallreduce_8B_again_us %.3f\n", 15 * f + rand(), 12 * f + rand(), 15 * f + rand()
  printf "allreduce_8B_inproc_ratio %.4f\n", (t == "traced") ? 1.01 + rand() / 100 : 1 + (rand() - 0.5) / 100
  printf "allreduce_128MiB_busbw_GBs %.3f\n", 360 / f + rand() }'; }
fake_ddp() { awk -v s="$RANDOM" -v t="$1" 'BEGIN { srand(s); f = (t == "traced") ? 1.004 : 1;
  printf "ddp_step_ms %.4f\n", 12 * f + rand() / 10 }'; }

run_ar() { # PAIR VARIANT
  local out="$work/ar.$1.$2.out"
  if [ $dry = 1 ]; then fake_ar "$2" >"$out"
  else timeout --kill-after=10 150 bash -c '"$@"' x pinned variant "$2" "$bin" >"$out" 2>&1 || {
         echo "   all_reduce run $1 ($2) failed:"; tail -n 5 "$out" | sed 's/^/   | /'; }
  fi
  awk -v p="$1" -v v="$2" '/^allreduce_8B_us /{print "lat", p, v, $2}
                           /^allreduce_8B_again_us /{print "lat2", p, v, $2}
                           /^allreduce_8B_host_us /{print "host", p, v, $2}
                           /^allreduce_8B_inproc_ratio /{print "ipr", p, v, $2}
                           /^allreduce_128MiB_busbw_GBs /{print "bw", p, v, $2}' "$out" >>"$data"
  rm -f "$work"/trace.*.gmt
}
run_ddp() { # PAIR VARIANT
  local out="$work/ddp.$1.$2.out"
  if [ $dry = 1 ]; then fake_ddp "$2" >"$out"
  else timeout --kill-after=10 200 bash -c '"$@"' x variant "$2" "$py" -m torch.distributed.run \
         --nproc_per_node=2 --master_port=$((29500 + $1)) "$here/bench_ddp.py" >"$out" 2>&1 || {
         echo "   DDP run $1 ($2) failed:"; tail -n 5 "$out" | sed 's/^/   | /'; }
  fi
  awk -v p="$1" -v v="$2" '/^ddp_step_ms /{print "ddp", p, v, $2}' "$out" >>"$data"
  rm -f "$work"/trace.*.gmt
}
export -f variant pinned
export lib work cpus aslr

# Alternate which variant goes first, so drift over the run (clocks, thermals, other
# tenants) falls on both alike.
for i in $(seq 1 "$pairs"); do
  if [ $((i % 2)) = 1 ]; then run_ar "$i" plain; run_ar "$i" traced
  else run_ar "$i" traced; run_ar "$i" plain; fi
  echo "   all_reduce pair $i/$pairs done"
done
for i in $(seq 1 "$ddp_pairs"); do
  if [ $((i % 2)) = 1 ]; then run_ddp "$i" plain; run_ddp "$i" traced
  else run_ddp "$i" traced; run_ddp "$i" plain; fi
  echo "   DDP pair $i/$ddp_pairs done"
done

echo
[ $dry = 1 ] && echo "DRY RUN: made-up numbers, no GPU was used"
echo "$(date -u +%Y-%m-%dT%H:%MZ) $(hostname) $(nvidia-smi -L 2>/dev/null | head -n 2 | tr '\n' ' ')"
# Per pair: traced/plain; the table shows medians of the plain and traced values and the
# median of the per-pair ratios.
awk '
function median(a, n,   i, j, t) {
  for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
  return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ val[$1, $2, $3] = $4; seen[$1, $2] = 1 }
END {
  split("lat lat2 host bw ddp", kinds, " ")
  name["lat"] = "8-byte all_reduce latency (us)"; target["lat"] = "<= 1.02"
  name["lat2"] = "  the same process, again (us)"; name["host"] = "  host time per iteration (us)"
  name["bw"] = "128 MiB all_reduce busbw (GB/s)"; target["bw"] = ">= 0.995"
  name["ddp"] = "DDP step time (ms)"; target["ddp"] = "<= 1.01"
  printf "%-34s %6s %10s %10s %8s %9s %s\n", "measurement", "pairs", "plain", "traced", "ratio", "target", "met"
  for (k = 1; k <= 5; k++) {
    kd = kinds[k]; n = 0; delete P; delete T; delete R
    for (key in seen) {
      split(key, f, SUBSEP)
      if (f[1] != kd || !((kd, f[2], "plain") in val) || !((kd, f[2], "traced") in val)) continue
      n++; P[n] = val[kd, f[2], "plain"]; T[n] = val[kd, f[2], "traced"]; R[n] = T[n] / P[n]
    }
    if (n == 0) { if (kd in target) printf "%-34s %6d %10s %10s %8s %9s %s\n", name[kd], 0, "-", "-", "-", target[kd], "no data"; continue }
    mp = median(P, n); mt = median(T, n); mr = median(R, n)
    if (!(kd in target)) { printf "%-34s %6d %10.3f %10.3f %8.4f\n", name[kd], n, mp, mt, mr; continue }
    lim = substr(target[kd], 4) + 0
    met = (substr(target[kd], 1, 2) == "<=") ? (mr <= lim) : (mr >= lim)
    printf "%-34s %6d %10.3f %10.3f %8.4f %9s %s\n", name[kd], n, mp, mt, mr, target[kd], met ? "yes" : "NO"
    if (kd == "lat") { # bimodal per process: pairs rarely match like with like
      sp = 0; st = 0; for (i = 1; i <= n; i++) { sp += P[i]; st += T[i] }
      lat_line = sprintf("   latency, all runs: ratio of medians %.4f, of means %.4f (%.3f / %.3f us)", mt / mp, st / sp, st / n, sp / n)
    }
  }
  if (lat_line != "") print lat_line
  # In-process A/B: each all_reduce process also times its 8-byte loop in alternating
  # blocks through the exported entry points (the wrappers of the tracer when preloaded)
  # and through those of libnccl itself; in plain processes both are the same functions,
  # so their ratio is the control.
  for (v = 1; v <= 2; v++) {
    var = v == 1 ? "plain" : "traced"; n = 0; delete X
    for (key in val) { split(key, f, SUBSEP); if (f[1] == "ipr" && f[3] == var) X[++n] = val[key] }
    ipr[var] = n ? median(X, n) : 0; ipn[var] = n
  }
  if (ipn["plain"] && ipn["traced"])
    printf "   in-process A/B, exported/own entry points (median over runs): plain %.4f (control), traced %.4f: the library adds %.2f%%\n", ipr["plain"], ipr["traced"], (ipr["traced"] / ipr["plain"] - 1) * 100
}' "$data"
