#!/bin/sh
# check.sh: golden check of `gpumemtrace check`: the baseline written from the stored sample trace, and a
# check of the sample against a baseline it outgrew (exit 1, stored output). Refresh: see tests/golden/check-*.
# Usage: check.sh BUILD_DIR (run from the repository root).
set -u
b="$1"; d=tests/golden
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail=0

"$b/gpumemtrace" check "$d/sample.gmt" --write-baseline - --max-growth 5%,steady=0% >"$t/out" 2>"$t/err"; rc=$?
[ "$rc" = 0 ] || { echo "write-baseline: exit $rc, expected 0"; cat "$t/err"; fail=1; }
diff -u "$d/check-baseline.expected" "$t/out" || fail=1

"$b/gpumemtrace" check "$d/sample.gmt" --baseline "$d/check-small.json" --verbose --junit "$t/junit.xml" >"$t/out" 2>"$t/err"; rc=$?
[ "$rc" = 1 ] || { echo "check against check-small.json: exit $rc, expected 1"; cat "$t/err"; fail=1; }
[ -s "$t/err" ] && { echo "unexpected stderr:"; cat "$t/err"; fail=1; }
diff -u "$d/check-fail.expected" "$t/out" || fail=1
# when, where and how long vary from run to run
sed -e "s|$t/||" -e 's/ time="[0-9.]*"/ time="T"/g' -e 's/ timestamp="[0-9T:-]*"/ timestamp="S"/' \
    -e 's/ hostname="[^"]*"/ hostname="H"/' "$t/junit.xml" | diff -u "$d/check-junit.expected" - || fail=1

"$b/gpumemtrace" check "$d/sample.gmt" --baseline "$d/check-malformed.json" >"$t/out" 2>"$t/err"; rc=$?
[ "$rc" = 2 ] || { echo "check against check-malformed.json: exit $rc, expected 2"; fail=1; }
diff -u "$d/check-malformed.stderr" "$t/err" || fail=1
exit $fail
