#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-dd-hung.sh - clio dd from an NBD server that stops answering
# (nbdkit's memory plugin, stopped with SIGSTOP in the middle of the
# copy, on a Unix socket): the first SIGTERM cannot end the copy, which
# waits for the device, and clio dd says within a few seconds that the
# signal again ends it; the second SIGTERM ends it at once (status 143).
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"

nbd_start --filter=delay memory 1G rdelay=20ms
server=$nbd_pids
dd_pid=""
trap '[ -z "$dd_pid" ] || kill -9 "$dd_pid" 2>/dev/null; kill -CONT "$server" 2>/dev/null; nbd_stop; rm -rf "$tmp"' EXIT

"$CLIO" dd if="$uri" of=/dev/null bs=64k >/dev/null 2>"$tmp/err" &
dd_pid=$!
sleep 0.5
kill -0 "$dd_pid" 2>/dev/null || fail "clio dd ended before the server stopped: $(cat "$tmp/err")"
kill -STOP "$server"
sleep 0.2
kill -TERM "$dd_pid"
i=0
while ! grep -q "the signal again ends clio dd" "$tmp/err" && [ $i -lt 100 ]; do
	sleep 0.1; i=$((i + 1))
done
kill -0 "$dd_pid" 2>/dev/null || fail "clio dd ended on the first SIGTERM while the device hung: $(cat "$tmp/err")"
grep -q "the signal again ends clio dd" "$tmp/err" ||
	fail "no word after 10 s that a second signal ends clio dd: $(cat "$tmp/err")"
echo "ok: the first SIGTERM waits for the device, and says so: $(tail -n 1 "$tmp/err")"
kill -TERM "$dd_pid"
i=0
while kill -0 "$dd_pid" 2>/dev/null && [ $i -lt 50 ]; do
	sleep 0.1; i=$((i + 1))
done
if kill -0 "$dd_pid" 2>/dev/null; then
	kill -9 "$dd_pid"
	fail "clio dd still runs 5 s after a second SIGTERM"
fi
rc=0
wait "$dd_pid" || rc=$?
[ "$rc" -eq 143 ] || fail "clio dd exited $rc after the second SIGTERM, want 143"
echo "ok: the second SIGTERM ends clio dd at once (status $rc)"
exit 0
