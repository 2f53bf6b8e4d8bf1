#!/bin/sh
# fuzz-regress.sh: every fuzz target's seeds and stored regression inputs (tests/fuzz/regress/TARGET/) through its entry function, built without libFuzzer in this build's mode.
# Usage: fuzz-regress.sh BUILD_DIR (run from the repository root).
set -u
b="$1"
fail=0
traces="tests/fuzz/corpus tests/fuzz/seeds/traces"
for t in reader summary models baseline args watch; do
  case $t in
    baseline) seeds=tests/fuzz/seeds/baseline ;;
    args) seeds=tests/fuzz/seeds/args ;;
    *) seeds=$traces ;;
  esac
  reg=""
  [ -d "tests/fuzz/regress/$t" ] && reg="tests/fuzz/regress/$t"
  # shellcheck disable=SC2086
  timeout 300 "$b/tests/fuzz-replay-$t" $seeds $reg || { echo "fuzz-replay-$t failed"; fail=1; }
done
# The args target keeps every operand in a directory of its own: none of its inputs may
# read the directory above it (tests/fuzz/regress/args/glob-matches-parent, ".?", did).
# That parent holds a FIFO trace whose writer waits to be opened: a reader that opens it
# lets the writer through, which leaves its mark.
t=$(mktemp -d) || exit 1
mkfifo "$t/trap.gmt" || { echo "mkfifo failed"; exit 1; }
( exec 3>"$t/trap.gmt"; echo opened >"$t/mark" ) &
writer=$!
TMPDIR="$t" timeout 300 "$b/tests/fuzz-replay-args" tests/fuzz/seeds/args tests/fuzz/regress/args >/dev/null 2>&1
[ -e "$t/mark" ] && { echo "fuzz-replay-args read the directory above its own"; fail=1; }
kill "$writer" 2>/dev/null
wait "$writer" 2>/dev/null
rm -rf "$t"
exit $fail
