#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-times.sh - clio mount of a directory: times a program sets
# on a file whose data is still dirty (in the kernel's writeback cache or
# in clio's) stay set, as on a local file system, and are what the
# source holds after unmounting:
#   a program writes 300000 bytes, sets the times on its descriptor
#   (futimens), then closes; one sets them by name (utimensat) while its
#   descriptor still holds dirty data; cp -p of a file;
# each with the kernel's caches on and off.
set -e
. "$(dirname "$0")/mount-common.sh"
if ! command -v perl >/dev/null 2>&1; then
	echo "skip: perl is missing" >&2
	exit 77
fi
src=$tmp/src mnt=$tmp/mnt
mkdir "$src" "$mnt"
t=978307200
head -c 200000 /dev/urandom >"$tmp/orig"
touch -d @1000000000 "$tmp/orig"

# futimens DIR/NAME: write, set the times on the descriptor, close
fut() {
	perl -e 'open(F, ">", $ARGV[0]) or die "$ARGV[0]: $!";
		syswrite(F, "x" x 300000) == 300000 or die "write: $!";
		utime($ARGV[1], $ARGV[1], \*F) or die "futimens: $!";
		close(F) or die "close: $!"' "$1" $t
}
# byname DIR/NAME: write on a descriptor, set the times by name, write
# nothing more, close
byname() {
	perl -e 'open(F, ">", $ARGV[0]) or die "$ARGV[0]: $!";
		syswrite(F, "y" x 300000) == 300000 or die "write: $!";
		utime($ARGV[1], $ARGV[1], $ARGV[0]) or die "utimensat: $!";
		close(F) or die "close: $!"' "$1" $t
}

# want LABEL FILE SECONDS
want() {
	got=$(stat -c %Y "$2")
	[ "$got" = "$3" ] || fail "$1: $2 has mtime $got, want $3"
}

for kc in on off; do
	mount_start "$src" "$mnt" -o kernel_cache=$kc
	fut "$mnt/fut$kc"
	byname "$mnt/byname$kc"
	cp -p "$tmp/orig" "$mnt/cp$kc"
	for f in fut byname; do
		want "kernel_cache=$kc, mount" "$mnt/$f$kc" $t
		want "kernel_cache=$kc, source" "$src/$f$kc" $t
	done
	want "kernel_cache=$kc, cp -p, mount" "$mnt/cp$kc" 1000000000
	want "kernel_cache=$kc, cp -p, source" "$src/cp$kc" 1000000000
	mount_stop "$mnt"
	for f in fut byname; do
		want "kernel_cache=$kc, after unmount" "$src/$f$kc" $t
	done
	want "kernel_cache=$kc, cp -p, after unmount" "$src/cp$kc" 1000000000
	cmp "$tmp/orig" "$src/cp$kc" || fail "kernel_cache=$kc: cp -p copied other data"
	[ "$(wc -c <"$src/fut$kc")" -eq 300000 ] || fail "kernel_cache=$kc: fut$kc lost data"
	echo "ok: kernel_cache=$kc: times set over dirty data stay"
done
