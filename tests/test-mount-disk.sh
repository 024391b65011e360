#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-disk.sh - clio mount of a device (mem:size=64M): one file,
# disk, of the device's size; dd writes at 4k and 1M with conv=notrunc
# read back equal; bad options exit 64 and mount nothing; the cache is
# resident once the mount serves (prefault=off: not); max_pages=16
# caps the writes that reach clio at 64 KiB.
set -e
. "$(dirname "$0")/mount-common.sh"
mnt=$tmp/mnt
mkdir "$mnt"

rc=0
"$CLIO" mount -f -o bsize=16k,nosuchopt mem:size=1M "$mnt" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 64 ] || fail "unknown option: exit $rc, want 64"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q nosuchopt "$tmp/err" ||
	fail "unknown option: $(cat "$tmp/err")"
rc=0
"$CLIO" mount -f -o bsize=3k mem:size=1M "$mnt" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 64 ] || fail "bad bsize: exit $rc, want 64"
for bad in max_pages=0 max_pages=257 readahead=1k max_write=2k kernel_cache=maybe prefault=maybe; do
	rc=0
	"$CLIO" mount -f -o $bad mem:size=1M "$mnt" 2>"$tmp/err" || rc=$?
	[ "$rc" -eq 64 ] || fail "$bad: exit $rc, want 64"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "${bad#*=}" "$tmp/err" ||
		fail "$bad: $(cat "$tmp/err")"
done
mountpoint -q "$mnt" && fail "mounted after a bad option"

# the daemon's resident kB once it serves (ls answered)
daemon_rss() {
	ls "$mnt" >/dev/null
	sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$mount_pid/status"
}
mount_start mem:size=1M "$mnt" -o cache_size=64M
rss_on=$(daemon_rss)
mount_stop "$mnt"
mount_start mem:size=1M "$mnt" -o cache_size=64M,prefault=off
rss_off=$(daemon_rss)
mount_stop "$mnt"
[ -n "$rss_on" ] && [ -n "$rss_off" ] && [ "$rss_on" -ge $((rss_off + 56 * 1024)) ] ||
	fail "prefault: a 64 MiB cache: ${rss_on:-?} kB resident by default, ${rss_off:-?} kB with prefault=off"
echo "ok: the cache resident at mount (${rss_on} kB; prefault=off: ${rss_off} kB)"

head -c 3000000 /dev/urandom >"$tmp/pat"
mount_start mem:size=64M "$mnt" -o bsize=64k,cache_size=16M,maxphys=1M
[ "$(ls "$mnt")" = disk ] || fail "ls: $(ls "$mnt")"
[ "$(stat -c %s "$mnt/disk")" -eq 67108864 ] || fail "size $(stat -c %s "$mnt/disk")"

dd if="$tmp/pat" of="$mnt/disk" bs=4k conv=notrunc 2>/dev/null
dd if="$tmp/pat" of="$mnt/disk" bs=1M seek=7 conv=notrunc 2>/dev/null
dd if="$tmp/pat" of="$mnt/disk" bs=1M seek=60 conv=notrunc,fsync 2>/dev/null
cmp -n 3000000 "$tmp/pat" "$mnt/disk" || fail "4k writes differ"
cmp -n 3000000 "$tmp/pat" "$mnt/disk" 0 7M || fail "1M writes differ"
cmp -n 3000000 "$tmp/pat" "$mnt/disk" 0 60M || fail "1M writes at 60M differ"
[ "$(stat -c %s "$mnt/disk")" -eq 67108864 ] || fail "size changed"
# reads around the pattern: zeros
cmp -n 1000000 /dev/zero "$mnt/disk" 0 20M || fail "untouched area is not zero"
mount_stop "$mnt"
mountpoint -q "$mnt" && fail "still mounted"

# max_pages=16: no FUSE write of more than 64 KiB reaches clio
mount_start mem:size=16M "$mnt" -o max_pages=16
dd if=/dev/zero of="$mnt/disk" bs=1M count=16 conv=notrunc,fsync 2>/dev/null
"$CLIO" stat --raw "$mnt" >"$tmp/s"
w=$(sed -n 's/^disk front_writes: //p' "$tmp/s")
b=$(sed -n 's/^disk front_write_bytes: //p' "$tmp/s")
[ "$w" -gt 0 ] && [ "$b" -eq 16777216 ] || fail "max_pages=16: $w writes, $b bytes"
[ $((b / w)) -le 65536 ] || fail "max_pages=16: writes of $((b / w)) bytes on average"
[ "$w" -ge 256 ] || fail "max_pages=16: $w writes for 16 MiB, want >= 256"
mount_stop "$mnt"
exit 0
