#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-disktrunc.sh - clio mount of a device (an image file): an
# open of disk with O_TRUNC (dd without conv=notrunc, a shell's >)
# truncates the device as truncate(1) on disk does, so that the mount's
# size and the device's agree (the kernel takes the size to be 0 after
# such an open; the device kept its size and data, hidden behind the
# kernel's size until the next mount).  With the kernel's caches on and
# off, seen through the mount, and in the image after unmounting.
set -e
. "$(dirname "$0")/mount-common.sh"
mnt=$tmp/mnt img=$tmp/img
mkdir "$mnt"
head -c 1000000 /dev/urandom >"$tmp/pat"
for kc in on off; do
	head -c 4194304 /dev/zero >"$img"
	mount_start "$img" "$mnt" -o kernel_cache=$kc
	dd if="$tmp/pat" of="$mnt/disk" bs=64k status=none
	[ "$(stat -c %s "$mnt/disk")" = 1000000 ] ||
		fail "kernel_cache=$kc: the mount shows $(stat -c %s "$mnt/disk") bytes"
	sleep 1.1	# the kernel's attributes expire
	[ "$(stat -c %s "$mnt/disk")" = 1000000 ] ||
		fail "kernel_cache=$kc: the mount shows $(stat -c %s "$mnt/disk") bytes a second later"
	cmp "$tmp/pat" "$mnt/disk" || fail "kernel_cache=$kc: disk differs from what dd wrote"
	mount_stop "$mnt"
	[ "$(stat -c %s "$img")" = 1000000 ] ||
		fail "kernel_cache=$kc: the image holds $(stat -c %s "$img") bytes after unmounting"
	cmp "$tmp/pat" "$img" || fail "kernel_cache=$kc: the image differs from what dd wrote"
	echo "ok: kernel_cache=$kc: O_TRUNC truncates disk and its device alike"
done
