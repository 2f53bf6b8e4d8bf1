#!/bin/sh
# check-deps.sh: makes sure the build's Debian packages are there; installs them when it can.
set -eu
missing=""
have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
have_pkg libunwind-dev || [ -f /usr/include/libunwind.h ] || missing="$missing libunwind-dev"
[ -f /usr/include/elfutils/libdwfl.h ] || missing="$missing libdw-dev"
# libdw.a needs libbz2.a beside it to be linked in statically (libdw-dev does not pull it in)
have_pkg libbz2-dev || [ -f /usr/include/bzlib.h ] || missing="$missing libbz2-dev"
[ -f /usr/include/criterion/criterion.h ] || missing="$missing libcriterion-dev"
# the CLI writes SQLite (export --format sqlite) through libsqlite3, linked in from libsqlite3.a
[ -f /usr/include/sqlite3.h ] || missing="$missing libsqlite3-dev"
command -v patch >/dev/null 2>&1 || missing="$missing patch"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" = 0 ]; then sudo=""; elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; else
  echo "gpumemtrace: missing packages:$missing; install them with: apt-get install$missing" >&2; exit 2
fi
echo "gpumemtrace: installing$missing" >&2
$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq $missing >/dev/null || {
  echo "gpumemtrace: could not install$missing; run: sudo apt-get install$missing" >&2; exit 2; }
