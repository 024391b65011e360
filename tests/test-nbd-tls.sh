#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-tls.sh - clio's NBD client over TLS, against nbdkit with
# --tls=require on a Unix socket: the nbds+unix URI names its keys in a
# local file (tls-psk-file=FILE, tls-certificates=DIR), which libnbd
# refuses unless the program allows it (clio did not: "local file access
# is not allowed").  With a pre-shared key, clio dd writes 1 MiB over two
# connections and reads them back, compared; a wrong key and a plain
# nbd+unix URI fail at open in one line naming the URI; clio serve serves
# such a device; with X.509 certificates (openssl), the same copy.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
nbd_with_clio # clio serve: the sanitizer runtimes preloaded under ASan
nbdkit --dump-config 2>/dev/null | grep -q '^tls=yes' ||
	{ echo "nbdkit without TLS"; exit 77; }
key() { echo "alice:$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')" >"$1"; }
key "$tmp/keys.psk"
key "$tmp/other.psk"
head -c 1048576 /dev/urandom >"$tmp/pat"
# copy WHAT URI: clio dd writes $tmp/pat through URI and reads it back
copy() {
	"$CLIO" dd if="$tmp/pat" of="$2" bs=64k conv=fsync,notrunc 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "$1: clio dd into the server"; }
	"$CLIO" dd if="$2" of="$tmp/back" bs=1M count=1 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "$1: clio dd out of the server"; }
	cmp "$tmp/back" "$tmp/pat" || fail "$1: the bytes read back differ"
	echo "ok: $1: 1 MiB written and read back"
}
# ------------------------------------------------------------ PSK
nbd_start --tls=require --tls-psk="$tmp/keys.psk" memory 8M
psk="nbds+unix://alice@/?socket=$sock&tls-psk-file=$tmp/keys.psk"
copy "tls-psk-file, two connections" "$psk&conns=2"
"$CLIO" info "$psk&conns=2" >"$tmp/info" 2>&1 || { cat "$tmp/info"; fail "clio info over TLS"; }
grep -q "2 connections" "$tmp/info" || { cat "$tmp/info"; fail "clio info: not two connections"; }
for bad in "nbds+unix://alice@/?socket=$sock&tls-psk-file=$tmp/other.psk" "$uri"; do
	rc=0
	"$CLIO" info "$bad" >/dev/null 2>"$tmp/err" || rc=$?
	[ $rc -ne 0 ] || fail "$bad: opened"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -qF -- "$bad" "$tmp/err" ||
		{ cat "$tmp/err"; fail "$bad: not one line naming it"; }
done
echo "ok: a wrong key, no TLS: the open fails (exit $rc), one line"
# clio serve of that device, in the foreground: under ASan, an nbdkit
# with the sanitizer runtimes preloaded that forks after loading gnutls
# hangs in exit (p11-kit's destructor waits for the locale lock)
env $nbd_env "$CLIO" serve -f "$psk" --socket "$tmp/serve.sock" 2>"$tmp/err" &
nbd_pids="$! $nbd_pids" # clio serve first: nbdkit waits for its clients
i=0
while [ ! -S "$tmp/serve.sock" ] && [ $i -lt 100 ]; do
	sleep 0.05; i=$((i + 1))
done
[ -S "$tmp/serve.sock" ] || { cat "$tmp/err"; fail "clio serve of an nbds device did not start"; }
"$CLIO" dd if="nbd+unix:///?socket=$tmp/serve.sock" of="$tmp/back" bs=1M count=1 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio serve of an nbds device: the copy out"; }
cmp "$tmp/back" "$tmp/pat" || fail "clio serve of an nbds device: other bytes"
echo "ok: clio serve of the nbds device reads the 1 MiB back"
nbd_stop
# ------------------------------------------------------------ X.509
if ! command -v openssl >/dev/null 2>&1; then
	echo "openssl not installed: the certificate rows skipped"
	exit 0
fi
pki="$tmp/pki"
nbd_make_pki "$pki"
nbd_start --tls=require --tls-certificates "$pki" memory 8M
copy "tls-certificates" "nbds+unix:///?socket=$sock&tls-certificates=$pki"
exit 0
