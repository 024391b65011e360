# SPDX-License-Identifier: BSD-2-Clause
# nfs-mount-common.sh - what the tests of `clio mount nfs://...` share.
# Source it after functions.sh and ganesha-common.sh (so it runs inside
# the test's namespace).  It skips without FUSE and under TSan, and
# defines:
#   nfs_mount MNT URL [OPTS...]  clio mount -f in the background; waits
#                                for the mount (the daemon's stderr in
#                                MNT.err); sets $last_pid
#   nfs_umount MNT               clio umount, waits for the daemon and
#                                fails on its exit status
# On exit every mount left is unmounted and its daemon stopped, then the
# server (ganesha-common.sh's clean-up).
if [ "${CLIO_FLAVOUR:-plain}" = tsan ]; then
	echo "skip: clio mount is not tested under tsan" >&2
	exit 77
fi
[ -c /dev/fuse ] || { echo "skip: /dev/fuse is absent" >&2; exit 77; }
command -v fusermount3 >/dev/null 2>&1 ||
	{ echo "skip: fusermount3 is missing (apt-get install fuse3)" >&2; exit 77; }

nfs_mounts=""

nfs_mount_cleanup() {
	set +e
	for _nm in $nfs_mounts; do
		_mp=${_nm%%=*} _pid=${_nm#*=}
		if grep -qF " $_mp fuse" /proc/mounts; then
			fusermount3 -u "$_mp" 2>/dev/null || fusermount3 -uz "$_mp" 2>/dev/null
		fi
		pid_stop "$_pid"
	done
	ganesha_all_stop
	rm -rf "$tmp"
}
trap nfs_mount_cleanup EXIT

nfs_mount() {
	_mp=$1 _src=$2
	shift 2
	mkdir -p "$_mp"
	"$CLIO" mount -f "$@" "$_src" "$_mp" 2>"$_mp.err" &
	last_pid=$!
	nfs_mounts="$nfs_mounts $_mp=$last_pid"
	_i=0
	while ! mountpoint -q "$_mp"; do
		_i=$((_i + 1))
		if [ $_i -gt 100 ] || ! kill -0 "$last_pid" 2>/dev/null; then
			cat "$_mp.err" >&2
			fail "clio mount $_src $_mp did not come up"
		fi
		sleep 0.05
	done
}

nfs_umount() {
	_pid=""
	_rest=""
	for _nm in $nfs_mounts; do
		if [ "${_nm%%=*}" = "$1" ]; then _pid=${_nm#*=}; else _rest="$_rest $_nm"; fi
	done
	nfs_mounts=$_rest
	"$CLIO" umount "$1" || { cat "$1.err" >&2; fail "clio umount $1"; }
	_rc=0
	wait "$_pid" || _rc=$?
	[ "$_rc" -eq 0 ] || { cat "$1.err" >&2; fail "clio mount of $1 exited $_rc"; }
}
