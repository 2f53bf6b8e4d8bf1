#!/bin/sh
# install.sh: `make install`'s layout works from any prefix: installed, then moved as a whole, the CLI finds its library, traces the demo's program and summarises it; uninstall leaves no file behind.
# Usage: install.sh BUILD_DIR (run from the repository root).
set -u
b="$1"
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail=0
bad() { echo "$*"; fail=1; }
prog="$b/examples/train_sim"
[ -x "$prog" ] || { echo "$prog is missing (make tests builds it)"; exit 1; }

./scripts/install.sh install "$b" "$t/stage" /opt/gmt >"$t/log" 2>&1 || { cat "$t/log"; bad "install failed"; }
r="$t/stage/opt/gmt"
for f in bin/gpumemtrace lib/gpumemtrace/libgpumemtrace.so include/gpumemtrace.h \
         share/man/man1/gpumemtrace.1 share/man/man1/gpumemtrace-summary.1 \
         share/bash-completion/completions/gpumemtrace share/zsh/site-functions/_gpumemtrace; do
  [ -f "$r/$f" ] || bad "not installed: $f"
done
cmp -s "$b/libgpumemtrace.so" "$r/lib/gpumemtrace/libgpumemtrace.so" || bad "the installed library is not the one built"

# the prefix moved elsewhere: nothing in it names where it was installed
mv "$t/stage/opt/gmt" "$t/moved"
unset GPUMEMTRACE_LIB
"$t/moved/bin/gpumemtrace" run -q -o "$t/out" -- "$prog" 2 >"$t/run.out" 2>"$t/run.err"; rc=$?
[ "$rc" = 0 ] || { cat "$t/run.err"; bad "run from the moved prefix: exit $rc"; }
grep -q "libgpumemtrace.so not found" "$t/run.err" && bad "run did not find the library beside it"
n=$(find "$t/out" -name '*.gmt' | wc -l)
[ "$n" -ge 1 ] || bad "run from the moved prefix wrote no trace"
"$t/moved/bin/gpumemtrace" summary --no-symbols "$t/out" >"$t/sum" 2>&1 || bad "summary: exit $?"
grep -q "peak" "$t/sum" || { head -n 20 "$t/sum"; bad "summary says nothing of a peak"; }

# a relative PREFIX is refused with one line, exit 2
./scripts/install.sh install "$b" "$t/x" opt >/dev/null 2>"$t/err"; rc=$?
[ "$rc" = 2 ] && [ "$(wc -l <"$t/err")" = 1 ] || bad "relative PREFIX: exit $rc, expected 2 and one line"

./scripts/install.sh install "$b" "$t/stage2" /usr >/dev/null 2>&1 || bad "second install failed"
./scripts/install.sh uninstall "$b" "$t/stage2" /usr >/dev/null 2>&1 || bad "uninstall failed"
left=$(find "$t/stage2" ! -type d)
[ -z "$left" ] || bad "uninstall left: $left"
exit $fail
