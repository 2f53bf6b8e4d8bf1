#!/bin/sh
# flake-check.sh: runs test suites again and again beside busy loops, to show that no test depends on luck.
# Usage: scripts/flake-check.sh [-b BUILD] [-n RUNS] [-k HOGS] [timing | full | SUITE...]
#   timing (the default)  each suite that depends on timing, RUNS times: its clock, sampling,
#                         writer, crash, hang and watchdog, profiler, communicator, untracked,
#                         robustness and unwinding tests
#   full                  the whole of `make test` (scripts/run-tests.sh), RUNS times
#   SUITE...              those Criterion suites (test_writer, ...), RUNS times each
# RUNS defaults to 20, HOGS (busy loops, one shell each) to 2. The build must be made
# (make tests). Each run's output is kept in BUILD/flake/ only when it failed. Prints one
# line per run, then `flake-check: R runs, F failed` with each failure; exits 1 on any.
set -u
build=build runs=20 hogs=2
while getopts b:n:k: o; do
  case $o in
    b) build=$OPTARG ;;
    n) runs=$OPTARG ;;
    k) hogs=$OPTARG ;;
    *) sed -n '3,10p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || set -- timing
if [ "$1" = timing ]; then
  set -- test_clock test_sampling test_writer test_crash test_nccl_hooks test_nccl_profiler \
         test_nccl_comms test_untracked test_robust test_stack
fi
for s in "$@"; do
  [ "$s" = full ] || [ -x "$build/tests/$s" ] || { echo "flake-check: $build/tests/$s is not built (make tests)" >&2; exit 2; }
done
# `full`: the suites `make test` runs, the binaries built from tests/test_*.c
bins=""
for c in tests/test_*.c; do
  b="$build/tests/$(basename "$c" .c)"
  [ -x "$b" ] && bins="$bins $b"
done
logs="$build/flake"
mkdir -p "$logs"

# The hogs: started here, each killed by its own pid at the end.
pids=""
stop_hogs() { for p in $pids; do kill "$p" 2>/dev/null; done; pids=""; }
trap 'stop_hogs' EXIT
trap 'stop_hogs; exit 130' INT TERM
i=0
while [ "$i" -lt "$hogs" ]; do
  sh -c 'while :; do :; done' &
  pids="$pids $!"
  i=$((i + 1))
done

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }
total=0 failed=0 failures=""
t_all=$(now)
r=1
while [ "$r" -le "$runs" ]; do
  for s in "$@"; do
    t0=$(now)
    log="$logs/$s.$r.log"
    if [ "$s" = full ]; then
      ./scripts/run-tests.sh "$build" $bins >"$log" 2>&1
      rc=$?
      line=$(tail -n 40 "$log" | grep -E '^[0-9]+ passed, [0-9]+ failed' | tail -n 1)
      case $line in *" 0 failed"*) ;; *) rc=1 ;; esac
    else
      "$build/tests/$s" --jobs 2 >"$log" 2>&1
      rc=$?
      line=$(grep 'Synthesis' "$log" | tail -n 1 | sed 's/^\[====\] //')
    fi
    total=$((total + 1))
    if [ "$rc" = 0 ]; then
      st=ok
      rm -f "$log"
    else
      st=FAIL
      failed=$((failed + 1))
      failures="$failures $s#$r"
    fi
    printf 'run %2d %-20s %-4s %6s s  %s\n' "$r" "$s" "$st" "$(secs "$t0")" "$line"
  done
  r=$((r + 1))
done
stop_hogs
load=$(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null)
echo "flake-check: $total runs, $failed failed, $hogs busy loops beside them, $(secs "$t_all") s (load average now $load)"
for f in $failures; do
  echo "  failed: ${f%#*} in run ${f#*#} (log: $logs/${f%#*}.${f#*#}.log)"
done
[ "$failed" = 0 ]
