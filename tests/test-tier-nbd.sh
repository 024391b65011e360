#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-tier-nbd.sh - the disk tier over an NBD device: nbdkit's file
# plugin behind its delay filter (2 ms each way) on a Unix socket.  A
# second clio dd, and one after nbdkit restarted, read no byte over NBD
# (the device row of --json) and copy the same bytes; after the image
# changed behind the cache (no validator on NBD: the user's promise is
# broken on purpose), --disk-cache-verify=sample finds out, drops the
# entries and the copy has the new bytes; writeback mode: what clio dd
# wrote is on the server once it exited, and a second read is served
# from DIR.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"

dc="$tmp/dc"
mkdir "$dc"
head -c 8388608 /dev/urandom >"$tmp/img"
head -c 8388608 /dev/urandom >"$tmp/new"
head -c 2097152 /dev/urandom >"$tmp/pat"

start() {
	nbd_start --filter=delay file "$tmp/img" rdelay=2ms wdelay=2ms
}

# cp_json ARGS...: clio dd with the tier, its --json line in $tmp/j
cp_json() {
	"$CLIO" dd bs=256k --disk-cache="$dc" --json "$@" >"$tmp/j" 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "clio dd $*"; }
}
row() { # ROLE KEY [disk_cache]
	python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
d = [d for d in j["devices"] if d["role"] == sys.argv[2]][0]
print(d["disk_cache"][sys.argv[3]] if len(sys.argv) > 4 else d[sys.argv[3]])' "$tmp/j" "$@"
}

start
cp_json if="$uri" of="$tmp/out1"
cmp "$tmp/img" "$tmp/out1" || fail "first run: the bytes differ"
[ "$(row input read_bytes)" = 8388608 ] || fail "first run read $(row input read_bytes) bytes over NBD"
[ "$(row input validator dc)" = "none (user's promise)" ] || fail "NBD has a validator?"
cp_json if="$uri" of="$tmp/out2"
cmp "$tmp/img" "$tmp/out2" || fail "second run: the bytes differ"
[ "$(row input reads)" = 0 ] || fail "second run: $(row input reads) reads over NBD"
echo "ok: a second run reads nothing over NBD ($(row input hits dc) hits)"

start # nbdkit again: same URI, same export size
cp_json if="$uri" of="$tmp/out3"
cmp "$tmp/img" "$tmp/out3" || fail "after nbdkit restarted: the bytes differ"
[ "$(row input reads)" = 0 ] || fail "after nbdkit restarted: $(row input reads) reads over NBD"
echo "ok: after nbdkit restarted, still nothing over NBD"

# another writer, behind the cache's back
cp "$tmp/new" "$tmp/img"
cp_json if="$uri" of="$tmp/out4" --disk-cache-verify=sample
cmp "$tmp/new" "$tmp/out4" || fail "disk_cache_verify=sample served old bytes"
[ "$(row input stale_drops dc)" -gt 0 ] || fail "the sample found no difference"
echo "ok: disk_cache_verify=sample sees the changed image ($(row input stale_drops dc) entries dropped)"

# writeback: clio dd's close writes it to the server
cp_json if="$tmp/pat" of="$uri" seek=4 conv=notrunc,fsync --disk-cache-mode=writeback
dd if="$tmp/img" bs=256k skip=4 count=8 2>/dev/null | cmp - "$tmp/pat" ||
	fail "writeback: the server lacks what clio dd wrote"
cp_json if="$uri" of="$tmp/out5" skip=4 count=8 --disk-cache-mode=writeback
cmp "$tmp/pat" "$tmp/out5" || fail "writeback: read back differs"
[ "$(row input reads)" = 0 ] || fail "writeback: the written blocks were read over NBD"
echo "ok: writeback: on the server after clio dd exited, read back from DIR"
nbd_stop
