#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-dd-seed000.sh - seed 000 (NetBSD PR kern/1718) on the simulated
# RZ25: dd of 86 MiB onto 8K blocks with clusters limited to MAXBSIZE took
# 105 s with MAXBSIZE 16K and 52 s with 64K.  clio must land within 15% of
# each, with a ratio between 1.8 and 2.25, and send the device transfers
# of exactly MAXBSIZE.
set -e
. "$(dirname "$0")/functions.sh"

run() {
	"$CLIO" dd if=/dev/zero of=sim:preset=rz25 bs=1M count=86 conv=fsync \
		--bsize=8k --cluster=lite --maxbsize="$1" --json \
		>"$tmp/$1.json" 2>"$tmp/$1.err" ||
		fail "clio dd --maxbsize=$1 exited $?: $(cat "$tmp/$1.err")"
	grep -q '"clock": "virtual"' "$tmp/$1.json" || fail "$1: not on the virtual clock"
	[ "$(json_num bytes_copied "$tmp/$1.json")" = 90177536 ] ||
		fail "$1: bytes_copied is not 86 MiB"
	[ "$(json_num write_bytes "$tmp/$1.json")" = 90177536 ] ||
		fail "$1: the device did not get all 86 MiB"
}

run 16k
run 64k
t16=$(json_num elapsed_s "$tmp/16k.json")
t64=$(json_num elapsed_s "$tmp/64k.json")
in_range "elapsed_s, MAXBSIZE 16K" "$t16" 89.25 120.75
in_range "elapsed_s, MAXBSIZE 64K" "$t64" 44.2 59.8
in_range "ratio 16K / 64K" "$(awk -v a="$t16" -v b="$t64" 'BEGIN { printf "%.4f", a / b }')" 1.8 2.25
in_range "KB per transfer, 16K" "$(json_num kb_per_transfer "$tmp/16k.json")" 16 16
in_range "KB per transfer, 64K" "$(json_num kb_per_transfer "$tmp/64k.json")" 64 64
exit 0
