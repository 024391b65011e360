#!/bin/sh
# Install the Debian packages the build, the tests and the benchmarks'
# peers (nbdkit, nbdfuse in libnbd-bin) need, only those
# that are missing.  Runs as root (or through sudo when available).
set -e
need=""
have() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed"; }
for p in gcc make libc6-dev libcmocka-dev gnuplot-nox libfuse3-dev fuse3 liburing-dev pkg-config attr \
	nbdkit libnbd-bin; do
	have "$p" || need="$need $p"
done
[ -z "$need" ] && exit 0
echo "deps: installing$need" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends $need >/dev/null
