#!/bin/sh
# run-tests.sh: runs every Criterion suite and every golden check; prints one closing line.
# Usage: run-tests.sh BUILD_DIR TEST_BIN...
build="$1"; shift
# sanitized builds: leaks inside Criterion itself are not ours (tests/lsan.supp says which)
export LSAN_OPTIONS="suppressions=$(pwd)/tests/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
pass=0; fail=0; failed=""
for t in "$@"; do
  name=$(basename "$t")
  log="$build/tests/$name.log"
  if "$t" --jobs 2 --short-filename >"$log" 2>&1; then st=ok; else st=FAIL; fi
  tested=$(sed -n 's/.*Tested: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
  passing=$(sed -n 's/.*Passing: \([0-9]*\).*/\1/p' "$log" | tail -n 1)
  tested=${tested:-0}; passing=${passing:-0}
  if [ "$st" = ok ]; then pass=$((pass + passing)); fail=$((fail + tested - passing));
  else pass=$((pass + passing)); f=$((tested - passing)); [ "$f" -gt 0 ] || f=1; fail=$((fail + f)); failed="$failed $name"; fi
  printf '%-28s %s (%s/%s)\n' "$name" "$st" "$passing" "$tested"
  [ "$st" = ok ] || sed 's/^/    /' "$log" | grep -v '^    \[----\]' | tail -n 40
done
for g in tests/golden/*.sh; do
  [ -f "$g" ] || continue
  name="golden/$(basename "$g" .sh)"
  if sh "$g" "$build" >"$build/tests/$(basename "$g").log" 2>&1; then pass=$((pass + 1)); st=ok;
  else fail=$((fail + 1)); st=FAIL; failed="$failed $name"; fi
  printf '%-28s %s\n' "$name" "$st"
  [ "$st" = ok ] || sed 's/^/    /' "$build/tests/$(basename "$g").log" | tail -n 40
done
echo "$pass passed, $fail failed"
[ "$fail" = 0 ] || { echo "failed:$failed" >&2; exit 1; }
