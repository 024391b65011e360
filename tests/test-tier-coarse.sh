#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-tier-coarse.sh - the disk tier over a file system whose times are
# whole seconds (ext4 with 128-byte inodes, loop-mounted in a mount
# namespace of the test's own): a file read, or written, through the
# tier and then changed by another writer within the same second, its
# size kept, is read as changed by the next clio dd, never from the
# entries of the version before (its size, mtime and ctime are those
# the entries recorded).
. "$(dirname "$0")/coarse-common.sh"
. "$(dirname "$0")/functions.sh"

fs="$tmp/fs"
mkdir "$fs"
coarse_fs "$fs" "$tmp/img"
trap 'umount "$fs" 2>/dev/null; rm -rf "$tmp"' EXIT
dc="$fs/dc"
mkdir "$dc"
head -c 300000 /dev/urandom >"$tmp/a"

# a fresh second: what follows takes well under one
second() {
	while [ "$(date +%N | cut -c1)" != 0 ]; do sleep 0.05; done
}

for round in 1 2 3; do
	second
	cp "$tmp/a" "$fs/f"
	"$CLIO" dd if="$fs/f" of=/dev/null bs=64k --disk-cache="$dc" >/dev/null 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "reading f"; }
	printf 'round %d' "$round" | dd of="$fs/f" bs=1 seek=70000 conv=notrunc 2>/dev/null
	"$CLIO" dd if="$fs/f" of="$tmp/out" bs=64k --disk-cache="$dc" >/dev/null 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "reading f again"; }
	cmp "$fs/f" "$tmp/out" || fail "round $round: read the version before a change in the same second"

	second
	"$CLIO" dd if="$tmp/a" of="$fs/g" bs=64k --disk-cache="$dc" >/dev/null 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "writing g"; }
	printf 'round %d' "$round" | dd of="$fs/g" bs=1 seek=140000 conv=notrunc 2>/dev/null
	"$CLIO" dd if="$fs/g" of="$tmp/out" bs=64k --disk-cache="$dc" >/dev/null 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "reading g"; }
	cmp "$fs/g" "$tmp/out" || fail "round $round: read what the tier wrote before a change in the same second"
done
echo "ok: whole-second times: a change in the same second is seen"

# a version recorded long enough after the change is trusted
cp "$tmp/a" "$fs/h"
sleep 2.1
"$CLIO" dd if="$fs/h" of=/dev/null bs=64k --disk-cache="$dc" >/dev/null 2>&1 || fail "reading h"
"$CLIO" dd if="$fs/h" of=/dev/null bs=64k --disk-cache="$dc" --json >"$tmp/j" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "reading h again"; }
[ "$(json_num bytes_from_cache "$tmp/j")" = 300000 ] ||
	{ cat "$tmp/j"; fail "h, unchanged for 2 s before its version was recorded, is not read from DIR"; }
echo "ok: whole-second times: a version recorded 2 s after the change is trusted"
