#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-tier-planted.sh - an object's files in DIR (data, index, meta,
# lock) replaced by a symbolic link, a directory or a FIFO: clio dd of
# the file neither fails nor hangs, copies the file's bytes without the
# tier for that object (a message naming the file says so) or starts it
# anew, and does so again next time; clio mount, whose start looks for
# dirty blocks in every object of DIR, comes up with an index that is a
# FIFO.
set -e
. "$(dirname "$0")/mount-common.sh"
dc=$tmp/dc
head -c 1000000 /dev/urandom >"$tmp/f"

for kind in symlink dir fifo; do
	for name in data index meta lock; do
		rm -rf "$dc"
		mkdir "$dc"
		"$CLIO" dd if="$tmp/f" of=/dev/null bs=64k --disk-cache="$dc" >/dev/null 2>&1 ||
			fail "filling DIR"
		obj=$(ls "$dc")
		rm -f "$dc/$obj/$name"
		case $kind in
		symlink) ln -s /dev/null "$dc/$obj/$name";;
		dir)     mkdir "$dc/$obj/$name";;
		fifo)    mkfifo "$dc/$obj/$name";;
		esac
		for run in 1 2; do
			rm -f "$tmp/out"
			timeout 20 "$CLIO" dd if="$tmp/f" of="$tmp/out" bs=64k \
				--disk-cache="$dc" >/dev/null 2>"$tmp/err" ||
				{ cat "$tmp/err"; fail "$name a $kind: clio dd failed (run $run)"; }
			cmp "$tmp/f" "$tmp/out" || fail "$name a $kind: the copy differs (run $run)"
		done
		if grep -q "runs without it" "$tmp/err"; then
			grep -q "$dc/$obj/$name: " "$tmp/err" ||
				{ cat "$tmp/err"; fail "$name a $kind: the message does not name it"; }
		fi
	done
done
echo "ok: data, index, meta or lock a symbolic link, a directory or a FIFO: the right bytes"

mkdir "$tmp/src" "$tmp/mnt"
cp "$tmp/f" "$tmp/src/f"
rm -rf "$dc"
mkdir "$dc"
"$CLIO" dd if="$tmp/src/f" of=/dev/null bs=64k --disk-cache="$dc" >/dev/null 2>&1 ||
	fail "filling DIR"
obj=$(ls "$dc")
rm "$dc/$obj/index"
mkfifo "$dc/$obj/index"
mount_start "$tmp/src" "$tmp/mnt" -o disk_cache="$dc"
cmp "$tmp/f" "$tmp/mnt/f" || fail "the file read through the mount differs"
mount_stop "$tmp/mnt"
echo "ok: clio mount comes up with a FIFO for an object's index in DIR"
