#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-bench-kernel.sh - `clio bench kernel` ended by a signal in the
# middle of its run leaves no file behind: SIGTERM (and SIGINT where it
# is not ignored) removes the temporary clio-bench.XXXXXX of $TMPDIR
# (1 GiB in a full run) and PATH.write, stops the dd it waits for, and the
# process dies of the signal; with --file PATH the file itself is kept.
# Its table is checked by test-bench.sh.
. "$(dirname "$0")/functions.sh"
command -v dd >/dev/null 2>&1 || { echo "skip: dd is missing" >&2; exit 77; }
mkdir "$tmp/dir"

# interrupt SIG ARGS...: clio bench kernel ARGS in $tmp/dir, SIG once a
# file is there; $rc
interrupt() {
	sig=$1
	shift
	TMPDIR="$tmp/dir" "$CLIO" bench kernel --quick --runs 100 "$@" >/dev/null 2>"$tmp/err" &
	pid=$!
	i=0
	until [ -n "$(ls -A "$tmp/dir")" ] || [ $i -ge 100 ]; do sleep 0.1; i=$((i + 1)); done
	[ -n "$(ls -A "$tmp/dir")" ] || fail "no file made: $(cat "$tmp/err")"
	sleep 0.5
	kill -"$sig" $pid
	rc=0
	wait $pid || rc=$?
}

interrupt TERM --size 16M
[ $rc -eq 143 ] || fail "clio bench kernel after SIGTERM: exit $rc, want 143: $(cat "$tmp/err")"
sleep 0.5	# the dd it ran, stopped too, closes its files
[ -z "$(ls -A "$tmp/dir")" ] || fail "files left behind after SIGTERM: $(ls "$tmp/dir")"
echo "ok: SIGTERM: no temporary file left behind"

interrupt TERM --size 16M --file "$tmp/dir/keep"
[ $rc -eq 143 ] || fail "clio bench kernel --file after SIGTERM: exit $rc: $(cat "$tmp/err")"
sleep 0.5
[ "$(ls -A "$tmp/dir")" = keep ] || fail "--file: after SIGTERM: $(ls "$tmp/dir")"
echo "ok: SIGTERM with --file: PATH kept, PATH.write removed"
exit 0
