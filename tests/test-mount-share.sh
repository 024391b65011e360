#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-share.sh - clio mount of a directory, one file used by four
# processes at once, each in a range of its own that shares pages with
# its neighbours' (tests/tools/mountshare: pwrite, pread checked against
# a model, writes through a shared mapping, punched holes,
# copy_file_range, fsync, and new opens), in each kernel caching mode:
# every read sees the last write of its process, and the source holds
# the same at the end.  With kernel_cache=off neither a read(2) nor an
# open may make the kernel drop the file's pages while the source did
# not change: a page dropped while another process's write(2) of it was
# on its way to the daemon was read back old and kept.
set -e
. "$(dirname "$0")/mount-common.sh"
tool=$(dirname "$CLIO")/tests/tools/mountshare
[ -x "$tool" ] || fail "$tool is missing (make tests builds it)"
src=$tmp/src mnt=$tmp/mnt
mkdir "$src" "$mnt"
size=$((777777 * 4))

for kc in off on; do
	secs=3
	[ $kc = off ] && secs=7
	head -c $size /dev/urandom >"$src/f"
	mount_start "$src" "$mnt" -o kernel_cache=$kc
	"$tool" "$mnt/f" 4 $secs >"$tmp/out" 2>&1 || {
		cat "$tmp/out" >&2
		fail "kernel_cache=$kc: a process read what it had not written last"
	}
	md5sum <"$mnt/f" >"$tmp/sum"
	mount_stop "$mnt"
	md5sum <"$src/f" | cmp -s - "$tmp/sum" || fail "kernel_cache=$kc: the source differs from the mount"
	echo "ok: kernel_cache=$kc"
done
