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
exit $fail
