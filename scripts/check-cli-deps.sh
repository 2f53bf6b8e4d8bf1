#!/bin/sh
# check-cli-deps.sh: where elfutils' static archives exist, the CLI must have linked them in
# (it has to start on machines without libdw): fail the build when it needs libdw.so anyway.
# The same for SQLite (export --format sqlite): libsqlite3.a, where it exists, is linked in.
set -eu
cli="$1"
for a in /usr/lib/x86_64-linux-gnu/libsqlite3.a /usr/lib/aarch64-linux-gnu/libsqlite3.a /usr/lib64/libsqlite3.a /usr/lib/libsqlite3.a; do
  [ -f "$a" ] || continue
  if readelf -d "$cli" | grep -q 'NEEDED.*\[libsqlite3\.so'; then
    echo "check-cli-deps: $cli links libsqlite3 dynamically although $a exists: run 'make clean' and build again" >&2
    exit 1
  fi
  break
done
for a in /usr/lib/x86_64-linux-gnu/libdw.a /usr/lib/aarch64-linux-gnu/libdw.a /usr/lib64/libdw.a /usr/lib/libdw.a; do
  [ -f "$a" ] || continue
  if readelf -d "$cli" | grep -q 'NEEDED.*\[libdw\.so'; then
    echo "check-cli-deps: $cli links libdw dynamically although $a exists: run 'make clean' and build again" >&2
    exit 1
  fi
  exit 0
done
