#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-rwopen.sh - clio mount of a directory: a file opened for
# writing through the mount and closed without a write, while the source
# is changed behind the mount's back, is no write of the mount's own: the
# next open reads what the source holds (close-to-open), and nothing the
# mount cached before is written back over it:
#   kernel_cache=on and off: an overwrite in place of the same size
#     (shell's <>, dd conv=notrunc) read through the mount after the close;
#   kernel_cache=off: an append behind the mount's back, then an append
#     through the mount; the source holds both after unmounting.
set -e
. "$(dirname "$0")/mount-common.sh"
src=$tmp/src mnt=$tmp/mnt
mkdir "$src" "$mnt"

for kc in on off; do
	rm -rf "$src"/*
	mount_start "$src" "$mnt" -o kernel_cache=$kc
	printf 0123456789 >"$mnt/o"
	[ "$(cat "$mnt/o")" = 0123456789 ] || fail "$kc: o reads back wrong"
	exec 3<>"$mnt/o"
	printf abcdefghij | dd of="$src/o" conv=notrunc status=none
	touch -d "@$(( $(date +%s) + 10 ))" "$src/o"
	exec 3>&-
	got=$(cat "$mnt/o")
	[ "$got" = abcdefghij ] ||
		fail "kernel_cache=$kc: after an open for writing that wrote nothing, the mount reads '$got', the source holds abcdefghij"
	if [ $kc = off ]; then
		printf 0123456789 >"$mnt/a"
		exec 3<>"$mnt/a"
		printf behind >>"$src/a"
		exec 3>&-
		printf MINE >>"$mnt/a"
		got=$(cat "$mnt/a")
		[ "$got" = 0123456789behindMINE ] ||
			fail "kernel_cache=off: an append behind the mount's back, then one through it: '$(printf %s "$got" | od -An -c | tr -s ' ')'"
	fi
	mount_stop "$mnt"
	[ "$(cat "$src/o")" = abcdefghij ] || fail "kernel_cache=$kc: o in the source after unmounting"
	[ $kc = on ] || [ "$(cat "$src/a")" = 0123456789behindMINE ] ||
		fail "kernel_cache=off: a in the source after unmounting: the change behind the mount's back was lost"
done
exit 0
