# SPDX-License-Identifier: BSD-2-Clause
# mount-common.sh - sourced by tests/test-mount-*.sh: skip without FUSE,
# mount in the background with -f, wait for it, always unmount.
#   mount_start SOURCE MNT [OPTS...]   sets $mount_pid; the command is run
#                                      through $run_as (a function) when set
#   mount_stop MNT                     clio umount, then waits for the daemon
: "${CLIO:?CLIO must name the clio command}"

fail() { echo "FAIL: $*" >&2; exit 1; }

if [ "${CLIO_FLAVOUR:-plain}" = tsan ]; then
	echo "skip: clio mount is not tested under tsan" >&2
	exit 77
fi
if [ ! -c /dev/fuse ]; then
	echo "skip: /dev/fuse is absent" >&2
	exit 77
fi
if ! command -v fusermount3 >/dev/null 2>&1; then
	echo "skip: fusermount3 is missing (apt-get install fuse3)" >&2
	exit 77
fi

tmp=$(mktemp -d)
mount_pid=
mounted=

cleanup() {
	set +e	# a daemon already gone must not stop the clean-up
	# a dead mount fails `mountpoint`, so look in /proc/mounts
	for m in $mounted; do
		if grep -qF " $m fuse" /proc/mounts; then
			fusermount3 -u "$m" 2>/dev/null || fusermount3 -uz "$m" 2>/dev/null
		fi
	done
	if [ -n "$mount_pid" ]; then
		kill "$mount_pid" 2>/dev/null
		wait "$mount_pid" 2>/dev/null
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

mount_start() {
	src=$1 mnt=$2
	shift 2
	$run_as "$CLIO" mount -f "$@" "$src" "$mnt" 2>"$tmp/mount.err" &
	mount_pid=$!
	mounted="$mounted $mnt"
	i=0
	while ! mountpoint -q "$mnt"; do
		i=$((i + 1))
		if [ $i -gt 100 ] || ! kill -0 "$mount_pid" 2>/dev/null; then
			cat "$tmp/mount.err" >&2
			fail "clio mount $src $mnt did not come up"
		fi
		sleep 0.1
	done
}

mount_stop() {
	"$CLIO" umount "$1" || fail "clio umount $1"
	rc=0
	wait "$mount_pid" || rc=$?
	mount_pid=
	cat "$tmp/mount.err" >&2
	[ "$rc" -eq 0 ] || fail "clio mount exited $rc"
}
