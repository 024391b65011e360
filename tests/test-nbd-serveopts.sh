#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-serveopts.sh - clio serve's options seen from outside, in a
# network and mount namespace of its own (127.0.0.1 the only address):
# --port serves on 127.0.0.1 only (ss lists no other listener) and
# nbdinfo there shows the device's size; -r is read-only there; -o takes
# tunables (nbdinfo's preferred block size is bsize); --tls=require with
# --tls-certificates is passed to nbdkit (a client without TLS is
# refused, one with the CA reads the export); errors, each one line
# before nbdkit starts: a busy port, a socket in use (also to a user who
# may not connect to it: not called stale), a stale socket, a
# socket path that is a file (kept), empty, in a directory that is not
# there or below a file, a certificates directory that is
# not there, a bad device string, a pid file that cannot be written;
# the cache resident from the start (prefault, and prefault=off); the
# socket file removed when SIGTERM, SIGINT, SIGHUP or SIGUSR1 ends the
# server, also while a client stays (it was left: the next clio serve on
# the path refused it as stale), and when SIGUSR1, SIGUSR2 or SIGALRM
# ends it before any client came (they were left).
. "$(dirname "$0")/functions.sh"
for tool in nbdkit nbdinfo ss ip unshare; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "$tool not found (apt-get install nbdkit libnbd-bin iproute2)"; exit 77; }
done
if [ -z "$CLIO_SERVE_NS" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "needs root (unshare -m -n)"; exit 77; }
	rm -rf "$tmp"
	CLIO_SERVE_NS=1 exec unshare -m -n --propagation private sh -c \
		'ip link set lo up && exec sh "$0" "$@"' "$0" "$@"
fi
. "$(dirname "$0")/nbd-common.sh"
port=10809
serve_env=""
if [ "${CLIO_FLAVOUR:-plain}" = asan ]; then
	serve_env="LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so) ASAN_OPTIONS=detect_leaks=0"
fi
# serve ARGS...: clio serve ARGS in the background, its pid noted
serve() {
	nbd_stop
	rm -f "$tmp/serve.pid"
	env $serve_env "$CLIO" serve "$@" --pidfile "$tmp/serve.pid" 2>"$tmp/serr" ||
		fail "clio serve $* did not start: $(cat "$tmp/serr")"
	nbd_wait_pid "$tmp/serve.pid"
}
# refused RC WORD ARGS...: clio serve ARGS exits RC, one line naming WORD
refused() {
	want=$1 word=$2
	shift 2
	rc=0
	env $serve_env "$CLIO" serve "$@" --pidfile "$tmp/refused.pid" >"$tmp/out" 2>"$tmp/err" || rc=$?
	[ $rc -eq "$want" ] || fail "clio serve $*: exit $rc, want $want: $(cat "$tmp/err")"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || { sed 's/^/    /' "$tmp/err" >&2; fail "clio serve $*: not one line"; }
	grep -qF -- "$word" "$tmp/err" || fail "clio serve $*: '$word' not named: $(cat "$tmp/err")"
	[ ! -e "$tmp/refused.pid" ] || { kill "$(cat "$tmp/refused.pid")"; fail "clio serve $*: a server started"; }
}
# export_json URI: nbdinfo --json of URI into $tmp/info.json
export_json() {
	nbdinfo --json "$1" >"$tmp/info.json" 2>"$tmp/ierr" || fail "nbdinfo $1: $(cat "$tmp/ierr")"
}
jkey() { # KEY: the export's KEY from $tmp/info.json
	python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["exports"][0][sys.argv[2]])' \
		"$tmp/info.json" "$1"
}

# ------------------------------------------------------------ --port
serve mem:size=4M --port $port -o bsize=16k
ss -ltnH >"$tmp/ss"
[ "$(awk '{ print $4 }' "$tmp/ss")" = "127.0.0.1:$port" ] ||
	{ cat "$tmp/ss" >&2; fail "--port: not exactly one listener on 127.0.0.1:$port"; }
export_json "nbd://127.0.0.1:$port"
[ "$(jkey export-size)" = 4194304 ] || fail "--port: size $(jkey export-size)"
[ "$(jkey is_read_only)" = False ] || fail "--port: read-only"
[ "$(jkey block_size_preferred)" = 16384 ] || fail "-o bsize=16k: preferred $(jkey block_size_preferred)"
echo "ok: --port $port: 127.0.0.1 only; nbdinfo: 4 MiB, writable, preferred block 16 KiB"

# a busy port: one line, the first server still serves
refused 73 "port $port" mem:size=1M --port $port
export_json "nbd://127.0.0.1:$port"
[ "$(jkey export-size)" = 4194304 ] || fail "the first server is gone after a refused one"
echo "ok: a busy port: exit 73, one line; the first server serves on"

serve -r mem:size=2M --port $port
export_json "nbd://127.0.0.1:$port"
[ "$(jkey is_read_only)" = True ] || fail "-r --port: not read-only"
echo "ok: -r --port: read-only"
nbd_stop

# ------------------------------------------------------------ sockets
serve mem:size=1M --socket "$sock"
refused 73 "$sock" mem:size=1M --socket "$sock"
grep -q "in use" "$tmp/err" || fail "socket in use: $(cat "$tmp/err")"
nbdinfo "$uri" >/dev/null 2>&1 || fail "the first server is gone after a refused one"
echo "ok: a socket in use: exit 73, one line; the first server serves on"
# another user, who may not connect to it, is not told to remove it
if command -v setpriv >/dev/null 2>&1 &&
	setpriv --reuid=65534 --regid=65534 --clear-groups "$CLIO" --version >/dev/null 2>&1; then
	chmod 755 "$tmp"
	rc=0
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$CLIO" serve mem:size=1M --socket "$sock" >"$tmp/out" 2>"$tmp/err" || rc=$?
	chmod 700 "$tmp"
	[ $rc -eq 73 ] || fail "another user's clio serve on a socket in use: exit $rc: $(cat "$tmp/err")"
	grep -q "Permission denied" "$tmp/err" && ! grep -q "remove it" "$tmp/err" ||
		fail "another user's clio serve on a socket in use: $(cat "$tmp/err")"
	nbdinfo "$uri" >/dev/null 2>&1 || fail "the first server is gone after another user's clio serve"
	echo "ok: a socket in use that another user may not connect to: exit 73, Permission denied, not 'remove it'"
else
	echo "no setpriv, or clio not runnable as nobody: another user's clio serve not tried"
fi
kill -9 "$nbd_pids"
i=0
while running "$nbd_pids" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
nbd_pids=""
[ -S "$sock" ] || fail "no stale socket after kill -9"
refused 73 "$sock" mem:size=1M --socket "$sock"
grep -q "exists" "$tmp/err" || fail "stale socket: $(cat "$tmp/err")"
rm -f "$sock"
echo keep >"$tmp/file"
refused 73 "$tmp/file" mem:size=1M --socket "$tmp/file"
[ "$(cat "$tmp/file")" = keep ] || fail "a file at the socket path was changed"
echo "ok: a stale socket, a file at the socket path: exit 73, one line, nothing removed"
refused 73 "$tmp/nodir/sock" mem:size=1M --socket "$tmp/nodir/sock"
refused 73 "$tmp/file/sock" mem:size=1M --socket "$tmp/file/sock"
refused 64 "empty socket path" mem:size=1M --socket ""
echo "ok: a socket in a missing directory, below a file: exit 73; an empty path: 64; one line each"

# ------------------------------------------------------------ socket removed
nbdops="$(dirname "$CLIO")/tests/tools/nbdops"
[ -x "$nbdops" ] || fail "nbdops not built (make tests)"
# gone_by PID: the server PID has ended within 5 s
gone_by() {
	i=0
	while running "$1" && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
	! running "$1"
}
for sig in TERM USR1 USR2 ALRM; do
	serve mem:size=1M --socket "$sock"
	kill -"$sig" "$nbd_pids"
	gone_by "$nbd_pids" || fail "SIG$sig before any client: the server runs on"
	nbd_pids=""
	[ ! -e "$sock" ] || fail "SIG$sig before any client: the server left its socket"
done
for sig in TERM INT HUP USR1; do
	serve mem:size=1M --socket "$sock"
	nbdinfo "$uri" >/dev/null 2>&1 || fail "SIG$sig: no export"
	kill -"$sig" "$nbd_pids"
	gone_by "$nbd_pids" || fail "SIG$sig: the server runs on"
	nbd_pids=""
	[ ! -e "$sock" ] || fail "SIG$sig: the server left its socket"
done
serve mem:size=1M --socket "$sock"
"$nbdops" "$uri" w:0:4096:7 s:20000 >"$tmp/c.out" 2>&1 &
c_pid=$!
i=0
while ! grep -q "^w:.* ok" "$tmp/c.out" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
grep -q "^w:.* ok" "$tmp/c.out" || { kill "$c_pid"; fail "the client's write: $(cat "$tmp/c.out")"; }
kill "$nbd_pids"
i=0
while [ -e "$sock" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
[ ! -e "$sock" ] || { kill "$c_pid"; fail "SIGTERM with a client: the socket is there after 5 s"; }
running "$nbd_pids" || { kill "$c_pid"; fail "SIGTERM with a client: the server ended before the client"; }
serve mem:size=1M --socket "$sock"
nbdinfo "$uri" >/dev/null 2>&1 || { kill "$c_pid"; fail "no second server on the socket path"; }
kill "$c_pid"
wait "$c_pid" 2>/dev/null
nbd_stop
echo "ok: SIGTERM, SIGINT, SIGHUP, SIGUSR1 remove the socket, also with a client connected, and SIGUSR1, SIGUSR2, SIGALRM before any client; a new server takes the path"
refused 64 "bogus:x" bogus:x --socket "$sock"
refused 64 "nope" sim:preset=nope --socket "$sock"
refused 64 "mem:size=12Q" mem:size=12Q --socket "$sock"
refused 66 "$tmp/none" "$tmp/none" --socket "$sock"
refused 64 "--tls" mem:size=1M --socket "$sock" --tls=maybe
refused 64 "$tmp/nopki" mem:size=1M --socket "$sock" --tls=require --tls-certificates "$tmp/nopki"
[ ! -e "$sock" ] || fail "a refused clio serve made its socket"
echo "ok: bad device strings 64, a missing file 66, bad TLS options 64: one line each"
# a pid file nbdkit cannot write, which it finds only in the background
mkdir "$tmp/piddir"
for pf in "$tmp/nodir/serve.pid" "$tmp/piddir" "$tmp/file/serve.pid"; do
	rc=0
	env $serve_env "$CLIO" serve mem:size=1M --socket "$sock" --pidfile "$pf" 2>"$tmp/err" || rc=$?
	sleep 0.2
	[ -e "$sock" ] && { rm -f "$sock"; fail "--pidfile $pf: clio serve went on (exit $rc)"; }
	[ $rc -eq 73 ] || fail "--pidfile $pf: exit $rc, want 73: $(cat "$tmp/err")"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF -- "$pf" "$tmp/err" ||
		fail "--pidfile $pf: not one line naming it: $(cat "$tmp/err")"
done
echo "ok: a pid file in a missing directory, a directory, below a file: exit 73, one line"

# ------------------------------------------------------------ prefault
# rss_kb: the server's resident kB (after a client, so it is ready)
rss_kb() {
	nbdinfo "$uri" >/dev/null 2>&1 || fail "nbdinfo $uri"
	sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' "/proc/$nbd_pids/status"
}
serve mem:size=1M --socket "$sock" -o cache_size=64M
rss_on=$(rss_kb)
serve mem:size=1M --socket "$sock" -o cache_size=64M,prefault=off
rss_off=$(rss_kb)
nbd_stop
[ -n "$rss_on" ] && [ -n "$rss_off" ] && [ "$rss_on" -ge $((rss_off + 56 * 1024)) ] ||
	fail "prefault: a 64 MiB cache: resident ${rss_on:-?} kB by default, ${rss_off:-?} kB with prefault=off"
refused 64 "maybe" mem:size=1M --socket "$sock" -o prefault=maybe
echo "ok: the cache resident at start (${rss_on} kB; prefault=off ${rss_off} kB); prefault=maybe: one line"

# ------------------------------------------------------------ --tls
if command -v openssl >/dev/null 2>&1; then
	pki="$tmp/pki"
	nbd_make_pki "$pki"
	serve mem:size=3M --socket "$sock" --tls=require --tls-certificates "$pki"
	if nbdinfo "$uri" >/dev/null 2>&1; then
		fail "--tls=require: a client without TLS was served"
	fi
	export_json "nbds+unix:///?socket=$sock&tls-certificates=$pki"
	[ "$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["TLS"])' "$tmp/info.json")" = True ] ||
		fail "--tls=require: no TLS"
	[ "$(jkey export-size)" = 3145728 ] || fail "--tls=require: size $(jkey export-size)"
	echo "ok: --tls=require --tls-certificates: plain refused, TLS serves 3 MiB"
	serve mem:size=3M --socket "$sock" --tls=on --tls-certificates "$pki"
	nbdinfo "$uri" >/dev/null 2>&1 || fail "--tls=on: a client without TLS refused"
	echo "ok: --tls=on: a client without TLS is served too"
	nbd_stop
else
	echo "openssl not installed: the TLS rows skipped"
fi
exit 0
