#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-sigterm.sh - a signal that ends the server writes its cache
# back at once, while a client stays connected: nbdkit serves such a
# client until it leaves, and a SIGKILL sent meanwhile must not lose a
# write that was acknowledged.  A client (tests/tools/nbdops) writes
# 64 KiB, without FUA or FLUSH, and stays; the server gets SIGTERM (clio
# serve of a file) or SIGINT (the clio filter over nbdkit's file plugin);
# within 5 s the bytes are in the file, before the client has gone; then
# the server is killed with SIGKILL and the file still holds them.  The
# same for SIGHUP (clio serve), which nbdkit takes as SIGTERM (it was not
# watched: the write was lost); and SIGUSR1 (the filter), which nbdkit
# leaves to its default action (the process died at once, the write
# lost): the bytes are in the file, then the server dies of it.  The
# same for SIGUSR1 with the clio filter over the clio plugin, two caches
# in one nbdkit (each module's signal watch its own: the filter's calls
# went to the plugin's, which wrote back only the plugin's cache, and the
# write in the filter's was lost).  On Unix sockets.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
nbd_with_clio
nbdops="$(dirname "$CLIO")/tests/tools/nbdops"
[ -x "$nbdops" ] || fail "nbdops not built (make tests)"
if [ "${CLIO_FLAVOUR:-plain}" = tsan ]; then
	echo "skip: nbdkit cannot load a TSan-built plugin or filter"
	exit 77
fi
c_pid=""
trap '[ -z "$c_pid" ] || kill "$c_pid" 2>/dev/null; nbd_stop; rm -rf "$tmp"' EXIT
head -c 65536 /dev/zero | tr '\0' 'x' >"$tmp/want"

# check WHAT SIGNAL: the server of $nbd_pids on $uri, over $tmp/disk
check() {
	: >"$tmp/c.out" # not the child's redirection: the last run's lines would match
	"$nbdops" "$uri" w:0:65536:120 s:30000 >>"$tmp/c.out" 2>&1 &
	c_pid=$!
	i=0
	while ! grep -q "^w:.* ok" "$tmp/c.out" && [ $i -lt 100 ]; do
		sleep 0.1; i=$((i + 1))
	done
	grep -q "^w:.* ok" "$tmp/c.out" || fail "$1: the write: $(cat "$tmp/c.out")"
	cmp -s -n 65536 "$tmp/disk" "$tmp/want" && fail "$1: the write is in the file before the signal (no cache?)"
	kill -"$2" "$nbd_pids" || fail "$1: kill -$2"
	i=0
	while ! cmp -s -n 65536 "$tmp/disk" "$tmp/want" && [ $i -lt 50 ]; do
		sleep 0.1; i=$((i + 1))
	done
	cmp -s -n 65536 "$tmp/disk" "$tmp/want" ||
		fail "$1: SIG$2 with a client connected: the acknowledged write is not in the file after 5 s"
	if [ "${3:-}" = dies ]; then
		i=0
		while running "$nbd_pids" && [ $i -lt 50 ]; do
			sleep 0.1; i=$((i + 1))
		done
		running "$nbd_pids" && fail "$1: SIG$2 (its default action: the end) did not end the server"
	else
		running "$c_pid" || fail "$1: the client left early: $(cat "$tmp/c.out")"
	fi
	kill -9 "$nbd_pids" 2>/dev/null
	kill "$c_pid" 2>/dev/null
	wait "$c_pid" 2>/dev/null
	c_pid=""
	cmp -s -n 65536 "$tmp/disk" "$tmp/want" || fail "$1: the write is gone after SIGKILL"
	echo "ok: $1: SIG$2 wrote the cache back with the client still connected${3:+, then the server died of it}"
	nbd_pids=""
	rm -f "$sock"
}

truncate -s 16M "$tmp/disk"
env $nbd_env "$CLIO" serve "$tmp/disk" --socket "$sock" --pidfile "$tmp/serve.pid" ||
	fail "clio serve did not start"
nbd_wait_pid "$tmp/serve.pid"
check "clio serve" TERM

rm -f "$tmp/disk"
truncate -s 16M "$tmp/disk"
nbd_start --filter="$filter" file "$tmp/disk"
check "the clio filter" INT

rm -f "$tmp/disk"
truncate -s 16M "$tmp/disk"
env $nbd_env "$CLIO" serve "$tmp/disk" --socket "$sock" --pidfile "$tmp/serve.pid" ||
	fail "clio serve did not start"
nbd_wait_pid "$tmp/serve.pid"
check "clio serve" HUP

rm -f "$tmp/disk"
truncate -s 16M "$tmp/disk"
nbd_start --filter="$filter" file "$tmp/disk"
check "the clio filter" USR1 dies

rm -f "$tmp/disk"
truncate -s 16M "$tmp/disk"
nbd_start --filter="$filter" "$plugin" "file:$tmp/disk"
check "the clio filter over the clio plugin" USR1 dies
exit 0
