#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-flusherr.sh - a FLUSH covers the writes acknowledged on every
# connection (multi-conn), also those lost before the connection that
# flushes was opened, on Unix sockets.  The plugin's writes fail (nbdkit's
# error filter, while a trigger file exists) below a cache of 1 MiB:
# connection A writes 2 MiB, acknowledged, whose write-back fails and is
# dropped for room; the writes succeed again; connection B, opened after
# that, must fail its FLUSH with EIO (it succeeded, the 2 MiB lost); so
# must a connection opened after A closed without flushing.  Once a
# client was told (B, or A by its own failed FLUSH), a new connection's
# FLUSH succeeds.  Through the clio
# filter over the file plugin, and through clio serve of an NBD device
# whose server has the error filter.  tests/tools/nbdops is the client.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
nbd_with_clio
nbdops="$(dirname "$CLIO")/tests/tools/nbdops"
[ -x "$nbdops" ] || fail "nbdops not built (make tests)"
a_pid=""
trap '[ -z "$a_pid" ] || kill "$a_pid" 2>/dev/null; nbd_stop; rm -rf "$tmp"' EXIT
errs="error-pwrite-rate=1 error-pwrite-file=$tmp/failing error=EIO"
# a_failing LINE OPS...: connection A runs OPS in the background while the
# plugin's writes fail, until nbdops prints a line that starts with LINE;
# the writes then succeed again
a_failing() {
	line=$1
	shift
	touch "$tmp/failing"
	# emptied here, not by the child's redirection: the loop below
	# must not find the last A's lines before the child opened the file
	: >"$tmp/a.out"
	"$nbdops" "$uri" "$@" >>"$tmp/a.out" 2>&1 &
	a_pid=$!
	i=0
	while ! grep -q "^$line" "$tmp/a.out" && [ $i -lt 100 ]; do
		sleep 0.1; i=$((i + 1))
	done
	rm -f "$tmp/failing"
}
# a_writes: connection A writes 2 MiB while the writes fail, then stays
# connected; returns once the write was acknowledged
a_writes() {
	a_failing "w:.* ok" w:0:2097152:171 s:20000
	grep -q "^w:.* ok" "$tmp/a.out" || fail "$what: A's write: $(cat "$tmp/a.out")"
}
a_stop() { kill "$a_pid" 2>/dev/null; wait "$a_pid" 2>/dev/null; a_pid=""; }
# expect OUT...: nbdops' lines are OUT
expect() {
	printf '%s\n' "$@" >"$tmp/want"
	cmp -s "$tmp/want" "$tmp/got" ||
		{ echo "got:"; cat "$tmp/got"; echo "want:"; cat "$tmp/want"; fail "$what"; }
}
# check: a connection opened after the loss is told once; then none
check() {
	what="$1: B opened after A's writes were lost, A connected"
	a_writes
	"$nbdops" "$uri" f f >"$tmp/got" 2>&1
	expect "f error EIO" "f ok"
	echo "ok: $what: B's first FLUSH fails with EIO, its second succeeds"
	what="$1: a connection opened once B was told"
	"$nbdops" "$uri" f >"$tmp/got" 2>&1
	expect "f ok"
	echo "ok: $what: its FLUSH succeeds"
	a_stop
	what="$1: B opened after A, which did not flush, closed"
	a_writes
	a_stop
	"$nbdops" "$uri" f f >"$tmp/got" 2>&1
	expect "f error EIO" "f ok"
	echo "ok: $what: B's first FLUSH fails with EIO"
	what="$1: B opened after A was told"
	a_failing "f " w:0:65536:9 f s:20000
	grep -q "^f error EIO" "$tmp/a.out" || fail "$what: A's FLUSH did not fail: $(cat "$tmp/a.out")"
	"$nbdops" "$uri" f r:0:65536:9 >"$tmp/got" 2>&1
	expect "f ok" "r:0:65536:9 ok"
	a_stop
	echo "ok: $what: A's FLUSH failed, B's succeeds"
	what="$1: no failure"
	"$nbdops" "$uri" w:0:2097152:172@0 f@1 r:0:2097152:172@1 >"$tmp/got" 2>&1
	expect "w:0:2097152:172@0 ok" "f@1 ok" "r:0:2097152:172@1 ok"
	echo "ok: $what: a write on one connection, a FLUSH on another succeeds"
}
truncate -s 16M "$tmp/disk"
# ------------------------------------------------------------ the filter
nbd_start --filter="$filter" --filter=error file "$tmp/disk" \
	cache_size=1M bsize=4k $errs
check filter
cmp -n 2097152 "$tmp/disk" /dev/zero >/dev/null 2>&1 && fail "filter: the last write is not in the file"
# ------------------------------------------------------------ clio serve
if [ "${CLIO_FLAVOUR:-plain}" = tsan ]; then
	echo "skip: clio serve under TSan (nbdkit cannot load a TSan-built plugin)"
	exit 0
fi
nbd_stop
nbdkit -U "$tmp/inner" --pidfile "$tmp/inner.pid" --filter=error file "$tmp/disk" $errs ||
	fail "the inner nbdkit did not start"
nbd_wait_pid "$tmp/inner.pid"
inner=$nbd_pids
env $nbd_env "$CLIO" serve "nbd+unix:///?socket=$tmp/inner" --socket "$sock" \
	--pidfile "$tmp/serve.pid" -o cache_size=1M,bsize=4k || fail "clio serve did not start"
nbd_wait_pid "$tmp/serve.pid"
nbd_pids="$nbd_pids $inner"
check "clio serve"
exit 0
