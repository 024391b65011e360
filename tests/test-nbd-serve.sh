#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-serve.sh - clio serve and the nbdkit plugin, on Unix sockets:
# nbdinfo --json of a served mem device (size, block sizes, multi-conn,
# flush, FUA); nbdcopy of a file in and out, compared; clio dd through
# clio's own NBD client into a served file, whose bytes are in the file
# once the FLUSH returned; qemu-img convert in and out when qemu-img is
# installed; -r refuses writes, and writes nothing to the device (not
# the dirty blocks a killed server left in a disk cache, which it
# serves); in the foreground (-f) the server's pid
# is clio serve's; a zero with NO_HOLE leaves the file's blocks
# allocated; an NBD device's trim and zero reach its server; a relative device path is served in the background
# (where nbdkit runs in /); errors: no socket or port, a bad tunable, a
# device that cannot be opened, nbdkit missing; the plugin's --help names
# every kind of device it serves.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
command -v nbdcopy >/dev/null 2>&1 || { echo "nbdcopy not found (apt-get install libnbd-bin)"; exit 77; }

# nbdkit is no sanitized program: under ASan the plugin needs the runtime
# loaded first (the plugin's leaks are not checked)
serve_env=""
if [ "${CLIO_FLAVOUR:-plain}" = asan ]; then
	serve_env="LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so) ASAN_OPTIONS=detect_leaks=0"
fi
# serve ARGS...: clio serve ARGS on $sock in the background, its pid noted
serve() {
	nbd_stop
	rm -f "$tmp/serve.pid"
	env $serve_env "$CLIO" serve "$@" --socket "$sock" --pidfile "$tmp/serve.pid" ||
		fail "clio serve $* did not start"
	nbd_wait_pid "$tmp/serve.pid"

}

head -c 16777216 /dev/urandom >"$tmp/img"

# ------------------------------------------------------------ nbdinfo
serve mem:size=64M -o bsize=64k,cache_size=32M
nbdinfo --json "$uri" >"$tmp/info.json" || fail "nbdinfo of clio serve"
python3 - "$tmp/info.json" <<'PY' || fail "what nbdinfo says of clio serve"
import json, sys
j = json.load(open(sys.argv[1]))
e = j["exports"][0]
assert e["export-size"] == 64 << 20, e
assert e["block_size_minimum"] == 512, e
assert e["block_size_preferred"] == 65536, e
assert e["block_size_maximum"] == 32 << 20, e
for k in ("can_multi_conn", "can_flush", "can_fua", "can_zero", "can_cache"):
    assert e[k] is True, k
assert e["is_read_only"] is False, e
print("ok: nbdinfo: 64 MiB, blocks 512/65536/32M, multi-conn, flush, FUA, zero, cache")
PY

# ------------------------------------------------------------ nbdcopy
nbdcopy "$tmp/img" "$uri" || fail "nbdcopy into clio serve"
nbdcopy "$uri" "$tmp/out" || fail "nbdcopy out of clio serve"
head -c 16777216 "$tmp/out" | cmp - "$tmp/img" || fail "nbdcopy: the bytes differ"
echo "ok: nbdcopy of 16 MiB in and out (4 connections), compared"

# ------------------------------------------------------------ a file, FLUSH
head -c 8388608 /dev/zero >"$tmp/disk"
serve "$tmp/disk" -o write_behind=0,flusher=0
"$CLIO" dd if="$tmp/img" of="$uri" bs=64k count=128 conv=fsync,notrunc 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd into clio serve"; }
head -c 8388608 "$tmp/img" | cmp - "$tmp/disk" ||
	fail "the file lacks bytes whose FLUSH returned"
echo "ok: clio dd (NBD client) into clio serve (a file): in the file after the FLUSH"
"$CLIO" dd if="$uri" of="$tmp/back" bs=1M 2>/dev/null && cmp "$tmp/back" "$tmp/disk" ||
	fail "clio dd out of clio serve"
echo "ok: and read back through both"

# ------------------------------------------------------------ a relative path
# the daemon runs in /: the device is opened from where clio serve ran
cp "$tmp/img" "$tmp/rel.img"
cd "$tmp" || fail "cd $tmp"
serve rel.img
cd "$OLDPWD" || fail "cd back"
nbdcopy "$uri" "$tmp/out" 2>"$tmp/err" && cmp "$tmp/out" "$tmp/img" ||
	{ cat "$tmp/err"; fail "clio serve of a relative path in the background: no export"; }
echo "ok: a relative path served in the background"

# ------------------------------------------------------------ qemu-img
if command -v qemu-img >/dev/null 2>&1; then
	serve mem:size=16M
	qemu-img convert -n -f raw -O raw "$tmp/img" "$uri" || fail "qemu-img convert in"
	qemu-img convert -f raw -O raw "$uri" "$tmp/qout" || fail "qemu-img convert out"
	cmp "$tmp/qout" "$tmp/img" || fail "qemu-img: the bytes differ"
	echo "ok: qemu-img convert in and out, compared"
else
	echo "qemu-img not installed: its rows skipped"
fi

# ------------------------------------------------------------ trim, zero
# a file device: qemu-io writes 4 MiB into the cache, zeroes [1000,
# 1000+1M) and trims [2M, 3M); the plugin gives the whole blocks to the
# device (holes punched in the file), zeros through the cache at the
# edges; the reads and the file agree.  A sim device cannot trim.
if command -v qemu-io >/dev/null 2>&1; then
	cp "$tmp/img" "$tmp/disk"
	serve "$tmp/disk" -o bsize=64k,flusher=0,write_behind=0,dirty_age=3600
	nbdinfo --json "$uri" | python3 -c '
import json, sys
e = json.load(sys.stdin)["exports"][0]
assert e["can_trim"] is True and e["can_zero"] is True, e' || fail "a file: nbdinfo: no trim"
	qemu-io -f raw -t writeback "$uri" -c 'write -P 0x5a 0 4M' -c 'write -z -u 1000 1M' \
		-c 'discard 2M 1M' -c 'read -P 0x5a 0 1000' -c 'read -P 0 1000 1M' \
		-c 'read -P 0x5a 1049576 1047576' -c 'read -P 0 2M 1M' \
		-c 'read -P 0x5a 3M 1M' -c flush >"$tmp/qemu.out" 2>&1 &&
		! grep -q -i 'fail\|error\|mismatch' "$tmp/qemu.out" ||
		{ cat "$tmp/qemu.out"; fail "qemu-io: zero and trim through clio serve read back wrong"; }
	nbd_stop
	python3 - "$tmp/disk" "$tmp/img" <<'PY' || fail "trim and zero through clio serve"
import os, sys
d, img = (open(sys.argv[i], "rb").read() for i in (1, 2))
M = 1 << 20
want = (b"\x5a" * 1000 + bytes(M) + b"\x5a" * (M - 1000) + bytes(M) +
        b"\x5a" * M + img[4 * M:])
assert d == want, "the file differs from what was written, zeroed and trimmed"
used = os.stat(sys.argv[1]).st_blocks * 512
assert used <= 16 * M - M - 900 * 1024, ("no holes punched", used)
print("ok: zero and trim through clio serve: holes punched for the whole blocks, "
      "the file agrees (%d KiB allocated of 16384)" % (used // 1024))
PY
	serve sim:preset=ssd,size=16M
	nbdinfo --json "$uri" | python3 -c '
import json, sys
e = json.load(sys.stdin)["exports"][0]
assert e["can_trim"] is False and e["can_zero"] is True, e' || fail "sim: nbdinfo offers trim"
	echo "ok: a sim device: zero, no trim"
fi

# ------------------------------------------------------------ -r
serve -r mem:size=1M
nbdinfo --json "$uri" | grep -q '"is_read_only": true' || fail "-r: not read-only"
if "$CLIO" dd if="$tmp/img" of="$uri" bs=64k count=1 conv=notrunc 2>"$tmp/err"; then
	fail "a write to clio serve -r succeeded"
fi
grep -q "Read-only file system" "$tmp/err" || { cat "$tmp/err"; fail "-r: no EROFS"; }
echo "ok: -r: read-only, writes refused"
# a file whose newest blocks are dirty in a writeback disk cache (its
# server killed with SIGKILL): clio serve -r serves them from there and
# leaves the file as it was (it wrote them back: the device was opened
# read-write); the next server that may write writes them back
nbdops="$(dirname "$CLIO")/tests/tools/nbdops"
[ -x "$nbdops" ] || fail "nbdops not built (make tests)"
mkdir "$tmp/rodc"
head -c 1048576 /dev/zero >"$tmp/rofile"
dc="disk_cache=$tmp/rodc,disk_cache_mode=writeback,dirty_age=600"
serve "$tmp/rofile" -o "$dc"
"$nbdops" "$uri" w:0:65536:65 f >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "-r: the write before"; }
kill -9 "$nbd_pids"
nbd_pids=""
rm -f "$sock"
cmp -s -n 65536 "$tmp/rofile" /dev/zero || fail "-r: the write is in the file before (no disk cache?)"
serve -r "$tmp/rofile" -o "$dc"
"$nbdops" "$uri" r:0:65536:65 >"$tmp/out" 2>&1 ||
	{ cat "$tmp/out"; fail "-r: the dirty blocks of the disk cache are not served"; }
nbd_stop
cmp -s -n 65536 "$tmp/rofile" /dev/zero || fail "clio serve -r wrote the file (the disk cache's dirty blocks)"
serve "$tmp/rofile" -o "$dc"
"$nbdops" "$uri" r:0:65536:65 >"$tmp/out" 2>&1 || { cat "$tmp/out"; fail "-r: read after"; }
nbd_stop
head -c 65536 "$tmp/rofile" | tr -d A | cmp -s - /dev/null ||
	fail "the server after clio serve -r did not write the dirty blocks back"
echo "ok: -r: dirty blocks of a disk cache served, the file not written; written back by the next server"

# ------------------------------------------------------------ NO_HOLE
# a zero with NBD_CMD_FLAG_NO_HOLE must leave the range allocated (it
# punched a hole); one without it may punch
nbdops="$(dirname "$CLIO")/tests/tools/nbdops"
[ -x "$nbdops" ] || fail "nbdops not built (make tests)"
head -c 8388608 /dev/urandom >"$tmp/alloc"
sync "$tmp/alloc" 2>/dev/null
before=$(stat -c %b "$tmp/alloc")
serve "$tmp/alloc"
"$nbdops" "$uri" z:4096:4194304:nohole f r:4096:4194304:0 >"$tmp/ops" 2>&1 ||
	fail "zero with NO_HOLE: $(cat "$tmp/ops")"
nbd_stop
after=$(stat -c %b "$tmp/alloc")
[ "$after" -ge "$before" ] || fail "zero with NO_HOLE: $before blocks allocated before, $after after"
head -c 4194304 /dev/zero | cmp -s -i 0:4096 -n 4194304 - "$tmp/alloc" || fail "zero with NO_HOLE: no zeros in the file"
serve "$tmp/alloc"
"$nbdops" "$uri" z:4194304:2097152 f r:4194304:2097152:0 >"$tmp/ops" 2>&1 ||
	fail "zero: $(cat "$tmp/ops")"
nbd_stop
head -c 2097152 /dev/zero | cmp -s -i 0:4194304 -n 2097152 - "$tmp/alloc" || fail "zero: no zeros in the file"
echo "ok: a zero with NO_HOLE keeps the range allocated ($before blocks), zeros in the file"

# ------------------------------------------------------------ an NBD device
# clio serve of an export of nbdkit's file plugin offers trim and zero
# (they were not passed on: no trim, a zero written as zeros): a trim and
# a zero through it punch holes in the file behind, which reads zeros
# there and the old bytes elsewhere
head -c 8388608 /dev/urandom >"$tmp/back"
sync "$tmp/back" 2>/dev/null
cp "$tmp/back" "$tmp/back.want"
before=$(stat -c %b "$tmp/back")
rm -f "$tmp/back.pid"
nbdkit -U "$tmp/sock2" --pidfile "$tmp/back.pid" file "$tmp/back" || fail "nbdkit file did not start"
i=0
while [ ! -s "$tmp/back.pid" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
back_pid=$(cat "$tmp/back.pid")
serve "nbd+unix:///?socket=$tmp/sock2" -o bsize=64k
nbd_pids="$nbd_pids $back_pid" # nbd_stop ends both
nbdinfo --json "$uri" | python3 -c '
import json, sys
e = json.load(sys.stdin)["exports"][0]
assert e["can_trim"] is True and e["can_zero"] is True, e' || fail "an nbd device: nbdinfo: no trim"
"$nbdops" "$uri" t:1048576:2097152 z:4194304:2097152 f r:4194304:2097152:0 >"$tmp/ops" 2>&1 ||
	fail "trim and zero of an nbd device: $(cat "$tmp/ops")"
nbd_stop
after=$(stat -c %b "$tmp/back")
[ "$after" -le $((before - 7000)) ] ||
	fail "trim and zero of an nbd device: $before blocks allocated before, $after after (no holes)"
python3 - "$tmp/back" "$tmp/back.want" <<'PY' || fail "trim and zero of an nbd device: the file behind"
import sys
d, w = (open(sys.argv[i], "rb").read() for i in (1, 2))
M = 1 << 20
want = w[:M] + bytes(2 * M) + w[3 * M:4 * M] + bytes(2 * M) + w[6 * M:]
assert d == want, "the file behind differs"
PY
echo "ok: an nbd device: trim and zero reach the server (blocks $before -> $after), the file agrees"

# ------------------------------------------------------------ -f
nbd_stop
env $serve_env "$CLIO" serve -f mem:size=1M --socket "$sock" &
pid=$!
nbd_pids=$pid
i=0
while [ ! -S "$sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
[ -S "$sock" ] || fail "-f: no socket"
nbdinfo "$uri" >/dev/null || fail "-f: nbdinfo"
[ "$(cat /proc/$pid/comm)" = nbdkit ] || fail "-f: pid $pid is not nbdkit (no exec?)"
echo "ok: -f: clio serve's pid $pid is the server"
nbd_stop

# ------------------------------------------------------------ errors
"$CLIO" serve mem:size=1M 2>"$tmp/err"; rc=$?
[ $rc -eq 64 ] && grep -q "give --socket PATH or --port N" "$tmp/err" || fail "no socket: exit $rc"
"$CLIO" serve mem:size=1M --socket "$sock" -o bsize=3 2>"$tmp/err"; rc=$?
[ $rc -eq 64 ] && grep -q "bsize '3'" "$tmp/err" || fail "bad tunable: exit $rc"
"$CLIO" serve "$tmp/none" --socket "$sock" 2>"$tmp/err"; rc=$?
[ $rc -eq 66 ] && grep -q "$tmp/none" "$tmp/err" || fail "missing device: exit $rc"
PATH=/nonexistent "$CLIO" serve mem:size=1M --socket "$sock" 2>"$tmp/err"; rc=$?
[ $rc -eq 69 ] && grep -qx "clio serve: nbdkit not found (apt-get install nbdkit)" "$tmp/err" ||
	{ cat "$tmp/err"; fail "nbdkit missing: exit $rc"; }
[ ! -e "$sock" ] || fail "a failed clio serve left a socket"
echo "ok: errors: exit 64, 64, 66, 69, each one line"
"$CLIO" serve --help | grep -q "^usage: clio serve" || fail "--help"
"$CLIO" serve --version | grep -q "^clio " || fail "--version"
# the plugin's nbdkit --help names every kind of device it serves
env $serve_env nbdkit "$(dirname "$CLIO")/nbdkit-clio-plugin.so" --help >"$tmp/help" 2>&1 ||
	fail "nbdkit PLUGIN --help: $(cat "$tmp/help")"
for k in file mem sim fault nbd nfs rbd; do
	grep -q "^Serves a clio device (.*\b$k\b" "$tmp/help" ||
		fail "the plugin's --help does not name $k: $(grep Serves "$tmp/help")"
done
echo "ok: the plugin's --help names file, mem, sim, fault, nbd, nfs, rbd"
exit 0
