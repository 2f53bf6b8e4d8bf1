#!/bin/sh
# layers.sh: the preload library's objects and the CLI's call each other one way only (scripts/check-layers.py), but for the calls up named here with their reasons; and the check itself finds a cycle.
# Usage: layers.sh BUILD_DIR (run from the repository root).
set -u
b="$1"
check="python3 scripts/check-layers.py"
command -v nm >/dev/null || { echo "nm (binutils) is not installed: layers not checked"; exit 77; }
fail=0
bad() { echo "$*"; fail=1; }

# The one call up, for a reason (docs/layers.md):
# - scope -> group: group.c is scope.c's short way for user groups and falls back to it;
#   scope.c's slow path tells the repeated groups that a group opened at depth 0, that a
#   scope began inside one, and that one ended without its members done.
# the CLI's objects: $b/obj-san/tools in a sanitized build (SAN=1), else $b/obj/tools
tools_obj="$b/obj/tools"
[ -d "$b/obj-san/tools" ] && tools_obj="$b/obj-san/tools"
$check --allow scope:group "$b/obj/libinterpose=libinterpose" "$tools_obj=tools" ||
  bad "a cycle in the link graph (above): make the new call go down, or say here why not"

# The check finds what it is for: a cycle, an allowed edge that is gone, a clean graph.
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
mkdir "$t/loop" "$t/dag"
printf 'int b(void);\nint a(void) { return b(); }\n' >"$t/a.c"
printf 'int a(void);\nint b(void) { return a(); }\n' >"$t/b.c"
printf 'int b(void) { return 1; }\n' >"$t/b2.c"
cc -c -o "$t/loop/a.o" "$t/a.c" && cc -c -o "$t/loop/b.o" "$t/b.c" &&
  cp "$t/loop/a.o" "$t/dag/a.o" && cc -c -o "$t/dag/b.o" "$t/b2.c" || bad "cc failed"
out=$($check "$t/loop"); rc=$?
[ $rc = 1 ] || bad "a -> b -> a: exit $rc, not 1"
echo "$out" | grep -q "a cycle of 2 files: a b" || bad "a -> b -> a not named: $out"
$check --allow b:a "$t/loop" >/dev/null || bad "b -> a allowed: still a cycle"
$check "$t/dag" >/dev/null || bad "a -> b alone is no cycle"
out=$($check --allow b:a "$t/dag"); rc=$?
[ $rc = 1 ] && echo "$out" | grep -q "b -> a is not in the graph" ||
  bad "an allowed edge that is gone: exit $rc: $out"
exit $fail
