#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-rbd-snapgone.sh - an RBD snapshot deleted by another client while
# clio dd reads it (tests/ceph-common.sh): the copy fails with an error
# naming the snapshot, and what it wrote before is the snapshot's data,
# never zeros or the image's newer data.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/ceph-common.sh"

ceph_start 64M
u=$(ceph_uri)
snap="rbd:rbd/img@s1?conf=$CEPH_CONF"
ceph_on_exit='[ -n "$dd_pid" ] && kill "$dd_pid" 2>/dev/null; touch "$tmp/go"'

head -c 67108864 /dev/urandom >"$tmp/a"
head -c 67108864 /dev/urandom >"$tmp/b"
"$CLIO" dd if="$tmp/a" of="$u" bs=1M conv=notrunc,fsync status=none 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd into the image"; }
rbd snap create rbd/img@s1 >/dev/null 2>&1 || fail "rbd snap create rbd/img@s1"
"$CLIO" dd if="$tmp/b" of="$u" bs=1M conv=notrunc,fsync status=none 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "clio dd over the image after the snapshot"; }

# the reader stops after the pipe's first bytes until $tmp/go
( "$CLIO" dd if="$snap" bs=64k status=none 2>"$tmp/ddr.err"; echo $? >"$tmp/ddr.rc" ) |
	( while [ ! -e "$tmp/go" ]; do sleep 0.1; done; cat >"$tmp/out" ) &
dd_pid=$!
sleep 2
rbd snap rm rbd/img@s1 >/dev/null 2>"$tmp/err" || { cat "$tmp/err"; fail "rbd snap rm rbd/img@s1"; }
# the OSD trims the snapshot's clones in the background
sleep 5
touch "$tmp/go"
wait "$dd_pid"
dd_pid=""
rc=$(cat "$tmp/ddr.rc")
n=$(stat -c %s "$tmp/out")
echo "clio dd exited $rc after $n bytes: $(head -n 1 "$tmp/ddr.err")"
head -c "$n" "$tmp/a" | cmp - "$tmp/out" ||
	fail "what clio dd read out of the deleted snapshot is not the snapshot's data"
[ "$n" -lt 67108864 ] || fail "clio dd read the whole snapshot: the test deleted it too late"
[ "$rc" -ne 0 ] || fail "clio dd read $n bytes of the snapshot's 67108864 and exited 0"
grep -q "s1" "$tmp/ddr.err" || fail "the error does not name the snapshot: $(cat "$tmp/ddr.err")"
echo "ok: the snapshot deleted under clio dd: it stopped with an error after $n bytes of the snapshot's data"
