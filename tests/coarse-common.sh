# SPDX-License-Identifier: BSD-2-Clause
# coarse-common.sh - sourced first by the tests over a file system whose
# times are whole seconds: the test runs again in a mount namespace of
# its own, and coarse_fs DIR IMG loop-mounts on DIR an ext4 with 128-byte
# inodes made in the file IMG (the test is skipped, exit 77, where that
# cannot be done; DIR is removed then).
if [ "${COARSE_NS:-}" != 1 ]; then
	unshare -m true 2>/dev/null ||
		{ echo "unshare -m is not permitted here (needs root or user namespaces)"; exit 77; }
	COARSE_NS=1 exec unshare -m sh "$0" "$@"
fi

coarse_fs() {
	command -v mkfs.ext4 >/dev/null 2>&1 || { rmdir "$1"; echo "mkfs.ext4 is missing"; exit 77; }
	mount --make-rprivate / 2>/dev/null
	truncate -s 32M "$2"
	mkfs.ext4 -q -F -I 128 "$2" >/dev/null 2>&1 || { rmdir "$1"; echo "cannot make an ext4 image"; exit 77; }
	mount -o loop "$2" "$1" 2>/dev/null || { rmdir "$1"; echo "cannot mount a loop device"; exit 77; }
}
