#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-tier-full.sh - the disk tier on a full file system: DIR on a 2 MiB
# tmpfs (in a mount namespace of the test's own).  Full at open: clio dd
# copies the right bytes without the tier (a message says so) and exits 0.
# Nearly full, writeback: the dirty blocks that do not fit go through,
# those that do are written back though meta cannot be rewritten; the
# copy is the file's bytes and no error reaches clio dd.  Writeback onto
# a full device (of= on the tmpfs, DIR elsewhere): the write-back at the
# device's close fails, clio dd says so and exits 74, as without the
# tier; the dirty blocks stay in DIR, and the next clio dd opening the
# file for writing, once there is room, writes them back.  A read-only
# DIR (a read-only bind mount, with entries in it or not): clio dd runs,
# copies the right bytes without the tier, with a message, in both modes.
# the mount namespace first, before functions.sh makes $tmp
if [ "${TIER_FULL_NS:-}" != 1 ]; then
	unshare -m true 2>/dev/null ||
		{ echo "unshare -m is not permitted here (needs root or user namespaces)"; exit 77; }
	TIER_FULL_NS=1 exec unshare -m sh "$0" "$@"
fi
. "$(dirname "$0")/functions.sh"

small="$tmp/small"
mkdir "$small"
mount --make-rprivate / 2>/dev/null
mount -t tmpfs -o size=2m tmpfs "$small" || { echo "cannot mount a tmpfs"; exit 77; }
trap 'umount "$small" 2>/dev/null; rm -rf "$tmp"' EXIT
head -c 4194304 /dev/urandom >"$tmp/f"

# ------------------------------------------------------------ full at open
mkdir "$small/dc"
head -c 3000000 /dev/zero >"$small/filler" 2>/dev/null
[ "$(df -k --output=avail "$small" | tail -n 1)" -eq 0 ] || fail "the tmpfs is not full"
for run in 1 2; do
	"$CLIO" dd if="$tmp/f" of="$tmp/out$run" bs=64k --disk-cache="$small/dc" \
		--disk-cache-size=64M >/dev/null 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "clio dd with DIR full (run $run)"; }
	cmp "$tmp/f" "$tmp/out$run" || fail "the copy differs (run $run)"
done
grep -q "runs without it" "$tmp/err" || { cat "$tmp/err"; fail "no message about the full DIR"; }
echo "ok: a full DIR at open: the copy runs without the tier"

# ------------------------------------------------------------ writeback, filling up
rm -rf "$small/dc" "$small/filler"
mkdir "$small/dc"
head -c 800000 /dev/zero >"$small/filler"
"$CLIO" dd if="$tmp/f" of="$tmp/outwb" bs=64k --disk-cache="$small/dc" \
	--disk-cache-mode=writeback --disk-cache-size=64M >/dev/null 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd writeback with DIR filling up"; }
cmp "$tmp/f" "$tmp/outwb" || fail "the writeback copy differs"
echo "ok: writeback into a DIR that fills up: every byte reaches the device"

# ------------------------------------------------------------ writeback, device full
rm -rf "$small/dc" "$small/filler" "$tmp/dc"
mkdir "$tmp/dc"
"$CLIO" dd if="$tmp/f" of="$small/g" bs=64k --disk-cache="$tmp/dc" \
	--disk-cache-mode=writeback >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 74 ] || { cat "$tmp/err"; fail "clio dd onto a full device in writeback exited $rc"; }
grep -q "clio dd: error closing '$small/g': No space left on device" "$tmp/err" ||
	{ cat "$tmp/err"; fail "no error about the full device"; }
grep -q "dirty blocks stay in it" "$tmp/err" || { cat "$tmp/err"; fail "no word of the dirty blocks kept"; }
cmp -s "$tmp/f" "$small/g" && fail "the full device has the bytes (the test is wrong)"
mount -o remount,size=8m "$small" || fail "cannot make room on the tmpfs"
"$CLIO" dd if=/dev/null of="$small/g" conv=notrunc --disk-cache="$tmp/dc" \
	--disk-cache-mode=writeback >/dev/null 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd opening the file again"; }
cmp "$tmp/f" "$small/g" || fail "the dirty blocks kept in DIR did not reach the file"
echo "ok: writeback onto a full device: exit 74, the blocks kept in DIR, written back later"

# ------------------------------------------------------------ read-only DIR
mkdir "$tmp/rodc"
"$CLIO" dd if="$tmp/f" of="$tmp/outro0" bs=64k --disk-cache="$tmp/rodc" >/dev/null 2>&1 ||
	fail "filling the DIR to be made read-only"
mount --bind "$tmp/rodc" "$tmp/rodc" && mount -o remount,ro,bind "$tmp/rodc" ||
	fail "cannot make a read-only bind mount"
trap 'umount "$tmp/rodc" 2>/dev/null; umount "$small" 2>/dev/null; rm -rf "$tmp"' EXIT
head -c 1000000 /dev/urandom >"$tmp/g"
for in in f g; do
	for mode in writethrough writeback; do
		"$CLIO" dd if="$tmp/$in" of="$tmp/outro" bs=64k --disk-cache="$tmp/rodc" \
			--disk-cache-mode=$mode >/dev/null 2>"$tmp/err" ||
			{ cat "$tmp/err"; fail "clio dd with a read-only DIR ($in, $mode)"; }
		cmp "$tmp/$in" "$tmp/outro" || fail "the copy with a read-only DIR differs ($in, $mode)"
		grep -q "runs without it" "$tmp/err" || { cat "$tmp/err"; fail "no message about the read-only DIR"; }
	done
done
umount "$tmp/rodc"
echo "ok: a read-only DIR: clio dd copies the right bytes without the tier, with a message"
