#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-limits.sh - clio mount of a directory: a write past the
# largest file the source's file system takes (ext4: 16 TiB) is refused
# as the source refuses it, instead of being cached as dirty data that
# can never be written back:
#   kernel_cache=off: pwrite at 2^45 (EFBIG), a pwrite across the limit
#   (short) and copy_file_range to 2^45 get through the mount what they
#   get in a local directory on the same file system, the sizes too;
#   kernel_cache=on (the kernel's writeback cache takes the write, and
#   owns the size): the error is fsync's at the latest;
# each time the unmount is clean (nothing dirty is left) and the source
# holds what the local directory holds.  Skipped where the test's file
# system takes such files (tmpfs, xfs, btrfs).
set -e
. "$(dirname "$0")/mount-common.sh"
if ! command -v perl >/dev/null 2>&1; then
	echo "skip: perl is missing" >&2
	exit 77
fi
if [ "$(uname -m)" != x86_64 ]; then
	echo "skip: the test calls pwrite, fsync and copy_file_range by their x86-64 numbers" >&2
	exit 77
fi
src=$tmp/src mnt=$tmp/mnt local=$tmp/local
mkdir "$src" "$mnt" "$local"

# ops FILE: write at 2^45, across the limit, copy to 2^45; one line
# each (pwrite, fsync and copy_file_range by their x86-64 numbers)
ops() {
	perl -e 'use Errno; $f = $ARGV[0];
	sub say { print "$_[0]: ", ($_[1] >= 0 ? $_[1] : "error " . ($!{EFBIG} ? "EFBIG" : $!+0)), "\n" }
	open(F, "+>", $f) or die "$f: $!";
	syswrite(F, "head") == 4 or die "write: $!";
	say("write at 2^45", syscall(18, fileno(F), $x = "x", 1, 1 << 45));
	# 2^44 - 6144: below the limit of 4 KiB-block ext4 (16 TiB - 4 KiB),
	# the 8 KiB written cross it
	$y = "y" x 8192;
	say("write across", syscall(18, fileno(F), $y, 8192, (1 << 44) - 6144));
	say("size", (stat(F))[7]);
	close(F) or die "close: $!";
	open(F, "<", $f) or die "$f: $!"; $g = "$f.copy";
	open(G, "+>", $g) or die "$g: $!";
	$off = pack("q", 1 << 45);
	say("copy to 2^45", syscall(326, fileno(F), 0, fileno(G), $off, 4, 0));
	' "$1"
}

ops "$local/f" >"$tmp/local.out"
if ! grep -q '^write at 2^45: error EFBIG' "$tmp/local.out"; then
	echo "skip: the test's file system takes a write at 2^45: $(head -n 1 "$tmp/local.out")" >&2
	exit 77
fi

mount_start "$src" "$mnt" -o kernel_cache=off
ops "$mnt/f" >"$tmp/mnt.out"
diff "$tmp/local.out" "$tmp/mnt.out" >&2 ||
	fail "kernel_cache=off: the mount answers otherwise than the source"
mount_stop "$mnt"
[ "$(stat -c %s "$src/f")" = "$(stat -c %s "$local/f")" ] ||
	fail "kernel_cache=off: the source's size $(stat -c %s "$src/f") after unmounting"
echo "ok: kernel_cache=off: $(tr '\n' ';' <"$tmp/mnt.out")"

rm -f "$src/f" "$src/f.copy"
mount_start "$src" "$mnt"
perl -e 'open(F, "+>", $ARGV[0]) or die; syswrite(F, "head") == 4 or die;
	if (syscall(18, fileno(F), $x = "x", 1, 1 << 45) < 0 || syscall(74, fileno(F)) < 0) {
		print "error\n" } else { print "no error\n" }
	' "$mnt/f" >"$tmp/on.out" 2>&1 || true
grep -q '^error' "$tmp/on.out" || fail "kernel_cache=on: a write at 2^45 and fsync: $(cat "$tmp/on.out")"
mount_stop "$mnt"
# the kernel's size was 2^45 + 1 when it wrote the first page back: the
# page went whole
[ "$(head -c 4 "$src/f")" = head ] && [ "$(stat -c %s "$src/f")" -le 4096 ] ||
	fail "kernel_cache=on: the source holds $(stat -c %s "$src/f") bytes after unmounting"
echo "ok: kernel_cache=on: the write at 2^45 fails at the latest at fsync, the unmount is clean"
