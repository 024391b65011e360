#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-tier-nfs.sh - the disk tier over the NFS device: NFS-Ganesha on
# 127.0.0.1 in the test's own namespaces (ganesha-common.sh), through the
# delaying proxy (2 ms each way).  A second clio dd reads no byte over
# NFS (its --json device row) and copies the same bytes; the file's
# validator (size, mtime, ctime, fileid from GETATTR) is recorded: a
# change on the server between runs is seen (stale_drops, no stale
# byte); writeback mode: what clio dd wrote reaches the server when it
# exits.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"

ganesha_start
proxy_start 2
url="nfs://127.0.0.1$export/f?$pq"
dc="$tmp/dc"
mkdir "$dc"
head -c 4194304 /dev/urandom >"$export/f"

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

cp_json if="$url" of="$tmp/out1"
cmp "$export/f" "$tmp/out1" || fail "first run: the bytes differ"
[ "$(row input validator dc)" = nfs ] || fail "the NFS file has no validator: $(row input validator dc)"
[ "$(row input read_bytes)" = 4194304 ] || fail "first run read $(row input read_bytes) bytes over NFS"
cp_json if="$url" of="$tmp/out2"
cmp "$export/f" "$tmp/out2" || fail "second run: the bytes differ"
[ "$(row input reads)" = 0 ] || fail "second run: $(row input reads) reads over NFS"
echo "ok: a second run reads nothing over NFS ($(row input hits dc) hits in DIR)"

# another writer, on the server
printf 'changed on the server' | dd of="$export/f" bs=1 seek=2000000 conv=notrunc 2>/dev/null
cp_json if="$url" of="$tmp/out3"
cmp "$export/f" "$tmp/out3" || fail "a stale byte after the server's file changed"
[ "$(row input stale_drops dc)" -gt 0 ] || fail "the change was not seen"
echo "ok: a change on the server is seen ($(row input stale_drops dc) entries dropped)"

# writeback: on the server once clio dd exited, and read back from DIR
head -c 1048576 /dev/urandom >"$tmp/pat"
cp_json if="$tmp/pat" of="$url" seek=4 conv=notrunc,fsync --disk-cache-mode=writeback
dd if="$export/f" bs=256k skip=4 count=4 2>/dev/null | cmp - "$tmp/pat" ||
	fail "writeback: the server lacks what clio dd wrote"
cp_json if="$url" of="$tmp/out5" skip=4 count=4
cmp "$tmp/pat" "$tmp/out5" || fail "writeback: read back differs"
[ "$(row input reads)" = 0 ] || fail "writeback: $(row input reads) reads over NFS after its own writes"
echo "ok: writeback: on the server after clio dd exited, read back from DIR"
