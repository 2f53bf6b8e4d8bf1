#!/bin/sh
# names-travel.sh: traces named on their host read the same once their binaries are gone, from a directory and from a pack; a rebuilt program never names frames; a SIGKILLed trace is named afterwards.
# Usage: names-travel.sh BUILD_DIR (run from the repository root). The simulated job (the
# fakes and train_sim) is built in a temporary directory, traced with `run`, then that
# directory is deleted: every command's output must not change, byte for byte. Each
# comparison is shown able to fail: the same traces without their names must differ.
set -u
b="$1"
G="$(pwd)/$b/gpumemtrace"
LIB="$(pwd)/$b/libgpumemtrace.so"
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail=0
say() { echo "names-travel: $*"; fail=1; }

# ---- the job's binaries, in a directory of their own ----
bin="$t/bin"
mkdir -p "$bin"
CC=${CC:-cc}
F="-std=c11 -D_GNU_SOURCE -O2 -g -Itests/fakes -pthread"
SO='-shared -fPIC -fvisibility=hidden -Wl,-Bsymbolic-functions -Wl,-z,defs -pthread'
build_bin() {
  $CC $F $SO -Wl,-soname,libcuda.so.1 -o "$bin/libcuda.so.1" tests/fakes/fake_driver.c &&
  $CC $F $SO -Wl,-soname,libcudart.so.13 -Wl,-rpath,"$bin" -o "$bin/libcudart.so.13" tests/fakes/fake_runtime.c -ldl &&
  $CC $F -fPIC -fvisibility=hidden -DFAKECUDART_STATIC -c -o "$bin/rt.o" tests/fakes/fake_runtime.c &&
  ar rcs "$bin/libcudart_static.a" "$bin/rt.o" &&
  $CC $F $SO -Wl,-soname,libnccl.so.2 -Wl,--version-script=tests/fakes/fake_nccl.map -Wl,-rpath,"$bin" \
    -o "$bin/libnccl.so.2" tests/fakes/fake_nccl.c tests/fakes/fake_nccl_profiler.c "$bin/libcudart_static.a" -ldl -lrt &&
  ln -sf libcuda.so.1 "$bin/libcuda.so" && ln -sf libcudart.so.13 "$bin/libcudart.so" &&
  ln -sf libnccl.so.2 "$bin/libnccl.so"
}
# $1: extra flags (another build of the same source at the same path)
build_prog() {
  $CC $F $1 -o "$bin/train_sim" examples/simulated/train_sim.c -L"$bin" -Wl,-rpath,"$bin" -ldl -lcudart -lnccl
}
build_bin && build_prog "" || { echo "names-travel: cannot build the job"; exit 1; }

# ---- traced with run (names at its end), and once more killed by SIGKILL (no run) ----
out="$t/job"
"$G" run -q -o "$out" -- "$bin/train_sim" 2 >"$t/run.out" 2>"$t/run.err" || say "run: exit $?"
n=$(ls "$out"/*.gmt 2>/dev/null | wc -l); m=$(ls "$out"/*.gmt.names 2>/dev/null | wc -l)
[ "$n" = 2 ] && [ "$m" = 2 ] || say "run: $n traces, $m names files (want 2 and 2)"
kill_dir="$t/killed"
mkdir -p "$kill_dir"
LD_PRELOAD="$LIB" GPUMEMTRACE_OUTPUT="$kill_dir/gpumemtrace.%h.%p.gmt" "$bin/train_sim" 1000 >/dev/null 2>&1 &
pid=$!
sleep 2
pkill -KILL -P "$pid"; kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
"$G" symbolize "$kill_dir" >"$t/sym.out" 2>&1 || say "symbolize of a killed job: exit $?"
[ "$(ls "$kill_dir"/*.gmt.names 2>/dev/null | wc -l)" = 2 ] || say "symbolize: no names beside the killed job's traces"
grep -q "INCOMPLETE\|CUT" "$t/sym.out" && say "symbolize printed a cut message"

# the same traces without their names: what must differ once the binaries are gone
bare="$t/bare"
mkdir -p "$bare"
cp "$out"/*.gmt "$bare/"

# ---- every command's output, into directory $2, for the traces in $1 (with $3 = few:
# only those that show frames, for the comparisons that need no more) ----
outputs() {
  d="$1"; o="$2"; mkdir -p "$o"
  src="$d"; [ -d "$d" ] || src="$out" # a pack of $out: its members are named as there
  r0="$d/$(cd "$src" && ls *.r0.gmt)"; r1="$d/$(cd "$src" && ls *.r1.gmt)"
  "$G" summary --width 120 "$d" >"$o/summary" 2>&1
  "$G" explain "$d" >"$o/explain" 2>&1
  "$G" export --format folded "$d" >"$o/folded" 2>&1
  if [ "${3:-}" != few ]; then
  "$G" summary --json "$d" >"$o/summary.json" 2>&1
  "$G" summary --per-rank --width 120 "$d" >"$o/summary-per-rank" 2>&1
  "$G" explain --json "$d" >"$o/explain.json" 2>&1
  "$G" check --write-baseline "$o/baseline.json" "$d" >/dev/null 2>&1
  "$G" check --verbose --baseline "$out.baseline.json" "$d" >"$o/check" 2>&1
  "$G" report -o "$o/report.html" "$d" >/dev/null 2>&1
  "$G" export --format chrome -o "$o/chrome.json" "$d" >/dev/null 2>&1
  "$G" export --format csv -o "$o/csv" "$d" >/dev/null 2>&1
  "$G" merge "$d" >"$o/merge" 2>&1
  "$G" diff "$r0" "$r1" >"$o/diff" 2>&1
  "$G" dump "$r0" >"$o/dump" 2>&1
  for f in "$o"/csv/*.csv; do echo "== ${f##*/}"; cat "$f"; done >"$o/csv.all"; rm -rf "$o/csv"
  fi
  # the path of the traces is the one thing that may differ (a pack's members)
  # (the job's own directory is in its environment, which dump shows)
  for f in "$o"/*; do sed -i "s|$d|TRACES|g; s|$out|TRACES|g" "$f"; done
}
"$G" check --write-baseline "$out.baseline.json" "$out" >/dev/null 2>&1 || say "check --write-baseline: exit $?"
outputs "$out" "$t/host"
outputs "$kill_dir" "$t/host-killed" few
outputs "$bare" "$t/host-bare"
grep -q "worker (train_sim.c:" "$t/host/summary" || say "summary on the host names no frame of train_sim"
grep -q "initChannel" "$t/host/explain" || say "explain on the host: no initChannel from NCCL's frames"
grep -q "worker (train_sim.c:" "$t/host-killed/summary" || say "summary of the killed job names no frame"
grep -q "INCOMPLETE\|CUT" "$t/host-killed/summary" || say "the killed job's traces are whole: nothing cut"
# names read from the file are what the binaries give
for f in summary summary.json explain explain.json check folded merge diff; do
  cmp -s "$t/host/$f" "$t/host-bare/$f" || { say "$f: with its names, not what the binaries give"; diff "$t/host-bare/$f" "$t/host/$f" | head -5; }
done

# ---- a pack of the job, made on the host ----
"$G" pack "$out" -o "$t/job.gmtpack" >"$t/pack.out" 2>&1 || say "pack: exit $?"
grep -q "2 trace(s), 2 with their names" "$t/pack.out" || say "pack: $(cat "$t/pack.out")"

# ---- the program rebuilt at the same path: its build-id differs ----
build_prog "-O1" || say "cannot rebuild train_sim"
"$G" summary --width 120 "$bare" >"$t/rebuilt" 2>&1
grep -q "train_sim: another build at its path (build-id differs)" "$t/rebuilt" || say "rebuilt program: summary does not say its build-id differs"
grep -q "worker (train_sim.c:" "$t/rebuilt" && say "rebuilt program: its frames were named by another build"
grep -q "train_sim+0x" "$t/rebuilt" || say "rebuilt program: its frames not shown as module+offset"
"$G" summary --json "$bare" | grep -q '"unnamed_modules": \[{"module": "[^"]*train_sim", "why": "another build' || say "summary --json: train_sim not in unnamed_modules"
"$G" summary --width 120 "$out" >"$t/rebuilt-named" 2>&1
cmp -s "$t/host/summary" "$t/rebuilt-named" 2>/dev/null || sed "s|$out|TRACES|g" "$t/rebuilt-named" | cmp -s "$t/host/summary" - || say "rebuilt program: the names made before it changed"
mkdir -p "$t/rebare"; cp "$bare"/*.gmt "$t/rebare/"
"$G" symbolize "$t/rebare" >"$t/sym-rebuilt" 2>&1
grep -q "not named: train_sim (another build at its path (build-id differs))" "$t/sym-rebuilt" || say "symbolize: does not say train_sim was not named: $(cat "$t/sym-rebuilt")"

# ---- the job's binaries kept by build-id, as a debug directory (gdb's and perf's
# layout: .build-id/xx/rest.debug; only the debug part where objcopy is there), the
# program built again as it was (the same build-id: the build is reproducible) ----
build_prog "" || say "cannot build train_sim again"
dbg="$t/debug"
"$G" dump "$(ls "$bare"/*.r0.gmt)" | awk -v bin="$bin/" '$4 == "MODULE_LOAD" {
    b = ""; p = ""
    for (i = 5; i <= NF; i++) { if ($i ~ /^build_id=/) b = substr($i, 10); if ($i ~ /^path=/) p = substr($i, 7, length($i) - 7) }
    if (b != "" && index(p, bin) == 1) print b, p }' >"$t/modules"
[ -s "$t/modules" ] || say "dump: no module of the job's own in the trace"
while read -r id path; do
  d="$dbg/.build-id/$(echo "$id" | cut -c1-2)"; mkdir -p "$d"
  f="$d/$(echo "$id" | cut -c3-).debug"
  objcopy --only-keep-debug "$path" "$f" 2>/dev/null || cp "$path" "$f"
done <"$t/modules"

# ---- the binaries gone ----
rm -rf "$bin"
outputs "$out" "$t/away"
outputs "$kill_dir" "$t/away-killed" few
outputs "$bare" "$t/away-bare" few
unpacked="$t/job.gmtpack"
outputs "$unpacked" "$t/away-pack"
for f in summary summary.json summary-per-rank explain explain.json baseline.json check report.html folded chrome.json csv.all merge diff dump; do
  cmp -s "$t/host/$f" "$t/away/$f" || { say "$f: not the same without the binaries"; diff "$t/host/$f" "$t/away/$f" | head -6; }
  cmp -s "$t/host/$f" "$t/away-pack/$f" || { say "$f: not the same from the pack"; diff "$t/host/$f" "$t/away-pack/$f" | head -6; }
done
for f in summary explain folded; do
  cmp -s "$t/host-killed/$f" "$t/away-killed/$f" || { say "$f (killed job): not the same without the binaries"; diff "$t/host-killed/$f" "$t/away-killed/$f" | head -6; }
done
# the check can fail: without names, the outputs that show frames change
for f in summary explain folded; do
  cmp -s "$t/host-bare/$f" "$t/away-bare/$f" && say "$f: the same without names and binaries: the comparison proves nothing"
done
grep -q "train_sim: not found" "$t/away-bare/summary" || say "without names or binaries: summary does not say train_sim was not found"
# without names, a debug directory by build-id names them as the binaries did
"$G" summary --width 120 --debug-dir "$dbg" "$bare" 2>&1 | sed "s|$bare|TRACES|g; s|$out|TRACES|g" >"$t/away-debug"
cmp -s "$t/host-bare/summary" "$t/away-debug" || { say "summary --debug-dir: not what the binaries gave"; diff "$t/host-bare/summary" "$t/away-debug" | head -6; }
grep -q "worker (train_sim.c:" "$t/away-debug" || say "summary --debug-dir: train_sim's frames not named"
exit $fail
