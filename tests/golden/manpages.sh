#!/bin/sh
# manpages.sh: the man pages and the bash and zsh completion agree with `--help`: every command has a page and a completion entry, every option its help names is in both, and every option completed is one the command takes.
# Usage: manpages.sh BUILD_DIR (run from the repository root).
set -u
b="$1"; cli="$(cd "$b" && pwd)/gpumemtrace"
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
fail=0
bad() { echo "$*"; fail=1; }

"$cli" __complete bash >"$t/bash" || bad "__complete bash: exit $?"
"$cli" __complete zsh >"$t/zsh" || bad "__complete zsh: exit $?"
"$cli" __man >"$t/gpumemtrace.1" || bad "__man: exit $?"
bash -n "$t/bash" || bad "the bash completion does not parse"
if command -v zsh >/dev/null; then zsh -n "$t/zsh" || bad "the zsh completion does not parse"
else echo "(zsh not installed: its completion's syntax not checked)"; fi

# the commands, as --help lists them
cmds=$("$cli" --help | sed -n '/^Commands:/,/^$/p' | awk 'NF >= 2 && /^   / {print $1}')
[ -n "$cmds" ] || bad "no commands in --help"
for c in $cmds; do
  "$cli" __man "$c" >"$t/$c.1" || { bad "__man $c: exit $?"; continue; }
  # a roff line that starts with a space breaks the paragraph: an option alone on its
  # help line must not begin its meaning with one
  sp=$(awk 'prev ~ /^\\fB\\-/ && /^ / {print; exit} {prev = $0}' "$t/$c.1")
  [ -z "$sp" ] || bad "$c.1: an option's meaning starts with a space: $sp"
  grep -q "^\.TH GPUMEMTRACE\\\\-$(echo "$c" | tr a-z A-Z) 1 " "$t/$c.1" || bad "$c: no .TH header"
  grep -q "^\\\\fBgpumemtrace\\\\-$c\\\\fR(1)" "$t/gpumemtrace.1" || bad "gpumemtrace(1) names no gpumemtrace-$c(1)"
  if command -v groff >/dev/null; then
    w=$(groff -man -Tutf8 -ww -z "$t/$c.1" 2>&1); [ -z "$w" ] || bad "$c.1: groff says: $w"
  fi
  bline=$(grep "^    $c) opts=" "$t/bash") || bad "bash: no entry for $c"
  sed -n "/^  $c) opts=(/,/^  ) ;;/p" "$t/zsh" >"$t/$c.zsh"
  [ -s "$t/$c.zsh" ] || bad "zsh: no entry for $c"
  # the options the help names: its usage lines and the entries of its options list
  "$cli" "$c" --help >"$t/$c.help"
  {
    sed -n '1,/^$/p' "$t/$c.help" | grep -E '^(usage: |       )gpumemtrace' |
      grep -oE '(^|[ [])--?[A-Za-z][A-Za-z0-9-]*' | tr -d ' ['
    sed -n '/^options:$/,/^[^ ]/p' "$t/$c.help" | grep -E '^  -' |
      sed -E 's/^  (-[A-Za-z]|--[A-Za-z][A-Za-z0-9-]*)(, (--[A-Za-z][A-Za-z0-9-]*))?.*/\1 \3/' | tr ' ' '\n'
    echo --help
  } | grep . | sort -u >"$t/$c.opts"
  [ -s "$t/$c.opts" ] || bad "$c: no option found in --help"
  while read -r o; do
    esc=$(printf '%s' "$o" | sed 's/-/\\\\-/g')
    grep -q "\\\\fB$esc\\\\fR" "$t/$c.1" || bad "$c: $o is in --help but not in gpumemtrace-$c(1)"
    case " $(echo "$bline" | sed 's/.*opts="\(.*\)".*/\1/') " in *" $o "*) ;; *) bad "$c: $o is in --help but not in the bash completion" ;; esac
    grep -q "^    '$o\[" "$t/$c.zsh" || bad "$c: $o is in --help but not in the zsh completion"
  done <"$t/$c.opts"
  # and nothing completed that the command does not take (given a value, in case it wants one)
  for o in $(echo "$bline" | sed 's/.*opts="\(.*\)".*/\1/'); do
    [ "$o" = --help ] && continue
    (mkdir -p "$t/run" && cd "$t/run" && "$cli" "$c" "$o" x </dev/null >/dev/null 2>"$t/err")
    grep -q "unknown option" "$t/err" && bad "$c: completes $o, which it does not take: $(head -n 1 "$t/err")"
  done
done

# the completion answers, in bash itself
cat >"$t/try.bash" <<EOB
. "$t/bash"
try() { COMP_WORDS=("\$@"); COMP_CWORD=\$((\$# - 1)); COMPREPLY=(); _gpumemtrace; echo "\${COMPREPLY[*]}"; }
try gpumemtrace sum
try gpumemtrace summary --js
try gpumemtrace check --write
try gpumemtrace help exp
EOB
printf 'summary\n--json\n--write-baseline\nexplain export\n' >"$t/want"
bash "$t/try.bash" >"$t/got" 2>&1 || bad "the bash completion failed to run"
diff -u "$t/want" "$t/got" || bad "the bash completion's answers differ"

"$cli" __man nosuch >/dev/null 2>"$t/err"; rc=$?
[ "$rc" = 2 ] && [ "$(wc -l <"$t/err")" = 1 ] || bad "__man nosuch: exit $rc, expected 2 with one line"
"$cli" --help | grep -q __ && bad "--help lists the build's own commands"
exit $fail
