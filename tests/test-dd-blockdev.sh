#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-dd-blockdev.sh - clio dd on a block device (a loop device on a
# 64 KiB image, detached on exit), against GNU dd 9.1 byte for byte
# (tests/dd-compare.sh): the device's bytes, the output, standard error
# and the exit status agree for writes that run into the device's end
# (a short block write, a short gathered obs block: "writing to" and a
# partial record), seek= and skip= past the end (GNU's lseek(2) fails:
# "cannot seek" / "cannot skip: Invalid argument", status 74), exactly at
# the end, no truncation without conv=notrunc, conv=sparse, the direct
# path, and if= and of= the same device.  Skipped (77) without root or
# a free loop device.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/dd-compare.sh"
[ "$(id -u)" -eq 0 ] || { echo "needs root (losetup)"; exit 77; }
command -v losetup >/dev/null 2>&1 || { echo "losetup not found (apt-get install mount)"; exit 77; }
head -c 65536 /dev/zero >"$tmp/img"
dev=$(losetup -f --show "$tmp/img" 2>"$tmp/loerr") || { echo "no loop device: $(cat "$tmp/loerr")"; exit 77; }
trap 'losetup -d "$dev"; rm -rf "$tmp"' EXIT
[ "$(blockdev --getsize64 "$dev")" = 65536 ] || fail "$dev is not 64 KiB"
head -c 65536 /dev/urandom >"$tmp/init"
dev_init="$tmp/init"

compare_rows <<'ROWS'
dev if=@IN@ of=@DEV@ bs=4k
dev if=@IN@ of=@DEV@ bs=1000 count=3 seek=63
dev if=@IN@ of=@DEV@ bs=1000 seek=3 count=4
dev if=@IN@ of=@DEV@ bs=4k seek=16
dev if=@IN@ of=@DEV@ bs=4k seek=17
dev if=@IN@ of=@DEV@ bs=4k seek=20 conv=notrunc
dev if=@IN@ of=@DEV@ bs=1000 seek=65537 oflag=seek_bytes count=1
dev if=@IN@ of=@DEV@ ibs=3000 obs=1000 count=3 seek=60
dev if=@IN@ of=@DEV@ ibs=1000 obs=3000 count=9 seek=20
dev if=@IN@ of=@DEV@ ibs=1000 obs=3000 count=40
dev if=@DEV@ of=@OUT@ bs=4k skip=16
dev if=@DEV@ of=@OUT@ bs=4k skip=17
dev if=@DEV@ of=@OUT@ bs=1000 skip=65
dev if=@DEV@ of=@OUT@ bs=1000 skip=66
dev if=@DEV@ of=@OUT@ bs=1000 skip=65537 iflag=skip_bytes
dev if=@DEV@ of=@OUT@ bs=3000 skip=7 count=5
dev if=@DEV@ of=@OUT@ ibs=1000 obs=4096
dev if=@DEV@ of=@DEV@ bs=4k seek=1 count=3 conv=notrunc
dev if=@DEV@ of=@DEV@ bs=4k skip=1 conv=notrunc
dev if=@DEV@ of=@DEV@ bs=1000 seek=2 count=20
dev if=@ZEROS@ of=@DEV@ bs=1000 conv=sparse
dev if=@ZEROS@ of=@DEV@ bs=1000 seek=10 conv=sparse,notrunc
dev if=/dev/zero of=@DEV@ bs=1000
dev if=/dev/zero of=@DEV@ ibs=1000 obs=3000
dev if=@IN@ of=@DEV@ bs=4k count=3 oflag=direct
dev if=@DEV@ of=@OUT@ bs=4k count=5 iflag=direct
dev if=@IN@ of=@DEV@ bs=4k seek=3 count=2 oflag=direct conv=notrunc
ROWS
echo "ok: $rows rows on $dev"
exit 0
