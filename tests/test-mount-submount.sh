#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-submount.sh - clio mount of a directory with other file
# systems mounted inside it (two tmpfs, whose inode numbers are the same
# small ones): every object seen through the mount is on the mount's one
# device, so its inode numbers must tell them apart, as programs take
# two names with the same st_dev and st_ino to be one file (cp -a and tar
# make hard links of them, du counts them once, find calls it a loop):
#   stat's st_ino of the files and directories of both tmpfs and of the
#   source's own are distinct (the source's own keep their numbers), the
#   same through stat, readdir's d_ino and readdirplus; hard links within
#   one tmpfs stay one inode; cp -a of the mount copies every file with
#   its own data and no hard link.
# Needs root (the tmpfs are mounted in a mount namespace of the test's).
set -e
if [ -z "$MOUNT_SUBMOUNT_NS" ]; then
	if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
		echo "skip: needs root and unshare -m" >&2
		exit 77
	fi
	MOUNT_SUBMOUNT_NS=1 exec unshare -m --propagation private sh "$0" "$@"
fi
. "$(dirname "$0")/mount-common.sh"

src=$tmp/src mnt=$tmp/mnt
mkdir "$src" "$mnt" "$src/a" "$src/b" "$src/own"
trap 'umount -l "$src/a" "$src/b" 2>/dev/null; cleanup' EXIT
mount -t tmpfs -o size=4m clio-test "$src/a"
mount -t tmpfs -o size=4m clio-test "$src/b"
for d in a b own; do
	mkdir "$src/$d/dir"
	for i in 1 2 3 4 5 6; do
		echo "$d $i" >"$src/$d/f$i"
	done
done
ln "$src/a/f1" "$src/a/link1"
ls -i "$src/a" "$src/b" | grep -q . || fail "no inode numbers"

for o in "" kernel_cache=off; do
	mount_start "$src" "$mnt" ${o:+-o $o}
	# (st_ino, name) of each object: by stat, by readdir (ls -if reads
	# d_ino only), by readdirplus (ls -il)
	find "$mnt" -mindepth 1 -exec stat -c '%i %n' {} + | sort >"$tmp/stat"
	dups=$(awk '{print $1}' "$tmp/stat" | sort | uniq -d | wc -l)
	# the hard link's two names are the only number seen twice
	[ "$dups" -eq 1 ] || { cat "$tmp/stat" >&2; fail "$o: $dups inode numbers shared by distinct objects"; }
	awk '{print $1}' "$tmp/stat" | sort | uniq -d >"$tmp/dup"
	[ "$(grep -c "^$(cat "$tmp/dup") " "$tmp/stat")" -eq 2 ] &&
		grep -q "/a/f1$" "$tmp/stat" && grep "^$(cat "$tmp/dup") " "$tmp/stat" | grep -q "/a/link1$" ||
		fail "$o: the hard link is not one inode"
	for d in a b own; do
		ls -1if "$mnt/$d" | awk '$2 != "." && $2 != ".." {print $1, "'"$mnt/$d"'/" $2}' | sort >"$tmp/rd"
		grep " $mnt/$d/[^/]*$" "$tmp/stat" >"$tmp/st"
		cmp -s "$tmp/rd" "$tmp/st" || { diff "$tmp/rd" "$tmp/st" >&2; fail "$o: readdir's d_ino in $d is not stat's"; }
		ls -1i "$mnt/$d" | sed "s#^ *\([0-9]*\) #\1 $mnt/$d/#" | sort >"$tmp/rdp"
		cmp -s "$tmp/rdp" "$tmp/st" || { diff "$tmp/rdp" "$tmp/st" >&2; fail "$o: readdirplus's st_ino in $d is not stat's"; }
	done
	# the source's own objects keep their inode numbers
	[ "$(stat -c %i "$mnt/own/f1")" = "$(stat -c %i "$src/own/f1")" ] ||
		fail "$o: own/f1's inode number changed"
	rm -rf "$tmp/copy"
	cp -a "$mnt" "$tmp/copy"
	for d in a b own; do
		for i in 1 2 3 4 5 6; do
			[ "$(cat "$tmp/copy/$d/f$i")" = "$d $i" ] || fail "$o: cp -a: $d/f$i holds $(cat "$tmp/copy/$d/f$i")"
		done
		[ -d "$tmp/copy/$d/dir" ] || fail "$o: cp -a: $d/dir is missing"
	done
	[ "$(stat -c %h "$tmp/copy/b/f1")" -eq 1 ] || fail "$o: cp -a linked b/f1"
	mount_stop "$mnt"
	echo "ok: ${o:-default}: distinct inode numbers across file systems"
done
