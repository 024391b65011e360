#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-opentimes.sh - clio mount of a directory: a write(2) moves
# the file's mtime and ctime at once, as on a local file system, also
# while its data is still dirty in clio's cache and the writer holds the
# file open (kernel_cache=off: every stat asks the daemon, which had
# reported the source's old times until the write-back); stat by name
# from another process (xprobe hold), with the kernel's caches on and
# off, and the times never go back at the close.
set -e
. "$(dirname "$0")/mount-common.sh"
xprobe=$(dirname "$CLIO")/tests/tools/xprobe
[ -x "$xprobe" ] || fail "$xprobe is missing (make tests builds it)"
src=$tmp/src mnt=$tmp/mnt
mkdir "$src" "$mnt"
printf more >"$tmp/more"

for kc in on off; do
	rm -rf "$src"/*
	mount_start "$src" "$mnt" -o kernel_cache=$kc
	printf old >"$mnt/f"
	touch -d @1000000000 "$mnt/f"
	c0=$(stat -c %Z "$mnt/f")
	"$xprobe" hold "$mnt/f" "$tmp/more" sh -c 'stat -c "%Y %Z" "$1" >"$2"' sh \
		"$mnt/f" "$tmp/times" || fail "kernel_cache=$kc: xprobe hold"
	read -r m c <"$tmp/times"
	[ "$m" -gt 1000000000 ] ||
		fail "kernel_cache=$kc: a write by a program holding the file open left its mtime at $m (set to 1000000000)"
	[ "$c" -ge "$c0" ] || fail "kernel_cache=$kc: ctime went back at a write: $c0, then $c"
	m2=$(stat -c %Y "$mnt/f")
	[ "$m2" -ge "$m" ] || fail "kernel_cache=$kc: mtime went back at the close: $m, then $m2"
	[ "$(cat "$mnt/f")" = more ] || fail "kernel_cache=$kc: f reads '$(cat "$mnt/f")'"
	mount_stop "$mnt"
done
exit 0
