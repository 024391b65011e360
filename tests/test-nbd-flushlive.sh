#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-flushlive.sh - a FLUSH is not held up by another connection's
# stream of writes, on Unix sockets.  Connection B rewrites a 64 MiB
# export 10 times in 1 MiB writes (640 of them) into a 16 MiB cache over
# a slow plugin (nbdkit's delay filter, 20 ms a write); once B is under
# way, connection A sends one FLUSH.  It must write what was dirty when
# it came and return while B still writes: the write-back chased the
# blocks B dirtied after it, and waited for B's write-behind, so that it
# returned only once B's whole stream was done (for ever, with a writer
# that does not stop).  Through the clio filter over the memory plugin,
# and through clio serve of an NBD device.  tests/tools/nbdops is the
# client.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
nbd_with_clio
nbdops="$(dirname "$CLIO")/tests/tools/nbdops"
[ -x "$nbdops" ] || fail "nbdops not built (make tests)"
b_pid=""
trap '[ -z "$b_pid" ] || kill "$b_pid" 2>/dev/null; nbd_stop; rm -rf "$tmp"' EXIT
total=640
ops=""
i=0
while [ $i -lt $total ]; do
	ops="$ops w:$(( (i % 64) * 1048576 )):1048576:$(( i % 251 ))"
	i=$((i + 1))
done
# live WHAT: B's stream, A's FLUSH in the middle of it
live() {
	"$nbdops" "$uri" $ops >"$tmp/b.out" 2>&1 &
	b_pid=$!
	i=0
	while [ "$(grep -c ' ok$' "$tmp/b.out")" -lt 32 ] && [ $i -lt 300 ]; do
		sleep 0.05; i=$((i + 1))
	done
	kill -0 "$b_pid" 2>/dev/null || fail "$1: B ended early: $(tail -n 3 "$tmp/b.out")"
	"$nbdops" "$uri" f >"$tmp/a.out" 2>&1 || fail "$1: A's FLUSH: $(cat "$tmp/a.out")"
	n=$(grep -c ' ok$' "$tmp/b.out")
	kill "$b_pid" 2>/dev/null
	wait "$b_pid" 2>/dev/null
	b_pid=""
	[ "$n" -lt $((total / 2)) ] ||
		fail "$1: A's FLUSH returned only after $n of B's $total writes"
	echo "ok: $1: A's FLUSH returned after $n of B's $total writes"
}
nbd_start --filter="$filter" --filter=delay memory 64M wdelay=20ms cache_size=16M
live filter
if [ "${CLIO_FLAVOUR:-plain}" = tsan ]; then
	echo "skip: clio serve under TSan (nbdkit cannot load a TSan-built plugin)"
	exit 0
fi
nbd_stop
nbdkit -U "$tmp/inner" --pidfile "$tmp/inner.pid" --filter=delay memory 64M wdelay=20ms ||
	fail "the inner nbdkit did not start"
nbd_wait_pid "$tmp/inner.pid"
inner=$nbd_pids
env $nbd_env "$CLIO" serve "nbd+unix:///?socket=$tmp/inner" --socket "$sock" \
	--pidfile "$tmp/serve.pid" -o cache_size=16M || fail "clio serve did not start"
nbd_wait_pid "$tmp/serve.pid"
nbd_pids="$nbd_pids $inner"
live "clio serve"
exit 0
