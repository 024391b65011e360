# SPDX-License-Identifier: BSD-2-Clause
# nbd-common.sh - what the NBD tests share.  Source it after functions.sh:
#   . "$(dirname "$0")/nbd-common.sh"
# It skips the test (exit 77) when nbdkit or libnbd's tools are missing,
# names the socket $sock and its URI $uri under $tmp, and defines
# nbd_start ARGS... (nbdkit ARGS on $sock, daemonized with a pid file) and
# nbd_stop; every server started is stopped on exit, a failure included.
for tool in nbdkit nbdinfo; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "$tool not found (apt-get install nbdkit libnbd-bin)"; exit 77; }
done
sock="$tmp/sock"
uri="nbd+unix:///?socket=$sock"
nbd_pids=""

nbd_stop() {
	for p in $nbd_pids; do
		kill "$p" 2>/dev/null
		i=0
		while running "$p" && [ $i -lt 50 ]; do
			sleep 0.1; i=$((i + 1))
		done
		kill -9 "$p" 2>/dev/null
	done
	nbd_pids=""
	rm -f "$sock"
}
trap 'nbd_stop; rm -rf "$tmp"' EXIT

# nbd_wait_pid FILE: the pid in FILE, once the daemon wrote it (nbdkit's
# parent may exit first); fails after 5 s.
nbd_wait_pid() {
	i=0
	while [ ! -s "$1" ] && [ $i -lt 100 ]; do
		sleep 0.05; i=$((i + 1))
	done
	[ -s "$1" ] || fail "no pid in $1"
	nbd_pids=$(cat "$1")
}

# nbdkit ARGS... on $sock, with the variables of $nbd_env (VAR=VALUE
# words) in its environment; returns once it serves (its pid file is
# written).
nbd_env=""

# nbd_with_clio: $filter and $plugin name the build's nbdkit modules (the
# test fails without them); nbdkit is no sanitized program, so under ASan
# its environment preloads the runtimes the modules need (their leaks are
# not checked).
nbd_with_clio() {
	filter="$(dirname "$CLIO")/nbdkit-clio-filter.so"
	plugin="$(dirname "$CLIO")/nbdkit-clio-plugin.so"
	[ -f "$filter" ] && [ -f "$plugin" ] || fail "no $filter or $plugin"
	if [ "${CLIO_FLAVOUR:-plain}" = asan ]; then
		nbd_env="LD_PRELOAD=$(gcc -print-file-name=libasan.so):$(gcc -print-file-name=libubsan.so) ASAN_OPTIONS=detect_leaks=0"
	fi
}

nbd_start() {
	nbd_stop
	rm -f "$tmp/nbdkit.pid"
	env $nbd_env nbdkit -U "$sock" --pidfile "$tmp/nbdkit.pid" "$@" || fail "nbdkit $* did not start"
	nbd_wait_pid "$tmp/nbdkit.pid"
}

# nbd_make_pki DIR: a test CA and a server certificate for localhost and
# 127.0.0.1 in DIR, as nbdkit's --tls-certificates and libnbd's
# tls-certificates= take them (needs openssl; the test fails without
# them).
nbd_make_pki() {
	mkdir "$1" || fail "mkdir $1"
	(
	cd "$1" || exit 1
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout ca-key.pem -out ca-cert.pem -days 2 -subj /CN=clio-test-ca \
		-addext basicConstraints=critical,CA:TRUE \
		-addext keyUsage=critical,keyCertSign,cRLSign &&
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout server-key.pem -out server.csr -subj /CN=localhost &&
	printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >ext &&
	openssl x509 -req -in server.csr -CA ca-cert.pem -CAkey ca-key.pem \
		-CAcreateserial -out server-cert.pem -days 2 -extfile ext
	) >"$tmp/openssl.out" 2>&1 || { cat "$tmp/openssl.out"; fail "openssl: no certificates"; }
}
