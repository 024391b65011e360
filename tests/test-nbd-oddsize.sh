#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-oddsize.sh - an image of 1000001 bytes (a multiple neither of
# bsize nor of 512) behind the clio filter (nbdkit's file plugin) and
# behind clio serve, on Unix sockets: the minimum block size advertised
# divides the export size (NBD: otherwise a client cannot reach the last
# bytes; libnbd refuses the unaligned tail, qemu asserts), so that
# nbdcopy, clio dd through the NBD client and qemu-img convert copy every
# byte out; nbdcopy writes a new image in, the last byte included, and
# the file holds it after the FLUSH.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
command -v nbdcopy >/dev/null 2>&1 || { echo "nbdcopy not found (apt-get install libnbd-bin)"; exit 77; }
nbd_with_clio
size=1000001
head -c $size /dev/urandom >"$tmp/img"
head -c $size /dev/urandom >"$tmp/new"

# odd WHAT: the export on $uri is $tmp/disk of $size bytes
odd() {
	nbdinfo --json "$uri" >"$tmp/info.json" || fail "$1: nbdinfo"
	python3 - "$tmp/info.json" $size <<'PY' || fail "$1: the minimum block size does not divide the size"
import json, sys
e = json.load(open(sys.argv[1]))["exports"][0]
size = int(sys.argv[2])
assert e["export-size"] == size, e
m = e.get("block_size_minimum", 1)
assert size % m == 0, ("minimum", m, "size", size)
PY
	rm -f "$tmp/out"
	nbdcopy "$uri" "$tmp/out" 2>"$tmp/err" && cmp "$tmp/out" "$tmp/img" ||
		{ cat "$tmp/err"; fail "$1: nbdcopy out"; }
	"$CLIO" dd if="$uri" of="$tmp/out2" bs=64k 2>"$tmp/err" && cmp "$tmp/out2" "$tmp/img" ||
		{ cat "$tmp/err"; fail "$1: clio dd out through the NBD client"; }
	if command -v qemu-img >/dev/null 2>&1; then
		# qemu-img writes whole 512-byte sectors: the bytes compared
		qemu-img convert -f raw -O raw "$uri" "$tmp/qout" 2>"$tmp/err" &&
			cmp -n $size "$tmp/qout" "$tmp/img" || { cat "$tmp/err"; fail "$1: qemu-img convert out"; }
	fi
	nbdcopy --flush "$tmp/new" "$uri" 2>"$tmp/err" || { cat "$tmp/err"; fail "$1: nbdcopy in"; }
	cmp "$tmp/new" "$tmp/disk" || fail "$1: the file lacks bytes whose FLUSH returned"
	echo "ok: $1: $size bytes: minimum $(json_num block_size_minimum "$tmp/info.json"), copied out (nbdcopy, clio dd, qemu-img) and in (nbdcopy), compared"
}

cp "$tmp/img" "$tmp/disk"
nbd_start --filter="$filter" file "$tmp/disk" bsize=64k
odd "the clio filter"

cp "$tmp/img" "$tmp/disk"
nbd_start "$plugin" "$tmp/disk" bsize=64k
odd "the clio plugin"
exit 0
