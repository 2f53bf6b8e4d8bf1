#!/bin/sh
# alike.sh: golden check of ranks alike shown once, answer first: `explain --what-if`, `diff` and `check --aggregate` on the stored traces of `make demo`'s 2-rank job.
# Usage: alike.sh BUILD_DIR (run from the repository root). --no-symbols keeps the output
# independent of the binaries on this machine. Refresh: sh tests/golden/alike.sh BUILD_DIR --update
set -u
b="$1"; d=tests/golden
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail=0
mkdir "$t/base" "$t/new"
cp "$d/demo-r0.gmt" "$d/demo-r1.gmt" "$t/base/"
cp "$d/demo-r0.gmt" "$d/demo-r1.gmt" "$t/new/"
"$b/gpumemtrace" explain --no-symbols --what-if NCCL_BUFFSIZE=1M "$d/demo-r0.gmt" "$d/demo-r1.gmt" \
  >"$t/explain" 2>"$t/err" || { echo "explain: exit $?"; fail=1; }
"$b/gpumemtrace" check "$d/demo-r0.gmt" "$d/demo-r1.gmt" --write-baseline "$t/bl.json" \
  >/dev/null 2>>"$t/err" || { echo "check --write-baseline: exit $?"; fail=1; }
"$b/gpumemtrace" check "$d/demo-r0.gmt" "$d/demo-r1.gmt" --baseline "$t/bl.json" --aggregate --verbose \
  >"$t/check" 2>>"$t/err" || { echo "check --aggregate: exit $?"; fail=1; }
# the directories' names vary from run to run
(cd "$t" && "$OLDPWD/$b/gpumemtrace" diff --top 3 base new) >"$t/diff" 2>>"$t/err" || { echo "diff: exit $?"; fail=1; }
[ -s "$t/err" ] && { echo "unexpected stderr:"; cat "$t/err"; fail=1; }
if [ "${2:-}" = --update ]; then
  cp "$t/explain" "$d/alike-explain.expected"; cp "$t/check" "$d/alike-check.expected"
  cp "$t/diff" "$d/alike-diff.expected"
  exit 0
fi
diff -u "$d/alike-explain.expected" "$t/explain" || fail=1
diff -u "$d/alike-check.expected" "$t/check" || fail=1
diff -u "$d/alike-diff.expected" "$t/diff" || fail=1
# the answer is in the first lines, and the ranks alike are explained once
sed -n 3p "$t/explain" | grep -q "what if NCCL_BUFFSIZE=1M: saves 4 MiB device each" ||
  { echo "explain: the what-if's answer is not on line 3"; fail=1; }
[ "$(grep -c '^communicator #1 ' "$t/explain")" = 1 ] || { echo "explain: ranks alike explained more than once"; fail=1; }
exit $fail
