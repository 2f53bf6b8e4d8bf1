#!/bin/sh
# phases.sh: golden check of NVTX phases: `dump` and `summary` (text, JSON, --step) of tests/golden/nvtx.gmt, which gen_golden.c writes.
# Usage: phases.sh BUILD_DIR (run from the repository root). Refresh: sh tests/golden/phases.sh BUILD_DIR --update
set -u
b="$1"; d=tests/golden
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail=0
{
  "$b/gpumemtrace" dump "$d/nvtx.gmt" | grep NVTX
  "$b/gpumemtrace" summary --no-symbols "$d/nvtx.gmt" | sed -n '/^Device memory by phase/,/^$/p'
  "$b/gpumemtrace" summary --no-symbols --step 'EPOCH' "$d/nvtx.gmt" | sed -n '/^  steps:/,/^$/p'
  "$b/gpumemtrace" summary --no-symbols --json "$d/nvtx.gmt" |
    python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin)["traces"][0]["phases"], indent=1, sort_keys=True))'
} >"$t/out" 2>"$t/err" || { echo "a command failed"; fail=1; }
[ -s "$t/err" ] && { echo "unexpected stderr:"; cat "$t/err"; fail=1; }
if [ "${2:-}" = --update ]; then
  cp "$t/out" "$d/phases.expected"
  exit 0
fi
diff -u "$d/phases.expected" "$t/out" || fail=1
exit $fail
