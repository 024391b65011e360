#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-fuzz.sh - nbdkit-clio-filter.so and nbdkit-clio-plugin.so
# against plain nbdkit: tests/tools/nbdfuzz sends the same random requests
# (fixed seeds, unaligned, across the end, zero-length, FUA, NO_HOLE,
# flush, cache) to both with small caches that evict and write back, and
# compares every read and every error; with the file plugin, the file
# after each FLUSH; four connections on regions whose edges share blocks,
# then a FLUSH on one and a read of all on another; the plugin on an
# nbd: device over nbdkit's memory plugin.  With disk_cache, the
# filter neither trims nor zeroes below the disk tier: a zero of whole
# blocks whose old data was in the tier reads back as zeros, and lands.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
command -v qemu-io >/dev/null 2>&1 || { echo "qemu-io not found (apt-get install qemu-utils)"; exit 77; }
nbd_with_clio
nbdfuzz="$(dirname "$CLIO")/tests/tools/nbdfuzz"
[ -x "$nbdfuzz" ] || fail "nbdfuzz not built (make tests)"
refuri="nbd+unix:///?socket=$tmp/ref.sock"

# ref_start ARGS...: plain nbdkit ARGS on $tmp/ref.sock, beside nbd_start's
# server (call it after nbd_start, which stops every server it knows)
ref_start() {
	rm -f "$tmp/ref.pid" "$tmp/ref.sock"
	nbdkit -U "$tmp/ref.sock" --pidfile "$tmp/ref.pid" "$@" || fail "nbdkit $* did not start"
	pids=$nbd_pids
	nbd_wait_pid "$tmp/ref.pid"
	nbd_pids="$pids $nbd_pids"
}

# fuzz NAME ARGS...: nbdfuzz ARGS on $uri, its output kept for a failure
fuzz() {
	name=$1; shift
	"$nbdfuzz" "$@" "$uri" >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "$name"; }
	echo "ok: $name: $(tail -n 1 "$tmp/out" | sed 's/^nbdfuzz: //')"
}

size=2098381 # 512 blocks of 4 KiB and 1229 bytes
conf="bsize=4k cache_size=256k"
nbd_start --filter="$filter" memory $size $conf
ref_start memory $size
fuzz "filter on memory, $conf" -s 1 -n 800 -r "$refuri"
nbd_start "$plugin" mem:size=$size $conf
ref_start memory $size
fuzz "plugin on mem:, $conf" -s 2 -n 800 -r "$refuri"
head -c $size /dev/urandom >"$tmp/a"
cp "$tmp/a" "$tmp/b"
nbd_start --filter="$filter" file "$tmp/b" $conf
ref_start file "$tmp/a"
fuzz "filter on file, $conf" -s 3 -n 500 -r "$refuri" -f "$tmp/b"
cp "$tmp/a" "$tmp/b"
nbd_start "$plugin" "file:$tmp/b" $conf
ref_start file "$tmp/a"
fuzz "plugin on file:, $conf" -s 4 -n 500 -r "$refuri" -f "$tmp/b"
nbd_start --filter="$filter" file "$tmp/b" $conf
fuzz "filter on file, $conf, 4 connections" -s 5 -n 300 -c 4 -f "$tmp/b"
nbd_start "$plugin" "file:$tmp/b" $conf
fuzz "plugin on file:, $conf, 4 connections" -s 6 -n 300 -c 4 -f "$tmp/b"
conf="bsize=512 cache_size=64k dirty_hi=5 dirty_lo=1 maxphys=8k"
nbd_start --filter="$filter" memory $size $conf
ref_start memory $size
fuzz "filter on memory, $conf" -s 7 -n 800 -r "$refuri"
nbd_start "$plugin" mem:size=$size $conf
ref_start memory $size
fuzz "plugin on mem:, $conf" -s 8 -n 800 -r "$refuri"

# the plugin on an nbd device (clio serve as a proxy): trim and zero
# reach nbdkit's memory plugin behind it as NBD_CMD_TRIM and WRITE_ZEROES
nbd_stop
rm -f "$tmp/back.pid" "$tmp/back.sock"
nbdkit -U "$tmp/back.sock" --pidfile "$tmp/back.pid" memory $size || fail "nbdkit memory did not start"
nbd_wait_pid "$tmp/back.pid"
back=$nbd_pids
rm -f "$tmp/nbdkit.pid"
env $nbd_env nbdkit -U "$sock" --pidfile "$tmp/nbdkit.pid" "$plugin" \
	"device=nbd+unix:///?socket=$tmp/back.sock" $conf || fail "the plugin on nbd: did not start"
nbd_wait_pid "$tmp/nbdkit.pid"
nbd_pids="$back $nbd_pids"
ref_start memory $size
fuzz "plugin on nbd: (nbdkit memory), $conf" -s 10 -n 800 -r "$refuri"
nbd_stop

# the filter below a disk tier: the plugin's zero and trim would bypass it
for mode in writethrough writeback; do
	rm -rf "$tmp/dc"; mkdir "$tmp/dc"
	head -c 1048576 /dev/urandom >"$tmp/b"
	nbd_start --filter="$filter" file "$tmp/b" bsize=4k cache_size=256k \
		disk_cache="$tmp/dc" disk_cache_mode=$mode
	qemu-io -f raw -c 'write -P 0x3a 0 64k' -c flush -c 'write -z 0 64k' \
		-c 'read -P 0 0 64k' "$uri" >"$tmp/out" 2>&1
	grep -q 'verification failed' "$tmp/out" &&
		{ cat "$tmp/out"; fail "disk_cache_mode=$mode: a zeroed range reads back its old data"; }
	grep -q 'read 65536/65536' "$tmp/out" || { cat "$tmp/out"; fail "qemu-io"; }
	nbdinfo "$uri" | grep -q 'can_trim: false' || fail "$mode: trim offered below a disk tier"
	nbd_stop
	cmp -n 65536 "$tmp/b" /dev/zero >/dev/null || fail "disk_cache_mode=$mode: the zeros did not land"
	echo "ok: filter, disk_cache_mode=$mode: a zero over data in the tier reads back and lands as zeros"
done
rm -rf "$tmp/dc"; mkdir "$tmp/dc"
head -c $size /dev/urandom >"$tmp/a"
cp "$tmp/a" "$tmp/b"
nbd_start --filter="$filter" file "$tmp/b" bsize=4k cache_size=256k \
	disk_cache="$tmp/dc" disk_cache_size=2M
ref_start file "$tmp/a"
fuzz "filter on file, disk_cache" -s 9 -n 500 -r "$refuri" -f "$tmp/b"
