#!/bin/sh
# run-tests.sh: runs every Criterion suite and every golden check; prints one closing line.
# Usage: run-tests.sh BUILD_DIR TEST_BIN...
# Each suite's line gives its seconds. A suite still running after GMT_SUITE_TIMEOUT s
# (default 1200; the slowest takes about 100 s under ASan on two cores) is killed and
# fails as TIMEOUT: a hang names itself instead of stalling the run.
#
# Skips are counted apart, never as passes. A Criterion test skips with cr_skip_test(why);
# a golden script skips by exiting with status 77 (automake's), its last line of output
# saying why. The closing line is `N passed, N failed, N skipped` (CI reads it), then one
# line per skipped test: `skipped: NAME: why`.
build="$1"; shift
limit=${GMT_SUITE_TIMEOUT:-1200}
SKIP_STATUS=77
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }
# bounded CMD...: runs CMD under the limit; status 124 when it overran and was killed
bounded() {
  if command -v timeout >/dev/null; then timeout -k 10 "$limit" "$@"; else "$@"; fi
}
# sanitized builds: leaks inside Criterion itself are not ours (tests/lsan.supp says which)
export LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
pass=0; fail=0; skip=0; failed=""
skips="$build/tests/skipped.txt"
: >"$skips"
for t in "$@"; do
  name=$(basename "$t")
  log="$build/tests/$name.log"
  tap="$build/tests/$name.tap"
  rm -f "$tap"
  t0=$(now)
  bounded "$t" --jobs 2 --short-filename --tap="$tap" >"$log" 2>&1; rc=$?
  if [ $rc = 0 ]; then st=ok; elif [ $rc = 124 ] || [ $rc = 137 ]; then st=TIMEOUT; else st=FAIL; fi
  tested=$(sed -n 's/.*Tested: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
  passing=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
  tested=${tested:-0}; passing=${passing:-0}
  # Criterion leaves skipped tests out of its counts; its TAP says "ok - s::t  # SKIP why"
  skipped=0
  if [ -f "$tap" ]; then
    sed -n 's/^ok - \([^ ]*\)  *# SKIP \(.*\)$/\1: \2/p' "$tap" >"$tap.skips"
    skipped=$(wc -l <"$tap.skips" | tr -d ' ')
    sed 's/^/skipped: /' "$tap.skips" >>"$skips"
    rm -f "$tap.skips"
  fi
  skip=$((skip + skipped))
  if [ "$st" = ok ]; then pass=$((pass + passing)); fail=$((fail + tested - passing));
  else pass=$((pass + passing)); f=$((tested - passing)); [ "$f" -gt 0 ] || f=1; fail=$((fail + f)); failed="$failed $name"; fi
  sk=""; [ "$skipped" -gt 0 ] && sk=", $skipped skipped"
  printf '%-28s %s (%s/%s%s) %s\n' "$name" "$st" "$passing" "$tested" "$sk" "$(secs "$t0")"
  [ "$st" = ok ] || sed 's/^/    /' "$log" | grep -v '^    \[----\]' | tail -n 40
done
for g in tests/golden/*.sh; do
  [ -f "$g" ] || continue
  name="golden/$(basename "$g" .sh)"
  glog="$build/tests/$(basename "$g").log"
  t0=$(now)
  bounded sh "$g" "$build" >"$glog" 2>&1; rc=$?
  if [ $rc = 0 ]; then pass=$((pass + 1)); st=ok;
  elif [ $rc = $SKIP_STATUS ]; then
    skip=$((skip + 1)); st=SKIP
    why=$(grep -v '^[[:space:]]*$' "$glog" | tail -n 1)
    echo "skipped: $name: ${why:-(no reason given)}" >>"$skips"
  else fail=$((fail + 1)); st=FAIL; [ $rc = 124 ] && st=TIMEOUT; failed="$failed $name"; fi
  printf '%-28s %s %s\n' "$name" "$st" "$(secs "$t0")"
  [ "$st" = ok ] || [ "$st" = SKIP ] || sed 's/^/    /' "$glog" | tail -n 40
done
echo "$pass passed, $fail failed, $skip skipped"
cat "$skips"
[ "$fail" = 0 ] || { echo "failed:$failed" >&2; exit 1; }
