# SPDX-License-Identifier: BSD-2-Clause
# ganesha-common.sh - what the NFS tests share: an NFS-Ganesha server
# (NFSv3 and MOUNT over TCP, the VFS backend) and rpcbind, private to the
# test.  Source it after functions.sh:
#   . "$(dirname "$0")/ganesha-common.sh"
# The first time it is sourced it re-executes the test script inside
# `unshare -m -n --propagation private`, with a tmpfs on /run and the
# loopback interface up, so that the ports and /run are the test's own and
# 127.0.0.1 is the only address; the whole test runs in there.  It skips
# (exit 77) when the server's packages are missing.
#
# It defines: $export (the directory served, as /export), ganesha_export
# (another export, before the start), ganesha_start
# (returns once the server says "NFS SERVER INITIALIZED"), ganesha_stop,
# ganesha_kill (SIGKILL: the server dies without a word), and
# $nfs_port / $mnt_port (2049, 20048); proxy_start MS (tests/tools/rpcproxy
# in front of both ports, each direction delayed MS ms: $pq is the query
# that sends a device through it, "port=3049&mountport=30048"),
# proxy_counts FILE (the RPCs counted so far, written to FILE) and
# proxy_stop.  Every daemon started is stopped by its pid on exit, a
# failure included.
for tool in ganesha.nfsd rpcbind unshare ip; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "$tool not found (apt-get install nfs-ganesha nfs-ganesha-vfs rpcbind)"; exit 77; }
done
[ -e /usr/lib/x86_64-linux-gnu/ganesha/libfsalvfs.so ] ||
	ls /usr/lib/*/ganesha/libfsalvfs.so >/dev/null 2>&1 ||
	{ echo "ganesha's VFS backend not found (apt-get install nfs-ganesha-vfs)"; exit 77; }

if [ -z "$CLIO_NFS_NS" ]; then
	[ "$(id -u)" -eq 0 ] || { echo "the NFS tests need root (unshare -m -n)"; exit 77; }
	rm -rf "$tmp"
	CLIO_NFS_NS=1 exec unshare -m -n --propagation private sh -c '
		mount -t tmpfs tmpfs /run && mkdir -p /run/rpcbind &&
		ip link set lo up && exec sh "$0" "$@"' "$0" "$@"
fi

nfs_port=2049
mnt_port=20048
export="$tmp/export"
mkdir -p "$export" "$tmp/recov"
rpcbind_pid=""
ganesha_pid=""

cat > "$tmp/ganesha.conf" <<EOF
NFS_CORE_PARAM {
	Protocols = 3, 4;
	NFS_Port = $nfs_port;
	MNT_Port = $mnt_port;
	Enable_NLM = false;
	Enable_RQUOTA = false;
}
NFSv4 {
	Graceless = true;
	RecoveryBackend = fs;
	RecoveryRoot = $tmp/recov;
}
EOF

# ganesha_export ID PATH PSEUDO ACCESS SQUASH: one more export in the
# configuration (before ganesha_start): ACCESS RW or RO, SQUASH
# No_Root_Squash or Root_Squash.
ganesha_export() {
	cat >>"$tmp/ganesha.conf" <<EOF
EXPORT {
	Export_Id = $1;
	Path = $2;
	Pseudo = $3;
	Access_Type = $4;
	Squash = $5;
	SecType = sys;
	Protocols = 3, 4;
	Transports = TCP;
	Attr_Expiration_Time = 0;
	FSAL { Name = VFS; }
}
EOF
}
ganesha_export 1 "$export" /export RW No_Root_Squash

# pid_stop PID: TERM, then KILL after 5 s.
pid_stop() {
	[ -n "$1" ] || return 0
	kill "$1" 2>/dev/null
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt 50 ]; do
		sleep 0.1; i=$((i + 1))
	done
	kill -9 "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	return 0
}

ganesha_stop() {
	pid_stop "$ganesha_pid"
	ganesha_pid=""
}

ganesha_kill() {
	[ -n "$ganesha_pid" ] || return 0
	kill -9 "$ganesha_pid" 2>/dev/null
	wait "$ganesha_pid" 2>/dev/null
	ganesha_pid=""
}

rpcproxy=${RPCPROXY:-$(dirname "$CLIO")/tests/tools/rpcproxy}
proxy_pid=""
pq="port=3049&mountport=30048"

proxy_start() {
	[ -x "$rpcproxy" ] || fail "$rpcproxy not built (make tests)"
	rm -f "$tmp/proxy.ready"
	"$rpcproxy" -d "$1" -o "$tmp/proxy.counts" -r "$tmp/proxy.ready" \
		3049:$nfs_port 30048:$mnt_port &
	proxy_pid=$!
	i=0
	while [ ! -e "$tmp/proxy.ready" ]; do
		kill -0 "$proxy_pid" 2>/dev/null || { proxy_pid=""; fail "rpcproxy exited"; }
		[ $i -lt 200 ] || fail "rpcproxy did not start"
		sleep 0.02; i=$((i + 1))
	done
}

proxy_counts() {
	rm -f "$tmp/proxy.counts"
	kill -USR1 "$proxy_pid" || fail "rpcproxy is gone"
	i=0
	while [ ! -e "$tmp/proxy.counts" ]; do
		[ $i -lt 200 ] || fail "rpcproxy wrote no counts"
		sleep 0.02; i=$((i + 1))
	done
	cp "$tmp/proxy.counts" "$1"
}

# rpc_calls FILE PROG PROC: the calls counted (0 if none).
rpc_calls() {
	awk -v p="$2" -v c="$3" '$1 == p && $2 == c { n = $3 } END { print n + 0 }' "$1"
}
rpc_bytes() {
	awk -v p="$2" -v c="$3" '$1 == p && $2 == c { n = $4 } END { print n + 0 }' "$1"
}

proxy_stop() {
	pid_stop "$proxy_pid"
	proxy_pid=""
}

ganesha_all_stop() {
	proxy_stop
	ganesha_stop
	pid_stop "$rpcbind_pid"
	rpcbind_pid=""
}
trap 'ganesha_all_stop; rm -rf "$tmp"' EXIT

ganesha_start() {
	if [ -z "$rpcbind_pid" ]; then
		rpcbind -f -w &
		rpcbind_pid=$!
		i=0
		while [ ! -S /run/rpcbind.sock ] && [ $i -lt 100 ]; do
			sleep 0.02; i=$((i + 1))
		done
	fi
	[ -z "$ganesha_pid" ] || fail "ganesha_start: the server runs already"
	: > "$tmp/ganesha.log"
	ganesha.nfsd -F -L "$tmp/ganesha.log" -f "$tmp/ganesha.conf" \
		-p "$tmp/ganesha.pid" -N NIV_EVENT &
	ganesha_pid=$!
	i=0
	while ! grep -q "NFS SERVER INITIALIZED" "$tmp/ganesha.log" 2>/dev/null; do
		kill -0 "$ganesha_pid" 2>/dev/null ||
			{ tail -n 20 "$tmp/ganesha.log" >&2; ganesha_pid=""; fail "ganesha.nfsd exited"; }
		[ $i -lt 300 ] || { tail -n 20 "$tmp/ganesha.log" >&2; fail "ganesha.nfsd did not start in 15 s"; }
		sleep 0.05; i=$((i + 1))
	done
}
