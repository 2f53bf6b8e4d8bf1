#!/bin/sh
# summary.sh: golden check of `gpumemtrace summary` (text, JSON, CSV) and `merge` on stored traces of `make demo`'s job.
# Usage: summary.sh BUILD_DIR (run from the repository root). --no-symbols keeps the output
# independent of the binaries on this machine. Refresh: sh tests/golden/summary.sh BUILD_DIR --update
set -u
b="$1"; d=tests/golden
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail=0
"$b/gpumemtrace" summary --no-symbols --width 120 "$d/demo-r0.gmt" "$d/demo-r1.gmt" >"$t/text" 2>"$t/err" || { echo "summary: exit $?"; fail=1; }
"$b/gpumemtrace" summary --no-symbols --json "$d/demo-r0.gmt" >"$t/json" 2>>"$t/err" || { echo "summary --json: exit $?"; fail=1; }
"$b/gpumemtrace" summary --no-symbols --csv "$d/demo-r0.gmt" >"$t/csv" 2>>"$t/err" || { echo "summary --csv: exit $?"; fail=1; }
"$b/gpumemtrace" merge --no-symbols "$d/demo-r1.gmt" "$d/demo-r0.gmt" >"$t/merge" 2>>"$t/err" || { echo "merge: exit $?"; fail=1; }
[ -s "$t/err" ] && { echo "unexpected stderr:"; cat "$t/err"; fail=1; }
if [ "${2:-}" = --update ]; then
  cp "$t/text" "$d/summary.expected"; cp "$t/json" "$d/summary-json.expected"; cp "$t/csv" "$d/summary-csv.expected"; cp "$t/merge" "$d/merge.expected"
  exit 0
fi
diff -u "$d/summary.expected" "$t/text" || fail=1
diff -u "$d/summary-json.expected" "$t/json" || fail=1
diff -u "$d/summary-csv.expected" "$t/csv" || fail=1
diff -u "$d/merge.expected" "$t/merge" || fail=1
# the JSON must parse, and say what the text says
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); t=d["traces"][0]; assert d["schema"]=="gpumemtrace.summary/1"; assert t["rank"]==0; assert t["devices"][0]["peak_bytes"]>0; s=t["sites"][0]; assert s["frames"][s["site"]]==s["stack"].split(" < ")[s["site"]]' "$t/json" 2>/dev/null || { command -v python3 >/dev/null && { echo "summary --json: not valid or missing fields"; fail=1; }; }
exit $fail
