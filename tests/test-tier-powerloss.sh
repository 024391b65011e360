#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-tier-powerloss.sh - the disk tier across a power loss: DIR on an
# ext4 loop-mounted in a mount namespace of the test's own; the image
# file copied while the file system is mounted holds what reached the
# disk (written back or made durable), which a power loss would leave.
# A file read through the tier, then changed by another writer (its
# size kept): the next clio dd drops the stale entries and records the
# file's new version; the image copied right after it, mounted as DIR,
# serves no byte of the version before (the cleared records are durable
# before the new version is recorded clean).  A file and DIR on one such
# file system (the copy then attached to the same loop device: the
# file's device number is kept): clio dd writes the file through the
# tier (writethrough) without conv=fsync, and the file system's journal
# commits its new times; after the power loss the tier reads what the
# file has (the device was flushed before the version was recorded).
. "$(dirname "$0")/coarse-common.sh"
. "$(dirname "$0")/functions.sh"

fs="$tmp/fs"
fs2="$tmp/fs2"
mkdir "$fs" "$fs2"
coarse_fs "$fs" "$tmp/img"
trap 'umount "$fs" 2>/dev/null; umount "$fs2" 2>/dev/null; rm -rf "$tmp"' EXIT
mkdir "$fs/dc"
head -c 1048576 /dev/urandom >"$tmp/f"

"$CLIO" dd if="$tmp/f" of=/dev/null bs=64k --disk-cache="$fs/dc" >/dev/null 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "reading f"; }
sync # the entries of the first version are on the disk
sleep 2.1 # the version recorded is trusted (not racy)
head -c 1048576 /dev/urandom >"$tmp/new"
cat "$tmp/new" >"$tmp/f" # the same inode and size, another version
sleep 2.1
"$CLIO" dd if="$tmp/f" of=/dev/null bs=64k count=1 --disk-cache="$fs/dc" --json \
	>"$tmp/j" 2>"$tmp/err" || { cat "$tmp/err"; fail "reading f changed"; }
[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][0]["disk_cache"]["stale_drops"])' "$tmp/j")" -gt 0 ] || { cat "$tmp/j"; fail "no stale entry dropped"; }
# the power loss: what reached the disk, well within the kernel's
# write-back delay
cp "$tmp/img" "$tmp/crash.img"
umount "$fs"
mount -o loop "$tmp/crash.img" "$fs2" || fail "cannot mount the copied image"
"$CLIO" dd if="$tmp/f" of="$tmp/out" bs=64k --disk-cache="$fs2/dc" --json \
	>"$tmp/j" 2>"$tmp/err" || { cat "$tmp/err"; fail "reading f after the power loss"; }
from_dir=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["devices"][0]["disk_cache"]["bytes_from_cache"])' "$tmp/j")
cmp "$tmp/new" "$tmp/out" ||
	fail "after a power loss the tier served the version before ($from_dir bytes from DIR)"
[ "$from_dir" = 0 ] || fail "after a power loss $from_dir bytes of f came from DIR"
echo "ok: entries dropped as stale stay dropped across a power loss"

command -v losetup >/dev/null 2>&1 || { echo "losetup is missing"; exit 77; }
umount "$fs2"
truncate -s 32M "$tmp/img2"
mkfs.ext4 -q -F "$tmp/img2" >/dev/null 2>&1 || fail "cannot make an ext4 image"
loop=$(losetup -f --show "$tmp/img2") || { echo "cannot attach a loop device"; exit 77; }
trap 'umount "$fs" 2>/dev/null; losetup -d "$loop" 2>/dev/null; rm -rf "$tmp"' EXIT
mount -o commit=1 "$loop" "$fs" || fail "cannot mount $loop"
mkdir "$fs/dc"
head -c 1048576 /dev/urandom >"$fs/f"
sync
sleep 2.1
"$CLIO" dd if="$tmp/new" of="$fs/f" bs=64k conv=notrunc --disk-cache="$fs/dc" \
	>/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "writing f through the tier"; }
sleep 3 # the journal has committed the file's new times
cp "$tmp/img2" "$tmp/crash2.img"
umount "$fs"
losetup -d "$loop"
losetup "$loop" "$tmp/crash2.img" || fail "cannot attach the copied image to $loop"
mount "$loop" "$fs" || fail "cannot mount the copied image"
"$CLIO" dd if="$fs/f" of="$tmp/out" bs=64k --disk-cache="$fs/dc" >/dev/null 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "reading f after the power loss"; }
cat "$fs/f" >"$tmp/dev"
cmp "$tmp/dev" "$tmp/out" || fail "after a power loss the tier read other bytes than the file has"
umount "$fs"
echo "ok: a version recorded at close is one the file keeps across a power loss"
