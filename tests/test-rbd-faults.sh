#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-rbd-faults.sh - the OSD of a one-node Ceph cluster
# (tests/ceph-common.sh) stopped while clio holds acknowledged dirty
# data for an RBD image (tests/tools/wbfault writes, waits, fsyncs):
#  1. with osd_timeout=2 the write-back fails and fsync returns the error
#     within a bounded time; once the OSD is back a second fsync succeeds
#     and every byte written reads back, through the cache, from the
#     device and in `rbd export`;
#  2. with no OSD timeout (librados's default) fsync waits while the OSD
#     is down and succeeds once it is back, with the same data checks.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ceph-common.sh"

wbfault="$(dirname "$CLIO")/tests/tools/wbfault"
[ -x "$wbfault" ] || fail "$wbfault not built (make tests)"
ceph_start 16M
seed=${CLIO_SEED:-$(date +%s)}
size=3000000
echo "seed $seed"

# await FILE SECONDS: until FILE exists
await() {
	ceph_wait "$2" "$1 to appear" test -e "$1"
}

# run_case NAME URI: wbfault on URI in $tmp/NAME, in the background
run_case() {
	d="$tmp/$1"
	mkdir -p "$d"
	"$wbfault" "$2" "$size" "$seed" "$d" >"$d/out" 2>&1 &
	wb_pid=$!
	await "$d/written" 30
}

# finish_case NAME: wbfault's end, then the image against the pattern
finish_case() {
	d="$tmp/$1"
	touch "$d/go2"
	wait "$wb_pid" || { cat "$d/out"; fail "$1: wbfault (seed $seed)"; }
	wb_pid=""
	sed "s/^/  /" "$d/out"
	grep -q '^0 ' "$d/fsync2" || fail "$1: the second fsync: $(cat "$d/fsync2")"
	rm -f "$tmp/export"
	rbd export rbd/img "$tmp/export" >/dev/null 2>"$tmp/err" ||
		{ cat "$tmp/err"; fail "rbd export rbd/img"; }
	head -c "$size" "$tmp/export" | cmp - "$d/pattern" ||
		fail "$1: rbd export differs from what was acknowledged (seed $seed)"
}

# ------------------------------------------------------------ 1. the error
run_case timeout "$(ceph_uri)&osd_timeout=2"
ceph_osd_stop
t0=$(date +%s)
touch "$tmp/timeout/go1"
await "$tmp/timeout/fsync1" 60
t1=$(date +%s)
r=$(cat "$tmp/timeout/fsync1")
case $r in
0*) fail "the first fsync succeeded with the OSD stopped";;
-*) echo "ok: with the OSD stopped fsync failed after $((t1 - t0)) s: $r";;
*) fail "the first fsync: '$r'";;
esac
[ $((t1 - t0)) -le 60 ] || fail "the first fsync took $((t1 - t0)) s with osd_timeout=2"
ceph_osd_start
finish_case timeout
echo "ok: the OSD back, the second fsync succeeded; the $size bytes acknowledged are in the image"

# ------------------------------------------------------------ 2. the wait
rbd rm rbd/img >/dev/null 2>&1 && rbd create --size 16M rbd/img >/dev/null 2>&1 ||
	fail "a new rbd/img"
seed=$((seed + 1))
run_case wait "$(ceph_uri)"
ceph_osd_stop
touch "$tmp/wait/go1"
sleep 3
[ -e "$tmp/wait/fsync1" ] && fail "fsync returned with the OSD stopped: $(cat "$tmp/wait/fsync1")"
echo "ok: with no OSD timeout fsync waits while the OSD is down"
ceph_osd_start
await "$tmp/wait/fsync1" 60
grep -q '^0 ' "$tmp/wait/fsync1" || fail "the waiting fsync: $(cat "$tmp/wait/fsync1")"
finish_case wait
echo "ok: the OSD back, the waiting fsync succeeded and the data is in the image"
