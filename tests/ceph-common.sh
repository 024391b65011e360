# SPDX-License-Identifier: BSD-2-Clause
# ceph-common.sh - a one-node Ceph cluster for the RBD tests.  Source it
# after functions.sh:
#   . "$(dirname "$0")/functions.sh"
#   . "$(dirname "$0")/ceph-common.sh"
#   ceph_start                 # mon a, osd.0, pool rbd, image rbd/img
#
# The test re-runs itself inside its own mount and network namespaces
# (unshare -m -n, lo up), so that the monitor's ports (3300, 3301) and
# the OSD's (6800 up) clash with nothing; the source is exec'ed again
# there with the same arguments.  It skips (exit 77) when the Ceph
# packages are missing.
#
# Everything of the cluster lives under $ceph_dir (in $tmp): ceph.conf
# (memstore, 127.0.0.1 only, no authentication, pools of size 1 and 8
# placement groups), the monitor's and the OSD's data, their logs, pid
# files and admin sockets.  CEPH_CONF names the file, so that ceph, rbd
# and librbd find it.  No manager runs: none is needed for pools and
# images.
#
# Invariants:
#  1. Each daemon runs in the foreground (-f) as a child of the test; its
#     pid is kept in ceph_pids and it is stopped by that pid (SIGTERM,
#     then SIGKILL after 10 s) on exit, a failure included; ceph_stop
#     waits for each to exit.
#  2. Every wait is bounded (ceph_wait): a timeout fails the test with
#     what it waited for, and a failing test prints the tail of each
#     daemon's log.
#
# What a test may call: ceph_start [IMAGE_SIZE] (default 64M: memstore
# keeps the data in memory), ceph_osd_stop and ceph_osd_start (the fault
# test: a clean stop keeps memstore's data on disk), ceph_stop, and
# ceph_uri [IMAGE]: the device string of an image (rbd:rbd/IMAGE?conf=...).
# A test's own clean-up (servers, mounts) goes into $ceph_on_exit, run
# on exit before the cluster stops.

for tool in ceph-mon ceph-osd ceph rbd monmaptool unshare ip; do
	command -v "$tool" >/dev/null 2>&1 ||
		{ echo "$tool not found (apt-get install --no-install-recommends ceph-mon ceph-osd ceph-common)"; exit 77; }
done

if [ "${CLIO_CEPH_NS:-}" != 1 ]; then
	# the namespaces first; the copy of the test in them makes its own $tmp
	[ "$(id -u)" -eq 0 ] || { echo "the rbd tests need root (unshare -m -n)"; exit 77; }
	rm -rf "$tmp"
	export CLIO_CEPH_NS=1
	exec unshare -m -n --propagation private sh "$0" "$@"
fi
ip link set lo up || fail "ip link set lo up in the test's network namespace"
if [ "${CLIO_FLAVOUR:-}" = tsan ]; then
	export TSAN_OPTIONS="${TSAN_OPTIONS:-} suppressions=$(cd "$(dirname "$0")" && pwd)/ceph-tsan.supp"
fi

ceph_dir="$tmp/ceph"
ceph_pids=""
ceph_osd_pid=""
ceph_osd_uuid=""
ceph_on_exit=""
export CEPH_CONF="$ceph_dir/ceph.conf"
# the ceph command: bounded, quiet
CEPH="ceph --connect-timeout 15"

ceph_logs() {
	for f in "$ceph_dir"/log/*.log "$ceph_dir"/*.out; do
		[ -s "$f" ] || continue
		echo "---- tail of $f" >&2
		tail -n 25 "$f" >&2
	done
}

# ceph_kill PID: SIGTERM, wait up to 10 s, then SIGKILL and wait.
ceph_kill() {
	kill "$1" 2>/dev/null || return 0
	i=0
	while kill -0 "$1" 2>/dev/null && [ $i -lt 100 ]; do
		sleep 0.1; i=$((i + 1))
	done
	if kill -0 "$1" 2>/dev/null; then
		echo "ceph: pid $1 still there after 10 s: SIGKILL" >&2
		kill -9 "$1" 2>/dev/null
	fi
	wait "$1" 2>/dev/null
}

ceph_stop() {
	# the OSD before the monitor: it says goodbye to it
	for p in $ceph_osd_pid $ceph_pids; do
		ceph_kill "$p"
	done
	ceph_pids=""
	ceph_osd_pid=""
}

ceph_exit() {
	rc=$?
	trap - EXIT
	[ $rc -ne 0 ] && [ $rc -ne 77 ] && ceph_logs
	eval "$ceph_on_exit" # the test's own clean-up, before the cluster's
	ceph_stop
	rm -rf "$tmp"
	exit $rc
}
trap ceph_exit EXIT

# ceph_wait SECONDS WHAT COMMAND...: run COMMAND every 0.2 s until it
# succeeds; fail naming WHAT after SECONDS.
ceph_wait() {
	secs=$1 what=$2
	shift 2
	end=$(( $(date +%s) + secs ))
	until "$@" >/dev/null 2>&1; do
		[ "$(date +%s)" -lt "$end" ] || fail "ceph: $what: not within $secs s"
		sleep 0.2
	done
}

# ceph_daemon NAME ARGS...: start a daemon in the foreground, in the
# background of the test; its pid in $ceph_last.
ceph_daemon() {
	name=$1
	shift
	"$@" -f >"$ceph_dir/$name.out" 2>&1 &
	ceph_last=$!
}

ceph_osd_is_up() {
	$CEPH osd dump 2>/dev/null | grep -q '^osd\.0 up'
}

ceph_osd_start() {
	ceph_daemon osd.0 ceph-osd -i 0
	ceph_osd_pid=$ceph_last
	ceph_wait 30 "osd.0 up" ceph_osd_is_up
}

# A clean stop: the OSD marks itself down and memstore saves its data.
ceph_osd_stop() {
	[ -n "$ceph_osd_pid" ] || fail "ceph_osd_stop: no OSD running"
	ceph_kill "$ceph_osd_pid"
	ceph_osd_pid=""
	ceph_wait 20 "osd.0 down" sh -c "! $CEPH osd dump | grep -q '^osd\.0 up'"
}

ceph_uri() {
	echo "rbd:rbd/${1:-img}?conf=$CEPH_CONF"
}

ceph_start() {
	size=${1:-64M}
	classes=$(ls -d /usr/lib/*/rados-classes 2>/dev/null | head -n 1)
	fsid=$(cat /proc/sys/kernel/random/uuid)
	mkdir -p "$ceph_dir/run" "$ceph_dir/log" "$ceph_dir/mon.a" "$ceph_dir/osd.0" ||
		fail "mkdir $ceph_dir"
	cat >"$CEPH_CONF" <<EOF
[global]
fsid = $fsid
mon host = [v2:127.0.0.1:3300,v1:127.0.0.1:3301]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
ms bind ipv6 = false
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
osd crush chooseleaf type = 0
mon allow pool size one = true
mon allow pool delete = true
mon warn on pool no redundancy = false
mon osd full ratio = .99
mon osd nearfull ratio = .97
mon osd backfillfull ratio = .98
mon data avail warn = 1
mon data avail crit = 0
osd objectstore = memstore
memstore device bytes = 4G
osd crush initial weight = 1
osd fast shutdown = false
osd class dir = $classes
run dir = $ceph_dir/run
crash dir = $ceph_dir/crash
log file = $ceph_dir/log/\$name.log
pid file = $ceph_dir/run/\$name.pid
admin socket = $ceph_dir/run/\$name.\$pid.asok
mon data = $ceph_dir/mon.\$id
osd data = $ceph_dir/osd.\$id
[mon]
admin socket = $ceph_dir/run/\$name.asok
[osd]
admin socket = $ceph_dir/run/\$name.asok
keyring = $ceph_dir/keyring
EOF
	: >"$ceph_dir/keyring"
	monmaptool --create --fsid "$fsid" \
		--addv a '[v2:127.0.0.1:3300,v1:127.0.0.1:3301]' "$ceph_dir/monmap" \
		>"$ceph_dir/monmaptool.out" 2>&1 || fail "monmaptool --create"
	ceph-mon --mkfs -i a --monmap "$ceph_dir/monmap" >"$ceph_dir/mkfs-mon.out" 2>&1 ||
		fail "ceph-mon --mkfs"
	ceph_daemon mon.a ceph-mon -i a
	ceph_pids=$ceph_last
	ceph_wait 20 "the monitor answers" $CEPH mon stat
	ceph_osd_uuid=$(cat /proc/sys/kernel/random/uuid)
	id=$($CEPH osd new "$ceph_osd_uuid" 2>"$ceph_dir/osd-new.out") ||
		fail "ceph osd new"
	[ "$id" = 0 ] || fail "ceph osd new gave osd.$id, not osd.0"
	ceph-osd -i 0 --mkfs --osd-uuid "$ceph_osd_uuid" >"$ceph_dir/mkfs-osd.out" 2>&1 ||
		fail "ceph-osd --mkfs"
	ceph_osd_start
	$CEPH osd pool create rbd 8 8 replicated >"$ceph_dir/pool.out" 2>&1 ||
		fail "ceph osd pool create rbd"
	timeout -k 5 30 rbd pool init rbd >>"$ceph_dir/pool.out" 2>&1 ||
		fail "rbd pool init rbd (exit $?)"
	timeout -k 5 30 rbd create --size "$size" rbd/img >>"$ceph_dir/pool.out" 2>&1 ||
		fail "rbd create --size $size rbd/img"
	echo "ceph: one-node cluster up in $ceph_dir, image rbd/img of $size"
}
