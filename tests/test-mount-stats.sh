#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-stats.sh - the control file .clio-stats (clio stat: test-stat-*.sh):
# clustering through a device mount (sim:preset=ssd,size=64M, a 16M
# cache): dd writes the whole disk at 1M (64 MiB: at least one background
# flush, flush_behind), then reads it at 4k with the kernel's caches
# dropped, and the back end's reads must average at least 256 KiB per
# transfer; write_clusters and the hit counters move; the
# file is hidden from readdir, mode 0400 and refuses writes; `clio stat`
# of a directory that is no clio mount exits 66; in pass-through mode the
# file hides a real one of that name, which survives; a .clio-stats
# of the user's in a subdirectory is never taken for the mount's: clio
# stat of the subdirectory, of a file in it, or as another user, is 66
# with one line and prints no figures.
set -e
. "$(dirname "$0")/mount-common.sh"
mnt=$tmp/mnt dir=$tmp/dir
mkdir "$mnt" "$dir"

# value of key in a snapshot file
val() { sed -n "s/^$1: //p" "$2"; }

# ------------------------------------------------------- not a mount
rc=0
"$CLIO" stat "$dir" >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 66 ] || fail "clio stat of a plain directory: exit $rc, want 66"
[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "clio stat error: $(cat "$tmp/err")"
[ -s "$tmp/out" ] && fail "clio stat of a plain directory printed something"

# ------------------------------------------------ device mode: clustering
head -c 64M /dev/urandom >"$tmp/pat"
mount_start sim:preset=ssd,size=64M "$mnt" -o cache_size=16M
cat "$mnt/.clio-stats" >"$tmp/s0" || fail "reading .clio-stats"
[ "$(val write_clusters "$tmp/s0")" -eq 0 ] || fail "writes before any write"
[ "$(val 'disk device' "$tmp/s0")" = sim:preset=ssd,size=64M ] ||
	fail "device line: $(grep device "$tmp/s0")"
ls -a "$mnt" | grep -q clio-stats && fail "readdir lists .clio-stats"
[ "$(stat -c %a "$mnt/.clio-stats")" = 400 ] || fail "mode of .clio-stats"
[ -f "$mnt/.clio-stats" ] || fail ".clio-stats is not a regular file"
(echo x >"$mnt/.clio-stats") 2>/dev/null && fail ".clio-stats is writable"

dd if="$tmp/pat" of="$mnt/disk" bs=1M conv=notrunc,fsync 2>/dev/null
cat "$mnt/.clio-stats" >"$tmp/s1"
wc=$(val write_clusters "$tmp/s1")
[ "$wc" -gt 0 ] || fail "write_clusters $wc after writing the disk"
[ "$(val 'disk back_write_bytes' "$tmp/s1")" -ge 67108864 ] ||
	fail "back_write_bytes $(val 'disk back_write_bytes' "$tmp/s1")"
# flush_behind (64M in a mount): one background flush once 64 MiB were
# written back, beside the fsync's own
fb=$(val flushes_behind "$tmp/s1") fl=$(val 'disk back_flushes' "$tmp/s1")
[ "$fb" -ge 1 ] || fail "flushes_behind $fb after writing 64 MiB"
[ "$fl" -ge $((fb + 1)) ] || fail "back_flushes $fl, flushes_behind $fb"

if [ "$(id -u)" -eq 0 ]; then
	sync
	echo 3 >/proc/sys/vm/drop_caches
fi
dd if="$mnt/disk" of=/dev/null bs=4k 2>/dev/null
cat "$mnt/.clio-stats" >"$tmp/s2"
reads=$(val 'disk back_reads' "$tmp/s2")
bytes=$(val 'disk back_read_bytes' "$tmp/s2")
[ "$reads" -gt 0 ] || fail "no back-end reads: the cache held the whole disk"
per=$((bytes / reads))
echo "back-end reads: $reads, $bytes bytes, $per bytes/transfer ($((per / 1024)) KB/t)," \
	"clustering $(val 'disk clustering' "$tmp/s2")" >&2
[ "$per" -ge 262144 ] || fail "back-end reads average $per bytes, want >= 262144"
h0=$(val hits "$tmp/s1") h1=$(val hits "$tmp/s2")
m0=$(val misses "$tmp/s1") m1=$(val misses "$tmp/s2")
[ "$h1" -gt "$h0" ] || fail "hits did not move: $h0 -> $h1"
[ "$m1" -gt "$m0" ] || fail "misses did not move: $m0 -> $m1"
[ "$(val readahead_used "$tmp/s2")" -gt 0 ] || fail "no read-ahead used"
cmp "$tmp/pat" "$mnt/disk" || fail "disk differs from the pattern"
mount_stop "$mnt"

# ------------------------------------ pass-through: hides a real file
echo real >"$dir/.clio-stats"
echo data >"$dir/f"
mount_start "$dir" "$mnt"
grep -q '^hits: ' "$mnt/.clio-stats" || fail "pass-through: no statistics"
ls -a "$mnt" | grep -q clio-stats && fail "pass-through: readdir lists .clio-stats"
rm -f "$mnt/.clio-stats" 2>/dev/null && fail "pass-through: .clio-stats removed"
exec 3<"$mnt/f"
cat "$mnt/.clio-stats" >"$tmp/s3"
exec 3<&-
grep -q '^f front_reads: ' "$tmp/s3" || fail "pass-through: open file f not listed"
[ "$(val devices "$tmp/s3")" -eq 1 ] || fail "pass-through: devices $(val devices "$tmp/s3")"
# a forged control file below the root is not the mount's
mkdir "$dir/sub"
printf 'hits: 12345\nmisses: 1\n' >"$dir/sub/.clio-stats"
for p in "$mnt/sub" "$mnt/sub/" "$mnt/sub/.clio-stats"; do
	for o in "" --json --raw; do
		rc=0
		"$CLIO" stat $o "$p" >"$tmp/out" 2>"$tmp/err" || rc=$?
		[ "$rc" -eq 66 ] || fail "clio stat $o $p (not the root): exit $rc, want 66"
		[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "root of a clio mount" "$tmp/err" ||
			fail "clio stat $o $p: $(cat "$tmp/err")"
		grep -q 12345 "$tmp/out" && fail "clio stat $o $p took the forged file: $(cat "$tmp/out")"
	done
done
rc=0
"$CLIO" stat "$mnt/sub/" -i 0.1 -c 2 >"$tmp/out" 2>"$tmp/err" || rc=$?
[ "$rc" -eq 66 ] || fail "clio stat -i of a subdirectory: exit $rc, want 66"
"$CLIO" stat "$mnt/sub/.." | grep -q "^$mnt/sub/..: clio mount of $dir" ||
	fail "clio stat of the root by another name"
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
	# another user (no allow_other): one line that says why, not "no .clio-stats"
	chmod 755 "$tmp"
	rc=0
	setpriv --reuid=65534 --regid=65534 --clear-groups "$CLIO" stat "$mnt" \
		>"$tmp/out" 2>"$tmp/err" || rc=$?
	[ "$rc" -eq 66 ] || fail "another user's clio stat: exit $rc, want 66"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "Permission denied" "$tmp/err" ||
		fail "another user's clio stat: $(cat "$tmp/err")"
	[ -s "$tmp/out" ] && fail "another user's clio stat printed: $(cat "$tmp/out")"
fi
echo "ok: below the root (a forged .clio-stats) and as another user: 66, one line"
mount_stop "$mnt"
[ "$(cat "$dir/.clio-stats")" = real ] || fail "the hidden real file changed"
[ "$(cat "$dir/sub/.clio-stats")" = "$(printf 'hits: 12345\nmisses: 1')" ] ||
	fail "the forged file changed"
exit 0
