#!/bin/sh
# dump.sh: golden check of `gpumemtrace dump` on the stored sample trace and on a copy cut mid-record.
# Usage: dump.sh BUILD_DIR (run from the repository root). Refresh: make golden-update.
set -u
b="$1"; d=tests/golden
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail=0

"$b/gpumemtrace" dump "$d/sample.gmt" >"$t/out" 2>"$t/err"; rc=$?
[ "$rc" = 0 ] || { echo "dump sample.gmt: exit $rc, expected 0"; fail=1; }
[ -s "$t/err" ] && { echo "dump sample.gmt: unexpected stderr:"; cat "$t/err"; fail=1; }
diff -u "$d/dump.expected" "$t/out" || fail=1

"$b/gpumemtrace" dump "$d/cut.gmt" >"$t/out" 2>"$t/err"; rc=$?
[ "$rc" = 0 ] || { echo "dump cut.gmt: exit $rc, expected 0 (a cut trace is readable)"; fail=1; }
diff -u "$d/dump-cut.expected" "$t/out" || fail=1
diff -u "$d/dump-cut.stderr" "$t/err" || fail=1
exit $fail
