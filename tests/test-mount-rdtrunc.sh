#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-rdtrunc.sh - clio mount of a directory: open(2) with
# O_RDONLY|O_TRUNC truncates a file the caller may write, as Linux does
# on a local file system (the kernel had dropped its own pages and size
# while the source kept the data: a later read showed the old bytes
# again); with the kernel's caches on and off and with cache=off, seen
# through the mount, in the source after the close and after unmounting.
set -e
. "$(dirname "$0")/mount-common.sh"
if ! command -v perl >/dev/null 2>&1; then
	echo "skip: perl is missing" >&2
	exit 77
fi
src=$tmp/src mnt=$tmp/mnt
mkdir "$src" "$mnt"

# rdtrunc FILE: "SIZE READ" seen on a descriptor opened O_RDONLY|O_TRUNC
rdtrunc() {
	perl -e 'use Fcntl; sysopen(F, $ARGV[0], O_RDONLY | O_TRUNC) or die "$ARGV[0]: $!";
		$n = sysread(F, $b, 100); print((stat(F))[7], " $n\n"); close(F)' "$1"
}

echo hello >"$tmp/ref"
want=$(rdtrunc "$tmp/ref")
[ "$want" = "0 0" ] || fail "local reference: $want"
for o in kernel_cache=on kernel_cache=off cache=off; do
	mount_start "$src" "$mnt" -o $o
	echo hello >"$mnt/f"
	cat "$mnt/f" >/dev/null	# its data in every cache
	got=$(rdtrunc "$mnt/f")
	[ "$got" = "$want" ] || fail "$o: O_RDONLY|O_TRUNC gives '$got', want '$want'"
	[ "$(stat -c %s "$mnt/f")" = 0 ] || fail "$o: the mount shows $(stat -c %s "$mnt/f") bytes"
	[ "$(stat -c %s "$src/f")" = 0 ] || fail "$o: the source holds $(stat -c %s "$src/f") bytes after the close"
	sleep 1.1	# the kernel's attributes expire
	[ -z "$(cat "$mnt/f")" ] || fail "$o: the old data is back: $(cat "$mnt/f")"
	mount_stop "$mnt"
	[ "$(stat -c %s "$src/f")" = 0 ] || fail "$o: the source holds $(stat -c %s "$src/f") bytes after unmounting"
	echo "ok: $o: O_RDONLY|O_TRUNC truncates"
done
