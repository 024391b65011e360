#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-tier-dirty.sh - dirty blocks a crash left in DIR (a writeback
# clio dd, 16 KiB blocks, killed -9 while its input, a FIFO, is still
# open) and the opens that follow: a read-only clio dd with the same
# block size reads them (the file's newest bytes), as do ones with 64
# or 4 KiB blocks, and one by the direct path in pieces of 4608 bytes
# (writethrough or writeback); each leaves them in DIR, and the next
# clio dd that opens the file for writing (with 64 KiB blocks) writes
# them back, counted as recovered: the file then has what the first
# read-only copy read.  Dirty blocks whose object's meta was damaged (a
# byte flipped) or removed are not written back (no version to check
# them against) nor lost: the next open for writing, with their block
# size or another, copies them to lost+found (the file as it was with
# them is what a read-only copy read), says so, and leaves the file as
# it was.
. "$(dirname "$0")/functions.sh"

dc="$tmp/dc"
mkdir "$dc"
head -c 2097152 /dev/urandom >"$tmp/new"
head -c 2097152 /dev/urandom >"$tmp/f"
cp "$tmp/f" "$tmp/old"

# the writeback copy of new onto f, killed -9 with its dirty blocks in DIR
mkfifo "$tmp/fifo"
make_dirty() {
	"$CLIO" dd if="$tmp/fifo" of="$tmp/f" bs=64k conv=notrunc iflag=fullblock \
		--bsize=16k --cache-size=256k --dirty-age=1000 --disk-cache="$dc" \
		--disk-cache-mode=writeback >/dev/null 2>"$tmp/err" &
	pid=$!
	exec 3>"$tmp/fifo"
	cat "$tmp/new" >&3
	sleep 2
	kill -9 "$pid"
	exec 3>&-
	wait "$pid" 2>/dev/null
}
make_dirty

# ro BSIZE OUT: a read-only copy of f through the tier
ro() {
	"$CLIO" dd if="$tmp/f" of="$2" bs=64k --bsize="$1" --disk-cache="$dc" \
		>/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "a read-only copy with bsize $1"; }
}
ro 16k "$tmp/ref"
cmp -s "$tmp/ref" "$tmp/old" && fail "no dirty block was left in DIR"
cmp -s "$tmp/f" "$tmp/old" || fail "the file was written before its write-back"
ro 64k "$tmp/out"
cmp "$tmp/ref" "$tmp/out" || fail "a read-only copy with 64 KiB blocks did not read the dirty blocks"
ro 4k "$tmp/out"
cmp "$tmp/ref" "$tmp/out" || fail "a read-only copy with 4 KiB blocks did not read the dirty blocks"
cmp -s "$tmp/f" "$tmp/old" || fail "a read-only open wrote the file"
echo "ok: read-only opens of another block size read the dirty blocks"

# reads off the blocks' alignment (the direct path, 4608 bytes each)
for mode in writethrough writeback; do
	"$CLIO" dd if="$tmp/f" of="$tmp/out" bs=4608 iflag=direct --disk-cache="$dc" \
		--disk-cache-mode=$mode >/dev/null 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "a read-only direct copy ($mode)"; }
	cmp "$tmp/ref" "$tmp/out" || fail "a read-only direct copy ($mode) did not read the dirty blocks"
done
cmp -s "$tmp/f" "$tmp/old" || fail "a read-only open wrote the file"
echo "ok: unaligned reads of a read-only open read the dirty blocks"

# (with another block size: the entries start over once written back)
"$CLIO" dd if=/dev/null of="$tmp/f" conv=notrunc --bsize=64k --disk-cache="$dc" --json \
	>"$tmp/j" 2>"$tmp/err" || { cat "$tmp/err"; fail "opening f for writing"; }
cmp "$tmp/ref" "$tmp/f" || fail "the dirty blocks did not reach the file: lost by a read-only open"
recovered=$(python3 -c 'import json,sys
for d in json.load(open(sys.argv[1]))["devices"]:
    if d["name"] == sys.argv[2]: print(d["disk_cache"]["recovered"])' "$tmp/j" "$tmp/f")
[ "${recovered:-0}" -gt 0 ] || { cat "$tmp/j"; fail "the blocks written back are not counted as recovered"; }
echo "ok: the dirty blocks are written back at the next open for writing"

# lost_found_check WHAT: the dirty blocks are in lost+found, not in f:
# the file as it was with them is what the read-only copy read (ref2)
lost_found_check() {
	grep -q "kept in .*lost+found" "$tmp/err" || { cat "$tmp/err"; fail "$1: no message names lost+found"; }
	cmp -s "$tmp/f" "$tmp/old" || fail "$1: the file was written"
	python3 - "$dc/lost+found" "$tmp/old" "$tmp/ref2" <<'EOF' || fail "$1: lost+found does not hold the dirty blocks"
import os, sys
top = sys.argv[1]
data = bytearray(open(sys.argv[2], 'rb').read())
for sub in os.listdir(top):
    for name in os.listdir(os.path.join(top, sub)):
        if name != 'README':
            b = open(os.path.join(top, sub, name), 'rb').read()
            data[int(name):int(name) + len(b)] = b
assert bytes(data) == open(sys.argv[3], 'rb').read()
EOF
	rm -rf "$dc/lost+found"
}
for damage in flip remove remove64; do
	cp "$tmp/old" "$tmp/f"
	rm -rf "$dc" && mkdir "$dc" # f's object alone
	make_dirty
	obj=$(ls "$dc")
	ro 16k "$tmp/ref2"
	cmp -s "$tmp/ref2" "$tmp/old" && fail "no dirty block was left in DIR"
	case $damage in
	flip) printf 'X' | dd of="$dc/$obj/meta" bs=1 seek=200 conv=notrunc 2>/dev/null;;
	remove*) rm "$dc/$obj/meta";;
	esac
	bs=16k
	[ "$damage" = remove64 ] && bs=64k # the blocks' size is not conf's
	"$CLIO" dd if=/dev/null of="$tmp/f" conv=notrunc --bsize=$bs --disk-cache="$dc" >/dev/null 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "opening f for writing, its meta damaged ($damage)"; }
	lost_found_check "meta damaged ($damage)"
done
echo "ok: dirty blocks under a damaged or missing meta go to lost+found"
