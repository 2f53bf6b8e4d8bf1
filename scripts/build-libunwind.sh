#!/bin/sh
# build-libunwind.sh: builds Debian's libunwind source package as a position-independent
# static archive, because Debian's libunwind.a is compiled without -fPIC and cannot be
# linked into a shared object (the preload library must carry libunwind inside it: the
# machines it goes to often have no libunwind: the H200 hosts it was validated on have none). Output: $1/libunwind-pic/lib/libunwind.a.
# Uses apt's deb-src for Debian's own package (no other source), with a private apt state.
set -eu
out=$(cd "${1:-build}" 2>/dev/null && pwd || { mkdir -p "${1:-build}" && cd "${1:-build}" && pwd; })
dest="$out/libunwind-pic"
# -ftls-model=initial-exec: the archive goes into a library that is preloaded (static TLS,
# like our own variables), and libunwind's per-thread cache is then reached without a
# __tls_get_addr call per unwind. A change of these flags rebuilds (the stamp file).
cflags="-O2 -g -fPIC -fvisibility=hidden -ftls-model=initial-exec"
if [ -f "$dest/lib/libunwind.a" ] && [ "$(cat "$dest/.cflags" 2>/dev/null)" = "$cflags" ]; then
  touch "$dest/lib/libunwind.a" # up to date: newer than this script for make
  exit 0
fi
rm -rf "$dest"
work="$out/libunwind-src"
rm -rf "$work" && mkdir -p "$work/apt/lists/partial"
. /etc/os-release
suite="${VERSION_CODENAME:-bookworm}"
case "$ID" in
  debian) uri=http://deb.debian.org/debian; keyring=/usr/share/keyrings/debian-archive-keyring.gpg; comp=main ;;
  ubuntu) uri=http://archive.ubuntu.com/ubuntu; keyring=/usr/share/keyrings/ubuntu-archive-keyring.gpg; comp=main ;;
  *) echo "build-libunwind: unsupported distribution '$ID' (need Debian or Ubuntu)" >&2; exit 2 ;;
esac
cat > "$work/apt/src.sources" <<EOS
Types: deb-src
URIs: $uri
Suites: $suite
Components: $comp
Signed-By: $keyring
EOS
apt_opts="-o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts=$work/apt -o Dir::State::Lists=$work/apt/lists -o APT::Sandbox::User=root -qq"
echo "build-libunwind: fetching Debian's libunwind source package" >&2
apt-get $apt_opts update >/dev/null
(cd "$work" && apt-get $apt_opts source --download-only libunwind >/dev/null)
tarball=$(ls "$work"/libunwind_*.orig.tar.gz | head -n 1)
tar -xzf "$tarball" -C "$work"
src=$(ls -d "$work"/libunwind-*/ | head -n 1)
# Debian's patches (quilt series) are applied when present.
deb=$(ls "$work"/libunwind_*.debian.tar.xz 2>/dev/null | head -n 1 || true)
if [ -n "$deb" ]; then
  tar -xJf "$deb" -C "$src"
  if [ -f "$src/debian/patches/series" ]; then
    while read -r p; do
      case "$p" in ''|\#*) continue ;; esac
      patch -s -p1 -d "$src" < "$src/debian/patches/$p"
    done < "$src/debian/patches/series"
  fi
fi
echo "build-libunwind: building a PIC static libunwind (about a minute)" >&2
# configure's warnings (latex2man, for the man pages not built here) are no step for the
# user to take: its output goes to a log, shown only when the build fails.
log="$work/build.log"
(cd "$src" && ./configure -q --prefix="$dest" --with-pic --enable-static --disable-shared \
   --disable-minidebuginfo --disable-zlibdebuginfo --disable-tests --disable-documentation \
   --disable-coredump --disable-ptrace --disable-setjmp --disable-cxx-exceptions \
   CFLAGS="$cflags" \
 && make -s -j"$(nproc)" && make -s install) >"$log" 2>&1 ||
  { tail -n 40 "$log" >&2; echo "build-libunwind: the build failed (the end of its log above)" >&2; exit 1; }
rm -rf "$work"
test -f "$dest/lib/libunwind.a"
echo "$cflags" > "$dest/.cflags"
echo "build-libunwind: $dest/lib/libunwind.a" >&2
