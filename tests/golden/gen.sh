#!/bin/sh
# gen.sh: the stored golden traces and fuzz seeds are exactly what tests/golden/gen_golden.c writes.
# Usage: gen.sh BUILD_DIR (run from the repository root). Refresh: make golden-update.
set -u
b="$1"
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
mkdir -p "$t/golden" "$t/corpus"
"$b/tests/gen_golden" "$t/golden" "$t/corpus" || { echo "gen_golden failed"; exit 1; }
fail=0
for f in "$t"/golden/*; do
  cmp "$f" "tests/golden/$(basename "$f")" || fail=1
done
for f in "$t"/corpus/*; do
  cmp "$f" "tests/fuzz/corpus/$(basename "$f")" || fail=1
done
exit $fail
