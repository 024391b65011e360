#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-lostexit.sh - a server whose final write-back fails exits with
# status 74 (EX_IOERR) after its message, not nbdkit's 0: a client writes
# 64 KiB (acknowledged, cached: no FUA, no FLUSH) and leaves; the device
# refuses writes; SIGTERM.  clio serve of a fault: device, the clio filter
# over nbdkit's file plugin behind its error filter, and the clio filter
# over the clio plugin.  A server whose write-back succeeds still exits 0.
# On Unix sockets; each server in the foreground, our child.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
nbd_with_clio
nbdops="$(dirname "$CLIO")/tests/tools/nbdops"
[ -x "$nbdops" ] || fail "nbdops not built (make tests)"
if [ "${CLIO_FLAVOUR:-plain}" = tsan ]; then
	echo "skip: nbdkit cannot load a TSan-built plugin or filter"
	exit 77
fi
s_pid=""
trap '[ -z "$s_pid" ] || kill -9 "$s_pid" 2>/dev/null; rm -rf "$tmp"' EXIT

# run WHAT WANT CMD...: CMD (a server on $sock, in the foreground) gets a
# client's write, then SIGTERM; its exit status must be WANT
run() {
	what=$1 want=$2
	shift 2
	rm -f "$sock"
	env $nbd_env "$@" >"$tmp/s.out" 2>&1 &
	s_pid=$!
	i=0
	while [ ! -S "$sock" ] && [ $i -lt 100 ]; do
		sleep 0.05; i=$((i + 1))
	done
	[ -S "$sock" ] || { cat "$tmp/s.out"; fail "$what: no socket"; }
	"$nbdops" "$uri" w:0:65536:120 d >"$tmp/c.out" 2>&1 ||
		fail "$what: the client: $(cat "$tmp/c.out")"
	kill -TERM "$s_pid"
	i=0
	while running "$s_pid" && [ $i -lt 100 ]; do
		sleep 0.1; i=$((i + 1))
	done
	running "$s_pid" && fail "$what: still running 10 s after SIGTERM"
	wait "$s_pid"
	rc=$?
	s_pid=""
	[ "$rc" -eq "$want" ] ||
		{ cat "$tmp/s.out"; fail "$what: exit status $rc, not $want"; }
	if [ "$want" -ne 0 ]; then
		grep -q "writing back the cache" "$tmp/s.out" ||
			{ cat "$tmp/s.out"; fail "$what: no message of the failed write-back"; }
	fi
	echo "ok: $what: exit status $rc"
}

truncate -s 16M "$tmp/disk"
run "clio serve of a fault: device that refuses writes" 74 \
	"$CLIO" serve "fault:write=EIO@file:$tmp/disk" --socket "$sock" -f
run "clio serve of a healthy file" 0 \
	"$CLIO" serve "$tmp/disk" --socket "$sock" -f
cmp -s -n 65536 "$tmp/disk" /dev/null && fail "the healthy server's write is not in the file"
run "the clio filter over the file plugin behind the error filter" 74 \
	nbdkit -f -U "$sock" --filter="$filter" --filter=error file "$tmp/disk" \
	error-pwrite-rate=1 error=EIO
run "the clio filter over the clio plugin of a fault: device" 74 \
	nbdkit -f -U "$sock" --filter="$filter" "$plugin" "fault:write=EIO@file:$tmp/disk"
run "the clio filter over the file plugin" 0 \
	nbdkit -f -U "$sock" --filter="$filter" file "$tmp/disk"
exit 0
