#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-die.sh - the NBD server (nbdkit's memory plugin behind the
# delay filter, on a Unix socket) killed with SIGKILL while clio dd writes
# 32 MiB into it, with 16 writes in flight: the commands the dead
# connection refuses complete with ENOTCONN (they were queued without a
# wake by the connection's own thread, and clio dd waited for them for
# ever), so that clio dd fails within seconds with exit 74, saying the
# write-back failed (at fsync with conv=fsync, at close without): the
# dirty data is reported lost, never silently dropped.  Behind clio
# serve, the device's server killed in a copy out: the reads fail with
# EIO (ENOTCONN, which NBD cannot carry, went out as EINVAL, blaming the
# client's request).
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
nbd_with_clio # clio serve: the sanitizer runtimes preloaded under ASan

head -c 33554432 /dev/urandom >"$tmp/pat"

# die CONV WHERE: the server killed in a copy with conv=CONV; the error
# is reported at WHERE ("fsync failed for" or "error closing")
die() {
	nbd_start --filter=delay memory 64M wdelay=500ms
	pid=$nbd_pids
	( sleep 0.7; kill -9 "$pid" ) &
	killer=$!
	start=$(date +%s)
	timeout -s KILL 30 "$CLIO" dd if="$tmp/pat" of="$uri" bs=64k conv=$1 2>"$tmp/err"
	rc=$?
	wait $killer
	secs=$(( $(date +%s) - start ))
	nbd_pids=""
	cat "$tmp/err"
	[ $rc -ne 137 ] || fail "conv=$1: clio dd hung after the server died (killed after 30 s)"
	[ $rc -eq 74 ] || fail "conv=$1: clio dd exit $rc, not 74"
	[ $secs -le 10 ] || fail "conv=$1: clio dd took ${secs}s to notice the server died"
	grep -q "$2 '$uri': Transport endpoint is not connected" "$tmp/err" ||
		fail "conv=$1: no '$2' error for the lost write-back"
	echo "ok: conv=$1: the server killed mid-copy, clio dd fails in ${secs}s (exit $rc, $2)"
}

die notrunc,fsync "fsync failed for"
die notrunc "error closing"

# ------------------------------------------------------------ clio serve
if [ "${CLIO_FLAVOUR:-plain}" = tsan ]; then
	echo "skip: clio serve under TSan (nbdkit cannot load a TSan-built plugin)"
	exit 0
fi
nbdkit -U "$tmp/inner" --pidfile "$tmp/inner.pid" --filter=delay memory 64M rdelay=300ms ||
	fail "the inner nbdkit did not start"
nbd_wait_pid "$tmp/inner.pid"
inner=$nbd_pids
rm -f "$sock" # left by the server killed last
env $nbd_env "$CLIO" serve "nbd+unix:///?socket=$tmp/inner" --socket "$sock" --pidfile "$tmp/serve.pid" ||
	fail "clio serve did not start"
nbd_wait_pid "$tmp/serve.pid"
nbd_pids="$nbd_pids $inner"
( sleep 1; kill -9 "$inner" ) &
killer=$!
start=$(date +%s)
timeout -s KILL 30 "$CLIO" dd if="$uri" of=/dev/null bs=64k 2>"$tmp/err"
rc=$?
wait $killer
secs=$(( $(date +%s) - start ))
cat "$tmp/err"
[ $rc -ne 0 ] && [ $rc -ne 137 ] || fail "clio serve: clio dd from it exit $rc"
[ $secs -le 10 ] || fail "clio serve: clio dd took ${secs}s to fail"
grep -q "error reading '$uri': Input/output error" "$tmp/err" ||
	fail "clio serve: the dead device's reads do not fail with EIO"
echo "ok: clio serve: its device's server killed, reads through it fail with EIO in ${secs}s"
exit 0
