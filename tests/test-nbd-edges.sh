#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-edges.sh - clio's NBD client at the edges of the protocol,
# against nbdkit on a Unix socket: a zero-size export reads as empty and
# refuses a write (ENOSPC); exports of more than 2^32 blocks (17 TiB, and
# 2^63-1 bytes) are written and read at offsets past 2^32 sectors; a
# sparse file behind qemu-nbd, read through structured replies with
# holes, reads as the bytes it holds, zeros between; over four connections (multi-conn) the
# writes of clio dd conv=fsync spread over the connections and the FLUSH
# is sent only once every write before it has been answered (NBD: a
# flush covers the writes whose replies came before it), as nbdkit's log
# filter records; a server that takes one connection (nbdkit's limit
# filter) serves conns=4 over the one it takes; through clio serve, one
# FLUSH makes the writes of four connections durable; a server's minimum
# block size above clio dd's bsize fails at open, naming both.  Every server is stopped by its pid (nbd_stop).
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
nbd_with_clio # clio serve: the sanitizer runtimes preloaded under ASan

# ------------------------------------------------------------ zero size
nbd_start memory 0
"$CLIO" info "$uri" --json >"$tmp/info.json" || fail "clio info of a zero-size export"
[ "$(json_num size "$tmp/info.json")" = 0 ] || fail "a zero-size export: size is not 0"
"$CLIO" dd if="$uri" of="$tmp/out" bs=64k 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "a zero-size export: clio dd out"; }
[ -f "$tmp/out" ] && [ ! -s "$tmp/out" ] || fail "a zero-size export: the copy is not empty"
"$CLIO" dd if=/dev/zero of="$uri" bs=4k count=1 conv=notrunc 2>"$tmp/err"
rc=$?
[ $rc -ne 0 ] && grep -q "error writing '$uri': No space left on device" "$tmp/err" ||
	{ cat "$tmp/err"; fail "a zero-size export: a write (exit $rc) did not fail with ENOSPC"; }
echo "ok: a zero-size export reads as empty, a write fails with ENOSPC"

# ------------------------------------------------------------ huge
printf 'past 2^32 sectors' >"$tmp/word"
for size in 17T $(( (1 << 63) - 1 )); do
	nbd_start memory "$size"
	case $size in
	17T) off=$(( (1 << 44) + 12345 ));;
	*) off=$(( (1 << 63) - 1 - 17 ));; # the last 17 bytes
	esac
	"$CLIO" dd if="$tmp/word" of="$uri" bs=17 oseek=$off oflag=seek_bytes conv=notrunc,fsync \
		2>"$tmp/err" || { cat "$tmp/err"; fail "size $size: write at $off"; }
	"$CLIO" dd if="$uri" of="$tmp/back" bs=4k iseek=$off iflag=skip_bytes,count_bytes count=17 \
		2>"$tmp/err" || { cat "$tmp/err"; fail "size $size: read at $off"; }
	cmp "$tmp/back" "$tmp/word" || fail "size $size: the bytes at $off differ"
	echo "ok: size $size: 17 bytes at $off written and read back"
done

# ------------------------------------------------------------ holes
# qemu-nbd answers reads of a sparse file's holes with OFFSET_HOLE chunks
if command -v qemu-nbd >/dev/null 2>&1; then
	truncate -s 4M "$tmp/sparse"
	printf 'abc' | dd of="$tmp/sparse" bs=1 seek=1048573 conv=notrunc 2>/dev/null
	printf 'xy' | dd of="$tmp/sparse" bs=1 seek=4194302 conv=notrunc 2>/dev/null
	nbd_stop
	qemu-nbd --fork --pid-file="$tmp/qemu.pid" -k "$sock" -f raw -t "$tmp/sparse" ||
		fail "qemu-nbd did not start"
	nbd_wait_pid "$tmp/qemu.pid"
	LIBNBD_DEBUG=1 "$CLIO" dd if="$uri" of="$tmp/out" bs=256k 2>"$tmp/err" ||
		{ tail -n 5 "$tmp/err"; fail "a sparse export: clio dd out"; }
	grep -q "RECV_OFFSET_HOLE" "$tmp/err" || fail "a sparse export: qemu-nbd sent no hole"
	cmp "$tmp/out" "$tmp/sparse" || fail "a sparse export: the bytes read differ"
	echo "ok: a sparse export (qemu-nbd, OFFSET_HOLE chunks) reads as its bytes and zeros"
	nbd_stop
else
	echo "no qemu-nbd (apt-get install qemu-utils): holes not tried"
fi

# ------------------------------------------------------------ multi-conn flush
head -c 8388608 /dev/urandom >"$tmp/pat"
nbd_start --filter=log memory 64M logfile="$tmp/log"
"$CLIO" dd if="$tmp/pat" of="$uri&conns=4" bs=1M conv=notrunc,fsync 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "conns=4: clio dd in"; }
"$CLIO" dd if="$uri&conns=4" of="$tmp/back" bs=1M count=8 2>"$tmp/err" && cmp "$tmp/back" "$tmp/pat" ||
	fail "conns=4: the bytes read back differ"
python3 - "$tmp/log" <<'PY' || fail "conns=4: the FLUSH and the writes (nbdkit's log above)"
import re, sys
open_writes, conns, flushes = set(), set(), 0
for line in open(sys.argv[1]):
    m = re.search(r"connection=(\d+) (\.\.\.)?(Write|Flush) id=(\d+)", line)
    if not m:
        continue
    conn, done, cmd, ident = m.group(1), m.group(2), m.group(3), m.group(4)
    if cmd == "Write":
        conns.add(conn)
        (open_writes.discard if done else open_writes.add)((conn, ident))
    elif not done:
        flushes += 1
        assert not open_writes, ("FLUSH while writes are unanswered", line, open_writes)
assert flushes >= 1, "no FLUSH"
assert len(conns) >= 2, ("the writes used one connection", conns)
print("ok: conns=4: writes on %d connections, %d FLUSH after every write answered"
      % (len(conns), flushes))
PY

# ------------------------------------------------------------ fewer connections
nbd_start --filter=limit memory 64M limit=1
"$CLIO" dd if="$tmp/pat" of="$uri&conns=4" bs=1M conv=notrunc,fsync 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "limit=1, conns=4: clio dd in"; }
"$CLIO" dd if="$uri&conns=4" of="$tmp/back" bs=1M count=8 2>"$tmp/err" && cmp "$tmp/back" "$tmp/pat" ||
	{ cat "$tmp/err"; fail "limit=1, conns=4: read back"; }
"$CLIO" info "$uri&conns=4" >"$tmp/info" || fail "limit=1, conns=4: clio info"
grep -qx "  connections=1" "$tmp/info" && grep -qx "  connections_asked=4" "$tmp/info" ||
	{ cat "$tmp/info"; fail "limit=1, conns=4: clio info does not show 1 of 4 connections"; }
echo "ok: a server taking one connection: conns=4 runs on it, written and read back"

# ------------------------------------------------------------ clio serve, one FLUSH
# clio serve offers multi-conn: one FLUSH, on one of four connections,
# makes the writes of all four durable (the server killed with SIGKILL
# right after, the file holds them)
truncate -s 8M "$tmp/disk"
nbd_stop
env $nbd_env "$CLIO" serve "file:$tmp/disk" --socket "$sock" --pidfile "$tmp/serve.pid" ||
	fail "clio serve did not start"
nbd_wait_pid "$tmp/serve.pid"
"$CLIO" dd if="$tmp/pat" of="$uri&conns=4" bs=1M conv=notrunc,fsync 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio serve, conns=4: clio dd in"; }
grep -q "^$uri&conns=4: 0 reads, 8 writes" "$tmp/err" || { cat "$tmp/err"; fail "clio serve, conns=4: not 8 writes"; }
kill -9 $nbd_pids
cmp "$tmp/disk" "$tmp/pat" || fail "clio serve: writes on four connections not durable after one FLUSH"
nbd_pids=""
echo "ok: clio serve: one FLUSH made the writes of four connections durable (SIGKILL after)"

# ------------------------------------------------------------ a minimum above bsize
# a server's minimum block size of 32 KiB, above clio dd's bsize (16 KiB
# by default): one line at open (its reads failed with EINVAL before);
# with --bsize=32k, 4 KiB copies in and out, byte for byte
head -c 1048576 /dev/urandom >"$tmp/img"
cp "$tmp/img" "$tmp/disk"
nbd_start --filter=blocksize-policy file "$tmp/disk" blocksize-minimum=32768 \
	blocksize-preferred=65536 blocksize-error-policy=error
"$CLIO" dd if="$uri" of="$tmp/out" bs=4k 2>"$tmp/err"
rc=$?
cat "$tmp/err"
[ $rc -eq 64 ] && [ "$(wc -l <"$tmp/err")" -eq 1 ] &&
	grep -q "bsize 16384 is below the sector size 32768 of '$uri'" "$tmp/err" ||
	fail "a minimum of 32 KiB: exit $rc, not one line naming bsize and the sector size"
"$CLIO" dd if="$uri" of="$tmp/out" bs=4k --bsize=32k 2>"$tmp/err" && cmp "$tmp/out" "$tmp/img" ||
	{ cat "$tmp/err"; fail "a minimum of 32 KiB, --bsize=32k: read out"; }
head -c 4096 /dev/urandom >"$tmp/four"
"$CLIO" dd if="$tmp/four" of="$uri" bs=4k seek=7 conv=notrunc,fsync --bsize=32k 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "a minimum of 32 KiB, --bsize=32k: 4 KiB in"; }
cmp -n 4096 -i 0:28672 "$tmp/four" "$tmp/disk" && cmp -n 28672 "$tmp/disk" "$tmp/img" ||
	fail "a minimum of 32 KiB, --bsize=32k: the file differs"
echo "ok: a minimum of 32 KiB above bsize: one line at open; with --bsize=32k read and written"
# clio mount refuses before it mounts anything (its reads failed with EINVAL)
mkdir "$tmp/mnt"
timeout 10 "$CLIO" mount -f "$uri" "$tmp/mnt" 2>"$tmp/err"
rc=$?
[ $rc -ne 124 ] || fusermount3 -u "$tmp/mnt" 2>/dev/null
cat "$tmp/err"
[ $rc -eq 64 ] && grep -q "bsize 16384 is below the sector size 32768 of '$uri'" "$tmp/err" ||
	fail "a minimum of 32 KiB: clio mount exit $rc, not one line naming bsize and the sector size"
echo "ok: a minimum of 32 KiB above bsize: clio mount refuses, naming both"
exit 0
