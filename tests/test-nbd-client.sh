#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-client.sh - clio's NBD client backend against nbdkit on a Unix
# socket: clio dd writes a pattern through nbd+unix:// and reads it back
# byte for byte, over one and two connections; clio info (--json parsed)
# shows what the server says; the block size constraints of the
# blocksize-policy filter become the sector size and maxio, and the
# transfers keep to them; a read-only server refuses writes (EROFS); a
# write error of the error filter reaches clio dd at fsync (exit 74); a
# server that cannot flush shows can_flush=0 and fsync succeeds; a
# server killed with SIGKILL makes clio dd fail with a clear error in
# bounded time; an unknown or repeated query key is refused.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"

head -c 8388608 /dev/urandom >"$tmp/pat"

# ------------------------------------------------------------ data
nbd_start memory 64M
"$CLIO" dd if="$tmp/pat" of="$uri" bs=64k conv=fsync,notrunc 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "dd into the server"; }
"$CLIO" dd if="$uri" of="$tmp/back" bs=1M count=8 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "dd out of the server"; }
cmp "$tmp/pat" "$tmp/back" || fail "the bytes read back differ"
echo "ok: 8 MiB written and read back through $uri"
# nbdkit's own client sees the same bytes
nbdcopy "$uri" "$tmp/copy" 2>/dev/null && head -c 8388608 "$tmp/copy" | cmp - "$tmp/pat" ||
	fail "nbdcopy reads other bytes than clio wrote"
"$CLIO" dd if="$uri&conns=2&qd=4" of="$tmp/back2" bs=1M count=8 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "dd over two connections"; }
cmp "$tmp/pat" "$tmp/back2" || fail "two connections: the bytes differ"
echo "ok: read back over two connections"

# ------------------------------------------------------------ clio info
"$CLIO" info "$uri&conns=2&qd=8" --json >"$tmp/info.json" || fail "clio info --json"
python3 - "$tmp/info.json" <<'PY' || fail "clio info --json of an nbd device"
import json, sys
j = json.load(open(sys.argv[1]))
p = j["params"]
assert j["type"] == "nbd", j
assert j["size"] == 64 << 20, j
assert j["resizable"] is False, j
assert j["queue_depth"] == 16, j
assert j["engine"] == "libnbd", j
assert p["connections"] == 2 and p["qd"] == 8, p
assert p["can_flush"] == 1 and p["can_multi_conn"] == 1, p
for k in ("uri", "export_size", "block_min", "block_preferred", "block_max",
          "can_fua", "can_trim", "can_zero"):
    assert k in p, k
print("ok: clio info --json:", j["engine"], j["engine_reason"])
PY
# a key neither clio nor libnbd knows (libnbd would ignore it), or one
# given twice, is refused in one line naming it; nothing is connected
for q in "QD=3:unknown key 'QD'" "qd=4&qd=8:'qd' given twice" "conns:'conns' in" \
	"socket=/x:'socket' given twice"; do
	"$CLIO" info "$uri&${q%%:*}" >"$tmp/out" 2>"$tmp/err" && fail "clio info took ?${q%%:*}"
	[ "$(wc -l <"$tmp/err")" = 1 ] && grep -qF "${q#*:}" "$tmp/err" ||
		{ cat "$tmp/err"; fail "?${q%%:*}: no one-line error naming it"; }
done
echo "ok: unknown and repeated query keys are refused, named"

# ------------------------------------------------------------ block sizes
nbd_start --filter=blocksize-policy --filter=blocksize memory 64M \
	blocksize-minimum=4096 blocksize-maximum=65536 blocksize-error-policy=error
"$CLIO" info "$uri" --json >"$tmp/info.json" || fail "clio info of the blocksize-policy server"
[ "$(json_num sector_size "$tmp/info.json")" = 4096 ] || fail "sector size is not the server's minimum"
[ "$(json_num maxio "$tmp/info.json")" = 65536 ] || fail "maxio is not the server's maximum"
echo "ok: minimum 4096 and maximum 65536 are the sector size and maxio"
# the server refuses requests outside its limits: dd succeeds only if clio keeps to them
"$CLIO" dd if="$tmp/pat" of="$uri" bs=1M conv=fsync,notrunc 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "dd through 64 KiB requests"; }
grep -q "^$uri: 0 reads, 128 writes, 64.00 KB/t" "$tmp/err" ||
	{ cat "$tmp/err"; fail "the writes were not 128 requests of 64 KiB"; }
"$CLIO" dd if="$uri" of="$tmp/back" bs=1M count=8 2>/dev/null && cmp "$tmp/pat" "$tmp/back" ||
	fail "read back through the blocksize-policy server"
echo "ok: 1 MiB writes reach the server as 64 KiB requests, intact"

# ------------------------------------------------------------ read-only
nbd_start -r memory 64M
"$CLIO" dd if="$tmp/pat" of="$uri" bs=64k conv=notrunc 2>"$tmp/err"
rc=$?
cat "$tmp/err"
[ $rc -ne 0 ] || fail "a write to a read-only server succeeded"
grep -q "Read-only file system" "$tmp/err" || fail "read-only server: no EROFS"
"$CLIO" info "$uri" | grep -qx "  read_only=1" || fail "clio info: read_only=1"
echo "ok: a read-only server gives EROFS (exit $rc)"

# ------------------------------------------------------------ write errors
nbd_start --filter=error memory 64M error-pwrite-rate=1 error=EIO
"$CLIO" dd if="$tmp/pat" of="$uri" bs=64k conv=fsync,notrunc 2>"$tmp/err"
rc=$?
cat "$tmp/err"
[ $rc -eq 74 ] || fail "a write error: exit $rc, not 74"
grep -q "fsync failed for '$uri': Input/output error" "$tmp/err" ||
	fail "the write error is not reported at fsync"
echo "ok: EIO from the server is clio dd's write error at fsync"

# ------------------------------------------------------------ no flush
# a server that cannot flush: the flush succeeds at once, and clio info says so
nbd_start eval get_size='echo 1048576' pwrite='cat >/dev/null' can_write='exit 0' \
	can_flush='exit 3' pread='dd if=/dev/zero bs=$3 count=1 iflag=count_bytes 2>/dev/null'
"$CLIO" info "$uri" >"$tmp/info" || fail "clio info of a server without flush"
grep -qx "  can_flush=0" "$tmp/info" || { cat "$tmp/info"; fail "clio info: can_flush=0"; }
"$CLIO" dd if=/dev/zero of="$uri" bs=64k count=16 conv=fsync 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "conv=fsync on a server without flush"; }
echo "ok: a server without flush: can_flush=0, fsync succeeds"

# ------------------------------------------------------------ the server dies
nbd_start --filter=delay memory 64M rdelay=300ms wdelay=300ms
pid=$nbd_pids
( sleep 1; kill -9 "$pid" ) &
killer=$!
start=$(date +%s)
timeout 30 "$CLIO" dd if="$uri" of=/dev/null bs=64k 2>"$tmp/err"
rc=$?
wait $killer
secs=$(( $(date +%s) - start ))
cat "$tmp/err"
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "dd from a killed server: exit $rc"
[ $secs -le 10 ] || fail "dd took ${secs}s to notice the server died"
grep -q "error reading '$uri': Transport endpoint is not connected" "$tmp/err" ||
	fail "no clear error when the server dies"
echo "ok: the server killed, clio dd fails in ${secs}s (exit $rc)"
nbd_pids=""
exit 0
