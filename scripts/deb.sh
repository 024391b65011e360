#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# deb.sh - build the Debian packages (libclio0, libclio-dev, clio) from a
# copy of the source tree, so that the tree itself stays clean, and check
# them with lintian (errors fail).
#   scripts/deb.sh OUTDIR      the .deb files go to OUTDIR, the log to
#                              OUTDIR/build.log
# DEB_BUILD_OPTIONS is passed on (nocheck: no unit tests at build time).
set -e
out=$1
[ -n "$out" ] || { echo "usage: scripts/deb.sh OUTDIR" >&2; exit 2; }
src=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^#define CLIO_VERSION "\(.*\)"$/\1/p' "$src/include/clio.h")
deb_version=$(cd "$src" && dpkg-parsechangelog -S Version)
if [ "$version" != "$deb_version" ]; then
	echo "deb: clio.h says $version, debian/changelog $deb_version" >&2
	exit 1
fi
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/*.deb "$out/build.log"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tree=$work/clio-$version
mkdir "$tree"
# the tracked and the new files, without what git ignores (the builds)
if git -C "$src" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$src" && git ls-files -z --cached --others --exclude-standard |
		tar --null -T - --ignore-failed-read -cf - 2>/dev/null) | tar -C "$tree" -xf -
else
	(cd "$src" && tar --exclude=./.git --exclude='./build*' -cf - .) | tar -C "$tree" -xf -
fi
jobs=""
case ${DEB_BUILD_OPTIONS:-} in *parallel=*) ;; *) jobs=-J2;; esac
echo "deb: dpkg-buildpackage $version (log: $out/build.log)"
if ! (cd "$tree" && dpkg-buildpackage -us -uc -b $jobs) > "$out/build.log" 2>&1; then
	tail -n 40 "$out/build.log" >&2
	echo "deb: dpkg-buildpackage failed; the log is $out/build.log" >&2
	exit 1
fi
cp "$work"/*.deb "$out"/
if command -v lintian >/dev/null 2>&1; then
	echo "deb: lintian"
	lintian --fail-on error "$work"/*.changes | tee -a "$out/build.log"
fi
ls "$out"/*.deb
