#!/usr/bin/env bash
# run.sh: `make bench`: runs the CPU benchmarks with and without the tracer, interleaved, and prints one table of medians.
#
# Usage: tests/bench/run.sh BUILD_DIR   (BENCH_QUICK=1: fewer and shorter runs)
# Every figure is a difference or a ratio between runs made in this one invocation,
# alternating which variant goes first, so drift and other tenants of the machine fall
# on both alike. CPU time is the process's (CLOCK_PROCESS_CPUTIME_ID: every thread,
# the writer's flushes included), measured inside the program around the timed loop.
set -u
build=$(cd "${1:?usage: run.sh BUILD_DIR}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
b=$build/bench
lib=$build/libgpumemtrace.so
cli=$build/gpumemtrace
if [ "${BENCH_QUICK:-}" = 1 ]; then
  reps=3 stub_pairs=100000 fake_pairs=20000 nccl_calls=100000 cli_events=1000000
  py_pairs=30000
else
  reps=${BENCH_REPS:-7} stub_pairs=500000 fake_pairs=100000 nccl_calls=500000 cli_events=10000000
  py_pairs=200000
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/gpumemtrace-bench.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export GPUMEMTRACE_OUTPUT="$tmp/t.%p.gmt"
res="$tmp/results" # lines: KEY VALUE
: >"$res"

median() { sort -g | awk '{a[NR] = $1} END { if (!NR) print "nan"; else if (NR % 2) print a[(NR + 1) / 2]; else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
traced() { env LD_PRELOAD="$lib" "$@"; }

# ab KEY CMD...: REPS pairs of CMD untraced and traced; records each run's first number
# under KEY.plain / KEY.traced and the per-pair difference under KEY.diff.
ab() {
  local key=$1; shift
  for r in $(seq 1 "$reps"); do
    local u t
    if [ $((r % 2)) = 1 ]; then u=$("$@" | awk '{print $1}'); t=$(traced "$@" | awk '{print $1}')
    else t=$(traced "$@" | awk '{print $1}'); u=$("$@" | awk '{print $1}'); fi
    rm -f "$tmp"/t.*.gmt
    echo "$key.plain $u" >>"$res"; echo "$key.traced $t" >>"$res"
    echo "$key.diff $(awk -v t="$t" -v u="$u" 'BEGIN { print t - u }')" >>"$res"
  done
}
med() { awk -v k="$1" '$1 == k {print $2}' "$res" | median; }

echo "== allocation events (cuMemAlloc_v2 + cuMemFree_v2 pairs), $reps interleaved pairs of runs per row"
for d in 0 8 20 64; do
  ab "stub$d" "$b/alloc_bench_stub" "$d" "$stub_pairs"
  ab "fake$d" "$b/alloc_bench_fake" "$d" "$fake_pairs"
  echo "   depth $d done"
done

# Python frames: the same traced loop with GPUMEMTRACE_PYTHON=0 and =1, alternating which
# goes first; the interpreter itself (not a pyenv shim, which is a shell script)
pybin=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null)
if [ -n "$pybin" ]; then
  echo "== Python: cuMemAlloc_v2 + cuMemFree_v2 through ctypes from 20 nested Python functions ($("$pybin" -V 2>&1))"
  pyrun() { GPUMEMTRACE_PYTHON=$1 traced "$pybin" "$here/py_bench.py" "$b/stub" "$py_pairs" 20 | awk '{print $1}'; }
  for r in $(seq 1 "$reps"); do
    if [ $((r % 2)) = 1 ]; then u=$(pyrun 0); t=$(pyrun 1); else t=$(pyrun 1); u=$(pyrun 0); fi
    rm -f "$tmp"/t.*.gmt
    echo "py.plain $u" >>"$res"; echo "py.traced $t" >>"$res"
    echo "py.diff $(awk -v t="$t" -v u="$u" 'BEGIN { print t - u }')" >>"$res"
  done
fi

echo "== NCCL hook (ncclAllReduce against a stub NCCL that returns at once)"
for r in $(seq 1 "$reps"); do
  # rotate the order of the four variants
  for v in $(echo "plain default never always plain default never" | cut -d' ' -f$((r % 4 + 1))-$((r % 4 + 4))); do
    case $v in
      plain) x=$("$b/nccl_bench" "$nccl_calls") ;;
      default) x=$(traced "$b/nccl_bench" "$nccl_calls") ;;
      *) x=$(GPUMEMTRACE_MEMINFO=$v traced "$b/nccl_bench" "$nccl_calls") ;;
    esac
    echo "nccl.$v $x" >>"$res"
    rm -f "$tmp"/t.*.gmt
  done
done

echo "== NCCL profiler plugin (the stub NCCL also making NCCL 2.28's plugin events per call)"
# pnull: untraced, a plugin that does nothing; tnull: traced, the same plugin; tlib: traced,
# the library as the plugin. tlib - tnull is what the library's plugin adds.
for r in $(seq 1 "$reps"); do
  for v in $(echo "pnull tnull tlib pnull tnull" | cut -d' ' -f$((r % 3 + 1))-$((r % 3 + 3))); do
    case $v in
      pnull) x=$(NCCL_PROFILER_PLUGIN="$b/libnull-profiler.so" "$b/nccl_bench_prof" "$nccl_calls") ;;
      tnull) x=$(NCCL_PROFILER_PLUGIN="$b/libnull-profiler.so" traced "$b/nccl_bench_prof" "$nccl_calls") ;;
      tlib) x=$(NCCL_PROFILER_PLUGIN="$lib" traced "$b/nccl_bench_prof" "$nccl_calls") ;;
    esac
    echo "prof.$v $x" >>"$res"
    rm -f "$tmp"/t.*.gmt
  done
done

echo "== the GPU benchmark's iteration (ncclGroupStart, ncclAllReduce on 2 communicators, ncclGroupEnd)"
ab group2 "$b/nccl_bench" "$((nccl_calls / 2))" group2

echo "== NVTX ranges (push+pop pairs through an NVTX copy's slots; traced: the library injected)"
for r in $(seq 1 "$reps"); do
  for m in a d; do
    if [ $((r % 2)) = 1 ]; then u=$("$b/nvtx_bench" $m "$stub_pairs" | awk '{print $1}')
      t=$(NVTX_INJECTION64_PATH="$lib" traced "$b/nvtx_bench" $m "$stub_pairs" | awk '{print $1}')
    else t=$(NVTX_INJECTION64_PATH="$lib" traced "$b/nvtx_bench" $m "$stub_pairs" | awk '{print $1}')
      u=$("$b/nvtx_bench" $m "$stub_pairs" | awk '{print $1}'); fi
    rm -f "$tmp"/t.*.gmt
    echo "nvtx$m.plain $u" >>"$res"; echo "nvtx$m.traced $t" >>"$res"
    echo "nvtx$m.diff $(awk -v t="$t" -v u="$u" 'BEGIN { print t - u }')" >>"$res"
  done
done

echo "== trace size: two traced runs of different length; bytes per event of the difference"
size_of() { # PAIRS -> "bytes events"
  rm -f "$tmp"/t.*.gmt
  local ev; ev=$(traced "$b/alloc_bench_stub" 20 "$1" | awk '{print $2}')
  echo "$(cat "$tmp"/t.*.gmt | wc -c) $ev"; rm -f "$tmp"/t.*.gmt
}
read -r s1 e1 <<<"$(size_of "$stub_pairs")"
read -r s2 e2 <<<"$(size_of $((stub_pairs * 2)))"
bpe=$(awk -v a="$s1" -v b="$s2" -v x="$e1" -v y="$e2" 'BEGIN { printf "%.3f", (b - a) / (y - x) }')
bpe_all=$(awk -v b="$s2" -v y="$e2" 'BEGIN { printf "%.3f", b / y }')

echo "== CLI: summary of a generated trace of $cli_events allocation events"
read -r gev grec <<<"$("$b/gen_trace" "$cli_events" "$tmp/big.gmt")"
gsize=$(wc -c <"$tmp/big.gmt")
for r in $(seq 1 3); do
  # wall and CPU seconds of one summary (symbols cached: the modules are fictional, so
  # the symbolizer answers module+offset at once)
  /usr/bin/env time -f "%e %U %S" -o "$tmp/time" "$cli" summary "$tmp/big.gmt" >/dev/null 2>"$tmp/cli.err" ||
    { echo "   summary failed:"; cat "$tmp/cli.err"; }
  read -r wall usr sys <"$tmp/time"
  echo "cli.wall $wall" >>"$res"; echo "cli.cpu $(awk -v u="$usr" -v s="$sys" 'BEGIN { print u + s }')" >>"$res"
done

echo "== report: the page of that trace, drawn in headless Chromium (tests/report_drawtime.py)"
draw=skipped psize=0
if "$cli" report -o "$tmp/big.html" "$tmp/big.gmt" 2>"$tmp/cli.err"; then
  psize=$(wc -c <"$tmp/big.html")
  d=$(python3 "$here/../report_drawtime.py" "$tmp/big.html" 3); rc=$?
  if [ $rc = 0 ]; then draw="$(echo "$d" | awk '{print $1}') s"; elif [ $rc != 77 ]; then draw=failed; echo "   $d"; fi
else
  draw=failed; cat "$tmp/cli.err"
fi
rm -f "$tmp/big.html"

echo "== CLI: summary of a job of 1,024 rank traces"
mkdir -p "$tmp/job"
for r in $(seq 0 1023); do "$b/gen_trace" 20000 "$tmp/job/r$r.gmt" "$r" 1024 >/dev/null; done
jsize=$(cat "$tmp"/job/*.gmt | wc -c)
for r in $(seq 1 3); do
  /usr/bin/env time -f "%e %M" -o "$tmp/time" "$cli" summary "$tmp/job" >"$tmp/job.txt" 2>"$tmp/cli.err" ||
    { echo "   summary of the job failed:"; cat "$tmp/cli.err"; }
  read -r wall rss <"$tmp/time"
  echo "job.wall $wall" >>"$res"; echo "job.rss $rss" >>"$res"
done
echo "== watch: the first refresh of those 1,024 traces (everything read from the start)"
for r in $(seq 1 3); do
  /usr/bin/env time -f "%e %U %S %M" -o "$tmp/time" "$cli" watch --once --json "$tmp/job" >/dev/null 2>"$tmp/cli.err" ||
    { echo "   watch --once failed:"; cat "$tmp/cli.err"; }
  read -r wall usr sys rss <"$tmp/time"
  echo "wfirst.wall $wall" >>"$res"; echo "wfirst.rss $rss" >>"$res"
  echo "wfirst.cpu $(awk -v u="$usr" -v s="$sys" 'BEGIN { print u + s }')" >>"$res"
done
rm -rf "$tmp/job"

# watch_live N RATE SECS KEY: N traces growing at RATE bytes/s each (trace_feed), watched at
# 1 refresh/s for SECS s; the watch's CPU time (its rusage, as the shell's `times` reports
# a waited child's), and each refresh's wall time (the JSON's refresh.ns), after the first
tsecs() { awk '{ split($0, a, "m"); sub(/s$/, "", a[2]); print a[1] * 60 + a[2] }'; }
watch_live() {
  local n=$1 rate=$2 secs=$3 key=$4 d="$tmp/live"
  rm -rf "$d"; mkdir "$d"
  "$b/trace_feed" "$tmp/src.gmt" "$rate" $((secs + 1)) "$d" "$n" >/dev/null &
  local feed=$!
  local cpu
  cpu=$( ( "$cli" watch --json --interval 1 "$d" >"$tmp/w.json" & w=$!; sleep "$secs"
           kill -INT $w; wait $w; times ) | tail -1)
  wait $feed
  local u s; read -r u s <<<"$cpu"
  echo "$key.cpu $(awk -v u="$(echo "$u" | tsecs)" -v s="$(echo "$s" | tsecs)" -v t="$secs" \
    'BEGIN { print (u + s) / t * 100 }')" >>"$res"
  sed -n 's/.*"refresh": {"count": \([0-9]*\), "ns": \([0-9]*\).*/\1 \2/p' "$tmp/w.json" |
    awk -v k="$key" '$1 > 2 { print k ".refresh " $2 / 1e6 }' >>"$res"
  rm -rf "$d"
}
echo "== watch: 8 traces growing at 64 KiB/s and at 512 KiB/s each, 1 refresh/s for 10 s"
"$b/gen_trace" 400000 "$tmp/src.gmt" >/dev/null
wreps=$([ "${BENCH_QUICK:-}" = 1 ] && echo 1 || echo 3)
for r in $(seq 1 "$wreps"); do
  watch_live 8 65536 10 w8slow
  watch_live 8 524288 10 w8fast
done
echo "== watch: 1,024 traces growing at 16 KiB/s each, 1 refresh/s"
watch_live 1024 16384 8 w1k
rm -f "$tmp/src.gmt"

# ---- the table
echo
echo "gpumemtrace bench: $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, $(lscpu | awk -F: '/Model name/ {gsub(/^ +/, "", $2); print $2; exit}'), medians of $reps"
row() { printf '%-44s %12s %12s %12s  %s\n' "$@"; }
row "measurement" "untraced" "traced" "added" "target"
for d in 0 8 20 64; do
  t=""; [ $d = 20 ] && t="<= 0.12 us/event"
  row "alloc+free, depth $d, stub driver (ns/pair)" "$(med stub$d.plain)" "$(med stub$d.traced)" \
    "$(awk -v x="$(med stub$d.diff)" 'BEGIN { printf "%.3f us/ev", x / 2000 }')" "$t"
done
for d in 0 8 20 64; do
  row "alloc+free, depth $d, fake driver (ns/pair)" "$(med fake$d.plain)" "$(med fake$d.traced)" \
    "$(awk -v x="$(med fake$d.diff)" 'BEGIN { printf "%.3f us/ev", x / 2000 }')" ""
done
if [ -n "$pybin" ]; then
  # only the allocation captures a stack (a free does not): the difference is per allocation
  row "ctypes alloc+free, Python depth 20 (ns/pair)" "$(med py.plain)" "$(med py.traced)" \
    "$(awk -v x="$(med py.diff)" 'BEGIN { printf "%.3f us/alloc", x / 1000 }')" "<= 1 us/event"
  echo "(that row: both runs traced, GPUMEMTRACE_PYTHON=0 then =1; added = the Python frames)"
fi
np=$(med nccl.plain)
for v in never default always; do
  t=""; [ $v = never ] && t="<= 0.1 us"
  row "ncclAllReduce, MEMINFO=$v (ns/call)" "$np" "$(med nccl.$v)" \
    "$(awk -v x="$(med nccl.$v)" -v p="$np" 'BEGIN { printf "%.3f us", (x - p) / 1000 }')" "$t"
done
pn=$(med prof.pnull)
row "ncclAllReduce + plugin events, null plugin" "$pn" "$(med prof.tnull)" \
  "$(awk -v x="$(med prof.tnull)" -v p="$pn" 'BEGIN { printf "%.3f us", (x - p) / 1000 }')" ""
row "ncclAllReduce + plugin events, library plugin" "$pn" "$(med prof.tlib)" \
  "$(awk -v x="$(med prof.tlib)" -v p="$pn" 'BEGIN { printf "%.3f us", (x - p) / 1000 }')" "<= 0.2 us"
row "  of which the plugin (library - null plugin)" "" "" \
  "$(awk -v x="$(med prof.tlib)" -v p="$(med prof.tnull)" 'BEGIN { printf "%.3f us", (x - p) / 1000 }')" ""
row "group of 2 ncclAllReduce, default (ns/iter)" "$(med group2.plain)" "$(med group2.traced)" \
  "$(awk -v x="$(med group2.diff)" 'BEGIN { printf "%.3f us", x / 1000 }')" ""
row "nvtxRangePushA+Pop (ns/pair)" "$(med nvtxa.plain)" "$(med nvtxa.traced)" \
  "$(awk -v x="$(med nvtxa.diff)" 'BEGIN { printf "%.3f us", x / 1000 }')" "<= 0.2 us/pair"
row "nvtxDomainRangePushEx+Pop (ns/pair)" "$(med nvtxd.plain)" "$(med nvtxd.traced)" \
  "$(awk -v x="$(med nvtxd.diff)" 'BEGIN { printf "%.3f us", x / 1000 }')" ""
row "trace bytes per alloc/free event (steady)" "" "" "$bpe B" "<= 32 B"
row "trace bytes per event, whole file" "" "" "$bpe_all B" ""
wall=$(med cli.wall); cpu=$(med cli.cpu)
row "summary, $cli_events events: wall (s)" "" "" "$wall s" "< 5 s (10M events)"
row "summary: records/s per CPU second" "" "" \
  "$(awk -v n="$grec" -v c="$cpu" 'BEGIN { printf "%.2fM", n / c / 1e6 }')" ">= 20M"
row "report page, $cli_events events: draw (s)" "" "" "$draw" "< 5 s (10M events)"
row "summary of 1,024 rank traces: wall (s)" "" "" "$(med job.wall) s" "< 30 s"
row "summary of 1,024 rank traces: max RSS" "" "" "$(awk -v k="$(med job.rss)" 'BEGIN { printf "%.1f MiB", k / 1024 }')" ""
row "watch, 8 traces +64 KiB/s each: CPU" "" "" "$(med w8slow.cpu)% core" "<= 1% core"
row "watch, 8 traces +512 KiB/s each: CPU" "" "" "$(med w8fast.cpu)% core" ""
row "watch, 8 traces +512 KiB/s: one refresh" "" "" "$(med w8fast.refresh) ms" ""
row "watch, 1,024 traces +16 KiB/s: one refresh" "" "" "$(med w1k.refresh) ms" "< 5 s"
row "watch, 1,024 traces: first refresh, wall" "" "" "$(med wfirst.wall) s" "< 5 s"
row "watch, 1,024 traces: first refresh, CPU" "" "" "$(med wfirst.cpu) s" ""
row "watch, 1,024 traces: max RSS" "" "" "$(awk -v k="$(med wfirst.rss)" 'BEGIN { printf "%.0f MiB", k / 1024 }')" ""
echo "(job: 1,024 traces of 20,000 events, $jsize bytes, read on $(nproc) cores; watch's traces"
echo " grow as tests/bench/trace_feed.c appends a generated trace to each, every 0.1 s)"
echo "(report page: $psize bytes, target < 20 MB; draw = navigation to <body data-gmt-drawn>, median of 3)"
echo "($grec records, $gsize bytes; summary CPU $cpu s; stub driver and stub NCCL return at once,"
echo " so their rows show the tracer's own cost; the fake driver's mmap/munmap per pair adds noise)"
