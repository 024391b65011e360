#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-coarse.sh - clio mount -o kernel_cache=off over a source
# whose times are whole seconds (ext4 with 128-byte inodes, loop-mounted
# in a mount namespace of the test's own): a file read through the mount,
# then changed behind it within the same second, its size kept (the same
# size, mtime and ctime), is read as changed by the next open through the
# mount (the version recorded that soon was trusted: the old bytes came);
# one read long enough after its change stays cached (no read of the
# source).
. "$(dirname "$0")/coarse-common.sh"
. "$(dirname "$0")/mount-common.sh"
fs=$(mktemp -d) mnt="$tmp/mnt" # fs not in $tmp: unmounted after the daemon ends
mkdir "$mnt"
coarse_fs "$fs" "$tmp/img"
trap 'cleanup; umount "$fs" 2>/dev/null; rmdir "$fs"' EXIT
head -c 300000 /dev/urandom >"$tmp/a"
cp "$tmp/a" "$fs/h"
mount_start "$fs" "$mnt" -o kernel_cache=off

# a fresh second: what follows takes well under one
second() {
	while [ "$(date +%N | cut -c1)" != 0 ]; do sleep 0.05; done
}
for round in 1 2 3; do
	second
	cp "$tmp/a" "$fs/f"
	cat "$mnt/f" >/dev/null || fail "reading f through the mount"
	printf 'round %d' "$round" | dd of="$fs/f" bs=1 seek=70000 conv=notrunc 2>/dev/null
	cmp "$fs/f" "$mnt/f" || fail "round $round: the mount read the version before a change in the same second"
done
echo "ok: whole-second times: a change in the same second is seen through the mount"

# long enough after the change: trusted, read from the cache
sleep 2.1
cat "$mnt/h" >/dev/null || fail "reading h"
reads=$("$CLIO" stat --raw "$mnt" | sed -n 's/^total_back_read_bytes: //p')
cmp "$tmp/a" "$mnt/h" || fail "h differs"
reads2=$("$CLIO" stat --raw "$mnt" | sed -n 's/^total_back_read_bytes: //p')
[ -n "$reads" ] && [ "$reads" = "$reads2" ] ||
	fail "h, read 2 s after its change: read again from the source ($reads -> $reads2 bytes)"
echo "ok: a version seen 2 s after its change is trusted (no read of the source)"
mount_stop "$mnt"
