#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-rbd-stopped.sh - the OSD of a one-node Ceph cluster
# (tests/ceph-common.sh) frozen with SIGSTOP, its connections kept, while
# clio holds acknowledged dirty data for an RBD image with osd_timeout=2
# (tests/tools/wbfault):
#  1. the first fsync fails within a bounded time;
#  2. so does a second one, still frozen, though librbd now waits without
#     end to watch the image again before it takes the exclusive lock for
#     the writes (the device's own deadline, rbd.c threading rule 8);
#  3. after SIGCONT a third fsync, tried again for up to 45 s, succeeds
#     and every byte acknowledged is in the image: no write abandoned by
#     the deadline landed after a newer one.  librbd does not always get
#     its session with the OSD back: then that fsync fails too, and the
#     cache must have lost nothing.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ceph-common.sh"

wbfault="$(dirname "$CLIO")/tests/tools/wbfault"
[ -x "$wbfault" ] || fail "$wbfault not built (make tests)"
ceph_start 16M
seed=${CLIO_SEED:-$(date +%s)}
size=3000000
echo "seed $seed"
ceph_on_exit='[ -n "$ceph_osd_pid" ] && kill -CONT "$ceph_osd_pid" 2>/dev/null; [ -n "$wb_pid" ] && kill -9 "$wb_pid" 2>/dev/null'

d="$tmp/stopped"
mkdir -p "$d"
"$wbfault" "$(ceph_uri)&osd_timeout=2" "$size" "$seed" "$d" 3 45 >"$d/out" 2>&1 &
wb_pid=$!
ceph_wait 30 "$d/written to appear" test -e "$d/written"
kill -STOP "$ceph_osd_pid"

# frozen_fsync K: fsync K fails within 60 s
frozen_fsync() {
	t0=$(date +%s)
	touch "$d/go$1"
	ceph_wait 60 "fsync $1 with the OSD frozen (seed $seed)" test -e "$d/fsync$1"
	r=$(cat "$d/fsync$1")
	case $r in
	-*) echo "ok: with the OSD frozen fsync $1 failed after $(( $(date +%s) - t0 )) s: $r";;
	*) fail "fsync $1 with the OSD frozen: '$r'";;
	esac
}
frozen_fsync 1
frozen_fsync 2
kill -CONT "$ceph_osd_pid"
touch "$d/go3"
ceph_wait 75 "wbfault's end (seed $seed)" sh -c "! kill -0 $wb_pid"
wait "$wb_pid"
rc=$?
wb_pid=""
sed "s/^/  /" "$d/out"
case $(cat "$d/fsync3") in
0*) ;;
-*)	# librbd's session with the OSD it saw freeze does not always come
	# back (its watch pings stay unanswered; a new client is served):
	# then nothing may be lost, and no write may have started since
	grep -q "bytes lost 0" "$d/out" || fail "data lost (seed $seed)"
	grep -q "pread from the device failed\|from the device: byte" "$d/out" ||
		fail "fsync 3 failed, yet the device read back what the cache holds"
	echo "ok: librbd did not get its session back within 45 s; fsync 3 still" \
		"fails ($(cat "$d/fsync3")) and the cache lost nothing"
	exit 0;;
*) fail "fsync 3: '$(cat "$d/fsync3")'";;
esac
[ $rc -eq 0 ] || fail "wbfault exited $rc (seed $seed)"
rbd export rbd/img "$tmp/export" >/dev/null 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "rbd export rbd/img"; }
head -c "$size" "$tmp/export" | cmp - "$d/pattern" ||
	fail "rbd export differs from what was acknowledged (seed $seed)"
echo "ok: the OSD resumed, fsync 3 succeeded after $(cat "$d/tries") tries;" \
	"the $size bytes acknowledged are in the image"
