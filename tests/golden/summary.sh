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
"$b/gpumemtrace" summary --no-symbols --csv -o "$t/tables" "$d/demo-r0.gmt" "$d/demo-r1.gmt" 2>>"$t/err" || { echo "summary --csv -o: exit $?"; fail=1; }
# the tables as one golden file: each under a line naming it
for f in "$t/tables"/*.csv; do echo "==> ${f##*/} <=="; cat "$f"; done >"$t/csv"
"$b/gpumemtrace" summary --no-symbols --csv --table sites "$d/demo-r0.gmt" "$d/demo-r1.gmt" >"$t/sites" 2>>"$t/err" || { echo "summary --csv --table: exit $?"; fail=1; }
cmp -s "$t/sites" "$t/tables/sites.csv" || { echo "summary --csv --table sites: not sites.csv"; fail=1; }
"$b/gpumemtrace" summary --no-symbols --json "$d/demo-r0.gmt" "$d/demo-r1.gmt" >"$t/job.json" 2>>"$t/err" || { echo "summary --json (job): exit $?"; fail=1; }
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
# every CSV file parses with one header, and its figures are the JSON's; a figure made
# wrong on purpose must fail the same check
if command -v python3 >/dev/null; then
  check='
import csv, json, os, sys
tables, doc = sys.argv[1], json.load(open(sys.argv[2]))
tamper = len(sys.argv) > 3
t = {}
for name in sorted(os.listdir(tables)):
    with open(os.path.join(tables, name), newline="") as f:
        rows = list(csv.reader(f))
    assert rows, name + ": no header"
    head = rows[0]
    assert "section" not in head and len(set(head)) == len(head), name + ": header " + str(head)
    assert all(len(r) == len(head) for r in rows[1:]), name + ": a row of another width"
    t[name[:-4]] = [dict(zip(head, r)) for r in rows[1:]]
if tamper:
    t["devices"][0]["peak_bytes"] = str(int(t["devices"][0]["peak_bytes"]) + 1)
traces = doc["traces"]
assert sorted(r["file"] for r in t["traces"]) == sorted(x["file"] for x in traces)
for x in traces:
    f = x["file"]
    dev = {int(r["device"]): int(r["peak_bytes"]) for r in t["devices"] if r["file"] == f}
    assert dev == {d["device"]: d["peak_bytes"] for d in x["devices"]}, f + ": peaks " + str(dev)
    sites = [r for r in t["sites"] if r["file"] == f]
    assert len(sites) == len(x["sites"]) and int(sites[0]["live_at_peak_bytes"]) == x["sites"][0]["live_at_peak_bytes"], f + ": top site"
    calls = sum(int(r["calls"]) for r in t["collectives"] if r["file"] == f)
    assert calls == sum(c["calls"] for c in x["collectives"]) > 0, f + ": NCCL calls " + str(calls)
ranks = {r["file"]: int(r["peak_bytes"]) for r in t["job_ranks"]}
assert len(ranks) == doc["job"]["traces"] and max(ranks.values()) == doc["job"]["peak"]["max_bytes"]
'
  python3 -c "$check" "$t/tables" "$t/job.json" || { echo "summary --csv: the tables disagree with --json"; fail=1; }
  python3 -c "$check" "$t/tables" "$t/job.json" tamper 2>/dev/null && { echo "summary --csv: the check passed a wrong peak"; fail=1; }
fi
exit $fail
