#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nfs-deadserver.sh - the nfs:// device does not wait forever for a
# server that died and does not come back: NFS-Ganesha is killed
# (SIGKILL, not restarted) in the middle of a clio dd, and the copy ends
# within timeo= (2 s) and a little of the kill, exits non-zero, and says
# which device failed and why:
#  1. writing (of=nfs://..., the cache writing back, 4 MB of 32 on the
#     server): the write-back failure is reported;
#  2. reading (if=nfs://... of=/dev/null);
#  3. the server gone before the copy ends with the data still in the
#     cache: fsync (conv=fsync) fails, the copy does not report success;
#  4. no fsync, the data written back (UNSTABLE, acknowledged) long
#     before the end, nothing dirty at the close: the server gone, the
#     close's COMMIT fails, and the copy says so (not exit 0 with the
#     data never committed);
#  5. the server hangs (SIGSTOP) in the middle of a copy: the copy ends
#     with the error in a few timeo (each RPC libnfs times out takes the
#     connection down, its other RPCs failing with it), not one timeo
#     per batch of RPCs;
#  6. the server stopped before the device opens: the open fails with
#     ETIMEDOUT ("Connection timed out") within timeo, not EINTR.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ganesha-common.sh"

dd_pid=""
stopped=""
trap '[ -z "$dd_pid" ] || kill -9 "$dd_pid" 2>/dev/null; [ -z "$stopped" ] || kill -CONT "$stopped"
	ganesha_all_stop; rm -rf "$tmp"' EXIT

timeo=2
limit=$((timeo + 3)) # s after the kill: timeo and slack

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# dd_ends WHAT: wait for $dd_pid for $limit s; sets $rc and $ms (the time
# from the kill).
dd_ends() {
	i=0
	while kill -0 "$dd_pid" 2>/dev/null && [ $i -lt $((limit * 20)) ]; do
		sleep 0.05; i=$((i + 1))
	done
	if kill -0 "$dd_pid" 2>/dev/null; then
		kill -9 "$dd_pid"
		wait "$dd_pid" 2>/dev/null
		dd_pid=""
		fail "$1: clio dd still waits $limit s after the server was killed: $(cat "$tmp/err")"
	fi
	ms=$(($(now_ms) - t_kill))
	rc=0
	wait "$dd_pid" || rc=$?
	dd_pid=""
}

# ------------------------------------------------------------ 1
# the clock starts at the kill or, if later, when clio dd has read all
# its input (copying the rest into the cache is not the device's wait)
ganesha_start
url="nfs://127.0.0.1$export/w?timeo=$timeo"
head -c 32000000 /dev/urandom >"$tmp/big"
mkfifo "$tmp/wfifo"
"$CLIO" dd if="$tmp/wfifo" of="$url" bs=1M status=none 2>"$tmp/err" &
dd_pid=$!
cat "$tmp/big" >"$tmp/wfifo" &
cat_pid=$!
i=0
while [ "$(stat -c %s "$export/w" 2>/dev/null || echo 0)" -lt 4000000 ]; do
	kill -0 "$dd_pid" 2>/dev/null || fail "clio dd ended before the kill: $(cat "$tmp/err")"
	[ $i -lt 400 ] || fail "nothing reached the server in 20 s"
	sleep 0.05; i=$((i + 1))
done
ganesha_kill
i=0
while kill -0 "$cat_pid" 2>/dev/null; do
	[ $i -lt 600 ] || { kill "$cat_pid"; fail "writing: clio dd stopped reading its input"; }
	sleep 0.05; i=$((i + 1))
done
wait "$cat_pid"
t_kill=$(now_ms)
dd_ends "writing"
[ "$rc" -ne 0 ] || fail "writing: clio dd exited 0 with its server killed"
grep -q "nfs://127.0.0.1" "$tmp/err" || fail "writing: the error does not name the device: $(cat "$tmp/err")"
grep -qi "timed out" "$tmp/err" || fail "writing: the error does not say it timed out: $(cat "$tmp/err")"
echo "ok: writing, server killed: clio dd exited $rc after $ms ms: $(head -n 1 "$tmp/err")"

# ------------------------------------------------------------ 2
ganesha_start
truncate -s 8G "$export/r"
url="nfs://127.0.0.1$export/r?timeo=$timeo"
"$CLIO" dd if="$url" of=/dev/null bs=1M status=none 2>"$tmp/err" &
dd_pid=$!
sleep 0.5
kill -0 "$dd_pid" 2>/dev/null || fail "reading: clio dd ended before the kill: $(cat "$tmp/err")"
t_kill=$(now_ms)
ganesha_kill
dd_ends "reading"
[ "$rc" -ne 0 ] || fail "reading: clio dd exited 0 with its server killed"
grep -q "nfs://127.0.0.1" "$tmp/err" || fail "reading: the error does not name the device: $(cat "$tmp/err")"
grep -qi "timed out" "$tmp/err" || fail "reading: the error does not say it timed out: $(cat "$tmp/err")"
echo "ok: reading, server killed: clio dd exited $rc after $ms ms: $(head -n 1 "$tmp/err")"

# ------------------------------------------------------------ 3
# everything the copy wrote is in the cache (no write-back before the
# end), the server is gone when conv=fsync writes it back
ganesha_start
head -c 3000000 /dev/urandom >"$tmp/in"
mkfifo "$tmp/fifo"
url="nfs://127.0.0.1$export/s?timeo=$timeo"
"$CLIO" dd if="$tmp/fifo" of="$url" bs=64k conv=fsync status=none 2>"$tmp/err" &
dd_pid=$!
exec 5<>"$tmp/fifo" # not blocking if clio dd failed
cat "$tmp/in" >&5
sleep 0.3
t_kill=$(now_ms)
ganesha_kill
exec 5>&-
dd_ends "fsync"
[ "$rc" -ne 0 ] || fail "fsync: clio dd exited 0 with its server killed"
grep -q "nfs://127.0.0.1" "$tmp/err" || fail "fsync: the error does not name the device: $(cat "$tmp/err")"
echo "ok: fsync, server killed: clio dd exited $rc after $ms ms: $(head -n 1 "$tmp/err")"

# ------------------------------------------------------------ 4
ganesha_start
url="nfs://127.0.0.1$export/c?timeo=$timeo"
rm -f "$tmp/fifo"
mkfifo "$tmp/fifo"
"$CLIO" dd if="$tmp/fifo" of="$url" bs=64k --dirty_age=0.1 status=none 2>"$tmp/err" &
dd_pid=$!
exec 5<>"$tmp/fifo" # not blocking if clio dd failed
head -c 1000000 /dev/urandom >&5
i=0
while [ "$(stat -c %s "$export/c" 2>/dev/null || echo 0)" -lt 1000000 ]; do
	[ $i -lt 200 ] || fail "close: the flusher wrote nothing back in 10 s"
	sleep 0.05; i=$((i + 1))
done
sleep 0.5 # the WRITEs' replies
t_kill=$(now_ms)
ganesha_kill
exec 5>&-
dd_ends "close"
[ "$rc" -ne 0 ] || fail "close: clio dd exited 0, its writes never committed"
grep -q "nfs://127.0.0.1" "$tmp/err" || fail "close: the error does not name the device: $(cat "$tmp/err")"
echo "ok: close after write-back, server killed: clio dd exited $rc after $ms ms: $(head -n 1 "$tmp/err")"

# ------------------------------------------------------------ 5
ganesha_start
url="nfs://127.0.0.1$export/h?timeo=$timeo"
rm -f "$tmp/wfifo"
mkfifo "$tmp/wfifo"
"$CLIO" dd if="$tmp/wfifo" of="$url" bs=1M status=none 2>"$tmp/err" &
dd_pid=$!
cat "$tmp/big" >"$tmp/wfifo" &
cat_pid=$!
i=0
while [ "$(stat -c %s "$export/h" 2>/dev/null || echo 0)" -lt 4000000 ]; do
	kill -0 "$dd_pid" 2>/dev/null || fail "hung: clio dd ended before the stop: $(cat "$tmp/err")"
	[ $i -lt 400 ] || fail "nothing reached the server in 20 s"
	sleep 0.05; i=$((i + 1))
done
stopped=$ganesha_pid
kill -STOP "$stopped"
t_kill=$(now_ms)
limit=$((timeo * 6 + 3))
dd_ends "hung"
kill "$cat_pid" 2>/dev/null
wait "$cat_pid" 2>/dev/null
kill -CONT "$stopped"
stopped=""
[ "$rc" -ne 0 ] || fail "hung: clio dd exited 0 with its server stopped"
grep -q "nfs://127.0.0.1" "$tmp/err" || fail "hung: the error does not name the device: $(cat "$tmp/err")"
grep -qi "timed out" "$tmp/err" || fail "hung: the error does not say it timed out: $(cat "$tmp/err")"
echo "ok: server stopped (SIGSTOP): clio dd exited $rc after $ms ms: $(head -n 1 "$tmp/err")"

# ------------------------------------------------------------ 6
# opening the device of a stopped server: MOUNT unanswered within timeo=
# fails with ETIMEDOUT (libnfs says EINTR, which a caller would retry)
stopped=$ganesha_pid
kill -STOP "$stopped"
t0=$(now_ms)
rc=0
timeout 20 "$CLIO" info "$url" >/dev/null 2>"$tmp/err" || rc=$?
ms=$(($(now_ms) - t0))
kill -CONT "$stopped"
stopped=""
[ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] || fail "open, server stopped: clio info exited $rc"
[ "$ms" -le $((timeo * 1000 + 3000)) ] || fail "open, server stopped: failed only after $ms ms"
grep -q "Connection timed out" "$tmp/err" ||
	fail "open, server stopped: not ETIMEDOUT: $(cat "$tmp/err")"
echo "ok: open, server stopped: failed after $ms ms: $(cat "$tmp/err")"
exit 0
