#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-tier-dd.sh - the disk tier (--disk-cache=DIR) through clio dd on
# file devices: a second run reads no byte from the device (its --json
# device row) and copies the same bytes; another writer's change between
# runs is seen (no stale byte; stale_drops counted); a byte flipped in
# DIR is detected, counted and the block refetched; two files share one
# DIR, each one object however its path is spelled; the summary names
# the tier's counters; a bad value is refused with a message naming it.
. "$(dirname "$0")/functions.sh"

dc="$tmp/dc"
mkdir "$dc"
head -c 3000000 /dev/urandom >"$tmp/a"
head -c 1048576 /dev/urandom >"$tmp/b"

# dd_json IN OUT ARGS...: copy with the tier, the --json line in $tmp/j
dd_json() {
	in=$1 out=$2
	shift 2
	"$CLIO" dd if="$in" of="$out" bs=64k --disk-cache="$dc" --json "$@" \
		>"$tmp/j" 2>"$tmp/err" || { cat "$tmp/err"; fail "clio dd if=$in"; }
}

# dev KEY: KEY of the input device's row; dc KEY: of its disk_cache
dev() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["devices"][0][sys.argv[2]])' "$tmp/j" "$1"
}
dc() {
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(j["devices"][0]["disk_cache"][sys.argv[2]])' "$tmp/j" "$1"
}

# ------------------------------------------------------------ restart reuse
dd_json "$tmp/a" "$tmp/out1"
cmp "$tmp/a" "$tmp/out1" || fail "first run: the bytes differ"
[ "$(dev read_bytes)" = 3000000 ] || fail "first run read $(dev read_bytes) bytes from the device"
[ "$(dc insertions)" -gt 0 ] || fail "first run inserted nothing"
dd_json "$tmp/a" "$tmp/out2"
cmp "$tmp/a" "$tmp/out2" || fail "second run: the bytes differ"
[ "$(dev reads)" = 0 ] || fail "second run: $(dev reads) reads reached the device"
[ "$(dc bytes_from_cache)" = 3000000 ] || fail "second run: $(dc bytes_from_cache) bytes from DIR"
echo "ok: a second clio dd reads no block from the device ($(dc hits) hits in DIR)"

# ------------------------------------------------------------ two objects
dd_json "$tmp/b" "$tmp/outb"
dd_json "$tmp/b" "$tmp/outb"
cmp "$tmp/b" "$tmp/outb" || fail "the second file's bytes differ"
[ "$(dev reads)" = 0 ] || fail "the second file was read from the device again"
dd_json "$tmp/a" "$tmp/out2"
[ "$(dev reads)" = 0 ] || fail "the first file lost its entries to the second"
echo "ok: two files share one DIR"

# ------------------------------------------------------------ one file, one object
# the file's path is taken resolved: relative, through a symbolic link
# or as given, one object
(cd "$tmp" && dd_json b "$tmp/outb")
[ "$(dev reads)" = 0 ] || fail "a relative path was another object"
ln -s "$tmp/b" "$tmp/blink"
dd_json "$tmp/blink" "$tmp/outb"
[ "$(dev reads)" = 0 ] || fail "a symbolic link to the file was another object"
echo "ok: the file under another spelling of its path is the same object"

# a path longer than meta keeps (1023 bytes): the entries are still the
# file's at the next run
long="$tmp"
for i in 1 2 3 4 5 6 7 8 9 10 11; do
	long="$long/$(printf '%0100d' "$i")"
done
mkdir -p "$long"
cp "$tmp/b" "$long/f"
dd_json "$long/f" "$tmp/outl"
dd_json "$long/f" "$tmp/outl"
cmp "$tmp/b" "$tmp/outl" || fail "a long path: the bytes differ"
[ "$(dev reads)" = 0 ] || fail "a long path: the entries were dropped ($(dev reads) reads of the device)"
echo "ok: a file under a path of ${#long} bytes keeps its entries"

# ------------------------------------------------------------ a change is seen
printf 'another writer was here' | dd of="$tmp/a" bs=1 seek=1234567 conv=notrunc 2>/dev/null
dd_json "$tmp/a" "$tmp/out3"
cmp "$tmp/a" "$tmp/out3" || fail "a stale byte after another writer's change"
[ "$(dc stale_drops)" -gt 0 ] || fail "the change was not counted as stale drops"
echo "ok: another writer's change is seen ($(dc stale_drops) entries dropped)"

# ------------------------------------------------------------ a flipped byte
obj=$(grep -l "path=$tmp/a\$" "$dc"/*/meta 2>/dev/null | head -n 1)
[ -z "$obj" ] && obj=$(grep -al "path=$tmp/a" "$dc"/*/meta | head -n 1)
[ -n "$obj" ] || fail "no object of $tmp/a in $dc"
# a byte of block 1 (its slot from the index: 64-byte records of magic,
# crc, seq, lbn, data crc, length, flags)
python3 - "$(dirname "$obj")" <<'PY' || fail "no entry of block 1 in the index"
import struct, sys
d = sys.argv[1]
idx = open(d + "/index", "rb").read()
for i in range(len(idx) // 64):
    magic, _, _, lbn, _, length, flags = struct.unpack_from("<IIQQIII", idx, i * 64)
    if magic == 0x52544c43 and lbn == 1 and flags & 1 and length == 16384:
        break
else:
    sys.exit(1)
with open(d + "/data", "r+b") as f:
    f.seek(i * 16384 + 1234)
    b = f.read(1)
    f.seek(i * 16384 + 1234)
    f.write(bytes([b[0] ^ 0x10]))
PY
dd_json "$tmp/a" "$tmp/out4"
cmp "$tmp/a" "$tmp/out4" || fail "a corrupt entry was served"
[ "$(dc checksum_failures)" = 1 ] || fail "checksum_failures = $(dc checksum_failures), not 1"
[ "$(dev read_bytes)" = 16384 ] || fail "the corrupt block: $(dev read_bytes) bytes refetched, not 16384"
echo "ok: a flipped byte in DIR is detected and its block refetched"

# ------------------------------------------------------------ the summary
"$CLIO" dd if="$tmp/a" of=/dev/null bs=1M --disk-cache="$dc" 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd with the summary"; }
grep -q "^disk cache $dc: [0-9]* hits, 0 misses, 3000000 bytes from the cache, 0 from the device" "$tmp/err" ||
	{ cat "$tmp/err"; fail "the summary lacks the disk cache line"; }
echo "ok: the summary has the disk cache's line"

# ------------------------------------------------------------ bad values
for kv in "--disk-cache=$tmp/nonexistent" "--disk-cache-mode=sometimes" \
	"--disk-cache-verify=all" "--disk-cache-size=lots"; do
	if "$CLIO" dd if="$tmp/b" of=/dev/null "$kv" 2>"$tmp/err"; then
		fail "clio dd $kv succeeded"
	fi
	v=${kv#*=}
	grep -q "'$v'" "$tmp/err" || { cat "$tmp/err"; fail "the error does not name '$v'"; }
done
echo "ok: bad disk cache values are refused, each named"

# ------------------------------------------------------------ DIR's size
# disk_cache_size bounds DIR: opening a second object empties the least
# recently used other one when the others hold more than half of it
dc="$tmp/dc2"
mkdir "$dc"
head -c 786432 /dev/urandom >"$tmp/c"
head -c 786432 /dev/urandom >"$tmp/d"
dd_json "$tmp/c" "$tmp/outc" --disk-cache-size=1M
dd_json "$tmp/d" "$tmp/outd" --disk-cache-size=1M
cmp "$tmp/d" "$tmp/outd" || fail "DIR's size: the bytes differ"
# (clio dd's outputs are objects too: c and outc go)
[ "$(dc objects_culled)" -ge 1 ] || fail "no older object was culled"
used=$(du -sk "$dc" | cut -f 1)
in_range "KiB in a DIR of disk_cache_size=1M (and its metadata)" "$used" 1 1280
dd_json "$tmp/c" "$tmp/outc" --disk-cache-size=1M
cmp "$tmp/c" "$tmp/outc" || fail "DIR's size: a culled object's bytes differ"
[ "$(dev read_bytes)" = 786432 ] || fail "the culled object was not read from the device again"
echo "ok: disk_cache_size bounds DIR, the least recently used object goes first"
