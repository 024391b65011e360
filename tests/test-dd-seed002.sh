#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-dd-seed002.sh - seed 002 (FreeBSD UFS, 2002) on the simulated
# da2002: rewriting a file with 1 KiB writes (dd bs=1k conv=notrunc, 8K
# blocks) read each block alone before writing it: 14 KB/t, 11.2 MB/s.
# Clustered read-before-write gave 63.6 KB/t and 27 MB/s.  clio with
# --rbw=cluster must average 63.6 KB per transfer (within 15%) and move at
# least 2.0 times the MB/s of --rbw=block, which must average 14 KB/t.
set -e
. "$(dirname "$0")/functions.sh"

# run MODE: sets kbt and mbs from the device's counters
run() {
	f="$tmp/$1.json"
	"$CLIO" dd if=/dev/zero of=sim:preset=da2002 bs=1k count=64k conv=notrunc \
		--bsize=8k --maxphys=64k --rbw="$1" --json >"$f" 2>"$tmp/$1.err" ||
		fail "clio dd --rbw=$1 exited $?: $(cat "$tmp/$1.err")"
	r=$(json_num reads "$f")
	w=$(json_num writes "$f")
	rb=$(json_num read_bytes "$f")
	wb=$(json_num write_bytes "$f")
	el=$(json_num elapsed_s "$f")
	[ "$wb" = 67108864 ] || fail "$1: the device got $wb bytes written, not 64 MiB"
	[ "$rb" -ge 67108864 ] || fail "$1: the device read $rb bytes, less than the file"
	kbt=$(awk -v r="$r" -v w="$w" -v rb="$rb" -v wb="$wb" \
		'BEGIN { printf "%.3f", (rb + wb) / 1024 / (r + w) }')
	mbs=$(awk -v rb="$rb" -v wb="$wb" -v t="$el" \
		'BEGIN { printf "%.3f", (rb + wb) / 1e6 / t }')
	echo "rbw=$1: $r reads, $w writes, $kbt KB/t, $mbs MB/s, $el s"
}

run cluster
kbt_c=$kbt
mbs_c=$mbs
run block
kbt_b=$kbt
mbs_b=$mbs
in_range "KB/t, rbw=cluster" "$kbt_c" 54.06 73.14
in_range "KB/t, rbw=block" "$kbt_b" 11.9 16.1
in_range "MB/s ratio cluster / block" \
	"$(awk -v a="$mbs_c" -v b="$mbs_b" 'BEGIN { printf "%.3f", a / b }')" 2.0 1000
exit 0
