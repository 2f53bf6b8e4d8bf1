#!/bin/sh
# names_bench.sh: what naming costs on a large synthetic trace: many call sites (MIDS x LEAVES distinct frames), many allocations; names' size against the trace's, symbolize's time, summary's time from names and from the binaries.
# Usage: names_bench.sh BUILD_DIR [MIDS LEAVES ALLOCS] (run from the repository root;
# default 40 x 50 call sites, 200000 allocations). `make bench-names` runs it.
set -eu
b="$1"; mids=${2:-40}; leaves=${3:-50}; allocs=${4:-200000}
G="$(pwd)/$b/gpumemtrace"
FAKES="$(pwd)/$b/fakes"
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
# a program whose allocations come from mids x leaves distinct call sites
{
  echo '#include "fake_cuda.h"'
  echo '#include <stdlib.h>'
  echo 'static void *keep[64];'
  l=0
  while [ $l -lt "$leaves" ]; do
    echo "__attribute__((noinline)) void leaf_$l(int k) { void *p; if (cudaMalloc(&p, 4096 + 512 * $l)) exit(1); if (keep[k & 63]) cudaFree(keep[k & 63]); keep[k & 63] = p; }"
    l=$((l + 1))
  done
  m=0
  while [ $m -lt "$mids" ]; do
    echo "__attribute__((noinline)) void mid_$m(int j, int k) { switch (j) {"
    l=0
    while [ $l -lt "$leaves" ]; do echo "case $l: leaf_$l(k); break;"; l=$((l + 1)); done
    echo "} __asm__ volatile(\"\" ::: \"memory\"); }"
    m=$((m + 1))
  done
  echo 'typedef void (*mid_fn)(int, int);'
  printf 'static const mid_fn mids[] = {'
  m=0; while [ $m -lt "$mids" ]; do printf 'mid_%d, ' $m; m=$((m + 1)); done
  echo '};'
  echo "int main(void) { unsigned s = 1; for (int k = 0; k < $allocs; k++) { s = s * 1103515245u + 12345u;"
  echo "  mids[(s >> 8) % $mids]((s >> 16) % $leaves, k); } return 0; }"
} >"$t/sites.c"
cc -std=c11 -O1 -g -Itests/fakes -o "$t/sites" "$t/sites.c" -L"$FAKES" -Wl,-rpath,"$FAKES" -lcudart
now() { date +%s.%N; }
mkdir -p "$t/job"
t0=$(now)
LD_PRELOAD="$(pwd)/$b/libgpumemtrace.so" GPUMEMTRACE_OUTPUT="$t/job/gpumemtrace.%h.%p.gmt" "$t/sites"
t1=$(now)
"$G" symbolize -v "$t/job"
trace=$(ls "$t"/job/*.gmt)
ts=$(stat -c %s "$trace"); ns=$(stat -c %s "$trace.names")
mkdir -p "$t/bare"; cp "$trace" "$t/bare/"
t2=$(now); "$G" summary "$t/bare" >/dev/null
t3=$(now); "$G" summary "$t/job" >/dev/null
t4=$(now); GPUMEMTRACE_NO_LOCAL_MODULES=1 "$G" summary "$t/job" >/dev/null
t5=$(now)
"$G" summary "$t/bare" >"$t/a"; GPUMEMTRACE_NO_LOCAL_MODULES=1 "$G" summary "$t/job" >"$t/b"
same=no; sed "s|$t/bare|X|" "$t/a" | cmp -s - "$(sed "s|$t/job|X|" "$t/b" >"$t/c"; echo "$t/c")" && same=yes
awk -v ts="$ts" -v ns="$ns" -v tr="$t0" -v t1="$t1" -v t2="$t2" -v t3="$t3" -v t4="$t4" -v t5="$t5" \
    -v same="$same" -v sites="$((mids * leaves))" -v allocs="$allocs" 'BEGIN {
  printf "names_bench: %d call sites, %d allocations: trace %.2f MiB, names %.1f KiB (%.2f %% of the trace)\n",
    sites, allocs, ts / 1048576, ns / 1024, 100 * ns / ts
  printf "names_bench: traced in %.2f s; summary from the binaries %.2f s, from the names %.2f s, names with no binary readable %.2f s; same output: %s\n",
    t1 - tr, t3 - t2, t4 - t3, t5 - t4, same }'
[ "$same" = yes ]
