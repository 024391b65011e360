#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-mount-rewrite.sh - a 1 KiB rewrite through the mount (seed 002's
# dd bs=1k conv=notrunc) on an image file of 32 MiB, with each kernel
# cache setting:
#   kernel_cache=on (the default): the kernel's writeback cache gathers the
#     writes into pages, and the pages it must read first reach clio as
#     read-ahead (mountahead.c), not one READ per page: fewer than 1024
#     front-end reads for 8192 pages, and read-ahead kicks counted;
#   kernel_cache=off: every write(2) is a FUSE write: at least 32768 of
#     them reach clio.
# Each time the image holds the new data byte for byte after unmounting.
set -e
. "$(dirname "$0")/mount-common.sh"
mnt=$tmp/mnt img=$tmp/img
mkdir "$mnt"
head -c 32M /dev/urandom >"$tmp/old"
head -c 32M /dev/urandom >"$tmp/new"

val() { sed -n "s/^$1: //p" "$2"; }

for kc in on off; do
	cp "$tmp/old" "$img"
	mount_start "$img" "$mnt" -o kernel_cache=$kc,cache_size=16M
	dd if="$tmp/new" of="$mnt/disk" bs=1k conv=notrunc 2>/dev/null ||
		fail "kernel_cache=$kc: dd bs=1k"
	"$CLIO" stat --raw "$mnt" >"$tmp/s"
	reads=$(val 'disk front_reads' "$tmp/s")
	writes=$(val 'disk front_writes' "$tmp/s")
	kicks=$(val kernel_readahead_kicks "$tmp/s")
	echo "kernel_cache=$kc: front reads $reads, writes $writes, kicks $kicks" >&2
	if [ $kc = on ]; then
		[ "$reads" -lt 1024 ] ||
			fail "kernel_cache=on: $reads front-end reads for 8192 pages, want < 1024"
		[ "$kicks" -gt 0 ] || fail "kernel_cache=on: no read-ahead kicks"
		[ "$writes" -lt 32768 ] ||
			fail "kernel_cache=on: $writes front-end writes, the kernel gathered none"
	else
		[ "$writes" -ge 32768 ] ||
			fail "kernel_cache=off: $writes front-end writes, want >= 32768"
		[ "$kicks" -eq 0 ] || fail "kernel_cache=off: $kicks read-ahead kicks"
	fi
	cmp "$tmp/new" "$mnt/disk" || fail "kernel_cache=$kc: differs through the mount"
	mount_stop "$mnt"
	cmp "$tmp/new" "$img" || fail "kernel_cache=$kc: the image differs after unmount"
done
exit 0
