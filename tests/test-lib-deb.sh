#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-lib-deb.sh - make deb (with DEB_BUILD_OPTIONS="nocheck noddebs":
# the unit tests run elsewhere in make check, and no debug symbol
# packages) builds libclio0, libclio-dev and clio,
# lintian-clean of errors; unpacked into a throwaway root with dpkg -x they
# hold the library in the multiarch directory, the header, clio.pc, the
# man pages and the command, and the examples build and run against them.
# The packages are built without sanitizers: only the plain run tests them.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/lib/common.sh"

[ "${CLIO_FLAVOUR:-plain}" = plain ] || { echo "the packages are tested in the plain run"; exit 77; }
DEB_BUILD_OPTIONS="nocheck noddebs" make -s -C "$src" BUILD="$tmp/build" deb > "$tmp/deb.log" 2>&1 ||
	{ tail -n 40 "$tmp/deb.log" >&2; fail "make deb"; }
root=$tmp/root
for pkg in libclio0 libclio-dev clio; do
	deb=$(ls "$tmp/build/deb/${pkg}_"*.deb 2>/dev/null | head -n 1)
	[ -n "$deb" ] || fail "make deb made no $pkg package"
	dpkg -x "$deb" "$root" || fail "dpkg -x $deb"
done
echo "ok: make deb built libclio0, libclio-dev and clio"

multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
for f in usr/lib/$multiarch/libclio.so.0 usr/lib/$multiarch/libclio.so \
	usr/lib/$multiarch/libclio.a usr/lib/$multiarch/pkgconfig/clio.pc \
	usr/include/clio.h usr/bin/clio usr/share/man/man1/clio.1.gz \
	usr/lib/$multiarch/clio/nbdkit-clio-plugin.so usr/share/man/man1/nbdkit-clio-plugin.1.gz \
	usr/lib/$multiarch/clio/nbdkit-clio-filter.so usr/share/man/man1/nbdkit-clio-filter.1.gz \
	usr/share/man/man3/libclio.3.gz usr/share/man/man3/clio_open.3.gz \
	usr/share/doc/libclio0/copyright; do
	[ -e "$root/$f" ] || fail "the packages have no /$f"
done
echo "ok: the packages hold the library in /usr/lib/$multiarch, the header, clio.pc, the man pages, clio"
[ "$("$root/usr/bin/clio" version)" = "$("$CLIO" version)" ] || fail "the packaged clio says $("$root/usr/bin/clio" version)"

check_examples "$root"
