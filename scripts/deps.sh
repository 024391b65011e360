#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# Install the Debian packages that clio needs, only those that are
# missing.  Runs as root (or through sudo when available).
#   scripts/deps.sh                 the build, the tests and the benchmarks'
#                                   peers (nbdkit, nbdfuse in libnbd-bin)
#   scripts/deps.sh GROUP...        only these groups: build, test, bench,
#                                   deb (the tools of `make deb`)
#   scripts/deps.sh --missing GROUP...   print the missing ones, install
#                                   nothing (nothing either without dpkg)
set -e
group() {
	case $1 in
	build) echo gcc make libc6-dev libfuse3-dev liburing-dev libnbd-dev libnfs-dev nbdkit-plugin-dev pkg-config librbd-dev librados-dev;;
	test)  echo libcmocka-dev fuse3 attr g++ qemu-utils nfs-ganesha nfs-ganesha-vfs rpcbind ceph-mon ceph-osd ceph-common fio;;
	bench) echo gnuplot-nox nbdkit libnbd-bin git fio e2fsprogs;;
	deb)   echo debhelper dpkg-dev fakeroot lintian;;
	*)     echo "deps: unknown group '$1' (build, test, bench, deb)" >&2; exit 2;;
	esac
}
only_list=0
if [ "$1" = --missing ]; then
	only_list=1
	shift
fi
[ $# -eq 0 ] && set -- build test bench
want=""
for g in "$@"; do
	want="$want $(group "$g")"
done
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
if [ "$only_list" -eq 1 ]; then
	command -v dpkg-query >/dev/null 2>&1 || exit 0
	need=""
	for p in $want; do
		have "$p" || need="$need $p"
	done
	echo $need
	exit 0
fi
need=""
for p in $want; do
	have "$p" || need="$need $p"
done
[ -z "$need" ] && exit 0
echo "deps: installing$need" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $need >/dev/null
