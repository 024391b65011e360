#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-dd-signals.sh - signals during clio dd from a slow pipe into a file
# through the cache: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR2 and SIGALRM
# (the last three killed it, the cache lost) write back every byte read
# (the file is the prefix of the input that the summary counts), print
# the summary, and the process dies of the signal (status 128+N, as GNU
# dd does for SIGINT); SIGPIPE on output to a closed pipe does the same;
# SIGUSR1 prints the statistics and the copy goes on to the end.
# Synchronisation: the feeder writes 10 MB into the pipe, which returns
# only once clio dd has read all but a pipe's worth, then holds the pipe
# open until released; every wait is a bounded loop on a file.
set -e
. "$(dirname "$0")/functions.sh"

env --default-signal=INT true 2>/dev/null || { echo "env has no --default-signal"; exit 77; }
FED=10000000
head -c 12000000 /dev/urandom >"$tmp/in"

wait_for() { # FILE [PATTERN]: bounded wait until FILE exists (and has PATTERN)
	i=0
	while ! [ -e "$1" ] || { [ -n "$2" ] && ! grep -q "$2" "$1"; }; do
		i=$((i + 1))
		[ $i -lt 3000 ] || fail "waited 30 s for $1${2:+ to show '$2'}"
		sleep 0.01
	done
}

# feed: FED bytes, then "fed", then the pipe stays open until released
feed() {
	head -c "$FED" "$tmp/in"
	: >"$tmp/fed"
	wait_for "$tmp/released"
}
release() { : >"$tmp/released"; }

# run_dd ARGS...: clio dd with SIGINT, SIGPIPE and SIGQUIT at their defaults (an
# asynchronous list ignores SIGINT and SIGQUIT); its pid in $tmp/pid, its exit
# status in $tmp/rc when it is gone
run_dd() {
	rc=0
	sh -c 'echo $$ >"$0/pid.new" && mv "$0/pid.new" "$0/pid" &&
		exec env --default-signal=INT,PIPE,QUIT "$@"' "$tmp" "$CLIO" dd "$@" || rc=$?
	echo $rc >"$tmp/rc.new" && mv "$tmp/rc.new" "$tmp/rc"
}

# check_copy ERR OUT: the summary's byte count is what OUT holds, OUT is
# the input's prefix, and the records in cover those bytes
check_copy() {
	bytes=$(sed -n 's/^\([0-9]*\) bytes .*copied.*/\1/p' "$1" | tail -n 1)
	[ -n "$bytes" ] || fail "no byte count in the summary: $(cat "$1")"
	grep -q '^[0-9]*+[0-9]* records in$' "$1" || fail "no records in: $(cat "$1")"
	[ "$(wc -c <"$2")" -eq "$bytes" ] ||
		fail "$2 holds $(wc -c <"$2") bytes, the summary says $bytes"
	head -c "$bytes" "$tmp/in" | cmp -s - "$2" || fail "$2 is not the input's prefix"
	[ "$bytes" -ge $((FED - 65536)) ] || fail "only $bytes bytes of $FED read"
	echo "$bytes"
}

# (the last: input gathered into 1 MiB output blocks, one of them partial
# when the signal comes)
ulimit -c 0 # SIGQUIT's core
for sig in INT:2:bs=64k TERM:15:bs=64k HUP:1:bs=64k QUIT:3:bs=64k USR2:12:bs=64k \
	ALRM:14:bs=64k INT:2:ibs=64k,obs=1M; do
	blocks=$(echo "${sig##*:}" | tr , ' ')
	sig=${sig%:*}
	num=${sig#*:}
	sig=${sig%:*}
	rm -f "$tmp/released" "$tmp/fed" "$tmp/out" "$tmp/err" "$tmp/pid" "$tmp/rc"
	# shellcheck disable=SC2086
	feed | run_dd of="$tmp/out" $blocks 2>"$tmp/err" &
	wait_for "$tmp/pid"
	wait_for "$tmp/fed"
	kill -s $sig "$(cat "$tmp/pid")"
	wait_for "$tmp/rc"
	release
	wait
	rc=$(cat "$tmp/rc")
	want=$((128 + num))
	[ "$rc" -eq "$want" ] || fail "SIG$sig: exit $rc, want $want: $(cat "$tmp/err")"
	bytes=$(check_copy "$tmp/err" "$tmp/out")
	echo "ok: SIG$sig ($blocks): exit $rc, $bytes bytes read, on disk and reported"
done

# SIGPIPE: the reader of the output goes away after 100 bytes
rm -f "$tmp/released" "$tmp/fed" "$tmp/rc" "$tmp/pid"
feed | run_dd bs=64k 2>"$tmp/err" | head -c 100 >/dev/null &
wait_for "$tmp/rc"
release
wait
[ "$(cat "$tmp/rc")" -eq 141 ] || fail "SIGPIPE: exit $(cat "$tmp/rc"), want 141: $(cat "$tmp/err")"
grep -q '^[0-9]*+[0-9]* records in$' "$tmp/err" || fail "SIGPIPE: no summary: $(cat "$tmp/err")"
grep -q 'copied' "$tmp/err" || fail "SIGPIPE: no byte count: $(cat "$tmp/err")"
if grep -q 'error writing' "$tmp/err"; then fail "SIGPIPE: reported as an error: $(cat "$tmp/err")"; fi
echo "ok: SIGPIPE: exit 141 after the summary"

# SIGUSR1: statistics, then the copy goes on to the end of the input
rm -f "$tmp/released" "$tmp/fed" "$tmp/out" "$tmp/err" "$tmp/pid" "$tmp/rc"
feed | run_dd of="$tmp/out" bs=64k 2>"$tmp/err" &
wait_for "$tmp/pid"
wait_for "$tmp/fed"
kill -s USR1 "$(cat "$tmp/pid")"
wait_for "$tmp/err" 'copied'
release
wait_for "$tmp/rc"
wait
[ "$(cat "$tmp/rc")" -eq 0 ] || fail "SIGUSR1: exit $(cat "$tmp/rc"): $(cat "$tmp/err")"
[ "$(grep -c 'records in$' "$tmp/err")" -eq 2 ] ||
	fail "SIGUSR1: not two summaries: $(cat "$tmp/err")"
head -c "$FED" "$tmp/in" | cmp - "$tmp/out" || fail "SIGUSR1: the copy is not the input"
grep -q "^$FED bytes" "$tmp/err" || fail "SIGUSR1: the final count is not $FED: $(cat "$tmp/err")"
echo "ok: SIGUSR1: statistics, then all $FED bytes copied"

# A copy that never waits (from /dev/zero into the cache) sees its
# signals too: SIGUSR1 prints the statistics and it goes on, SIGINT then
# ends it after the write-back
rm -f "$tmp/out" "$tmp/err" "$tmp/pid" "$tmp/rc"
run_dd if=/dev/zero of="$tmp/out" bs=1k count=100M 2>"$tmp/err" &
wait_for "$tmp/pid"
sleep 0.2
kill -s USR1 "$(cat "$tmp/pid")"
wait_for "$tmp/err" 'copied'
kill -s INT "$(cat "$tmp/pid")"
wait_for "$tmp/rc"
wait
[ "$(cat "$tmp/rc")" -eq 130 ] || fail "busy copy, SIGINT: exit $(cat "$tmp/rc"): $(cat "$tmp/err")"
[ "$(grep -c 'records in$' "$tmp/err")" -eq 2 ] ||
	fail "busy copy: not two summaries: $(cat "$tmp/err")"
bytes=$(sed -n 's/^\([0-9]*\) bytes .*copied.*/\1/p' "$tmp/err" | tail -n 1)
[ "$(wc -c <"$tmp/out")" -eq "$bytes" ] && [ "$bytes" -gt 0 ] ||
	fail "busy copy: $tmp/out holds $(wc -c <"$tmp/out") bytes, the summary says $bytes"
cmp -s -n "$bytes" /dev/zero "$tmp/out" || fail "busy copy: the output is not zeros"
echo "ok: busy copy: SIGUSR1 then SIGINT, exit 130, $bytes bytes on disk and reported"
exit 0
