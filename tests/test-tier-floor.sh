#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-tier-floor.sh - the disk tier's free-space floor (cachefilesd's
# brun/bcull/bstop, 7/5/1 %): DIR on a 20 MiB tmpfs (in a mount namespace
# of the test's own) that a filler leaves 3 MiB free; clio dd reads a
# 4 MiB file with --disk-cache-size=64M: the tier culls instead of
# filling the file system (at least bstop free at the end, evictions
# counted, its data file within what was free) and copies the right bytes.
# Then a 6 MiB tmpfs, empty, and a 16 MiB file: 16 blocks of 64 KiB
# between two looks at the free space filled it to 0 KiB free; it keeps
# at least bstop free.
# the mount namespace first, before functions.sh makes $tmp
if [ "${TIER_FLOOR_NS:-}" != 1 ]; then
	unshare -m true 2>/dev/null ||
		{ echo "unshare -m is not permitted here (needs root or user namespaces)"; exit 77; }
	TIER_FLOOR_NS=1 exec unshare -m sh "$0" "$@"
fi
. "$(dirname "$0")/functions.sh"

small="$tmp/small"
mkdir "$small"
mount --make-rprivate / 2>/dev/null
mount -t tmpfs -o size=20m tmpfs "$small" || { echo "cannot mount a tmpfs"; exit 77; }
trap 'umount "$small" 2>/dev/null; rm -rf "$tmp"' EXIT
head -c 17825792 /dev/zero >"$small/filler"
mkdir "$small/dc"
head -c 4194304 /dev/urandom >"$tmp/f"

"$CLIO" dd if="$tmp/f" of="$tmp/out" bs=64k --disk-cache="$small/dc" \
	--disk-cache-size=64M --json >"$tmp/j" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd with DIR on the small tmpfs"; }
cmp "$tmp/f" "$tmp/out" || fail "the copy differs"
ev=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][0]["disk_cache"]["evictions"])' "$tmp/j")
avail=$(df -k --output=avail "$small" | tail -n 1)
size=$(df -k --output=size "$small" | tail -n 1)
used=$(du -sk "$small/dc" | cut -f 1)
echo "free $avail of $size KiB, DIR uses $used KiB, $ev evictions"
[ "$ev" -gt 0 ] || fail "no block was culled"
in_range "free KiB at the end" "$avail" $((size / 100)) "$size"
in_range "DIR's KiB" "$used" 1 3072
echo "ok: the tier culls above the free-space floor"

umount "$small"
mount -t tmpfs -o size=6m tmpfs "$small" || fail "cannot mount the 6 MiB tmpfs"
mkdir "$small/dc"
head -c 16777216 /dev/urandom >"$tmp/f16"
"$CLIO" dd if="$tmp/f16" of="$tmp/out" bs=64k --disk-cache="$small/dc" \
	--disk-cache-size=1G 2>"$tmp/err" || { cat "$tmp/err"; fail "clio dd with DIR on 6 MiB"; }
cmp "$tmp/f16" "$tmp/out" || fail "the copy over the 6 MiB DIR differs"
avail=$(df -k --output=avail "$small" | tail -n 1)
in_range "free KiB of 6144 at the end (bstop 1 %)" "$avail" 61 6144
echo "ok: a small file system keeps its floor"
