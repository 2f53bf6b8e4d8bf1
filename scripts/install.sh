#!/bin/sh
# install.sh: installs (or removes) the CLI, the preload library, its header, the man pages and the bash and zsh completion under DESTDIR/PREFIX.
# Usage: install.sh install|uninstall BUILD DESTDIR PREFIX   (mk/install.mk: make install, make uninstall)
# The layout keeps the library where `gpumemtrace run` looks for it, relative to the CLI
# itself (bin/../lib/gpumemtrace/): a prefix moved elsewhere as a whole still works.
# The man pages and completion scripts are written by the CLI just built, from its own
# command table and help texts.
set -eu
what="$1"; build="$2"; dest="$3"; prefix="$4"
case "$prefix" in /*) ;; *) echo "install.sh: PREFIX must be an absolute path, not '$prefix'" >&2; exit 2 ;; esac
root="$dest$prefix"
bin="$root/bin"; lib="$root/lib/gpumemtrace"; inc="$root/include"
man1="$root/share/man/man1"
bashc="$root/share/bash-completion/completions"; zshc="$root/share/zsh/site-functions"
# the commands, from the table the CLI is built from (uninstall works without a build)
cmds=$(sed -n 's/^ *X(\([a-z_]*\), ".*/\1/p' "$(dirname "$0")/../tools/cli.h")
say() { [ -n "${V:-}" ] && echo "$*"; return 0; }

case "$what" in
install)
  cli="$build/gpumemtrace"
  for f in "$cli" "$build/libgpumemtrace.so"; do
    [ -f "$f" ] || { echo "install.sh: $f is missing: run make first" >&2; exit 2; }
  done
  install -d "$bin" "$lib" "$inc" "$man1" "$bashc" "$zshc"
  install -m 755 "$cli" "$bin/gpumemtrace"
  install -m 755 "$build/libgpumemtrace.so" "$lib/libgpumemtrace.so"
  install -m 644 libinterpose/gpumemtrace.h "$inc/gpumemtrace.h"
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  "$cli" __man >"$tmp/gpumemtrace.1"
  for c in $cmds; do "$cli" __man "$c" >"$tmp/gpumemtrace-$c.1"; done
  install -m 644 "$tmp"/*.1 "$man1/"
  "$cli" __complete bash >"$tmp/gpumemtrace"
  "$cli" __complete zsh >"$tmp/_gpumemtrace"
  install -m 644 "$tmp/gpumemtrace" "$bashc/gpumemtrace"
  install -m 644 "$tmp/_gpumemtrace" "$zshc/_gpumemtrace"
  echo "installed gpumemtrace in $root (bin/gpumemtrace, lib/gpumemtrace/libgpumemtrace.so, man pages, completion)"
  ;;
uninstall)
  rm -f "$bin/gpumemtrace" "$lib/libgpumemtrace.so" "$inc/gpumemtrace.h" \
        "$man1/gpumemtrace.1" "$bashc/gpumemtrace" "$zshc/_gpumemtrace"
  for c in $cmds; do rm -f "$man1/gpumemtrace-$c.1"; done
  # our own directory goes; the shared ones stay, unless the install made them empty
  rmdir "$lib" 2>/dev/null || true
  for d in "$man1" "$root/share/man" "$bashc" "$root/share/bash-completion" "$zshc" \
           "$root/share/zsh" "$root/share" "$bin" "$inc" "$root/lib"; do
    rmdir "$d" 2>/dev/null || true
  done
  echo "removed gpumemtrace from $root"
  ;;
*) echo "install.sh: install or uninstall, not '$what'" >&2; exit 2 ;;
esac
