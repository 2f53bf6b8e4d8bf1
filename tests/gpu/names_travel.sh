#!/usr/bin/env bash
# names_travel.sh: on a GPU host, traces named there read the same where their binaries are not: a static-cudart program, a PyTorch training step (and nccl-tests' all_reduce_perf when NCCL_TESTS_DIR names it), traced with run, read with the binaries hidden, from a copy and from a pack.
#
# Usage: bash tests/gpu/names_travel.sh
# Needs build/libgpumemtrace.so and build/gpumemtrace (GPUMEMTRACE_BUILD=DIR for another
# build), python3 with torch, nvcc for the static-cudart program (skipped without it).
# Nothing else is built. Per job: `gpumemtrace run` (which names its traces at its end),
# `symbolize --force -v` timed on its own, then summary, explain and the folded export
# of the traces without names read with the binaries (the host's answer), and of a copy
# of the named traces and of their pack read with GPUMEMTRACE_NO_LOCAL_MODULES=1 (no
# module is read where the trace says: what another machine sees); the three must be
# the same, byte for byte, and the unnamed copy read that way must not (it shows what
# the names fix). Writes $OUT/names (or a temp dir); prints a table last; exit 0 when
# every job reads the same.
set -u
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=$(cd "${GPUMEMTRACE_BUILD:-$repo/build}" && pwd)
cli=$build/gpumemtrace
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
w=${OUT:+$OUT/names}; w=${w:-$(mktemp -d)}; mkdir -p "$w"
cd "$w" || exit 2
now() { date +%s.%N; }
failed=0
rows=()

# what a command prints for the traces at $1, into directory $2, paths made alike
outputs() {
  local d=$1 o=$2; mkdir -p "$o"
  "$cli" summary --width 160 "$d" >"$o/summary" 2>&1
  "$cli" summary --json "$d" >"$o/summary.json" 2>&1
  "$cli" explain "$d" >"$o/explain" 2>&1
  "$cli" export --format folded "$d" >"$o/folded" 2>&1
  local f; for f in "$o"/*; do sed -i "s|$d|TRACES|g" "$f"; done
}

job() { # NAME CMD...
  local name=$1; shift
  local d=$w/$name
  rm -rf "$d" "$d".*
  local t0; t0=$(now)
  "$cli" run -o "$d" -- timeout 600 "$@" >"$d.run.out" 2>"$d.run.err"
  local rc=$? t1; t1=$(now)
  local n; n=$(ls "$d"/*.gmt 2>/dev/null | wc -l)
  if [ "$n" = 0 ]; then
    echo "FAIL $name: no traces (exit $rc)" | tee -a results.txt; tail -5 "$d.run.err"; failed=1; return
  fi
  local runline; runline=$(grep "names for" "$d.run.err" | head -1)
  local s0; s0=$(now)
  "$cli" symbolize --force -v "$d" >"$d.symbolize" 2>&1
  local s1; s1=$(now)
  local tb nb; tb=$(cat "$d"/*.gmt | wc -c); nb=$(cat "$d"/*.gmt.names 2>/dev/null | wc -c)
  # the host's answer: the traces without names, read from the binaries
  mkdir -p "$d.bare"; cp "$d"/*.gmt "$d.bare/"
  local h0; h0=$(now)
  outputs "$d.bare" "$d.host"
  local h1; h1=$(now)
  # another machine: a copy, and a pack, with no module readable where the traces say
  cp -r "$d" "$d.copy"
  "$cli" pack "$d" -o "$d.gmtpack" >"$d.pack.out" 2>&1
  local a0; a0=$(now)
  GPUMEMTRACE_NO_LOCAL_MODULES=1 outputs "$d.copy" "$d.away"
  local a1; a1=$(now)
  GPUMEMTRACE_NO_LOCAL_MODULES=1 outputs "$d.gmtpack" "$d.pack"
  GPUMEMTRACE_NO_LOCAL_MODULES=1 outputs "$d.bare" "$d.unnamed"
  local same=yes f
  for f in summary summary.json explain folded; do
    cmp -s "$d.host/$f" "$d.away/$f" || { same=no; echo "  $name $f: differs from a copy" >>results.txt; diff "$d.host/$f" "$d.away/$f" | head -8 >>results.txt; }
    cmp -s "$d.host/$f" "$d.pack/$f" || { same=no; echo "  $name $f: differs from the pack" >>results.txt; diff "$d.host/$f" "$d.pack/$f" | head -8 >>results.txt; }
  done
  local named unnamed
  named=$(grep -c ' (.*:[0-9]*)' "$d.host/summary")
  unnamed=$(grep -c '+0x' "$d.unnamed/summary")
  if cmp -s "$d.host/summary" "$d.unnamed/summary"; then
    echo "  $name: the traces without names read the same with no binary: nothing to prove" >>results.txt; same=no
  fi
  [ "$same" = yes ] || failed=1
  echo "$( [ $same = yes ] && echo ok || echo FAIL ) $name: $n trace(s), run exit $rc; run's end: ${runline#gpumemtrace: }" | tee -a results.txt
  sed 's/^/     /' "$d.symbolize" | tail -n +1 >>results.txt
  rows+=("$(awk -v n="$name" -v k="$n" -v tb="$tb" -v nb="$nb" -v s0="$s0" -v s1="$s1" -v h0="$h0" -v h1="$h1" \
    -v a0="$a0" -v a1="$a1" -v nl="$named" -v ul="$unnamed" -v same="$same" \
    'BEGIN { printf "%-8s %6d %10.2f %10.1f %7.2f %7.2f %10.2f %10.2f %6d %8d  %s", n, k, tb / 1048576, nb / 1024, tb ? 100 * nb / tb : 0, s1 - s0, h1 - h0, a1 - a0, nl, ul, same }')")
}

nvcc=$(command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
if [ -n "$nvcc" ] && "$nvcc" -O2 -g -o loop_static "$here/alloc_loop.cu" -lcuda >build.txt 2>&1; then
  job static ./loop_static runtime 2000 20
else
  echo "skip static: no nvcc (or it failed: $w/build.txt)" | tee -a results.txt
fi
job torch python3 "$here/train_loop.py" 3
if [ -n "${NCCL_TESTS_DIR:-}" ] && [ -x "$NCCL_TESTS_DIR/all_reduce_perf" ]; then
  g=$(nvidia-smi -L 2>/dev/null | wc -l); [ "$g" -ge 1 ] || g=1
  job nccl "$NCCL_TESTS_DIR/all_reduce_perf" -b 8 -e 64M -f 4 -g "$g"
fi

echo
echo "job      traces  trace MiB  names KiB  names%  symb s  host s(*)  away s(*)  named  +0x w/o  same"
for r in "${rows[@]}"; do echo "$r"; done
echo "(*) summary + explain + export of all the job's traces: from the binaries without names; from the names with no binary readable"
echo "named: summary lines with a function (file:line) on the host; +0x w/o: module+offset lines of the same traces without names and binaries"
exit $failed
