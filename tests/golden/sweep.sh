#!/bin/sh
# sweep.sh: mutated traces (and the stored ones that once failed) through every command: exit 0/1/2, no signal, no hang, valid JSON, one-line messages naming the file.
# Usage: sweep.sh BUILD_DIR (run from the repository root). Deterministic: seed 1.
set -u
b="$1"
command -v python3 >/dev/null 2>&1 || { echo "sweep: python3 not found"; exit 1; }
# a sanitizer build runs each command several times slower: fewer mutants, same seed
n=600
grep -q __asan_init "$b/gpumemtrace" 2>/dev/null && n=150
exec python3 tests/fuzz/sweep.py "$b/gpumemtrace" tests/golden/*.gmt tests/fuzz/corpus/group-repeat.gmt \
  --count "$n" --seed 1 --timeout 20 --replay tests/fuzz/regress/sweep --keep "$b/tests/sweep-failed"
