#!/bin/sh
# SPDX-License-Identifier: BSD-2-Clause
# test-nbd-bsize.sh - a bsize below the minimum block size of what is
# below (nbdkit's blocksize-policy filter, minimum 4096, refusing smaller
# requests), on Unix sockets: the clio filter and the clio plugin (and
# clio serve) refuse to start with a one-line error naming both values,
# instead of acknowledging writes whose write-back the plugin refuses
# (the FLUSH failed with EINVAL, the data lost); with bsize=4k writes
# are flushed and read back.
. "$(dirname "$0")/functions.sh"
. "$(dirname "$0")/nbd-common.sh"
nbd_with_clio
policy="--filter=blocksize-policy"
limits="blocksize-minimum=4096 blocksize-error-policy=error"
head -c 1048576 /dev/urandom >"$tmp/pat"

# ------------------------------------------------------------ the filter
# in the foreground: the check is made in the serving process (after_fork)
env $nbd_env timeout 10 nbdkit -f -U "$sock" --filter="$filter" $policy memory 16M \
	$limits bsize=1k 2>"$tmp/err"
rc=$?
cat "$tmp/err"
[ $rc -ne 0 ] && [ $rc -ne 124 ] || fail "the filter served with bsize=1k over a minimum of 4096 (exit $rc)"
grep -q "bsize 1024 is below the plugin's minimum block size 4096" "$tmp/err" ||
	fail "the filter: no error naming bsize and the minimum"
nbd_start --filter="$filter" $policy memory 16M $limits bsize=4k
"$CLIO" dd if="$tmp/pat" of="$uri" bs=1k conv=notrunc,fsync 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "the filter, bsize=4k: clio dd bs=1k with fsync"; }
"$CLIO" dd if="$uri" of="$tmp/back" bs=64k count=16 2>/dev/null && cmp "$tmp/back" "$tmp/pat" ||
	fail "the filter, bsize=4k: read back"
echo "ok: the filter: bsize=1k over a minimum of 4096 refused; bsize=4k flushed and read back"

# ------------------------------------------------------------ the plugin
nbd_stop
nbdkit -U "$tmp/inner" --pidfile "$tmp/inner.pid" $policy memory 16M $limits ||
	fail "the inner nbdkit did not start"
nbd_wait_pid "$tmp/inner.pid"
inner=$nbd_pids
nbd_pids=""
trap 'nbd_stop; kill "$inner" 2>/dev/null; rm -rf "$tmp"' EXIT
dev="nbd+unix:///?socket=$tmp/inner"
env $nbd_env nbdkit -U "$sock" --pidfile "$tmp/bad.pid" "$plugin" "$dev" bsize=1k 2>"$tmp/err"
rc=$?
cat "$tmp/err"
[ $rc -ne 0 ] || { nbd_wait_pid "$tmp/bad.pid"; fail "the plugin served with bsize=1k over a sector of 4096"; }
grep -q "bsize 1024 is below the sector size 4096 of device '$dev'" "$tmp/err" ||
	fail "the plugin: no error naming bsize, the sector size and the device"
env $nbd_env "$CLIO" serve "$dev" -o bsize=1k --socket "$sock" 2>"$tmp/err"
rc=$?
[ $rc -ne 0 ] && grep -q "bsize 1024 is below the sector size 4096" "$tmp/err" ||
	{ cat "$tmp/err"; fail "clio serve -o bsize=1k: exit $rc"; }
[ ! -e "$sock" ] || fail "a refused server left a socket"
nbd_start "$plugin" "$dev" bsize=4k
"$CLIO" dd if="$tmp/pat" of="$uri" bs=1k conv=notrunc,fsync 2>"$tmp/err" ||
	{ cat "$tmp/err"; fail "the plugin, bsize=4k: clio dd bs=1k with fsync"; }
"$CLIO" dd if="$dev" of="$tmp/back" bs=64k count=16 2>/dev/null && cmp "$tmp/back" "$tmp/pat" ||
	fail "the plugin, bsize=4k: not on the device below after the FLUSH"
echo "ok: the plugin and clio serve: bsize=1k over a sector of 4096 refused; bsize=4k flushed to the device"
exit 0
