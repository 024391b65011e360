#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-timeout.sh - the NBD client backend's timeout=S: a server
# that stops answering (nbdkit's memory plugin behind the delay filter,
# stopped with SIGSTOP in the middle of a copy, on a Unix socket) fails
# the copy within about S seconds with "Connection timed out" and exit
# 74, reading and writing (the write-back reported lost at fsync);
# without timeout= the same copy still waits (NBD has no deadline of
# its own); clio info shows the timeout; a bad value is refused in one
# line naming it.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"

stopped=""
trap '[ -z "$stopped" ] || kill -CONT "$stopped" 2>/dev/null; nbd_stop; rm -rf "$tmp"' EXIT

# hang WHAT DELAY DD-ARGS...: a copy that the server (each request
# delayed DELAY) stops answering 0.5 s in; sets rc and secs (from the
# stop to clio dd's end; 20 s at most: clio dd is killed then, rc 137)
hang() {
	what=$1 delay=$2
	shift 2
	nbd_start --filter=delay memory 1G rdelay=$delay wdelay=$delay
	server=$nbd_pids
	timeout -s KILL 20 "$CLIO" dd "$@" 2>"$tmp/err" >/dev/null &
	dd_pid=$!
	sleep 0.5
	kill -0 "$dd_pid" 2>/dev/null || fail "$what: clio dd ended before the server stopped: $(cat "$tmp/err")"
	kill -STOP "$server"
	stopped=$server
	start=$(date +%s)
	rc=0
	wait "$dd_pid" || rc=$?
	secs=$(( $(date +%s) - start ))
	kill -CONT "$server"
	stopped=""
	nbd_stop
}

hang "read, timeout=1" 20ms if="$uri&timeout=1" of=/dev/null bs=64k
cat "$tmp/err"
[ $rc -ne 137 ] || fail "read: clio dd still waited 20 s after the server stopped, with timeout=1"
[ $rc -eq 74 ] || fail "read: clio dd exit $rc, not 74"
[ $secs -le 6 ] || fail "read: clio dd ended ${secs}s after the server stopped, with timeout=1"
grep -q "Connection timed out" "$tmp/err" || fail "read: no 'Connection timed out' in clio dd's error"
echo "ok: read: a stopped server fails the copy in ${secs}s with timeout=1 (exit $rc)"

head -c 67108864 /dev/urandom >"$tmp/pat"
hang "write, timeout=1" 500ms if="$tmp/pat" of="$uri&timeout=1" bs=64k conv=notrunc,fsync
cat "$tmp/err"
[ $rc -ne 137 ] || fail "write: clio dd still waited 20 s after the server stopped, with timeout=1"
[ $rc -eq 74 ] || fail "write: clio dd exit $rc, not 74"
[ $secs -le 8 ] || fail "write: clio dd ended ${secs}s after the server stopped, with timeout=1"
grep -q "Connection timed out" "$tmp/err" || fail "write: no 'Connection timed out' in clio dd's error"
echo "ok: write: the lost write-back reported in ${secs}s with timeout=1 (exit $rc)"

# without timeout=: still waiting 3 s after the stop
nbd_start --filter=delay memory 1G rdelay=20ms
server=$nbd_pids
"$CLIO" dd if="$uri" of=/dev/null bs=64k 2>"$tmp/err" >/dev/null &
dd_pid=$!
sleep 0.5
kill -0 "$dd_pid" 2>/dev/null || fail "no timeout: clio dd ended before the server stopped: $(cat "$tmp/err")"
kill -STOP "$server"
stopped=$server
sleep 3
kill -0 "$dd_pid" 2>/dev/null || fail "no timeout: clio dd ended while the server was stopped: $(cat "$tmp/err")"
kill -9 "$dd_pid"
wait "$dd_pid" 2>/dev/null
kill -CONT "$server"
stopped=""
nbd_stop
echo "ok: without timeout= the copy still waits for the stopped server 3 s on"

nbd_start memory 1M
"$CLIO" info "$uri&timeout=7" >"$tmp/info" || fail "clio info with timeout=7 failed"
grep -q "timeout.*7" "$tmp/info" || fail "clio info does not show timeout 7: $(cat "$tmp/info")"
rc=0
"$CLIO" dd if="$uri&timeout=soon" of=/dev/null 2>"$tmp/err" || rc=$?
[ $rc -eq 64 ] || fail "timeout=soon: exit $rc, not 64"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "bad timeout 'soon'" "$tmp/err" ||
	fail "timeout=soon: not one line naming the value: $(cat "$tmp/err")"
echo "ok: clio info shows the timeout; timeout=soon refused: $(cat "$tmp/err")"
exit 0
