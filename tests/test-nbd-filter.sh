#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-filter.sh - nbdkit-clio-filter.so in front of nbdkit's memory
# and file plugins, on Unix sockets: its cache resident at start
# (prefault); nbdcopy of 16 MiB in and out, compared; nbdinfo --json shows the block sizes and multi-conn; 16384
# writes of 1 KiB (clio dd oflag=direct through the NBD client over a
# 16 MiB file image, seed 002's rewrite) reach the plugin as a few large
# writes (nbdkit's stats filter above the clio filter counts the client's
# writes, the log filter below it the plugin's) and are in the file after
# the FLUSH; trim and zero (qemu-io) reach the plugin for whole blocks,
# the dirty ones there never written, and read back; zero is emulated for
# a plugin that lacks it, trim not advertised; an EIO of the plugin's writes (nbdkit's error filter below)
# fails the FLUSH; after a FLUSH reply, kill -9 of nbdkit loses nothing.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
command -v nbdcopy >/dev/null 2>&1 || { echo "nbdcopy not found (apt-get install libnbd-bin)"; exit 77; }
nbd_with_clio

head -c 16777216 /dev/urandom >"$tmp/img"
head -c 16777216 /dev/urandom >"$tmp/new"

# ------------------------------------------------------------ memory plugin
nbd_start --filter="$filter" memory size=16M bsize=64k cache_size=32M
nbdinfo --json "$uri" >"$tmp/info.json" || fail "nbdinfo of the filter"
python3 - "$tmp/info.json" <<'PY' || fail "what nbdinfo says of the filter"
import json, sys
e = json.load(open(sys.argv[1]))["exports"][0]
assert e["export-size"] == 16 << 20, e
assert e["block_size_minimum"] == 512, e
assert e["block_size_preferred"] == 65536, e
assert e["block_size_maximum"] == 32 << 20, e
for k in ("can_multi_conn", "can_flush", "can_fua", "can_zero", "can_cache",
          "can_trim"):
    assert e[k] is True, k
assert e["can_fast_zero"] is False, e
print("ok: nbdinfo: 16 MiB, blocks 512/65536/32M, multi-conn, flush, FUA, zero, trim, cache")
PY
rss_on=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$nbd_pids/status")
[ -n "$rss_on" ] && [ "$rss_on" -ge $((30 * 1024)) ] ||
	fail "prefault: a 32 MiB cache, ${rss_on:-?} kB resident at start"
echo "ok: the filter's 32 MiB cache resident at start (${rss_on} kB)"
nbdcopy --flush "$tmp/img" "$uri" || fail "nbdcopy into the memory plugin"
nbdcopy "$uri" "$tmp/out" || fail "nbdcopy out of the memory plugin"
cmp "$tmp/out" "$tmp/img" || fail "memory plugin: the bytes differ"
echo "ok: memory plugin: nbdcopy of 16 MiB in and out (4 connections), compared"

# ------------------------------------------------------------ file plugin
cp "$tmp/img" "$tmp/disk"
nbd_start --filter=stats --filter="$filter" --filter=log file "$tmp/disk" \
	statsfile="$tmp/stats" logfile="$tmp/log" bsize=16k
nbdinfo --json "$uri" | grep -q '"block_size_preferred": 16384' ||
	fail "file plugin: bsize=16k is not the preferred block size"
nbdcopy "$uri" "$tmp/out" && cmp "$tmp/out" "$tmp/img" ||
	fail "file plugin: nbdcopy out"
echo "ok: file plugin: nbdcopy out, compared"
: >"$tmp/log"
"$CLIO" dd if="$tmp/new" of="$uri" bs=1k count=16384 oflag=direct conv=notrunc,fsync \
	2>"$tmp/err" || { cat "$tmp/err"; fail "clio dd bs=1k into the file plugin"; }
cmp "$tmp/new" "$tmp/disk" || fail "the file lacks bytes whose FLUSH returned"
plugin_writes=$(grep -c ' Write ' "$tmp/log")
nbd_stop # the stats filter writes its file at the exit
client_writes=$(sed -n 's/^write: \([0-9]*\) ops.*/\1/p' "$tmp/stats")
echo "1 KiB rewrite: $client_writes client writes, $plugin_writes plugin writes"
[ "$client_writes" -ge 16384 ] || fail "the client sent $client_writes writes, not 16384 of 1 KiB"
[ "$plugin_writes" -ge 1 ] && [ "$plugin_writes" -le 256 ] ||
	fail "$plugin_writes writes reached the plugin (at most 256 wanted)"
echo "ok: rewrite with 1 KiB writes: in the file after the FLUSH, clustered"

# ------------------------------------------------------------ trim, zero
# qemu-io (writeback: no FUA) writes 4 MiB, zeroes [1000, 1000+1M) and
# trims [2M, 3M) while all of it is dirty in the cache: the plugin zeroes
# and trims the blocks wholly inside, the dirty ones there are never
# written, the partial ones get zeros through the cache; the reads and the
# file agree.
if command -v qemu-io >/dev/null 2>&1; then
	cp "$tmp/img" "$tmp/disk"
	nbd_start --filter="$filter" --filter=log file "$tmp/disk" logfile="$tmp/log" \
		bsize=64k flusher=0 dirty_age=3600 write_behind=0
	nbdinfo --json "$uri" | python3 -c '
import json, sys
e = json.load(sys.stdin)["exports"][0]
assert e["can_trim"] is True and e["can_zero"] is True, e
assert e["can_fast_zero"] is False, e' || fail "file plugin: nbdinfo: no trim or zero"
	qemu-io -f raw -t writeback "$uri" -c 'write -P 0x5a 0 4M' -c 'write -z 1000 1M' \
		-c 'discard 2M 1M' -c 'read -P 0x5a 0 1000' -c 'read -P 0 1000 1M' \
		-c 'read -P 0x5a 1049576 1047576' -c 'read -P 0 2M 1M' \
		-c 'read -P 0x5a 3M 1M' -c flush >"$tmp/qemu.out" 2>&1 &&
		! grep -q -i 'fail\|error\|mismatch' "$tmp/qemu.out" ||
		{ cat "$tmp/qemu.out"; fail "qemu-io: zero and trim read back wrong"; }
	nbd_stop
	python3 - "$tmp/disk" "$tmp/img" "$tmp/log" <<'PY' || fail "trim and zero at the plugin"
import re, sys
d, img, log = (open(sys.argv[i], "rb").read() for i in (1, 2, 3))
M = 1 << 20
want = (b"\x5a" * 1000 + bytes(M) + b"\x5a" * (M - 1000) + bytes(M) +
        b"\x5a" * M + img[4 * M:])
assert d == want, "the file differs from what was written, zeroed and trimmed"
ops = [(m[1].decode(), int(m[2], 16), int(m[3], 16)) for m in re.finditer(
    rb" (Write|Zero|Trim) id=\d+ offset=0x([0-9a-f]+) count=0x([0-9a-f]+)", log)]
assert ("Zero", 0x10000, 0xf0000) in ops, ops
assert ("Trim", 2 * M, M) in ops, ops
for op, off, n in ops:
    if op == "Write":
        assert off + n <= 0x10000 or off >= M, ("a write of dropped blocks", off, n)
        assert off + n <= 2 * M or off >= 3 * M, ("a write of trimmed blocks", off, n)
print("ok: zero and trim: the plugin zeroed [64K, 1M) and trimmed [2M, 3M), "
      "never wrote the dirty blocks there; the file agrees")
PY
else
	echo "skip: qemu-io not found (apt-get install qemu-utils): no trim and zero checks"
fi

# a plugin without trim (eval, no trim method): not advertised; one whose
# zeroes nbdkit would emulate (nozero zeromode=emulate): zeros through the
# cache, read back
nbd_start --filter="$filter" eval get_size='echo 1048576' \
	pread='dd if=/dev/zero bs=$3 count=1 status=none' pwrite='cat >/dev/null'
nbdinfo --json "$uri" | python3 -c '
import json, sys
e = json.load(sys.stdin)["exports"][0]
assert e["can_trim"] is False and e["can_zero"] is True, e' ||
	fail "eval plugin without trim: nbdinfo shows trim, or no zero"
echo "ok: a plugin without trim: the filter advertises no trim, but zero"
if command -v qemu-io >/dev/null 2>&1; then
	cp "$tmp/img" "$tmp/disk"
	nbd_start --filter="$filter" --filter=nozero --filter=log file "$tmp/disk" \
		zeromode=emulate logfile="$tmp/log" bsize=64k
	qemu-io -f raw "$uri" -c 'write -z 4096 2M' -c 'read -P 0 4096 2M' \
		-c flush >"$tmp/qemu.out" 2>&1 && ! grep -q -i 'fail\|error\|mismatch' "$tmp/qemu.out" ||
		{ cat "$tmp/qemu.out"; fail "qemu-io: emulated zero reads back wrong"; }
	nbd_stop
	! grep -q ' Zero ' "$tmp/log" || fail "nozero: the plugin got a zero"
	head -c 4096 "$tmp/img" | cmp - "$tmp/disk" -n 4096 &&
		cmp -n 2097152 -i 4096:0 "$tmp/disk" /dev/zero ||
		fail "emulated zero: the file does not hold the zeros"
	echo "ok: zero emulated through the cache for a plugin without it: in the file"
fi

# ------------------------------------------------------------ EIO below
cp "$tmp/img" "$tmp/disk"
nbd_start --filter="$filter" --filter=error file "$tmp/disk" \
	error-pwrite-rate=1 error=EIO
nbdinfo "$uri" >/dev/null || fail "error filter: nbdinfo"
if "$CLIO" dd if="$tmp/new" of="$uri" bs=64k count=16 conv=notrunc,fsync 2>"$tmp/err"; then
	fail "a FLUSH succeeded over writes the plugin failed"
fi
grep -q "Input/output error" "$tmp/err" || { cat "$tmp/err"; fail "no EIO"; }
cmp -n 1048576 "$tmp/img" "$tmp/disk" || fail "the error filter let a write through"
if nbdcopy --flush "$tmp/new" "$uri" 2>"$tmp/err"; then
	fail "nbdcopy --flush succeeded over writes the plugin failed"
fi
echo "ok: an EIO of the plugin's writes reaches the client at FLUSH"

# ------------------------------------------------------------ kill -9
cp "$tmp/img" "$tmp/disk"
nbd_start --filter="$filter" file "$tmp/disk" flusher=0 dirty_age=3600
"$CLIO" dd if="$tmp/new" of="$uri" bs=64k count=64 conv=notrunc,fsync 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd into the file plugin"; }
kill -9 "$nbd_pids"
nbd_pids=""
cmp -n 4194304 "$tmp/new" "$tmp/disk" || fail "kill -9 after the FLUSH lost data"
echo "ok: kill -9 after a FLUSH reply: the data is in the file"
exit 0
